"""Actions and observations of :class:`~twin.control.env.FacilityEnv`, built from what the
system's components declare.

An action is a control (:class:`~twin.sim.component.Control`) some component declares, offered
with the bounds the scenario's ``control.actions`` give; an observation is a variable
(:class:`~twin.sim.component.Var`) some component writes, reduced over the control interval.
Nothing here names a piece of equipment: a component that declares a control or an output is
controllable or observable as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.scenario.errors import FieldError
from twin.scenario.model import Scenario
from twin.sim.component import Control, Var, step_mean
from twin.units import DIMENSIONS, QuantityError, parse_quantity

#: Observations an operator's telemetry shows, used when the scenario lists none (those the
#: system's components write; the control values in force are added to them).
TELEMETRY = (
    "facility.p_it", "facility.p_facility", "facility.p_cooling", "facility.pue",
    "facility.p_chiller", "facility.economiser", "facility.t_outdoor", "facility.t_wet_bulb", "facility.t_facility_supply",
    "facility.t_facility_return", "facility.t_cold_aisle", "cdu.t_supply", "cdu.t_return", "cdu.q",
    "rack.p_ac", "rack.capped", "device.t_die", "device.throttled", "device.clock", "job.progress",
    "job.state",
)
#: Observation bounds by UDUNITS units (values outside physics never occur; finite so that
#: learning libraries can normalise). Undefined values (e.g. a CDU without flow has no return
#: temperature) are given as the lower bound.
UNIT_BOUNDS = {
    "degC": (-100.0, 1000.0),  # [degC]
    "W": (0.0, 1e15),  # [W]
    "kg s-1": (0.0, 1e9),
    "1": (0.0, 1e15),
    "s-1": (0.0, 1e15),
}
OTHER_BOUNDS = (-1e15, 1e15)


def _entities(system, jobs) -> dict[str, np.ndarray]:
    """Entity names of each control or variable group."""
    names = {"facility": np.array(["facility"], dtype=object), "cdu": system.cdu_name,
             "rack": system.rack_name, "row": np.array(system.row_names, dtype=object),
             "sled": system.sled_name, "device": system.device_name}
    names["job"] = jobs.names if jobs is not None else np.zeros(0, dtype=object)
    return names


def _udunits_dimension(units: str) -> str:
    """The :data:`twin.units.DIMENSIONS` name whose UDUNITS label is ``units``."""
    return next(d for d, (_, _, label) in DIMENSIONS.items() if label == units)


@dataclass
class Action:
    """A control offered as an action: its component, bounds [units] and entities."""

    control: Control
    component: object
    entities: np.ndarray
    low: np.ndarray
    high: np.ndarray
    shared: bool

    @property
    def key(self) -> str:
        return self.control.key

    @property
    def discrete(self) -> bool:
        return self.control.choices is not None

    @property
    def size(self) -> int:
        return 1 if self.shared else self.entities.size


def _bound(value, spec_value, units: str, loc: tuple) -> np.ndarray:
    """The scenario's bound (a quantity in the control's units) inside the equipment's range."""
    if spec_value is None:
        return np.asarray(value, dtype=float)
    try:
        if isinstance(spec_value, str):
            v = parse_quantity(spec_value, _udunits_dimension(units))
        elif units == "1":
            v = float(spec_value)
        else:
            raise QuantityError(f"{spec_value!r} has no unit; write it in {units}")
    except (QuantityError, StopIteration) as exc:
        raise FieldError(loc, str(exc)) from None
    return np.full(np.shape(value), v) if np.ndim(value) else np.asarray(v)


def build_actions(components, system, jobs, scenario: Scenario) -> list[Action]:
    """The actions of a system: the scenario's ``control.actions``, or every declared control."""
    declared = {c.key: (c, comp) for comp in components for c in getattr(comp, "controls", ())}
    entities = _entities(system, jobs)
    spec = scenario.control
    wanted = spec.actions if spec is not None and spec.actions is not None else None
    out = []
    items = [(i, a.control, a) for i, a in enumerate(wanted)] if wanted is not None else \
        [(None, key, None) for key in declared]
    for i, key, a in items:
        loc = ("control", "actions", i)
        if key not in declared:
            raise FieldError(loc + ("control",), f"no component of this system declares the control "
                                                 f"'{key}' (declared: {', '.join(declared) or 'none'})")
        control, comp = declared[key]
        n = entities[control.group].size
        if n == 0:
            if a is not None:
                raise FieldError(loc + ("control",), f"'{key}': this system has no {control.group} to control")
            continue
        low = np.broadcast_to(np.asarray(control.low, dtype=float), (n,))
        high = np.broadcast_to(np.asarray(control.high, dtype=float), (n,))
        if a is not None and not control.choices:
            low = np.broadcast_to(_bound(low, a.low, control.units, loc + ("low",)), (n,))
            high = np.broadcast_to(_bound(high, a.high, control.units, loc + ("high",)), (n,))
            eq_low = np.broadcast_to(np.asarray(control.low, dtype=float), (n,))
            eq_high = np.broadcast_to(np.asarray(control.high, dtype=float), (n,))
            if (low < eq_low).any() or (high > eq_high).any() or (low >= high).any():
                raise FieldError(loc, f"'{key}': bounds {low.min():g}…{high.max():g} {control.units} must "
                                      f"lie inside {eq_low.min():g}…{eq_high.max():g} {control.units} "
                                      "with low below high")
        elif a is not None and (a.low is not None or a.high is not None):
            raise FieldError(loc, f"'{key}' is a choice ({', '.join(control.choices)}): it has no bounds")
        shared = bool(a.shared) if a is not None else control.group == "facility"
        if shared:
            low, high = low.max(keepdims=True), high.min(keepdims=True)
        out.append(Action(control, comp, entities[control.group], low.copy(), high.copy(), shared))
    return out


# ---------------------------------------------------------------------------------------------
# Observations
# ---------------------------------------------------------------------------------------------
@dataclass
class Observation:
    """A declared variable as read at the end of the control interval.

    Over the interval: a power with an energy counter is its exact mean (energy difference over
    the interval's time); the die temperature the highest it reached (the simulation's running
    peak of each die, read over the interval: :class:`IntervalPeak`); everything else its value
    at the interval's end (the last thermal step's, a mean over its workload sub-steps). Over
    devices, then, per kind: temperatures the hottest, powers the sum, others the mean. A ratio
    (``pue``) is the ratio of its two variables' interval values. Nothing is read between the
    interval's ends, so an observation costs nothing per thermal step.
    """

    var: Var
    entities: np.ndarray
    over_time: str  # "counter" | "peak" | "last" | "ratio"
    by_kind: tuple | None = None  # (order, starts, ufunc or None for the mean) for device variables
    parts: tuple | None = None  # a ratio's (numerator, denominator) observations
    t0: float = 0.0
    e0: np.ndarray | None = field(default=None, repr=False)

    @property
    def key(self) -> str:
        return self.var.key

    @property
    def bounds(self) -> tuple[float, float]:
        return UNIT_BOUNDS.get(self.var.units, OTHER_BOUNDS)

    def start(self, sim) -> None:
        self.t0 = sim.time
        if self.over_time == "counter":
            e = sim.totals.energy.get(self.var.key)
            n = self.entities.size if self.by_kind is None else self.by_kind[0].size
            self.e0 = np.zeros(n) if e is None else e.copy()
        for p in self.parts or ():
            p.start(sim)

    def _interval(self, sim, peak: np.ndarray | None) -> np.ndarray:
        """Per entity of the variable's group, over the interval."""
        if self.over_time == "counter":
            e = sim.totals.energy.get(self.var.key)
            dt = sim.time - self.t0
            return (e - self.e0) / dt if e is not None and dt > 0 else np.full(self.e0.size, np.nan)
        if self.over_time == "peak" and peak is not None:
            return peak
        return step_mean(np.asarray(sim.state[self.var.key], dtype=float))

    def value(self, sim, peak: np.ndarray | None = None) -> np.ndarray:
        """The observation; ``peak`` is each die's highest temperature over the interval [degC]
        (:attr:`IntervalPeak.device`), else the die temperatures at its end are used."""
        if self.parts is not None:
            num, den = (p.value(sim, peak) for p in self.parts)
            with np.errstate(invalid="ignore", divide="ignore"):
                out = np.where(den > 0, num / den, np.nan)
        else:
            out = np.asarray(self._interval(sim, peak), dtype=float)
            if self.by_kind is not None:
                order, starts, how = self.by_kind
                if how is None:
                    counts = np.diff(np.append(starts, order.size))
                    out = np.add.reduceat(out[order], starts) / counts
                else:
                    out = how.reduceat(out[order], starts)
        lo, hi = self.bounds
        out = np.minimum(np.maximum(out, lo), hi)  # ±inf to the bounds; NaN stays NaN …
        out[np.isnan(out)] = lo  # … and is given as the lower bound
        return out


class IntervalPeak:
    """The highest temperature each die reaches over a control interval, read from the
    simulation's own running peak (``Simulation.t_die_peak``, kept by the rack thermal model
    after every thermal step) with nothing done per step.

    :meth:`open` sets the running peak aside and starts it afresh; :meth:`close` reads the
    interval's peak (:attr:`device`, and :attr:`max` over every die) and puts back the maximum
    of the two, which is the run's peak exactly as if nothing had been set aside.
    """

    def __init__(self):
        self.run: np.ndarray | None = None
        self.device: np.ndarray | None = None
        self.max = -np.inf

    def open(self, sim) -> None:
        peak = sim.t_die_peak
        self.run = peak.copy()
        peak.fill(-np.inf)

    def close(self, sim) -> None:
        peak = sim.t_die_peak
        self.device = peak.copy()
        self.max = float(self.device.max()) if self.device.size else -np.inf
        np.maximum(peak, self.run, out=peak)
        self.run = None


def _over_time(var: Var) -> str:
    if var.counter is not None:
        return "counter"
    if var.key == "device.t_die":
        return "peak"
    return "last"


def _by_kind(var: Var, kinds: np.ndarray) -> tuple:
    """(order, starts, reduce) grouping devices by kind, and the kinds in that order."""
    order = np.argsort(kinds, kind="stable")
    names, starts = np.unique(kinds[order], return_index=True)
    how = np.maximum if var.units == "degC" else np.add if var.units == "W" else None
    return (order, starts, how), names.astype(object)


def build_observations(state, system, jobs, scenario: Scenario) -> list[Observation]:
    """The observations: the scenario's ``control.observations``, or the operator telemetry
    (those of :data:`TELEMETRY` this system's components write)."""
    spec = scenario.control
    listed = spec.observations if spec is not None and spec.observations is not None else None
    keys = listed if listed is not None else [k for k in TELEMETRY if k in state.vars]
    entities = _entities(system, jobs)
    out = []
    for i, key in enumerate(keys):
        var = state.vars.get(key)
        if var is None:
            written = ", ".join(sorted(k for k, v in state.vars.items() if v.record))
            raise FieldError(("control", "observations", i),
                             f"no component of this system writes '{key}' (written: {written})")
        if entities[var.group].size == 0:
            continue
        if var.ratio is not None:
            part_vars = [state.vars[f"{var.group}.{n}"] for n in var.ratio]
            parts = tuple(Observation(v, entities[var.group], _over_time(v)) for v in part_vars)
            out.append(Observation(var, entities[var.group], "ratio", parts=parts))
        elif var.group == "device":
            by_kind, kinds = _by_kind(var, system.device_kind.astype(str))
            out.append(Observation(var, kinds, _over_time(var), by_kind=by_kind))
        else:
            out.append(Observation(var, entities[var.group], _over_time(var)))
    return out
