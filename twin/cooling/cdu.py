"""CDUs as components: one interface, two implementations.

Every CDU component reads the heat and flow its racks send it (``cdu.q_in``, ``cdu.flow``,
from :class:`twin.thermal.racks.RackThermal`) and gives the racks their boundaries for the next
step: secondary supply temperature ``cdu.t_supply_next``, secondary flow factor
``cdu.flow_factor`` and the cold-aisle temperature ``facility.t_cold_aisle_next``; it defines
pump power, heat removed and the facility's cooling power.

- :class:`SimpleCdu` (no scenario ``plant:``): supply = max(set-point, facility water + approach)
  with the facility water at the site's constant temperature; the secondary pumps of
  :class:`twin.cooling.cdu_pumps.CduPumps` (on their curve where the catalogue gives one).
- :class:`PlantCdu` (a scenario ``plant:``): the CDU bank of the facility cooling plant
  (:class:`twin.cooling.facility.Plant`: ε-NTU exchangers with PI valves, facility water loop,
  heat rejection, chillers and CRAHs), stepping every ``plant.step`` on block means of its inputs.

Both own the CDU events (pump trip, CDU failure with failover, set-point change); the plant
also owns the plant-wide events.
"""

from __future__ import annotations

import numpy as np

from twin.cooling.cdu_pumps import CduPumps
from twin.cooling.config import COOLING_MODES
from twin.cooling.transport import PlugFlowDelay
from twin.sim.component import Component, Control, Var, step_mean
from twin.sim.events import cdu_targets
from twin.units import CP_WATER, RHO_WATER

P_PUMP = Var("cdu", "p_pump", "W", "secondary pump power")
Q = Var("cdu", "q", "W", "heat removed from the secondary loop")
VALVE = Var("cdu", "valve", "1", "primary (facility water) valve position")
T_SUPPLY_NEXT = Var("cdu", "t_supply_next", "degC", "secondary supply temperature from the next step on",
                    record=False)
FLOW_FACTOR = Var("cdu", "flow_factor", "1", "secondary flow relative to design (pumps and failures)",
                  record=False)
P_COOLING = Var("facility", "p_cooling", "W",
                "cooling power (CDU pumps; with a plant also facility and chilled-water pumps, "
                "heat-rejection fans, chillers and CRAH fans)", counter="twin_cooling_energy_joules")
T_FACILITY_SUPPLY = Var("facility", "t_facility_supply", "degC", "facility water supply temperature")
T_COLD_AISLE_NEXT = Var("facility", "t_cold_aisle_next", "degC", "cold-aisle temperature from the next step on",
                        record=False)
#: Facility variables of the plant, read from its :class:`~twin.cooling.facility.PlantState` by name.
PLANT_FACILITY_VARS = (
    Var("facility", "t_outdoor", "degC", "outdoor dry-bulb temperature"),
    Var("facility", "t_wet_bulb", "degC", "outdoor wet-bulb temperature"),
    Var("facility", "t_facility_return", "degC", "facility water return temperature"),
    Var("facility", "p_cdu_pumps", "W", "CDU secondary pump power"),
    Var("facility", "p_facility_pumps", "W", "facility and chilled water pump power"),
    Var("facility", "p_heat_rejection_fans", "W", "dry cooler / cooling tower fan power"),
    Var("facility", "p_chiller", "W", "chiller compressor power"),
    Var("facility", "p_crah", "W", "CRAH fan power"),
    Var("facility", "water", "kg s-1", "make-up water (evaporation and blowdown)"),
    Var("facility", "economiser", "1", "facility water: 0 chiller only, 1 partial, 2 full free cooling"),
    Var("facility", "chiller_on", "1", "fraction of the interval a chiller ran"),
)
CDU_EVENTS = ("cdu_pump_trip", "cdu_failure", "setpoint_change")

#: Facility-water supply temperatures of the ASHRAE TC9.9 liquid-cooling classes W17 … W45
#: [degC] (ASHRAE TC9.9, "Liquid Cooling Guidelines for Datacom Equipment Centers", 2nd ed.,
#: classes W17, W27, W32, W40, W45): the range a facility-water set-point is offered in.
FACILITY_WATER_RANGE = (17.0, 45.0)
#: CDU secondary supply set-point range [degC] (estimate: the W17–W45 facility-water span plus
#: up to 5 K of heat-exchanger approach, the top of the catalogue's 2–12 K approaches for
#: liquid-to-liquid units).
CDU_SUPPLY_RANGE = (17.0, 50.0)
#: Cold-aisle set-point range [degC]: the ASHRAE TC9.9 (2021) allowable range of class A1.
COLD_AISLE_RANGE = (15.0, 32.0)
T_SUPPLY_SET = Control("cdu", "t_supply_set", "degC", "secondary supply temperature set-point",
                       *CDU_SUPPLY_RANGE)
T_FACILITY_SUPPLY_SET = Control("facility", "t_facility_supply_set", "degC",
                                "facility-water supply temperature set-point", *FACILITY_WATER_RANGE)
T_COLD_AISLE_SET = Control("facility", "t_cold_aisle_set", "degC", "cold-aisle (CRAH) set-point",
                           *COLD_AISLE_RANGE)


class SimpleCdu(Component):
    """CDUs fed by facility water at a constant temperature (no plant model).

    Parameters
    ----------
    system : System
        CDU names, set-points, approaches, design flows and pump powers.
    t_facility : float
        Facility water supply temperature [degC].
    t_cold_aisle : float
        Cold-aisle air temperature [degC].
    pumps : CduPumps
        The CDUs' secondary pumps (trips, failover, power).
    supply_volume : ndarray, optional
        Coolant between each CDU's outlet and its racks' inlets [m³] (0: the racks see the
        CDU's supply at once).

    Notes
    -----
    T_supply = max(T_set, T_facility + approach); the secondary pumps on their curve under
    differential-pressure control (:class:`~twin.cooling.cdu_pumps.CduPumps`; without a pump
    curve in the catalogue P_pump = P_d (ṁ/ṁ_d)³); the heat removed is the heat the racks send.
    A pump trip leaves what the running pumps give on the loop's curve until a standby takes
    over or it clears; a CDU failure stops the secondary flow until it clears or fails over.
    A change of the CDU's supply (a set-point change) reaches the racks through the supply
    pipe in plug flow (:class:`~twin.cooling.transport.PlugFlowDelay`), τ = V_supply / Q after
    it left the CDU, Q the secondary flow at the time.
    """

    inputs = ("cdu.flow", "cdu.q_in")
    outputs = (P_PUMP, Q, P_COOLING, T_FACILITY_SUPPLY, T_SUPPLY_NEXT, FLOW_FACTOR, T_COLD_AISLE_NEXT)
    events = CDU_EVENTS
    controls = (T_SUPPLY_SET,)
    phase = "integration"

    def __init__(self, system, t_facility: float, t_cold_aisle: float, pumps: CduPumps,
                 supply_volume=None):
        self.sy = system
        n = system.cdu_name.size
        self.supply_volume = np.zeros(n) if supply_volume is None else np.asarray(supply_volume, dtype=float)
        self.line = None  # the supply pipes (built on the first step, sized to its length)
        self.t_racks = None  # supply arriving at the racks [degC]
        self.t_facility = t_facility
        self.t_cold_aisle = t_cold_aisle
        self.setpoint = system.cdu_setpoint.copy()
        self.pumps = pumps
        self.down = np.zeros(system.cdu_name.size, dtype=bool)
        self._saved_setpoint: dict[int, np.ndarray] = {}
        self.state = None

    @property
    def flow_factor(self) -> np.ndarray:
        """Secondary flow each CDU gives relative to design [1]: its running pumps on the
        loop's curve, 0 while the CDU is down."""
        return np.where(self.down, 0.0, self.pumps.flow_factor)

    @property
    def t_outlet(self) -> np.ndarray:
        """Supply temperature leaving each CDU [degC]: max(set-point, facility water + approach)."""
        return np.maximum(self.setpoint, self.t_facility + self.sy.cdu_approach)

    def _boundaries(self) -> None:
        st = self.state
        out = self.t_outlet
        if self.t_racks is None:
            self.t_racks = out.copy()
        st["cdu.t_supply_next"] = np.where(self.supply_volume > 0, self.t_racks, out)
        st["cdu.flow_factor"] = self.flow_factor

    def initialise(self, state) -> None:
        self.state = state
        state["facility.t_cold_aisle_next"] = np.array([self.t_cold_aisle])
        state["facility.t_facility_supply"] = np.array([self.t_facility])
        self._boundaries()

    def step(self, t: float, dt: float, state) -> None:
        p_pump = self.pumps.power(self.pumps.volume(state["cdu.flow"]), ~self.down)
        state["cdu.p_pump"] = p_pump
        state["cdu.q"] = state["cdu.q_in"]
        state["facility.p_cooling"] = np.array([float(p_pump.sum())])
        if (self.supply_volume > 0).any():
            self._transport(self.pumps.volume(state["cdu.flow"]), dt)

    def _transport(self, flow, dt: float) -> None:
        """Push the step's supply through the supply pipes; the racks get what arrives."""
        if self.line is None:
            # enough slugs for the transit at a tenth of the design flow (beyond, they merge)
            with np.errstate(divide="ignore"):
                tau = self.supply_volume / (0.1 * self.sy.cdu_design_flow / RHO_WATER)
            steps = int(np.ceil(np.nanmax(np.where(np.isfinite(tau), tau, 0.0)) / dt)) + 2
            self.line = PlugFlowDelay(self.supply_volume, self.t_racks, capacity=min(max(steps, 8), 4096))
        self.t_racks = self.line.step(self.t_outlet, flow, dt)
        self._boundaries()

    def apply(self, action) -> bool:
        ev, start = action.event, action.what == "start"
        idx = cdu_targets(ev.target, self.sy.cdu_name)
        if ev.kind == "setpoint_change":
            if start:
                self._saved_setpoint[action.index] = self.setpoint[idx].copy()
                self.setpoint[idx] = ev.value
            else:
                self.setpoint[idx] = self._saved_setpoint.pop(action.index)
        elif ev.kind == "cdu_pump_trip":
            for i in idx:
                {"start": lambda j: self.pumps.trip(j, ev.count), "failover": self.pumps.failover,
                 "clear": self.pumps.restore}[action.what](int(i))
        else:  # CDU failure: no flow until cleared or failed over
            self.down[idx] = start
        self._boundaries()
        return True

    def control(self, key: str) -> np.ndarray:
        if key == T_SUPPLY_SET.key:
            return self.setpoint.copy()
        return super().control(key)

    def set_control(self, key: str, values) -> None:
        if key != T_SUPPLY_SET.key:
            super().set_control(key, values)
        self.setpoint[:] = values
        if self.state is not None:
            self._boundaries()


class PlantCdu(Component):
    """The CDU bank of the facility cooling plant, with the rest of the plant behind it.

    Parameters
    ----------
    plant : Plant
        The plant (:class:`twin.cooling.facility.Plant`), built for a step of ``every`` × h.
    every : int
        Thermal steps per plant step (``plant.step`` / ``time.step``).

    Notes
    -----
    Multi-rate: the plant (time constants of minutes) steps at the start of each block of
    ``every`` thermal steps, over the block, on the means of the heat and flow from the racks,
    the room-air heat and the IT power over the latest ``every`` steps; the return temperature
    it sees is the supply the racks had + q̄/(ṁ̄ c_p). Its outputs hold through the block.

    Where the catalogue gives the CDU a ``supply_volume`` (``supply_volume`` here), the supply
    the plant computes for the next block reaches the racks through the supply pipe in plug
    flow (:class:`~twin.cooling.transport.PlugFlowDelay`): the racks get the mean temperature of
    the water that leaves the pipe over the block at the latest flow, so a change of the CDU's
    supply arrives τ = V_supply / Q later (resolved to the block; a pipe whose transit is far
    shorter than the block passes the new supply almost at once). The water the pipe returns
    meanwhile (the old supply) comes back through the racks to the CDU, so the plant's
    exchanger sees the heat the pipe gives up or takes in: its own balance closes on that heat.
    """

    inputs = ("cdu.q_in", "cdu.flow", "facility.q_air", "facility.p_it")
    outputs = (P_PUMP, Q, VALVE, P_COOLING, T_FACILITY_SUPPLY, T_SUPPLY_NEXT, FLOW_FACTOR,
               T_COLD_AISLE_NEXT, *PLANT_FACILITY_VARS)
    events = CDU_EVENTS + ("chiller_trip", "dry_cooler_fan_failure", "utility_outage")
    controls = (T_SUPPLY_SET, T_FACILITY_SUPPLY_SET, T_COLD_AISLE_SET,
                Control("facility", "cooling_mode", "1", "cooling mode of the facility plant",
                        0, len(COOLING_MODES) - 1, choices=COOLING_MODES))
    phase = "integration"

    def __init__(self, plant, every: int, system, supply_volume=None):
        self.plant = plant
        self.every = every
        self.sy = system
        self.setpoint = system.cdu_setpoint.copy()
        self._saved_setpoint: dict[int, np.ndarray] = {}
        self.state = None
        n = system.cdu_name.size
        self.supply_volume = np.zeros(n) if supply_volume is None else np.asarray(supply_volume, dtype=float)
        self.piped = self.supply_volume > 0
        self.line = None  # the supply pipes (built on the first step)
        self.t_racks = None  # supply reaching the racks over the next block [degC]

    def _boundaries(self) -> None:
        st, plant = self.state, self.plant
        st["cdu.t_supply_next"] = (plant.cdu_supply.copy() if self.t_racks is None
                                   else np.where(self.piped, self.t_racks, plant.cdu_supply))
        st["cdu.flow_factor"] = plant.secondary_flow_factor
        st["facility.t_cold_aisle_next"] = np.array([float(plant.t_cold_aisle)])

    def initialise(self, state) -> None:
        self.state = state
        self._boundaries()

    def settle(self, q_liquid, q_air: float, flow) -> None:
        """Steady state under constant loads (:meth:`Plant.initialise`); its outputs stand
        until the plant's first step."""
        self.plant.initialise(q_liquid, q_air, t=0.0, secondary_flow=flow)
        self.t_racks = self.line = None  # the pipes fill with the settled supply
        self._write(self.plant.state)
        self._boundaries()

    def _write(self, ps) -> None:
        st = self.state
        st["cdu.p_pump"] = ps.p_pump
        st["cdu.q"] = ps.q
        st["cdu.valve"] = ps.valve
        st["facility.p_cooling"] = np.array([float(ps.p_cooling)])
        st["facility.t_facility_supply"] = np.array([ps.t_facility_supply])
        for var in PLANT_FACILITY_VARS:
            st[var.key] = np.array([float(getattr(ps, var.name))])

    def step(self, t: float, dt: float, state) -> None:
        flow, q = state["cdu.flow"], state["cdu.q_in"]
        supply = (self.plant.cdu_supply if self.t_racks is None
                  else np.where(self.piped, self.t_racks, self.plant.cdu_supply))  # what the racks had
        with np.errstate(invalid="ignore", divide="ignore"):
            ret = np.where(flow > 0, supply + q / (flow * CP_WATER), np.nan)
        ps = self.plant.step(t, ret, flow, float(step_mean(state["facility.q_air"])[0]),
                             float(step_mean(state["facility.p_it"])[0]))
        if self.piped.any():
            self._transport(self.plant.pumps.volume(flow), dt)
        self._write(ps)
        self._boundaries()

    def _transport(self, flow, dt: float) -> None:
        """Push the supply the plant gives for the next block through the supply pipes at the
        latest flow; the racks get what leaves them over the block."""
        if self.line is None:
            # the pipes start full of the supply the racks have had so far; enough slugs for
            # the transit at a tenth of the design flow (beyond, the oldest merge)
            with np.errstate(divide="ignore"):
                tau = self.supply_volume / (0.1 * self.sy.cdu_design_flow / RHO_WATER)
            steps = int(np.ceil(np.nanmax(np.where(np.isfinite(tau), tau, 0.0)) / dt)) + 2
            start = self.state["cdu.t_supply_next"].copy()
            self.line = PlugFlowDelay(self.supply_volume, start, capacity=min(max(steps, 8), 4096))
        self.t_racks = self.line.step(self.plant.cdu_supply, flow, dt)

    def apply(self, action) -> bool:
        ev, start, plant = action.event, action.what == "start", self.plant
        kind = ev.kind
        if kind in ("cdu_pump_trip", "cdu_failure"):
            pump = kind == "cdu_pump_trip"
            act = {"start": (lambda j: plant.trip_cdu_pump(j, ev.count)) if pump else plant.fail_cdu,
                   "failover": plant.pump_failover if pump else plant.cdu_failover,
                   "clear": plant.restore_cdu_pump if pump else plant.restore_cdu}[action.what]
            for i in cdu_targets(ev.target, self.sy.cdu_name):
                act(int(i))
        elif kind == "setpoint_change":
            idx = cdu_targets(ev.target, self.sy.cdu_name)
            if start:
                self._saved_setpoint[action.index] = self.setpoint[idx].copy()
                self.setpoint[idx] = ev.value
            else:
                self.setpoint[idx] = self._saved_setpoint.pop(action.index)
            for i in idx:
                plant.set_setpoint(cdu_supply=float(self.setpoint[i]), cdu=int(i))
        elif kind == "chiller_trip" or kind == "utility_outage":
            # on a utility outage the chillers stop until the utility (or generator) returns
            plant.trip_chiller() if start else plant.restore_chiller()
        elif kind == "dry_cooler_fan_failure":
            plant.fail_dry_cooler_fans(ev.fraction) if start else plant.restore_dry_cooler_fans()
        if self.state is not None:
            self._boundaries()
        return True

    def control(self, key: str) -> np.ndarray:
        plant = self.plant
        values = {"cdu.t_supply_set": lambda: self.setpoint.copy(),
                  "facility.t_facility_supply_set": lambda: np.array([plant.t_set]),
                  "facility.t_cold_aisle_set": lambda: np.array([plant.t_cold_aisle_set]),
                  "facility.cooling_mode": lambda: np.array([COOLING_MODES.index(plant.mode)])}
        if key not in values:
            return super().control(key)
        return values[key]()

    def set_control(self, key: str, values) -> None:
        plant, values = self.plant, np.asarray(values)
        if key == "cdu.t_supply_set":
            self.setpoint[:] = values
            for i, v in enumerate(self.setpoint):
                plant.set_setpoint(cdu_supply=float(v), cdu=i)
        elif key == "facility.t_facility_supply_set":
            plant.set_setpoint(facility_water_supply=float(values.reshape(-1)[0]))
        elif key == "facility.t_cold_aisle_set":
            plant.set_setpoint(cold_aisle=float(values.reshape(-1)[0]))
        elif key == "facility.cooling_mode":
            plant.mode = COOLING_MODES[int(values.reshape(-1)[0])]
        else:
            super().set_control(key, values)

    @property
    def water(self) -> float:
        """Make-up water used over the run [kg]."""
        return self.plant.totals.water
