"""Ensemble cost: N members on W Dask workers against N/W single runs.

The subject is ``scenarios/a100-server.yaml`` (the BioHPC server with its fitted overlay, a week at
1 min steps), or ``--scenario``. Measured, each after waiting for the machine to be quiet
(≤ ``--quiet`` % CPU, at most 10 minutes):

1. one member run in this process, as a worker runs it (:func:`twin.sweep.run.run_variant`,
   streaming to Zarr): wall and CPU (user+sys) seconds;
2. ``twin run --ensemble N --workers W`` as the command runs it (:func:`run_ensemble`: the
   cluster's start, the members, the quantiles, the write): wall, and the CPU of this process and
   of its reaped children (the workers);
3. the CPU seconds every *other* process on the machine used meanwhile, and the load average
   before and after, so a figure taken on a busy machine says so.

The target is wall ≤ 1.2 × (N / W) × one run. On a shared machine the wall figure is only as
good as the CPUs the workers got: compare CPU too (the ensemble's CPU over N × one run's CPU is
the overhead that no scheduling can hide).

Usage: ``python benchmarks/ensemble_wall.py [--n 32] [--workers 2] [--duration '2 d'] [--repeat 1]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cpu_self_children() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def other_cpu() -> dict:
    """CPU seconds so far of every process outside this one's tree (by pid)."""
    import psutil

    me = psutil.Process()
    mine = {me.pid} | {p.pid for p in me.children(recursive=True)}
    out = {}
    for p in psutil.process_iter(["pid"]):
        if p.pid in mine:
            continue
        try:
            t = p.cpu_times()
            out[p.pid] = t.user + t.system
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return out


def other_since(before: dict) -> float:
    after = other_cpu()
    return sum(max(v - before.get(pid, 0.0), 0.0) for pid, v in after.items())


def wait_quiet(limit: float, patience: float = 600.0) -> float:
    import psutil

    t0 = time.perf_counter()
    use = psutil.cpu_percent(interval=2.0)
    while use > limit and time.perf_counter() - t0 < patience:
        use = psutil.cpu_percent(interval=2.0)
    return use


def one_run(scenario: Path, folder: Path, overrides: dict) -> tuple[float, float]:
    """(wall, CPU) seconds of one member run, as a worker runs it."""
    from twin.calibrate.ensemble import member_overrides, uncertain_figures
    from twin.scenario import load_scenario
    from twin.sweep.run import run_variant

    loaded = load_scenario(scenario, overrides)
    unc = uncertain_figures(loaded)
    ov = {**overrides, **member_overrides(loaded, unc.params, unc.mean, 0)}
    c0, t0 = cpu_self_children(), time.perf_counter()
    r = run_variant(str(scenario.resolve()), ov, loaded.text, str(folder / "one.zarr"))
    wall, cpu = time.perf_counter() - t0, cpu_self_children() - c0
    assert r["ok"], r["error"]
    return wall, cpu


def ensemble(scenario: Path, folder: Path, n: int, workers: int, overrides: dict) -> tuple[float, float, float]:
    """(wall, CPU of this process and its workers, wall inside run_ensemble's members) seconds."""
    from twin.calibrate.ensemble import run_ensemble
    from twin.scenario import load_scenario

    loaded = load_scenario(scenario, overrides)
    c0, t0 = cpu_self_children(), time.perf_counter()
    res = run_ensemble(loaded, folder / "ens.nc", n, seed=1, workers=workers, overrides=overrides)
    wall, cpu = time.perf_counter() - t0, cpu_self_children() - c0
    assert res.n_failed == 0, res.errors
    return wall, cpu, float(sum(res.member_walls))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", type=Path, default=ROOT / "scenarios" / "a100-server.yaml")
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--duration", help="override the scenario's duration (e.g. '2 d')")
    ap.add_argument("--quiet", type=float, default=25.0, help="CPU %% below which the machine counts as quiet")
    args = ap.parse_args(argv)
    overrides = {"time": {"duration": args.duration}} if args.duration else {}
    print(f"# {args.scenario.name}{' for ' + args.duration if args.duration else ''}: N = {args.n} on "
          f"{args.workers} workers; {os.cpu_count()} CPUs")
    for k in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="twin-ens-bench-") as tmp:
            tmp = Path(tmp)
            use = wait_quiet(args.quiet)
            load0, others = os.getloadavg()[0], other_cpu()
            w1, c1 = one_run(args.scenario, tmp, overrides)
            o1 = other_since(others)
            use2 = wait_quiet(args.quiet)
            load1, others = os.getloadavg()[0], other_cpu()
            we, ce, members = ensemble(args.scenario, tmp, args.n, args.workers, overrides)
            oe = other_since(others)
            load2 = os.getloadavg()[0]
        target = 1.2 * args.n / args.workers * w1
        print(f"one run: wall {w1:.2f} s, CPU {c1:.2f} s (CPU use before {use:.0f} %, load {load0:.1f}; "
              f"other processes used {o1:.1f} CPU-s meanwhile)")
        print(f"ensemble: wall {we:.2f} s (target ≤ 1.2 × N/W × one run = {target:.2f} s: "
              f"{'met' if we <= target else 'NOT met'}; ratio {we / (args.n / args.workers * w1):.2f}), "
              f"CPU {ce:.2f} s = {ce / (args.n * c1):.2f} × N one-run CPUs, members' own wall {members:.1f} s "
              f"(CPU use before {use2:.0f} %, load {load1:.1f} → {load2:.1f}; other processes used {oe:.1f} CPU-s "
              f"meanwhile)", flush=True)


if __name__ == "__main__":
    main()
