"""Cost of one control step of :class:`twin.control.FacilityEnv`, against the plain run.

For each scenario: build the environment, reset, then time ``n`` steps of the no-op policy
(every control held) and ``n`` steps that move the CDU set-point each interval (the set-point
change re-solves the CDU boundary). CPU time (user + system of this process,
``resource.getrusage``) is the figure to compare on a shared machine; wall time is printed next
to it. The plain run's cost per thermal step (:class:`twin.sim.driver.Simulation` alone) shows
what the environment adds: observations, the interval account and the action checks.

Usage: ``python benchmarks/control_step.py [--steps N]``.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import numpy as np

from twin.control import FacilityEnv
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

ROOT = Path(__file__).resolve().parents[1] / "scenarios"
#: scenario → overrides: the quickstart at full load (5 min intervals of 300 one-second steps)
#: and the annual Leesburg hall (one-hour intervals of one step, 2,320 devices, with the plant).
CASES = {
    "quickstart": ("quickstart.yaml", {"time": {"duration": "2 h"}}),
    "annual-leesburg": ("annual-leesburg.yaml", {"time": {"duration": "30 d"}}),
}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _time(fn, n):
    c0, w0 = _cpu(), time.perf_counter()
    for i in range(n):
        fn(i)
    return (_cpu() - c0) / n, (time.perf_counter() - w0) / n


def bench(name: str, n: int) -> dict:
    path, over = CASES[name]
    env = FacilityEnv(ROOT / path, overrides=over)
    env.reset()
    hold = env.hold_action()
    cpu_hold, wall_hold = _time(lambda i: env.step(hold), n)
    env.reset()
    key = "cdu.t_supply_set"
    moved = []
    for i in range(n):
        a = env.hold_action()
        a[key] = a[key] + (1.0 if i % 2 == 0 else -1.0)
        moved.append(a)
    cpu_move, wall_move = _time(lambda i: env.step(moved[i]), n)
    sim = Simulation(load_scenario(ROOT / path, over))
    k = env.k
    c0 = _cpu()
    for _ in range(n * k):
        sim.step()
    cpu_plain = (_cpu() - c0) / n
    return {"scenario": name, "thermal steps per interval": k, "simulated s per interval": env.metadata["interval_s"],
            "cpu ms/step (hold)": 1e3 * cpu_hold, "wall ms/step (hold)": 1e3 * wall_hold,
            "cpu ms/step (set-point moved)": 1e3 * cpu_move, "wall ms/step (set-point moved)": 1e3 * wall_move,
            "cpu ms per interval, plain run": 1e3 * cpu_plain,
            "steps/s (cpu, hold)": 1.0 / cpu_hold if cpu_hold else np.inf}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20, help="control steps timed per case")
    args = ap.parse_args()
    for name in CASES:
        row = bench(name, args.steps)
        print(row["scenario"])
        for k, v in row.items():
            if k != "scenario":
                print(f"  {k:34s} {v:10.2f}" if isinstance(v, float) else f"  {k:34s} {v:>10}")


if __name__ == "__main__":
    main()
