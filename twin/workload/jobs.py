"""Jobs: placement on devices, synchronous training dynamics, CPU batch work.

Every job advances in lockstep with the driver. Per thermal step the driver hands the jobs the
clocks and trips of their devices; each job returns its devices' utilisation for every workload
sub-step (vectorised over sub-steps and devices; the Python loop is over jobs only).

Training (synchronous): progress p (iterations) advances at rate min(f)/T_iter — the gang waits
for its slowest member, so one throttled rack slows the whole job. Within an iteration the phase
φ = p mod 1 selects compute (u_compute), all-to-all (MoE) or collective (u_collective) phases.
Checkpoints pause progress for their duration at the end of each interval of job time; a failure
(device trip or a draw from the job's MTBF) rolls progress back to the last checkpoint and idles
the job for its restart time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.scenario.errors import FieldError
from twin.scenario.model import CpuJob, TrainingJob
from twin.workload.profile import profile_mean, select_devices

#: Job states (recorded as numbers in the ``job`` group).
QUEUED, RUNNING, CHECKPOINT, RESTARTING, DONE = 0, 1, 2, 3, 4
STATE_NAMES = {QUEUED: "queued", RUNNING: "running", CHECKPOINT: "checkpoint",
               RESTARTING: "restarting", DONE: "done"}
NETWORK_ROLES = ("nic", "switch")


@dataclass
class JobState:
    """Running state of one job (numbers in SI units)."""

    spec: TrainingJob | CpuJob
    index: int
    devices: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # compute devices
    network: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    hosts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    state: int = QUEUED
    started: float = np.nan
    progress: float = 0.0
    checkpointed: float = 0.0
    restart_until: float = 0.0
    next_failure: float = np.inf
    failures: int = 0
    throttle_loss: float = 0.0  # job-seconds lost to clocks below 1 [s]
    energy: float = 0.0  # attributed device energy [J]
    tokens: float = 0.0
    paused: bool = False  # inside a checkpoint window at the end of the last step
    rate: float = 0.0  # iterations (or work units) per second over the last step
    power: float = 0.0  # attributed device power over the last step [W]

    @property
    def all_devices(self) -> np.ndarray:
        return np.concatenate([self.devices, self.network, self.hosts])


class JobSet:
    """All jobs of a scenario, their placement and their per-step demand."""

    def __init__(self, jobs, system, catalog, rng: np.random.Generator, h_w: float):
        self.system = system
        self.rng = rng
        self.h_w = h_w
        self.owner = np.full(system.n_devices, -1, dtype=np.int64)
        roles = {name: chip.role for name, chip in catalog.chips.items()}
        self.role = np.array([roles[k] for k in system.device_kind], dtype=object)
        self.jobs = [JobState(spec, i) for i, spec in enumerate(jobs)]
        self.floor = np.zeros(system.n_devices)  # power floor per device [W]
        self.ramp = np.full(system.n_devices, np.inf)  # ramp limit per device [W/s]
        for job in self.jobs:
            mask = select_devices(job.spec.devices.select, system) & (system.device_kind == job.spec.devices.kind)
            available = int(mask.sum())
            need = job.spec.devices.count or available
            if available == 0 or need > available:
                raise FieldError(("jobs", job.index, "devices"),
                                 f"asks for {need} '{job.spec.devices.kind}' devices; the selection has {available}")
            job.candidates = np.flatnonzero(mask)
            job.need = need

    @property
    def names(self) -> np.ndarray:
        return np.array([j.spec.name for j in self.jobs], dtype=object)

    # -- placement ------------------------------------------------------------------------------
    def _place(self, job: JobState) -> bool:
        """Gang placement: whole scale-up domains (UltraServer / NVL rack) first, in order."""
        sy = self.system
        free = job.candidates[self.owner[job.candidates] < 0]
        if free.size < job.need:
            return False
        domains = sy.rack_system[sy.device_rack[free]]
        # Whole domains in layout order: a gang never straddles more domains than it needs.
        _, first, counts = np.unique(domains, return_index=True, return_counts=True)
        order = np.argsort(first)
        take = np.minimum(counts[order], np.maximum(job.need - np.concatenate([[0], np.cumsum(counts[order])[:-1]]), 0))
        chosen = [free[first[o]: first[o] + k] if k else free[:0] for o, k in zip(order, take)]
        job.devices = np.concatenate(chosen)
        sleds = np.unique(sy.device_sled[job.devices])
        in_sleds = np.isin(sy.device_sled, sleds) & (self.owner < 0)
        in_sleds[job.devices] = False
        job.network = np.flatnonzero(in_sleds & np.isin(self.role, NETWORK_ROLES))
        job.hosts = np.flatnonzero(in_sleds & (self.role == "cpu")) if isinstance(job.spec, TrainingJob) else np.zeros(0, np.int64)
        self.owner[job.all_devices] = job.index
        smoothing = getattr(job.spec, "smoothing", None)
        if smoothing is not None:
            tdp = sy.chip["tdp"][job.devices]
            if smoothing.floor is not None:
                self.floor[job.devices] = smoothing.floor * tdp
            if smoothing.ramp is not None:
                self.ramp[job.devices] = smoothing.ramp
        return True

    def _release(self, job: JobState) -> None:
        self.owner[job.all_devices] = -1
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
            spec = job.spec
            if job.state == QUEUED:
                if t >= spec.start and self._place(job):
                    job.state = RUNNING
                    job.started = t
                    if getattr(spec, "mtbf", None):
                        job.next_failure = t + self.rng.exponential(spec.mtbf)
                else:
                    continue
            if job.state == DONE:
                continue
            if isinstance(spec, CpuJob):
                u[:, job.devices] = profile_mean(spec.profile, ts - job.started, self.h_w)[:, None]
                job.rate = float(np.mean(clock[job.devices]))
                continue
            # Failure: a tripped device or the MTBF clock.
            if job.state in (RUNNING, CHECKPOINT) and (tripped[job.devices].any() or t >= job.next_failure):
                job.state = RESTARTING
                job.failures += 1
                job.progress = job.checkpointed
                job.restart_until = t + spec.restart_time
            if job.state == RESTARTING:
                cool = t_die is None or bool(
                    (t_die[job.devices] < self.system.chip["t_throttle"][job.devices]).all())
                if t >= job.restart_until and cool:
                    job.state = RUNNING
                    repair = np.concatenate([repair, job.devices])
                    if spec.mtbf:
                        job.next_failure = t + self.rng.exponential(spec.mtbf)
                else:
                    u[:, job.all_devices] = 0.0
                    job.rate = 0.0
                    continue
            self._training(job, ts, clock, u)
        return repair

    def _training(self, job: JobState, ts: np.ndarray, clock: np.ndarray, u: np.ndarray) -> None:
        spec = job.spec
        n = ts.size
        f = float(clock[job.devices].min())  # synchronous: the slowest member sets the pace
        if spec.checkpoint is not None:
            interval, dur = spec.checkpoint.interval, spec.checkpoint.duration
            paused = np.mod(ts - job.started, interval) >= interval - dur
        else:
            paused = np.zeros(n, dtype=bool)
        dp = np.where(paused, 0.0, f * self.h_w / spec.iteration_time)
        p = job.progress + np.concatenate([[0.0], np.cumsum(dp)[:-1]])  # at each sub-step start
        phase = np.mod(p, 1.0)
        a2a_end = spec.compute_share + spec.all_to_all_share
        u_acc = np.where(phase < spec.compute_share, spec.u_compute,
                         np.where(phase < a2a_end, spec.u_all_to_all, spec.u_collective))
        u_net = np.where(phase < spec.compute_share, 0.1,
                         np.where(phase < a2a_end, spec.all_to_all_network_load, spec.network_load))
        if spec.checkpoint is not None:
            u_acc = np.where(paused, spec.checkpoint.u, u_acc)
            u_net = np.where(paused, 0.3, u_net)  # checkpoint writes cross the network
            # A checkpoint is saved when its window ends (paused → running).
            before = np.concatenate([[job.paused], paused[:-1]])
            ends = np.flatnonzero(before & ~paused)
            if ends.size:
                job.checkpointed = p[ends[-1]]
            job.paused = bool(paused[-1])
        u[:, job.devices] = u_acc[:, None]
        u[:, job.network] = u_net[:, None]
        u[:, job.hosts] = spec.host_load
        gained = float(dp.sum())
        if spec.iterations is not None and job.progress + gained >= spec.iterations:
            gained = spec.iterations - job.progress
            job.state = DONE
            self._release(job)
        else:
            job.state = CHECKPOINT if paused[-1] else RUNNING
        job.progress += gained
        job.tokens += gained * spec.tokens_per_iteration
        job.rate = gained / (self.h_w * n)
        job.throttle_loss += (1.0 - f) * self.h_w * n * (~paused).mean()

    def account(self, p_mean: np.ndarray, h: float) -> None:
        """Attribute the step's mean device power [W] to jobs."""
        sums = np.bincount(self.owner[self.owner >= 0], weights=p_mean[self.owner >= 0],
                           minlength=len(self.jobs))
        for job, p in zip(self.jobs, sums):
            job.power = p
            job.energy += p * h
