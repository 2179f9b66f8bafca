"""CPU time of the compiled quiet-block loop's parts (twin/sim/fused.py), each timed alone.

Builds a scenario (default: the Frontier-size benchmark, 47,360 devices), takes ``--warm``
steps, then captures the arguments of one compiled block call and calls each part (chip power,
the shelves' over-current test, the sled networks, the governors) and the whole loop
(``FusedLoop.run`` over ``--steps`` steps) on them. CPU time of the process (``time.process_time``),
median over ``--repeat`` calls; the parts are called in the loop's order, so the state
advances with each round (as in a run)::

    python benchmarks/fused_parts.py [scenario.yaml] [--repeat 60] [--steps 20]
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", nargs="?", default=str(Path(__file__).parents[1] / "scenarios/bench/frontier.yaml"))
    ap.add_argument("--repeat", type=int, default=60)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warm", type=int, default=30)
    a = ap.parse_args()

    from twin.scenario import load_scenario
    from twin.sim import fused
    from twin.sim.driver import Simulation

    sim = Simulation(load_scenario(Path(a.scenario), {"time": {"duration": "2 h"}, "record": {"device": "off"}}),
                     kernel="numba")
    sim.advance(a.warm, record=False)
    q = sim._quiet
    loop = q.compiled()
    captured = {}
    real = fused._compiled

    def capture():
        real()
        return lambda *args: captured.setdefault("args", args) and 0

    fused._compiled = capture
    try:
        k = a.steps
        buf = q._buffers(k)
        U = sim.workload.rules_ahead(sim.step_index, k, buf["device.u"])
        q._fused(U, sim.step_index, buf)
    finally:
        fused._compiled = real
    names = list(inspect.signature(fused._loop).parameters)
    args = dict(zip(names, captured["args"]))
    args.update(write_mean=not args.get("p_alias", False), write_clock=True)  # (the loop's per-step flags)
    if "tile_rack" in args:  # (each part over all racks and chunks: every tile at once)
        args.update(r_a=0, r_b=args["tile_rack"].size, c_a=0, c_b=args["tile_chunk"].size)
    if hasattr(fused, "_chunks"):  # (the loop holds the node temperatures in its chunks' inputs)
        params = list(inspect.signature(fused._chunks).parameters)[1:-1]
        fused._chunks_jit(True, *[args[p] for p in params], fused.SLED_CHUNK)
    real()
    labels = {"_power": "chip power", "_over": "shelves' test", "_sleds": "sled networks", "_govern": "governors"}
    print(f"{Path(a.scenario).name}: {sim.system.n_devices} devices, {sim.system.sled_name.size} sleds, "
          f"CPU ms per call, median of {a.repeat}")
    calls = []
    for part, label in labels.items():  # (the parts the loop has, in its order, each on the whole step)
        py, f = getattr(fused, part, None), getattr(fused, part + "_jit", None)
        params = list(inspect.signature(py).parameters)[1:] if py is not None else ["?"]
        if all(p in args for p in params):  # (a part called within another is timed with it)
            calls.append((label, f, [0] + [args[p] for p in params]))
    times = {label: [] for label, _, _ in calls}
    for label, f, call in calls:
        f(*call)
    for _ in range(a.repeat):  # each part in turn, as in a step (the die temperatures move)
        for label, f, call in calls:
            t0 = time.process_time()
            f(*call)
            times[label].append(time.process_time() - t0)
    for label, t in times.items():
        print(f"  {label:15s} {1e3 * statistics.median(t):7.3f}")
    for fresh in (True, False):  # the block's arrays new for each call (as a run), or the same
        t = []
        buf = q._buffers(k)
        U = np.full(buf["device.u"].shape, 0.5)
        for _ in range(max(3, a.repeat // 6)):
            if fresh:
                buf = q._buffers(k)
            t0 = time.process_time()
            n = loop.run(U, sim.step_index, sim.h, np.full(sim.system.n_racks, 1e12), np.zeros(sim.system.n_racks),
                         buf)
            t.append((time.process_time() - t0) / max(n, 1))
        what = "new arrays" if fresh else "same arrays"
        print(f"  {'FusedLoop.run':15s} {1e3 * statistics.median(t):7.3f}  (per step, {k} steps per call, {what})")


if __name__ == "__main__":
    main()
