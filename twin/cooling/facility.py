"""The facility cooling plant as a stateful model the driver steps once per thermal step.

Heat path::

    racks ─► CDU secondary loops (mixed volume each) ─ε-NTU HX, PI valve─► facility-water loop
    (mixed volume) ─► dry coolers / towers (free cooling, fans modulating) ─► trim chiller (series)
    room air ─► CRAH coils ─► chilled-water circuit ─► its own free-cooling units + the chillers

State: each CDU loop's temperature, the facility-water loop temperature, the cold-aisle air
temperature, the CDU valves (PI integrators) and the chiller / economiser modes. Each volume is
integrated exactly over the step for inputs held over the step (a linear ODE
C dT/dt = q − k (T − T_ref) has a closed form), so any step from 1 s to 1 h is stable and the
heat bookkeeping closes to rounding error; the volumes are coupled explicitly (the CDUs see the
facility supply at the start of the step). The pure physics (ε-NTU, affinity laws, chiller COP,
economiser split, tower water) lives in :mod:`twin.cooling.plant` and is reused here.

Per step the driver calls :meth:`Plant.step` with the CDU return temperatures and flows it
computed with the supply temperatures the plant gave it last step; the plant returns a
:class:`PlantState` whose ``cdu_supply``, ``t_cold_aisle`` and ``secondary_flow_factor`` are the
boundaries for the next step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from twin.catalog.model import Catalog
from twin.cooling.config import PlantSpec
from twin.cooling.heat_rejection import HeatRejectionBank, outlet_tables
from twin.cooling.plant import (
    COP_MAX,
    chiller_cop,
    chiller_power,
    crah_fan_power,
    economiser_split,
    hx_outlets,
)
from twin.cooling.cdu_pumps import CduPumps
from twin.cooling.volumes import relax, relax1
from twin.scenario.errors import FieldError
from twin.site.weather import Weather, build_weather
from twin.units import CP_AIR, CP_WATER, RHO_AIR, RHO_WATER

#: Air share of the heat used to size the CRAHs when no count is given [1] (liquid-cooled
#: sleds put 85–95 % of their heat into the liquid: CATALOGUE-SOURCES, "liquid share of heat").
AIR_SHARE_DESIGN = 0.15
#: Facility-water volume per watt of design load when none is given [m3 W-1] (estimate: piping
#: plus buffer, 3–11 L/kW from the 3–10 US gal/ton rule of thumb for chilled-water buffers).
FACILITY_VOLUME_PER_WATT = 8e-6
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
#: ASHRAE TC9.9 (2021) air inlet ranges [degC]: recommended, and allowable class A1.
ASHRAE_RECOMMENDED = (18.0, 27.0)
ASHRAE_ALLOWABLE_A1 = (15.0, 32.0)
#: Steps of weather sampled ahead in one call (interpolating a periodic series sorts it each call).
WEATHER_BLOCK = 4096
#: Economiser states reported in ``PlantState.economiser``.
CHILLER_ONLY, PARTIAL, FULL_FREE = 0, 1, 2


# --------------------------------------------------------------------------------------------
# Pure helpers
# --------------------------------------------------------------------------------------------
def _lookup(table: dict, name: str, loc: tuple, kind: str):
    if name not in table:
        known = ", ".join(sorted(table)) or "none"
        raise FieldError(loc, f"unknown {kind} '{name}' (known: {known})")
    return table[name]


# --------------------------------------------------------------------------------------------
# State and totals
# --------------------------------------------------------------------------------------------
@dataclass
class PlantState:
    """What one :meth:`Plant.step` gives back.

    Boundaries for the NEXT step: ``cdu_supply``, ``t_cold_aisle``, ``secondary_flow_factor``.
    Everything else describes the step just taken (means over it unless said otherwise).
    Temperatures [degC], powers and heat flows [W], flows [kg s-1].
    """

    # boundaries for the next step
    cdu_supply: np.ndarray  # secondary supply temperature per CDU
    secondary_flow_factor: np.ndarray  # 1 normal, 0 pumps down with no standby [1]
    t_cold_aisle: float  # at the end of the step
    # per CDU, this step
    t_supply: np.ndarray  # the supply the racks received
    t_return: np.ndarray
    flow: np.ndarray  # secondary flow
    p_pump: np.ndarray
    q: np.ndarray  # heat passed to facility water (HX duty)
    valve: np.ndarray  # primary flow fraction [1]
    # facility, this step
    t_outdoor: float  # dry-bulb
    t_wet_bulb: float
    t_facility_supply: float
    t_facility_return: float
    t_chilled_water: float  # CRAH chilled-water supply
    p_cooling: float
    p_cdu_pumps: float
    p_facility_pumps: float  # facility- and chilled-water pumps
    p_heat_rejection_fans: float
    p_chiller: float
    p_crah: float
    water: float  # make-up water [kg s-1]
    economiser: int  # 0 chiller only, 1 partial, 2 full free cooling (facility water)
    chiller_on: bool  # a chiller runs: facility-water trim or the CRAH chilled water
    fan_speed: float  # facility-water heat rejection, relative air flow [1]
    q_free: float  # heat removed by free cooling (both circuits)
    q_chiller: float  # evaporator load (both circuits)
    # energy balance, this step
    q_liquid: float  # heat from the racks into the CDU loops
    q_air: float  # heat into the room air (given)
    q_electric: float  # cooling power dissipated inside the plant (pumps, CRAH fans, chiller)
    q_rejected: float  # heat rejected outdoors
    q_stored: float  # rate of change of stored heat
    stored_heat: float  # Σ C·T of the loop volumes and room air at the end of the step [J]


@dataclass
class PlantTotals:
    """Running totals over the steps taken [J, kg, s]."""

    e_it: float = 0.0
    e_liquid: float = 0.0
    e_air: float = 0.0
    e_electric: float = 0.0
    e_rejected: float = 0.0
    e_cooling: float = 0.0
    e_cdu_pumps: float = 0.0
    e_facility_pumps: float = 0.0
    e_heat_rejection_fans: float = 0.0
    e_chiller: float = 0.0
    e_crah: float = 0.0
    water: float = 0.0
    chiller_seconds: float = 0.0
    economiser_seconds: list = field(default_factory=lambda: [0.0, 0.0, 0.0])
    seconds_outside_recommended: float = 0.0
    seconds_outside_allowable: float = 0.0
    stored_start: float = 0.0
    stored_end: float = 0.0
    seconds: float = 0.0
    steps: int = 0

    @property
    def energy_residual(self) -> float:
        """(heat in + electrical inside − rejected − stored) / (heat in + electrical inside) [1]."""
        heat_in = self.e_liquid + self.e_air + self.e_electric
        out = self.e_rejected + (self.stored_end - self.stored_start)
        return (heat_in - out) / heat_in if heat_in else 0.0

    @property
    def wue(self) -> float:
        """Water use per IT energy [L kWh-1] (1 kg of water ≈ 1 L)."""
        return self.water / (self.e_it / 3.6e6) if self.e_it else 0.0


# --------------------------------------------------------------------------------------------
# The plant
# --------------------------------------------------------------------------------------------
class Plant:
    """Facility cooling plant: CDUs, facility water, heat rejection, chillers, CRAHs.

    Parameters
    ----------
    spec : PlantSpec
        The scenario's ``plant:`` section.
    catalog : Catalog
        Hardware catalogue (CDU, heat rejection, chiller, CRAH and pump templates).
    cdu_templates : list of str
        Catalogue CDU template of each CDU.
    cdu_setpoints : ndarray
        Secondary supply set-point of each CDU [degC].
    design_secondary_flow : ndarray
        Normal secondary flow of each CDU (Σ of its racks' design flows) [kg s-1].
    dt : float
        Thermal step [s].
    start_day_of_year : float, optional
        Typical-year day at time 0 for EPW weather without ``start_day`` (the scenario start).
    base_dir : Path, optional
        Folder that relative weather-file paths are relative to.
    weather : Weather, optional
        Use this weather instead of building one from ``spec.weather``.

    Raises
    ------
    FieldError
        Unknown or mismatched template, at its ``plant.…`` field path.

    Notes
    -----
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
    never leaves the valve's range. Pumps: affinity law over the running duty pumps; a trip
    without standby stops the secondary flow.

    *Facility water.* One mixed volume at T_f that the CDU primaries return into:
    C_f dT_f/dt = Σ q_hx + P_pump − R(T_f). Heat rejection R (water side) is piecewise linear in
    T_f: nothing below the supply set-point (bypass), otherwise holding the set-point
    (R = ṁ c_p (T_f − T_set)) or, when free cooling and chiller capacity run out, free cooling
    flat out (ṁ c_p (1 − r) (T_f − T_sink)) plus the chiller's capacity. The piece that applies
    at the start of the step is integrated exactly (with the crossing of T_set handled).
    Series economiser: free cooling first, the chiller trims the rest
    (:func:`~twin.cooling.plant.economiser_split`); the chiller starts when free cooling at full
    fans cannot hold the set-point and stops when it could hold it with ``hysteresis`` to spare;
    free cooling is bypassed (chiller only) when it would cool the return by less than
    ``min_useful``. COP from lift (:func:`~twin.cooling.plant.chiller_cop`): evaporator at the
    set-point, condenser at the dry-bulb (air-cooled) or the heat-rejection approach above the
    sink (water-cooled). Pumps (variable primary) by the affinity law on Σ of the CDU primary
    flows.

    *Air side.* Room air at T_ca: C_a dT_ca/dt = q_air + P_fans − Q_crah, with the CRAHs
    holding the cold aisle by Q_crah = q_air + P_fans + C_a (T_ca − T_set)/τ (first-order
    approach with time constant τ), within 0 … capacity; the set-point cannot be below the
    chilled-water supply + coil approach. The chilled-water circuit (steady, flow ∝ load) is
    free-cooled by its own heat-rejection units when the weather allows and trimmed by the same
    chillers; capacity the chillers lack comes back as room heat. Time with the step-mean
    cold-aisle temperature outside the ASHRAE recommended (18–27 °C) and allowable A1
    (15–32 °C) ranges is counted.

    *Energy.* Heat in (racks + room air + pump, fan and compressor power dissipated inside)
    = heat rejected outdoors + change of Σ C·T; every piece is integrated exactly, so this
    closes to rounding error (see :attr:`PlantTotals.energy_residual`).
    """

    def __init__(self, spec: PlantSpec, catalog: Catalog, cdu_templates, cdu_setpoints,
                 design_secondary_flow, dt: float, *, start_day_of_year: float | None = None,
                 base_dir: Path | None = None, weather: Weather | None = None, coolant: dict | None = None):
        self.spec = spec
        #: the secondary loops' coolant against water: heat-capacity rate and resistance at one
        #: volume flow (:func:`twin.cooling.coolant.loop_coolant_factors`; water: both 1)
        self.coolant = coolant or {"heat": 1.0, "resistance": 1.0}
        self.dt = float(dt)
        if not self.dt > 0:
            raise ValueError(f"Plant: dt must be positive, got {dt}")
        n = len(cdu_templates)
        if n == 0:
            raise ValueError("Plant: needs at least one CDU")
        self.n_cdu = n
        self.weather = weather if weather is not None else build_weather(
            spec.weather, base_dir, start_day_of_year)

        self._init_cdus(catalog, cdu_templates, cdu_setpoints, design_secondary_flow)
        design_liquid = float(self.cdu_capacity.sum())
        self._init_facility_water(catalog, design_liquid)
        unit = self._init_heat_rejection(catalog, design_liquid)
        self._init_air_side(catalog, unit, design_liquid)
        self._init_chillers(catalog, design_liquid)
        # -- power chain (used by the power-delivery model; checked here so a typo fails early)
        self.ups = _lookup(catalog.ups, spec.ups.template, ("plant", "ups", "template"),
                           "UPS template")
        self.transformer = _lookup(catalog.transformers, spec.transformer.template,
                                   ("plant", "transformer", "template"), "transformer template")
        if spec.electrical_room.template is not None:
            _lookup(catalog.room_coolers, spec.electrical_room.template,
                    ("plant", "electrical_room", "template"), "electrical-room cooler template")

        self._init_state()

    def _init_cdus(self, catalog, cdu_templates, cdu_setpoints, design_secondary_flow) -> None:
        """CDU exchangers, loops, pumps and their controller from the catalogue."""
        n = self.n_cdu
        spec = self.spec
        tpl = [_lookup(catalog.cdus, name, ("cdus", i, "template"), "CDU template")
               for i, name in enumerate(cdu_templates)]
        self.cdu_capacity = np.array([c.capacity.si for c in tpl])
        heat, resistance = self.coolant["heat"], self.coolant["resistance"]
        self.m_s_design = np.array([c.design_flow.si * RHO_WATER * heat for c in tpl])
        self.m_p_design = np.array([(c.primary_flow or c.design_flow).si * RHO_WATER for c in tpl])
        self.ua_design = np.array([c.ua.si if c.ua is not None else c.capacity.si / c.approach.si
                                   for c in tpl])
        volume = np.array([c.secondary_volume.si if c.secondary_volume is not None
                           else c.design_flow.si * SECONDARY_LOOP_TIME for c in tpl])
        self.c_secondary = volume * RHO_WATER * CP_WATER * heat
        # secondary pumps: parallel duty pumps on their curve, standby, differential-pressure control
        self.pumps = CduPumps(tpl, catalog.pumps, resistance, heat)
        self.cdu_setpoint = np.array(cdu_setpoints, dtype=float).reshape(n).copy()
        self.design_secondary_flow = np.array(design_secondary_flow, dtype=float).reshape(n).copy()
        ctl = spec.cdu_control
        self.kp, self.ti, self.valve_min = ctl.kp, ctl.ti, ctl.valve_min

    def _init_facility_water(self, catalog, design_liquid: float) -> None:
        """Facility-water loop: set-point, thermal mass, pumps."""
        spec = self.spec
        self.t_set = spec.facility_water_supply
        vol = spec.facility_water_volume or FACILITY_VOLUME_PER_WATT * design_liquid
        self.c_facility = vol * RHO_WATER * CP_WATER
        self.m_f_design = float(self.m_p_design.sum())
        pump = _lookup(catalog.pumps, spec.pumps.template, ("plant", "pumps", "template"),
                       "pump template")
        #: Pump power per unit of design flow at the template's head [W per kg/s].
        self.pump_specific = pump.power.si / (pump.design_flow.si * RHO_WATER)

    def _init_heat_rejection(self, catalog, design_liquid: float):
        """Heat-rejection bank of the facility water; returns the unit's catalogue entry."""
        spec = self.spec
        hr = spec.heat_rejection
        names = spec.templates()
        loc = ("plant", "heat_rejection", "template")
        if hr.kind == "cooling_tower":
            unit = _lookup(catalog.cooling_towers, names["heat_rejection"], loc,
                           "cooling-tower template")
        else:
            unit = _lookup(catalog.dry_coolers, names["heat_rejection"], loc, "dry-cooler template")
            if (hr.kind == "hybrid") != (unit.adiabatic_effectiveness is not None):
                want = "with" if hr.kind == "hybrid" else "without"
                raise FieldError(loc, f"kind '{hr.kind}' needs a dry cooler {want} adiabatic "
                                      f"pre-cooling; '{names['heat_rejection']}' is not")
        count = hr.count or max(1, math.ceil(design_liquid / unit.capacity.si - 1e-9))
        self.bank = HeatRejectionBank(unit, count, hr.kind)
        return unit

    def _init_air_side(self, catalog, unit, design_liquid: float) -> None:
        """Room air, CRAHs and the chilled-water circuit with its own heat-rejection bank."""
        spec = self.spec
        hr = spec.heat_rejection
        cr = spec.crah
        crah = _lookup(catalog.crahs, cr.template, ("plant", "crah", "template"), "CRAH template")
        self.crah = crah
        air_design = AIR_SHARE_DESIGN / (1.0 - AIR_SHARE_DESIGN) * design_liquid
        self.crah_count = cr.count or math.ceil(air_design / crah.capacity.si - 1e-9) + 1
        self.crah_capacity = self.crah_count * crah.capacity.si
        self.t_cold_aisle_set = cr.cold_aisle
        self.t_chw_set = cr.chilled_water_supply
        self.c_room = cr.air_volume * RHO_AIR * CP_AIR
        self.k_room = self.c_room / cr.time_constant
        self.m_chw_design = self.crah_capacity / (CP_WATER * crah.delta_t_water.si)
        chw_count = max(1, math.ceil(self.crah_capacity / unit.capacity.si - 1e-9))
        self.chw_bank = HeatRejectionBank(unit, chw_count, hr.kind)

    def _init_chillers(self, catalog, design_liquid: float) -> None:
        """Trim chillers (serving both circuits) and the economiser's settings."""
        spec = self.spec
        names = spec.templates()
        self.chiller = None
        self.chiller_count = 0
        if spec.chiller is not None and names["chiller"] is not None:
            ch = _lookup(catalog.chillers, names["chiller"], ("plant", "chiller", "template"),
                         "chiller template")
            count = spec.chiller.count
            if count is None:
                count = max(1, math.ceil((design_liquid + self.crah_capacity) / ch.capacity.si - 1e-9))
            self.chiller = ch
            self.chiller_count = count
        self.chiller_capacity = (self.chiller.capacity.si * self.chiller_count
                                 if self.chiller is not None else 0.0)
        self.cop_max = (self.chiller.cop_max.si if self.chiller is not None
                        and self.chiller.cop_max is not None else COP_MAX)
        eco = spec.economiser
        self.hysteresis, self.min_useful = eco.hysteresis, eco.min_useful
        #: Cooling mode (:data:`~twin.cooling.config.COOLING_MODES`), an operator's input.
        self.mode = eco.mode

    def _init_state(self) -> None:
        """State at rest: loops at their set-points, pumps running, no faults."""
        n = self.n_cdu
        self.t_secondary = self.cdu_setpoint.copy()
        self.valve = np.full(n, 0.5)
        self.integral = np.full(n, np.nan)  # PI integrator, relative conductance G / G_max [1]
        self.cdu_supply = self.cdu_setpoint.copy()
        self.t_facility = self.t_set
        self.t_cold_aisle = self.t_cold_aisle_set
        self.t_chw = self.t_chw_set  # chilled-water supply actually delivered last step
        self.chiller_enabled = False
        self.free_enabled = True
        self.chiller_tripped = False
        self.pumps.restore_all()
        self.cdu_down = np.zeros(n, dtype=bool)
        self.totals = PlantTotals()
        self.totals.stored_start = self.stored_heat()
        self.state: PlantState | None = None
        self._weather_block = None
        self._valve_table = None

    # -- queries ---------------------------------------------------------------------------------
    @property
    def secondary_flow_factor(self) -> np.ndarray:
        """Secondary flow available on each CDU relative to normal [1]: what its running pumps
        give on the loop's curve (:attr:`~twin.cooling.cdu_pumps.CduPumps.flow_factor`; one of
        two parallel pumps alone ≈ 0.69), 0 while the CDU is down."""
        return np.where(self.cdu_down, 0.0, self.pumps.flow_factor)

    def stored_heat(self) -> float:
        """Σ C·T of the CDU loops, the facility-water loop and the room air [J] (from 0 degC)."""
        return float(self.c_secondary @ self.t_secondary + self.c_facility * self.t_facility
                     + self.c_room * self.t_cold_aisle)

    def _conductance(self, m_s, m_p):
        """G = ε C_min of each CDU exchanger [W/K] at secondary and primary flows [kg/s]
        (arrays of n CDUs, or several sets of n stacked end to end)."""
        reps = m_s.size // self.n_cdu
        m_sd, m_pd, ua_d = (np.tile(a, reps) if reps > 1 else a
                            for a in (self.m_s_design, self.m_p_design, self.ua_design))
        on = (m_s > 0) & (m_p > 0)
        rs = (np.where(on, m_s, m_sd) / m_sd) ** -HX_FLOW_EXPONENT
        rp = (np.where(on, m_p, m_pd) / m_pd) ** -HX_FLOW_EXPONENT
        ua = np.where(on, ua_d / (0.5 * rs + 0.5 * rp), 0.0)
        return hx_outlets(1.0, 0.0, m_s, m_p, ua)[2]

    def _cdu_pump_power(self, m_s):
        """Electrical power of each CDU's running secondary pumps at secondary flow ``m_s``
        [kg/s] (:meth:`~twin.cooling.cdu_pumps.CduPumps.power`)."""
        return self.pumps.power(self.pumps.volume(m_s), ~self.cdu_down)

    # -- faults and set-points ------------------------------------------------------------------
    def _check(self, i: int) -> int:
        if not (isinstance(i, (int, np.integer)) and 0 <= i < self.n_cdu):
            raise IndexError(f"CDU index {i!r} out of range 0..{self.n_cdu - 1}")
        return int(i)

    def trip_cdu_pump(self, i: int, count: int = 1):
        """``count`` running pumps of CDU ``i`` trip: the flow falls to what the survivors give
        on the loop's curve (0 with none left) until a standby takes over
        (:meth:`pump_failover`) or they are repaired."""
        self.pumps.trip(self._check(i), count)

    def pump_failover(self, i: int):
        """A standby pump of CDU ``i`` takes over, if one is left (when is the scenario event
        queue's business: ``failover_delay`` after the trip)."""
        self.pumps.failover(self._check(i))

    def restore_cdu_pump(self, i: int):
        """Repair CDU ``i``'s pumps: all duty and standby pumps back."""
        self.pumps.restore(self._check(i))

    def fail_cdu(self, i: int):
        """CDU ``i`` fails (pumps and exchanger): no secondary flow until a standby CDU takes
        its racks over (:meth:`cdu_failover`) or it is restored."""
        self.cdu_down[self._check(i)] = True

    def cdu_failover(self, i: int):
        """A standby CDU of the same type takes the racks of CDU ``i`` over."""
        self.cdu_down[self._check(i)] = False

    def restore_cdu(self, i: int):
        """Bring CDU ``i`` back."""
        self.cdu_down[self._check(i)] = False

    def trip_chiller(self):
        """All chillers trip (the plant runs on free cooling alone until restored)."""
        self.chiller_tripped = True
        self.chiller_enabled = False
        self.free_enabled = True

    def restore_chiller(self):
        self.chiller_tripped = False

    def fail_dry_cooler_fans(self, fraction: float):
        """A ``fraction`` (0..1) of the heat-rejection fans (dry coolers or tower cells) fails."""
        fraction = float(fraction)
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"fail_dry_cooler_fans: fraction must be in 0..1, got {fraction}")
        self.bank.failed = self.chw_bank.failed = fraction

    def restore_dry_cooler_fans(self):
        self.bank.failed = self.chw_bank.failed = 0.0

    def set_setpoint(self, *, facility_water_supply: float | None = None,
                     cdu_supply: float | None = None, cdu: int | None = None,
                     cold_aisle: float | None = None, chilled_water_supply: float | None = None):
        """Change set-points [degC]: facility-water supply, CDU secondary supply (one CDU by
        index ``cdu`` or all), cold aisle, CRAH chilled water."""
        if facility_water_supply is not None:
            self.t_set = float(facility_water_supply)
        if cdu_supply is not None:
            if cdu is None:
                self.cdu_setpoint[:] = float(cdu_supply)
            else:
                self.cdu_setpoint[self._check(cdu)] = float(cdu_supply)
        if cold_aisle is not None:
            self.t_cold_aisle_set = float(cold_aisle)
        if chilled_water_supply is not None:
            self.t_chw_set = float(chilled_water_supply)

    # -- initial state ---------------------------------------------------------------------------
    def initialise(self, q_liquid, q_air: float, t: float = 0.0, secondary_flow=None,
                   iterations: int = 40) -> None:
        """Settle the plant to a steady state under constant loads (and reset the totals);
        :attr:`state` is then that steady state.

        Parameters
        ----------
        q_liquid : ndarray
            Heat from the racks into each CDU [W].
        q_air : float
            Heat into the room air [W].
        t : float
            Time whose weather applies [s].
        secondary_flow : ndarray, optional
            Secondary flow per CDU [kg/s]; default the design flow.
        iterations : int
            Hour-long steps taken (the controllers converge like a Newton iteration at that step).
        """
        q_liquid = np.broadcast_to(np.asarray(q_liquid, dtype=float), (self.n_cdu,))
        m = (self.design_secondary_flow if secondary_flow is None
             else np.asarray(secondary_flow, dtype=float)) * self.secondary_flow_factor
        dt, self.dt = self.dt, 3600.0
        try:
            for _ in range(iterations):
                with np.errstate(divide="ignore", invalid="ignore"):
                    ret = np.where(m > 0, self.cdu_supply + q_liquid / (m * CP_WATER), np.nan)
                self.step(t - 3600.0 / 2.0, ret, m, q_air, 0.0)
        finally:
            self.dt = dt
        self.totals = PlantTotals()
        self.totals.stored_start = self.totals.stored_end = self.stored_heat()
        # self.state: the settled steady state (its powers and temperatures stand for the plant
        # until its first step)

    # -- one step --------------------------------------------------------------------------------
    def step(self, t: float, cdu_return, secondary_flow, q_air: float, p_it: float) -> PlantState:
        """Advance the plant over the step [t, t + dt].

        Parameters
        ----------
        t : float
            Simulation time at the start of the step [s] (weather is taken at mid-step).
        cdu_return : ndarray
            Flow-weighted rack return temperature per CDU [degC] (NaN where no flow), computed
            with the ``cdu_supply`` this plant gave for this step.
        secondary_flow : ndarray
            Secondary flow per CDU [kg s-1].
        q_air : float
            Heat released to the room air: sled exhaust, PSU, UPS and transformer losses [W].
        p_it : float
            IT power [W] (for the totals: energy-weighted ratios).

        Returns
        -------
        PlantState
        """
        dt = self.dt
        t_db, t_wb = self._weather_at(t + 0.5 * dt)
        stored_before = self.stored_heat()
        cdu = self._cdu_inputs(cdu_return, secondary_flow)
        air = self._air_side(q_air, dt)
        table_fw, table_chw = outlet_tables(
            self.bank.table_inputs(cdu["m_f"], self.bank.air_specific_heat(t_wb, self.t_set)),
            self.chw_bank.table_inputs(air["m_chw"], self.chw_bank.air_specific_heat(t_wb, self.t_chw_set)))
        fw = self._facility_law(table_fw, t_db, t_wb, cdu["m_f"])
        loops = self._water_loops(cdu, fw, table_fw, dt)
        chw = self._chilled_water(air, table_chw, loops["q_ch_fw"], t_db, t_wb)
        if chw["deficit"] > 0:  # heat the coils could not pass on stays in the room air
            air["tca_end"] += chw["deficit"] * dt / self.c_room
            air["tca_mean"] += chw["deficit"] * dt / (2.0 * self.c_room)
        p_chiller = self._chiller_power(loops["q_ch_fw"], chw["q_ch_chw"], t_db, t_wb)
        self._next_supply(cdu, loops, fw["t_supply"], dt)
        self.t_cold_aisle = air["tca_end"]
        self.t_chw = chw["t_chw"]
        st = self._state(cdu, air, fw, loops, chw, p_chiller, t_db, t_wb, stored_before, dt)
        self._account(st, p_it, air["tca_mean"])
        self.state = st
        return st

    def _cdu_inputs(self, cdu_return, secondary_flow) -> dict:
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
                "q_racks": q_racks, "p_cdu": self._cdu_pump_power(m_s), "m_p": m_p,
                "m_f": float(m_p.sum())}

    def _air_side(self, q_air: float, dt: float) -> dict:
        """Room air and CRAHs over the step (exact), and the CRAHs' chilled-water load."""
        cr = self.crah
        p_crah = float(crah_fan_power(max(q_air, 0.0), cr.delta_t_air.si,
                                      self.crah_count * cr.air_flow.si,
                                      self.crah_count * cr.fan_power.si))
        q_room = q_air + p_crah
        t_ca_set = max(self.t_cold_aisle_set, self.t_chw + cr.coil_approach.si)
        q_start = q_room + self.k_room * (self.t_cold_aisle - t_ca_set)
        if q_start > self.crah_capacity:  # coils flat out
            tca_end, tca_mean = relax1(self.t_cold_aisle, self.c_room,
                                       q_room - self.crah_capacity, 0.0, 0.0, dt)
            q_crah = self.crah_capacity
        elif q_start < 0.0:  # colder than the set-point: coils off
            tca_end, tca_mean = relax1(self.t_cold_aisle, self.c_room, q_room, 0.0, 0.0, dt)
            q_crah = 0.0
        else:
            tca_end, tca_mean = relax1(self.t_cold_aisle, self.c_room, 0.0, self.k_room,
                                       t_ca_set, dt)
            q_crah = q_room + self.k_room * (tca_mean - t_ca_set)
        m_chw = q_crah / (CP_WATER * cr.delta_t_water.si)
        p_chw = (self.pump_specific * self.m_chw_design * (m_chw / self.m_chw_design) ** 3
                 if m_chw > 0 else 0.0)
        q_chw = q_crah + p_chw
        t_chw_ret = self.t_chw_set + q_chw / (m_chw * CP_WATER) if m_chw > 0 else self.t_chw_set
        return {"q_air": q_air, "p_crah": p_crah, "tca_end": tca_end, "tca_mean": tca_mean, "m_chw": m_chw,
                "p_chw": p_chw, "q_chw": q_chw, "t_chw_ret": t_chw_ret}

    def _water_loops(self, cdu: dict, fw: dict, table_fw, dt: float) -> dict:
        """CDU loops and the facility loop over the step (exact), the free-cooling and chiller
        shares of the rejection, and the heat-rejection fan speed."""
        m_s, m_f, t_fs = cdu["m_s"], cdu["m_f"], fw["t_supply"]
        g = self._conductance(m_s, cdu["m_p"])
        q_in = cdu["q_racks"] + cdu["p_cdu"]
        ts_end, ts_mean = relax(self.t_secondary, self.c_secondary, q_in, g, t_fs, dt)
        q_hx = g * (ts_mean - t_fs)
        p_fac = self.pump_specific * self.m_f_design * (m_f / self.m_f_design) ** 3
        q_hx_total = float(q_hx.sum())
        tf_end, tf_mean, r_mean = self._facility_relax(self.t_facility, q_hx_total + p_fac, fw, dt)
        q_free_fw, q_ch_fw = self._split(fw, m_f, tf_mean, r_mean)
        speed_fw = 0.0
        if m_f > 0:
            if self.free_enabled:
                t_sink = fw["t_sink"]
                if tf_mean > self.t_set and tf_mean > t_sink:
                    speed_fw = self.bank.speed_for(*table_fw,
                                                   (self.t_set - t_sink) / (tf_mean - t_sink))
            elif self.bank.tower and q_ch_fw > 0:
                speed_fw = self.bank.speed_max  # towers carry the condenser heat
        return {"g": g, "q_in": q_in, "ts_end": ts_end, "q_hx": q_hx, "q_hx_total": q_hx_total,
                "p_fac": p_fac, "tf_end": tf_end, "tf_mean": tf_mean, "r_mean": r_mean,
                "q_free_fw": q_free_fw, "q_ch_fw": q_ch_fw, "speed_fw": speed_fw,
                "fw_wet": fw["wet"] and speed_fw > 0}

    def _chilled_water(self, air: dict, table_chw, q_ch_fw: float, t_db: float, t_wb: float) -> dict:
        """Chilled-water circuit (steady): free cooling, then the chillers' spare capacity; what
        neither can take is a deficit that stays in the room."""
        m_chw = air["m_chw"]
        q_free_chw = q_ch_chw = deficit = 0.0
        speed_chw, chw_wet, t_chw = 0.0, False, self.t_chw_set
        if m_chw > 0:
            cw = self.chw_bank.solve(table_chw, air["t_chw_ret"], self.t_chw_set, t_db, t_wb)
            q_free_chw, q_ch_chw = (float(v) for v in economiser_split(
                m_chw, air["t_chw_ret"], cw["t_free"], self.t_chw_set))
            spare = (0.0 if self.chiller is None or self.chiller_tripped or self.mode == "free_only"
                     else max(self.chiller_capacity - q_ch_fw, 0.0))
            if q_ch_chw > spare:
                deficit = q_ch_chw - spare
                q_ch_chw = spare
                t_chw = self.t_chw_set + deficit / (m_chw * CP_WATER)
            if q_free_chw > 0:
                speed_chw, chw_wet = cw["speed"], cw["wet"] and cw["speed"] > 0
            elif self.chw_bank.tower and q_ch_chw > 0:
                speed_chw = self.chw_bank.speed_max
        return {"q_free_chw": q_free_chw, "q_ch_chw": q_ch_chw, "deficit": deficit,
                "speed_chw": speed_chw, "chw_wet": chw_wet, "t_chw": t_chw}

    def _chiller_power(self, q_ch_fw: float, q_ch_chw: float, t_db: float, t_wb: float) -> float:
        """Compressor power of the chillers trimming both circuits [W]."""
        if self.chiller is None or not q_ch_fw + q_ch_chw > 0:
            return 0.0
        cop = chiller_cop(self._condenser(t_db, t_wb), np.array([self.t_set, self.t_chw_set]),
                          self.chiller.carnot_fraction.si, self.cop_max)
        return float(chiller_power(np.array([q_ch_fw, q_ch_chw]), cop).sum())

    def _next_supply(self, cdu: dict, loops: dict, t_fs: float, dt: float) -> None:
        """CDU valves (PI) and the supply for the next step; the loops' end temperatures."""
        flowing, m_s, ts_end = cdu["flowing"], cdu["m_s"], loops["ts_end"]
        self._control(flowing, m_s, loops["g"], ts_end, loops["q_in"], t_fs, dt)
        m_next = np.where(flowing, m_s, self.design_secondary_flow)
        g_next = self._conductance(m_next, self.valve * self.m_p_design)
        with np.errstate(divide="ignore", invalid="ignore"):
            supply_next = ts_end - g_next * (ts_end - t_fs) / (m_next * CP_WATER)
        self.cdu_supply = np.where(m_next > 0, supply_next, self.cdu_supply)
        self.t_secondary = ts_end
        self.t_facility = loops["tf_end"]

    def _water(self, loops: dict, chw: dict, q_ch_total: float, p_chiller: float, t_db: float,
               t_wb: float) -> float:
        """Make-up water [kg/s]: tower evaporation and blowdown, or adiabatic pad water."""
        if self.bank.tower:
            water_cooled = self.chiller is not None and self.chiller.condenser == "water"
            q_condenser = q_ch_total + p_chiller if water_cooled else 0.0
            return self.bank.water(loops["q_free_fw"] + chw["q_free_chw"] + q_condenser, 0.0, False, t_db, t_db)
        wet_air = t_db - (self.bank.adiabatic or 0.0) * (t_db - t_wb)
        return (self.bank.water(0.0, loops["speed_fw"], loops["fw_wet"], t_db, wet_air)
                + self.chw_bank.water(0.0, chw["speed_chw"], chw["chw_wet"], t_db, wet_air))

    def _state(self, cdu, air, fw, loops, chw, p_chiller, t_db, t_wb, stored_before, dt) -> PlantState:
        """Powers, water and the energy balance of the step just taken."""
        p_fans = self.bank.fan_power(loops["speed_fw"]) + self.chw_bank.fan_power(chw["speed_chw"])
        p_cdu_total = float(cdu["p_cdu"].sum())
        p_pumps = loops["p_fac"] + air["p_chw"]
        p_crah = air["p_crah"]
        q_ch_total = loops["q_ch_fw"] + chw["q_ch_chw"]
        stored = self.stored_heat()
        economiser = (FULL_FREE if not self.chiller_enabled
                      else PARTIAL if self.free_enabled else CHILLER_ONLY)
        m_f, flowing, t_fs = cdu["m_f"], cdu["flowing"], fw["t_supply"]
        return PlantState(
            cdu_supply=self.cdu_supply.copy(),
            secondary_flow_factor=self.secondary_flow_factor,
            t_cold_aisle=air["tca_end"],
            t_supply=cdu["t_sup_used"].copy(), t_return=cdu["t_ret"], flow=cdu["m_s"], p_pump=cdu["p_cdu"],
            q=loops["q_hx"], valve=np.where(flowing, cdu["m_p"] / self.m_p_design, 0.0),
            t_outdoor=t_db, t_wet_bulb=t_wb, t_facility_supply=float(t_fs),
            t_facility_return=t_fs + loops["q_hx_total"] / (m_f * CP_WATER) if m_f > 0 else loops["tf_mean"],
            t_chilled_water=chw["t_chw"],
            p_cooling=p_cdu_total + p_pumps + p_fans + p_chiller + p_crah, p_cdu_pumps=p_cdu_total,
            p_facility_pumps=p_pumps, p_heat_rejection_fans=p_fans, p_chiller=p_chiller, p_crah=p_crah,
            water=self._water(loops, chw, q_ch_total, p_chiller, t_db, t_wb),
            economiser=economiser, chiller_on=bool(self.chiller_enabled or chw["q_ch_chw"] > 0),
            fan_speed=loops["speed_fw"], q_free=loops["q_free_fw"] + chw["q_free_chw"], q_chiller=q_ch_total,
            q_liquid=float(cdu["q_racks"].sum()), q_air=float(air["q_air"]),
            q_electric=p_cdu_total + p_pumps + p_crah + p_chiller,
            q_rejected=loops["r_mean"] + (air["q_chw"] - chw["deficit"]) + p_chiller,
            q_stored=(stored - stored_before) / dt, stored_heat=stored,
        )

    # -- pieces of a step ------------------------------------------------------------------------
    def _weather_at(self, tm: float) -> tuple[float, float]:
        """Dry- and wet-bulb at time ``tm`` [s], sampled a block of steps ahead at a time."""
        block = self._weather_block
        if block is not None and block[3] == self.dt:
            k = round((tm - block[0]) / self.dt)
            if 0 <= k < block[1].size and abs(block[0] + k * self.dt - tm) < 1e-6 * self.dt + 1e-9:
                return float(block[1][k]), float(block[2][k])
        w = self.weather
        times = tm + self.dt * np.arange(WEATHER_BLOCK)
        if w.period is None and w.time.size > 1:  # a finite series: do not ask past its end
            times = times[times <= w.end] if tm <= w.end else times[:1]
        self._weather_block = (tm, w.t_dry_bulb(times), w.t_wet_bulb(times), self.dt)
        return float(self._weather_block[1][0]), float(self._weather_block[2][0])

    def _condenser(self, t_db: float, t_wb: float) -> float:
        """Chiller heat-sink temperature [degC]: outdoor dry-bulb for air-cooled condensers,
        else the heat-rejection units' rated approach above their sink."""
        if self.chiller is None or self.chiller.condenser == "air":
            return t_db
        return (t_wb if self.bank.tower else t_db) + self.bank.entry.approach.si

    def _facility_law(self, table, t_db: float, t_wb: float, m_f: float) -> dict:
        """Modes (with hysteresis) and the water-side rejection law R(T) = k (T − t_ref) + q_const
        that holds above the set-point, evaluated at the start-of-step loop temperature."""
        t0, t_set, h = self.t_facility, self.t_set, self.hysteresis
        fr = self.bank.solve(table, max(t0, t_set), t_set, t_db, t_wb)
        t_sink, r = fr["t_sink"], fr["r_full"]
        t_free = fr["t_free"]
        available = (self.chiller is not None and not self.chiller_tripped and self.chiller_capacity > 0
                     and self.mode != "free_only")
        # chiller start/stop with hysteresis (or held on in chiller_only mode)
        if not available:
            self.chiller_enabled = False
        elif self.mode == "chiller_only":
            self.chiller_enabled = True
        elif not self.chiller_enabled and t_free > t_set:
            self.chiller_enabled = True
        elif self.chiller_enabled and t_free <= t_set - h:
            self.chiller_enabled = False
        # free cooling on/off with hysteresis (always on without a running chiller)
        useful = max(t0, t_set) - t_free
        if not self.chiller_enabled:
            self.free_enabled = True
        elif self.mode == "chiller_only":
            self.free_enabled = False
        elif self.free_enabled and useful < self.min_useful:
            self.free_enabled = False
        elif not self.free_enabled and useful >= self.min_useful + h:
            self.free_enabled = True

        c = m_f * CP_WATER
        q_cap = self.chiller_capacity if self.chiller_enabled else 0.0
        t_top = max(t0, t_set)
        hold = {"k": c, "t_ref": t_set, "q_const": 0.0, "name": "hold"}
        if c <= 0:
            law = {"k": 0.0, "t_ref": t_set, "q_const": 0.0, "name": "none"}
        elif self.free_enabled:
            k_free = c * (1.0 - r)
            demand = c * (max(t_free, t_set) - t_set)
            if t_sink >= t_top and q_cap <= 0:
                law = {"k": 0.0, "t_ref": t_set, "q_const": 0.0, "name": "none"}
            elif demand <= q_cap or t_free <= t_set:
                law = hold
            elif t_sink >= t_top:
                law = {"k": 0.0, "t_ref": t_set, "q_const": q_cap, "name": "capped"}
            else:
                law = {"k": k_free, "t_ref": t_sink, "q_const": q_cap, "name": "free"}
        else:
            law = hold if c * (t_top - t_set) <= q_cap else {
                "k": 0.0, "t_ref": t_set, "q_const": q_cap, "name": "capped"}
        if t0 <= t_set or c <= 0:
            t_supply = t0
        else:
            t_supply = t0 - (law["k"] * (t0 - law["t_ref"]) + law["q_const"]) / c
        law.update(t_supply=t_supply, t_free_full=t_free, t_sink=t_sink, r_full=r,
                   wet=fr["wet"], q_cap=q_cap, table=fr["table"])
        return law

    def _facility_relax(self, t0: float, q: float, law: dict, dt: float):
        """Integrate C_f dT/dt = q − R(T) exactly for the law chosen at the start of the step.

        Returns end temperature, mean temperature and mean rejection R̄ [degC, degC, W].
        """
        c, t_set = self.c_facility, self.t_set
        k, t_ref, q_const = law["k"], law["t_ref"], law["q_const"]
        t, left, t_int, r_int = t0, dt, 0.0, 0.0
        if t < t_set:  # below the set-point nothing is rejected until it is reached
            t1 = c * (t_set - t) / q if q > 0 else math.inf
            if t1 >= dt:
                end, mean = relax1(t, c, q, 0.0, 0.0, dt)
                return end, mean, 0.0
            t_int += 0.5 * (t + t_set) * t1
            t, left = t_set, dt - t1
        a = q - q_const
        t_cross = math.inf
        if law["name"] == "hold" and k > 0 and t_ref + a / k < t_set and t >= t_set:
            t_eq = t_ref + a / k  # falls below the set-point: find when it gets there
            t_cross = -(c / k) * math.log((t_set - t_eq) / (t - t_eq))
        seg = min(left, t_cross)
        end, mean = relax1(t, c, a, k, t_ref, seg)
        t_int += mean * seg
        r_int += (k * (mean - t_ref) + q_const) * seg
        t, left = end, left - seg
        if left > 0:  # below the set-point again: bypass, no rejection
            end, mean = relax1(t_set, c, q, 0.0, 0.0, left)
            t_int += mean * left
            t = end
        return t, t_int / dt, r_int / dt

    def _split(self, law: dict, m_f: float, t_mean: float, r_mean: float):
        """Free-cooling and chiller shares [W] of the water-side rejection R̄."""
        if r_mean <= 0:
            return 0.0, 0.0
        if not self.chiller_enabled:
            return r_mean, 0.0
        if not self.free_enabled:
            return 0.0, r_mean
        if law["name"] in ("free", "capped"):
            q_ch = min(law["q_cap"], r_mean)
            return r_mean - q_ch, q_ch
        t_sink, r = law["t_sink"], law["r_full"]
        t_free = t_sink + r * (t_mean - t_sink) if t_mean > t_sink else t_mean
        q_free, q_ch = economiser_split(m_f, t_mean, t_free, self.t_set)
        total = float(q_free + q_ch)
        if total <= 0:
            return r_mean, 0.0
        q_ch = r_mean * float(q_ch) / total
        return r_mean - q_ch, q_ch

    def _control(self, flowing, m_s, g, ts_end, q_in, t_fs, dt):
        """PI on each CDU's secondary supply, acting on the exchanger conductance (see Notes).

        The controller works in relative conductance v = G / G(valve open), in which the supply
        is linear (T_supply = T_s − v G_max (T_s − T_fs) / (ṁ_s c_p)); the exchanger's
        tabulated characteristic G(u) then gives the valve (characterisation, as an
        equal-percentage valve compensates a coil). Clamping anti-windup.
        """
        if not flowing.any():
            return
        n, k_grid = self.n_cdu, VALVE_GRID.size
        u_grid = self.valve_min + (1.0 - self.valve_min) * VALVE_GRID
        key = m_s.tobytes()
        if self._valve_table is None or self._valve_table[0] != key:  # flows change rarely
            g_tab = self._conductance(np.tile(m_s, k_grid),
                                      (u_grid[:, None] * self.m_p_design).ravel())
            self._valve_table = (key, g_tab.reshape(k_grid, n).T)  # (n, k): G at each position
        g_tab = self._valve_table[1]
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

    def _account(self, st: PlantState, p_it: float, t_cold_aisle_mean: float):
        tot, dt = self.totals, self.dt
        tot.e_it += p_it * dt
        tot.e_liquid += st.q_liquid * dt
        tot.e_air += st.q_air * dt
        tot.e_electric += st.q_electric * dt
        tot.e_rejected += st.q_rejected * dt
        tot.e_cooling += st.p_cooling * dt
        tot.e_cdu_pumps += st.p_cdu_pumps * dt
        tot.e_facility_pumps += st.p_facility_pumps * dt
        tot.e_heat_rejection_fans += st.p_heat_rejection_fans * dt
        tot.e_chiller += st.p_chiller * dt
        tot.e_crah += st.p_crah * dt
        tot.water += st.water * dt
        if st.chiller_on:
            tot.chiller_seconds += dt
        tot.economiser_seconds[st.economiser] += dt
        lo, hi = ASHRAE_RECOMMENDED
        if not lo <= t_cold_aisle_mean <= hi:
            tot.seconds_outside_recommended += dt
        lo, hi = ASHRAE_ALLOWABLE_A1
        if not lo <= t_cold_aisle_mean <= hi:
            tot.seconds_outside_allowable += dt
        tot.stored_end = st.stored_heat
        tot.seconds += dt
        tot.steps += 1
