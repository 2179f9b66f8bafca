"""The driver: it owns the clock, the schedule of components and the recorder, and nothing else
(:mod:`twin.sim.assembly` builds the components it schedules).

Each thermal step: (1) apply due events (dispatched to the components that own their kind),
(2) step the components in order — workload demand, chip power, job accounting, power shelves,
sled networks and rack manifolds, CDUs (or the facility plant, possibly every k steps), the
power chain, the governors — each reading and writing the typed :class:`~twin.sim.component.State`,
(3) integrate the energy counters of the variables that declare one, (4) record. Finalisation
runs in ``finally`` so an interrupted run keeps what it recorded.

The initial state is a steady state under the first step's demand: the sled networks settle
(iterating leakage to a fixed point) and, with a plant, racks and plant settle together.
"""

from __future__ import annotations

import math
import os
import time as wallclock
from dataclasses import dataclass, field

import numpy as np

from twin.power.chips import power_limits
from twin.power.kernels import choose as choose_kernel
from twin.power.kernels import choose_block
from twin.scenario.errors import FieldError
from twin.scenario.loader import LoadedScenario
from twin.sim.assembly import assemble
from twin.sim.block import QuietBlocks
from twin.sim.build import System, build_system
from twin.sim.component import GROUPS, Schedule, State, step_mean
from twin.sim.events import EventQueue
from twin.sim.recorder import Recorder
from twin.sim.threads import blas_limiter, blas_threads, limited_blas
from twin.sim.variables import check_recorded
from twin.workload.engine import Workload

#: Fixed-point iterations on leakage for the initial steady state (converges as β·P_leak·R ≪ 1).
STEADY_ITERATIONS = 8
#: Racks and plant settle together this many times for the initial state.
PLANT_SETTLE_ROUNDS = 2
#: Above this many devices, device-level recording is off unless ``record.device`` is given:
#: accumulating five per-device series every step would cost more than the rest of the step.
DEVICE_RECORD_LIMIT = 10_000
#: Phases of the step reported by ``twin bench`` (each component declares its ``phase``).
PHASES = ("workload", "power", "integration", "controllers", "recording")


@dataclass
class Totals:
    """Running totals over the run (exact, whatever the recording intervals) [J, W, degC, s].

    ``energy`` holds the exact time integral of every variable that declares a ``counter``
    ("group.name" → per-entity joules); the facility's IT, cooling, facility and loss energies
    are read from there, so the KPIs and the live counters share one definition.
    """

    energy: dict = field(default_factory=dict)
    e_device: float = 0.0
    e_dc: float = 0.0
    e_liquid: float = 0.0
    e_air: float = 0.0
    e_smoothing: float = 0.0  # extra device energy spent by power floors and ramp limits
    e_electrical_rejected: float = 0.0  # heat of electrical rooms and transformers rejected outdoors
    e_battery_discharged: float = 0.0  # energy the UPS battery gave the UPS during outages
    stored_start: float = 0.0
    stored_end: float = 0.0
    p_facility_peak: float = 0.0
    p_rack_peak: float = 0.0
    t_die_max: float = -math.inf
    throttled_device_seconds: float = 0.0
    capped_rack_seconds: float = 0.0
    # Compute work (accelerators and CPUs; ChipPower) [device-s at full clock]: Σ u·h demanded,
    # and Σ u·(1 − f·on)·h lost to throttling, power limits and caps, and trips (the clock f
    # below 1, or the device off); the work done is the difference.
    demand_device_seconds: float = 0.0
    lost_work_device_seconds: float = 0.0
    # Time a constraint is broken [s]: some device off after the step (a shutdown trip or a
    # rack without input power; Governors), the cold aisle outside the ASHRAE A1 allowable range
    # (RackThermal), the facility power's step mean above ``control.p_facility_limit`` (PowerChain).
    tripped_seconds: float = 0.0
    cold_aisle_excursion_seconds: float = 0.0
    p_facility_over_limit_seconds: float = 0.0
    devices_throttled: int = 0
    devices_tripped: int = 0
    steps: int = 0
    wall_seconds: float = 0.0

    def _energy(self, key: str) -> float:
        e = self.energy.get(key)
        return float(e.sum()) if e is not None else 0.0

    @property
    def e_ac(self) -> float:
        """IT energy: ∫ facility.p_it dt [J]."""
        return self._energy("facility.p_it")

    @property
    def e_cooling(self) -> float:
        """Cooling energy: ∫ facility.p_cooling dt [J]."""
        return self._energy("facility.p_cooling")

    @property
    def e_facility(self) -> float:
        """Facility energy: ∫ facility.p_facility dt [J]."""
        return self._energy("facility.p_facility")

    @property
    def e_loss(self) -> float:
        """Power-delivery losses: ∫ facility.p_loss dt [J]."""
        return self._energy("facility.p_loss")

    @property
    def energy_residual(self) -> float:
        """(AC energy in − heat out − stored) / AC energy in [1]."""
        out = self.e_liquid + self.e_air + (self.stored_end - self.stored_start)
        return (self.e_ac - out) / self.e_ac if self.e_ac else 0.0


_LIMITERS: dict = {}


def _blas_limiter(threads):
    """:func:`~twin.sim.threads.blas_limiter` for ``threads``, built once per process (a
    simulation may be deep-copied; the limiter stays out of it)."""
    if threads not in _LIMITERS:
        _LIMITERS[threads] = blas_limiter(threads)
    return _LIMITERS[threads]


#: Device-steps ``run`` takes per call of the block loop, between progress checks: 64 steps of
#: a large system, up to 512 of a small one, whose quiet blocks cost ~0.1 ms a step
#: compiled (the blocks' fixed cost, ~1 ms, then stays small and progress comes every ~0.1 s).
RUN_BLOCK_VALUES = 150_000


class Simulation:
    """A scenario built and ready to step.

    Parameters
    ----------
    loaded : LoadedScenario
    solver : {"fast", "reference"}
    kernel : {"auto", "numpy", "numba"}, optional
        Chip power and power-limit kernel (:func:`twin.power.kernels.choose`; default
        ``TWIN_KERNEL`` or ``auto``).
    sink : ZarrStream, optional
        Streams recorded samples out as the run goes (bounded memory); otherwise they are kept
        in memory for :func:`twin.export.dataset.build_tree`.

    Attributes
    ----------
    components : list
        In step order; ``state`` holds what they read and write.
    totals : Totals
        Running totals, including the exact energy integrals behind the KPIs and counters.
    """

    def __init__(self, loaded: LoadedScenario, solver: str = "fast", sink=None, kernel: str | None = None):
        self.loaded = loaded
        sc = self.scenario = loaded.scenario
        try:
            self.system: System = build_system(sc, loaded.catalog)
            self.system.chip["p_limit"] = power_limits(sc.power_limits, self.system, loaded.catalog)
            self.workload = Workload(sc, self.system, loaded.catalog, loaded.base)
        except FieldError as exc:
            raise loaded.locate(exc) from None
        self.jobs = self.workload.jobs
        self.n_sub = self.workload.n_sub
        self.h_w = self.workload.h_w
        self.h = sc.time.step
        self.n_steps = max(1, int(round(sc.time.duration / self.h)))
        self.solver = solver
        self.kernel = choose_kernel(self.system.n_devices, kernel, self.n_steps)
        #: The quiet blocks' loop kernel (:func:`twin.power.kernels.choose_block`).
        self.block_kernel = choose_block(self.system.n_devices, kernel, self.n_steps)
        self.blas_threads = blas_threads()  # BLAS threads while stepping (TWIN_BLAS_THREADS)
        try:
            check_recorded(sc)
        except FieldError as exc:
            raise loaded.locate(exc) from None
        self.totals = Totals()
        self.events = EventQueue(sc.events)
        self.event_log: list[tuple[float, str, str, str]] = []
        self.first_event = math.inf
        self.step_index = 0
        #: Wall seconds spent per phase of the step (for ``twin bench``).
        self.timing = dict.fromkeys(PHASES, 0.0)
        self._build_components(loaded)
        self.state = State()
        for c in self.components:
            self.state.declare(c)
        self.state.check_inputs(self.components)
        self._counters = [v.key for v in self.state.vars.values() if v.counter]
        self.totals.energy = {k: None for k in self._counters}
        self.schedule = Schedule(self.components, self.h)
        self._check_event_owners()
        self.recorder = self._recorder(sink)
        #: The quiet-block path (:mod:`twin.sim.block`), None where it does not apply;
        #: ``TWIN_BLOCKS=0`` turns it off (every step through every component).
        self._quiet = QuietBlocks.build(self) if os.environ.get("TWIN_BLOCKS", "1") != "0" else None
        if sink is not None:
            sink.sim = self
        self._initial_state()

    # -- building ----------------------------------------------------------------------------
    def _build_components(self, loaded) -> None:
        """The components of this scenario, in step order (:func:`twin.sim.assembly.assemble`)."""
        parts = assemble(loaded, self.system, self.workload, self.totals, self.kernel, self.solver, self.h)
        self.components = parts.components
        self.chips, self.network, self.racks, self.demand = parts.chips, parts.network, parts.racks, parts.demand
        self.cooling, self.plant, self.chain, self.governors = parts.cooling, parts.plant, parts.chain, parts.governors

    def _check_event_owners(self) -> None:
        for i, ev in enumerate(self.scenario.events):
            if ev.kind not in self.schedule.owners:
                raise self.loaded.locate(FieldError(("events", i, "kind"),
                                                    f"no component of this system handles '{ev.kind}'"))

    def _recorder(self, sink) -> Recorder:
        sy, sc = self.system, self.scenario
        intervals, variables = {}, {}
        for group in GROUPS:
            iv = getattr(sc.record, group)
            if group == "job" and self.jobs is None:
                iv = "off"
            if group == "device" and group not in sc.record.model_fields_set and sy.n_devices > DEVICE_RECORD_LIMIT:
                iv = "off"  # a large system records devices only when the scenario asks
            # In workload sub-steps; never finer than the workload step.
            intervals[group] = None if iv == "off" else max(1, int(round(iv / self.h_w)))
            names = self.state.recorded(group)
            wanted = sc.record.variables.get(group)
            variables[group] = [self.state.vars[f"{group}.{n}"] for n in (wanted or names) if n in names]
        sizes = {"facility": 1, "cdu": sy.cdu_name.size, "rack": sy.n_racks,
                 "sled": sy.sled_name.size, "device": sy.n_devices,
                 "job": len(self.jobs.jobs) if self.jobs else 0}
        return Recorder(sizes, intervals, self.n_steps * self.n_sub, self.n_sub, variables, sink=sink,
                        buffer_bytes=int(sc.record.buffer))

    def _initial_state(self) -> None:
        """Steady state under the first step's demand; with a plant (or another cooling model with
        state of its own), racks and cooling settle together (its supply temperatures feed the
        racks and their heat the cooling)."""
        sy, st = self.system, self.state
        for c in reversed(self.components):  # boundaries (cooling, governors) before their readers
            c.initialise(st)
        u0 = self.workload.rules.demand(0.0, self.h_w, 1)[0]
        on = np.ones(sy.n_devices, dtype=bool)
        clock = np.ones(sy.n_devices)

        held = st["device.held"]

        def power(t_die):
            return self.chips.power(u0, clock, on, t_die, held)

        self.racks.t_die[:] = sy.chip["t_ref"]
        self.racks.settle(power, STEADY_ITERATIONS)
        if hasattr(self.cooling, "settle"):  # a cooling model with state of its own settles too
            for _ in range(PLANT_SETTLE_ROUNDS):
                q_cdu, q_air, flow = self.racks.fluxes()
                self.cooling.settle(q_cdu, q_air + float(st["facility.p_network"][0]), flow)
                self.racks.update(st)
                self.racks.settle(power, STEADY_ITERATIONS)
        self.governors.settle(u0, self.racks.t_die, st)
        self.totals.stored_start = self.racks.stored_heat()

    # -- compatibility views -------------------------------------------------------------------
    @property
    def rack_energy(self) -> np.ndarray:
        """Rack AC input energy since the start [J] per rack."""
        e = self.totals.energy.get("rack.p_ac")
        return np.zeros(self.system.n_racks) if e is None else e

    @property
    def water(self) -> float:
        """Make-up water used [kg]."""
        return self.plant.totals.water if self.plant is not None else 0.0

    @property
    def capped_rack_seconds(self) -> float:
        return self.totals.capped_rack_seconds

    @property
    def first_throttle(self) -> float:
        return self.governors.first_throttle

    @property
    def first_trip(self) -> float:
        return self.governors.first_trip

    @property
    def on_battery(self) -> bool:
        return self.chain.on_battery

    @property
    def battery_energy(self) -> float:
        return self.chain.battery_energy

    @property
    def battery_left(self) -> float:
        return self.chain.battery_left

    @property
    def ride_through(self) -> float:
        return self.chain.ride_through

    def facility_balance(self) -> dict[str, float]:
        """The facility's energy balance over the steps taken [J] (with a plant).

        What the utility delivered (the facility energy: the battery's discharge is an internal
        transfer, not in it; :mod:`twin.power.chain`) ends as heat rejected outdoors (the plant's
        heat rejection and its fans, the electrical rooms' units, the outdoor transformers) or
        stays stored: heat in the racks, the plant's loops and room air and the CDUs' supply
        pipes, and energy in the UPS battery::

            E_facility = E_rejected + ΔH_racks + ΔH_plant + ΔH_pipes + ΔE_battery

        ``e_battery_discharged`` (what the battery gave the UPS during outages) is reported
        alongside, not a term of the balance.

        Returns the terms and ``residual`` = (left − right) / E_facility [1]. Each part's balance
        is exact arithmetic, so the residual is rounding (~1e-15) while the flow is constant;
        a supply pipe is pushed at the latest flow, so a flow change (a pump trip) leaves at
        most one step's transit heat at the difference of the two flows, and the UPS battery's
        step that empties it is carried whole (less than one step of its load).
        """
        if self.plant is None:
            raise ValueError("facility_balance: the scenario has no plant")
        tot, pt, ch = self.totals, self.plant.totals, self.chain
        terms = {
            "e_facility": tot.e_facility,
            "e_battery_discharged": tot.e_battery_discharged,
            "e_rejected": pt.e_rejected + pt.e_heat_rejection_fans + tot.e_electrical_rejected,
            "stored_racks": tot.stored_end - tot.stored_start,
            "stored_plant": pt.stored_end - pt.stored_start,
            "stored_pipes": pt.pipes_end - pt.pipes_start,
            "stored_battery": ch.battery_left - ch.battery_energy,  # it starts full
        }
        left = terms["e_facility"]
        right = sum(v for k, v in terms.items() if k.startswith(("e_rejected", "stored_")))
        terms["residual"] = (left - right) / terms["e_facility"] if terms["e_facility"] else 0.0
        return terms

    @property
    def ever_used(self) -> np.ndarray:
        """Devices whose demanded utilisation was ever above 0."""
        return self.demand.ever_used

    @property
    def t_die(self) -> np.ndarray:
        """Die temperature of each device now [degC]."""
        return self.racks.t_die

    @property
    def t_die_peak(self) -> np.ndarray:
        """Highest die temperature of each device so far [degC]."""
        return self.racks.t_die_peak

    @property
    def time(self) -> float:
        """Simulated seconds since the start."""
        return self.step_index * self.h

    # -- running -------------------------------------------------------------------------------
    def _apply_events(self) -> None:
        for action in self.events.due(self.time + self.h):
            self.schedule.apply(action)
            ev = action.event
            if action.what == "start":
                self.first_event = min(self.first_event, action.time)
            self.event_log.append((action.time, action.what, ev.kind, ev.target or "plant"))

    def step(self) -> None:
        """Advance one thermal step: events, components, energy counters, recorder."""
        self._steps(1, True, None)

    def advance(self, n_steps: int, record: bool = True, each=None) -> int:
        """Advance ``n_steps`` thermal steps (fewer when the run ends first); returns how many.

        This is how a controller advances the twin between its decisions: set controls with
        ``component.set_control(key, values)``, then ``sim.advance(k, record=False)`` (e.g.
        k = 300 for a 5-minute control interval at a 1 s step). The k steps are taken in blocks
        between boundaries (:meth:`block_length`: a due event, a multi-rate component's update,
        the end of the run); each step is exactly what :meth:`step` does (events due,
        components, energy counters, to the bit), with BLAS held to the run loop's threads
        (:mod:`twin.sim.threads`). In a quiet block (:mod:`twin.sim.block`: nothing unusual,
        between a multi-rate component's updates) the feedback loop — demand, chip power, job
        accounting, sled temperatures, governors — runs per step (compiled into one call per
        block, :mod:`twin.sim.fused`, when the quiet-block kernel ``block_kernel`` is numba and
        the jobs' demand can be written ahead) and the shelves, manifolds, CDUs, power chain,
        counters and recorder once over the block. ``each(state)``, when given, is called with every step's values, in
        order (to read them, e.g. sums for an observation; it must not change the state or
        the controls — in a quiet block it is called once the block's steps are taken).

        With ``record=False`` the steps' values are not accumulated into the recorded series:
        the samples of the intervals they touch are NaN (missing) so every later sample keeps
        its time, while the energy counters, totals and KPIs stay exact. The components are not
        finalised; :meth:`run` does that (and runs whatever steps are left).

        A controller calls ``advance(k, record=False)`` once per decision (``each`` for what it
        reads per step), on a simulation built with its whole horizon as the scenario's
        duration: ``auto`` then runs quiet blocks compiled from
        :data:`twin.power.kernels.BLOCK_MIN_STEPS` steps on (``TWIN_KERNEL=numba`` forces it,
        ``numpy`` keeps the reference). On the quickstart a 5-minute interval (300 steps) costs
        ~20-25 ms of CPU compiled against ~130-180 ms on the numpy reference
        (``benchmarks/advance_block.py``).
        """
        n = max(0, min(int(n_steps), self.n_steps - self.step_index))
        if n:
            with _blas_limiter(self.blas_threads)():
                self._steps(n, record, each)
        return n

    def block_length(self, limit: int) -> int:
        """Thermal steps from the next one (at most ``limit``, at least 1) that contain no
        boundary after their first: no event falls due and no multi-rate component (the
        facility plant) updates in steps 2…k of the block (the actions due at its first step
        are applied before), so a block may be taken in one pass with slow components stepped
        only on its first step. Job changes,
        inference pools and recording intervals are within-step matters of the components and
        the recorder; they do not end a block."""
        k = max(1, int(limit))
        upd = self.schedule.steps_to_update()
        if upd is not None:
            k = min(k, upd)
        return self._before_event(k)

    def quiet_length(self, limit: int) -> int:
        """Thermal steps from the next one (at most ``limit``, at least 1) that a quiet block
        (:mod:`twin.sim.block`) may take: no event falls due in steps 2…k, and a multi-rate
        component (the facility plant) updates on none of them but possibly the last (it then
        steps at the block's end on the sums of its inputs, and its new outputs are the next
        block's boundaries)."""
        k = max(1, int(limit))
        upd = self.schedule.steps_before_update()
        if upd is not None:
            k = min(k, upd + 1)
        return self._before_event(k)

    def _before_event(self, k: int) -> int:
        """``k`` cut to end before the first step after the next on which an event falls due."""
        h, i = self.h, self.step_index
        first = self.events.first_after(i * h + h)  # (those due at the block's first step start it)
        if math.isfinite(first):
            # the first step j > i with first < j·h + h (the test the step itself makes)
            j = max(i + 1, int(first // h) - 1)
            while not first < j * h + h:
                j += 1
            k = min(k, j - i)
        return k

    def _steps(self, n: int, record: bool, each) -> None:
        """``n`` thermal steps (the caller keeps within the run), in blocks between boundaries."""
        quiet = self._quiet
        while n > 0:
            if self.events.first_time < self.step_index * self.h + self.h:
                self._apply_events()
            if quiet is not None:
                k = self.quiet_length(n)
                # (a single step quiet only when the plant updates on it: otherwise the
                # per-step path costs less)
                if (k > 1 or self.schedule.updates_next()) and quiet.ready():
                    n -= quiet.run(k, record, each)
                    continue
                k = 1  # not quiet now: one step through every component, then look again
            else:
                k = self.block_length(n)
            self._block(k, record, each)
            n -= k

    def _block(self, k: int, record: bool, each) -> None:
        """``k`` thermal steps with no boundary after the first (:meth:`block_length`; the
        events due at the first are applied), each through every component."""
        st, h, sched, timing = self.state, self.h, self.schedule, self.timing
        for _ in range(k):
            sched.step(self.step_index * h, st, timing)
            self._account(record, each)

    def _account(self, record: bool, each) -> None:
        """After a step: energy counters, the recorder, the step count, ``each(state)``."""
        st, h, timing = self.state, self.h, self.timing
        energy = self.totals.energy
        t1 = wallclock.perf_counter()
        for key in self._counters:
            e = step_mean(st[key]) * h
            energy[key] = e if energy[key] is None else energy[key] + e
        if record:
            self.recorder.add(st)
        else:
            self.recorder.skip(1)
        self.totals.steps += 1
        self.step_index += 1
        timing["recording"] += wallclock.perf_counter() - t1
        if each is not None:
            each(st)

    def run(self, progress=None, pace=None) -> Totals:
        """Run all steps. ``progress(done_steps, n_steps)`` is called about every 0.2 s of wall time.

        An interrupt (Ctrl-C) stops at the end of the current step; what was recorded is kept.
        BLAS runs on one thread meanwhile unless ``TWIN_BLAS_THREADS`` says otherwise (the
        step's matrix products are small; see :mod:`twin.sim.threads`).
        """
        with limited_blas(self.blas_threads):
            return self._run(progress, pace)

    def _run(self, progress, pace) -> Totals:
        t0 = wallclock.perf_counter()
        last = t0
        block = 64 * max(1, min(8, RUN_BLOCK_VALUES // (64 * self.system.n_devices)))
        try:
            while self.step_index < self.n_steps:
                # paced (live) runs go step by step; otherwise in blocks up to the next progress call
                n = 1 if pace is not None else min(block - self.step_index % block, self.n_steps - self.step_index)
                self._steps(n, True, None)
                if pace is not None:
                    pace(self.time)
                if progress is not None and self.step_index % block == 0:
                    now = wallclock.perf_counter()
                    if now - last > 0.2:
                        last = now
                        progress(self.step_index, self.n_steps)
        finally:
            for c in self.components:
                c.finalise(self.state)
            tot = self.totals
            tot.stored_end = self.racks.stored_heat()
            tot.wall_seconds = wallclock.perf_counter() - t0
            tot.devices_throttled = int(self.governors.ever_throttled.sum())
            tot.devices_tripped = int(self.governors.ever_tripped.sum())
            if progress is not None:
                progress(self.step_index, self.n_steps)
        return tot
