"""The scale-out network of a cluster: a non-blocking fat tree sized from its NIC ports, and its power.

An UltraCluster joins scale-up domains over EFA. Its NICs are devices on the sleds (their power
is simulated there); its switches and the optics at the switch end of every link stand in
network racks outside the compute racks. :func:`size_network` counts them, :func:`network_power`
prices them from the fabric's catalogue entry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class NetworkSize:
    """Counts of a fat tree: NIC ports, switches per tier (leaf first), links and optics."""

    ports: int  # NIC-side endpoint ports
    radix: int  # ports per switch
    switches: tuple[int, ...]  # per tier, leaf first
    links: int  # all links, NIC-to-leaf included
    optics: int  # pluggable transceivers outside the NICs

    @property
    def tiers(self) -> int:
        return len(self.switches)

    @property
    def n_switches(self) -> int:
        return int(sum(self.switches))


def fat_tree_tiers(ports: int, radix: int) -> int:
    """Fewest tiers of a non-blocking folded Clos of radix-k switches that reach ``ports`` [1].

    Notes
    -----
    A t-tier folded Clos whose lower-tier switches give half their ports down and half up
    reaches at most :math:`2 (k/2)^t` endpoints (k for one switch, k²/2 for leaf–spine, k³/4
    for three tiers; Al-Fares et al., SIGCOMM 2008).
    """
    if ports <= 0:
        return 0
    t = 1
    while 2 * (radix / 2) ** t < ports:
        t += 1
    return t


def size_network(ports: int, radix: int) -> NetworkSize:
    """Switches, links and optics of a non-blocking fat tree for ``ports`` NIC ports.

    Parameters
    ----------
    ports : int
        NIC-side ports to connect, P [1].
    radix : int
        Ports per switch, k [1].

    Returns
    -------
    NetworkSize

    Notes
    -----
    With t = :func:`fat_tree_tiers` (P, k): every tier below the top has ⌈P / (k/2)⌉ switches
    (k/2 ports down, k/2 up); the top tier has ⌈P / k⌉ (all ports down); one switch when t = 1.
    Non-blocking, so every level carries P links: L = t·P. Each NIC-to-leaf link has one
    transceiver at the switch end (the NIC's own is in the NIC's power); each switch-to-switch
    link has one at each end: O = P + 2 P (t − 1).
    """
    t = fat_tree_tiers(ports, radix)
    if t == 0:
        return NetworkSize(0, radix, (), 0, 0)
    if t == 1:
        switches = (1,)
    else:
        lower = math.ceil(ports / (radix // 2))
        switches = (lower,) * (t - 1) + (math.ceil(ports / radix),)
    return NetworkSize(ports, radix, switches, t * ports, ports + 2 * ports * (t - 1))


def nic_ports(device_kind: np.ndarray, ports_per_nic: dict[str, int]) -> int:
    """Switch ports that the cluster's NIC devices occupy: Σ over NIC kinds of count × ports [1]."""
    kinds, counts = np.unique(np.asarray(device_kind, dtype=object), return_counts=True)
    return int(sum(int(n) * ports_per_nic[k] for k, n in zip(kinds, counts) if k in ports_per_nic))


def network_power(size: NetworkSize, switch_power: float, optics_power: float) -> dict[str, float]:
    """Power of the switches and optics outside the racks [W].

    .. math:: P = N_{switch} P_{switch} + N_{optics} P_{optics}

    Switch power changes little with traffic (SerDes and optics stay powered), so it is held at
    the catalogue figure.
    """
    p_switches = size.n_switches * switch_power
    p_optics = size.optics * optics_power
    return {"switches": p_switches, "optics": p_optics, "total": p_switches + p_optics}


@dataclass(frozen=True)
class ScaleOutNetwork:
    """The scale-out network of a built system: fabric, size and power of switches and optics.

    NIC power is the NIC devices' own (simulated on the sleds, at their utilisation); ``p_nics``
    here is their count × catalogue TDP, for the hand count only.
    """

    fabric: str
    size: NetworkSize
    p_switches: float  # [W]
    p_optics: float  # [W]
    nics: int
    p_nics: float  # NIC devices at TDP (already in the racks' power) [W]

    @property
    def power(self) -> float:
        """Power outside the racks: switches and optics [W]."""
        return self.p_switches + self.p_optics

    @classmethod
    def build(cls, system, catalog, fabric_name: str) -> "ScaleOutNetwork":
        fabric = catalog.fabrics[fabric_name]
        ports_per_nic = {k: c.value for k, c in fabric.nics.items()}
        size = size_network(nic_ports(system.device_kind, ports_per_nic), fabric.switch_radix.value)
        p = network_power(size, fabric.switch_power.si, fabric.optics_power.si)
        is_nic = np.isin(system.device_kind, list(ports_per_nic))
        return cls(fabric_name, size, p["switches"], p["optics"], int(is_nic.sum()),
                   float(system.chip["tdp"][is_nic].sum()))
