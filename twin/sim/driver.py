"""The driver: one clock, and per step (1) workload, (2) controllers, (3) power, (4) thermal
integration, (5) recording — with finalisation in ``finally`` so an interrupted run keeps what
it recorded.

Per step and per level (array operations only, no per-device Python):

- device power P(u, f, T_die) at the start-of-step die temperature (held over the step);
- sled DC power = Σ devices + board overhead + fans; rack DC = Σ sleds;
- rack AC = DC / η_shelf(load); the loss heats the rack's exhaust air;
- sled networks integrated exactly over the step (``fast``) or by ``solve_ivp`` (``reference``);
- heat to liquid ṁ·c_p·(T̄_coolant − T_supply) and to air ṁ_a·c_p,a·(T̄_air − T_inlet) from the
  step-mean fluid temperatures, so electrical energy = heat to liquid + heat to air + stored heat;
- CDU supply = max(setpoint, facility water + approach); return = flow-weighted mix of racks;
  pump power by the affinity law;
- thermal governor lowers clocks above the throttle point; a device above its shutdown point
  trips and stays off.
"""

from __future__ import annotations

import math
import time as wallclock
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from twin.cooling.plant import pump_power
from twin.power.device import device_power
from twin.power.governor import cap_governor, power_limit_governor, shutdown_trip, thermal_governor
from twin.power.delivery import BUSWAY_LOSS_FRACTION, busway_input_power, transformer_losses, ups_input_power
from twin.power.psu import shelf_input_power
from twin.scenario.errors import FieldError
from twin.scenario.loader import LoadedScenario
from twin.scenario.model import GROUPS
from twin.sim.build import System, build_system
from twin.sim.events import EventQueue, cdu_targets, rack_targets
from twin.sim.recorder import Recorder
from twin.sim.threads import blas_threads, limited_blas
from twin.sim.variables import PLANT_FACILITY_VARIABLES
from twin.thermal.integrators import INTEGRATORS
from twin.units import CP_AIR, CP_WATER
from twin.workload.engine import Workload

#: Fixed-point iterations on leakage for the initial steady state (converges as β·P_leak·R ≪ 1).
STEADY_ITERATIONS = 8
#: Above this many devices, device-level recording is off unless ``record.device`` is given:
#: accumulating five per-device series every step would cost more than the rest of the step.
DEVICE_RECORD_LIMIT = 10_000
#: Upper bound on the workload block: steps × devices values (≈ 16 MB of float64).
BLOCK_VALUES = 2_000_000


@dataclass
class Totals:
    """Running totals over the run (exact, whatever the recording intervals) [J, W, degC, s]."""

    e_device: float = 0.0
    e_dc: float = 0.0
    e_ac: float = 0.0
    e_loss: float = 0.0
    e_liquid: float = 0.0
    e_air: float = 0.0
    e_cooling: float = 0.0
    e_facility: float = 0.0
    e_smoothing: float = 0.0  # extra device energy spent by power floors and ramp limits
    stored_start: float = 0.0
    stored_end: float = 0.0
    p_facility_peak: float = 0.0
    p_rack_peak: float = 0.0
    t_die_max: float = -math.inf
    throttled_device_seconds: float = 0.0
    devices_throttled: int = 0
    devices_tripped: int = 0
    steps: int = 0
    wall_seconds: float = 0.0
    per_kind: dict = field(default_factory=dict)

    @property
    def energy_residual(self) -> float:
        """(AC energy in − heat out − stored) / AC energy in [1]."""
        out = self.e_liquid + self.e_air + (self.stored_end - self.stored_start)
        return (self.e_ac - out) / self.e_ac if self.e_ac else 0.0


class Simulation:
    """A scenario built and ready to step.

    Parameters
    ----------
    loaded : LoadedScenario
    solver : {"fast", "reference"}
    sink : ZarrStream, optional
        Streams recorded samples out as the run goes (bounded memory); otherwise they are kept
        in memory for :func:`twin.export.dataset.build_tree`.
    """

    def __init__(self, loaded: LoadedScenario, solver: str = "fast", sink=None):
        self.loaded = loaded
        sc = loaded.scenario
        self.scenario = sc
        self.system: System = build_system(sc, loaded.catalog)
        try:
            self.workload = Workload(sc, self.system, loaded.catalog, loaded.base)
        except FieldError as exc:
            raise loaded.locate(exc) from None
        self.jobs = self.workload.jobs
        self.network = None  # scale-out switches and optics outside the racks (scenario `network:`)
        self.p_network = 0.0
        if sc.network is not None:
            from twin.network.cluster import ScaleOutNetwork

            self.network = ScaleOutNetwork.build(self.system, loaded.catalog, sc.network.scale_out)
            self.p_network = self.network.power
        self.n_sub = self.workload.n_sub
        self.h_w = self.workload.h_w
        self.h = sc.time.step
        self.n_steps = max(1, int(round(sc.time.duration / self.h)))
        self.solver = solver
        self.blas_threads = blas_threads()  # BLAS threads while stepping (TWIN_BLAS_THREADS)
        self.integrator = INTEGRATORS[solver](self.system.groups, self.h)
        sy = self.system
        self.t_cold_aisle = sc.site.cold_aisle
        self.t_facility = sc.site.facility_water_supply
        # Operating state that events change: flow, fan and PSU factors, setpoints.
        self.rack_coolant_factor = np.ones(sy.n_racks)
        self.rack_air_factor = np.ones(sy.n_racks)
        self.cdu_flow_factor = np.ones(sy.cdu_name.size)
        self.rack_failed_psus = np.zeros(sy.n_racks, dtype=np.int64)
        self.cdu_setpoint = sy.cdu_setpoint.copy()
        self.events = EventQueue(sc.events)
        self.event_log: list[tuple[float, str, str, str]] = []
        self.first_event = np.inf
        self.first_throttle = np.inf
        self.first_trip = np.inf
        self.m_coolant = np.full(sy.sled_name.size, np.nan)
        self.m_air = np.full(sy.sled_name.size, np.nan)
        self.plant = None
        self._plant_flow_factor = None
        self.water = 0.0  # make-up water used [kg]
        self.on_battery = False
        self.ride_through = np.inf  # s of battery left when it ran out (inf: never)
        if sc.plant is not None:
            self._build_plant(loaded)
        self._apply_flows()
        # Power caps: a clock factor per rack and per row, lowered while the limit is exceeded.
        self.rack_cap = np.ones(sy.n_racks)
        self.row_cap = np.ones(len(sy.row_names))
        self.capped_rack_seconds = 0.0
        try:
            self._power_limits(sc.power_limits)
        except FieldError as exc:
            raise loaded.locate(exc) from None
        self.clock_thermal = np.ones(sy.n_devices)
        self.clock_power = np.ones(sy.n_devices)  # the power-limit governor's clock
        self.clock = np.ones(sy.n_devices)
        self.tripped = np.zeros(sy.n_devices, dtype=bool)
        self.ever_throttled = np.zeros(sy.n_devices, dtype=bool)
        self.ever_used = np.zeros(sy.n_devices, dtype=bool)  # demanded utilisation ever above 0
        self.t_die_peak = np.full(sy.n_devices, -np.inf)  # highest die temperature of each device [degC]
        self.T = [np.zeros((g.sleds.size, g.m)) for g in sy.groups]
        self.t_die = np.full(sy.n_devices, 0.0)
        self.state = SimpleNamespace()
        self.totals = Totals()
        self.rack_energy = np.zeros(sy.n_racks)  # cumulative rack AC energy [J] (for counters)
        #: Wall seconds spent per phase of the step (for ``twin bench``).
        self.timing = dict.fromkeys(("workload", "power", "integration", "controllers", "recording"), 0.0)
        self.step_index = 0
        intervals = {}
        for group in GROUPS:
            iv = getattr(sc.record, group)
            if group == "job" and self.jobs is None:
                iv = "off"
            if group == "device" and group not in sc.record.model_fields_set and sy.n_devices > DEVICE_RECORD_LIMIT:
                iv = "off"  # a large system records devices only when the scenario asks
            # In workload sub-steps; never finer than the workload step.
            intervals[group] = None if iv == "off" else max(1, int(round(iv / self.h_w)))
        sizes = {"facility": 1, "cdu": sy.cdu_name.size, "rack": sy.n_racks,
                 "sled": sy.sled_name.size, "device": sy.n_devices,
                 "job": len(self.jobs.jobs) if self.jobs else 0}
        self.recorder = Recorder(sizes, intervals, self.n_steps * self.n_sub, self.n_sub,
                                 sc.record.variables, sink=sink, plant=sc.plant is not None)
        if sink is not None:
            sink.sim = self
        self.p_prev = None  # last sub-step's device power, for ramp limits [W]
        self._initial_state()

    # -- plant and power chain ----------------------------------------------------------------
    def _build_plant(self, loaded) -> None:
        """The facility cooling plant, the UPS and the transformers of the scenario's ``plant:``."""
        import pandas as pd

        from twin.cooling.facility import Plant

        sy, sc, cat = self.system, self.scenario, loaded.catalog
        design_flow = np.bincount(sy.rack_cdu, weights=sy.rack_m_coolant, minlength=sy.cdu_name.size)
        start = pd.Timestamp(sc.time.start)
        day = start.day_of_year + (start - start.normalize()).total_seconds() / 86400.0
        # Multi-rate: the plant (time constants of minutes) may update every k thermal steps,
        # on the block means of its inputs; its outputs are held in between.
        self.plant_every = max(1, int(round((sc.plant.step or self.h) / self.h)))
        self._plant_acc = None
        self._plant_n = 0
        self._plant_state = None
        self._plant_updated = False
        try:
            self.plant = Plant(sc.plant, cat, list(sy.cdu_template), sy.cdu_setpoint, design_flow,
                               self.h * self.plant_every, start_day_of_year=day, base_dir=loaded.base)
            why = self.plant.weather.span_error(sc.time.duration)  # before the run, not at its end
            if why is not None:
                raise FieldError(("plant", "weather", "file"), why)
        except FieldError as exc:
            raise loaded.locate(exc) from None
        ups = cat.ups[sc.plant.ups.template]
        curve = ups.efficiency if sc.plant.ups.mode == "double_conversion" else ups.efficiency_eco
        design = sy.design_it_power * (1 + BUSWAY_LOSS_FRACTION)
        # N+1 UPS modules sharing the load; transformers sized for IT and cooling with 25 % margin.
        self.ups_rating = (np.ceil(design / ups.rating.si) + 1) * ups.rating.si
        self.ups_curve = (np.array([p[0] for p in curve.points]), np.array([p[1] for p in curve.points]))
        self.battery_energy = (ups.battery_energy.si if ups.battery_energy else 0.0) * self.ups_rating / ups.rating.si
        self.battery_left = self.battery_energy
        tr = cat.transformers[sc.plant.transformer.template]
        self.n_transformers = max(1.0, np.ceil(1.25 * design / tr.rating.si))
        self.transformer = tr

    def _delivery(self, p_it: float, p_cooling: float):
        """Utility input and losses upstream of the racks [W]: busway → UPS → transformer.

        Returns (p_facility, p_ups_in, busway + UPS loss, transformer loss). Cooling is fed from
        the transformer, not through the UPS.
        """
        if self.plant is None:
            return p_it + p_cooling, p_it, 0.0, 0.0
        p_bus = busway_input_power(p_it)
        p_ups_in = float(ups_input_power(np.array([p_bus]), self.ups_rating, *self.ups_curve)[0])
        if self.on_battery:
            self.battery_left -= p_ups_in * self.h
            p_util = p_cooling
        else:
            p_util = p_ups_in + p_cooling
        n, tr = self.n_transformers, self.transformer
        loss_tr = float(n * transformer_losses(p_util / n, tr.rating.si, tr.no_load_loss.si, tr.load_loss.si))
        return p_util + loss_tr, p_ups_in, p_ups_in - p_it, loss_tr

    def _plant_step(self, cdu_return, cdu_flow, q_air, p_it):
        """The plant's state for this thermal step.

        With ``plant.step`` longer than the thermal step (multi-rate), the plant advances at the
        start of each block of ``plant_every`` steps on the mean inputs of the block before (the
        first block: the initial steady state) and its state is held through the block.
        """
        k = self.plant_every
        self._plant_updated = False
        if k == 1:
            self._plant_updated = True
            return self.plant.step(self.time, cdu_return, cdu_flow, q_air, p_it)
        if self.step_index % k == 0:
            inputs = self._plant_inputs if self._plant_acc is None else self._plant_acc / self._plant_n
            n = cdu_flow.size
            q_mean, flow_mean = inputs[:n], inputs[n: 2 * n]
            with np.errstate(invalid="ignore", divide="ignore"):
                ret = np.where(flow_mean > 0, self.cdu_supply + q_mean / (flow_mean * CP_WATER), np.nan)
            self._plant_state = self.plant.step(self.time, ret, flow_mean, inputs[-2], inputs[-1])
            self._plant_updated = True
            self._plant_acc, self._plant_n = None, 0
        with np.errstate(invalid="ignore"):
            q = np.where(cdu_flow > 0, (cdu_return - self.cdu_supply) * cdu_flow * CP_WATER, 0.0)
        row = np.concatenate([q, cdu_flow, [q_air, p_it]])
        self._plant_acc = row if self._plant_acc is None else self._plant_acc + row
        self._plant_n += 1
        return self._plant_state

    def _fluxes(self):
        """Heat to each CDU's liquid and to room air [W] at the present node temperatures."""
        sy = self.system
        q_liq = np.zeros(sy.sled_name.size)
        q_air = np.zeros(sy.sled_name.size)
        for i, g in enumerate(sy.groups):
            T = self.T[i]
            q_liq[g.sleds] = self.m_coolant[g.sleds] * CP_WATER * (T[:, g.cool] - self.sled_supply[g.sleds])
            q_air[g.sleds] = self.m_air[g.sleds] * CP_AIR * (T[:, g.air] - self.t_cold_aisle)
        per_cdu = np.bincount(sy.rack_cdu, weights=sy.rack_sum(q_liq), minlength=sy.cdu_name.size)
        return per_cdu, float(q_air.sum())

    # -- boundaries and levels -------------------------------------------------------------
    def _apply_flows(self):
        """Sled coolant and air flows from the event factors; new propagators where they changed."""
        sy = self.system
        cdu_factor = self.cdu_flow_factor
        if self.plant is not None:
            cdu_factor = cdu_factor * self.plant.secondary_flow_factor
        rack_factor = self.rack_coolant_factor * cdu_factor[sy.rack_cdu]
        m_coolant = sy.sled_m_coolant * rack_factor[sy.sled_rack]
        m_air = sy.sled_m_air * self.rack_air_factor[sy.sled_rack]
        for i, g in enumerate(sy.groups):
            if not (np.array_equal(m_coolant[g.sleds], self.m_coolant[g.sleds])
                    and np.array_equal(m_air[g.sleds], self.m_air[g.sleds])):
                self.integrator.set_flows(i, m_coolant[g.sleds], m_air[g.sleds])
        self.m_coolant, self.m_air = m_coolant, m_air
        # Fans that failed draw no power (the survivors keep their speed).
        self.fan_power = sy.sled_fan_power * self.rack_air_factor[sy.sled_rack]
        healthy = np.maximum(sy.rack_psus - self.rack_failed_psus, 0)
        self.shelf_capacity = healthy * sy.rack_psu_rating
        self._boundaries()

    def _apply_event(self, action) -> None:
        """Change the operating state for one event action (start, clear or failover)."""
        sy, ev = self.system, action.event
        start = action.what == "start"
        if ev.kind in ("cdu_pump_trip", "cdu_failure") and self.plant is not None:
            for i in cdu_targets(ev.target, sy.cdu_name):
                if start:
                    (self.plant.trip_cdu_pump if ev.kind == "cdu_pump_trip" else self.plant.fail_cdu)(
                        int(i), failover=False)
                else:
                    (self.plant.restore_cdu_pump if ev.kind == "cdu_pump_trip" else self.plant.restore_cdu)(int(i))
        elif ev.kind in ("cdu_pump_trip", "cdu_failure"):
            idx = cdu_targets(ev.target, sy.cdu_name)
            self.cdu_flow_factor[idx] = 0.0 if start else 1.0
        elif ev.kind in ("chiller_trip", "dry_cooler_fan_failure", "utility_outage"):
            self._plant_event(ev.kind, start, ev)
        elif ev.kind == "coolant_flow_loss":
            idx = rack_targets(ev.target, sy.rack_name)
            self.rack_coolant_factor[idx] = (1.0 - ev.fraction) if start else 1.0
        elif ev.kind == "rack_fan_failure":
            idx = rack_targets(ev.target, sy.rack_name)
            self.rack_air_factor[idx] = (1.0 - ev.fraction) if start else 1.0
        elif ev.kind == "psu_failure":
            idx = rack_targets(ev.target, sy.rack_name)
            self.rack_failed_psus[idx] += ev.count if start else -ev.count
        elif ev.kind == "setpoint_change":
            idx = cdu_targets(ev.target, sy.cdu_name)
            if start:
                self._saved_setpoint = getattr(self, "_saved_setpoint", {})
                self._saved_setpoint[action.index] = self.cdu_setpoint[idx].copy()
                self.cdu_setpoint[idx] = ev.value
            else:
                self.cdu_setpoint[idx] = self._saved_setpoint.pop(action.index)
            if self.plant is not None:
                for i in idx:
                    self.plant.set_setpoint(cdu_supply=float(self.cdu_setpoint[i]), cdu=int(i))
        if start:
            self.first_event = min(self.first_event, action.time)
        self.event_log.append((action.time, action.what, ev.kind, ev.target or "plant"))

    def _plant_event(self, kind: str, start: bool, ev) -> None:
        plant = self.plant
        if kind == "chiller_trip":
            plant.trip_chiller() if start else plant.restore_chiller()
        elif kind == "dry_cooler_fan_failure":
            plant.fail_dry_cooler_fans(ev.fraction) if start else plant.restore_dry_cooler_fans()
        elif kind == "utility_outage":
            # IT rides on the UPS battery; chillers stop until the utility (or generator) returns.
            self.on_battery = start
            plant.trip_chiller() if start else plant.restore_chiller()

    def _boundaries(self):
        """CDU supply temperatures and the constant boundary heat input of every sled node."""
        sy = self.system
        if self.plant is not None:
            self.cdu_supply = self.plant.cdu_supply.copy()
            self.t_cold_aisle = float(self.plant.t_cold_aisle)
        else:
            self.cdu_supply = np.maximum(self.cdu_setpoint, self.t_facility + sy.cdu_approach)
        self.rack_supply = self.cdu_supply[sy.rack_cdu]
        self.sled_supply = self.rack_supply[sy.sled_rack]
        self.q_base = []
        for i, g in enumerate(sy.groups):
            b = self.integrator.boundary(i)
            q = np.zeros_like(b)
            q[:, g.cool] = b[:, g.cool] * self.sled_supply[g.sleds]
            q[:, g.air] = b[:, g.air] * self.t_cold_aisle + sy.sled_overhead[g.sleds] + self.fan_power[g.sleds]
            self.q_base.append(q)

    def _power_limits(self, rules) -> None:
        """Per-device power limits: the TDP, lowered by the scenario's ``power_limits`` rules."""
        from twin.workload.profile import select_devices

        sy, cat = self.system, self.loaded.catalog
        limit = sy.chip["tdp"].copy()
        floor = np.array([cat.chips[k].p_limit_min.si if cat.chips[k].p_limit_min else 0.0
                          for k in sy.device_kind])
        for i, rule in enumerate(rules):
            mask = select_devices(rule.select, sy)
            if not mask.any():
                raise FieldError(("power_limits", i, "select"), "selects no devices")
            new = np.full(sy.n_devices, rule.limit) if rule.limit is not None else rule.fraction * sy.chip["tdp"]
            low = mask & (new < floor)
            if low.any():
                j = int(np.argmax(low))
                raise FieldError(("power_limits", i), f"{new[j]:.0f} W is below the lowest power limit "
                                 f"{floor[j]:.0f} W of '{sy.device_kind[j]}'")
            limit[mask] = np.minimum(new[mask], sy.chip["tdp"][mask])
        sy.chip["p_limit"] = limit

    def _active(self, u):
        """Devices in the active state: held by a job, or with work (u > 0)."""
        held = (self.jobs.owner >= 0) if self.jobs is not None else False
        return (u > 0) | held

    def _device_power(self, u):
        """Device power for utilisation ``u`` (devices,) or (sub-steps, devices) [W].

        Within a step the power limit may be exceeded by at most the part's excursion (the
        firmware's fast protection clamps there); the power-limit governor brings the clock
        down for the next step.
        """
        c = self.system.chip
        on = ~self.tripped
        p = device_power(u * on, self.clock * on, self.t_die, self._active(u) & on, c)
        return np.minimum(p, c["power_excursion"] * c["p_limit"]) * on

    def _smooth(self, p_sub):
        """Apply the jobs' power floors and ramp limits; return the smoothed powers [W]."""
        jobs = self.jobs
        on = ~self.tripped
        p = np.maximum(p_sub, jobs.floor * on)
        if np.isfinite(jobs.ramp).any():
            limit = jobs.ramp * self.h_w
            prev = p[0] if self.p_prev is None else self.p_prev
            out = np.empty_like(p)
            for k in range(p.shape[0]):  # sequential in time; vectorised over devices
                prev = np.clip(p[k], prev - limit, prev + limit) * on
                out[k] = prev
            p = out
        self.p_prev = p[-1]
        return p

    def _stored_heat(self) -> float:
        """Σ C·T over all nodes [J] (relative to 0 degC)."""
        return float(sum((T * g.capacity).sum() for T, g in zip(self.T, self.system.groups)))

    def _settle(self, u0, iterations: int) -> None:
        """Node temperatures at steady state under utilisation ``u0`` with the present
        boundaries, iterating the leakage's temperature dependence to a fixed point."""
        sy = self.system
        for _ in range(iterations):
            p = self._device_power(u0)
            for i, g in enumerate(sy.groups):
                q = self.q_base[i].copy()
                q[:, : g.k] += p[g.devices]
                self.T[i] = self.integrator.steady_state(i, q)
                self.t_die[g.devices] = self.T[i][:, : g.k]

    def _initial_state(self):
        """Steady state under the first step's demand; with a plant, racks and plant settle
        together (the plant's supply temperatures feed the racks and their heat the plant)."""
        sy = self.system
        u0 = self.workload.rules.demand(0.0, self.h_w, 1)[0]
        self.t_die[:] = sy.chip["t_ref"]
        self._settle(u0, STEADY_ITERATIONS)
        if self.plant is not None:
            for _ in range(2):
                q_cdu, q_air = self._fluxes()
                q_air += self.p_network
                m = np.bincount(sy.rack_cdu, weights=sy.rack_sum(self.m_coolant), minlength=sy.cdu_name.size)
                self.plant.initialise(q_cdu, q_air, t=0.0, secondary_flow=m)
                p_dc = sy.rack_sum(sy.sled_sum(self._device_power(u0)) + sy.sled_overhead + self.fan_power)
                self._plant_inputs = np.concatenate([q_cdu, m, [q_air, float(p_dc.sum()) + self.p_network]])
                self._boundaries()
                self._settle(u0, STEADY_ITERATIONS)
        self.clock_power = power_limit_governor(sy.chip["p_limit"], u0, self.t_die, sy.chip)
        self.clock = np.minimum(self.clock_thermal, self.clock_power)
        self.totals.stored_start = self._stored_heat()

    # -- one step ----------------------------------------------------------------------------
    def step(self, u: np.ndarray) -> None:
        """Advance one thermal step.

        Parameters
        ----------
        u : ndarray, shape (n_sub, devices)
            Demanded utilisation in each workload sub-step [1]. Powers are computed per sub-step
            (for sub-second facility power); the thermal network gets their step mean, which
            keeps energy exact.
        """
        sy, h, st, tot = self.system, self.h, self.state, self.totals
        now = wallclock.perf_counter
        t0 = now()
        p_sub = self._device_power(u)
        if self.jobs is not None:
            raw = p_sub
            p_sub = self._smooth(p_sub)
            tot.e_smoothing += float((p_sub - raw).sum()) * self.h_w
        mean = (lambda a: a[0]) if self.n_sub == 1 else (lambda a: a.mean(axis=0))
        p_dev = mean(p_sub)
        p_sled_sub = np.add.reduceat(p_sub, sy.sled_device_start, axis=1) + (sy.sled_overhead + self.fan_power)
        p_dc_sub = np.add.reduceat(p_sled_sub, sy.rack_sled_start, axis=1)
        p_ac_sub = np.empty_like(p_dc_sub)
        for s, (loads, etas) in enumerate(sy.shelf_curves):
            sel = sy.shelf_members[s]
            p_ac_sub[:, sel] = shelf_input_power(p_dc_sub[:, sel], self.shelf_capacity[sel], loads, etas)
        p_dc = mean(p_dc_sub)
        p_ac = mean(p_ac_sub)
        loss = p_ac - p_dc
        p_sled = mean(p_sled_sub)

        t1 = now()
        t_cool = np.empty(sy.sled_name.size)
        t_air = np.empty(sy.sled_name.size)
        for i, g in enumerate(sy.groups):
            q = self.q_base[i].copy()
            q[:, : g.k] += p_dev[g.devices]
            self.T[i], fluid = self.integrator.step(i, self.T[i], q)
            self.t_die[g.devices] = self.T[i][:, : g.k]
            t_cool[g.sleds] = fluid[:, 0]
            t_air[g.sleds] = fluid[:, 1]

        m_c, m_a = self.m_coolant, self.m_air
        q_liq_sled = m_c * CP_WATER * (t_cool - self.sled_supply)
        q_air_sled = m_a * CP_AIR * (t_air - self.t_cold_aisle)
        rack_m_c = sy.rack_sum(m_c)
        rack_m_a = sy.rack_sum(m_a)
        q_liq = sy.rack_sum(q_liq_sled)
        q_air = sy.rack_sum(q_air_sled) + loss
        with np.errstate(invalid="ignore", divide="ignore"):
            t_return = np.where(rack_m_c > 0, self.rack_supply + q_liq / (rack_m_c * CP_WATER), np.nan)
        t_air_out = self.t_cold_aisle + q_air / (rack_m_a * CP_AIR)

        n_cdu = sy.cdu_name.size
        cdu_flow = np.bincount(sy.rack_cdu, weights=rack_m_c, minlength=n_cdu)
        cdu_q = np.bincount(sy.rack_cdu, weights=q_liq, minlength=n_cdu)
        with np.errstate(invalid="ignore", divide="ignore"):
            cdu_return = np.where(cdu_flow > 0, self.cdu_supply + cdu_q / (cdu_flow * CP_WATER), np.nan)
        p_pump = pump_power(cdu_flow, sy.cdu_design_flow, sy.cdu_pump_power)  # affinity law

        p_it_sub = p_ac_sub.sum(axis=1) + self.p_network  # network racks: air-cooled, heat to the room
        p_it = float(mean(p_it_sub))
        cdu_supply_used = self.cdu_supply
        cold_aisle_used = self.t_cold_aisle
        ps = None
        if self.plant is not None:
            ps = self._plant_step(cdu_return, cdu_flow, float(q_air.sum()) + self.p_network, p_it)
            p_pump = ps.p_pump
            p_cooling = float(ps.p_cooling)
        else:
            p_cooling = float(p_pump.sum())
        p_facility, p_ups_in, loss_ups, loss_tr = self._delivery(p_it, p_cooling)
        p_loss_total = float(loss.sum()) + loss_ups + loss_tr
        fac_over_it = p_facility - p_it  # the facility's draw beyond the racks (cooling, losses)

        # Controllers act on the state at the end of the step, for the next one.
        t2 = now()
        clock_used = self.clock
        throttled = self.clock_thermal < 1.0
        self.clock_thermal = thermal_governor(self.clock_thermal, self.t_die, sy.chip["t_throttle"],
                                              sy.chip["throttle_hysteresis"], h)
        # Power limit: the clock that keeps the step's highest demand at or under the limit.
        self.clock_power = power_limit_governor(sy.chip["p_limit"], u.max(axis=0), self.t_die, sy.chip)
        was_tripped = self.tripped
        self.tripped = shutdown_trip(self.t_die, sy.chip["t_shutdown"], self.tripped)
        capped = self.rack_cap < 1.0
        if np.isfinite(sy.rack_power_limit).any() or np.isfinite(sy.row_power_limit).any():
            self.rack_cap = cap_governor(self.rack_cap, p_ac, sy.rack_power_limit, h)
            row_p = np.bincount(sy.rack_row, weights=p_ac, minlength=len(sy.row_names))
            self.row_cap = cap_governor(self.row_cap, row_p, sy.row_power_limit, h)
            cap = np.minimum(self.rack_cap, self.row_cap[sy.rack_row])
            self.clock = np.minimum(np.minimum(self.clock_thermal, self.clock_power), cap[sy.device_rack])
            capped = cap < 1.0
            self.capped_rack_seconds += capped.sum() * h
        else:
            self.clock = np.minimum(self.clock_thermal, self.clock_power)
        if self.first_throttle == np.inf and throttled.any():
            self.first_throttle = self.time
        if self.first_trip == np.inf and self.tripped.any() and not was_tripped.any():
            self.first_trip = self.time + h

        t3 = now()
        # State for the recorder and exporters: (entities,) per step, (n_sub, entities) per sub-step.
        st.facility_p_it = p_it_sub[:, None]
        st.facility_p_cooling = np.array([p_cooling])
        st.facility_p_facility = (p_it_sub + fac_over_it)[:, None]
        st.facility_p_loss = np.array([p_loss_total])
        st.facility_p_network = np.array([self.p_network])
        st.facility_t_cold_aisle = np.array([cold_aisle_used])
        st.cdu_t_supply, st.cdu_t_return, st.cdu_flow = cdu_supply_used, cdu_return, cdu_flow
        st.cdu_p_pump, st.cdu_q = p_pump, cdu_q
        if ps is None:
            st.facility_t_facility_supply = np.array([self.t_facility])
        else:
            st.facility_t_facility_supply = np.array([ps.t_facility_supply])
            for name in PLANT_FACILITY_VARIABLES:
                setattr(st, f"facility_{name}", np.array([float(getattr(ps, name))]))
            st.facility_p_ups_loss = np.array([loss_ups])
            st.facility_p_transformer_loss = np.array([loss_tr])
            st.cdu_q = ps.q
            st.cdu_valve = ps.valve
            # Boundaries for the next step come from the plant (when it has just updated).
            flows_changed = not np.array_equal(self.plant.secondary_flow_factor, self._plant_flow_factor)
            self._plant_flow_factor = self.plant.secondary_flow_factor.copy()
            if flows_changed:
                self._apply_flows()
            elif self._plant_updated:
                self._boundaries()
            self.water += ps.water * h
            if self.on_battery and self.battery_left <= 0 and not np.isfinite(self.ride_through):
                self.ride_through = self.time + h - self.first_event
                self.tripped[:] = True  # the UPS battery is empty: everything goes dark
        st.rack_p_ac, st.rack_p_dc = p_ac_sub, p_dc_sub
        st.rack_t_coolant_supply = np.where(rack_m_c > 0, self.rack_supply, np.nan)
        st.rack_t_coolant_return = t_return
        st.rack_t_air_in = np.full(sy.n_racks, self.t_cold_aisle)
        st.rack_t_air_out = t_air_out
        st.rack_q_liquid, st.rack_q_air = q_liq, q_air
        st.rack_throttled = sy.rack_sum(sy.sled_sum(throttled.astype(float))) / self.rack_devices
        st.rack_capped = capped
        st.sled_p_dc = p_sled
        st.sled_t_coolant_out = np.where(m_c > 0, t_cool, np.nan)
        st.sled_t_air_out = t_air
        st.device_u, st.device_p, st.device_t_die = u, p_sub, self.t_die
        st.device_clock, st.device_throttled = clock_used, throttled
        if self.jobs is not None:
            self.jobs.account(p_dev, h)
            js = self.jobs.jobs
            st.job_progress = np.array([j.progress for j in js])
            st.job_throughput = np.array([j.rate for j in js])
            st.job_tokens = np.array([j.tokens for j in js])
            st.job_p = np.array([j.power for j in js])
            st.job_state = np.array([j.state for j in js], dtype=float)
        self.recorder.add(st)

        self.rack_energy += p_ac * h
        tot.e_device += p_dev.sum() * h
        tot.e_dc += p_dc.sum() * h
        tot.e_ac += p_it * h
        tot.e_loss += loss.sum() * h
        tot.e_liquid += q_liq.sum() * h
        tot.e_air += (q_air.sum() + self.p_network) * h
        tot.e_cooling += p_cooling * h
        tot.e_facility += p_facility * h
        tot.p_facility_peak = max(tot.p_facility_peak, float(p_it_sub.max()) + fac_over_it)
        tot.p_rack_peak = max(tot.p_rack_peak, float(p_ac_sub.max()))
        np.maximum(self.t_die_peak, self.t_die, out=self.t_die_peak)
        tot.t_die_max = max(tot.t_die_max, self.t_die.max())
        n_thr = throttled.sum()
        tot.throttled_device_seconds += n_thr * h
        if n_thr:
            self.ever_throttled |= throttled
        tot.steps += 1
        self.step_index += 1
        t4 = now()
        tm = self.timing
        tm["power"] += t1 - t0
        tm["integration"] += t2 - t1
        tm["controllers"] += t3 - t2
        tm["recording"] += t4 - t3

    @property
    def rack_devices(self) -> np.ndarray:
        if not hasattr(self, "_rack_devices"):
            self._rack_devices = np.bincount(self.system.device_rack, minlength=self.system.n_racks)
        return self._rack_devices

    @property
    def time(self) -> float:
        """Simulated seconds since the start."""
        return self.step_index * self.h

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
        try:
            while self.step_index < self.n_steps:
                if self.events.first_time < self.time + self.h:
                    for action in self.events.due(self.time + self.h):
                        self._apply_event(action)
                    self._apply_flows()
                tw = wallclock.perf_counter()
                u, repair = self.workload.demand(self.time, self.clock, self.tripped, self.t_die)
                self.ever_used |= u.max(axis=0) > 0
                self.timing["workload"] += wallclock.perf_counter() - tw
                if repair is not None and repair.size:
                    self.tripped[repair] = False
                    self.clock_thermal[repair] = 1.0
                    self.clock_power[repair] = 1.0
                    self.clock[repair] = 1.0
                self.step(u)
                if pace is not None:
                    pace(self.time)
                if progress is not None and self.step_index % 64 == 0:
                    now = wallclock.perf_counter()
                    if now - last > 0.2:
                        last = now
                        progress(self.step_index, self.n_steps)
        finally:
            self.totals.stored_end = self._stored_heat()
            self.totals.wall_seconds = wallclock.perf_counter() - t0
            self.totals.devices_throttled = int(self.ever_throttled.sum())
            self.totals.devices_tripped = int(self.tripped.sum())
            if progress is not None:
                progress(self.step_index, self.n_steps)
        return self.totals
