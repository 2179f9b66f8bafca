"""Cost of one control step of :class:`twin.control.FacilityEnv`, split into the simulation's
own steps and what the environment adds.

For each scenario: build the environment, reset, then for each of ``n`` control intervals take a
copy of the simulation, time one ``env.step`` of the no-op policy (every control held), and time
the copy advancing the same thermal steps bare (``Simulation.advance``, no recording, no
observations, no account): the difference is the environment's side (the action checks, the
interval's observation and KPIs, read from the simulation's totals at the interval's ends:
nothing per thermal step). The environment's own work per interval is also timed alone, which
is far less noisy on a loaded machine than a difference of two totals. Then ``n`` steps that
move the CDU set-point each interval (the set-point change re-solves the CDU boundary).

CPU time (user + system of this process, ``time.process_time``) is the figure to compare on a
shared machine; the wall time of the held step is printed too (with the load average at the
start and the end: on a loaded machine it is the CPU time stretched by the other processes);
medians and bests (the least) over the intervals are printed.

Usage: ``python benchmarks/control_step.py [--steps N] [--case NAME]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import timeit
from pathlib import Path

from twin.control import FacilityEnv
from twin.control.env import _copy_sim

ROOT = Path(__file__).resolve().parents[1] / "scenarios"
#: scenario → overrides: the quickstart at full load (5 min intervals of 300 one-second steps)
#: and the annual Leesburg hall (one-hour intervals of one step, 2,320 devices, with the plant).
CASES = {
    "quickstart": ("quickstart.yaml", {"time": {"duration": "2 h"}}),
    "annual-leesburg": ("annual-leesburg.yaml", {"time": {"duration": "30 d"}}),
}


def _cpu() -> float:
    return time.process_time()


def bench(name: str, n: int) -> dict:
    path, over = CASES[name]
    env = FacilityEnv(ROOT / path, overrides=over)
    env.reset()
    hold = env.hold_action()
    if env.k > 1:
        for _ in range(2):  # past the quickstart's idle start, into the training-like swing
            env.step(hold)
    env_cpu, env_wall, sim_cpu = [], [], []
    for _ in range(n):
        bare = _copy_sim(env.sim)
        c0, w0 = _cpu(), time.perf_counter()
        env.step(hold)
        env_cpu.append(_cpu() - c0)
        env_wall.append(time.perf_counter() - w0)
        c0 = _cpu()
        bare.advance(env.k, record=False)
        sim_cpu.append(_cpu() - c0)
    sim, acc, peak = env.sim, env.account, env._peak

    def ends():  # what a control step does besides the thermal steps
        env._apply(hold)
        acc.start(sim)
        for o in env.observations:
            o.start(sim)
        peak.open(sim)
        peak.close(sim)
        env._observe(sim, peak.device)
        acc.kpis(sim, peak.max)

    per_interval = min(timeit.repeat(ends, number=20, repeat=5, timer=_cpu)) / 20
    env.reset()
    key = "cdu.t_supply_set"
    moved = []
    for i in range(n):
        a = env.hold_action()
        a[key] = a[key] + (1.0 if i % 2 == 0 else -1.0)
        moved.append(a)
    move_cpu = []
    for i in range(n):
        c0 = _cpu()
        env.step(moved[i])
        move_cpu.append(_cpu() - c0)
    med = statistics.median
    return {"scenario": name, "thermal steps per interval": env.k, "simulated s per interval": env.metadata["interval_s"],
            "cpu ms/step (hold), median": 1e3 * med(env_cpu), "cpu ms/step (hold), best": 1e3 * min(env_cpu),
            "wall ms/step (hold), median": 1e3 * med(env_wall), "wall ms/step (hold), best": 1e3 * min(env_wall),
            "cpu ms/step (set-point moved), median": 1e3 * med(move_cpu),
            "cpu ms/step (set-point moved), best": 1e3 * min(move_cpu),
            "cpu ms, bare simulation steps": 1e3 * med(sim_cpu),
            "cpu ms, environment side": 1e3 * (med(env_cpu) - med(sim_cpu)),
            "cpu ms, env per-interval work alone": 1e3 * per_interval}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20, help="control steps timed per case")
    ap.add_argument("--case", choices=list(CASES), action="append", help="only these cases")
    args = ap.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    for name in args.case or CASES:
        row = bench(name, args.steps)
        print(row["scenario"])
        for k, v in row.items():
            if k != "scenario":
                print(f"  {k:40s} {v:10.2f}" if isinstance(v, float) else f"  {k:40s} {v:>10}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
