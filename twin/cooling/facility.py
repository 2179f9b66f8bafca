"""The facility cooling plant: its equipment as separately scheduled components, their energy
ledger, and :class:`Plant`, which builds them and steps them on their own (for studies of the
plant alone and for settling it to a steady state).

Heat path::

    racks ─► CDU secondary loops (mixed volume each) ─ε-NTU HX, PI valve─► facility-water loop
    (mixed volume) ─► dry coolers / towers (free cooling, fans modulating) ─► trim chiller (series)
    room air ─► CRAH coils ─► chilled-water circuit ─► its own free-cooling units + the chillers

Equipment (:func:`twin.cooling.equipment.plant_equipment`, found in their modules, in the step
order each declares with its ``plant_stage``): :mod:`twin.site.station` (weather),
:mod:`twin.cooling.cdu_bank` (CDUs: demand, then loops and valves),
:mod:`twin.cooling.facility_water` (supply, then return), :mod:`twin.cooling.chilled_water`
(room air, CRAHs, chilled water), :mod:`twin.cooling.chiller`, :mod:`twin.cooling.rejection`
(dry coolers / towers), any further equipment the scenario's ``plant.equipment`` names, then
:class:`PlantLedger` (cooling power, modes, the energy balance).
They step every ``plant.step`` on block means of what they read from the racks and the power
chain, and read each other's outputs of the same plant step as they are: they are coupled
through declared variables, each with one writer, and a joint solve has one owner (the water
leaving the heat-rejection units and the loop it cools: that loop's component; see
:mod:`twin.cooling.rejection`). Each volume is
integrated exactly over the step for inputs held over the step (a linear ODE
C dT/dt = q − k (T − T_ref) has a closed form), so any step from 1 s to 1 h is stable and the
heat bookkeeping closes to rounding error; the volumes are coupled explicitly (the CDUs see the
facility supply at the start of the step). The pure physics (ε-NTU, affinity laws, chiller COP,
economiser split, tower water) lives in :mod:`twin.cooling.plant` and
:mod:`twin.cooling.heat_rejection`.

*Energy.* Heat in (racks + room air + pump, fan and compressor power dissipated inside)
= heat rejected outdoors + change of Σ C·T; every piece is integrated exactly, so this
closes to rounding error (see :attr:`PlantTotals.energy_residual`). Time with the step-mean
cold-aisle temperature outside the ASHRAE recommended (18–27 °C) and allowable A1 (15–32 °C)
ranges is counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from twin.catalog.model import Catalog
from twin.cooling.cdu import P_COOLING
from twin.cooling.cdu_bank import (  # noqa: F401  (HX_FLOW_EXPONENT, SECONDARY_LOOP_TIME: public here)
    HX_FLOW_EXPONENT, SECONDARY_LOOP_TIME, CduBank, CduDemand, CduLoops, lookup,
)
from twin.cooling.chilled_water import ChilledWater
from twin.cooling.chiller import Chiller, chiller_entry, condenser_heat_factor
from twin.cooling.config import PlantSpec
from twin.cooling.equipment import check_config, plant_equipment
from twin.cooling.facility_water import FacilityWater
from twin.cooling.heat_rejection import HeatRejectionBank
from twin.cooling.rejection import HeatRejection, rejection_unit
from twin.cooling.sizing import DesignHeat, units_for_load
from twin.sim.component import Component, State, Var, step_mean
from twin.site.station import WeatherStation
from twin.site.weather import Weather, build_weather
from twin.units import CP_WATER

#: ASHRAE TC9.9 (2021) air inlet ranges [degC]: recommended, and allowable class A1.
ASHRAE_RECOMMENDED = (18.0, 27.0)
ASHRAE_ALLOWABLE_A1 = (15.0, 32.0)
#: Economiser states reported in ``PlantState.economiser``.
CHILLER_ONLY, PARTIAL, FULL_FREE = 0, 1, 2

LEDGER_VARS = (
    P_COOLING,
    Var("facility", "p_cdu_pumps", "W", "CDU secondary pump power"),
    Var("facility", "p_facility_pumps", "W", "facility and chilled water pump power"),
    Var("facility", "economiser", "1", "facility water: 0 chiller only, 1 partial, 2 full free cooling"),
    Var("facility", "chiller_on", "1", "fraction of the interval a chiller ran"),
)


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
    p_other: float = 0.0  # cooling power of further equipment (its ``cooling_power``), rejected outdoors


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
    #: heat in the CDUs' supply pipes [J]: outside the plant's own balance, whose heat in is
    #: measured at the CDUs (the racks' return against the CDUs' supply); in the facility's
    #: (:meth:`twin.sim.driver.Simulation.facility_balance`), whose heat in is the racks'
    pipes_start: float = 0.0
    pipes_end: float = 0.0
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
# The ledger: cooling power, modes and the energy balance of each plant step
# --------------------------------------------------------------------------------------------
class PlantLedger(Component):
    """The plant's cooling power, its modes and the energy balance of each plant step (the
    :class:`PlantState`), and the running :class:`PlantTotals`."""

    inputs = ("facility.p_it", "cdu.plant_step", "cdu.t_supply_next", "cdu.flow_factor", "cdu.q", "cdu.valve",
              "facility.t_cold_aisle_next", "facility.t_outdoor", "facility.t_wet_bulb",
              "facility.t_facility_supply", "facility.t_facility_return", "facility.facility_water_law",
              "facility.facility_water_step", "facility.chilled_water_step", "facility.heat_rejection_step",
              "facility.p_chiller", "facility.water", "facility.stored_cdus", "facility.stored_facility_water",
              "facility.stored_room", "facility.stored_pipes")
    outputs = LEDGER_VARS
    phase = "integration"
    plant_stage = 100

    def __init__(self, every: int = 1):
        self.every = every
        self.extra: tuple[str, ...] = ()  # further equipment's cooling power (``cooling_power``)
        self.totals = PlantTotals()
        self.plant_state: PlantState | None = None
        self.stored = 0.0

    @classmethod
    def from_plant(cls, plant):
        """The plant's ledger, adding the ``cooling_power`` of the equipment built before it."""
        ledger = plant.ledger
        ledger.extra = tuple(k for c in plant.components for k in getattr(c, "cooling_power", ()))
        ledger.inputs = cls.inputs + ledger.extra
        return ledger

    @staticmethod
    def stored_heat(state) -> float:
        """Σ C·T of the CDU loops, the facility-water loop and the room air [J] (from 0 degC)."""
        return float(state["facility.stored_cdus"] + state["facility.stored_facility_water"]
                     + state["facility.stored_room"])

    def initialise(self, state) -> None:
        if "facility.stored_room" in state:  # the equipment before it has published its heat
            self.stored = self.stored_heat(state)
        self.totals = PlantTotals()
        self.totals.stored_start = self.stored
        if "facility.stored_pipes" in state:
            self.totals.pipes_start = self.totals.pipes_end = float(state["facility.stored_pipes"])

    def step(self, t: float, dt: float, state) -> None:
        st = self.plant_step(state, dt)
        self.stored = st.stored_heat
        state["facility.p_cooling"] = np.array([float(st.p_cooling)])
        state["facility.p_cdu_pumps"] = np.array([float(st.p_cdu_pumps)])
        state["facility.p_facility_pumps"] = np.array([float(st.p_facility_pumps)])
        state["facility.economiser"] = np.array([float(st.economiser)])
        state["facility.chiller_on"] = np.array([float(st.chiller_on)])
        self._account(st, float(step_mean(state["facility.p_it"])[0]),
                      state["facility.chilled_water_step"]["tca_mean"], dt)
        self.totals.pipes_end = float(state["facility.stored_pipes"])
        self.plant_state = st

    def plant_step(self, state, dt: float) -> PlantState:
        """Powers, modes and the energy balance of the plant step just taken."""
        cdu, law = state["cdu.plant_step"], state["facility.facility_water_law"]
        fw, chw = state["facility.facility_water_step"], state["facility.chilled_water_step"]
        hr = state["facility.heat_rejection_step"]
        p_chiller = float(state["facility.p_chiller"][0])
        p_fans = hr["p_fans"]
        p_cdu_total = float(cdu["p_cdu"].sum())
        p_pumps = fw["p_fac"] + chw["p_chw"]
        p_crah = chw["p_crah"]
        q_ch_total = fw["q_ch_fw"] + chw["q_ch_chw"]
        stored = self.stored_heat(state)
        p_other = sum(float(state[k][0]) for k in self.extra)
        economiser = (FULL_FREE if not law["chiller_enabled"]
                      else PARTIAL if law["free_enabled"] else CHILLER_ONLY)
        return PlantState(
            cdu_supply=state["cdu.t_supply_next"].copy(), secondary_flow_factor=state["cdu.flow_factor"],
            t_cold_aisle=chw["tca_end"],
            t_supply=cdu["t_sup_used"].copy(), t_return=cdu["t_ret"], flow=cdu["m_s"], p_pump=cdu["p_cdu"],
            q=state["cdu.q"], valve=state["cdu.valve"],
            t_outdoor=float(state["facility.t_outdoor"][0]), t_wet_bulb=float(state["facility.t_wet_bulb"][0]),
            t_facility_supply=float(state["facility.t_facility_supply"][0]),
            t_facility_return=float(state["facility.t_facility_return"][0]),
            t_chilled_water=chw["t_chw"],
            p_cooling=p_cdu_total + p_pumps + p_fans + p_chiller + p_crah + p_other, p_cdu_pumps=p_cdu_total,
            p_facility_pumps=p_pumps, p_heat_rejection_fans=p_fans, p_chiller=p_chiller, p_crah=p_crah,
            water=float(state["facility.water"][0]),
            economiser=economiser, chiller_on=bool(law["chiller_enabled"] or chw["q_ch_chw"] > 0),
            fan_speed=hr["speed_fw"], q_free=fw["q_free_fw"] + chw["q_free_chw"], q_chiller=q_ch_total,
            q_liquid=float(cdu["q_racks"].sum()), q_air=float(chw["q_air"]),
            q_electric=p_cdu_total + p_pumps + p_crah + p_chiller + p_other,
            q_rejected=fw["r_mean"] + (chw["q_chw"] - chw["deficit"]) + p_chiller + p_other,
            q_stored=(stored - self.stored) / dt, stored_heat=stored, p_other=p_other,
        )

    def _account(self, st: PlantState, p_it: float, t_cold_aisle_mean: float, dt: float):
        tot = self.totals
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


# --------------------------------------------------------------------------------------------
# The plant: its equipment, built from the scenario, stepping together
# --------------------------------------------------------------------------------------------


class Plant:
    """Facility cooling plant: CDUs, facility water, heat rejection, chillers, CRAHs.

    Builds the equipment components (:attr:`components`, in step order: each registered class
    of :func:`~twin.cooling.equipment.plant_equipment` by its ``from_plant``) from the
    scenario's ``plant:`` and the catalogue. In a simulation the driver schedules them with the rest of the
    twin; :meth:`step` and :meth:`initialise` step them on their own, on a state of the plant's
    own, with the racks' heat and flows given.

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
        Plant step [s].
    start_day_of_year : float, optional
        Typical-year day at time 0 for EPW weather without ``start_day`` (the scenario start).
    base_dir : Path, optional
        Folder that relative weather-file paths are relative to.
    weather : Weather, optional
        Use this weather instead of building one from ``spec.weather``.
    every : int
        Thermal steps per plant step (for the driver's schedule).
    system : System, optional
        CDU names for the CDU events and design flows for the supply pipes (default: ``cdu-1`` …).
    supply_volume : ndarray, optional
        Coolant in each CDU's supply pipe [m³] (default none;
        :class:`~twin.cooling.cdu_bank.CduBank`).
    coolant : dict, optional
        The secondary loops' coolant against water: ``heat`` (heat-capacity rate) and
        ``resistance`` factors at one volume flow (default water: both 1).
    design : DesignHeat, optional
        The IT design load the equipment is counted for (:mod:`twin.cooling.sizing`; default,
        for a plant without racks: its CDUs' rated heat, :meth:`DesignHeat.of_cdus`).

    Raises
    ------
    FieldError
        Unknown or mismatched template, at its ``plant.…`` field path.
    """

    def __init__(self, spec: PlantSpec, catalog: Catalog, cdu_templates, cdu_setpoints,
                 design_secondary_flow, dt: float, *, start_day_of_year: float | None = None,
                 base_dir: Path | None = None, weather: Weather | None = None, every: int = 1,
                 system=None, supply_volume=None, coolant: dict | None = None,
                 design: DesignHeat | None = None):
        self.spec = spec
        self.catalog = catalog
        self.every = every
        self.dt = float(dt)
        if not self.dt > 0:
            raise ValueError(f"Plant: dt must be positive, got {dt}")
        if len(cdu_templates) == 0:
            raise ValueError("Plant: needs at least one CDU")
        self.weather = weather if weather is not None else build_weather(
            spec.weather, base_dir, start_day_of_year)
        #: the secondary loops' coolant against water: heat-capacity rate and resistance at one
        #: volume flow (:func:`twin.cooling.coolant.loop_coolant_factors`; water: both 1)
        self.coolant = coolant or {"heat": 1.0, "resistance": 1.0}
        self.cdus = CduBank(catalog, cdu_templates, cdu_setpoints, design_secondary_flow, spec.cdu_control,
                            supply_volume, self.coolant)
        self.n_cdu = self.cdus.n_cdu
        self._size(design if design is not None else DesignHeat.of_cdus(float(self.cdus.cdu_capacity.sum())),
                   every)
        self.ledger = PlantLedger(every)
        self.heat_rejection = HeatRejection(self.bank, self.chw_bank, self.chillers.water_cooled, every)
        self.station = WeatherStation(self.weather, every)
        if system is None:
            from types import SimpleNamespace

            system = SimpleNamespace(cdu_name=np.array([f"cdu-{i + 1}" for i in range(self.n_cdu)], dtype=object),
                                     cdu_setpoint=self.cdus.cdu_setpoint.copy())
        self.system = system
        self.cdu_loops = CduLoops(self.cdus, system, every)
        check_config(spec)
        #: the equipment in step order (each registered class, built by its ``from_plant``)
        self.components: list = []
        for cls in plant_equipment():
            c = cls.from_plant(self)
            if c is not None:
                self.components.append(c)
        # -- power chain (used by the power-delivery model; checked here so a typo fails early)
        if spec.ups.template is not None:
            lookup(catalog.ups, spec.ups.template, ("plant", "ups", "template"), "UPS template")
        if spec.transformer.template is not None:
            lookup(catalog.transformers, spec.transformer.template,
                   ("plant", "transformer", "template"), "transformer template")
        if spec.electrical_room.template is not None:
            lookup(catalog.room_coolers, spec.electrical_room.template,
                   ("plant", "electrical_room", "template"), "electrical-room cooler template")
        self.state = State()
        for c in self.components:
            self.state.declare(c)
        for c in reversed(self.components):
            c.initialise(self.state)
        self.ledger.initialise(self.state)

    def _size(self, design: DesignHeat, every: int) -> None:
        """Count the equipment for the IT design load (:mod:`twin.cooling.sizing`): the heat
        each piece carries there, N + R units of it (a scenario ``count:`` wins)."""
        spec, catalog, cdus = self.spec, self.catalog, self.cdus
        self.design = design
        # the CDUs pass on the liquid share and their pumps' heat at the racks' design flow
        p_cdu = float(cdus.pumps.power(cdus.pumps.volume(cdus.design_secondary_flow)).sum())
        q_cdus = design.liquid + p_cdu
        self.facility_water = fw = FacilityWater(spec, catalog, q_cdus, float(cdus.m_p_design.sum()))
        # ... drawing their rated primary flow at their rated heat (the valves' share of it)
        capacity = float(cdus.cdu_capacity.sum())
        q_fw = q_cdus + fw.pump_power(fw.m_f_design * min(q_cdus / capacity, 1.0))
        unit = rejection_unit(spec, catalog)
        self.room = ChilledWater(spec, catalog, unit, design.air, every)
        self.chw_bank = self.room.chw_bank
        q_both = q_fw + self.room.design_heat
        # towers carrying water-cooled condensers reject the compressors' heat of both circuits too
        q_towers = max(q_fw, condenser_heat_factor(chiller_entry(spec, catalog, q_both)) * q_both)
        hr = spec.heat_rejection
        fw.bank = self.bank = HeatRejectionBank(
            unit, hr.count or units_for_load(q_towers, unit.capacity.si, hr.redundant), hr.kind)
        #: Heat each circuit carries at the IT design load [W]: facility water, chilled water,
        #: and what the facility water's heat-rejection units were counted for.
        self.design_heat = {"facility_water": q_fw, "chilled_water": self.room.design_heat,
                            "heat_rejection": q_towers}
        self.chillers = Chiller(spec, catalog, q_both, self.bank, every)
        self.room.chillers = self.chillers

    @property
    def outputs(self) -> list[str]:
        """Keys of every variable the plant's components write."""
        return list(self.state.owner)

    # -- equipment state (views) -----------------------------------------------------------------
    @property
    def totals(self) -> PlantTotals:
        return self.ledger.totals

    @property
    def plant_state(self) -> PlantState | None:
        """The last plant step (or the settled steady state)."""
        return self.ledger.plant_state

    @property
    def secondary_flow_factor(self) -> np.ndarray:
        return self.cdu_loops.flow_factor

    @property
    def pumps(self):
        return self.cdus.pumps

    def __getattr__(self, name):
        """State and settings of the equipment by their names (``cdu_supply``, ``t_facility``,
        ``t_cold_aisle``, ``crah_count``, ``chiller_count``, …)."""
        for part in ("cdus", "facility_water", "room", "chillers"):
            obj = self.__dict__.get(part)
            if obj is not None and name in vars(obj):
                return vars(obj)[name]
        raise AttributeError(f"Plant has no attribute '{name}'")

    def stored_heat(self) -> float:
        """Σ C·T of the CDU loops, the facility-water loop and the room air [J] (from 0 degC)."""
        return float(self.cdus.stored_heat() + self.facility_water.stored_heat() + self.room.stored_heat())

    # -- faults and set-points (the equipment's own event handling, for the plant on its own) -------
    def trip_cdu_pump(self, i: int, count: int = 1):
        """``count`` running pumps of CDU ``i`` trip: the flow falls to what the survivors give
        on the loop's curve (0 with none left) until a standby takes over
        (:meth:`pump_failover`) or they are repaired."""
        self.cdu_loops.act("cdu_pump_trip", "start", [self.cdus.check(i)], count=count)

    def pump_failover(self, i: int):
        """A standby pump of CDU ``i`` takes over, if one is left."""
        self.cdu_loops.act("cdu_pump_trip", "failover", [self.cdus.check(i)])

    def restore_cdu_pump(self, i: int):
        """Repair CDU ``i``'s pumps: all duty and standby pumps back."""
        self.cdu_loops.act("cdu_pump_trip", "clear", [self.cdus.check(i)])

    def fail_cdu(self, i: int):
        """CDU ``i`` fails (pumps and exchanger): no secondary flow until restored or failed over."""
        self.cdu_loops.act("cdu_failure", "start", [self.cdus.check(i)])

    def cdu_failover(self, i: int):
        """A standby CDU of the same type takes the racks of CDU ``i`` over."""
        self.cdu_loops.act("cdu_failure", "failover", [self.cdus.check(i)])

    def restore_cdu(self, i: int):
        """Bring CDU ``i`` back."""
        self.cdu_loops.act("cdu_failure", "clear", [self.cdus.check(i)])

    def trip_chiller(self):
        """All chillers trip (the plant runs on free cooling alone until restored)."""
        self.chillers.set_tripped(True)

    def restore_chiller(self):
        self.chillers.set_tripped(False)

    def fail_dry_cooler_fans(self, fraction: float):
        """A ``fraction`` (0..1) of the heat-rejection fans (dry coolers or tower cells) fails."""
        self.heat_rejection.set_failed(fraction)

    def restore_dry_cooler_fans(self):
        self.heat_rejection.set_failed(0.0)

    def set_setpoint(self, *, facility_water_supply: float | None = None,
                     cdu_supply: float | None = None, cdu: int | None = None,
                     cold_aisle: float | None = None, chilled_water_supply: float | None = None):
        """Change set-points [degC]: facility-water supply, CDU secondary supply (one CDU by
        index ``cdu`` or all), cold aisle, CRAH chilled water."""
        if facility_water_supply is not None:
            self.facility_water.t_set = float(facility_water_supply)
        if cdu_supply is not None:
            if cdu is None:
                self.cdus.cdu_setpoint[:] = float(cdu_supply)
            else:
                self.cdus.cdu_setpoint[self.cdus.check(cdu)] = float(cdu_supply)
        if cold_aisle is not None:
            self.room.t_cold_aisle_set = float(cold_aisle)
        if chilled_water_supply is not None:
            self.room.t_chw_set = float(chilled_water_supply)

    # -- stepping on its own ---------------------------------------------------------------------
    def initialise(self, q_liquid, q_air: float, t: float = 0.0, secondary_flow=None,
                   iterations: int = 40) -> None:
        """Settle the plant to a steady state under constant loads (and reset the totals);
        :attr:`plant_state` is then that steady state.

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
        m = (self.cdus.design_secondary_flow if secondary_flow is None
             else np.asarray(secondary_flow, dtype=float)) * self.secondary_flow_factor
        self.cdus.pipes_on = False  # settling: the racks see the CDUs' supply directly
        self.cdus.empty_pipes()
        try:
            for _ in range(iterations):
                self._step(t - 3600.0 / 2.0, 3600.0, q_liquid, m, q_air, 0.0)
        finally:
            self.cdus.pipes_on = True
        self.cdus.empty_pipes()  # the pipes fill with the settled supply
        self.cdu_loops.boundaries(self.state)
        self.ledger.totals = PlantTotals()
        self.totals.stored_start = self.totals.stored_end = self.stored_heat()
        self.totals.pipes_start = self.totals.pipes_end = self.cdus.pipe_heat()
        # plant_state: the settled steady state (its powers and temperatures stand for the
        # plant until its first step)

    def settle(self, q_liquid, q_air: float, flow) -> None:
        """Steady state under constant loads (:meth:`initialise`) in a simulation: the settled
        outputs are copied to the simulation's state (the one the components were initialised
        with last), where they stand until the plant's first step."""
        self.initialise(q_liquid, q_air, t=0.0, secondary_flow=flow)
        target = self.cdu_loops.state
        if target is not None and target is not self.state:
            for key in self.outputs:
                target[key] = self.state[key]

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
        m = np.asarray(secondary_flow, dtype=float).reshape(self.n_cdu)
        ret = np.asarray(cdu_return, dtype=float).reshape(self.n_cdu)
        with np.errstate(invalid="ignore"):
            q = np.where(m > 0, m * CP_WATER * (ret - self.cdus.cdu_supply), 0.0)
        return self._step(t, self.dt, q, m, q_air, p_it)

    def _step(self, t: float, dt: float, q_liquid, flow, q_air: float, p_it: float) -> PlantState:
        st = self.state
        st["cdu.q_in"], st["cdu.flow"] = q_liquid, flow
        st["facility.q_air"], st["facility.p_it"] = np.array([float(q_air)]), np.array([float(p_it)])
        for c in self.components:
            c.step(t, dt, st)
        return self.ledger.plant_state
