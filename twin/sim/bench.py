"""Benchmark runs: simulated seconds per wall second, peak memory, where the time goes.

``python -m twin.sim.bench SCENARIO [--duration D]`` runs one scenario in this process (streaming
to a temporary Zarr store, as a real run would) and prints one JSON line; ``twin bench`` runs
each scenario in its own process so that peak memory is that run's alone.
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


def bench(path: str, duration: str | None = None, solver: str = "fast") -> dict:
    from twin.export.writers import ZarrStream
    from twin.scenario import load_scenario
    from twin.sim.driver import Simulation

    over = {"time": {"duration": duration}} if duration else None
    t0 = time.perf_counter()
    loaded = load_scenario(path, over)
    with tempfile.TemporaryDirectory() as tmp:
        stream = ZarrStream(Path(tmp) / "bench.zarr")
        sim = Simulation(loaded, solver=solver, sink=stream)
        build = time.perf_counter() - t0
        totals = sim.run()
        t1 = time.perf_counter()
        stream.finish()
        write = time.perf_counter() - t1
    simulated = totals.steps * sim.h
    run = totals.wall_seconds
    shares = {k: v / run for k, v in sim.timing.items()}
    shares["other"] = max(0.0, 1.0 - sum(shares.values()))
    return {
        "scenario": Path(path).stem,
        "devices": int(sim.system.n_devices),
        "racks": int(sim.system.n_racks),
        "simulated_s": simulated,
        "step_s": sim.h,
        "workload_step_s": sim.h_w,
        "build_s": build,
        "run_s": run,
        "write_s": write,
        "speed": simulated / run,
        "peak_rss_MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "shares": shares,
        "machine": f"{platform.machine()} {platform.python_implementation()} {platform.python_version()}",
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario")
    ap.add_argument("--duration")
    ap.add_argument("--solver", default="fast")
    args = ap.parse_args(argv)
    sys.stdout.write(json.dumps(bench(args.scenario, args.duration, args.solver)) + "\n")


if __name__ == "__main__":
    main()
