"""CPU time of the compiled quiet-block loop's parts (twin/sim/fused.py), each timed alone.

Builds a scenario (default: the Frontier-size benchmark, 47,360 devices), takes ``--warm``
steps, then captures the arguments of one compiled block call and calls each part (chip power,
the shelves' over-current test, the sled networks, the governors) and the whole loop
(``FusedLoop.run`` over ``--steps`` steps) on them. CPU time of the process (``time.process_time``),
median over ``--repeat`` calls; the state advances with each call (as in a run)::

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
    real()
    parts = {"chip power": (fused._power_jit, fused._power), "shelves' test": (fused._over_jit, fused._over),
             "sled networks": (fused._sleds_jit, fused._sleds), "governors": (fused._govern_jit, fused._govern)}
    print(f"{Path(a.scenario).name}: {sim.system.n_devices} devices, {sim.system.sled_name.size} sleds, "
          f"CPU ms per call, median of {a.repeat}")
    for name, (f, py) in parts.items():
        params = list(inspect.signature(py).parameters)
        call = [0] + [args[p] for p in params[1:]]
        f(*call)
        t = []
        for _ in range(a.repeat):
            t0 = time.process_time()
            f(*call)
            t.append(time.process_time() - t0)
        print(f"  {name:15s} {1e3 * statistics.median(t):7.3f}")
    t = []
    for _ in range(max(3, a.repeat // 6)):
        buf = q._buffers(k)
        U = np.ascontiguousarray(np.broadcast_to(buf["device.u"][:1] * 0 + 0.5, buf["device.u"].shape))
        t0 = time.process_time()
        n = loop.run(U, sim.step_index, sim.h, np.full(sim.system.n_racks, 1e12), np.zeros(sim.system.n_racks), buf)
        t.append((time.process_time() - t0) / max(n, 1))
    print(f"  {'FusedLoop.run':15s} {1e3 * statistics.median(t):7.3f}  (per step, {k} steps per call)")


if __name__ == "__main__":
    main()
