"""The compiled quiet-block loop of another checkout against this one's, in one process.

On a shared machine whole runs, and even parts timed in separate processes, move by more than
a few per cent from one run to the next. Here both loops (``twin/sim/fused.py`` of OTHER and
of this checkout, the other compiled against this checkout's ``twin.power.compiled`` and
``twin.sim.accounts``) are called alternately on the same block's arguments (captured from
this checkout's ``FusedLoop.run`` after ``--warm`` steps of the scenario, with the jobs' demand
written ahead and their gangs watched as a run's blocks have them), so the load falls on
both alike; it prints each loop's CPU time per step (``time.process_time``, median and
minimum) and the median of the pairs' ratios (this checkout / OTHER). Numba compiles both
loops into a temporary cache folder first (~10-40 CPU-s)::

    python -P benchmarks/loop_ab.py OTHER_CHECKOUT [scenario.yaml] [--steps 10] [--repeat 100]
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("other", help="the other checkout (its twin/sim/fused.py)")
    ap.add_argument("scenario", nargs="?", default=str(Path(__file__).parents[1] / "scenarios/bench/frontier.yaml"))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=100)
    ap.add_argument("--warm", type=int, default=30)
    a = ap.parse_args()
    # (the other module is loaded under another name, whose cached code numba cannot load back)
    cache = os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="twin-loop-ab-")
    try:
        _compare(a)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _compare(a) -> None:
    """Build, capture and time (:func:`main`'s options ``a``)."""
    import numpy as np

    from twin.scenario import load_scenario
    from twin.sim import fused
    from twin.sim.driver import Simulation

    spec = importlib.util.spec_from_file_location("twin_other_fused", Path(a.other) / "twin/sim/fused.py")
    other = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(other)
    loops = {"other": other._compiled(), "this": fused._compiled()}
    # (each loop takes its own parameters: the ones a later loop added come last)
    n_args = {"other": len(inspect.signature(other._loop).parameters),
              "this": len(inspect.signature(fused._loop).parameters)}

    sim = Simulation(load_scenario(Path(a.scenario), {"time": {"duration": "2 h"}, "record": {"device": "off"}}),
                     kernel="numba")
    sim.advance(a.warm, record=False)
    q = sim._quiet
    q.compiled()
    captured = {}
    real = fused._compiled
    fused._compiled = lambda: (lambda *args: captured.setdefault("args", args) and 0)
    try:
        buf = q._buffers(a.steps)
        U = sim.workload.rules_ahead(sim.step_index, a.steps, buf["device.u"])
        watch = finish = None
        if sim.workload.jobs is not None:  # (the jobs' demand written ahead and their gangs watched, as in a run)
            st = sim.state
            plan = sim.workload.jobs.ahead(sim.step_index, sim.h, a.steps, sim.n_sub, st["device.clock_limit"],
                                           st["device.tripped"], U)
            if plan is not None:
                _, watch, finish = plan
        q._fused(U, sim.step_index, buf, watch, finish)
    finally:
        fused._compiled = real
    args = captured["args"]
    t_e = args[list(inspect.signature(fused._loop).parameters).index("t_e")]
    times = {name: [] for name in loops}
    for name, f in loops.items():
        f(*args[:n_args[name]])
    for _ in range(a.repeat):
        for name, f in loops.items():
            t_e[:] = np.nan  # (each call takes its first step's exp, as a block after the per-step path)
            t0 = time.process_time()
            n = f(*args[:n_args[name]])
            times[name].append((time.process_time() - t0) / max(n, 1))
    print(f"{Path(a.scenario).name}: {sim.system.n_devices} devices, CPU ms per step, {a.repeat} calls of "
          f"{a.steps} steps each")
    for name, t in times.items():
        print(f"  {name:5s} median {1e3 * statistics.median(t):7.3f}  min {1e3 * min(t):7.3f}")
    ratio = statistics.median([b / x for x, b in zip(times["other"], times["this"])])
    print(f"  this / other, median of the pairs: {ratio:.3f}")


if __name__ == "__main__":
    main()
