"""CDUs as components: one interface, two implementations.

Every CDU component reads the heat and flow its racks send it (``cdu.q_in``, ``cdu.flow``,
from :class:`twin.thermal.racks.RackThermal`) and gives the racks their boundaries for the next
step: secondary supply temperature ``cdu.t_supply_next``, secondary flow factor
``cdu.flow_factor`` and the cold-aisle temperature ``facility.t_cold_aisle_next``; it defines
pump power, heat removed and the facility's cooling power.

- :class:`SimpleCdu` (no scenario ``plant:``): supply = max(set-point, facility water + approach)
  with the facility water at the site's constant temperature; the secondary pumps of
  :class:`twin.cooling.cdu_pumps.CduPumps` (on their curve where the catalogue gives one).
- :class:`~twin.cooling.cdu_bank.CduDemand` and :class:`~twin.cooling.cdu_bank.CduLoops` (a
  scenario ``plant:``): the CDU bank of the facility cooling plant (ε-NTU exchangers with PI
  valves) in front of the plant's other equipment (:mod:`twin.cooling.facility`), stepping every
  ``plant.step`` on block means of its inputs.

Both are :class:`CduComponent`: one implementation of the CDU events (pump trip, CDU failure
with failover, set-point change), of the secondary-supply set-point control and of the flow
factor, over the state each keeps (set-points, pumps, CDUs down); the plant's other equipment
owns the plant-wide events.
"""

from __future__ import annotations

import copy

import numpy as np

from twin.cooling.cdu_pumps import CduPumps
from twin.cooling.transport import PlugFlowDelay
from twin.sim.component import Component, Control, Var
from twin.sim.events import cdu_targets
from twin.units import RHO_WATER

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


class CduComponent(Component):
    """The CDU interface: the CDU events, the supply set-point control and the flow factor.

    An implementation keeps ``setpoint`` (secondary supply set-point of each CDU, in force)
    [degC], ``pumps`` (:class:`~twin.cooling.cdu_pumps.CduPumps`), ``down`` (CDUs failed) and
    ``cdu_names``, and gives the racks their boundaries again in :meth:`publish` after any of
    them changes.
    """

    events = CDU_EVENTS
    controls = (T_SUPPLY_SET,)
    setpoint: np.ndarray
    pumps: CduPumps
    down: np.ndarray
    cdu_names: np.ndarray
    _saved_setpoint: dict

    @property
    def flow_factor(self) -> np.ndarray:
        """Secondary flow each CDU gives relative to design [1]: its running pumps on the
        loop's curve (:attr:`~twin.cooling.cdu_pumps.CduPumps.flow_factor`; one of two parallel
        pumps alone ≈ 0.69), 0 while the CDU is down."""
        return np.where(self.down, 0.0, self.pumps.flow_factor)

    def publish(self) -> None:
        """Give the racks their supply and flow boundaries again (after an event or a control)."""

    def apply(self, action) -> bool:
        """A set-point change (restored when it ends), a pump trip (the running pumps on the
        loop's curve until a standby takes over or it clears) or a CDU failure (no flow until
        it clears or fails over) on the CDUs the event's target names."""
        ev = action.event
        self.act(ev.kind, action.what, cdu_targets(ev.target, self.cdu_names), value=getattr(ev, "value", None),
                 count=getattr(ev, "count", 1), key=action.index)
        return True

    def act(self, kind: str, what: str, idx, *, value=None, count: int = 1, key=None) -> None:
        """One CDU event on the CDUs of indices ``idx``, then the racks' boundaries again: the
        one implementation of the CDU faults, for the event queue (:meth:`apply`) and for a
        plant stepped on its own (:class:`~twin.cooling.facility.Plant`).

        Parameters
        ----------
        kind : {"setpoint_change", "cdu_pump_trip", "cdu_failure"}
        what : {"start", "failover", "clear"}
        idx : array of int
        value : float, optional
            New set-point [degC] (``setpoint_change``).
        count : int
            Pumps that trip (``cdu_pump_trip``).
        key : hashable, optional
            Identifies a set-point change, so its end restores what it replaced.
        """
        start = what == "start"
        if kind == "setpoint_change":
            if start:
                self._saved_setpoint[key] = self.setpoint[idx].copy()
                self.setpoint[idx] = value
            else:
                self.setpoint[idx] = self._saved_setpoint.pop(key)
        elif kind == "cdu_pump_trip":
            pump = {"start": lambda j: self.pumps.trip(j, count), "failover": self.pumps.failover,
                    "clear": self.pumps.restore}[what]
            for i in idx:
                pump(int(i))
        else:  # CDU failure: no flow until cleared or failed over
            self.down[idx] = start
        self.publish()

    def control(self, key: str) -> np.ndarray:
        if key == T_SUPPLY_SET.key:
            return self.setpoint.copy()
        return super().control(key)

    def set_control(self, key: str, values) -> None:
        if key != T_SUPPLY_SET.key:
            super().set_control(key, values)
        self.setpoint[:] = np.asarray(values)
        self.publish()


class SimpleCdu(CduComponent):
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
    it left the CDU, Q the secondary flow at the time: the racks' supply over a step is the
    mean of the CDU's outlet over [t − τ, t + dt − τ], as with a plant.
    """

    inputs = ("cdu.flow", "cdu.q_in")
    outputs = (P_PUMP, Q, P_COOLING, T_FACILITY_SUPPLY, T_SUPPLY_NEXT, FLOW_FACTOR, T_COLD_AISLE_NEXT)
    phase = "integration"
    cdu_kind = "liquid_to_liquid"  # the catalogue CDU kind it models (twin.cooling.equipment.cdu_models)

    def __init__(self, system, t_facility: float, t_cold_aisle: float, pumps: CduPumps,
                 supply_volume=None):
        self.sy = system
        self.cdu_names = system.cdu_name
        n = system.cdu_name.size
        self.supply_volume = np.zeros(n) if supply_volume is None else np.asarray(supply_volume, dtype=float)
        self.line = None  # the supply pipes (built on the first step, sized to its length)
        self.t_racks = None  # supply arriving at the racks [degC]
        self._pushed = None  # (pipes before the last push, its flow, its step): to push again
        self.t_facility = t_facility
        self.t_cold_aisle = t_cold_aisle
        self.setpoint = system.cdu_setpoint.copy()
        self.pumps = pumps
        self.down = np.zeros(system.cdu_name.size, dtype=bool)
        self._saved_setpoint: dict[int, np.ndarray] = {}
        self.state = None

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

    def step_block(self, k: int, dt: float, q_in, state) -> dict:
        """:meth:`step` for ``k`` steps at once with the flows and pumps steady and the supply
        pipes holding water of the CDUs' outlet temperature (a quiet block,
        :mod:`twin.sim.block`): ``q_in`` (k, CDUs) is each step's heat from the racks."""
        flow = self.pumps.volume(state["cdu.flow"])
        p_pump = self.pumps.power(flow, ~self.down)
        if (self.supply_volume > 0).any():
            self._transport(flow, dt)  # (steady pipes: what each of the k pushes leaves behind)
        p_cooling = np.full((k, 1), float(p_pump.sum()))
        return {"cdu.p_pump": np.broadcast_to(p_pump, (k,) + p_pump.shape), "cdu.q": q_in,
                "facility.p_cooling": p_cooling}

    def _transport(self, flow, dt: float) -> None:
        """Push the supply the CDUs give over the next step through the supply pipes at the
        latest flow; the racks get what leaves them over that step (as with a plant,
        :class:`~twin.cooling.cdu_bank.CduLoops`)."""
        if self.line is None:
            # enough slugs for the transit at a tenth of the design flow (beyond, they merge)
            with np.errstate(divide="ignore"):
                tau = self.supply_volume / (0.1 * self.sy.cdu_design_flow / RHO_WATER)
            steps = int(np.ceil(np.nanmax(np.where(np.isfinite(tau), tau, 0.0)) / dt)) + 2
            self.line = PlugFlowDelay(self.supply_volume, self.t_racks, capacity=min(max(steps, 8), 4096))
            # the water that entered over this first step: the CDUs' outlet in force over it (a
            # set-point changed at t = 0 enters the pipes now, not a step later); the racks had
            # the pipes' first water over it (exact while τ ≥ dt). Unchanged outlet: a no-op.
            self.line.step(self.t_outlet, flow, dt)
        # PlugFlowDelay.step replaces its arrays rather than writing into them: a shallow copy
        # keeps the pipes as they were before this push
        self._pushed = (copy.copy(self.line), flow, dt)
        self.t_racks = self.line.step(self.t_outlet, flow, dt)
        self._boundaries()

    def _push_again(self) -> None:
        """Redo the last push with the CDUs' outlet as it is now: a set-point changed between
        steps enters the pipes over the step it applies from, not one later (with the outlet
        unchanged the push is the same, to the bit)."""
        if self._pushed is None:
            return
        line, flow, dt = self._pushed
        self.line = copy.copy(line)
        self.t_racks = self.line.step(self.t_outlet, flow, dt)

    def publish(self) -> None:
        self._push_again()
        if self.state is not None:
            self._boundaries()
