"""Job kinds: what a job of one kind does, and the state only that kind keeps.

A job (:class:`twin.workload.jobs.JobState`) holds what every kind shares: its scenario entry,
its gang (candidates, devices, network devices, hosts), its state, progress, tokens, rate and
attributed power and energy. Everything else belongs to its kind: a :class:`JobKind` names a
dataclass for that state (``state_type``; an instance is the job's ``kind_state``) and gives the
hooks the :class:`~twin.workload.jobs.JobSet` calls. Kinds are looked up by the scenario entry's
``kind`` in :data:`JOB_KINDS`; adding one is one module with a :func:`register` call (and its
scenario entry), not a change to ``JobState`` or the job set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

#: Job states (recorded as numbers in the ``job`` group). UNPLACEABLE: the gang can never be
#: placed (more devices than the selection holds, or no domain large enough for ``within: domain``).
QUEUED, RUNNING, CHECKPOINT, RESTARTING, DONE, UNPLACEABLE = 0, 1, 2, 3, 4, 5
STATE_NAMES = {QUEUED: "queued", RUNNING: "running", CHECKPOINT: "checkpoint",
               RESTARTING: "restarting", DONE: "done", UNPLACEABLE: "unplaceable"}


@dataclass
class Ahead:
    """A job's demand over a block of steps, written ahead of the feedback loop
    (:meth:`JobKind.ahead`).

    ``steps``: how many of the block's steps it holds for (a failure, the last iteration or
    another change of state ends it before the rest); ``watch``: devices whose clock and trip
    the demand assumed (full clock, on): the loop stops before a step that starts otherwise;
    ``finish(n, clock, off)``: sets the job as after the first ``n`` steps, given each step's
    starting clocks and trips (n, devices), and returns its per-step progress, rate, tokens and
    state, (n,) each; ``cancel()``, if given, undoes what writing the demand ahead changed
    in the job (called instead of ``finish`` when the loop takes none of the steps).
    """

    steps: int
    watch: np.ndarray
    finish: Callable
    cancel: Callable | None = None


class JobKind:
    """Behaviour of one kind of job; the defaults do nothing.

    ``jobs`` in the hooks is the :class:`~twin.workload.jobs.JobSet` (system, catalogue, random
    generator, workload step ``h_w``, per-device power floors and ramp limits) and ``job`` the
    :class:`~twin.workload.jobs.JobState`, whose ``kind_state`` is an instance of
    ``state_type``.
    """

    #: Dataclass of the kind's own running state (no arguments needed to create it).
    state_type: type | None = None
    #: The CPUs of the gang's sleds work for the job (they become its ``hosts``).
    uses_hosts: bool = False

    def new_state(self, spec):
        """The kind's state of a job of scenario entry ``spec``, before anything ran."""
        return self.state_type() if self.state_type is not None else None

    def prepare(self, jobs, job, base) -> None:
        """Check and load what a placeable job needs (raise FieldError naming its field);
        ``base`` is the folder of relative file names."""

    def reserve(self, jobs, job) -> bool:
        """The gang ``job.devices`` is chosen, not yet owned: False to wait for a better one."""
        return True

    def placed(self, jobs, job) -> None:
        """The gang and its network devices and hosts are owned by the job."""

    def start(self, jobs, job, t: float) -> None:
        """The job starts at ``t`` [s] (just placed)."""

    def step(self, jobs, job, t: float, ts: np.ndarray, clock: np.ndarray, tripped: np.ndarray,
             u: np.ndarray, t_die: np.ndarray | None) -> np.ndarray | None:
        """Advance a placed job over the sub-steps starting at ``ts`` [s]: write its devices'
        utilisation into ``u`` (sub-steps, devices) and set its progress, tokens and rate.
        Returns the devices to repair (their job restarted), or None."""
        raise NotImplementedError

    def ahead(self, jobs, job, t: np.ndarray, ts: np.ndarray, clock: np.ndarray, tripped: np.ndarray,
              u: np.ndarray) -> Ahead | None:
        """Write a running job's utilisation for the steps starting at ``t`` (k,) into ``u``
        (k, sub-steps, devices) as ``k`` calls of :meth:`step` would, for as long as its demand
        does not depend on the loop beyond what :class:`Ahead` watches (``ts``: the sub-steps'
        starts, (k, sub-steps); ``clock``, ``tripped``: the devices' as the block starts). None:
        the kind (or the job's state now) has no such form; the block is stepped one step at a
        time."""
        return None

    def warnings(self, job, name: str, t_end: float) -> list[str]:
        """Things the job did not do in a run ending at ``t_end`` [s], beyond never running."""
        return []

    def kpis(self, job) -> dict[str, float]:
        """Per-job KPIs beside energy and progress (the summary reads them by these names)."""
        return {"throttle_loss_s": 0.0, "failures": 0}

    def collective(self, job) -> tuple[str, int, float]:
        """Fabric carrying the job's collectives, the scale-up domains it spans and its
        collective time per iteration [s] ("", 0, NaN: no fabric timing)."""
        return "", 0, np.nan


#: Kinds by the scenario's ``kind`` name.
JOB_KINDS: dict[str, JobKind] = {}


def register(*names: str):
    """Class decorator: register one instance of a :class:`JobKind` under ``names``."""

    def add(cls):
        twice = [name for name in names if name in JOB_KINDS]
        if twice:
            raise ValueError(f"job kind '{twice[0]}' is registered twice")
        kind = cls()
        for name in names:
            JOB_KINDS[name] = kind
        return cls

    return add
