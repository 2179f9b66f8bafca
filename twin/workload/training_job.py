"""Synchronous training jobs (``training``, ``moe_training``).

Progress p (iterations) advances through each iteration's compute at rate min(f)/T_iter — the
gang waits for its slowest member, so one throttled rack slows the whole job — and through its
collectives at 1/T_iter, whatever the clock (network time does not follow the core clock;
:func:`clocked_phase`). Within an iteration the phase φ = p mod 1 selects compute (u_compute),
all-to-all (MoE) or collective (u_collective) phases. Checkpoints pause
progress for their duration at the end of each interval of job time; a failure (device trip or a
draw from the job's MTBF) rolls progress back to the last checkpoint and idles the job for its
restart time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.scenario.errors import FieldError
from twin.workload.job_kinds import CHECKPOINT, DONE, RESTARTING, RUNNING, Ahead, JobKind, register
from twin.workload.placement import largest_domain


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


def _phase_load(spec, ks, p, dp, c_f: float, d: float):
    """Accelerator and network load of sub-steps starting at progress ``p`` (in time at the
    step's clock) and advancing by ``dp`` [1], elementwise over any shape: the share of each
    sub-step spent in the compute, all-to-all and collective phases (exact means over the
    progress covered, so a step longer than an iteration gets the iteration average) weighting
    each phase's load; ``c_f`` is the compute share of the iteration's time and ``d`` its time
    over the full-clock iteration time."""
    a2a_end = c_f + ks.all_to_all_share / d
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
    return u_acc, u_net


def _put_load(job, u, u_acc, u_net, paused) -> None:
    """Write the gang's load into ``u`` (…, sub-steps, devices): ``u_acc`` on its devices,
    ``u_net`` on its network devices and ``host_load`` on its hosts, for the sub-steps of
    ``u_acc`` (…, sub-steps)."""
    spec, ks = job.spec, job.kind_state
    job.view("devices").put(u, u_acc[..., None])
    job.view("network").put(u, u_net[..., None])
    if ks.quiet_nics.size:  # collectives stay on the scale-up fabric; NICs carry checkpoints only
        u[..., ks.quiet_nics] = (np.where(paused, 0.3, 0.1) if spec.checkpoint is not None
                                 else np.full(paused.shape, 0.1))[..., None]
    job.view("hosts").put(u, spec.host_load)


@dataclass
class TrainingState:
    """Running state of a training job beyond the shared one (numbers in SI units)."""

    iteration_time: float = np.nan  # at full clock, from the fabrics once placed when fabric-timed [s]
    compute_share: float = np.nan  # of an iteration [1]
    all_to_all_share: float = np.nan  # of an iteration [1]
    checkpointed: float = 0.0  # progress at the last saved checkpoint [1]
    paused: bool = False  # inside a checkpoint window at the end of the last step
    restart_until: float = 0.0  # [s]
    next_failure: float = np.inf  # [s]
    failures: int = 0
    throttle_loss: float = 0.0  # job-seconds lost to compute clocks below 1 (collectives do not slow) [s]
    path: object = None  # CollectivePath of a placed gang (with fabric timing)
    t_collective: float = np.nan  # all-reduce (+ all-to-all) time per iteration on its fabrics [s]
    #: scale-out NICs of a gang inside one scale-up domain: its collectives do not cross them
    quiet_nics: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


def fabric_timed(spec) -> bool:
    """Training whose collective phases come from the fabrics (``collective_bytes`` or
    ``all_to_all_bytes``)."""
    return bool(spec.collective_bytes or spec.all_to_all_bytes)


@register("training", "moe_training")
class Training(JobKind):
    """Synchronous data/tensor-parallel training (MoE adds an all-to-all phase)."""

    state_type = TrainingState
    uses_hosts = True

    def new_state(self, spec) -> TrainingState:
        # Phases from the scenario; from the fabric once placed (``placed``) when fabric-timed.
        return TrainingState(iteration_time=spec.iteration_time, compute_share=spec.compute_share,
                             all_to_all_share=spec.all_to_all_share)

    def prepare(self, jobs, job, base) -> None:
        """Fabric-timed jobs: every candidate has a scale-up fabric, and a gang larger than any
        domain has a scale-out fabric with NICs on its sleds (raises FieldError)."""
        if not fabric_timed(job.spec):
            return
        from twin.network.paths import PathError, collective_path

        sy, c = jobs.system, job.candidates
        none = c[sy.device_fabric[c] == ""] if sy.device_fabric.size else c
        if none.size:
            d = none[0]
            raise FieldError(("jobs", job.index, "collective_bytes" if job.spec.collective_bytes
                              else "all_to_all_bytes"),
                             f"'{sy.device_kind[d]}' in rack '{sy.rack_name[sy.device_rack[d]]}' has no "
                             "scale-up fabric to time collectives on (give its rack or system a `fabric:`)")
        if job.need > largest_domain(jobs.domain[c]):
            try:
                collective_path(sy, jobs.catalog, c, jobs.scale_out)
            except PathError as exc:
                raise FieldError(("jobs", job.index, "devices"), str(exc)) from None

    def reserve(self, jobs, job) -> bool:
        """A fabric-timed gang needs a collective path (e.g. a span over sleds without
        scale-out NICs waits for a better spot)."""
        if not fabric_timed(job.spec):
            return True
        from twin.network.paths import PathError, collective_path

        try:
            job.kind_state.path = collective_path(jobs.system, jobs.catalog, job.devices, jobs.scale_out)
        except PathError:
            return False
        return True

    def placed(self, jobs, job) -> None:
        if fabric_timed(job.spec):
            self._fabric_timing(jobs, job)
        smoothing = job.spec.smoothing
        if smoothing is not None:
            tdp = jobs.system.chip["tdp"][job.devices]
            if smoothing.floor is not None:
                jobs.floor[job.devices] = smoothing.floor * tdp
            if smoothing.ramp is not None:
                jobs.ramp[job.devices] = smoothing.ramp

    @staticmethod
    def _fabric_timing(jobs, job) -> None:
        """Iteration phases of a placed gang from its fabrics: compute for ``iteration_time ×
        compute_share``, then the all-to-all and all-reduce times of its collective path."""
        from twin.network.collectives import allreduce_time, path_all_to_all_time

        spec, ks = job.spec, job.kind_state
        t_compute = spec.iteration_time * spec.compute_share
        t_a2a = (float(path_all_to_all_time(ks.path, spec.all_to_all_bytes)) if spec.all_to_all_bytes
                 else spec.iteration_time * spec.all_to_all_share)
        t_ar = (float(allreduce_time(ks.path, spec.collective_bytes, spec.collective_algorithm))
                if spec.collective_bytes else spec.iteration_time * (1 - spec.compute_share - spec.all_to_all_share))
        ks.t_collective = t_a2a + t_ar
        if ks.path.domains == 1:
            ks.quiet_nics = job.network[jobs.role[job.network] == "nic"]
        ks.iteration_time = t_compute + t_a2a + t_ar
        ks.compute_share = t_compute / ks.iteration_time
        ks.all_to_all_share = t_a2a / ks.iteration_time

    def start(self, jobs, job, t: float) -> None:
        if job.spec.mtbf:
            job.kind_state.next_failure = t + jobs.rng.exponential(job.spec.mtbf)

    def step(self, jobs, job, t, ts, clock, tripped, u, t_die):
        """Failure (a tripped device or the MTBF clock), restart once the gang has cooled below
        its throttle point, then the iteration phases."""
        spec, ks = job.spec, job.kind_state
        repair = None
        if job.state in (RUNNING, CHECKPOINT) and (job.view("devices").take(tripped).any() or t >= ks.next_failure):
            job.state = RESTARTING
            ks.failures += 1
            job.progress = ks.checkpointed
            ks.restart_until = t + spec.restart_time
        if job.state == RESTARTING:
            cool = t_die is None or bool(
                (t_die[job.devices] < jobs.system.chip["t_throttle"][job.devices]).all())
            if t >= ks.restart_until and cool:
                job.state = RUNNING
                repair = job.devices
                if spec.mtbf:
                    ks.next_failure = t + jobs.rng.exponential(spec.mtbf)
            else:
                u[:, job.all_devices] = 0.0
                job.rate = 0.0
                return None
        self._iterate(jobs, job, ts, clock, u)
        return repair

    @staticmethod
    def _iterate(jobs, job, ts: np.ndarray, clock: np.ndarray, u: np.ndarray) -> None:
        spec, ks, h_w = job.spec, job.kind_state, jobs.h_w
        n = ts.size
        f = float(job.view("devices").take(clock).min())  # synchronous: the slowest member sets the pace
        if spec.checkpoint is not None:
            interval, dur = spec.checkpoint.interval, spec.checkpoint.duration
            paused = np.mod(ts - job.started, interval) >= interval - dur
        else:
            paused = np.zeros(n, dtype=bool)
        # Progress in time at this step's clock: compute stretches by 1/f, the collectives do
        # not (the fabric's bandwidth and latency do not follow the core clock). A stopped clock
        # (f = 0) stops the job, collectives included: its devices have tripped.
        c = ks.compute_share
        slowed = 0.0 < f < 1.0
        d = c / f + 1.0 - c if slowed else 1.0  # iteration time / full-clock iteration time
        c_f = (c / f) / d if slowed else c  # compute share of the iteration's time
        start = float(clocked_phase(job.progress, c, f)) if slowed else job.progress
        dp = np.where(paused, 0.0, h_w / (ks.iteration_time * d) if f > 0 else 0.0)
        p = start + np.concatenate([[0.0], np.cumsum(dp)[:-1]])  # at each sub-step start
        u_acc, u_net = _phase_load(spec, ks, p, dp, c_f, d)
        if spec.checkpoint is not None:
            u_acc = np.where(paused, spec.checkpoint.u, u_acc)
            u_net = np.where(paused, spec.checkpoint.network_load, u_net)  # writes cross the network
            # A checkpoint is saved when its window ends (paused → running).
            before = np.concatenate([[ks.paused], paused[:-1]])
            ends = np.flatnonzero(before & ~paused)
            if ends.size:
                ks.checkpointed = float(clocked_phase(p[ends[-1]], c, f, inverse=True)) if slowed else p[ends[-1]]
            ks.paused = bool(paused[-1])
        _put_load(job, u, u_acc, u_net, paused)
        gained = float(dp.sum())
        if slowed:
            gained = float(clocked_phase(start + gained, c, f, inverse=True)) - job.progress
        if spec.iterations is not None and job.progress + gained >= spec.iterations:
            gained = spec.iterations - job.progress
            job.state = DONE
            jobs.release(job)
        else:
            job.state = CHECKPOINT if paused[-1] else RUNNING
        job.progress += gained
        job.tokens += gained * spec.tokens_per_iteration
        job.rate = gained / (h_w * n)
        # Time lost: the compute share of the running time, stretched by 1/f (all of it at f = 0).
        ks.throttle_loss += (1.0 - f) * (c_f if f > 0 else 1.0) * h_w * n * (~paused).mean()

    def ahead(self, jobs, job, t, ts, clock, tripped, u):
        """The iterations of the steps starting at ``t`` while the gang runs at full clock,
        as :meth:`_iterate` takes them one step at a time (the same operations, elementwise over
        the block's steps): at f = 1 a step's load depends only on the progress at its start,
        which is the sum of the steps' gains before it. Stops before the step at which the job
        fails (its MTBF clock) or reaches its last iteration; the compiled loop stops before a
        step that starts with a gang device below full clock or tripped."""
        spec, ks, h_w = job.spec, job.kind_state, jobs.h_w
        sel = job.view("devices")
        if sel.take(clock).min() != 1.0 or sel.take(tripped).any():
            return None
        k = ts.shape[0]
        steps = int(np.searchsorted(t, ks.next_failure, side="left"))  # (the first step at or after it fails)
        if spec.checkpoint is not None:
            interval, dur = spec.checkpoint.interval, spec.checkpoint.duration
            paused = np.mod(ts - job.started, interval) >= interval - dur
        else:
            paused = np.zeros(ts.shape, dtype=bool)
        dp = np.where(paused, 0.0, h_w / (ks.iteration_time * 1.0))
        gained = dp.sum(axis=1)
        start = np.add.accumulate(np.concatenate([[job.progress], gained]))  # progress at each step's start, and the end
        if spec.iterations is not None:
            steps = min(steps, int(np.searchsorted(start[1:] >= spec.iterations, True)))
        if steps == 0:
            return None
        p = start[:k, None] + np.concatenate([np.zeros((k, 1)), np.cumsum(dp, axis=1)[:, :-1]], axis=1)
        u_acc, u_net = _phase_load(spec, ks, p, dp, ks.compute_share, 1.0)
        if spec.checkpoint is not None:
            u_acc = np.where(paused, spec.checkpoint.u, u_acc)
            u_net = np.where(paused, spec.checkpoint.network_load, u_net)
        _put_load(job, u, u_acc, u_net, paused)
        tokens = np.add.accumulate(np.concatenate([[job.tokens], gained * spec.tokens_per_iteration]))
        rate = gained / (h_w * ts.shape[1])
        flat = paused.ravel()
        ends = np.flatnonzero(np.concatenate([[ks.paused], flat[:-1]]) & ~flat)  # checkpoints saved
        state = np.where(paused[:, -1], CHECKPOINT, RUNNING)

        def finish(n, clock, off):
            saved = ends[ends < n * ts.shape[1]]
            if saved.size:
                ks.checkpointed = p.ravel()[saved[-1]]
            ks.paused = bool(paused[n - 1, -1])
            job.state = int(state[n - 1])
            job.progress, job.tokens, job.rate = float(start[n]), float(tokens[n]), float(rate[n - 1])
            return start[1: n + 1], rate[:n], tokens[1: n + 1], state[:n]

        return Ahead(steps, job.devices, finish)

    def kpis(self, job) -> dict[str, float]:
        return {"throttle_loss_s": job.kind_state.throttle_loss, "failures": job.kind_state.failures}

    def collective(self, job) -> tuple[str, int, float]:
        ks = job.kind_state
        if ks.path is None:
            return "", 0, ks.t_collective
        return ks.path.fabric, ks.path.domains, ks.t_collective
