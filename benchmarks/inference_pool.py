"""Inference pool speed: the mixed-hall scenario's serving job (36 replicas of 8 GB300 chips, a
400B FP8 model, Poisson arrivals) served alone for 10 minutes at 100 ms sub-steps and full clock,
by the numpy reference one sub-step per call (``advance``) and by the compiled loop (numba) one
sub-step and one thermal step (10 sub-steps, ``advance_steps``) per call; CPU time (user + system, ``getrusage``). The request tables
must come out identical.

Usage: ``python -P benchmarks/inference_pool.py`` from the repository root.
"""

from __future__ import annotations

import resource
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SUB_STEP = 0.1  # [s]
SUB_STEPS = 10  # per thermal step
STEPS = 600  # thermal steps of 1 s


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    from twin.scenario import load_scenario
    from twin.sim.driver import Simulation
    from twin.workload.inference import InferencePool

    sim = Simulation(load_scenario(ROOT / "scenarios" / "mixed-hall.yaml"))
    job = next(j for j in sim.workload.jobs.jobs if j.spec.kind == "inference")
    ks = job.kind_state
    n_rep = job.candidates.size // job.spec.replica_size
    n = STEPS * SUB_STEPS
    tables = {}
    for kernel, per_call in (("numpy", 1), ("numba", 1), ("numba", SUB_STEPS)):
        pool = InferencePool(n_rep, requests=ks.requests, t_start=0.0, kernel=kernel, **ks.pool_args)
        pool.advance_steps(0.0, SUB_STEP, per_call)  # first call outside the timing (numba's load)
        c0 = cpu_seconds()
        done = per_call
        while done < n:
            k = min(per_call, n - done)
            if k == 1:
                pool.advance(pool.t, SUB_STEP)
            else:
                pool.advance_steps(pool.t, SUB_STEP, k)
            done += k
        used = cpu_seconds() - c0
        tables[(kernel, per_call)] = pool.request_table()
        print(f"{kernel:5s}, {per_call:2d} sub-step(s) per call: {used:6.2f} CPU-s for {n * SUB_STEP:.0f} s "
              f"({1e6 * used / (n - per_call):6.0f} us per sub-step); {pool.n_completed} requests completed")
    reference = tables.pop(("numpy", 1))
    for table in tables.values():
        pd.testing.assert_frame_equal(reference, table, check_exact=True)
    print("request tables identical")


if __name__ == "__main__":
    main()
