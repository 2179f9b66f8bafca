"""Cost of comparing the twin with telemetry on large halls: CPU seconds (user+sys) per call.

1. ``Telemetry.arrays`` — measured power, temperature, utilisation … on the (intervals, devices)
   grid, which every calibration run and score reads: a week hourly (168 intervals) for 100 to
   10,000 devices;
2. ``measured_quantiles`` — an ensemble's ``p_measured``: 32 members × a day at 1 min (1,440
   steps) for 100 to 2,000 devices (the members' stack itself is 32 × 1,440 × 8 B per device).

Both are vectorised (one scatter per quantity; device chunks of numpy arithmetic): the CPU time
per device should stay flat as the hall grows. Usage: ``python benchmarks/telemetry_compare.py``.
"""

from __future__ import annotations

import resource

import numpy as np
import pandas as pd


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def telemetry(n_dev: int, n_t: int):
    from twin.calibrate.spec import QUANTITIES
    from twin.calibrate.telemetry import Telemetry

    rng = np.random.default_rng(0)
    times = pd.date_range("2025-01-01", periods=n_t, freq="1h")
    devices = [f"rack{i // 8}/s00/gpu-{i % 8}" for i in range(n_dev)]
    index = pd.MultiIndex.from_product([devices, times], names=["device", "time"])
    data = pd.DataFrame({q: rng.random(len(index)) for q in QUANTITIES}, index=index)
    return Telemetry(data, 3600.0, "bench", {d: d for d in devices}), times


def main() -> None:
    from twin.calibrate.ensemble import measured_quantiles

    print("Telemetry.arrays, 168 hourly intervals:")
    for n in (100, 1_000, 10_000):
        tele, times = telemetry(n, 168)
        c0 = cpu()
        out = tele.arrays(times[0], times[-1] + pd.Timedelta(hours=1))
        dt = cpu() - c0
        assert out["power"].shape == (168, n) and not np.isnan(out["power"]).any()
        print(f"  {n:>6} devices: {dt:.3f} CPU-s ({1e6 * dt / n:.1f} µs per device)")
    print("measured_quantiles, 32 members x 1,440 steps, two activity classes, Student's t:")
    rng = np.random.default_rng(1)
    q = np.array([0.05, 0.5, 0.95])
    for n in (100, 500, 2_000):
        members = 300.0 + rng.normal(0.0, 2.0, (32, 1440, n))
        active = rng.random((1440, n)) > 0.5
        s, dof = np.where(active, 16.0, 4.4), np.where(active, 30.0, 40.0)
        c0 = cpu()
        measured_quantiles(members, s, dof, q)
        dt = cpu() - c0
        print(f"  {n:>6} devices: {dt:.3f} CPU-s ({1e3 * dt / n:.2f} ms per device)")


if __name__ == "__main__":
    main()
