"""A Gymnasium environment over the twin: one step is one control interval of a scenario.

:class:`FacilityEnv` builds a :class:`~twin.sim.driver.Simulation` from any scenario and steps it
a control interval (``control.interval``, default 5 min) at a time. Actions set the controls the
system's components declare (set-points, limits, modes, job admission and placement), held
through the interval; observations are the declared outputs an operator's telemetry shows, read
at the interval's end (powers as exact interval means from the energy counters, the dies as
their interval peak: :class:`~twin.control.spaces.Observation`); the reward is minus the
interval's cost (:mod:`twin.control.reward`) and ``info`` holds the interval's KPIs, both
read from the simulation's totals at the interval's two ends (the environment does nothing
per thermal step). An episode is the scenario's run: it is truncated at the
scenario's end and never terminated. With every action holding the values in force
(:meth:`FacilityEnv.hold_action`), an episode is the plain ``twin run`` step for step.
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded

from twin.control.reward import IntervalAccount
from twin.control.spaces import IntervalPeak, build_actions, build_observations
from twin.scenario.control import INTERVAL, ControlSpec
from twin.scenario.errors import FieldError
from twin.scenario.loader import LoadedScenario, load_scenario
from twin.scenario.model import Record
from twin.sim.driver import Simulation

#: Pristine simulations kept per scenario seed (a reset copies one instead of building it).
PRISTINE_CACHE = 4
#: No recording: an environment needs no dataset (``record=True`` keeps the scenario's).
NO_RECORD = Record(facility="off", cdu="off", rack="off", sled="off", device="off", job="off")


class FacilityEnv(gym.Env):
    """The twin as a Gymnasium environment (registered as ``twin/Facility-v0``).

    Parameters
    ----------
    scenario : str, Path or LoadedScenario
        The scenario file (or a loaded one); its ``control:`` section declares the interval,
        actions, observations and reward (:mod:`twin.scenario.control`); without one, every
        declared control is an action and the operator telemetry is observed.
    normalize_actions : bool
        Continuous actions in [−1, 1] mapped linearly onto their bounds, for learning libraries;
        otherwise in the controls' own units.
    record : bool
        Record the scenario's dataset as ``twin run`` does (:meth:`dataset`); off by default.
    solver : {"fast", "reference"}
    overrides : dict, optional
        Top-level scenario values merged in when loading a file (as ``twin run --duration``).

    Notes
    -----
    Out-of-range continuous actions are clipped to their bounds (counted in ``info["clipped"]``)
    or, with ``control.out_of_range: reject``, refused with a ValueError naming the control, the
    entity and the bounds; a discrete action outside its choices, a non-finite value or an
    unknown key is always refused. A key left out of the action dict holds its value.
    ``reset(seed=s)`` runs the scenario with seed ``s`` (jobs' failures and arrivals);
    ``reset()`` with the scenario's own seed.
    """

    metadata = {"render_modes": []}

    def __init__(self, scenario, *, normalize_actions: bool = False, record: bool = False,
                 solver: str = "fast", overrides: dict | None = None):
        loaded = scenario if isinstance(scenario, LoadedScenario) else load_scenario(scenario, overrides)
        if not record:
            loaded = replace(loaded, scenario=loaded.scenario.model_copy(update={"record": NO_RECORD}))
        self.loaded = loaded
        self.record = record
        sc = loaded.scenario
        self.spec_control = sc.control or ControlSpec()
        self.solver = solver
        self.normalize_actions = normalize_actions
        self._pristine: dict[int, tuple[Simulation, dict]] = {}
        sim = self._pristine_for(sc.seed)[0]
        try:
            self.actions = build_actions(sim.components, sim.system, sim.jobs, sc)
            self.observations = build_observations(sim.state, sim.system, sim.jobs, sc)
            self._peak = IntervalPeak()
            self.k = self._interval_steps(sim)
        except FieldError as exc:
            raise loaded.locate(exc) from None
        self._index = {a.key: sim.components.index(a.component) for a in self.actions}
        self.account = IntervalAccount(sim, self.spec_control.reward, sc.electricity_price)
        self.action_space = spaces.Dict({a.key: self._action_space(a) for a in self.actions})
        self.observation_space = spaces.Dict(self._observation_spaces())
        self.metadata = {**type(self).metadata, **self._describe()}
        chips = loaded.catalog.chips
        #: Per device kind: throttle point [degC] and whether it is liquid-cooled (for controllers).
        self.device_kinds = {str(k): {"t_throttle": chips[k].t_throttle.si, "liquid": chips[k].cooling == "liquid"}
                             for k in np.unique(sim.system.device_kind.astype(str))}
        self.sim: Simulation | None = None
        self._pristine[sc.seed] = (sim, self._probe(sim))

    # -- building ----------------------------------------------------------------------------
    def _interval_steps(self, sim) -> int:
        if self.spec_control.interval is None:
            return max(1, math.ceil(INTERVAL / sim.h - 1e-9))
        k = self.spec_control.interval / sim.h
        if abs(k - round(k)) > 1e-9 * k or round(k) < 1:
            raise FieldError(("control", "interval"), f"{self.spec_control.interval:g} s is not a whole "
                                                      f"number of thermal steps of {sim.h:g} s")
        return int(round(k))

    def _action_space(self, a) -> spaces.Space:
        if a.discrete:
            n = len(a.control.choices)
            return spaces.Discrete(n) if a.size == 1 else spaces.MultiDiscrete(np.full(a.size, n))
        if self.normalize_actions:
            return spaces.Box(-1.0, 1.0, shape=(a.size,), dtype=np.float64)
        return spaces.Box(a.low, a.high, shape=(a.size,), dtype=np.float64)

    def _observation_spaces(self) -> dict:
        out = {}
        for o in self.observations:
            lo, hi = o.bounds
            out[o.key] = spaces.Box(lo, hi, shape=(o.entities.size,), dtype=np.float64)
        for a in self.actions:
            c, n = a.control, a.entities.size
            lo = np.broadcast_to(np.asarray(c.low, dtype=float), (n,))
            hi = np.broadcast_to(np.asarray(c.high, dtype=float), (n,))
            out[a.key] = spaces.Box(lo, hi, shape=(n,), dtype=np.float64)
        return out

    def _describe(self) -> dict:
        """Units, long names and entity names of every action and observation key."""
        units, names, entities = {}, {}, {}
        for o in self.observations:
            units[o.key], names[o.key] = o.var.units, o.var.long_name
            entities[o.key] = [str(e) for e in o.entities]
        for a in self.actions:
            units[a.key], names[a.key] = a.control.units, a.control.long_name
            entities[a.key] = [str(e) for e in a.entities]
        choices = {a.key: list(a.control.choices) for a in self.actions if a.discrete}
        return {"units": units, "long_names": names, "entities": entities, "choices": choices,
                "interval_s": self.k * self._pristine[self.loaded.scenario.seed][0].h}

    def _pristine_for(self, seed: int) -> tuple[Simulation, dict | None]:
        if seed not in self._pristine:
            loaded = self.loaded
            if seed != loaded.scenario.seed:
                loaded = replace(loaded, scenario=loaded.scenario.model_copy(update={"seed": seed}))
            sim = Simulation(loaded, solver=self.solver)
            if len(self._pristine) >= PRISTINE_CACHE:
                self._pristine.pop(next(iter(self._pristine)))
            self._pristine[seed] = (sim, self._probe(sim) if hasattr(self, "observations") else None)
        return self._pristine[seed]

    def _probe(self, sim) -> dict:
        """The observation at the start: the first thermal step's values (taken on a copy)."""
        probe = _copy_sim(sim)
        for o in self.observations:
            o.start(probe)
        peak = IntervalPeak()
        peak.open(probe)
        probe.advance(1, record=self.record)
        peak.close(probe)
        return self._observe(probe, peak.device)

    # -- Gymnasium API ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        scenario_seed = self.loaded.scenario.seed if seed is None else int(seed)
        sim, first = self._pristine_for(scenario_seed)
        self.sim = _copy_sim(sim)
        return copy.deepcopy(first), {"time_s": 0.0}

    def step(self, action):
        sim = self.sim
        if sim is None or sim.step_index >= sim.n_steps:
            raise ResetNeeded("call reset() before step() (and after the episode is truncated)")
        clipped = self._apply(action)
        acc, peak = self.account, self._peak
        acc.start(sim)
        for o in self.observations:
            o.start(sim)
        peak.open(sim)
        try:  # the interval's thermal steps, as `twin run` steps them (BLAS on its threads)
            sim.advance(self.k, record=self.record)
        finally:
            peak.close(sim)
        obs = self._observe(sim, peak.device)
        truncated = sim.step_index >= sim.n_steps
        if truncated:
            sim.run()  # no steps left: finalises the components and the run's totals
        info = acc.kpis(sim, peak.max)
        info["clipped"] = clipped
        info["time_s"] = sim.time
        return obs, -info["cost"], False, truncated, info

    # -- actions -------------------------------------------------------------------------------
    def _apply(self, action) -> int:
        """Set the controls of ``action``; returns how many values were clipped."""
        if not isinstance(action, dict):
            raise TypeError(f"an action is a dict of control keys to values, got {type(action).__name__}")
        unknown = set(action) - set(self._index)
        if unknown:
            raise ValueError(f"unknown action keys {sorted(unknown)} (known: {', '.join(self._index)})")
        clipped = 0
        for a in self.actions:
            if a.key not in action:
                continue
            values, n = self._physical(a, action[a.key])
            clipped += n
            if a.shared:
                values = np.broadcast_to(values, a.entities.shape)
            comp = self.sim.components[self._index[a.key]]
            if not np.array_equal(values, comp.control(a.key)):
                comp.set_control(a.key, values)
        return clipped

    def _physical(self, a, value) -> tuple[np.ndarray, int]:
        """Values of action ``a`` in its control's units, checked; and the count clipped."""
        v = np.asarray(value)
        if v.size not in (1, a.size):
            raise ValueError(f"{a.key}: {v.size} values for {a.size}")
        if a.discrete:
            n = len(a.control.choices)
            if not np.issubdtype(v.dtype, np.integer) or ((v < 0) | (v >= n)).any():
                raise ValueError(f"{a.key}: {v.tolist()} is not one of 0…{n - 1} ({', '.join(a.control.choices)})")
            return np.broadcast_to(v.astype(np.int64).reshape(-1), (a.size,)).copy(), 0
        v = np.broadcast_to(v.astype(float).reshape(-1), (a.size,))
        if not np.isfinite(v).all():
            raise ValueError(f"{a.key}: {v.tolist()} is not finite")
        lo, hi = (-1.0, 1.0) if self.normalize_actions else (a.low, a.high)
        out = (v < lo) | (v > hi)
        if out.any():
            if self.spec_control.out_of_range == "reject":
                i = int(np.argmax(out))
                who = "all" if a.shared else a.entities[i]
                lo_i, hi_i = np.broadcast_to(lo, (a.size,))[i], np.broadcast_to(hi, (a.size,))[i]
                units = "(normalised)" if self.normalize_actions else a.control.units
                raise ValueError(f"{a.key}[{who}]: {v[i]:g} is outside {lo_i:g}…{hi_i:g} {units} "
                                 "(control.out_of_range: reject)")
            v = np.clip(v, lo, hi)
        if self.normalize_actions:
            v = a.low + (v + 1.0) * 0.5 * (a.high - a.low)
        return v, int(out.sum())

    def hold_action(self) -> dict:
        """The action that holds every control at its value in force (the scenario's fixed
        set-points at the start): the no-op policy."""
        if self.sim is None:
            raise ResetNeeded("call reset() before hold_action()")
        out = {}
        for a in self.actions:
            v = self.sim.components[self._index[a.key]].control(a.key)[: a.size]
            if a.discrete:
                out[a.key] = np.int64(v[0]) if a.size == 1 else v.astype(np.int64)
                continue
            v = np.clip(v.astype(float), a.low, a.high)
            if self.normalize_actions:
                span = a.high - a.low
                v = np.where(span > 0, 2.0 * (v - a.low) / span - 1.0, 0.0)
            out[a.key] = v
        return out

    # -- observations --------------------------------------------------------------------------
    def _observe(self, sim, peak: np.ndarray | None) -> dict:
        out = {o.key: o.value(sim, peak) for o in self.observations}
        for a in self.actions:
            c = a.control
            v = sim.components[self._index[a.key]].control(a.key).astype(float)
            out[a.key] = np.clip(v, c.low, c.high)
        return out

    # -- models for controllers ------------------------------------------------------------------
    def fork(self) -> FacilityEnv:
        """An independent copy of this environment in its current state (the simulation state
        is copied): a model-predictive controller rolls candidate actions out on forks."""
        if self.sim is None:
            raise ResetNeeded("call reset() before fork()")
        clone = copy.copy(self)
        clone.sim = _copy_sim(self.sim)
        clone.observations = copy.deepcopy(self.observations)
        clone._peak = IntervalPeak()
        clone.account = copy.deepcopy(self.account)
        clone._np_random = copy.deepcopy(self._np_random)
        return clone

    def dataset(self):
        """The run so far as the result DataTree of ``twin run`` (needs ``record=True``)."""
        from twin.export.dataset import build_tree

        return build_tree(self.sim)

    def kpis(self) -> dict:
        """The run's KPIs so far, as ``twin run`` reports them (:func:`twin.export.dataset.summary`)."""
        from twin.export.dataset import summary

        return summary(self.sim)


def _copy_sim(sim: Simulation) -> Simulation:
    """A deep copy of a simulation sharing what never changes while it runs (scenario,
    catalogue, built system, weather)."""
    shared = [sim.loaded, sim.scenario, sim.loaded.catalog, sim.system, sim.system.groups]
    if sim.plant is not None:
        shared.append(sim.plant.weather)
    return copy.deepcopy(sim, {id(x): x for x in shared})
