"""CPU batch jobs (``cpu``): data preparation and preprocessing following a utilisation profile.

Work is counted in device-seconds at full clock, Σ u·f·dt over the job's devices (a tripped
device does none).
"""

from __future__ import annotations

import numpy as np

from twin.workload.job_kinds import Ahead, JobKind, register
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

    def ahead(self, jobs, job, t, ts, clock, tripped, u):
        """The profile's levels are open-loop; the work done reads each step's clocks and trips
        (given to ``finish``), summed as :meth:`step` sums them."""
        level = profile_mean(job.spec.profile, ts - job.started, jobs.h_w)
        u[..., job.devices] = level[..., None]
        total = level.sum(axis=1) * jobs.h_w
        n_sub = ts.shape[1]

        def finish(n, clock, off):
            dev = job.devices
            work = total[:n] * (clock[:n][:, dev] * ~off[:n][:, dev]).sum(axis=1)
            progress = np.add.accumulate(np.concatenate([[job.progress], work]))
            rate = work / (jobs.h_w * n_sub)
            job.progress, job.rate = float(progress[n]), float(rate[n - 1])
            return progress[1:], rate, np.full(n, float(job.tokens)), np.full(n, float(job.state))

        return Ahead(ts.shape[0], np.zeros(0, dtype=np.int64), finish)
