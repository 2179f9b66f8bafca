"""Benchmark runs: simulated seconds per CPU second and per wall second, peak memory, where the
time goes.

``python -P -m twin.sim.bench SCENARIO [--duration D]`` runs one scenario in this process
(streaming to a temporary Zarr store, as a real run would) and prints one JSON line; ``twin
bench`` runs each scenario in its own process so that peak memory is that run's alone. A
scenario error is one line on stderr and exit code 2.

Speed is given both per CPU second (user + system time of this process, all its threads, from
``getrusage``) and per wall second. On a machine shared with other work the wall time measures
the neighbours as much as the twin; the CPU time does not (it still rises somewhat when other
processes compete for caches and memory bandwidth).
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

#: Exit code for a scenario that cannot be run (the CLI's bad-input code).
EXIT_BAD_INPUT = 2


def cpu_seconds() -> float:
    """User + system CPU time of this process so far, all threads [s]."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def bench(path: str, duration: str | None = None, solver: str = "fast") -> dict:
    """Run one scenario and measure it.

    Returns
    -------
    dict
        ``startup_cpu_s`` (imports, the Zarr writer's included, load, build and initial state,
        before the first step),
        ``run_cpu_s`` and ``run_s`` (the step loop in CPU and wall seconds), ``write_s`` (the
        end of the Zarr stream), ``speed_cpu`` and ``speed`` (simulated seconds per CPU and per
        wall second of the loop), ``peak_rss_MiB``, ``shares`` of the loop's wall time by phase,
        the scenario's size and the chip kernel (:mod:`twin.power.kernels`).
    """
    c0 = cpu_seconds()
    from twin.export.writers import ZarrStream
    from twin.scenario import load_scenario
    from twin.sim.driver import Simulation

    over = {"time": {"duration": duration}} if duration else None
    loaded = load_scenario(path, over)
    with tempfile.TemporaryDirectory() as tmp:
        stream = ZarrStream(Path(tmp) / "bench.zarr")
        stream.prepare()  # (the first flush's imports: start-up, not the loop)
        sim = Simulation(loaded, solver=solver, sink=stream)
        c1 = cpu_seconds()
        totals = sim.run()
        c2 = cpu_seconds()
        t1 = time.perf_counter()
        stream.finish()
        write = time.perf_counter() - t1
    simulated = totals.steps * sim.h
    run = totals.wall_seconds
    run_cpu = c2 - c1
    shares = {k: v / run for k, v in sim.timing.items()}
    shares["other"] = max(0.0, 1.0 - sum(shares.values()))
    return {
        "scenario": Path(path).stem,
        "devices": int(sim.system.n_devices),
        "racks": int(sim.system.n_racks),
        "simulated_s": simulated,
        "step_s": sim.h,
        "workload_step_s": sim.h_w,
        "startup_cpu_s": c1 - c0,
        "run_cpu_s": run_cpu,
        "run_s": run,
        "write_s": write,
        "speed_cpu": simulated / run_cpu if run_cpu > 0 else float("inf"),
        "speed": simulated / run if run > 0 else float("inf"),
        "peak_rss_MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "shares": shares,
        "blas_threads": sim.blas_threads,
        "kernel": sim.kernel,
        "machine": f"{platform.machine()} {platform.python_implementation()} {platform.python_version()}",
    }


def main(argv=None):
    from twin.scenario.errors import ScenarioError

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario")
    ap.add_argument("--duration")
    ap.add_argument("--solver", default="fast")
    args = ap.parse_args(argv)
    try:
        result = bench(args.scenario, args.duration, args.solver)
    except ScenarioError as exc:
        sys.stderr.write(f"{exc}\n")
        sys.exit(EXIT_BAD_INPUT)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
