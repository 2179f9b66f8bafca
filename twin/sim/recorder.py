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
    """One group's buffers, stacked: ``buf[i]`` (capacity, entities) holds variable ``i`` (the
    recorded ones first, then the derived ones), so a sample of the whole group is written with
    one call; ``out`` and ``acc`` give per-variable views of the same memory."""

    def __init__(self, name, variables, n_entities, every, total, capacity):
        self.name = name
        self.vars = [v.name for v in variables if v.ratio is None]
        self.keys = [v.key for v in variables if v.ratio is None]
        #: categorical variables: a sample holds the value at the end of its interval, not a mean
        #: (the mean of "running" and "checkpoint" is no state)
        self.last_vars = {v.name for v in variables if v.ratio is None and v.last}
        self.last_index = np.array([i for i, v in enumerate(self.vars) if v in self.last_vars], dtype=np.int64)
        #: derived variables: name → (numerator, denominator)
        self.derived = {v.name: v.ratio for v in variables if v.ratio is not None}
        names = self.vars + [v.name for v in variables if v.ratio is not None]
        self.every = every
        self.total = total  # samples in the whole run
        self.capacity = capacity  # samples held in memory (== total unless streamed)
        self.n_entities = n_entities
        self.count = 0
        self.filled = 0  # samples in the buffer
        self.flushed = 0  # samples already handed to the sink
        self.last = None  # the last sample handed to the sink
        self.n_vars = len(self.vars)
        self.acc_buf = np.zeros((self.n_vars, n_entities))
        self.acc = {v: self.acc_buf[i] for i, v in enumerate(self.vars)}
        self.buf = np.full((len(names), capacity, n_entities), np.nan)
        self.out = {v: self.buf[i] for i, v in enumerate(names)}
        self.ndims = None  # ndim of each variable's per-step value, as last seen

    @property
    def room(self) -> int:
        """Samples that can still be stored in the buffer before the run's end."""
        return min(self.capacity - self.filled, self.total - self.flushed - self.filled)

    def rows(self, state, n_sub: int, how: str) -> np.ndarray:
        """The step's values of every recorded variable as one (variables, entities) array.

        ``how`` is "sample" (the step's mean: the value itself, or the mean over its sub-steps)
        or "sum" (the sum over the step's sub-steps). A categorical variable gives its value at
        the step's end either way.
        """
        values = [state[k] for k in self.keys]
        try:
            ndims = [v.ndim for v in values]
        except AttributeError:
            ndims = [np.ndim(v) for v in values]
        if ndims != self.ndims:
            self.ndims = ndims
            self.two = [i for i, d in enumerate(ndims) if d == 2]
            self.scaled = np.array([i for i, d in enumerate(ndims) if d < 2 and self.vars[i] not in self.last_vars],
                                   dtype=np.int64)
        last = self.last_vars
        for i in self.two:
            v = values[i]
            if self.vars[i] in last:
                values[i] = v[-1]
            elif how == "sum":
                values[i] = v.sum(axis=0)
            else:
                values[i] = v[0] if n_sub == 1 else v.mean(axis=0)
        try:
            out = np.array(values, dtype=float)
        except ValueError:  # ragged: a scalar beside arrays
            out = None
        if out is None or out.shape != (self.n_vars, self.n_entities):
            out = np.empty((self.n_vars, self.n_entities))
            for i, v in enumerate(values):
                out[i] = v
        if how == "sum" and n_sub != 1 and self.scaled.size:
            out[self.scaled] *= n_sub
        return out


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
        for g in self.groups.values():
            self._add(g, state)

    def steps_to_flush(self) -> int | None:
        """Thermal steps until the first streamed buffer fills, counting the step that fills
        it (a lower bound, at least 1); None without a sink. A block of at most this many
        steps flushes on its last step or not at all, as :meth:`add_block` needs."""
        if self.sink is None:
            return None
        n_sub, best = self.n_sub, None
        for g in self.groups.values():
            room = max(1, g.capacity - g.filled)
            if g.every == n_sub:  # a sample a step
                k = room
            elif g.every > n_sub:  # a sample every ⌈every/n_sub⌉ steps (the count restarts at 0)
                k = max(1, (g.every - g.count) // n_sub) + (room - 1) * (g.every // n_sub)
            else:  # n_sub/every samples a step
                k = max(1, room * g.every // n_sub)
            best = k if best is None else min(best, k)
        return best

    def add_block(self, n: int, block: dict, state, view) -> None:
        """Add ``n`` thermal steps at once: ``block[key]`` holds the steps' values of a key with
        a leading axis of ``n``, ``state[key]`` the others (the same every step); ``view`` is a
        mapping of one step's values whose attribute ``j`` selects the step (for the groups that
        accumulate several steps into a sample, added step by step). The samples are those
        ``n`` calls of :meth:`add` give, to the bit.

        With a sink, the block's last step is added to every group after the steps before it
        (the block ends at the first flush, :meth:`steps_to_flush`), so a flush that fails leaves
        every group holding the same steps as the per-step path would. A block shorter than
        :meth:`steps_to_flush` flushes nothing, so it is added whole."""
        if self.sink is not None and n > 1 and n >= self.steps_to_flush():
            self._add_block(n - 1, {key: v[: n - 1] for key, v in block.items()}, state, view)
            view.j = n - 1
            self.add(view)
            return
        self._add_block(n, block, state, view)

    def _add_block(self, n: int, block: dict, state, view) -> None:
        n_sub = self.n_sub
        for g in self.groups.values():
            if g.every > n_sub and g.every % n_sub == 0:  # several steps a sample: summed step by step
                self._accumulate_block(g, n, self._block_rows(g, n, block, state, "sum"))
                continue
            if g.every == 1 and n_sub > 1:  # a sample each sub-step: the block's sub-steps in order
                self._emit(g, self._substep_rows(g, n, block, state))
                continue
            if g.every != n_sub:
                for j in range(n):
                    view.j = j
                    self._add(g, view)
                continue
            rows = np.empty((g.n_vars, n, g.n_entities))
            for i, key in enumerate(g.keys):
                v = block.get(key)
                if v is None:  # the same every step
                    v = np.asarray(state[key])[None]
                if v.ndim == 3:  # per sub-step: the step's mean (a categorical variable: its last)
                    v = v[:, -1] if g.vars[i] in g.last_vars else v[:, 0] if n_sub == 1 else v.mean(axis=1)
                rows[i] = v
            self._emit(g, rows)

    def _substep_rows(self, g: _Group, n: int, block: dict, state) -> np.ndarray:
        """The samples of a group recorded every sub-step over ``n`` steps, (variables, n ×
        n_sub, entities): what :meth:`_add` gives step by step (the mean of one sub-step is its
        value, to the bit; a value held over the step repeats)."""
        n_sub = self.n_sub
        rows = np.empty((g.n_vars, n, n_sub, g.n_entities))
        for i, key in enumerate(g.keys):
            v = block.get(key)
            if v is None:  # the same every step
                v = np.asarray(state[key])
                rows[i] = v[None] if v.ndim == 2 else v
            else:
                rows[i] = v if v.ndim == 3 else v[:, None]
        return rows.reshape(g.n_vars, n * n_sub, g.n_entities)

    def _block_rows(self, g: _Group, n: int, block: dict, state, how: str) -> np.ndarray:
        """:meth:`_Group.rows` of each of ``n`` steps, (variables, n, entities): ``block[key]``
        holds a key's values with a leading axis of ``n``, ``state[key]`` the others."""
        n_sub = self.n_sub
        rows = np.empty((g.n_vars, n, g.n_entities))
        for i, key in enumerate(g.keys):
            v = block.get(key)
            if v is None:  # the same every step (the assignment repeats its row over the steps)
                v = np.asarray(state[key])
                if v.ndim == 2:  # per sub-step: the step's row, as below for each step
                    v = v[-1] if g.vars[i] in g.last_vars else v.sum(axis=0) if how == "sum" \
                        else v[0] if n_sub == 1 else v.mean(axis=0)
                elif how == "sum" and n_sub != 1 and g.vars[i] not in g.last_vars:
                    v = v * n_sub
                rows[i] = v
                continue
            if v.ndim == 3:  # per sub-step
                if how == "sum" and n_sub == 1 and g.vars[i] not in g.last_vars:
                    np.add(v[:, 0], 0.0, out=rows[i])  # (the sum of one value, as numpy's sum gives it)
                    continue
                v = v[:, -1] if g.vars[i] in g.last_vars else v.sum(axis=1) if how == "sum" \
                    else v[:, 0] if n_sub == 1 else v.mean(axis=1)
            elif how == "sum" and n_sub != 1 and g.vars[i] not in g.last_vars:
                v = v * n_sub
            rows[i] = v
        return rows

    def _accumulate_block(self, g: _Group, n: int, rows: np.ndarray) -> None:
        """Add ``n`` steps' summed rows (variables, n, entities) to a group that averages
        several steps into a sample, as :meth:`_add` does step by step (the same additions in
        the same order; a categorical variable keeps its last step's value, + 0.0 as there),
        with one addition a step for the whole group."""
        n_sub, last, acc = self.n_sub, g.last_index, g.acc_buf
        j = 0
        while j < n:
            m = min(n - j, max(1, -(-(g.every - g.count) // n_sub)))  # steps to the end of the sample
            if last.size:
                end = rows[last, j + m - 1]
                rows[last, j: j + m] = 0.0
            for i in range(j, j + m):
                acc += rows[:, i]
            if last.size:
                acc[last] = end + 0.0
            g.count += m * n_sub
            j += m
            if g.count >= g.every:
                sample = acc / g.every
                if last.size:
                    sample[last] = acc[last]
                self._emit(g, sample[:, None, :])
                acc[:] = 0.0
                g.count = 0

    def _add(self, g: _Group, state) -> None:
        """Add one thermal step to group ``g``."""
        n_sub = self.n_sub
        if g.every == n_sub and g.room > 0:  # one sample per step: no accumulation
            row = g.filled
            g.buf[: g.n_vars, row] = g.rows(state, n_sub, "sample")
            if g.derived:
                self._derive(g, slice(row, row + 1))
            g.filled += 1
            self._maybe_flush(g)
        elif g.every >= n_sub:
            step = g.rows(state, n_sub, "sum")
            if g.last_index.size:
                g.acc_buf[g.last_index] = step[g.last_index]
                step[g.last_index] = 0.0
            g.acc_buf += step
            g.count += n_sub
            if g.count >= g.every:
                sample = g.acc_buf / g.every
                if g.last_index.size:
                    sample[g.last_index] = g.acc_buf[g.last_index]
                self._emit(g, sample[:, None, :])
                g.acc_buf[:] = 0.0
                g.count = 0
        else:
            k = n_sub // g.every
            rows = np.empty((g.n_vars, k, g.n_entities))
            for i, (v, key) in enumerate(zip(g.vars, g.keys)):
                value = state[key]
                if np.ndim(value) == 2:
                    blocks = value.reshape(k, g.every, g.n_entities)
                    rows[i] = blocks[:, -1] if v in g.last_vars else blocks.mean(axis=1)
                else:
                    rows[i] = value
            self._emit(g, rows)

    def skip(self, n_steps: int) -> None:
        """Pass over ``n_steps`` thermal steps without their values: every sample of an interval
        they touch is NaN (missing), so later samples keep their times. An interval with a
        skipped part is missing as a whole (its mean would not be the interval's)."""
        for g in self.groups.values():
            left = n_steps * self.n_sub  # sub-steps
            if g.count:  # an interval begun before: it is missing
                take = min(left, g.every - g.count)
                g.acc_buf[:] = np.nan
                g.count += take
                left -= take
                if g.count == g.every:
                    self._emit(g, np.full((g.n_vars, 1, g.n_entities), np.nan))
                    g.acc_buf[:] = 0.0
                    g.count = 0
            full = left // g.every
            left -= full * g.every
            while full > 0 and g.room > 0:  # (a streamed buffer empties into the sink as it fills)
                k = min(full, g.room)
                self._emit(g, np.full((g.n_vars, k, g.n_entities), np.nan))
                full -= k
            if left:  # an interval begun here ends after: missing
                g.acc_buf[:] = np.nan
                g.count = left

    def _emit(self, g: _Group, rows: np.ndarray) -> None:
        """Store samples ``rows`` (variables, samples, entities), flushing full buffers."""
        n = rows.shape[1]
        done = 0
        while done < n and g.room > 0:
            k = min(n - done, g.room)
            sl = slice(g.filled, g.filled + k)
            g.buf[: g.n_vars, sl] = rows[:, done: done + k]
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
                a, b, out = g.out[num][sl], g.out[den][sl], g.out[name][sl]
                ok = b > 0
                if ok.all():
                    np.divide(a, b, out=out)
                else:  # NaN where the denominator is not positive
                    out[...] = np.nan
                    np.divide(a, b, out=out, where=ok)

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
