"""In-row liquid-to-air heat exchangers: CDUs that reject the racks' liquid heat into the hall air.

This is how liquid-cooled racks run in a hall built for air: AWS's In-Row Heat Exchanger (IRHX)
stands in the row next to GB200 NVL72 racks, pumps their cold-plate coolant through fan coils and
blows the heat into the hall, whose existing air cooling takes it away (AWS, "How AWS is using
liquid cooling in its data centers", aboutamazon.com, 2025). A CDU whose catalogue entry has
``kind: liquid_to_air`` is modelled here; the others of the scenario keep the facility-water
model of :class:`~twin.cooling.cdu.SimpleCdu` (same interface, same events).

Model, per CDU (arrays over the liquid-to-air CDUs):

- secondary loop = one mixed volume at T_s (coils, reservoir, piping) that its racks return
  into: C_s dT_s/dt = q_racks + P_pump − G (T_s − T_air,in), integrated exactly over the step
  (:func:`twin.cooling.volumes.relax`), so the heat bookkeeping closes to rounding;
- coil: counterflow ε-NTU between the liquid (C_l = ṁ_l c_p) and the air (C_a = ρ V̇ s c_p,a) at
  relative fan speed s; UA = UA_d s^0.8 (air-side film, Dittus–Boelter) with UA_d from the
  rating (capacity at the design approach and flows, :func:`~twin.cooling.heat_rejection.ntu_counterflow`);
  G = ε C_min; supply = T_s − G (T_s − T_air,in) / C_l;
- fans: the lowest speed whose G brings the supply to its set-point (flat out when they cannot:
  the supply then rises above the set-point and the chips warm); P_fan ∝ s³;
- air: the hall air through the coil warms by ΔT = Q / (ṁ_a c_p,a), Q = G (T̄_s − T_air,in).
"""

from __future__ import annotations

import numpy as np

from twin.cooling.cdu import P_COOLING, SimpleCdu
from twin.cooling.cdu_bank import HX_FLOW_EXPONENT, SECONDARY_LOOP_TIME
from twin.cooling.heat_rejection import SPEED_GRID, ntu_counterflow
from twin.cooling.plant import fan_power, hx_outlets
from twin.cooling.volumes import relax
from twin.sim.component import Var
from twin.units import CP_AIR, CP_WATER, RHO_AIR, RHO_WATER

T_AIR_OUT = Var("cdu", "t_air_out", "degC", "air leaving a liquid-to-air CDU's coils (into the hall)")
P_FAN = Var("cdu", "p_fan", "W", "coil fan power of a liquid-to-air CDU")


class LiquidToAirCdu(SimpleCdu):
    """CDUs of which some (or all) reject heat to the hall air through fan coils.

    Parameters
    ----------
    system : System
    t_facility : float
        Facility water supply for the liquid-to-liquid CDUs, if any [degC].
    t_cold_aisle : float
        Hall air entering the coils (the cold aisle) [degC].
    pumps : CduPumps
        The secondary pumps of every CDU.
    entries : list of CDU
        Catalogue entry of each CDU.
    """

    outputs = SimpleCdu.outputs + (T_AIR_OUT, P_FAN)
    cdu_kind = "liquid_to_air"  # the catalogue CDU kind it models (twin.cooling.equipment.cdu_models)

    def __init__(self, system, t_facility: float, t_cold_aisle: float, pumps, entries):
        super().__init__(system, t_facility, t_cold_aisle, pumps)
        self.air = np.array([e.kind == "liquid_to_air" for e in entries])
        air = [e for e in entries if e.kind == "liquid_to_air"]
        self.v_air = np.array([e.air_flow.si for e in air])  # [m3/s] at full speed
        self.p_fan_design = np.array([e.fan_power.si for e in air])
        self.m_design = np.array([e.design_flow.si * RHO_WATER for e in air])
        volume = np.array([e.secondary_volume.si if e.secondary_volume is not None
                           else e.design_flow.si * SECONDARY_LOOP_TIME for e in air])
        self.c_loop = volume * RHO_WATER * CP_WATER  # [J/K]
        self.ua_design = np.array([self.rated_ua(e) for e in air])
        self.t_loop = np.full(len(air), np.nan)  # secondary loop temperature [degC]
        self.speed = np.zeros(len(air))  # relative fan speed [1]
        #: secondary flow its racks draw at design [kg/s]
        self.m_racks = np.bincount(system.rack_cdu, weights=system.rack_m_coolant,
                                   minlength=system.cdu_name.size)[self.air]

    @staticmethod
    def rated_ua(entry) -> float:
        """Coil UA at full fans [W/K] from the rating: ``capacity`` with the supply ``approach``
        above the entering air, at the design liquid flow and full air flow (counterflow)."""
        q, c_l = entry.capacity.si, entry.design_flow.si * RHO_WATER * CP_WATER
        c_a = RHO_AIR * entry.air_flow.si * CP_AIR
        c_min, c_max = min(c_l, c_a), max(c_l, c_a)
        eps = q / (c_min * (entry.approach.si + q / c_l))  # return − air = approach + liquid ΔT
        try:
            return ntu_counterflow(eps, c_min / c_max) * c_min
        except ValueError as exc:
            raise ValueError(f"CDU '{entry.description}': rating not reachable with its air flow ({exc})") from None

    def conductance(self, m_liquid, speed):
        """G = ε C_min of each coil [W/K] at liquid flow [kg/s] and relative fan speed [1]."""
        speed = np.asarray(speed, dtype=float)
        ua = self.ua_design * speed ** HX_FLOW_EXPONENT
        return hx_outlets(1.0, 0.0, m_liquid, RHO_AIR * self.v_air * speed, ua, CP_WATER, CP_AIR)[2]

    def _fan_speed(self, m, t_loop, t_set):
        """Lowest speed that brings the supply to ``t_set``, from G over :data:`SPEED_GRID`."""
        grid = SPEED_GRID[:, None] * np.ones_like(m)
        g = self.conductance(np.broadcast_to(m, grid.shape), grid)  # (speeds, CDUs), rising
        with np.errstate(divide="ignore", invalid="ignore"):
            g_needed = np.where(t_loop > t_set, m * CP_WATER * (t_loop - t_set) / (t_loop - self.t_cold_aisle), 0.0)
        return np.array([np.interp(gn, g[:, j], SPEED_GRID) if g[-1, j] > 0 else 1.0
                         for j, gn in enumerate(g_needed)])

    def settle(self, q_liquid, q_air: float, flow) -> None:
        """Steady state under constant loads: the loop at set-point + (q + P_pump) / C_l and the
        fans at the speed that holds the set-point."""
        m = flow[self.air]
        p = self.pumps.power(self.pumps.volume(flow))[self.air]
        with np.errstate(divide="ignore", invalid="ignore"):
            rise = np.where(m > 0, (q_liquid[self.air] + p) / (m * CP_WATER), 0.0)
        self.t_loop = self.setpoint[self.air] + rise
        self.speed = self._fan_speed(m, self.t_loop, self.setpoint[self.air])
        self._boundaries()

    def initialise(self, state) -> None:
        if np.isnan(self.t_loop).any():
            self.t_loop = self.setpoint[self.air].copy()
        super().initialise(state)
        if self.air.all():  # no facility water at all
            state["facility.t_facility_supply"] = np.array([np.nan])
        state["cdu.t_air_out"] = np.full(self.sy.cdu_name.size, np.nan)
        state["cdu.p_fan"] = np.zeros(self.sy.cdu_name.size)
        self._boundaries()

    def _boundaries(self) -> None:
        super()._boundaries()
        if self.state is not None and self.air.any():
            supply = self.state["cdu.t_supply_next"].copy()
            m = self.m_racks * self.flow_factor[self.air]
            g = self.conductance(m, self.speed)
            with np.errstate(divide="ignore", invalid="ignore"):
                air_supply = np.where(m > 0, self.t_loop - g * (self.t_loop - self.t_cold_aisle) / (m * CP_WATER),
                                      self.t_loop)
            supply[self.air] = air_supply
            self.state["cdu.t_supply_next"] = supply

    def step(self, t: float, dt: float, state) -> None:
        super().step(t, dt, state)  # pumps of every CDU; facility-water CDUs as before
        a, t_in = self.air, self.t_cold_aisle
        m = state["cdu.flow"][a]
        p_pump = state["cdu.p_pump"][a]
        self.speed = self._fan_speed(m, self.t_loop, self.setpoint[a])
        g = self.conductance(m, self.speed)
        t_end, t_mean = relax(self.t_loop, self.c_loop, state["cdu.q_in"][a] + p_pump, g, t_in, dt)
        q = g * (t_mean - t_in)  # heat into the hall air [W]
        self.t_loop = t_end
        m_air = RHO_AIR * self.v_air * self.speed
        with np.errstate(divide="ignore", invalid="ignore"):
            t_out = np.where(m_air > 0, t_in + q / (m_air * CP_AIR), t_in)
        p_fan = fan_power(self.speed * self.v_air, self.v_air, self.p_fan_design)
        cdu_q, t_air_out, fans = state["cdu.q"].copy(), np.full(a.size, np.nan), np.zeros(a.size)
        cdu_q[a], t_air_out[a], fans[a] = q, t_out, p_fan
        state["cdu.q"] = cdu_q
        state["cdu.t_air_out"] = t_air_out
        state["cdu.p_fan"] = fans
        state[P_COOLING.key] = np.array([float(state["cdu.p_pump"].sum() + fans.sum())])
        self._boundaries()

    def stored_heat(self) -> float:
        """Σ C_s T_s of the liquid-to-air loops [J] (from 0 degC)."""
        return float(self.c_loop @ self.t_loop)
