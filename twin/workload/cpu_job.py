"""CPU batch jobs (``cpu``): data preparation and preprocessing following a utilisation profile.

Work is counted in device-seconds at full clock, Σ u·f·dt over the job's devices (a tripped
device does none).
"""

from __future__ import annotations

from twin.workload.job_kinds import JobKind, register
from twin.workload.profile import profile_mean


@register("cpu")
class CpuBatch(JobKind):
    """Batch work on CPUs at the level of its profile (no state beyond the shared one)."""

    def step(self, jobs, job, t, ts, clock, tripped, u, t_die):
        level = profile_mean(job.spec.profile, ts - job.started, jobs.h_w)
        u[:, job.devices] = level[:, None]
        work = float(level.sum() * jobs.h_w * (clock[job.devices] * ~tripped[job.devices]).sum())
        job.progress += work
        job.rate = work / (jobs.h_w * ts.size)
        return None
