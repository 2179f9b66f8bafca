"""Telemetry on the (intervals, devices) grid, as the fit and the scores read it: one scatter per
quantity, checked against the per-device reindex it replaces."""

from __future__ import annotations

import numpy as np
import pandas as pd

from twin.calibrate.spec import QUANTITIES
from twin.calibrate.telemetry import Telemetry


def test_arrays_match_a_per_device_reindex():
    """Rows off the grid, outside the window, of devices not asked for, and missing rows: the
    array holds each asked device's value at its interval and NaN elsewhere, exactly as reindexing
    each device's rows on the grid does."""
    rng = np.random.default_rng(2)
    times = pd.date_range("2025-01-01", periods=30, freq="1h")
    devices = ["a", "b", "c"]
    index = pd.MultiIndex.from_product([devices, times], names=["device", "time"])
    data = pd.DataFrame({q: rng.random(len(index)) for q in QUANTITIES}, index=index)
    data = data.drop(index[[3, 17, 40]])  # missing samples
    extra = pd.DataFrame({q: [9.0] for q in QUANTITIES},
                         index=pd.MultiIndex.from_tuples([("a", times[5] + pd.Timedelta(minutes=30))],
                                                         names=["device", "time"]))
    tele = Telemetry(pd.concat([data, extra]).sort_index(), 3600.0, "test", {d: d for d in devices})
    start, end = times[4], times[25]
    asked = ["c", "a", "zz"]  # order differs from the data's; "zz" has no rows
    got = tele.arrays(start, end, asked)
    grid = tele.grid(start, end)
    for j, dev in enumerate(asked):
        for q in QUANTITIES:
            if dev == "zz":
                assert np.isnan(got[q][:, j]).all()
                continue
            want = tele.data.xs(dev, level="device").reindex(grid)[q].to_numpy(dtype=float)
            np.testing.assert_array_equal(got[q][:, j], want)
    assert got["power"].shape == (21, 3)
