"""The recorder: interval means of the recorded variables in preallocated arrays (the value at
the end of the interval for categorical ones, :data:`LAST`).

Intervals are counted in workload sub-steps. A variable's per-step value is either one array
per thermal step (entities,) or one row per sub-step (n_sub, entities) — facility and rack power
and device power are given per sub-step, so they can be recorded at sub-second resolution; a
step value recorded at a finer interval repeats within its step.

Memory is fixed when the run starts (samples × entities per variable), so it does not grow while
the run goes on. Exporters read :meth:`Recorder.snapshot` and :attr:`Recorder.latest`; they never
change the simulation.
"""

from __future__ import annotations

import numpy as np

from twin.sim.component import GROUPS


class _Group:
    def __init__(self, name, variables, n_entities, every, total, capacity):
        self.name = name
        self.vars = [v.name for v in variables if v.ratio is None]
        self.keys = [v.key for v in variables if v.ratio is None]
        #: categorical variables: a sample holds the value at the end of its interval, not a mean
        #: (the mean of "running" and "checkpoint" is no state)
        self.last_vars = {v.name for v in variables if v.ratio is None and v.last}
        #: derived variables: name → (numerator, denominator)
        self.derived = {v.name: v.ratio for v in variables if v.ratio is not None}
        variables = [v.name for v in variables]
        self.every = every
        self.total = total  # samples in the whole run
        self.capacity = capacity  # samples held in memory (== total unless streamed)
        self.n_entities = n_entities
        self.count = 0
        self.filled = 0  # samples in the buffer
        self.flushed = 0  # samples already handed to the sink
        self.last = None  # the last sample handed to the sink
        self.acc = {v: np.zeros(n_entities) for v in self.vars}
        self.out = {v: np.full((capacity, n_entities), np.nan) for v in variables}

    @property
    def room(self) -> int:
        """Samples that can still be stored in the buffer before the run's end."""
        return min(self.capacity - self.filled, self.total - self.flushed - self.filled)


class Recorder:
    """Accumulates the driver's per-step state into interval means.

    Parameters
    ----------
    sizes : dict
        Entities per group (facility: 1).
    intervals : dict
        Recording interval per group in workload sub-steps (None = off). Either a multiple of
        ``n_sub`` or a divisor of it.
    n_substeps : int
        Workload sub-steps in the run.
    n_sub : int
        Workload sub-steps per thermal step.
    variables : dict
        Variables (:class:`~twin.sim.component.Var`) recorded per group; those with a ``ratio``
        are derived from two others' interval means when a sample is emitted.
    sink : callable, optional
        ``sink(group, {variable: (k, entities)}, offset)`` receives full buffers of every group;
        memory then stays at ``buffer_bytes`` per group however long the run, plus the facility
        IT power series kept for the run's power-quality KPIs (8 bytes a sample).
    buffer_bytes : int
        Memory per streamed group held before handing its samples to the sink (at least 16
        samples).
    """

    def __init__(self, sizes, intervals, n_substeps, n_sub, variables, sink=None,
                 buffer_bytes=8 * 2**20):
        self.n_sub = n_sub
        self.sink = sink
        self.groups: dict[str, _Group] = {}
        for group in GROUPS:
            every = intervals.get(group)
            if not every or not sizes.get(group):
                continue
            names = list(variables.get(group) or ())
            if not names:
                continue
            total = n_substeps // every
            streamed = sink is not None
            per_sample = 8 * sizes[group] * len(names)
            capacity = max(1, min(total, max(16, buffer_bytes // per_sample))) if streamed else total
            self.groups[group] = _Group(group, names, sizes[group], every, total, capacity)
            if group == "facility" and streamed and any(v.name == "p_it" for v in names):
                self._p_it = np.full(total, np.nan)

    def _maybe_flush(self, g: _Group) -> None:
        if self.sink is not None and g.filled == g.capacity:
            self.flush(g)

    def flush(self, g: _Group) -> None:
        """Hand the buffered samples of ``g`` to the sink and empty the buffer."""
        if g.filled:
            g.last = {v: g.out[v][g.filled - 1].copy() for v in g.out}
            if g.name == "facility" and "p_it" in g.out:
                self._p_it[g.flushed: g.flushed + g.filled] = g.out["p_it"][: g.filled, 0]
            self.sink(g.name, {v: g.out[v][: g.filled] for v in g.out}, g.flushed)
            g.flushed += g.filled
            g.filled = 0

    def close(self) -> None:
        """Flush every streamed group (end of run or interrupt)."""
        if self.sink is not None:
            for g in self.groups.values():
                self.flush(g)

    def add(self, state) -> None:
        """Add one thermal step; ``state["group.variable"]`` holds each value."""
        n_sub = self.n_sub
        for g in self.groups.values():
            if g.every == n_sub and g.room > 0:  # one sample per step: no accumulation
                row = g.filled
                for v, key in zip(g.vars, g.keys):
                    value = state[key]
                    if np.ndim(value) == 2:
                        value = value[0] if n_sub == 1 else value[-1] if v in g.last_vars else value.mean(axis=0)
                    g.out[v][row] = value
                if g.derived:
                    self._derive(g, slice(row, row + 1))
                g.filled += 1
                self._maybe_flush(g)
            elif g.every >= n_sub:
                for v, key in zip(g.vars, g.keys):
                    value = state[key]
                    if v in g.last_vars:
                        g.acc[v][:] = value[-1] if np.ndim(value) == 2 else value
                    elif np.ndim(value) == 2:
                        g.acc[v] += value.sum(axis=0)
                    else:
                        g.acc[v] += value if n_sub == 1 else value * n_sub
                g.count += n_sub
                if g.count >= g.every:
                    self._emit(g, {v: (g.acc[v] if v in g.last_vars else g.acc[v] / g.every)[None, :]
                                   for v in g.vars})
                    for v in g.vars:
                        g.acc[v][:] = 0.0
                    g.count = 0
            else:
                k = n_sub // g.every
                rows = {}
                for v, key in zip(g.vars, g.keys):
                    value = state[key]
                    if np.ndim(value) == 2:
                        blocks = value.reshape(k, g.every, g.n_entities)
                        rows[v] = blocks[:, -1] if v in g.last_vars else blocks.mean(axis=1)
                    else:
                        rows[v] = np.broadcast_to(value, (k, g.n_entities))
                self._emit(g, rows)

    def _emit(self, g: _Group, rows: dict[str, np.ndarray]) -> None:
        n = next(iter(rows.values())).shape[0]
        done = 0
        while done < n and g.room > 0:
            k = min(n - done, g.room)
            sl = slice(g.filled, g.filled + k)
            for v, r in rows.items():
                g.out[v][sl] = r[done: done + k]
            if g.derived:
                self._derive(g, sl)
            g.filled += k
            done += k
            self._maybe_flush(g)

    def p_it_series(self) -> np.ndarray | None:
        """The whole run's recorded facility IT power so far [W] (for power-quality KPIs)."""
        g = self.groups.get("facility")
        if g is None or "p_it" not in g.out:
            return None
        if self.sink is None:
            return g.out["p_it"][: g.filled, 0]
        return np.concatenate([self._p_it[: g.flushed], g.out["p_it"][: g.filled, 0]])

    @staticmethod
    def _derive(g: _Group, sl: slice) -> None:
        for name, (num, den) in g.derived.items():
            if num in g.out and den in g.out:
                a, b = g.out[num][sl], g.out[den][sl]
                with np.errstate(invalid="ignore", divide="ignore"):
                    g.out[name][sl] = np.where(b > 0, a / b, np.nan)

    @property
    def latest(self) -> dict[str, dict[str, np.ndarray]]:
        """The last recorded sample of every group: group → variable → (entities,)."""
        out = {}
        for name, g in self.groups.items():
            if g.filled:
                out[name] = {v: g.out[v][g.filled - 1] for v in g.out}
            elif g.last is not None:
                out[name] = g.last
            elif g.count:  # before the first interval ends: the mean so far (the live view needs it)
                out[name] = {v: g.acc[v] if v in g.last_vars else g.acc[v] / g.count for v in g.vars}
        return out

    def snapshot(self) -> dict[str, dict[str, np.ndarray]]:
        """Recorded samples so far: group → variable → array (samples, entities)."""
        return {name: {v: g.out[v][: g.filled] for v in g.out} for name, g in self.groups.items()}

    def intervals(self) -> dict[str, int]:
        """Recording interval per group, in workload sub-steps."""
        return {name: g.every for name, g in self.groups.items()}
