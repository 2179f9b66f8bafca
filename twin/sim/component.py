"""Components: the parts of the twin that compute, with declared inputs and outputs.

A component is a plain Python object (no base class is required; :class:`Component` gives the
defaults) with

``inputs: tuple[str, ...]``
    The keys (``"group.name"``) of the variables it reads from the :class:`State`; each is
    defined by the component that writes it (checked when the system is built).
``outputs: tuple[Var, ...]``
    What it writes. It is the only writer of each (checked when the system is built), so every
    quantity has one definition: the dataset, the live metrics, the backfill and the KPIs read it.
``every: int``
    Thermal steps between its updates. A component with ``every = k`` steps on the first step
    of each block of k steps, over the block (``dt = k·h``), on the means of its inputs over
    the k steps up to and including this one (the steps so far at the start); its outputs are
    held through the block. With k = 1 that is every step on that step's inputs. Inputs that
    components of the same rate write are read as they are, not averaged (equipment of one
    plant, stepping together, hands its results on within the step).
``events: tuple[str, ...]``
    The event kinds it owns; ``apply(action)`` is called for each of their actions.
``controls: tuple[Control, ...]``
    The inputs an operator or a controller may set between steps (set-points, limits, modes),
    each with units and bounds; ``control(key)`` reads the values in force and
    ``set_control(key, values)`` writes them (:mod:`twin.control` builds its action space from
    these, so equipment that declares a control becomes controllable without changing it).
``initialise(state)``, ``step(t, dt, state)``, ``apply(action)``, ``finalise(state)``

Equipment of the facility plant also has a ``plant_stage`` (a number: where it steps within a
plant step, lowest first) and ``from_plant(plant)`` (builds it from the plant's scenario section
and catalogue, or gives None when the scenario has none); :mod:`twin.cooling.equipment` finds
such classes in their modules, so a new piece of equipment is its module and its catalogue entry.

Variables that are not recorded (``record=False``) carry internal coupling between components,
e.g. boundaries for the next step, or what one piece of equipment hands the next within a step
(a number, or a dict of them). A recorded variable's value is an ndarray of its entities
(facility: one), or, for ``per_substep`` variables, of shape (workload sub-steps, entities).
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter

import numpy as np

#: Entity levels (dataset groups) in output order.
GROUPS = ("facility", "cdu", "rack", "sled", "device", "job")


@dataclass(frozen=True)
class Var:
    """A declared quantity: dataset group, name, UDUNITS units and long name.

    Parameters
    ----------
    group : str
        Entity level (one of :data:`GROUPS`); the variable has one value per entity.
    name : str
        Its one name (DESIGN.md names table), the same in the dataset and the metrics.
    units : str
        UDUNITS string ("W", "degC", "1", "kg s-1").
    long_name : str
        What it is, for the dataset attribute, the Prometheus help and the README table.
    per_substep : bool
        Given per workload sub-step, shape (n_sub, entities), for sub-second detail.
    record : bool
        Recorded in the dataset (False: internal coupling between components).
    ratio : (str, str), optional
        Derived when recorded as the ratio of two variables' interval means (e.g. PUE).
    counter : str, optional
        Name of the energy counter that is this power's exact time integral over the run
        [J] (exposed live as ``<counter>_total``, backfilled from the recorded means).
    last : bool
        Categorical: a recorded sample holds the value at the end of its interval, not the
        interval mean (e.g. a job's state).
    metric : str, optional
        Name of its Prometheus metric (DESIGN.md conventions: ``twin_…_watts``); the exporter's
        table :data:`twin.export.prometheus.METRICS` takes it from here.
    """

    group: str
    name: str
    units: str
    long_name: str
    per_substep: bool = False
    record: bool = True
    ratio: tuple[str, str] | None = None
    counter: str | None = None
    last: bool = False
    metric: str | None = None

    @property
    def key(self) -> str:
        return f"{self.group}.{self.name}"

    @property
    def dims(self) -> tuple[str, ...]:
        return ("time",) if self.group == "facility" else ("time", self.group)


@dataclass(frozen=True)
class Control:
    """A declared input that an operator or a controller may set between steps.

    Parameters
    ----------
    group : str
        Entity level the control has one value per: one of :data:`GROUPS` or ``"row"``
        (facility: one value).
    name : str
        Its name (``t_supply_set``), unique within the group; the key is ``"group.name"``.
    units : str
        UDUNITS string of its values ("degC", "W", "1").
    long_name : str
        What it sets.
    low, high : float or ndarray
        Range the equipment accepts, scalar or one value per entity [units].
    choices : tuple of str, optional
        A discrete control: the names of its values 0, 1, … (``low``/``high`` are then
        0 and len − 1).
    """

    group: str
    name: str
    units: str
    long_name: str
    low: float | np.ndarray
    high: float | np.ndarray
    choices: tuple[str, ...] | None = None

    @property
    def key(self) -> str:
        return f"{self.group}.{self.name}"


class Component:
    """Defaults of the component protocol (see the module docstring)."""

    inputs: tuple[str, ...] = ()
    outputs: tuple[Var, ...] = ()
    every: int = 1
    events: tuple[str, ...] = ()
    controls: tuple[Control, ...] = ()
    phase: str = "controllers"  # where ``twin bench`` counts its time
    plant_stage: float | None = None  # plant equipment: step order within a plant step

    @property
    def name(self) -> str:
        return type(self).__name__

    def initialise(self, state: State) -> None:
        pass

    def step(self, t: float, dt: float, state: State) -> None:
        pass

    def apply(self, action) -> bool:
        return False

    def finalise(self, state: State) -> None:
        pass

    def control(self, key: str) -> np.ndarray:
        """Values in force of the control ``key`` ("group.name"), one per entity of its group."""
        raise KeyError(f"{self.name} has no control '{key}'")

    def set_control(self, key: str, values: np.ndarray) -> None:
        """Set the control ``key`` from the next step on (values within its bounds)."""
        raise KeyError(f"{self.name} has no control '{key}'")


class State(dict):
    """The simulation's quantities by key ``"group.name"`` (a dict: reads and writes on the hot
    path cost one dict operation); :meth:`declare` keeps the variables and their one writer."""

    def __init__(self):
        super().__init__()
        self.vars: dict[str, Var] = {}
        self.owner: dict[str, str] = {}

    def declare(self, component) -> None:
        """Register ``component``'s outputs; a second writer of a variable is an error."""
        for var in component.outputs:
            if var.key in self.owner:
                raise ValueError(f"{var.key} has two writers: {self.owner[var.key]} and {component.name}")
            self.vars[var.key] = var
            self.owner[var.key] = component.name

    def check_inputs(self, components) -> None:
        """Every input of every component has a writer."""
        for c in components:
            for key in c.inputs:
                if key not in self.owner:
                    raise ValueError(f"{c.name} reads {key}, which no component writes")

    def recorded(self, group: str) -> list[str]:
        """Names of the recorded variables of ``group`` that this system's components write."""
        return [v.name for v in self.vars.values() if v.group == group and v.record]


class _BlockView(dict):
    """The state seen by a multi-rate component: its inputs' block means, everything else live."""

    def __init__(self, state: State, means: dict):
        super().__init__(means)
        self.state = state

    def __missing__(self, key):
        return self.state[key]

    def __setitem__(self, key, value):
        self.state[key] = value


def step_mean(value):
    """Mean over a step of a per-step (entities,) or per-sub-step (n_sub, entities) value."""
    if np.ndim(value) == 2:
        return value[0] if value.shape[0] == 1 else value.mean(axis=0)
    return value


class Schedule:
    """Runs components in order, each every ``every`` thermal steps on block means of its inputs.

    Parameters
    ----------
    components : list
        In the order they step within a thermal step.
    h : float
        Thermal step [s].
    """

    def __init__(self, components, h: float):
        self.components = list(components)
        self.h = h
        rate = {v.key: c.every for c in self.components for v in c.outputs}
        # A multi-rate component averages what faster components write; what components of its
        # own rate write (earlier in the same step, or held from their last) it reads as it is.
        self._multi = {id(c): (c, dict.fromkeys(k for k in c.inputs if rate.get(k, 1) != c.every), [0])
                       for c in self.components if c.every > 1}
        self._count = 0
        self.owners: dict[str, list] = {}
        for c in self.components:
            for kind in c.events:
                self.owners.setdefault(kind, []).append(c)

    @property
    def steps_done(self) -> int:
        """Thermal steps taken so far."""
        return self._count

    def steps_to_update(self) -> int | None:
        """Thermal steps from the next one until the next on which a multi-rate component
        updates, counting a block that starts with an update as a whole block (None: every
        component steps every step). The steps in between give multi-rate components nothing
        but their inputs' sums, so a block of this length has no boundary inside it."""
        if not self._multi:
            return None
        return min(((-self._count) % c.every) or c.every for c, _, _ in self._multi.values())

    def updates_next(self) -> bool:
        """A multi-rate component updates on the next thermal step."""
        return any(self._count % c.every == 0 for c, _, _ in self._multi.values())

    def steps_before_update(self) -> int | None:
        """Thermal steps from the next one before the first on which a multi-rate component
        updates (0: it updates on the next step; None: every component steps every step)."""
        if not self._multi:
            return None
        return min((-self._count) % c.every for c, _, _ in self._multi.values())

    def step_multi(self, t: float, value, state: State, timing: dict | None = None) -> None:
        """The multi-rate components' part of one thermal step starting at ``t`` [s], as
        :meth:`step` takes it, the components that step every step having been taken
        elsewhere: each adds the step's inputs (``value(key)``) to its sums and, on the
        first step of its block, steps on their means (its outputs into ``state``)."""
        h = self.h
        self._count += 1
        now = perf_counter
        for c, sums, count in self._multi.values():
            t0 = now()
            for key in sums:
                v = step_mean(value(key))
                sums[key] = v.copy() if sums[key] is None else sums[key] + v
            count[0] += 1
            if (self._count - 1) % c.every == 0:  # the first step of a block
                means = {key: s / count[0] for key, s in sums.items()}
                for key in sums:
                    sums[key] = None
                count[0] = 0
                c.step(t, c.every * h, _BlockView(state, means))
            if timing is not None:
                timing[c.phase] += now() - t0

    def accumulate(self, n: int, value, series=None) -> None:
        """Count ``n`` thermal steps on which no multi-rate component updates, adding each
        step's inputs to their sums as :meth:`step` does (``value(key, j)``: the value of
        ``key`` at the ``j``-th of them), without stepping any component. ``series(key)``, if
        given, is the steps' values of ``key`` stacked, (≥ n, …), or None: a float series of
        one value a step is summed by ``np.add.accumulate``, which adds the rows one after the
        other as the loop does (the same additions in the same order)."""
        for c, sums, count in self._multi.values():
            for key in sums:
                acc = sums[key]
                s = None if series is None else series(key)
                if n and s is not None and s.dtype == np.float64 and s.ndim in (1, 2, 3) and (s.ndim < 3 or s.shape[1] == 1):
                    s = s[:n] if s.ndim < 3 else s[:n, 0]  # (a step's mean is its one sub-step)
                    if acc is not None:
                        s = np.concatenate([np.asarray(acc)[None], s])
                    sums[key] = np.add.accumulate(s, axis=0)[-1]
                    continue
                for j in range(n):
                    v = step_mean(value(key, j))
                    acc = v.copy() if acc is None else acc + v
                sums[key] = acc
            count[0] += n
        self._count += n

    def step(self, t: float, state: State, timing: dict | None = None, start: int = 0) -> None:
        """One thermal step starting at ``t`` [s]; wall seconds per component ``phase`` are
        added to ``timing``. With ``start`` the components before the ``start``-th have
        already stepped (the rest of a step begun elsewhere)."""
        h = self.h
        self._count += 1
        now = perf_counter
        for c in self.components[start:] if start else self.components:
            k = c.every
            t0 = now()
            if k == 1:
                c.step(t, h, state)
                if timing is not None:
                    timing[c.phase] += now() - t0
                continue
            _, sums, count = self._multi[id(c)]
            for key in sums:
                v = step_mean(state[key])
                sums[key] = v.copy() if sums[key] is None else sums[key] + v
            count[0] += 1
            if (self._count - 1) % k == 0:  # the first step of a block
                means = {key: s / count[0] for key, s in sums.items()}
                for key in sums:
                    sums[key] = None
                count[0] = 0
                c.step(t, k * h, _BlockView(state, means))
            if timing is not None:
                timing[c.phase] += now() - t0

    def apply(self, action) -> None:
        """Dispatch an event action to the components that own its kind."""
        for c in self.owners.get(action.event.kind, ()):
            c.apply(action)
