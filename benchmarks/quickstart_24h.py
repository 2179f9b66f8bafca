"""Benchmark: the quickstart scenario for 24 simulated hours on one process.

Reports simulated seconds per wall second (the run alone, not start-up or writing) and the peak
resident memory of the process. Usage::

    python benchmarks/quickstart_24h.py [--solver fast] [--duration "24 h"] [--scenario PATH]
"""

from __future__ import annotations

import argparse
import platform
import resource
import time
from pathlib import Path

from twin.scenario import load_scenario
from twin.sim.driver import Simulation

ROOT = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default=str(ROOT / "scenarios" / "quickstart.yaml"))
    ap.add_argument("--duration", default="24 h")
    ap.add_argument("--solver", default="fast")
    args = ap.parse_args()
    t0 = time.perf_counter()
    sim = Simulation(load_scenario(args.scenario, {"time": {"duration": args.duration}}), solver=args.solver)
    built = time.perf_counter() - t0
    totals = sim.run()
    simulated = totals.steps * sim.h
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"machine:            {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    print(f"scenario:           {Path(args.scenario).name}, {sim.system.n_devices} devices, {sim.system.n_racks} racks")
    print(f"simulated:          {simulated:,.0f} s in {totals.steps:,} steps of {sim.h:g} s ({args.solver})")
    print(f"build:              {built:.2f} s")
    print(f"run (wall):         {totals.wall_seconds:.2f} s")
    print(f"speed:              {simulated / totals.wall_seconds:,.0f}x real time")
    print(f"per step:           {totals.wall_seconds / totals.steps * 1e6:.0f} us")
    print(f"peak memory (RSS):  {peak_mib:,.0f} MiB")


if __name__ == "__main__":
    main()
