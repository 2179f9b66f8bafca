"""The recorder: interval means of the recorded variables in preallocated arrays.

Memory is fixed when the run starts (samples × entities per variable), so it does not grow
while the run goes on. Exporters read :meth:`Recorder.snapshot` and :attr:`Recorder.latest`; they
never change the simulation.
"""

from __future__ import annotations

import numpy as np

from twin.scenario.model import GROUPS
from twin.sim.variables import VARIABLES

#: Variables derived from others when a sample is emitted (not accumulated).
DERIVED = {("facility", "pue")}


class _Group:
    def __init__(self, name, variables, n_entities, every, n_samples):
        self.name = name
        self.vars = variables
        self.every = every
        self.n_samples = n_samples
        self.count = 0
        self.filled = 0
        self.acc = {v: np.zeros(n_entities) for v in variables}
        self.out = {v: np.full((n_samples, n_entities), np.nan) for v in variables}


class Recorder:
    """Accumulates the driver's per-step state into interval means.

    Parameters
    ----------
    sizes : dict
        Entities per group (facility: 1).
    intervals : dict
        Recording interval per group in steps (None = off).
    n_steps : int
        Steps in the run.
    variables : dict
        Variables per group (default: all of :data:`VARIABLES`).
    """

    def __init__(self, sizes, intervals, n_steps, variables=None):
        self.groups: dict[str, _Group] = {}
        self.latest: dict[str, dict[str, np.ndarray]] = {}
        for group in GROUPS:
            every = intervals.get(group)
            if not every:
                continue
            names = list((variables or {}).get(group) or VARIABLES[group])
            self.groups[group] = _Group(group, names, sizes[group], every, n_steps // every)

    def add(self, state) -> None:
        """Add one step's values; ``state.<group>_<variable>`` holds each array."""
        for g in self.groups.values():
            g.count += 1
            for v in g.vars:
                if (g.name, v) not in DERIVED:
                    g.acc[v] += getattr(state, f"{g.name}_{v}")
            if g.count == g.every:
                self._emit(g)

    def _emit(self, g: _Group) -> None:
        if g.filled >= g.n_samples:
            return
        row = {}
        for v in g.vars:
            if (g.name, v) in DERIVED:
                continue
            row[v] = g.acc[v] / g.every
            g.out[v][g.filled] = row[v]
            g.acc[v][:] = 0.0
        if g.name == "facility" and "pue" in g.vars:
            p_it = row.get("p_it", np.nan)
            row["pue"] = np.where(p_it > 0, row.get("p_facility", np.nan) / np.maximum(p_it, 1e-300), np.nan)
            g.out["pue"][g.filled] = row["pue"]
        self.latest[g.name] = row
        g.filled += 1
        g.count = 0

    def snapshot(self) -> dict[str, dict[str, np.ndarray]]:
        """Recorded samples so far: group → variable → array (samples, entities)."""
        return {name: {v: g.out[v][: g.filled] for v in g.vars} for name, g in self.groups.items()}

    def intervals(self) -> dict[str, int]:
        return {name: g.every for name, g in self.groups.items()}
