"""Collective time (α–β model) against hand calculation and brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from twin.network.collectives import (
    CollectivePath,
    Link,
    all_to_all_time,
    allreduce_time,
    path_all_to_all_time,
    ring_allreduce_time,
    torus_mean_hops,
    tree_allreduce_time,
)

N = 1e9  # 1 GB per chip
UP = Link("nvlink", 900e9, 1e-6)
OUT = Link("efa", 50e9, 15e-6)


def test_ring_allreduce_by_hand():
    # p = 8: 14 steps of 1 µs + 2·7/8 · 1 GB / 900 GB/s = 14 µs + 1.944 ms
    assert ring_allreduce_time(N, 8, 900e9, 1e-6) == pytest.approx(14e-6 + 1.75 * N / 900e9, rel=1e-12)
    assert ring_allreduce_time(N, 1, 900e9, 1e-6) == 0.0


def test_tree_has_log_latency_and_the_same_bandwidth_term():
    ring, tree = ring_allreduce_time(N, 64, 1e11, 1e-5), tree_allreduce_time(N, 64, 1e11, 1e-5)
    assert ring - tree == pytest.approx((2 * 63 - 2 * 6) * 1e-5, rel=1e-9)


def test_all_to_all_by_hand():
    # p = 4, 1 GB sent per chip (250 MB to each peer): 3 steps + 3/4 · 1 GB / β, doubled bytes for 2 hops
    assert all_to_all_time(N, 4, 1e11, 1e-6) == pytest.approx(3e-6 + 0.75 * N / 1e11, rel=1e-12)
    assert all_to_all_time(N, 4, 1e11, 0.0, hops=2.0) == pytest.approx(1.5 * N / 1e11, rel=1e-12)


@pytest.mark.parametrize("k, d", [(4, 1), (5, 1), (4, 2), (4, 3), (3, 3)])
def test_torus_mean_hops_matches_brute_force(k, d):
    """Mean shortest-path distance over all ordered pairs of distinct nodes, counted directly."""
    nodes = list(itertools.product(range(k), repeat=d))
    dist = [sum(min(abs(a - b), k - abs(a - b)) for a, b in zip(u, v))
            for u in nodes for v in nodes if u != v]
    assert torus_mean_hops(k ** d, d) == pytest.approx(np.mean(dist), rel=1e-12)


def test_one_domain_uses_the_scale_up_fabric_only():
    path = CollectivePath(64, 64, 1, UP, OUT)
    assert path.fabric == "nvlink"
    assert allreduce_time(path, N) == pytest.approx(ring_allreduce_time(N, 64, UP.bandwidth, UP.latency))


def test_across_domains_is_hierarchical_by_hand():
    # 2 domains of 32: reduce-scatter + all-gather inside (31 steps each, 31/32 of 1 GB at 900 GB/s),
    # then a ring all-reduce of the 1/32 shard between 2 chips over EFA (2 steps, 2·1/2·31.25 MB / 50 GB/s).
    path = CollectivePath(64, 32, 2, UP, OUT)
    hand = 2 * (31e-6 + 31 / 32 * N / 900e9) + (2 * 15e-6 + N / 32 / 50e9)
    assert path.fabric == "efa"
    assert allreduce_time(path, N) == pytest.approx(hand, rel=1e-12)


def test_all_to_all_across_domains_by_hand():
    path = CollectivePath(64, 32, 2, UP, OUT)
    hand = 31e-6 + 31 / 64 * N / 900e9 + 32 * 15e-6 + 32 / 64 * N / 50e9
    assert path_all_to_all_time(path, N) == pytest.approx(hand, rel=1e-12)
