"""Fat-tree sizing of the scale-out network against published layouts and hand counts."""

from __future__ import annotations

import numpy as np
import pytest

from twin.network.cluster import fat_tree_tiers, network_power, nic_ports, size_network


def test_k4_fat_tree_of_al_fares():
    """Al-Fares et al. (SIGCOMM 2008): radix k = 4 serves k³/4 = 16 hosts with 5k²/4 = 20 switches."""
    size = size_network(16, 4)
    assert size.switches == (8, 8, 4)
    assert size.links == 48  # 16 host links + 16 edge-aggregation + 16 aggregation-core


@pytest.mark.parametrize("ports, radix, tiers", [(128, 128, 1), (129, 128, 2), (8192, 128, 2),
                                                 (8193, 128, 3), (1, 64, 1), (0, 64, 0)])
def test_tiers_at_the_capacity_edges(ports, radix, tiers):
    # capacity 2·(k/2)^t: k, k²/2, k³/4
    assert fat_tree_tiers(ports, radix) == tiers


def test_two_tier_counts_by_hand():
    # 1,152 ports of radix 128: 1,152 / 64 = 18 leaves, 1,152 / 128 = 9 spines;
    # optics: 1,152 at leaf ports facing NICs + 2 × 1,152 on leaf–spine links.
    size = size_network(1152, 128)
    assert size.switches == (18, 9)
    assert size.optics == 1152 + 2 * 1152
    p = network_power(size, 1200.0, 10.0)
    assert p["total"] == pytest.approx(27 * 1200.0 + 3456 * 10.0)


def test_nic_ports_count_each_kind():
    kinds = np.array(["trn3", "efa", "efa", "connectx8", "grace"], dtype=object)
    assert nic_ports(kinds, {"efa": 1, "connectx8": 2}) == 4
