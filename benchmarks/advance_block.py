"""Cost of advancing the quickstart by one 5-minute control interval (300 one-second thermal
steps) with ``Simulation.advance``, with and without recording.

The simulation is built once, advanced past the idle start into the training-like swing
(10 min), then copied for each repeat so every timed block covers the same steps. CPU time
(user + system of this process, ``time.process_time``) is the figure to compare on a shared
machine; the median and the range over the repeats are printed, with the wall time beside.

Usage: ``python benchmarks/advance_block.py [--steps 300] [--repeats 9] [--scenario PATH]``.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from pathlib import Path

from twin.scenario import load_scenario
from twin.sim.driver import Simulation

ROOT = Path(__file__).resolve().parents[1] / "scenarios"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default=str(ROOT / "quickstart.yaml"))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--warmup", type=int, default=600, help="thermal steps before the timed blocks")
    args = ap.parse_args(argv)
    sim = Simulation(load_scenario(args.scenario, {"time": {"duration": "2 h"}}))
    sim.advance(args.warmup)
    print(f"{Path(args.scenario).stem}: {sim.system.n_devices} devices, kernel {sim.kernel}, "
          f"quiet-block kernel {sim.block_kernel}, "
          f"blocks of {args.steps} steps from t = {sim.time:.0f} s")
    for record in (False, True):
        cpu, wall = [], []
        for _ in range(args.repeats):
            s = copy.deepcopy(sim)
            c0, w0 = time.process_time(), time.perf_counter()
            s.advance(args.steps, record=record)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
        med = statistics.median(cpu)
        print(f"advance({args.steps}, record={record}): CPU {med * 1e3:.1f} ms median "
              f"({min(cpu) * 1e3:.1f}-{max(cpu) * 1e3:.1f}), {med / args.steps * 1e6:.0f} us per step; "
              f"wall {statistics.median(wall) * 1e3:.1f} ms median")


if __name__ == "__main__":
    main()
