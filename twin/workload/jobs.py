"""Jobs: the shared state of a job, placement on devices, and the per-step demand.

Every job advances in lockstep with the driver. Per thermal step the driver hands the jobs the
clocks and trips of their devices; each job returns its devices' utilisation for every workload
sub-step (vectorised over sub-steps and devices; the Python loop is over jobs only). What a job
does is its kind's (:mod:`twin.workload.job_kinds`: training, inference and CPU batch in
:mod:`~twin.workload.training_job`, :mod:`~twin.workload.inference_job` and
:mod:`~twin.workload.cpu_job`); :class:`JobState` holds only what every kind shares.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.sim.selection import Selection

# The built-in kinds register themselves in JOB_KINDS when imported.
from twin.workload import cpu_job, inference_job, training_job  # noqa: F401
from twin.workload.inference_job import declared_link, scale_up_link  # noqa: F401  (public here)
from twin.workload.job_kinds import (  # noqa: F401  (the states are public here)
    CHECKPOINT, DONE, JOB_KINDS, QUEUED, RESTARTING, RUNNING, STATE_NAMES, UNPLACEABLE, JobKind)
from twin.workload.placement import choose_gang, largest_domain
from twin.workload.training_job import clocked_phase, phase_integral  # noqa: F401  (public here)
from twin.workload.profile import select_devices

NETWORK_ROLES = ("nic", "switch")


@dataclass
class JobState:
    """What every job has, whatever its kind (numbers in SI units).

    ``kind`` is its :class:`~twin.workload.job_kinds.JobKind` and ``kind_state`` that kind's own
    state (e.g. a training job's checkpoint and failure clock, a serving job's request pool).
    """

    spec: object  # its scenario entry
    index: int
    kind: JobKind
    kind_state: object = None
    candidates: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # devices it may take
    need: int = 0  # devices it asks for
    devices: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # compute devices
    network: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    hosts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    state: int = QUEUED
    started: float = np.nan
    progress: float = 0.0
    tokens: float = 0.0
    rate: float = 0.0  # progress per second over the last step
    power: float = 0.0  # attributed device power over the last step [W]
    energy: float = 0.0  # attributed device energy [J]
    unplaceable: str = ""  # why the gang can never be placed

    @property
    def all_devices(self) -> np.ndarray:
        return np.concatenate([self.devices, self.network, self.hosts])

    def view(self, what: str) -> Selection:
        """``devices``, ``network`` or ``hosts`` as a :class:`~twin.sim.selection.Selection`
        (slices where the layout allows), built once per placement."""
        index = getattr(self, what)
        views = self.__dict__.setdefault("_views", {})  # (a cache, not one of the job's fields)
        sel = views.get(what)
        if sel is None or sel.source is not index:
            sel = views[what] = Selection(index)
            sel.source = index
        return sel


def new_job(spec, index: int) -> JobState:
    """The state of job ``index`` of scenario entry ``spec``, its kind looked up by ``spec.kind``."""
    kind = JOB_KINDS[spec.kind]
    return JobState(spec, index, kind, kind.new_state(spec))


class JobSet:
    """All jobs of a scenario, their placement and their per-step demand."""

    def __init__(self, jobs, system, catalog, rng: np.random.Generator, h_w: float, base=None,
                 duration: float | None = None, scale_out: str | None = None):
        from twin.network.paths import DEFAULT_SCALE_OUT

        self.duration = duration
        self.system = system
        self.catalog = catalog
        self.scale_out = scale_out or DEFAULT_SCALE_OUT
        self.domain = np.unique(system.device_domain, return_inverse=True)[1]
        self.rng = rng
        self.h_w = h_w
        self.owner = np.full(system.n_devices, -1, dtype=np.int64)
        self._owned = None  # (held mask, owned devices, their job) until ownership changes
        roles = {name: chip.role for name, chip in catalog.chips.items()}
        self.role = np.array([roles[k] for k in system.device_kind], dtype=object)
        self.jobs = [new_job(spec, i) for i, spec in enumerate(jobs)]
        self.floor = np.zeros(system.n_devices)  # power floor per device [W]
        self.ramp = np.full(system.n_devices, np.inf)  # ramp limit per device [W/s]
        #: Operator inputs per job: a queued job starts only while admitted, and is placed on
        #: the racks of CDU ``prefer_cdu`` when they have room (−1: anywhere).
        self.admit = np.ones(len(jobs), dtype=bool)
        self.prefer_cdu = np.full(len(jobs), -1, dtype=np.int64)
        for job in self.jobs:
            mask = select_devices(job.spec.devices.select, system) & (system.device_kind == job.spec.devices.kind)
            available = int(mask.sum())
            need = job.spec.devices.count or available
            job.candidates = np.flatnonzero(mask)
            job.need = need
            biggest = largest_domain(self.domain[job.candidates])
            if available == 0 or need > available:
                job.unplaceable = (f"asks for {need} '{job.spec.devices.kind}' devices; "
                                   f"the selection has {available}")
            elif job.spec.devices.within == "domain" and need > biggest:
                job.unplaceable = (f"asks for {need} '{job.spec.devices.kind}' devices in one scale-up domain; "
                                   f"the largest holds {biggest}")
            if job.unplaceable:
                job.state = UNPLACEABLE
                continue
            job.kind.prepare(self, job, base)

    @property
    def names(self) -> np.ndarray:
        return np.array([j.spec.name for j in self.jobs], dtype=object)

    # -- placement ------------------------------------------------------------------------------
    def _place(self, job: JobState) -> bool:
        """Gang placement by scale-up domain (:func:`twin.workload.placement.choose_gang`)."""
        sy = self.system
        free = self._preferred(job, job.candidates[self.owner[job.candidates] < 0])
        pick = choose_gang(self.domain[free], job.need, job.spec.devices.within == "domain")
        if pick is None:
            return False
        job.devices = free[pick]
        if not job.kind.reserve(self, job):
            return False
        sleds = np.unique(sy.device_sled[job.devices])
        in_sleds = np.isin(sy.device_sled, sleds) & (self.owner < 0)
        in_sleds[job.devices] = False
        job.network = np.flatnonzero(in_sleds & np.isin(self.role, NETWORK_ROLES))
        job.hosts = (np.flatnonzero(in_sleds & (self.role == "cpu")) if job.kind.uses_hosts
                     else np.zeros(0, np.int64))
        self.owner[job.all_devices] = job.index
        self._owned = None
        job.kind.placed(self, job)
        return True

    def _preferred(self, job: JobState, free: np.ndarray) -> np.ndarray:
        """The free candidates on the job's preferred CDU when they can hold it, else all."""
        cdu = self.prefer_cdu[job.index]
        if cdu < 0:
            return free
        sy = self.system
        on = free[sy.rack_cdu[sy.device_rack[free]] == cdu]
        return on if on.size >= job.need else free

    def warnings(self, t_end: float) -> list[str]:
        """Jobs that did nothing: never placed, never started, or (by their kind) did no work."""
        out = []
        for job in self.jobs:
            name = f"job {job.spec.name}"
            if job.state == UNPLACEABLE:
                out.append(f"{name} can never be placed: {job.unplaceable}")
            elif job.state == QUEUED and job.spec.start < t_end:
                out.append(f"{name} never started: its devices were busy the whole run")
            out.extend(job.kind.warnings(job, name, t_end))
        return out

    def release(self, job: JobState) -> None:
        """Free a finished job's devices and their power floors and ramp limits."""
        self.owner[job.all_devices] = -1
        self._owned = None
        self.floor[job.devices] = 0.0
        self.ramp[job.devices] = np.inf

    # -- stepping -------------------------------------------------------------------------------
    def demand(self, t: float, h: float, n_sub: int, clock: np.ndarray, tripped: np.ndarray,
               u: np.ndarray, t_die: np.ndarray | None = None) -> np.ndarray:
        """Write the jobs' utilisation for the sub-steps of [t, t+h) into ``u`` (n_sub, devices).

        Returns the devices to be reset (repaired) because their job restarted. A job restarts
        only once its devices have cooled below their throttle point (a trip caused by a cooling
        fault is not cleared while the fault lasts).
        """
        repair = np.zeros(0, dtype=np.int64)
        ts = t + self.h_w * np.arange(n_sub)
        for job in self.jobs:
            if job.state == UNPLACEABLE:
                continue
            if job.state == QUEUED:
                if t >= job.spec.start and self.admit[job.index] and self._place(job):
                    job.state = RUNNING
                    job.started = t
                    job.kind.start(self, job, t)
                else:
                    continue
            if job.state == DONE:
                continue
            fixed = job.kind.step(self, job, t, ts, clock, tripped, u, t_die)
            if fixed is not None:
                repair = np.concatenate([repair, fixed])
        return repair

    def ahead(self, i0: int, h: float, k: int, n_sub: int, clock: np.ndarray, tripped: np.ndarray,
              u: np.ndarray):
        """The jobs' utilisation of the ``k`` thermal steps from step ``i0`` written ahead into
        ``u`` (k, n_sub, devices), as ``k`` calls of :meth:`demand` would write it while no job
        starts, restarts, fails or finishes and every synchronous gang runs at full clock
        (:meth:`~twin.workload.job_kinds.JobKind.ahead`); nothing of the jobs changes until
        ``finish``. Returns None when a job's demand has no such form now, or a triple: the
        steps it holds for (≥ 1), the devices the loop watches (it stops before a step that
        starts with one of them below full clock or tripped) and ``finish(n, clock, off)``,
        which sets the jobs as after the first ``n`` steps (each step's starting clocks and
        trips, (n, devices)) and returns their per-step progress, rate, tokens and state, (n,
        jobs) each; ``finish(0, None, None)`` leaves the jobs as before the call (an inference
        pool has served the block ahead: it is put back)."""
        if self.floor.any() or np.isfinite(self.ramp).any():
            return None  # (power floors and ramp limits: ChipPower's smoothing, per step)
        t = (i0 + np.arange(k)) * h
        ts = t[:, None] + self.h_w * np.arange(n_sub)
        steps, plans = k, []
        for job in self.jobs:
            if job.state in (UNPLACEABLE, DONE):
                continue
            if job.state == QUEUED:  # (it is placed at the first step from its start while admitted)
                if self.admit[job.index]:
                    steps = min(steps, int(np.searchsorted(t, job.spec.start, side="left")))
                continue
            plan = job.kind.ahead(self, job, t, ts, clock, tripped, u)
            if plan is None:
                _cancel(plans)
                return None
            steps = min(steps, plan.steps)
            plans.append((job, plan))
        if steps == 0:
            _cancel(plans)
            return None
        watch = np.concatenate([np.zeros(0, dtype=np.int64)] + [p.watch for _, p in plans])

        def finish(n, clock, off):
            if n == 0:  # (the loop took none of the steps: the jobs as before)
                _cancel(plans)
                return None
            out = [np.empty((n, len(self.jobs))) for _ in range(4)]
            for job in self.jobs:
                out[0][:, job.index] = job.progress
                out[1][:, job.index] = job.rate
                out[2][:, job.index] = job.tokens
                out[3][:, job.index] = job.state
            for job, plan in plans:
                for a, v in zip(out, plan.finish(n, clock, off)):
                    a[:, job.index] = v
            return out

        return steps, watch, finish

    def starting(self, t: float, h: float) -> bool:
        """A queued job falls due in the step [t, t + h): it is placed then if its devices are
        free (the first step at or after its start)."""
        return any(job.state == QUEUED and self.admit[job.index] and job.spec.start <= t < job.spec.start + h
                   for job in self.jobs)

    def account_block(self, p_mean: np.ndarray, h: float) -> np.ndarray:
        """:meth:`account` for each of the steps of ``p_mean`` (steps, devices), in order (the
        same additions: each step's sums in device order); returns the attributed power (steps,
        jobs) [W]."""
        n, nb = p_mean.shape[0], len(self.jobs) + 1
        bins = self._ownership()[3][None, :] + nb * np.arange(n)[:, None]
        sums = np.bincount(bins.ravel(), weights=p_mean.ravel(), minlength=nb * n).reshape(n, nb)[:, 1:]
        return self.account_sums(sums, h)

    @property
    def owner_bins(self) -> np.ndarray:
        """Each device's job index + 1 (0: no job holds it), the bins of :meth:`account_block`."""
        return self._ownership()[3]

    def account_sums(self, sums: np.ndarray, h: float) -> np.ndarray:
        """:meth:`account_block` from each step's device power already summed by job (steps,
        jobs) [W], in device order; returns ``sums``."""
        for job in self.jobs:
            p = sums[:, job.index]
            job.power = p[-1]
            job.energy = np.add.accumulate(np.concatenate([[job.energy], p * h]))[-1]
        return sums

    def _ownership(self):
        """Held mask, owned devices, their jobs' indices and each device's job index + 1 (0:
        none), cached until a job is placed or released (the only places ``owner`` changes)."""
        if self._owned is None:
            held = self.owner >= 0
            devices = np.flatnonzero(held)
            self._owned = (held, devices, self.owner[devices], self.owner + 1)
        return self._owned

    @property
    def held(self) -> np.ndarray:
        """Devices a job holds (read-only; a new array after every placement or release)."""
        return self._ownership()[0]

    def account(self, p_mean: np.ndarray, h: float) -> None:
        """Attribute the step's mean device power [W] to jobs."""
        # One pass over all devices, free ones into bin 0, instead of gathering the owned ones
        # (the same additions in the same device order: the same sums).
        bins = self._ownership()[3]
        sums = np.bincount(bins, weights=p_mean, minlength=len(self.jobs) + 1)[1:]
        for job, p in zip(self.jobs, sums):
            job.power = p
            job.energy += p * h


def _cancel(plans) -> None:
    """Undo what the jobs' demand written ahead changed (:attr:`~twin.workload.job_kinds.Ahead.cancel`)."""
    for _, plan in plans:
        if plan.cancel is not None:
            plan.cancel()
