"""The 0.1-20 Hz fluctuation share against series whose spectrum is known."""

from __future__ import annotations

import numpy as np

from twin.report.kpi import STEADY_RELATIVE_RMS, band_energy_share

DT = 0.1  # s: Nyquist 5 Hz
T = np.arange(6000) * DT


def test_swing_inside_the_band_is_all_in_band():
    p = 1e5 + 1e4 * np.sin(2 * np.pi * 1.0 * T)  # 1 Hz, a whole number of periods
    assert band_energy_share(p, DT) > 0.999  # all of it at 1 Hz; 1e-3 for FFT leakage


def test_slow_drift_is_outside_the_band():
    p = 1e5 + 1e4 * np.sin(2 * np.pi * T / T.size / DT)  # one period over the series: 1/600 Hz
    assert band_energy_share(p, DT) < 1e-3


def test_steady_series_has_no_share():
    """A constant load with round-off wiggles (1e-12 of the mean) is steady: share 0, not a ratio
    of round-off that changes with summation order."""
    rng = np.random.default_rng(0)
    p = 65918.5 * (1 + 1e-12 * rng.standard_normal(T.size))
    assert band_energy_share(p, DT) == 0.0
    # Just above the threshold it is a real (tiny) swing again.
    q = 1e5 * (1 + 10 * STEADY_RELATIVE_RMS * np.sqrt(2) * np.sin(2 * np.pi * 1.0 * T))
    assert band_energy_share(q, DT) > 0.999
