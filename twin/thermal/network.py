"""Sled thermal networks: nodes, conductances, capacities and boundary couplings.

Each sled is one block of the network, with nodes ordered::

    [die_0 … die_{k-1}, plate_0 … plate_{k-1}, hbm_0 … hbm_{h-1}, coolant, air]

- die_j -(1/r_jc)- plate_j: junction to cold plate (liquid) or heat-sink base (air);
- hbm_i -(1/r_hbm)- plate of its accelerator: the HBM stacks beside the die share its cold
  plate and take their part of the package power, s·P + c (a floor plus the bits moved,
  :func:`twin.power.device.hbm_power`); they have their own temperature limit, which with
  warm water is often the one that binds;
- plate_j -(G_conv)- coolant or air node, G_conv = (1/r_conv_ref)·(ṁ_j/ṁ_ref,j)^n_j with the
  exponent n_j of the plate (catalogue: laminar microchannel cold plates n ≈ 0.3–0.5, turbulent
  Dittus–Boelter 0.8);
- the sled's coolant reaches its plates through parallel branches whose resistances give each
  plate its design flow, so the sled flow splits in proportion to the plates' design flows
  (:func:`plate_flows`), and likewise the sled's air over its heat sinks;
- coolant node: well-mixed sled coolant, inflow ṁ_c at the CDU supply temperature, outflow at
  the node temperature (upwind); air node: the sled's exhaust air and chassis, inflow ṁ_a at the
  cold-aisle temperature.

With flows fixed over a step the block is linear: C dT/dt = −L T + b ⊙ T_in + P, where ``b`` holds
ṁ_c·c_p,w on the coolant node and ṁ_a·c_p,a on the air node. Sleds are coupled only through
their inlet boundaries, so each block can be integrated on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.units import CP_AIR, CP_WATER, RHO_AIR, RHO_WATER

#: Exponent of the flow dependence of forced-convection conductance where the catalogue gives
#: none (turbulent internal flow, Dittus–Boelter, Nu ∝ Re^0.8).
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
    #: (k,) exponent n of G_conv ∝ ṁ^n per plate or heat sink [1]; None: CONVECTION_FLOW_EXPONENT
    conv_exponent: np.ndarray | None = None
    #: (h,) slot (0..k-1) of the device each HBM node belongs to
    hbm_slot: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: (h,) s = dP_hbm/dP and c = P_hbm at P = 0 of each HBM node (P_hbm = s·P + c,
    #: :func:`twin.power.device.hbm_power_coefficients`) [1], [W]
    hbm_fraction: np.ndarray = field(default_factory=lambda: np.zeros(0))
    hbm_offset: np.ndarray = field(default_factory=lambda: np.zeros(0))
    g_hbm: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (h,) HBM–plate [W/K]
    c_hbm: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (h,) [J/K]

    @property
    def k(self) -> int:
        return self.devices.shape[1]

    @property
    def h(self) -> int:
        """HBM nodes per sled."""
        return self.hbm_slot.size

    @property
    def m(self) -> int:
        return 2 * self.k + self.h + 2

    @property
    def hbm(self) -> np.ndarray:
        """Node indices of the HBM nodes, shape (h,)."""
        return 2 * self.k + np.arange(self.h)

    @property
    def cool(self) -> int:
        return 2 * self.k + self.h

    @property
    def air(self) -> int:
        return 2 * self.k + self.h + 1

    @property
    def exponent(self) -> np.ndarray:
        """Convection flow exponent per slot, shape (k,) [1]."""
        if self.conv_exponent is None:
            return np.full(self.k, CONVECTION_FLOW_EXPONENT)
        return np.asarray(self.conv_exponent, dtype=float)

    @property
    def capacity(self) -> np.ndarray:
        """Node heat capacities C, shape (m,) [J/K]."""
        return np.concatenate([self.c_die, self.c_plate, self.c_hbm,
                               [self.c_coolant, self.c_chassis]])

    def heat_input(self, p_devices) -> np.ndarray:
        """Device power placed on the network's nodes.

        Parameters
        ----------
        p_devices : ndarray, shape (n, k)
            Power of each sled's devices [W].

        Returns
        -------
        ndarray, shape (n, m)
            Heat into each node [W]: the part linear in P — (1 − Σ s) P on the die, s P on each
            of its HBM nodes, nothing on the other nodes (the caller adds the HBM floor,
            :meth:`heat_offset` through :meth:`split`, and the boundary terms).
        """
        p = np.asarray(p_devices, dtype=float)
        q = np.zeros(p.shape[:-1] + (self.m,))
        q[..., : self.k] = p
        if self.h:
            share = p[..., self.hbm_slot] * self.hbm_fraction
            np.subtract.at(q, (Ellipsis, self.hbm_slot), share)
            q[..., self.hbm] = share
        return q

    def heat_offset(self) -> np.ndarray:
        """The constant part c of the HBM split of a powered sled, shape (m,) [W], written as
        heat inputs ``q`` hold it: c on each HBM node's row, which :meth:`split` reads as heat
        moved from the device's die to its stacks (+c on the stacks, −c on the die: nothing
        in all). A sled whose rack has no power draws nothing and takes none of it
        (RackThermal); a device tripped on its die temperature keeps it while its rack is
        powered (its stacks warm by c·r_hbm and its die cools by c·r_jc, a fraction of a
        kelvin, with no energy made or lost)."""
        q = np.zeros(self.m)
        q[self.hbm] = self.hbm_offset
        return q

    def split(self, q) -> np.ndarray:
        """Node heat from heat inputs ``q`` (…, m) [W]: a die row holds the power entering the
        package, shared between the die and its HBM nodes (:meth:`heat_input`); an HBM row
        holds heat moved from the device's die to its stacks (:meth:`heat_offset`); the rest
        as given. The exponential integrator folds this into its propagators."""
        if not self.h:
            return q
        q = np.asarray(q, dtype=float)
        out = q.copy()
        out[..., : self.k] = 0.0
        np.subtract.at(out, (Ellipsis, self.hbm_slot), q[..., self.hbm])
        return out + self.heat_input(q[..., : self.k])


def convection_conductance(g_ref, flow, flow_ref, exponent=CONVECTION_FLOW_EXPONENT):
    """Forced-convection conductance at a flow.

    Parameters
    ----------
    g_ref : ndarray
        Conductance at ``flow_ref`` [W/K].
    flow, flow_ref : ndarray
        Mass flow through the plate or heat sink and its reference [kg/s].
    exponent : ndarray or float
        n in Nu ∝ Re^n [1]: 0.8 for turbulent pipe flow (Dittus–Boelter); 0.3–0.5 for the
        developing laminar flow in microchannel cold plates (catalogue figure per chip).

    Returns
    -------
    ndarray
        G = G_ref · (ṁ/ṁ_ref)^n [W/K].

    References
    ----------
    .. [1] Incropera & DeWitt, Fundamentals of Heat and Mass Transfer, eq. 8.60 (turbulent).
    .. [2] Incropera & DeWitt, §8.4.2 and eq. 8.57 (Sieder–Tate, thermally developing laminar
       flow: Nu ∝ (Re Pr D/L)^(1/3)); microchannel heat sinks in the developing regime measure
       Nu ∝ Re^0.3–0.5 (Qu & Mudawar, Int. J. Heat Mass Transfer 45, 2002).
    """
    return g_ref * np.power(np.maximum(flow, 0.0) / flow_ref, exponent)


def plate_flows(sled_flow, design_flows):
    """Flow through each of a sled's parallel cold plates (or heat sinks).

    Parameters
    ----------
    sled_flow : ndarray, shape (u,)
        Flow into the sled [kg/s].
    design_flows : ndarray, shape (k,)
        Design flow of each plate on this medium [kg/s] (0 for plates on the other medium).

    Returns
    -------
    ndarray, shape (u, k)
        ṁ_j = ṁ_sled · ṁ_d,j / Σ ṁ_d [kg/s].

    Notes
    -----
    Parallel branches between the sled's supply and return manifolds share one pressure drop
    Δp = k_j ṁ_j². A sled designed to give each plate its design flow has k_j = Δp_d / ṁ_d,j², so
    ṁ_j = √(Δp / k_j) ∝ ṁ_d,j at any sled flow: the split is the design split
    (:func:`twin.cooling.hydraulics.branch_flows` with those resistances).
    """
    d = np.asarray(design_flows, dtype=float)
    total = d.sum()
    share = d / total if total > 0 else np.zeros_like(d)
    return np.asarray(sled_flow, dtype=float)[:, None] * share[None, :]


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
    # Plates in parallel on each medium take the sled flow in proportion to their design flows.
    weight = group.flow_ref
    per_device = np.where(group.liquid,
                          plate_flows(m_coolant, np.where(group.liquid, weight, 0.0)),
                          plate_flows(m_air, np.where(group.liquid, 0.0, weight)))
    g_conv = convection_conductance(group.g_conv_ref, per_device, group.flow_ref,
                                    group.exponent)  # (u, k)
    die = np.arange(k)
    plate = k + die
    fluid = np.where(group.liquid, group.cool, group.air)
    L = np.zeros((u, m, m))
    L[:, die, die] += group.g_jc
    L[:, die, plate] -= group.g_jc
    L[:, plate, die] -= group.g_jc
    L[:, plate, plate] += group.g_jc + g_conv
    if group.h:
        hbm, hp = group.hbm, k + group.hbm_slot
        L[:, hbm, hbm] += group.g_hbm
        L[:, hbm, hp] -= group.g_hbm
        L[:, hp, hbm] -= group.g_hbm
        np.add.at(L, (slice(None), hp, hp), group.g_hbm)
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
