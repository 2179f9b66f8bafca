"""Sled thermal networks and rack manifolds as a component.

Per step (array operations over all sleds of a level, no per-device Python):

- the sled networks are integrated over the step (``fast``: exact for inputs held over the step;
  ``reference``: ``solve_ivp``) with the step-mean device power;
- heat to liquid ṁ·c_p·(T̄_coolant − T_supply) and to air ṁ_a·c_p,a·(T̄_air − T_inlet) from the
  step-mean fluid temperatures, so electrical energy = heat to liquid + heat to air + stored heat;
  the power shelves' loss heats the rack's exhaust air;
- rack return = supply + Q_liquid/(ṁ c_p); each CDU receives the flow-weighted mix of its racks.

Boundaries: the CDU supply temperatures and secondary-flow factors and the cold-aisle temperature
come from the cooling components (``cdu.t_supply_next``, ``cdu.flow_factor``,
``facility.t_cold_aisle_next``); the propagators are rebuilt only when a flow changes.
``coolant_flow_loss`` and ``rack_fan_failure`` events change rack flows (failed fans draw no power).
"""

from __future__ import annotations

import numpy as np

from twin.cooling.cdu import COLD_AISLE_RANGE
from twin.sim.component import Component, Var
from twin.sim.events import rack_targets
from twin.units import CP_AIR, CP_WATER

T_DIE = Var("device", "t_die", "degC", "die temperature")
#: Written only by systems with HBM nodes (accelerators whose catalogue entry gives their figures).
T_HBM = Var("device", "t_hbm", "degC", "HBM stack temperature (NaN for devices without an HBM node)",
            metric="twin_device_memory_temperature_celsius")
SLED_T_COOLANT_OUT = Var("sled", "t_coolant_out", "degC", "sled coolant outlet temperature")
SLED_T_AIR_OUT = Var("sled", "t_air_out", "degC", "sled exhaust air temperature")
SLED_P_FAN = Var("sled", "p_fan", "W", "sled fan power (failed fans draw none)", record=False)
RACK_VARS = (
    Var("rack", "t_coolant_supply", "degC", "rack manifold coolant supply temperature"),
    Var("rack", "t_coolant_return", "degC", "rack manifold coolant return temperature"),
    Var("rack", "t_air_in", "degC", "rack air inlet temperature"),
    Var("rack", "t_air_out", "degC", "rack air exhaust temperature"),
    Var("rack", "q_liquid", "W", "heat to liquid"),
    Var("rack", "q_air", "W", "heat to air (sled exhaust and power-shelf losses)"),
)
CDU_VARS = (
    Var("cdu", "t_supply", "degC", "secondary-loop supply temperature"),
    Var("cdu", "t_return", "degC", "secondary-loop return temperature"),
    Var("cdu", "flow", "kg s-1", "secondary-loop mass flow"),
    Var("cdu", "q_in", "W", "heat from the racks into the secondary loop", record=False),
)
T_COLD_AISLE = Var("facility", "t_cold_aisle", "degC", "cold-aisle air temperature")
Q_AIR = Var("facility", "q_air", "W", "heat from the racks to the room air", record=False)


class RackThermal(Component):
    """Sled networks (die, plate, coolant, chassis air nodes) and rack manifolds.

    Parameters
    ----------
    system : System
    integrator : Integrator
        ``INTEGRATORS[solver](system.groups, h)``.
    totals : Totals
        Running totals (heat to liquid and air, stored heat, hottest die, the time the cold
        aisle is outside the ASHRAE A1 allowable range).
    """

    inputs = ("device.p_step", "rack.p_loss", "rack.unpowered", "cdu.t_supply_next", "cdu.flow_factor",
              "facility.t_cold_aisle_next", "facility.p_network")
    outputs = (T_DIE, SLED_T_COOLANT_OUT, SLED_T_AIR_OUT, SLED_P_FAN, *RACK_VARS, *CDU_VARS,
               T_COLD_AISLE, Q_AIR)
    #: Every variable it can write (the registry's declarations): the outputs, and the HBM
    #: temperature of systems with HBM nodes.
    VARIABLES = (*outputs, T_HBM)
    events = ("coolant_flow_loss", "rack_fan_failure")
    phase = "integration"

    def __init__(self, system, integrator, totals):
        sy = self.sy = system
        self.integrator = integrator
        self.totals = totals
        self.rack_coolant_factor = np.ones(sy.n_racks)
        self.rack_air_factor = np.ones(sy.n_racks)
        self.rack_powered = np.ones(sy.n_racks)  # 0 for a rack without input power: fans and boards off
        self._dark = False  # some rack without input power at the last step
        self.m_coolant = np.full(sy.sled_name.size, np.nan)
        self.m_air = np.full(sy.sled_name.size, np.nan)
        self.T = [np.zeros((g.sleds.size, g.m)) for g in sy.groups]
        self.t_die = np.full(sy.n_devices, 0.0)
        self.t_die_peak = np.full(sy.n_devices, -np.inf)  # highest die temperature of each device [degC]
        # HBM nodes: the device of each group's nodes (n, h), each device's HBM temperature and
        # its running peak (NaN for devices without) [degC]
        self.hbm = any(g.h for g in sy.groups)
        self._hbm_devices = [g.devices[:, g.hbm_slot] for g in sy.groups]
        self.t_hbm = np.full(sy.n_devices, np.nan)
        self.t_hbm_peak = np.full(sy.n_devices, np.nan)
        if self.hbm:
            self.outputs = (*type(self).outputs, T_HBM)
        self._flow_factor = None  # the CDU flow factors the flows were built with
        self._supply = None  # the boundary values q_base was built with
        self._t_cold_aisle = None
        self.state = None
        # Each group's devices (n, k) and sleds (n,) as views of the flat arrays where they are
        # contiguous (the usual layout: one sled template per rack template), else gathers.
        self._devices = [_contiguous(g.devices) for g in sy.groups]
        self._sleds = [_contiguous(g.sleds) for g in sy.groups]

    # -- boundaries -------------------------------------------------------------------------
    def initialise(self, state) -> None:
        self.state = state
        state["device.t_die"] = self.t_die
        if self.hbm:
            state["device.t_hbm"] = self.t_hbm
        self._fans()
        self.update(state, force=True)

    def _fans(self) -> None:
        sy = self.sy
        # What the fans draw when the rack has input power (the power shelves count it only then).
        self.fan_power = sy.sled_fan_power * self.rack_air_factor[sy.sled_rack]
        self.state["sled.p_fan"] = self.fan_power

    def update(self, state, force: bool = False) -> None:
        """Rebuild flows and boundary heat inputs where the cooling side changed them."""
        factor = state["cdu.flow_factor"]
        supply = state["cdu.t_supply_next"]
        t_ca = float(state["facility.t_cold_aisle_next"][0])
        flows = force or self._flow_factor is None or not np.array_equal(factor, self._flow_factor)
        if flows:
            self._flows(factor)
        if flows or not np.array_equal(supply, self._supply) or t_ca != self._t_cold_aisle:
            self._boundaries(supply, t_ca)

    def _flows(self, cdu_factor) -> None:
        sy = self.sy
        rack_factor = self.rack_coolant_factor * cdu_factor[sy.rack_cdu]
        m_coolant = sy.sled_m_coolant * rack_factor[sy.sled_rack]
        m_air = sy.sled_m_air * (self.rack_air_factor * self.rack_powered)[sy.sled_rack]
        for i, g in enumerate(sy.groups):
            if not (np.array_equal(m_coolant[g.sleds], self.m_coolant[g.sleds])
                    and np.array_equal(m_air[g.sleds], self.m_air[g.sleds])):
                self.integrator.set_flows(i, m_coolant[g.sleds], m_air[g.sleds])
        self.m_coolant, self.m_air = m_coolant, m_air
        self._flow_factor = cdu_factor.copy()
        self.rack_m_coolant = sy.rack_sum(m_coolant)
        self.rack_m_air = sy.rack_sum(m_air)
        self.rack_sleds = sy.rack_sum(np.ones(sy.sled_name.size))
        # What the step needs of the flows, computed once per flow state.
        self.mc_cp, self.ma_cp = m_coolant * CP_WATER, m_air * CP_AIR  # [W/K]
        self.rack_mc_cp, self.rack_ma_cp = self.rack_m_coolant * CP_WATER, self.rack_m_air * CP_AIR
        self.cdu_flow = np.bincount(sy.rack_cdu, weights=self.rack_m_coolant, minlength=sy.cdu_name.size)
        self.cdu_mc_cp = self.cdu_flow * CP_WATER
        self.still_air = bool((self.rack_m_air <= 0).any())  # a rack whose fans all failed
        self.all_flowing = bool((self.rack_m_coolant > 0).all() and (self.cdu_flow > 0).all()
                                and (self.rack_ma_cp > 0).all())

    def _boundaries(self, cdu_supply, t_cold_aisle: float) -> None:
        """Supply temperatures and the constant boundary heat input of every sled node."""
        sy = self.sy
        self.cdu_supply = cdu_supply.copy()
        self._supply, self._t_cold_aisle = self.cdu_supply, t_cold_aisle
        self.t_cold_aisle = t_cold_aisle
        #: The cold aisle is outside the ASHRAE A1 allowable range (counted in the run's totals).
        self.aisle_out = not COLD_AISLE_RANGE[0] <= t_cold_aisle <= COLD_AISLE_RANGE[1]
        self.rack_supply = self.cdu_supply[sy.rack_cdu]
        self.sled_supply = self.rack_supply[sy.sled_rack]
        # Outputs that change only with the boundaries and flows (the same arrays each step).
        self.constant = {
            "rack.t_coolant_supply": np.where(self.rack_m_coolant > 0, self.rack_supply, np.nan),
            "rack.t_air_in": np.full(sy.n_racks, self.t_cold_aisle),
            "cdu.t_supply": self.cdu_supply,
            "cdu.flow": self.cdu_flow,
            "facility.t_cold_aisle": np.array([self.t_cold_aisle]),
        }
        for value in self.constant.values():
            value.flags.writeable = False  # shared from step to step: nobody may change them
        self.q_base = []
        for i, g in enumerate(sy.groups):
            b = self.integrator.boundary(i)
            q = np.zeros_like(b)
            q[:, g.cool] = b[:, g.cool] * self.sled_supply[g.sleds]
            powered = self.rack_powered[sy.sled_rack[g.sleds]]
            q[:, g.air] = b[:, g.air] * self.t_cold_aisle + (sy.sled_overhead[g.sleds] + self.fan_power[g.sleds]) * powered
            if g.h:  # the HBM stacks' floor, drawn while the rack has power
                q += powered[:, None] * g.heat_offset()[None, :]
            self.q_base.append(q)

    def apply(self, action) -> bool:
        ev, start = action.event, action.what == "start"
        idx = rack_targets(ev.target, self.sy.rack_name)
        if ev.kind == "coolant_flow_loss":
            self.rack_coolant_factor[idx] = (1.0 - ev.fraction) if start else 1.0
        else:  # rack_fan_failure
            self.rack_air_factor[idx] = (1.0 - ev.fraction) if start else 1.0
            self._fans()
        self._flow_factor = None  # rebuilt at the next step
        return True

    # -- steady state and energy --------------------------------------------------------------
    def settle(self, power, iterations: int) -> None:
        """Node temperatures at steady state with the present boundaries, iterating
        ``power(t_die)`` (device power [W]) to a fixed point in the die temperatures."""
        for _ in range(iterations):
            p = power(self.t_die)
            for i, g in enumerate(self.sy.groups):
                q = self.q_base[i].copy()
                q[:, : g.k] += p[g.devices]  # (split with the HBM nodes by steady_state)
                self.T[i] = self.integrator.steady_state(i, q)
                self.t_die[g.devices] = self.T[i][:, : g.k]
        if self.hbm:
            self._hbm_temperatures()
            if self.state is not None:
                self.state["device.t_hbm"] = self.t_hbm

    def _hbm_temperatures(self) -> None:
        """Each device's HBM node temperature from the node temperatures [degC] (a new array,
        so a block's per-step values stay apart)."""
        t = np.full(self.sy.n_devices, np.nan)
        for i, g in enumerate(self.sy.groups):
            if g.h:
                t[self._hbm_devices[i]] = self.T[i][:, g.hbm]
        self.t_hbm = t

    def fluxes(self):
        """Heat to each CDU's liquid [W], heat to room air [W] and each CDU's secondary flow
        [kg/s] at the present node temperatures."""
        sy = self.sy
        q_liq = np.zeros(sy.sled_name.size)
        q_air = np.zeros(sy.sled_name.size)
        for i, g in enumerate(sy.groups):
            T = self.T[i]
            q_liq[g.sleds] = self.m_coolant[g.sleds] * CP_WATER * (T[:, g.cool] - self.sled_supply[g.sleds])
            q_air[g.sleds] = self.m_air[g.sleds] * CP_AIR * (T[:, g.air] - self.t_cold_aisle)
        n = sy.cdu_name.size
        per_cdu = np.bincount(sy.rack_cdu, weights=sy.rack_sum(q_liq), minlength=n)
        flow = np.bincount(sy.rack_cdu, weights=sy.rack_sum(self.m_coolant), minlength=n)
        return per_cdu, float(q_air.sum()), flow

    def stored_heat(self) -> float:
        """Σ C·T over all nodes [J] (relative to 0 degC)."""
        return float(sum((T * g.capacity).sum() for T, g in zip(self.T, self.sy.groups)))

    # -- one step -------------------------------------------------------------------------
    def step(self, t: float, dt: float, state) -> None:
        unpowered = state["rack.unpowered"]
        if self._dark or unpowered.any():  # (every rack powered, the usual case: nothing to compare)
            powered = (~unpowered).astype(float)
            if not np.array_equal(powered, self.rack_powered):  # a rack lost or regained its input
                self.rack_powered = powered
                self._flow_factor = None  # flows (fans stopped) and boundaries (no board heat) rebuilt below
            self._dark = bool(unpowered.any())
        self.update(state)
        sy, tot = self.sy, self.totals
        t_cool, t_air = self.integrate(state)
        q_liq = sy.rack_sum(self.mc_cp * (t_cool - self.sled_supply))
        q_air = sy.rack_sum(self.ma_cp * (t_air - self.t_cold_aisle)) + state["rack.p_loss"]
        rack_m_c = self.rack_m_coolant
        cdu_flow = self.cdu_flow
        cdu_q = np.bincount(sy.rack_cdu, weights=q_liq, minlength=sy.cdu_name.size)
        if self.all_flowing:  # (the usual case: no zero flow to guard)
            t_return = self.rack_supply + q_liq / self.rack_mc_cp
            cdu_return = self.cdu_supply + cdu_q / self.cdu_mc_cp
            mixed = self.t_cold_aisle + q_air / self.rack_ma_cp
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                t_return = np.where(rack_m_c > 0, self.rack_supply + q_liq / self.rack_mc_cp, np.nan)
                cdu_return = np.where(cdu_flow > 0, self.cdu_supply + cdu_q / self.cdu_mc_cp, np.nan)
                mixed = self.t_cold_aisle + q_air / self.rack_ma_cp

        state.update(self.constant)
        state["sled.t_coolant_out"] = np.where(self.m_coolant > 0, t_cool, np.nan)
        state["sled.t_air_out"] = t_air
        state["rack.t_coolant_return"] = t_return
        # With every fan of a rack failed no air flows through it: its "exhaust" is the still air
        # inside (the mean of its sleds' air nodes); its heat reaches the room by natural
        # convection (q_air still counts it), not by a flow of zero carrying it at infinite ΔT.
        if self.still_air:
            still = sy.rack_sum(t_air) / self.rack_sleds
            mixed = np.where(self.rack_m_air > 0, mixed, still)
        state["rack.t_air_out"] = mixed
        state["rack.q_liquid"] = q_liq
        state["rack.q_air"] = q_air
        state["cdu.t_return"] = cdu_return
        state["cdu.q_in"] = cdu_q
        q_room = float(q_air.sum() + state["facility.p_network"][0])  # + network switches and optics
        state["facility.q_air"] = np.array([q_room])
        tot.e_liquid += q_liq.sum() * dt
        tot.e_air += q_room * dt
        if self.aisle_out:
            tot.cold_aisle_excursion_seconds += dt

    def integrate(self, state):
        """Integrate the sled networks over the step with the step-mean device power (the die
        temperatures are updated in place); returns the sleds' step-mean coolant and air
        temperatures [degC]."""
        sy = self.sy
        p_dev = state["device.p_step"]
        t_cool = np.empty(sy.sled_name.size)
        t_air = np.empty(sy.sled_name.size)
        for i, g in enumerate(sy.groups):
            dev, sleds = self._devices[i], self._sleds[i]
            self.T[i], fluid = self.integrator.step(i, self.T[i], self.q_base[i], _take(p_dev, dev))
            _put(self.t_die, dev, self.T[i][:, : g.k])
            _put(t_cool, sleds, fluid[:, 0])
            _put(t_air, sleds, fluid[:, 1])
        np.maximum(self.t_die_peak, self.t_die, out=self.t_die_peak)
        if self.hbm:
            self._hbm_temperatures()
            self.t_hbm_peak = np.fmax(self.t_hbm_peak, self.t_hbm)
            state["device.t_hbm"] = self.t_hbm
        return t_cool, t_air

    def step_block(self, k: int, dt: float, t_cool, t_air, p_loss, state) -> dict:
        """The outputs of :meth:`step` for ``k`` steps at once from each step's sled fluid
        temperatures ``t_cool``, ``t_air`` (k, sleds) and shelf losses ``p_loss`` (k, racks),
        every rack powered and the flows steady (a quiet block, :mod:`twin.sim.block`); same
        operations, same order, same bits as :meth:`step`."""
        sy, tot = self.sy, self.totals
        q_liq = np.add.reduceat(self.mc_cp * (t_cool - self.sled_supply), sy.rack_sled_start, axis=1)
        q_air = np.add.reduceat(self.ma_cp * (t_air - self.t_cold_aisle), sy.rack_sled_start, axis=1) + p_loss
        cdu_q = np.stack([np.bincount(sy.rack_cdu, weights=q, minlength=sy.cdu_name.size) for q in q_liq])
        if self.all_flowing:
            t_return = self.rack_supply + q_liq / self.rack_mc_cp
            cdu_return = self.cdu_supply + cdu_q / self.cdu_mc_cp
            mixed = self.t_cold_aisle + q_air / self.rack_ma_cp
        else:  # (e.g. air-cooled racks: no coolant flow, no CDU)
            with np.errstate(invalid="ignore", divide="ignore"):
                t_return = np.where(self.rack_m_coolant > 0, self.rack_supply + q_liq / self.rack_mc_cp, np.nan)
                cdu_return = np.where(self.cdu_flow > 0, self.cdu_supply + cdu_q / self.cdu_mc_cp, np.nan)
                mixed = self.t_cold_aisle + q_air / self.rack_ma_cp
        if self.still_air:
            still = np.add.reduceat(t_air, sy.rack_sled_start, axis=1) / self.rack_sleds
            mixed = np.where(self.rack_m_air > 0, mixed, still)
        q_room = q_air.sum(axis=1) + state["facility.p_network"][0]
        for q, r in zip(q_liq.sum(axis=1), q_room):
            tot.e_liquid += q * dt
            tot.e_air += float(r) * dt
            if self.aisle_out:
                tot.cold_aisle_excursion_seconds += dt
        out = {key: np.broadcast_to(v, (k,) + v.shape) for key, v in self.constant.items()}
        out.update({"sled.t_coolant_out": np.where(self.m_coolant > 0, t_cool, np.nan), "sled.t_air_out": t_air,
                    "rack.t_coolant_return": t_return, "rack.t_air_out": mixed, "rack.q_liquid": q_liq,
                    "rack.q_air": q_air, "cdu.t_return": cdu_return, "cdu.q_in": cdu_q,
                    "facility.q_air": q_room[:, None]})
        return out


def _contiguous(index: np.ndarray):
    """``index`` as ``(slice, shape)`` when it is the consecutive run start, start + 1, … in
    row-major order (then a reshaped slice reads and writes it without a copy), else itself."""
    flat = index.ravel()
    if flat.size and np.array_equal(flat, np.arange(flat[0], flat[0] + flat.size)):
        return slice(int(flat[0]), int(flat[0]) + flat.size), index.shape
    return index


def _take(values: np.ndarray, where) -> np.ndarray:
    """``values[index]`` for an index given by :func:`_contiguous` (a view where contiguous)."""
    if isinstance(where, tuple):
        run, shape = where
        return values[run].reshape(shape)
    return values[where]


def _put(target: np.ndarray, where, values) -> None:
    """``target[index] = values`` for an index given by :func:`_contiguous`."""
    if isinstance(where, tuple):
        _take(target, where)[...] = values
    else:
        target[where] = values
