"""Fit the twin's parameters to measured power and temperature, jointly and robustly.

Residuals (twin − measured) of device power and die temperature over every sample of the fit
window are divided by a noise scale per quantity and stacked, so watts and kelvins weigh alike
in one problem; ``scipy.optimize.least_squares`` (trust-region reflective, so bounds hold)
minimises Σ ρ(r²) with a robust loss ρ (``soft_l1``: quadratic for small residuals, linear for
outliers such as a job starting mid-hour). The scales are re-estimated once from the first fit's
residuals (their root mean square) and the fit is repeated from there.

The Jacobian comes from forward differences, every column from the same twin run (one copy per
perturbed parameter set, see :class:`~twin.calibrate.model.TwinModel`). Parameter uncertainty:

- ``jacobian``: the asymptotic covariance of the robust estimate, s²(JᵀJ)⁻¹ with s² from the
  loss's influence function at the residuals (see :func:`_covariance`); optimistic when residuals
  are correlated in time, as hourly telemetry's are;
- ``bootstrap`` (``n_bootstrap`` > 0): a moving-block bootstrap — blocks of consecutive samples
  (length ⌈m^(1/3)⌉) drawn with replacement, the fit repeated from the solution on each
  resample; σ is the standard deviation of the refitted values. Blocks keep the residuals'
  serial correlation, so this σ is the honest one for telemetry.

References
----------
Branch, Coleman & Li, "A subspace, interior, and conjugate gradient method for large-scale
bound-constrained minimization problems", SIAM J. Sci. Comput. 21(1), 1999 (trf).
Künsch, "The jackknife and the bootstrap for general stationary observations", Ann. Statist.
17(3), 1989 (moving-block bootstrap).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from twin.calibrate.model import TwinModel
from twin.calibrate.params import Parameter
from twin.calibrate.residual import ResidualModel, active_samples, band_quantiles, fit_residual

#: Robust loss and its scale in units of the noise scale (soft_l1: ρ(z) = 2(√(1+z) − 1)).
LOSS = "soft_l1"
F_SCALE = 2.0
#: Floors of the noise scales (a perfect fit must not divide by zero): power [W], temperature [K].
NOISE_FLOOR = {"power": 0.1, "temperature": 0.05}
#: First-pass noise scales: a share of the chips' TDP [1] and kelvin.
FIRST_POWER_SCALE = 0.02
FIRST_TEMPERATURE_SCALE = 1.0
#: Finite-difference step as a share of a parameter's scale (see Parameter.scale).
DIFF_STEP = 1e-3
#: Evaluations allowed per least-squares pass, and per bootstrap refit.
MAX_NFEV = 40
MAX_NFEV_BOOTSTRAP = 15
#: Relative change of cost and parameters at which a pass stops.
TOLERANCE = 1e-6
#: The 95th percentile of the standard normal: a p5–p95 band is the prediction ± Z90·σ.
Z90 = 1.6448536269514722


@dataclass
class Scores:
    """RMSE and MAPE of power and temperature over one window, before and after."""

    n: dict[str, int]
    rmse: dict[str, dict[str, float]]  # quantity → {before, after}
    mape: dict[str, dict[str, float]]
    ratio: dict[str, dict[str, float]] = field(default_factory=dict)  # mean twin / mean measured
    #: Share of the measured samples inside the calibrated twin's p5–p95 band (see :func:`scores`).
    coverage: dict[str, float] = field(default_factory=dict)


@dataclass
class CalibrationResult:
    params: list[Parameter]
    value: np.ndarray  # SI
    sigma: np.ndarray  # SI, the reported σ (bootstrap when run, else Jacobian)
    sigma_jacobian: np.ndarray
    sigma_bootstrap: np.ndarray | None
    correlation: np.ndarray
    noise: dict[str, float]  # residual scale per quantity [W, K]
    #: Root mean square of the fit window's residuals at the solution, per quantity [W, K].
    residual_rms: dict[str, float]
    #: What the twin does not explain, per quantity (see :mod:`twin.calibrate.residual`).
    residual: dict[str, ResidualModel]
    windows: dict[str, tuple[pd.Timestamp, pd.Timestamp]]
    scores: dict[str, Scores] = field(default_factory=dict)
    kinds: list[str] = field(default_factory=list)  # chip kind of each measured device
    runs: int = 0
    nfev: int = 0
    status: str = ""


def _metrics(pred: np.ndarray, meas: np.ndarray) -> tuple[int, float, float]:
    ok = ~np.isnan(meas) & ~np.isnan(pred)
    if not ok.any():
        return 0, math.nan, math.nan
    d = pred[ok] - meas[ok]
    rmse = float(np.sqrt(np.mean(d * d)))
    nz = ok & (np.abs(meas) > 0)
    mape = float(np.mean(np.abs((pred[nz] - meas[nz]) / meas[nz]))) if nz.any() else math.nan
    return int(ok.sum()), rmse, mape


def _ratio(pred: np.ndarray, meas: np.ndarray) -> float:
    ok = ~np.isnan(meas) & ~np.isnan(pred)
    total = float(meas[ok].sum())
    return float(pred[ok].sum()) / total if ok.any() and total != 0 else math.nan


def _steps(params: list[Parameter], theta: np.ndarray) -> np.ndarray:
    """Forward-difference steps (SI), inward at an upper bound."""
    h = np.array([DIFF_STEP * p.scale for p in params])
    hi = np.array([p.upper for p in params])
    return np.where(theta + h <= hi, h, -h)


def scores(model: TwinModel, before: np.ndarray, after: np.ndarray, start, end, *,
           cov: np.ndarray | None = None, residual: dict[str, ResidualModel] | None = None) -> Scores:
    """RMSE, MAPE and mean ratio of the twin with ``before`` and ``after`` parameters on
    ``[start, end)``, and the coverage of the calibrated twin's p5–p95 band.

    Parameters
    ----------
    cov : ndarray, shape (P, P), optional
        Covariance of the fitted parameters (SI), as an ensemble samples them.
    residual : dict, optional
        What the twin does not explain, per quantity (:func:`~twin.calibrate.residual.fit_residual`
        of the fit window).

    Notes
    -----
    The band of a sample i is ŷᵢ ± t₀.₉₅(ν)·√(jᵢᵀ C jᵢ + sᵢ²): the parameters' covariance C carried
    through the twin to first order (jᵢ = ∂ŷᵢ/∂θ by forward differences, all in the same run as
    ŷ), plus the residual's scale sᵢ and degrees of freedom ν for the sample's activity class,
    which no parameter draw produces (see :mod:`twin.calibrate.residual`). ``coverage`` is the
    share of measured samples inside it: 0.90 when the band is honest.
    """
    P = len(model.params)
    rows = [before, after]
    band = cov is not None and residual is not None and P > 0
    if band:
        h = _steps(model.params, after)
        rows += [after + h[k] * np.eye(P)[k] for k in range(P)]
    pred = model.predict(np.vstack(rows), start, end)
    meas = model.tele.arrays(start, end)
    active = active_samples(meas["utilisation"])
    out = Scores({}, {}, {})
    for q, arr in (("power", pred.power), ("temperature", pred.temperature)):
        n, rb, mb = _metrics(arr[0], meas[q])
        _, ra, ma = _metrics(arr[1], meas[q])
        out.n[q] = n
        out.rmse[q] = {"before": rb, "after": ra}
        out.mape[q] = {"before": mb, "after": ma}
        out.ratio[q] = {"before": _ratio(arr[0], meas[q]), "after": _ratio(arr[1], meas[q])}
        if band:
            J = (arr[2:] - arr[1][None]) / h[:, None, None]  # (P, times, devices)
            out.coverage[q] = band_coverage(meas[q], arr[1], J, cov, residual[q], active)
    return out


def band_coverage(meas: np.ndarray, pred: np.ndarray, J: np.ndarray, cov: np.ndarray,
                  residual: ResidualModel | float, active: np.ndarray | None = None) -> float:
    """Share of measured samples inside the prediction's p5–p95 band [1].

    Parameters
    ----------
    meas, pred : ndarray
        Measured and predicted values (NaN: none), same shape.
    J : ndarray, shape (P, *meas.shape)
        ∂pred/∂θ per parameter.
    cov : ndarray, shape (P, P)
        Parameter covariance.
    residual : ResidualModel or float
        The residual's model, or a normal residual's standard deviation (same unit as the values).
    active : ndarray of bool, optional
        Whether each sample's device ran anything (the residual's class; default all).

    Returns
    -------
    float
        The share of samples inside :func:`~twin.calibrate.residual.band_quantiles`' p5–p95
        band, pred ± t₀.₉₅(ν)·√(jᵀ C j + s²); NaN when no sample
        has both values, or when the band is undefined (a parameter without a finite σ: the fit
        could not pin it down).
    """
    ok = ~np.isnan(meas) & ~np.isnan(pred)
    if not ok.any():
        return math.nan
    if isinstance(residual, ResidualModel):
        s, dof = residual.arrays(np.ones(meas.shape, dtype=bool) if active is None else active)
    else:
        s, dof = float(residual), None
    with np.errstate(invalid="ignore"):
        var = np.einsum("k...,kl,l...->...", J, cov, J)
    if not np.isfinite(var[ok]).all():
        return math.nan
    lo, hi = band_quantiles(pred, var, s, dof, (0.05, 0.95))
    inside = (meas >= lo) & (meas <= hi)
    return float(inside[ok].mean())


class Objective:
    """Residuals and their Jacobian, computed together and cached by parameter vector.

    Works in scaled coordinates z = θ / scale, so that every parameter moves by ~1 (and the
    trust region, which starts at |z₀|, starts at a sensible size).
    """

    def __init__(self, model: TwinModel, start, end):
        self.model = model
        self.params = model.params
        self.start, self.end = start, end
        meas = model.tele.arrays(start, end)
        self.meas = {"power": meas["power"], "temperature": meas["temperature"]}
        self.prior = np.array([p.prior for p in self.params])
        self.scale = np.array([p.scale for p in self.params])
        tdp = [model.loaded.catalog.chips[model.subset_kinds[c]].tdp.si for c in model.columns]
        self.noise = {"power": FIRST_POWER_SCALE * float(np.mean(tdp)), "temperature": FIRST_TEMPERATURE_SCALE}
        self.weights = None  # per residual multiplicity (bootstrap), else 1
        self._cache: dict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.nfev = 0

    def theta(self, z):
        return np.asarray(z) * self.scale

    def z(self, theta):
        return np.asarray(theta) / self.scale

    @property
    def mask(self) -> np.ndarray:
        """Residual rows with a measurement (power rows then temperature rows)."""
        return np.concatenate([~np.isnan(self.meas["power"]).ravel(), ~np.isnan(self.meas["temperature"]).ravel()])

    def _raw(self, z):
        """(raw residuals (m,), raw Jacobian (m, P) in z, predictions)."""
        key = np.asarray(z, dtype=float).tobytes()
        if key in self._cache:
            return self._cache[key]
        z = np.asarray(z, dtype=float)
        P = len(self.params)
        theta = self.theta(z)
        hi = np.array([p.upper for p in self.params])
        rows = [theta]
        for k in range(P):  # forward differences, inward at an upper bound
            h = DIFF_STEP * self.scale[k]
            step = theta.copy()
            step[k] = theta[k] + h if theta[k] + h <= hi[k] else theta[k] - h
            rows.append(step)
        pred = self.model.predict(np.array(rows), self.start, self.end)
        self.nfev += 1
        mask = self.mask

        def res(j):
            return np.concatenate([(pred.power[j] - self.meas["power"]).ravel(),
                                   (pred.temperature[j] - self.meas["temperature"]).ravel()])[mask]

        r0 = res(0)
        J = np.empty((r0.size, P))
        for k in range(P):
            J[:, k] = (res(1 + k) - r0) / ((rows[1 + k][k] - theta[k]) / self.scale[k])
        out = (r0, J, pred)
        self._cache = {key: out}  # keep the latest only (least_squares asks f then J at one point)
        return out

    def _scales(self) -> np.ndarray:
        n_p = int((~np.isnan(self.meas["power"])).sum())
        n_t = int((~np.isnan(self.meas["temperature"])).sum())
        return np.concatenate([np.full(n_p, self.noise["power"]), np.full(n_t, self.noise["temperature"])])

    def fun(self, z):
        r = self._raw(z)[0] / self._scales()
        return r if self.weights is None else r * np.sqrt(self.weights)

    def jac(self, z):
        J = self._raw(z)[1] / self._scales()[:, None]
        return J if self.weights is None else J * np.sqrt(self.weights)[:, None]

    def reestimate_noise(self, z) -> None:
        """Scales from the residuals at ``z``: their root mean square, with floors.

        The RMS, not a median-based spread: on a mostly idle server the idle hours fit almost
        exactly, a median would say "noise 0.3 W", and every busy hour would then count as an
        outlier of the robust loss and be ignored. The RMS weighs each quantity by how well the
        model can follow it overall; the robust loss still tempers single bad intervals.
        """
        r = self._raw(z)[0]
        n_p = int((~np.isnan(self.meas["power"])).sum())
        for q, part in (("power", r[:n_p]), ("temperature", r[n_p:])):
            if part.size:
                self.noise[q] = max(float(np.sqrt(np.mean(part * part))), NOISE_FLOOR[q])

    def solve(self, z0, max_nfev=MAX_NFEV):
        lo = self.z([p.lower for p in self.params])
        hi = self.z([p.upper for p in self.params])
        z0 = np.clip(z0, lo + 1e-12 * (hi - lo), hi - 1e-12 * (hi - lo))
        return least_squares(self.fun, z0, jac=self.jac, bounds=(lo, hi), method="trf", loss=LOSS,
                             f_scale=F_SCALE, x_scale=1.0, max_nfev=max_nfev, xtol=TOLERANCE,
                             ftol=TOLERANCE, gtol=TOLERANCE)


def _covariance(r: np.ndarray, J: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Asymptotic covariance of the robust (M-) estimate from the residuals ``r`` and Jacobian
    ``J`` of the noise-normalised problem at the solution (in its coordinates).

    Each measured quantity (``group``: 0 power, 1 temperature) gets its own effective variance
    v_q = [Σ_q ψ(rᵢ)² / (m_q − n·m_q/m)] / [mean_q ψ'(rᵢ)]², and Cov = (J̃ᵀJ̃)⁻¹ with the rows of J
    divided by √v_q: weighted least squares with each quantity's residual variance at the
    solution, times the robust loss's efficiency factor (Huber 1981, "Robust Statistics", §7.6).
    ψ is the influence function of the soft-l1 loss at scale c: ψ(r) = r / √(1 + (r/c)²),
    ψ'(r) = (1 + (r/c)²)^(−3/2); for c → ∞, v_q is the residual variance s_q².
    """
    m, n = J.shape
    w = 1.0 + (r / F_SCALE) ** 2
    psi2 = r * r / w
    dpsi = w ** -1.5
    rows = np.empty(m)
    for q in np.unique(group):
        sel = group == q
        mq = int(sel.sum())
        dof = max(mq - n * mq / m, 1.0)
        rows[sel] = (psi2[sel].sum() / dof) / max(dpsi[sel].mean(), 1e-12) ** 2
    Jw = J / np.sqrt(rows)[:, None]
    _, sv, vt = np.linalg.svd(Jw, full_matrices=False)
    tiny = np.finfo(float).eps * max(J.shape) * (sv[0] if sv.size else 0.0)
    inv = np.where(sv > tiny, 1.0 / np.maximum(sv, tiny) ** 2, np.inf)
    with np.errstate(invalid="ignore"):  # an unidentifiable direction: inf × 0 gives NaN (σ undefined)
        return (vt.T * inv) @ vt


def _blocks(m_rows: np.ndarray, times: int, rng, length: int) -> np.ndarray:
    """Multiplicity of each residual row in one moving-block resample of the time index."""
    n_blocks = int(math.ceil(times / length))
    starts = rng.integers(0, max(times - length + 1, 1), size=n_blocks)
    idx = (starts[:, None] + np.arange(length)[None, :]).ravel()[:times]
    counts = np.bincount(idx, minlength=times).astype(float)
    return counts[m_rows]


def calibrate(model: TwinModel, fit_window, holdout_window=None, *, n_bootstrap: int = 0, seed: int = 0,
              progress=None) -> CalibrationResult:
    """Fit ``model.params`` on ``fit_window`` and score before/after on it and ``holdout_window``.

    Parameters
    ----------
    model : TwinModel
    fit_window, holdout_window : (start, end)
        Time windows ``[start, end)``; the hold-out is only scored.
    n_bootstrap : int
        Block-bootstrap refits for σ (0: σ from the Jacobian only).
    seed : int
        Seed of the bootstrap's resampling.
    progress : callable, optional
        ``progress(message)`` at each stage.

    Returns
    -------
    CalibrationResult
    """
    say = progress or (lambda msg: None)
    obj = Objective(model, *fit_window)
    P = len(model.params)
    say(f"fitting {P} parameters on {obj.mask.sum():,} residuals")
    first = obj.solve(obj.z(obj.prior))
    obj.reestimate_noise(first.x)
    second = obj.solve(first.x)
    z = second.x
    n_power = int((~np.isnan(obj.meas["power"])).sum())
    group = np.r_[np.zeros(n_power, dtype=int), np.ones(obj.mask.sum() - n_power, dtype=int)]
    cov_z = _covariance(obj.fun(second.x), obj.jac(second.x), group)
    value = obj.theta(z)
    sig_j = np.sqrt(np.maximum(np.diag(cov_z), 0.0)) * obj.scale
    sig_b = None
    if n_bootstrap > 0:
        say(f"bootstrap: {n_bootstrap} refits")
        rng = np.random.default_rng(seed)
        n_times = obj.meas["power"].shape[0]
        n_dev = obj.meas["power"].shape[1]
        time_of_row = np.concatenate([np.repeat(np.arange(n_times), n_dev)] * 2)[obj.mask]
        length = max(1, int(math.ceil(len(time_of_row) ** (1.0 / 3.0))))
        draws = []
        for b in range(n_bootstrap):
            obj.weights = _blocks(time_of_row, n_times, rng, length)
            draws.append(obj.theta(obj.solve(z, max_nfev=MAX_NFEV_BOOTSTRAP).x))
            say(f"bootstrap {b + 1}/{n_bootstrap}")
        obj.weights = None
        sig_b = np.std(np.array(draws), axis=0, ddof=1)
    sigma = sig_b if sig_b is not None else sig_j
    d = np.sqrt(np.maximum(np.diag(cov_z), 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = cov_z / np.outer(d, d)
    corr = np.where(np.isfinite(corr), corr, 0.0)
    np.fill_diagonal(corr, 1.0)
    prior = obj.prior
    windows = {"fit": tuple(fit_window)}
    if holdout_window is not None:
        windows["holdout"] = tuple(holdout_window)
    r, _, pred = obj._raw(z)
    residual_rms = {q: float(np.sqrt(np.mean(part * part))) if part.size else math.nan
                    for q, part in (("power", r[:n_power]), ("temperature", r[n_power:]))}
    active = active_samples(model.tele.arrays(*fit_window)["utilisation"])
    residual = {q: fit_residual(getattr(pred, q)[0] - obj.meas[q], active) for q in ("power", "temperature")}
    result = CalibrationResult(model.params, value, sigma, sig_j, sig_b, corr, dict(obj.noise), residual_rms,
                               residual, windows, status=str(second.message))
    result.kinds = [str(model.subset_kinds[c]) for c in model.columns]
    with np.errstate(invalid="ignore"):  # a σ that is not finite leaves the band undefined (NaN)
        cov = corr * np.outer(sigma, sigma)
    for name, (a, b) in windows.items():
        say(f"scoring the {name} window")
        result.scores[name] = scores(model, prior, value, a, b, cov=cov, residual=residual)
    result.runs = model.runs
    result.nfev = obj.nfev
    return result
