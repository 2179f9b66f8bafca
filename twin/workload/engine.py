"""The workload facade the driver talks to: open-loop rules plus closed-loop jobs.

Rules (``workload:``) are evaluated ahead for blocks of steps; jobs (``jobs:``) run in lockstep
with the driver and read clocks and trips back. Jobs own their devices: on a device a job holds,
the job's utilisation replaces the rules'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from twin.workload.jobs import JobSet
from twin.workload.profile import ProfileWorkload

if TYPE_CHECKING:
    from twin.scenario.model import Scenario

#: Upper bound on a block of precomputed rule values: sub-steps × devices (≈ 16 MB of float64).
BLOCK_VALUES = 2_000_000


class Workload:
    """Demanded utilisation per device and workload sub-step.

    Parameters
    ----------
    scenario : Scenario
    system : System
    catalog : Catalog
    base : Path
        Folder for relative file names (replay files).
    """

    def __init__(self, scenario: Scenario, system, catalog, base):
        self.h = scenario.time.step
        self.h_w = scenario.workload_step or self.h
        self.n_sub = max(1, int(round(self.h / self.h_w)))
        self.rules = ProfileWorkload(scenario, system, base)
        scale_out = scenario.network.scale_out if scenario.network is not None else None
        # Only jobs draw random numbers (numpy.random is imported for them alone: ~0.04 CPU-s).
        self.jobs = (JobSet(scenario.jobs, system, catalog, np.random.default_rng(scenario.seed), self.h_w, base,
                            scenario.time.duration, scale_out) if scenario.jobs else None)
        self.n_devices = system.n_devices
        #: Devices some rule or job selects (a job's candidates, before placement).
        self.selected = np.zeros(system.n_devices, dtype=bool)
        for rule in self.rules.rules:
            idx = rule[2]
            self.selected[idx] = True
        for job in self.jobs.jobs if self.jobs is not None else ():
            self.selected[job.candidates] = True
        #: The rules' current block of steps: from ``_block_t``, ``_steps`` steps, the next to
        #: give ``_next``; its values (``_block``) computed when the per-step path first reads
        #: it (None until then: :meth:`rules_ahead` evaluates the steps it takes into its output)
        self._block = None
        self._block_t = 0.0
        self._steps = 0
        self._next = 0

    def demand(self, t: float, clock: np.ndarray, tripped: np.ndarray, t_die: np.ndarray | None = None):
        """Utilisation for the sub-steps of the thermal step starting at ``t``.

        Returns
        -------
        u : ndarray, shape (n_sub, devices)
            Step-mean utilisation of each sub-step [1].
        repair : ndarray of int
            Devices whose job restarted (their trips are cleared).
        """
        if self._next >= self._steps:
            self._refill(t)
        if self._block is None:
            flat = self.rules.demand(self._block_t, self.h_w, self._steps * self.n_sub)
            self._block = flat.reshape(self._steps, self.n_sub, self.n_devices)
        u = self._block[self._next]
        self._next += 1
        if self.jobs is None:
            return u, None
        u = u.copy()
        repair = self.jobs.demand(t, self.h, self.n_sub, clock, tripped, u, t_die)
        return u, repair

    def _refill(self, t: float) -> None:
        """A new block of steps from ``t`` (its values are computed when read)."""
        self._steps = max(1, BLOCK_VALUES // max(1, self.n_sub * self.n_devices))
        self._block, self._block_t, self._next = None, t, 0

    def rules_ahead(self, i0: int, k: int, out: np.ndarray | None = None) -> np.ndarray:
        """The rules' utilisation of the ``k`` thermal steps from step ``i0`` (at t = i·h), as
        ``k`` calls of :meth:`demand` would give it without jobs, into ``out`` (k, n_sub,
        devices); those steps are consumed (:meth:`cursor` and :meth:`restore` take it back).
        Steps of a block not yet computed are evaluated straight into ``out``, at the times the
        whole block would give them (the same values)."""
        out = np.empty((k, self.n_sub, self.n_devices)) if out is None else out
        j, n_sub = 0, self.n_sub
        while j < k:
            if self._next >= self._steps:
                self._refill((i0 + j) * self.h)
            take = min(k - j, self._steps - self._next)
            if self._block is not None:
                out[j: j + take] = self._block[self._next: self._next + take]
            else:
                self.rules.demand(self._block_t, self.h_w, take * n_sub, start=self._next * n_sub,
                                  out=out[j: j + take].reshape(take * n_sub, self.n_devices))
            self._next += take
            j += take
        return out

    def cursor(self):
        """Where the rules' values stand (for :meth:`restore`)."""
        return self._block, self._block_t, self._steps, self._next

    def restore(self, cursor) -> None:
        self._block, self._block_t, self._steps, self._next = cursor
