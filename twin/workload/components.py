"""The workload engine as components: demand at the start of a step, job accounting after power.

:class:`Demand` asks the :class:`~twin.workload.engine.Workload` for each device's utilisation
in the step's workload sub-steps, reading back the clocks and trips the governors set (so
throttling slows jobs) and the die temperatures (jobs restart once their devices have cooled).
:class:`JobAccounting` attributes the step's device power to jobs and gives the job outputs.
"""

from __future__ import annotations

import numpy as np

from twin.sim.component import Component, Control, Var

U = Var("device", "u", "1", "demanded utilisation", per_substep=True)
REPAIR = Var("device", "repair", "1", "devices whose job restarted this step (trips cleared)", record=False)
P_FLOOR = Var("device", "p_floor", "W", "power floor of the device's job", record=False)
RAMP = Var("device", "ramp", "W s-1", "ramp-rate limit of the device's job", record=False)
HELD = Var("device", "held", "1", "device is held by a job (in the active state even at u = 0)", record=False)
JOB_VARS = (
    Var("job", "progress", "1",
        "work done: iterations (training), requests completed (inference), device-seconds at full clock (cpu)"),
    Var("job", "throughput", "s-1", "progress per second (inference: output tokens per second)"),
    Var("job", "tokens", "1", "tokens processed, cumulative"),
    Var("job", "p", "W", "device power attributed to the job"),
    Var("job", "state", "1", "state at the end of the interval: 0 queued, 1 running, 2 checkpoint, "
        "3 restarting, 4 done, 5 unplaceable", last=True),
)


class Demand(Component):
    """Demanded utilisation per device and workload sub-step (rules and jobs).

    Parameters
    ----------
    workload : Workload
    """

    inputs = ("device.clock_limit", "device.tripped", "device.t_die")
    outputs = (U, REPAIR, P_FLOOR, RAMP, HELD)
    phase = "workload"

    def __init__(self, workload):
        self.workload = workload
        self.ever_used = np.zeros(workload.n_devices, dtype=bool)  # demanded utilisation ever above 0
        self._all_used = False  # every device's demand has been above 0 (nothing more to mark)
        self._unused = None  # the devices not marked yet, once they are few (:meth:`mark_used`)
        jobs = workload.jobs
        if jobs is not None:
            n_cdu = int(jobs.system.cdu_name.size)
            self.controls = (
                Control("job", "admit", "1", "a queued job may start (1) or is held (0)", 0, 1,
                        choices=("hold", "admit")),
                Control("job", "placement", "1", "CDU whose racks a queued job goes to first",
                        0, n_cdu, choices=("any", *map(str, jobs.system.cdu_name))),
            )

    def control(self, key: str) -> np.ndarray:
        jobs = self.workload.jobs
        if jobs is None or key not in ("job.admit", "job.placement"):
            return super().control(key)
        return jobs.admit.astype(np.int64) if key == "job.admit" else jobs.prefer_cdu + 1

    def set_control(self, key: str, values) -> None:
        """``job.admit`` (0 hold, 1 admit) and ``job.placement`` (0 any, k: the k-th CDU) of
        each job; they act on jobs still queued."""
        jobs = self.workload.jobs
        if jobs is None or key not in ("job.admit", "job.placement"):
            super().set_control(key, values)
        values = np.asarray(values, dtype=np.int64)
        if key == "job.admit":
            jobs.admit[:] = values.astype(bool)
        else:
            jobs.prefer_cdu[:] = values - 1

    def initialise(self, state) -> None:
        jobs = self.workload.jobs
        n = self.workload.n_devices
        state["device.repair"] = None
        state["device.p_floor"] = jobs.floor if jobs is not None else np.zeros(n)
        state["device.ramp"] = jobs.ramp if jobs is not None else np.full(n, np.inf)
        state["device.held"] = self._held()

    def _held(self):
        jobs = self.workload.jobs
        return jobs.held if jobs is not None else np.zeros(self.workload.n_devices, dtype=bool)

    def step(self, t: float, dt: float, state) -> None:
        u, repair = self.workload.demand(t, state["device.clock_limit"], state["device.tripped"],
                                         state["device.t_die"])
        state["device.u"] = u
        state["device.repair"] = repair
        state["device.held"] = self._held()
        if not self._all_used:
            self.ever_used |= u.max(axis=0) > 0
            self._all_used = bool(self.ever_used.all())

    def mark_used(self, u) -> None:
        """Mark the devices with demand above 0 in ``u`` (steps, n_sub, devices). Once few are
        left unmarked (a quarter or less: the idle devices of a large system, say; hall-1k
        leaves 456 of 3,352), only those are read."""
        if self._all_used:
            return
        left = self._unused
        if left is None:
            self.ever_used |= u.max(axis=(0, 1)) > 0
            left = np.flatnonzero(~self.ever_used)
            if 4 * left.size <= self.ever_used.size:
                self._unused = left
        else:
            hit = u[..., left].max(axis=(0, 1)) > 0
            self.ever_used[left[hit]] = True
            self._unused = left = left[~hit]
        self._all_used = left.size == 0


class JobAccounting(Component):
    """Device power attributed to jobs, and each job's progress, throughput, tokens and state.

    Parameters
    ----------
    jobs : JobSet
    """

    inputs = ("device.p_step",)
    outputs = JOB_VARS
    phase = "controllers"

    def __init__(self, jobs):
        self.jobs = jobs

    def step(self, t: float, dt: float, state) -> None:
        self.jobs.account(state["device.p_step"], dt)
        js = self.jobs.jobs
        state["job.progress"] = np.array([j.progress for j in js])
        state["job.throughput"] = np.array([j.rate for j in js])
        state["job.tokens"] = np.array([j.tokens for j in js])
        state["job.p"] = np.array([j.power for j in js])
        state["job.state"] = np.array([j.state for j in js], dtype=float)
