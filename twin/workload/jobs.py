"""Jobs: placement on devices, synchronous training dynamics, CPU batch work.

Every job advances in lockstep with the driver. Per thermal step the driver hands the jobs the
clocks and trips of their devices; each job returns its devices' utilisation for every workload
sub-step (vectorised over sub-steps and devices; the Python loop is over jobs only).

Training (synchronous): progress p (iterations) advances through each iteration's compute at
rate min(f)/T_iter — the gang waits for its slowest member, so one throttled rack slows the whole
job — and through its collectives at 1/T_iter, whatever the clock (network time does not follow
the core clock; :func:`clocked_phase`). Within an iteration the phase φ = p mod 1 selects compute
(u_compute), all-to-all (MoE) or collective (u_collective) phases.
Checkpoints pause progress for their duration at the end of each interval of job time; a failure
(device trip or a draw from the job's MTBF) rolls progress back to the last checkpoint and idles
the job for its restart time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.scenario.errors import FieldError
from twin.scenario.model import CpuJob, InferenceJob, TrainingJob
from twin.workload.placement import choose_gang, largest_domain
from twin.workload.profile import profile_mean, select_devices

def phase_integral(x, share):
    """∫₀ˣ [frac(s) < share] ds: progress spent in the first ``share`` of each iteration [1]."""
    return np.floor(x) * share + np.minimum(np.mod(x, 1.0), share)


def clocked_phase(progress, compute_share, clock, inverse=False):
    """Progress in iterations ↔ the same progress in time at a compute clock [1].

    Parameters
    ----------
    progress : ndarray
        Iterations done: whole iterations plus the work done of the current one, in which the
        first ``compute_share`` is compute and the rest collectives (shares of the iteration's
        time at full clock) [1]. With ``inverse`` the progress in time (below).
    compute_share : float
        Compute share c of an iteration at full clock [1].
    clock : float
        Relative compute clock f, > 0 [1].
    inverse : bool
        Map progress in time back to progress in work.

    Returns
    -------
    ndarray
        Whole iterations plus the share of the current iteration's *time* at clock f that has
        passed [1] (or, with ``inverse``, the share of its work).

    Notes
    -----
    Compute takes c/f of the full-clock iteration time at clock f; collectives take 1 − c,
    whatever the core clock, since fabric bandwidth and latency do not follow it. An iteration
    then lasts D = c/f + 1 − c (in units of its full-clock time), its compute share of time is
    c_f = (c/f)/D, and work w of an iteration maps to time θ = (w/f)/D for w < c, (c/f + w − c)/D
    otherwise. At f = 1 the map is the identity.
    """
    c, f = compute_share, clock
    d = c / f + 1.0 - c
    k = np.floor(progress)
    x = np.asarray(progress) - k
    if inverse:
        return k + np.where(x < (c / f) / d, x * d * f, c + x * d - c / f)
    return k + np.where(x < c, (x / f) / d, (c / f + x - c) / d)


#: Job states (recorded as numbers in the ``job`` group). UNPLACEABLE: the gang can never be
#: placed (more devices than the selection holds, or no domain large enough for ``within: domain``).
QUEUED, RUNNING, CHECKPOINT, RESTARTING, DONE, UNPLACEABLE = 0, 1, 2, 3, 4, 5
STATE_NAMES = {QUEUED: "queued", RUNNING: "running", CHECKPOINT: "checkpoint",
               RESTARTING: "restarting", DONE: "done", UNPLACEABLE: "unplaceable"}
NETWORK_ROLES = ("nic", "switch")


def scale_up_link(catalog, kind: str) -> tuple[float, float]:
    """Per-chip bandwidth [B/s] and step latency [s] of the scale-up fabric of the catalogue's
    first sled, system or rack that names one for ``kind`` chips; no fabric: (inf, 0).

    For benchmarks that compare chips without a scenario; a simulated job uses the fabric its
    own devices' racks declare (:func:`declared_link`)."""
    fabrics = getattr(catalog, "fabrics", None) or {}
    for holder in (*getattr(catalog, "sleds", {}).values(), *getattr(catalog, "systems", {}).values(),
                   *getattr(catalog, "racks", {}).values()):
        name = (getattr(holder, "fabric", None) or {}).get(kind) if isinstance(getattr(holder, "fabric", None), dict) else None
        if name in fabrics:
            f = fabrics[name]
            return f.bandwidth.si, f.latency.si
    return np.inf, 0.0


def declared_link(catalog, names) -> tuple[float, float]:
    """Per-chip bandwidth [B/s] and step latency [s] of the scale-up fabric that the devices'
    sleds, racks or systems declare (``names``: the devices' fabric names, "" for none).

    Devices on several fabrics get the slowest (lowest bandwidth, highest latency): an inference
    pool's replicas share one serving model. No fabric: (inf, 0) — a replica of one chip, or chips
    whose collectives the catalogue does not time.
    """
    named = sorted({str(n) for n in np.asarray(names, dtype=object).ravel() if n})
    if not named:
        return np.inf, 0.0
    links = [(catalog.fabrics[n].bandwidth.si, catalog.fabrics[n].latency.si) for n in named]
    return min(b for b, _ in links), max(a for _, a in links)


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
    throttle_loss: float = 0.0  # job-seconds lost to compute clocks below 1 (collectives do not slow) [s]
    energy: float = 0.0  # attributed device energy [J]
    tokens: float = 0.0
    paused: bool = False  # inside a checkpoint window at the end of the last step
    rate: float = 0.0  # iterations (or work units) per second over the last step
    power: float = 0.0  # attributed device power over the last step [W]
    unplaceable: str = ""  # why the gang can never be placed
    path: object = None  # CollectivePath of a placed gang (training with fabric timing)
    t_collective: float = np.nan  # all-reduce (+ all-to-all) time per iteration on its fabrics [s]
    trace_end: float | None = None  # arrival of a trace-driven inference job's last request [s]
    #: scale-out NICs of a gang inside one scale-up domain: its collectives do not cross them
    quiet_nics: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def all_devices(self) -> np.ndarray:
        return np.concatenate([self.devices, self.network, self.hosts])


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
        self.jobs = [JobState(spec, i) for i, spec in enumerate(jobs)]
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
            if isinstance(job.spec, TrainingJob):  # phases; from the fabric once placed (_fabric_timing)
                job.iteration_time = job.spec.iteration_time
                job.compute_share = job.spec.compute_share
                job.all_to_all_share = job.spec.all_to_all_share
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
            if self._fabric_timed(job):
                self._check_fabrics(job)
            if isinstance(job.spec, InferenceJob):
                if need % job.spec.replica_size:
                    raise FieldError(("jobs", job.index, "replica_size"),
                                     f"{need} devices do not split into replicas of {job.spec.replica_size}")
                job.requests = self._requests(job, base)
                job.chip = catalog.chips[job.spec.devices.kind]
                fabrics = system.device_fabric[job.candidates] if system.device_fabric.size else []
                job.pool_args = self._pool_args(job, catalog, declared_link(catalog, fabrics))
                r = job.requests
                need = (r["prompt_tokens"] + r["output_tokens"]).to_numpy() * job.spec.model.kv_bytes_per_token
                cap = job.pool_args["kv_capacity"]
                if need.size and need.max() > cap:
                    i = int(np.argmax(need > cap))
                    raise FieldError(("jobs", job.index, "replica_size"),
                                     f"request {i} needs {need[i] / 1e9:.3g} GB of KV cache; a replica of "
                                     f"{job.spec.replica_size} holds {cap / 1e9:.3g} GB beside the weights")

    @staticmethod
    def _pool_args(job, catalog, link) -> dict:
        """The serving model of an inference job from its chip's catalogue figures (checked) and
        the scale-up ``link`` (bandwidth, latency) its devices' racks declare."""
        from twin.workload.inference import pool_arguments

        spec, m = job.spec, job.spec.model
        try:
            return pool_arguments(
                job.chip, spec.replica_size, params=m.params, fmt=m.format,
                kv_bytes_per_token=m.kv_bytes_per_token, layers=m.layers, d_model=m.d_model,
                link=link, mfu=spec.mfu, mbu=spec.mbu,
                layer_overhead=spec.layer_overhead, collective_overhead=spec.collective_overhead,
                max_batch_size=spec.max_batch_size, max_prefill_tokens=spec.max_prefill_tokens,
                prefill_chunk=spec.prefill_chunk)
        except ValueError as exc:
            field = "replica_size" if "do not fit" in str(exc) else "devices"
            raise FieldError(("jobs", job.index, field), f"'{spec.devices.kind}': {exc}") from None

    def _requests(self, job, base):
        """The job's request table: a trace file (Azure format) or seeded Poisson arrivals."""
        from twin.workload.traces import AZURE_CODE_TRACE, poisson_arrivals, read_azure_trace

        spec = job.spec
        horizon = 10 * 365 * 86400.0
        if spec.trace is not None:
            path = AZURE_CODE_TRACE if spec.trace == "azure-code" else (base / spec.trace)
            try:
                table = read_azure_trace(path)
            except (ValueError, OSError) as exc:
                raise FieldError(("jobs", job.index, "trace"), str(exc)) from None
            table = table.assign(arrival=table["arrival"] / spec.time_scale)
            job.trace_end = spec.start + (float(table["arrival"].max()) if len(table) else 0.0)
        else:
            arr = spec.arrivals
            rate = arr.daily_profile if arr.daily_profile is not None else arr.rate
            duration = getattr(self, "duration", None) or horizon
            table = poisson_arrivals(rate, duration, self.rng, base_rate=arr.rate)
        return table.assign(arrival=table["arrival"] + spec.start)

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
        if self._fabric_timed(job):
            from twin.network.paths import PathError, collective_path

            try:
                job.path = collective_path(self.system, self.catalog, job.devices, self.scale_out)
            except PathError:
                return False  # e.g. a span over sleds without scale-out NICs: wait for a better spot
        sleds = np.unique(sy.device_sled[job.devices])
        in_sleds = np.isin(sy.device_sled, sleds) & (self.owner < 0)
        in_sleds[job.devices] = False
        job.network = np.flatnonzero(in_sleds & np.isin(self.role, NETWORK_ROLES))
        job.hosts = (np.flatnonzero(in_sleds & (self.role == "cpu"))
                     if isinstance(job.spec, (TrainingJob, InferenceJob)) else np.zeros(0, np.int64))
        self.owner[job.all_devices] = job.index
        self._owned = None
        if self._fabric_timed(job):
            self._fabric_timing(job)
        smoothing = getattr(job.spec, "smoothing", None)
        if smoothing is not None:
            tdp = sy.chip["tdp"][job.devices]
            if smoothing.floor is not None:
                self.floor[job.devices] = smoothing.floor * tdp
            if smoothing.ramp is not None:
                self.ramp[job.devices] = smoothing.ramp
        return True

    def _preferred(self, job: JobState, free: np.ndarray) -> np.ndarray:
        """The free candidates on the job's preferred CDU when they can hold it, else all."""
        cdu = self.prefer_cdu[job.index]
        if cdu < 0:
            return free
        sy = self.system
        on = free[sy.rack_cdu[sy.device_rack[free]] == cdu]
        return on if on.size >= job.need else free

    @staticmethod
    def _fabric_timed(job: JobState) -> bool:
        """Training whose collective phases come from the fabrics (``collective_bytes`` or
        ``all_to_all_bytes``)."""
        spec = job.spec
        return isinstance(spec, TrainingJob) and bool(spec.collective_bytes or spec.all_to_all_bytes)

    def _check_fabrics(self, job: JobState) -> None:
        """Fabric-timed jobs: every candidate has a scale-up fabric, and a gang larger than any
        domain has a scale-out fabric with NICs on its sleds (raises FieldError)."""
        from twin.network.paths import PathError, collective_path

        sy, c = self.system, job.candidates
        none = c[sy.device_fabric[c] == ""] if sy.device_fabric.size else c
        if none.size:
            d = none[0]
            raise FieldError(("jobs", job.index, "collective_bytes" if job.spec.collective_bytes
                              else "all_to_all_bytes"),
                             f"'{sy.device_kind[d]}' in rack '{sy.rack_name[sy.device_rack[d]]}' has no "
                             "scale-up fabric to time collectives on (give its rack or system a `fabric:`)")
        if job.need > largest_domain(self.domain[c]):
            try:
                collective_path(sy, self.catalog, c, self.scale_out)
            except PathError as exc:
                raise FieldError(("jobs", job.index, "devices"), str(exc)) from None

    def _fabric_timing(self, job: JobState) -> None:
        """Iteration phases of a placed gang from its fabrics: compute for ``iteration_time ×
        compute_share``, then the all-to-all and all-reduce times of its collective path."""
        from twin.network.collectives import allreduce_time, path_all_to_all_time

        spec = job.spec
        t_compute = spec.iteration_time * spec.compute_share
        t_a2a = (float(path_all_to_all_time(job.path, spec.all_to_all_bytes)) if spec.all_to_all_bytes
                 else spec.iteration_time * spec.all_to_all_share)
        t_ar = (float(allreduce_time(job.path, spec.collective_bytes, spec.collective_algorithm))
                if spec.collective_bytes else spec.iteration_time * (1 - spec.compute_share - spec.all_to_all_share))
        job.t_collective = t_a2a + t_ar
        if job.path.domains == 1:
            job.quiet_nics = job.network[self.role[job.network] == "nic"]
        job.iteration_time = t_compute + t_a2a + t_ar
        job.compute_share = t_compute / job.iteration_time
        job.all_to_all_share = t_a2a / job.iteration_time

    def warnings(self, t_end: float) -> list[str]:
        """Jobs that did nothing: never placed, never started, or served no request."""
        out = []
        for job in self.jobs:
            name = f"job {job.spec.name}"
            if job.state == UNPLACEABLE:
                out.append(f"{name} can never be placed: {job.unplaceable}")
            elif job.state == QUEUED and job.spec.start < t_end:
                out.append(f"{name} never started: its devices were busy the whole run")
            elif isinstance(job.spec, InferenceJob) and job.state != QUEUED and job.progress == 0:
                out.append(f"{name} served 0 requests")
            end = job.trace_end
            if end is not None and end < t_end:
                out.append(f"{name}: its trace's last request arrives at {end:,.0f} s of a {t_end:,.0f} s run "
                           f"(no requests after)")
        return out

    def _release(self, job: JobState) -> None:
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
            spec = job.spec
            if job.state == UNPLACEABLE:
                continue
            if job.state == QUEUED:
                if t >= spec.start and self.admit[job.index] and self._place(job):
                    job.state = RUNNING
                    job.started = t
                    if isinstance(spec, InferenceJob):
                        self._start_pool(job, t)
                    if getattr(spec, "mtbf", None):
                        job.next_failure = t + self.rng.exponential(spec.mtbf)
                else:
                    continue
            if job.state == DONE:
                continue
            if isinstance(spec, CpuJob):
                level = profile_mean(spec.profile, ts - job.started, self.h_w)
                u[:, job.devices] = level[:, None]
                # Work in device-seconds at full clock: Σ u·f·dt over the job's devices.
                work = float(level.sum() * self.h_w * (clock[job.devices] * ~tripped[job.devices]).sum())
                job.progress += work
                job.rate = work / (self.h_w * ts.size)
                continue
            if isinstance(spec, InferenceJob):
                self._inference(job, ts, clock, tripped, u)
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

    def _start_pool(self, job: JobState, t: float) -> None:
        from twin.workload.inference import InferencePool

        spec = job.spec
        n_rep = job.devices.size // spec.replica_size
        job.pool = InferencePool(n_rep, requests=job.requests, t_start=t, **job.pool_args)
        job.replicas = job.devices.reshape(n_rep, spec.replica_size)

    def _inference(self, job: JobState, ts, clock, tripped, u) -> None:
        """Serve the sub-steps: replicas run at their slowest chip's clock (0 if one tripped)."""
        spec = job.spec
        rep_clock = clock[job.replicas].min(axis=1) * ~tripped[job.replicas].any(axis=1)
        tokens = 0.0
        for k, t in enumerate(ts):
            step = job.pool.advance(t, self.h_w, rep_clock)
            u[k, job.replicas] = step.u[:, None]
            tokens += float(step.output_tokens.sum())
        u[:, job.network] = spec.network_load
        u[:, job.hosts] = spec.host_load
        job.tokens += tokens
        job.progress = float(job.pool.n_completed)
        job.rate = tokens / (self.h_w * ts.size)

    def _training(self, job: JobState, ts: np.ndarray, clock: np.ndarray, u: np.ndarray) -> None:
        spec = job.spec
        n = ts.size
        f = float(clock[job.devices].min())  # synchronous: the slowest member sets the pace
        if spec.checkpoint is not None:
            interval, dur = spec.checkpoint.interval, spec.checkpoint.duration
            paused = np.mod(ts - job.started, interval) >= interval - dur
        else:
            paused = np.zeros(n, dtype=bool)
        # Progress in time at this step's clock: compute stretches by 1/f, the collectives do
        # not (the fabric's bandwidth and latency do not follow the core clock). A stopped clock
        # (f = 0) stops the job, collectives included: its devices have tripped.
        c = job.compute_share
        slowed = 0.0 < f < 1.0
        d = c / f + 1.0 - c if slowed else 1.0  # iteration time / full-clock iteration time
        c_f = (c / f) / d if slowed else c  # compute share of the iteration's time
        start = float(clocked_phase(job.progress, c, f)) if slowed else job.progress
        dp = np.where(paused, 0.0, self.h_w / (job.iteration_time * d) if f > 0 else 0.0)
        p = start + np.concatenate([[0.0], np.cumsum(dp)[:-1]])  # at each sub-step start
        # Share of each sub-step spent in the compute and all-to-all phases: exact means over
        # the progress covered (so a step longer than an iteration gets the iteration average).
        a2a_end = c_f + job.all_to_all_share / d
        moving = dp > 0
        span = np.where(moving, dp, 1.0)
        f_c = np.where(moving, (phase_integral(p + dp, c_f) - phase_integral(p, c_f)) / span,
                       np.mod(p, 1.0) < c_f)
        f_ca = np.where(moving, (phase_integral(p + dp, a2a_end) - phase_integral(p, a2a_end)) / span,
                        np.mod(p, 1.0) < a2a_end)
        f_a = f_ca - f_c
        f_coll = 1.0 - f_ca
        u_acc = spec.u_compute * f_c + spec.u_all_to_all * f_a + spec.u_collective * f_coll
        u_net = spec.compute_network_load * f_c + spec.all_to_all_network_load * f_a + spec.network_load * f_coll
        if spec.checkpoint is not None:
            u_acc = np.where(paused, spec.checkpoint.u, u_acc)
            u_net = np.where(paused, spec.checkpoint.network_load, u_net)  # writes cross the network
            # A checkpoint is saved when its window ends (paused → running).
            before = np.concatenate([[job.paused], paused[:-1]])
            ends = np.flatnonzero(before & ~paused)
            if ends.size:
                job.checkpointed = float(clocked_phase(p[ends[-1]], c, f, inverse=True)) if slowed else p[ends[-1]]
            job.paused = bool(paused[-1])
        u[:, job.devices] = u_acc[:, None]
        u[:, job.network] = u_net[:, None]
        if job.quiet_nics.size:  # collectives stay on the scale-up fabric; NICs carry checkpoints only
            u[:, job.quiet_nics] = (np.where(paused, 0.3, 0.1) if spec.checkpoint is not None
                                    else np.full(n, 0.1))[:, None]
        u[:, job.hosts] = spec.host_load
        gained = float(dp.sum())
        if slowed:
            gained = float(clocked_phase(start + gained, c, f, inverse=True)) - job.progress
        if spec.iterations is not None and job.progress + gained >= spec.iterations:
            gained = spec.iterations - job.progress
            job.state = DONE
            self._release(job)
        else:
            job.state = CHECKPOINT if paused[-1] else RUNNING
        job.progress += gained
        job.tokens += gained * spec.tokens_per_iteration
        job.rate = gained / (self.h_w * n)
        # Time lost: the compute share of the running time, stretched by 1/f (all of it at f = 0).
        job.throttle_loss += (1.0 - f) * (c_f if f > 0 else 1.0) * self.h_w * n * (~paused).mean()

    def _ownership(self):
        """Held mask, owned devices and their jobs' indices, cached until a job is placed or
        released (the only places ``owner`` changes)."""
        if self._owned is None:
            held = self.owner >= 0
            devices = np.flatnonzero(held)
            self._owned = (held, devices, self.owner[devices])
        return self._owned

    @property
    def held(self) -> np.ndarray:
        """Devices a job holds (read-only; a new array after every placement or release)."""
        return self._ownership()[0]

    def account(self, p_mean: np.ndarray, h: float) -> None:
        """Attribute the step's mean device power [W] to jobs."""
        _, devices, owner = self._ownership()
        sums = np.bincount(owner, weights=p_mean[devices], minlength=len(self.jobs))
        for job, p in zip(self.jobs, sums):
            job.power = p
            job.energy += p * h
