"""Sled thermal networks: nodes, conductances, capacities and boundary couplings.

Each sled is one block of the network, with nodes ordered::

    [die_0 … die_{k-1}, plate_0 … plate_{k-1}, coolant, air]

- die_j -(1/r_jc)- plate_j: junction to cold plate (liquid) or heat-sink base (air);
- plate_j -(G_conv)- coolant or air node, G_conv = (1/r_conv_ref)·(ṁ_dev/ṁ_ref)^0.8;
- coolant node: well-mixed sled coolant, inflow ṁ_c at the CDU supply temperature, outflow at
  the node temperature (upwind); air node: the sled's exhaust air and chassis, inflow ṁ_a at the
  cold-aisle temperature.

With flows fixed over a step the block is linear: C dT/dt = −L T + b ⊙ T_in + P, where ``b`` holds
ṁ_c·c_p,w on the coolant node and ṁ_a·c_p,a on the air node. Sleds are coupled only through
their inlet boundaries, so each block can be integrated on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.units import CP_AIR, CP_WATER, RHO_AIR, RHO_WATER

#: Exponent of the flow dependence of forced-convection conductance (Dittus–Boelter, Nu ∝ Re^0.8).
CONVECTION_FLOW_EXPONENT = 0.8


@dataclass
class SledGroup:
    """All sleds built from one sled template: identical node layout, batched together."""

    template: str
    sleds: np.ndarray  # (n,) global sled indices
    devices: np.ndarray  # (n, k) global device indices
    liquid: np.ndarray  # (k,) bool: slot cooled by liquid (else by air)
    g_jc: np.ndarray  # (k,) die–plate conductance [W/K]
    g_conv_ref: np.ndarray  # (k,) plate–fluid conductance at the reference flow [W/K]
    flow_ref: np.ndarray  # (k,) reference mass flow through one plate/sink [kg/s]
    c_die: np.ndarray  # (k,) [J/K]
    c_plate: np.ndarray  # (k,) [J/K]
    c_coolant: float  # [J/K]
    c_chassis: float  # [J/K]

    @property
    def k(self) -> int:
        return self.devices.shape[1]

    @property
    def m(self) -> int:
        return 2 * self.k + 2

    @property
    def cool(self) -> int:
        return 2 * self.k

    @property
    def air(self) -> int:
        return 2 * self.k + 1

    @property
    def capacity(self) -> np.ndarray:
        """Node heat capacities C, shape (m,) [J/K]."""
        return np.concatenate([self.c_die, self.c_plate, [self.c_coolant, self.c_chassis]])


def convection_conductance(g_ref, flow, flow_ref):
    """Forced-convection conductance at a flow.

    Parameters
    ----------
    g_ref : ndarray
        Conductance at ``flow_ref`` [W/K].
    flow, flow_ref : ndarray
        Mass flow through the plate or heat sink and its reference [kg/s].

    Returns
    -------
    ndarray
        G = G_ref · (ṁ/ṁ_ref)^0.8 [W/K] (turbulent internal flow, Dittus–Boelter Nu ∝ Re^0.8).

    References
    ----------
    Incropera & DeWitt, Fundamentals of Heat and Mass Transfer, eq. 8.60.
    """
    return g_ref * np.power(np.maximum(flow, 0.0) / flow_ref, CONVECTION_FLOW_EXPONENT)


def conductance_matrices(group: SledGroup, m_coolant, m_air):
    """Conductance matrices and boundary couplings of sleds at given flows.

    Parameters
    ----------
    group : SledGroup
    m_coolant, m_air : ndarray, shape (u,)
        Coolant and air mass flow through each sled [kg/s].

    Returns
    -------
    L : ndarray, shape (u, m, m)
        Conductance matrix [W/K] (symmetric part + the advective outflow on the fluid nodes).
    b : ndarray, shape (u, m)
        Boundary coupling [W/K]: ṁ_c·c_p,w on the coolant node, ṁ_a·c_p,a on the air node.
    """
    m_coolant = np.atleast_1d(np.asarray(m_coolant, dtype=float))
    m_air = np.atleast_1d(np.asarray(m_air, dtype=float))
    u, k, m = m_coolant.size, group.k, group.m
    n_liq = max(int(group.liquid.sum()), 1)
    n_air = max(int((~group.liquid).sum()), 1)
    # Plates in parallel on each medium share the sled flow equally.
    per_device = np.where(group.liquid, m_coolant[:, None] / n_liq, m_air[:, None] / n_air)
    g_conv = convection_conductance(group.g_conv_ref, per_device, group.flow_ref)  # (u, k)
    die = np.arange(k)
    plate = k + die
    fluid = np.where(group.liquid, group.cool, group.air)
    L = np.zeros((u, m, m))
    L[:, die, die] += group.g_jc
    L[:, die, plate] -= group.g_jc
    L[:, plate, die] -= group.g_jc
    L[:, plate, plate] += group.g_jc + g_conv
    L[:, plate, fluid] -= g_conv
    L[:, fluid, plate] -= g_conv
    np.add.at(L, (slice(None), fluid, fluid), g_conv)
    b = np.zeros((u, m))
    b[:, group.cool] = m_coolant * CP_WATER
    b[:, group.air] = m_air * CP_AIR
    L[:, group.cool, group.cool] += b[:, group.cool]
    L[:, group.air, group.air] += b[:, group.air]
    return L, b


def volume_to_mass_flow_water(flow):
    """Water volume flow [m3/s] → mass flow [kg/s] (ρ = 995.6 kg/m3 at 30 degC)."""
    return flow * RHO_WATER


def volume_to_mass_flow_air(flow):
    """Air volume flow [m3/s] → mass flow [kg/s] (ρ = 1.184 kg/m3 at 25 degC)."""
    return flow * RHO_AIR
