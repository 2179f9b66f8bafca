"""The CDU bank of the facility plant: secondary loops, plate heat exchangers, PI valves, pumps.

Two scheduled parts of one piece of equipment (:class:`CduBank`), because the facility water
sits between them within a plant step: :class:`CduDemand` takes the heat and flow the racks
send and draws primary (facility) water through the valves set last step; once the facility
water loop has set its supply (:class:`~twin.cooling.facility_water.FacilitySupply`),
:class:`CduLoops` integrates the secondary loops against it, moves the valves (PI) and gives the
racks their supply for the next step.

*CDU.* Secondary loop = one mixed volume M_s at T_s (reservoir, exchanger, piping) that the
racks return into: C_s dT_s/dt = q_racks + P_pump − q_hx, with q_hx = G (T_s − T_fs) and
G = ε C_min from ε-NTU (counterflow) at the secondary flow and the primary flow u·ṁ_p,d;
UA varies with both flows (film coefficients ∝ ṁ^0.8). Supply to the racks
= T_s − G (T_s − T_fs) / (ṁ_s c_p). A PI controller holds the supply set-point. It acts on
the relative conductance v = G / G(valve open), in which the supply is linear, and the
exchanger's characteristic G(u), tabulated over the valve range, turns v into a valve
position (valve characterisation). The gain is normalised by the process gain
|∂T_supply/∂v|, blended from its instantaneous value (T_s held) to its steady-state value
by 1 − exp(−dt G / C_s); the integral share per step is a = min(dt, T_i) / T_i and the
proportional gain k_p (1 − a): a PI of integral time T_i at short steps that becomes a
damped Newton iteration at long ones, stable from 1 s to 1 h. Anti-windup by clamping:
the integrator stops while the valve is saturated in the direction the error pushes, and
never leaves the valve's range. Pumps: :class:`~twin.cooling.cdu_pumps.CduPumps`; a trip
without standby stops the secondary flow.

*Supply pipe.* Where the catalogue gives the CDU a ``supply_volume``, the supply the CDU gives
for the next plant step reaches the racks through the supply pipe in plug flow
(:class:`~twin.cooling.transport.PlugFlowDelay`): the racks get the mean temperature of the
water that leaves the pipe over the step at the latest flow, so a change of the CDU's supply
arrives τ = V_supply / Q later (resolved to the plant step). The water the pipe returns
meanwhile (the old supply) comes back through the racks to the CDU, so the exchanger sees the
heat the pipe gives up or takes in: its own balance closes on that heat.
"""

from __future__ import annotations

import math

import numpy as np

from twin.cooling.cdu import FLOW_FACTOR, P_PUMP, Q, T_SUPPLY_NEXT, VALVE, CduComponent
from twin.cooling.cdu_pumps import CduPumps
from twin.cooling.plant import hx_outlets
from twin.cooling.transport import PlugFlowDelay
from twin.cooling.volumes import relax
from twin.scenario.errors import FieldError
from twin.sim.component import Component, Var
from twin.units import CP_WATER, RHO_WATER

#: Secondary-loop transit time used when a CDU entry has no ``secondary_volume`` [s] (estimate).
SECONDARY_LOOP_TIME = 60.0
#: Film coefficients ∝ flow^0.8 (turbulent forced convection, Dittus–Boelter) on each side of a
#: CDU plate heat exchanger, with equal resistances at design.
HX_FLOW_EXPONENT = 0.8
#: Points (between the minimum and full opening) at which each CDU exchanger's conductance is
#: tabulated against its valve, to turn the controller's demanded conductance into a valve [1].
VALVE_GRID = np.linspace(0.0, 1.0, 17)
#: Smallest process gain the CDU controllers divide by [K per unit of relative conductance].
GAIN_FLOOR = 0.05
#: Banks of up to this many CDUs take their valves' PI on floats (:meth:`CduBank._control_numbers`):
#: ~10 µs a CDU against ~0.3 ms for the array operations on a bank of any size.
CONTROL_NUMBERS_MAX = 32

M_FACILITY = Var("facility", "m_facility_water", "kg s-1", "facility water flow through the CDUs", record=False)
Q_HX = Var("facility", "q_cdus", "W", "heat the CDUs pass to facility water", record=False)
STORED_CDUS = Var("facility", "stored_cdus", "J", "Σ C·T of the CDU secondary loops (from 0 degC)", record=False)
STORED_PIPES = Var("facility", "stored_pipes", "J", "Σ ρ c_p V T of the CDUs' supply pipes (from 0 degC)",
                   record=False)
CDU_STEP = Var("cdu", "plant_step", "1", "the CDUs' inputs, flows and loops over the plant step", record=False)


def lookup(table: dict, name: str, loc: tuple, kind: str):
    """``table[name]``, or a FieldError at ``loc`` naming the known entries."""
    if name not in table:
        known = ", ".join(sorted(table)) or "none"
        raise FieldError(loc, f"unknown {kind} '{name}' (known: {known})")
    return table[name]


class CduBank:
    """State and physics of the CDUs behind a facility plant (see the module docstring).

    Parameters
    ----------
    catalog : Catalog
    cdu_templates : list of str
        Catalogue CDU template of each CDU.
    cdu_setpoints : ndarray
        Secondary supply set-point of each CDU [degC].
    design_secondary_flow : ndarray
        Normal secondary flow of each CDU (Σ of its racks' design flows) [kg s-1].
    control : CduControl
        The scenario's ``plant.cdu_control`` (k_p, T_i, minimum valve opening).
    supply_volume : ndarray, optional
        Coolant in the supply pipe between each CDU and its racks [m³] (default none: the racks
        see the CDU's supply at once).
    coolant : dict, optional
        The secondary loops' coolant against water: heat-capacity rate and resistance at one
        volume flow (:func:`twin.cooling.coolant.loop_coolant_factors`; default water: both 1).
    """

    def __init__(self, catalog, cdu_templates, cdu_setpoints, design_secondary_flow, control,
                 supply_volume=None, coolant: dict | None = None):
        n = self.n_cdu = len(cdu_templates)
        self.supply_volume = np.zeros(n) if supply_volume is None else np.asarray(supply_volume, dtype=float)
        self.piped = self.supply_volume > 0
        self.pipes_on = True  # off while the plant settles on its own
        tpl = [lookup(catalog.cdus, name, ("cdus", i, "template"), "CDU template")
               for i, name in enumerate(cdu_templates)]
        self.cdu_capacity = np.array([c.capacity.si for c in tpl])
        coolant = coolant or {"heat": 1.0, "resistance": 1.0}
        heat, resistance = coolant["heat"], coolant["resistance"]
        self.rho_cp = RHO_WATER * CP_WATER * heat  # the loop coolant's volumetric heat capacity [J m-3 K-1]
        self.m_s_design = np.array([c.design_flow.si * RHO_WATER * heat for c in tpl])
        self.m_p_design = np.array([(c.primary_flow or c.design_flow).si * RHO_WATER for c in tpl])
        self.ua_design = np.array([c.ua.si if c.ua is not None else c.capacity.si / c.approach.si
                                   for c in tpl])
        volume = np.array([c.secondary_volume.si if c.secondary_volume is not None
                           else c.design_flow.si * SECONDARY_LOOP_TIME for c in tpl])
        self.c_secondary = volume * RHO_WATER * CP_WATER * heat
        # secondary pumps: parallel duty pumps on their curve, standby, differential-pressure control
        self.pumps = CduPumps(tpl, catalog.pumps, resistance, heat, coolant.get("density", 1.0))
        self.cdu_setpoint = np.array(cdu_setpoints, dtype=float).reshape(n).copy()
        self.design_secondary_flow = np.array(design_secondary_flow, dtype=float).reshape(n).copy()
        self.kp, self.ti, self.valve_min = control.kp, control.ti, control.valve_min
        self.reset()

    def reset(self) -> None:
        """At rest: loops at their set-points, valves half open, pumps running, no faults."""
        n = self.n_cdu
        self.t_secondary = self.cdu_setpoint.copy()
        self.valve = np.full(n, 0.5)
        self.integral = np.full(n, np.nan)  # PI integrator, relative conductance G / G_max [1]
        self.cdu_supply = self.cdu_setpoint.copy()
        self.pumps.restore_all()
        self.cdu_down = np.zeros(n, dtype=bool)
        self._valve_table = None
        self._g_last = None
        self.empty_pipes()

    def empty_pipes(self) -> None:
        """The supply pipes fill with the CDUs' supply when next used."""
        self.line = None  # the supply pipes (built on the first step)
        self.t_racks = None  # supply reaching the racks over the next step [degC]
        self.pipes_held = None  # heat in the pipes at the end of the step taken [J]

    def pipe_heat(self) -> float:
        """Σ ρ c_p V T of the supply pipes at the end of the step just taken [J] (from 0 degC):
        before the push for the next step (which describes the water that moves during it);
        pipes not yet built hold the supply the racks get."""
        if self.pipes_held is not None:
            return self.pipes_held
        return float(self.rho_cp * (self.supply_volume @ np.where(self.piped, self.rack_supply(), 0.0)))

    def rack_supply(self) -> np.ndarray:
        """Supply temperature reaching the racks [degC] (through the pipes where there are some)."""
        if self.t_racks is None:
            return self.cdu_supply.copy()
        return np.where(self.piped, self.t_racks, self.cdu_supply)

    def stored_heat(self):
        """Σ C·T of the secondary loops [J] (from 0 degC)."""
        return self.c_secondary @ self.t_secondary

    #: Reuse the last conductance when asked again for the same flows (byte for byte): the
    #: plant step's loops ask for the flows whose conductance the previous step computed for
    #: the supply it gave (same secondary flow, the valves it set), so a steady loop computes
    #: each exchanger's conductance once a step instead of twice, with identical results.
    memo_conductance = True

    def conductance(self, m_s, m_p):
        """G = ε C_min of each CDU exchanger [W/K] at secondary and primary flows [kg/s]
        (arrays of n CDUs, or several sets of n stacked end to end)."""
        key = None
        if self.memo_conductance:
            key = (m_s.tobytes(), m_p.tobytes())
            if self._g_last is not None and self._g_last[0] == key:
                return self._g_last[1].copy()
        g = self._conductance(m_s, m_p)
        if key is not None:
            self._g_last = (key, g.copy())
        return g

    def _conductance(self, m_s, m_p):
        reps = m_s.size // self.n_cdu
        m_sd, m_pd, ua_d = (np.tile(a, reps) if reps > 1 else a
                            for a in (self.m_s_design, self.m_p_design, self.ua_design))
        on = (m_s > 0) & (m_p > 0)
        rs = (np.where(on, m_s, m_sd) / m_sd) ** -HX_FLOW_EXPONENT
        rp = (np.where(on, m_p, m_pd) / m_pd) ** -HX_FLOW_EXPONENT
        ua = np.where(on, ua_d / (0.5 * rs + 0.5 * rp), 0.0)
        return hx_outlets(1.0, 0.0, m_s, m_p, ua)[2]

    def check(self, i: int) -> int:
        if not (isinstance(i, (int, np.integer)) and 0 <= i < self.n_cdu):
            raise IndexError(f"CDU index {i!r} out of range 0..{self.n_cdu - 1}")
        return int(i)

    # -- a plant step ----------------------------------------------------------------------------
    def inputs(self, cdu_return, secondary_flow) -> dict:
        """CDUs: heat from the racks, pumps, primary flows (valves set last step)."""
        m_s = np.asarray(secondary_flow, dtype=float).reshape(self.n_cdu)
        t_ret_in = np.asarray(cdu_return, dtype=float).reshape(self.n_cdu)
        flowing = (m_s > 0) & ~self.cdu_down & np.isfinite(t_ret_in)
        m_s = np.where(flowing, m_s, 0.0)
        t_ret = np.where(flowing, t_ret_in, np.nan)
        q_racks = np.where(flowing, m_s * CP_WATER * (np.where(flowing, t_ret_in, 0.0) - self.cdu_supply),
                           0.0)
        m_p = np.where(flowing, self.valve * self.m_p_design, 0.0)
        return {"m_s": m_s, "flowing": flowing, "t_sup_used": self.cdu_supply, "t_ret": t_ret,
                "q_racks": q_racks, "p_cdu": self.pumps.power(self.pumps.volume(m_s), ~self.cdu_down), "m_p": m_p,
                "m_f": float(m_p.sum())}

    def loops(self, cdu: dict, t_fs: float, dt: float) -> dict:
        """The secondary loops over the step (exact) against facility supply ``t_fs``."""
        g = self.conductance(cdu["m_s"], cdu["m_p"])
        q_in = cdu["q_racks"] + cdu["p_cdu"]
        ts_end, ts_mean = relax(self.t_secondary, self.c_secondary, q_in, g, t_fs, dt)
        q_hx = g * (ts_mean - t_fs)
        return {"g": g, "q_in": q_in, "ts_end": ts_end, "q_hx": q_hx, "q_hx_total": float(q_hx.sum())}

    def next_supply(self, cdu: dict, loops: dict, t_fs: float, dt: float) -> None:
        """CDU valves (PI) and the supply for the next step; the loops' end temperatures."""
        flowing, m_s, ts_end = cdu["flowing"], cdu["m_s"], loops["ts_end"]
        self.control(flowing, m_s, loops["g"], ts_end, loops["q_in"], t_fs, dt)
        m_next = np.where(flowing, m_s, self.design_secondary_flow)
        g_next = self.conductance(m_next, self.valve * self.m_p_design)
        with np.errstate(divide="ignore", invalid="ignore"):
            supply_next = ts_end - g_next * (ts_end - t_fs) / (m_next * CP_WATER)
        self.cdu_supply = np.where(m_next > 0, supply_next, self.cdu_supply)
        self.t_secondary = ts_end

    def _valve_characteristic(self, m_s):
        """Conductance of each exchanger at each valve grid point, shape (n, k) [W/K] (the
        flows change rarely: kept until they do)."""
        key = m_s.tobytes()
        if self._valve_table is None or self._valve_table[0] != key:
            k_grid = VALVE_GRID.size
            u_grid = self.valve_min + (1.0 - self.valve_min) * VALVE_GRID
            g_tab = self.conductance(np.tile(m_s, k_grid), (u_grid[:, None] * self.m_p_design).ravel())
            self._valve_table = (key, g_tab.reshape(k_grid, self.n_cdu).T)
        return self._valve_table[1]

    def control(self, flowing, m_s, g, ts_end, q_in, t_fs, dt):
        """PI on each CDU's secondary supply, acting on the exchanger conductance (see the
        module docstring). The controller works in relative conductance v = G / G(valve open),
        in which the supply is linear (T_supply = T_s − v G_max (T_s − T_fs) / (ṁ_s c_p)); the
        exchanger's tabulated characteristic G(u) then gives the valve (characterisation, as an
        equal-percentage valve compensates a coil). Clamping anti-windup.
        """
        if not flowing.any():
            return
        if self.n_cdu <= CONTROL_NUMBERS_MAX and self._control_numbers(flowing, m_s, g, ts_end, q_in, t_fs, dt):
            return
        n, k_grid = self.n_cdu, VALVE_GRID.size
        u_grid = self.valve_min + (1.0 - self.valve_min) * VALVE_GRID
        g_tab = self._valve_characteristic(m_s)
        g_max = g_tab[:, -1]
        cp_m = np.where(flowing, m_s, 1.0) * CP_WATER
        measured = ts_end - g * (ts_end - t_fs) / cp_m
        error = measured - self.cdu_setpoint  # > 0: too warm → more conductance
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.where(g_max > 0, g / g_max, 1.0)
            v_min = np.where(g_max > 0, g_tab[:, 0] / g_max, 1.0)
            gain_inst = (ts_end - t_fs) * g_max / cp_m  # |∂T_supply/∂v| with T_s held
            gain_ss = np.where(g > 0, q_in * g_max / (g * g), gain_inst)  # … at steady state
            w = -np.expm1(-dt * g / self.c_secondary)  # how far the loop settles in one step
        gain = np.maximum(np.abs((1.0 - w) * gain_inst + w * gain_ss), GAIN_FLOOR)
        a = min(dt, self.ti) / self.ti
        kp = self.kp * (1.0 - a)
        step = error / gain
        integral = np.where(np.isnan(self.integral), v, self.integral)
        u = self.valve
        pushing_out = ((u >= 1.0) & (error > 0)) | ((u <= self.valve_min) & (error < 0))
        integral = np.clip(np.where(pushing_out, integral, integral + a * step), v_min, 1.0)
        target = np.clip(integral + kp * step, v_min, 1.0) * g_max
        # invert the (increasing) characteristic row by row: linear between grid points
        hi = np.clip((g_tab < target[:, None]).sum(axis=1), 1, k_grid - 1)
        rows = np.arange(n)
        g_lo, g_hi = g_tab[rows, hi - 1], g_tab[rows, hi]
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.clip(np.where(g_hi > g_lo, (target - g_lo) / (g_hi - g_lo), 1.0), 0.0, 1.0)
        valve = u_grid[hi - 1] + frac * (u_grid[hi] - u_grid[hi - 1])
        self.integral = np.where(flowing, integral, self.integral)
        self.valve = np.where(flowing, valve, self.valve)


    def _control_numbers(self, flowing, m_s, g, ts_end, q_in, t_fs, dt) -> bool:
        """:meth:`control` CDU by CDU on floats: the array path's operations in its order
        (``np.maximum(x, y)`` is ``x if x >= y else y`` for numbers, ``np.clip`` a maximum and
        a minimum in turn, the grid search a count), the settling factor ``w`` from the same
        ``np.expm1`` call; a CDU that does not flow keeps its valve and integrator there too.
        Bit for bit the array path (``tests/cooling/test_cdu_bank.py``), ~10 µs per CDU
        instead of ~0.3 ms for the whole bank at a few CDUs. False (nothing changed) where an
        input is not finite: the array path takes them."""
        with np.errstate(invalid="ignore", divide="ignore"):
            w = -np.expm1(-dt * g / self.c_secondary)
        k_grid = VALVE_GRID.size
        u_grid = (self.valve_min + (1.0 - self.valve_min) * VALVE_GRID).tolist()
        g_tab = self._valve_characteristic(m_s).tolist()
        a = min(dt, self.ti) / self.ti
        kp = self.kp * (1.0 - a)
        valve, integral = self.valve.tolist(), self.integral.tolist()
        for i, (on, m, gi, ts, q, wi, sp) in enumerate(zip(
                flowing.tolist(), m_s.tolist(), g.tolist(), ts_end.tolist(), q_in.tolist(), w.tolist(),
                self.cdu_setpoint.tolist())):
            if not on:
                continue
            row = g_tab[i]
            g_max = row[-1]
            if not math.isfinite(m + gi + ts + q + wi + sp + t_fs + g_max + row[0]):  # (a sum: one test)
                return False
            cp_m = m * CP_WATER
            error = ts - gi * (ts - t_fs) / cp_m - sp  # > 0: too warm → more conductance
            v = gi / g_max if g_max > 0 else 1.0
            v_min = row[0] / g_max if g_max > 0 else 1.0
            gain_inst = (ts - t_fs) * g_max / cp_m
            gain_ss = q * g_max / (gi * gi) if gi > 0 else gain_inst
            gain = abs((1.0 - wi) * gain_inst + wi * gain_ss)
            gain = gain if gain >= GAIN_FLOOR else GAIN_FLOOR
            step = error / gain
            x = v if math.isnan(integral[i]) else integral[i]
            u = valve[i]
            if not ((u >= 1.0 and error > 0) or (u <= self.valve_min and error < 0)):
                x = x + a * step
            x = x if x > v_min else v_min
            x = x if x < 1.0 else 1.0
            target = x + kp * step
            target = target if target > v_min else v_min
            target = (target if target < 1.0 else 1.0) * g_max
            hi = sum(map(target.__gt__, row))  # grid points below the target
            hi = min(max(hi, 1), k_grid - 1)
            g_lo, g_hi = row[hi - 1], row[hi]
            frac = (target - g_lo) / (g_hi - g_lo) if g_hi > g_lo else 1.0
            frac = frac if frac > 0.0 else 0.0
            frac = frac if frac < 1.0 else 1.0
            integral[i] = x
            valve[i] = u_grid[hi - 1] + frac * (u_grid[hi] - u_grid[hi - 1])
            if not math.isfinite(x + valve[i]):
                return False
        self.integral, self.valve = np.array(integral), np.array(valve)
        return True


class CduDemand(Component):
    """The CDUs at the start of a plant step: heat and flow from the racks (their return at the
    supply the CDUs gave them), secondary pump power and the facility water the valves draw."""

    inputs = ("cdu.q_in", "cdu.flow")
    outputs = (P_PUMP, M_FACILITY, CDU_STEP)
    phase = "integration"
    plant_stage = 10

    @classmethod
    def from_plant(cls, plant):
        return cls(plant.cdus, plant.every)

    def __init__(self, bank: CduBank, every: int = 1):
        self.bank = bank
        self.every = every

    def step(self, t: float, dt: float, state) -> None:
        flow, q = state["cdu.flow"], state["cdu.q_in"]
        bank = self.bank
        supply = (bank.cdu_supply if bank.t_racks is None
                  else np.where(bank.piped, bank.t_racks, bank.cdu_supply))  # what the racks had
        with np.errstate(invalid="ignore", divide="ignore"):
            ret = np.where(flow > 0, supply + q / (flow * CP_WATER), np.nan)
        cdu = bank.inputs(ret, flow)
        cdu["flow_in"] = flow
        state["cdu.plant_step"] = cdu
        state["cdu.p_pump"] = cdu["p_cdu"]
        state["facility.m_facility_water"] = cdu["m_f"]


class CduLoops(CduComponent):
    """The CDUs' secondary loops over a plant step against the facility supply, their valves
    (PI) and the supply, flow and cold-aisle boundaries the racks get next.

    The CDU interface (:class:`~twin.cooling.cdu.CduComponent`: CDU events, supply set-points)
    over the bank's set-points, pumps and failed CDUs.
    """

    inputs = ("cdu.plant_step", "facility.t_facility_supply")
    outputs = (Q, VALVE, T_SUPPLY_NEXT, FLOW_FACTOR, Q_HX, STORED_CDUS, STORED_PIPES)
    phase = "integration"
    plant_stage = 30

    @classmethod
    def from_plant(cls, plant):
        return plant.cdu_loops

    def __init__(self, bank: CduBank, system, every: int = 1):
        self.bank = bank
        self.every = every
        self.sy = system
        self.cdu_names = system.cdu_name
        self._saved_setpoint: dict[int, np.ndarray] = {}
        self.state = None

    @property
    def setpoint(self) -> np.ndarray:
        return self.bank.cdu_setpoint

    @property
    def pumps(self) -> CduPumps:
        return self.bank.pumps

    @property
    def down(self) -> np.ndarray:
        return self.bank.cdu_down

    def publish(self) -> None:
        if self.state is not None:
            self.boundaries(self.state)

    def boundaries(self, state) -> None:
        state["cdu.t_supply_next"] = self.bank.rack_supply()
        state["cdu.flow_factor"] = self.flow_factor
        state["facility.stored_cdus"] = self.bank.stored_heat()
        state["facility.stored_pipes"] = self.bank.pipe_heat()

    def initialise(self, state) -> None:
        self.state = state
        self.boundaries(state)

    def step(self, t: float, dt: float, state) -> None:
        bank, cdu = self.bank, state["cdu.plant_step"]
        t_fs = float(state["facility.t_facility_supply"][0])
        loops = bank.loops(cdu, t_fs, dt)
        bank.next_supply(cdu, loops, t_fs, dt)
        if bank.piped.any() and bank.pipes_on:
            self._transport(bank.pumps.volume(cdu["flow_in"]), dt, state)
        state["cdu.q"] = loops["q_hx"]
        state["cdu.valve"] = np.where(cdu["flowing"], cdu["m_p"] / bank.m_p_design, 0.0)
        state["facility.q_cdus"] = loops["q_hx_total"]
        self.boundaries(state)

    def _transport(self, flow, dt: float, state) -> None:
        """Push the supply the CDUs give for the next step through the supply pipes at the
        latest flow; the racks get what leaves them over the step."""
        bank = self.bank
        if bank.line is None:
            # the pipes start full of the supply the racks have had so far; enough slugs for
            # the transit at a tenth of the design flow (beyond, the oldest merge)
            with np.errstate(divide="ignore"):
                tau = bank.supply_volume / (0.1 * self.sy.cdu_design_flow / RHO_WATER)
            steps = int(np.ceil(np.nanmax(np.where(np.isfinite(tau), tau, 0.0)) / dt)) + 2
            start = state["cdu.t_supply_next"].copy()
            bank.line = PlugFlowDelay(bank.supply_volume, start, capacity=min(max(steps, 8), 4096))
        bank.pipes_held = float(bank.line.stored_heat(bank.rho_cp).sum())  # this step's end
        bank.t_racks = bank.line.step(bank.cdu_supply, flow, dt)
