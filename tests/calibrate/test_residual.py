"""The residual model behind the calibrated twin's band: closed forms and nominal coverage on
residuals with known noise (white and serially correlated)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from twin.calibrate.fit import band_coverage
from twin.calibrate.residual import (
    ResidualModel,
    allan_variance,
    effective_size,
    fit_residual,
    lag1_autocorrelation,
    level_shift_variance,
    quantile_factor,
)


def ar1(rng, rho: float, sigma: float, n: int, reps: int) -> np.ndarray:
    """``reps`` stationary AR(1) series of ``n`` samples, marginal standard deviation ``sigma``
    (shape (n, reps))."""
    e = np.empty((n, reps))
    e[0] = rng.normal(0.0, sigma, reps)
    innov = rng.normal(0.0, sigma * math.sqrt(1 - rho * rho), (n, reps))
    for t in range(1, n):
        e[t] = rho * e[t - 1] + innov[t]
    return e


def test_autocorrelation_effective_size_and_allan_variance_closed_forms():
    """White noise: ρ₁ ≈ 0 and σ²_A(τ) = s²/τ. AR(1) with ρ = 0.8: ρ₁ ≈ 0.8. A random walk of
    step d: σ²_A(τ) = d²(2τ² + 1)/(6τ) ≈ d²τ/3 (Allan 1966). Tolerances: 4 standard errors of
    each estimate over the samples used (the series are long, the bounds are loose enough for
    any seed)."""
    rng = np.random.default_rng(3)
    white = rng.normal(0.0, 2.0, (4000, 4))
    assert abs(lag1_autocorrelation(white)) < 4 / math.sqrt(16000)
    for tau in (1, 8, 64):
        assert allan_variance(white, tau) == pytest.approx(4.0 / tau, rel=0.15), tau
    red = ar1(rng, 0.8, 1.0, 4000, 4)
    assert lag1_autocorrelation(red) == pytest.approx(0.8, abs=4 * 0.6 / math.sqrt(16000))
    assert effective_size(100, 0.8) == pytest.approx(100 * 0.2 / 1.8)
    walk = np.cumsum(rng.normal(0.0, 1.0, (4000, 8)), axis=0)
    tau = 50
    assert allan_variance(walk, tau) == pytest.approx((2 * tau * tau + 1) / (6 * tau), rel=0.25)
    # The level shift of white noise: 2σ²_A(L) = 2s²/L; of a random walk it grows with L.
    assert level_shift_variance(white[:512]) == pytest.approx(2 * 4.0 / 512, rel=0.6)
    assert level_shift_variance(walk[:512]) > 50.0
    # Missing samples are left out, not read as zeros: a block mean of ~6/7 of τ samples.
    holed = white.copy()
    holed[::7] = np.nan
    assert allan_variance(holed, 8) == pytest.approx(4.0 / (8 * 6 / 7), rel=0.2)
    assert math.isnan(allan_variance(white[:10], 6))


@pytest.mark.parametrize("rho", [0.0, 0.8])
def test_band_holds_nominal_coverage_on_known_noise(rho):
    """Residuals with known noise (white, and AR(1) with ρ = 0.8 — hourly telemetry's order of
    magnitude): the model fitted on a 504-sample window (three weeks hourly) gives a band that
    holds ~90 % of the next 504 samples. Averaged over 400 independent windows the coverage's
    Monte-Carlo error is ≤ 0.5 point (white) and ~1.5 points (AR(1): a window's share varies
    more); ±3 points fails a band 10 % too narrow or too wide (0.86, 0.93)."""
    rng = np.random.default_rng(11)
    L, reps = 504, 400
    series = ar1(rng, rho, 3.0, 2 * L, reps)
    active = np.ones((L, 1), dtype=bool)
    shares, plain = [], []
    for r in range(reps):
        fit, hold = series[:L, r:r + 1], series[L:, r:r + 1]
        model = fit_residual(fit, active)
        shares.append(band_coverage(hold, np.zeros_like(hold), np.zeros((1, L, 1)), np.zeros((1, 1)), model, active))
        plain.append(band_coverage(hold, np.zeros_like(hold), np.zeros((1, L, 1)), np.zeros((1, 1)), model.rms))
    assert np.mean(shares) == pytest.approx(0.90, abs=0.03), (rho, np.mean(shares), np.mean(plain))


def test_band_widens_for_a_drifting_residual():
    """White noise (3 W) plus a random walk (0.15 W per sample), which the fit absorbs at the fit
    window's mean: the next window's samples wander off. The RMS's normal band holds 79 % of them,
    the drift term's band 85 % (400 windows; Monte-Carlo error ~1 point): it is at least 4 points
    closer to nominal, and still below it (a random walk's later samples stray further than its
    window mean's shift, which is all the term carries)."""
    rng = np.random.default_rng(11)
    L, reps = 504, 400
    series = rng.normal(0.0, 3.0, (2 * L, reps)) + np.cumsum(rng.normal(0.0, 0.15, (2 * L, reps)), axis=0)
    active = np.ones((L, 1), dtype=bool)
    shares, plain = [], []
    for r in range(reps):
        level = series[:L, r].mean()
        fit, hold = series[:L, r:r + 1] - level, series[L:, r:r + 1] - level
        model = fit_residual(fit, active)
        zero = (np.zeros_like(hold), np.zeros((1, L, 1)), np.zeros((1, 1)))
        shares.append(band_coverage(hold, *zero, model, active))
        plain.append(band_coverage(hold, *zero, model.rms))
    assert np.mean(shares) >= np.mean(plain) + 0.04, (np.mean(shares), np.mean(plain))
    assert 0.80 <= np.mean(shares) <= 0.90, np.mean(shares)


def test_activity_classes_and_small_class_fallback():
    """Idle samples with 1 W of noise and active ones with 10 W get their own scales; a class
    with fewer than MIN_CLASS samples shares the pooled RMS."""
    rng = np.random.default_rng(5)
    active = np.zeros((600, 1), dtype=bool)
    active[::2] = True
    e = np.where(active, rng.normal(0, 10.0, active.shape), rng.normal(0, 1.0, active.shape))
    m = fit_residual(e, active)
    assert m.scale["idle"] == pytest.approx(1.0, rel=0.15)
    assert m.scale["active"] == pytest.approx(10.0, rel=0.15)
    # The band: active samples ±t·10, idle ±t·1.
    assert band_coverage(e, np.zeros_like(e), np.zeros((1, 600, 1)), np.zeros((1, 1)), m, active) \
        == pytest.approx(0.90, abs=0.05)
    few = np.zeros((600, 1), dtype=bool)
    few[:5] = True
    m2 = fit_residual(e, few)
    assert m2.scale["active"] == pytest.approx(m2.rms, rel=0.05) and m2.counts["active"] == 5


def test_quantile_factor_is_students_t():
    assert quantile_factor(np.array([3.0, 1e9])) == pytest.approx([stats.t.ppf(0.95, 3), 1.6448536], rel=1e-6)
    model = ResidualModel({"idle": 1.0, "active": 2.0}, {"idle": 4.0, "active": 9.0})
    s, dof = model.arrays(np.array([True, False]))
    assert s.tolist() == [2.0, 1.0] and dof.tolist() == [9.0, 4.0]
