"""What the calibrated twin does not explain, and the band a measurement falls in.

A measurement is the twin's prediction plus a residual: the fitted figures' own error (carried
through the twin by its Jacobian, see :func:`twin.calibrate.fit.scores`), plus what no figure
explains — the discrepancy of the model (jobs the utilisation does not describe, the GPU's own
control inside an interval, a room that warms with the season) and the sensor's noise. This
module fits that second part, per measured quantity, from the fit window's residuals
e = twin − measured:

- **Two activity classes.** A device that ran nothing in an interval (measured utilisation 0)
  sits at its idle power, which the twin predicts to a few watts; one that ran jobs draws what
  the jobs drew, which utilisation alone describes far less well. Each class gets its own
  residual RMS s_c (a class with fewer than :data:`MIN_CLASS` samples shares the pooled RMS).
- **Serial correlation.** Hourly residuals are correlated (ρ₁ ≈ 0.5–0.9 on a server's
  telemetry), so n samples hold the information of only n_eff = n·(1 − ρ₁)/(1 + ρ₁) independent
  ones (the AR(1) effective sample size, Bayley & Hammersley 1946; Wilks, "Statistical Methods in
  the Atmospheric Sciences", §5.2.4). The RMS is then known to ν = n_eff − 1 degrees of freedom,
  and the band uses Student's t quantile instead of the normal's.
- **Drift.** The fit absorbs the fit window's mean residual; a later window's mean differs by a
  level shift whose variance, for two adjacent windows of length L, is twice the Allan variance
  σ²_A(L) of the residual series (Allan, "Statistics of atomic frequency standards", Proc. IEEE
  54(2), 1966; IEEE Std 952-1997 for its use on sensor drift). σ²_A(τ) is computed for
  τ = L/16, L/8, L/4 (the longest a window of length L measures with several blocks) and
  extrapolated to τ = L along the power law through those points, its slope held within
  [−1, 1] (−1: white noise, σ²_A = s²/τ, whose shift 2s²/L is the familiar 1/n of a predictive
  interval; 0: flicker; +1: a random-walk drift).

The band of a measurement at the nominal level 1 − 2α (0.90 for p5–p95) is then

    ŷ ± t_{1−α}(ν_c) · √(jᵀCj + s_c² + 2σ²_A(L))

with c the sample's class. On the twin's own telemetry with white noise it is the classical
predictive interval; on real telemetry the drift term widens it by how much the residual's level
wandered within the fit window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

#: Activity classes of a sample: measured utilisation 0 (idle) or above (active).
CLASSES = ("idle", "active")
#: Fewest fit-window samples a class needs for its own RMS; fewer share the pooled one.
MIN_CLASS = 24
#: Largest lag-1 autocorrelation used (n_eff ≥ n/199): beyond it a series is a trend, which the
#: drift term carries.
MAX_RHO = 0.99
#: Fewest degrees of freedom of the RMS (t quantile of ν = 2 is 2.9, against 1.645 for ν → ∞).
MIN_DOF = 2.0
#: Averaging lengths of the Allan variance, as fractions of the fit window: L/16, L/8, L/4.
ALLAN_FRACTIONS = (1 / 16, 1 / 8, 1 / 4)


def active_samples(utilisation: np.ndarray) -> np.ndarray:
    """Whether each sample's device ran anything: measured utilisation above 0, or not measured
    (an unknown interval goes to the less predictable class) [bool]."""
    u = np.asarray(utilisation, dtype=float)
    return ~(u <= 0)


def lag1_autocorrelation(e: np.ndarray) -> float:
    """Lag-1 autocorrelation of residual series [1], pooled over columns (devices).

    Parameters
    ----------
    e : ndarray, shape (times, devices) or (times,)
        Residuals on a regular time grid (NaN: no sample).

    Returns
    -------
    float
        ρ₁ = Σ eₜeₜ₊₁ / √(Σ eₜ² Σ eₜ₊₁²) over consecutive pairs with both samples, held within
        [0, :data:`MAX_RHO`] (a negative ρ₁ would claim more information than n samples hold);
        0 with fewer than 3 pairs.
    """
    e = np.asarray(e, dtype=float).reshape(len(e), -1)
    a, b = e[:-1], e[1:]
    ok = ~np.isnan(a) & ~np.isnan(b)
    if ok.sum() < 3:
        return 0.0
    a, b = a[ok], b[ok]
    den = math.sqrt(float(np.sum(a * a)) * float(np.sum(b * b)))
    if den == 0:
        return 0.0
    return float(np.clip(np.sum(a * b) / den, 0.0, MAX_RHO))


def effective_size(n: int, rho: float) -> float:
    """AR(1) effective sample size n·(1 − ρ)/(1 + ρ) [1] (Wilks §5.2.4)."""
    return n * (1.0 - rho) / (1.0 + rho)


def allan_variance(e: np.ndarray, tau: int) -> float:
    """Overlapping Allan variance of residual series at averaging length ``tau`` samples [unit²].

    σ²_A(τ) = ½·mean[(ē_{t+τ..t+2τ} − ē_{t..t+τ})²] over every start t and column, where ē is the
    mean of the samples present in a block (blocks with fewer than half their samples present
    are left out). NaN when no pair of blocks fits.
    """
    e = np.asarray(e, dtype=float).reshape(len(e), -1)
    n = e.shape[0]
    if tau < 1 or 2 * tau > n:
        return math.nan
    present = ~np.isnan(e)
    cs = np.vstack([np.zeros((1, e.shape[1])), np.cumsum(np.where(present, e, 0.0), axis=0)])
    cw = np.vstack([np.zeros((1, e.shape[1])), np.cumsum(present, axis=0)])
    s1, w1 = cs[tau:n - tau + 1] - cs[:n - 2 * tau + 1], cw[tau:n - tau + 1] - cw[:n - 2 * tau + 1]
    s2, w2 = cs[2 * tau:] - cs[tau:n - tau + 1], cw[2 * tau:] - cw[tau:n - tau + 1]
    ok = (w1 >= tau / 2) & (w2 >= tau / 2)
    if not ok.any():
        return math.nan
    d = s2[ok] / w2[ok] - s1[ok] / w1[ok]
    return 0.5 * float(np.mean(d * d))


def level_shift_variance(e: np.ndarray) -> float:
    """Variance of the mean residual's shift from the fit window to the next as long [unit²].

    2·σ²_A(L), with σ²_A extrapolated from τ = L/16, L/8, L/4 to L (see the module); 0 for a
    window too short to measure it (fewer than 16 samples).
    """
    e = np.asarray(e, dtype=float).reshape(len(e), -1)
    L = e.shape[0]
    taus = sorted({max(1, int(round(f * L))) for f in ALLAN_FRACTIONS})
    if L < 16 or len(taus) < 2:
        return 0.0
    av = np.array([allan_variance(e, t) for t in taus])
    good = np.isfinite(av) & (av > 0)
    if good.sum() < 2:
        return 0.0
    x, y = np.log(np.array(taus, dtype=float)[good]), np.log(av[good])
    slope = float(np.clip(np.polyfit(x, y, 1)[0], -1.0, 1.0))
    return 2.0 * float(np.exp(y[-1] + slope * (math.log(L) - x[-1])))


@dataclass
class ResidualModel:
    """The residual of one measured quantity: per activity class, the scale of a measurement
    around the twin's prediction and its degrees of freedom (see the module).

    ``scale[c]`` is √(s_c² + 2σ²_A(L)) in the quantity's SI unit; ``dof[c]`` is ν_c.
    """

    scale: dict[str, float]
    dof: dict[str, float]
    rms: float = math.nan  # pooled RMS of the fit window's residuals
    rho: float = 0.0  # lag-1 autocorrelation
    shift: float = 0.0  # 2σ²_A(L), the level shift's variance
    counts: dict[str, int] = field(default_factory=dict)

    def arrays(self, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(scale, dof) of each sample, from whether it is active (bool array)."""
        active = np.asarray(active, dtype=bool)
        scale = np.where(active, self.scale["active"], self.scale["idle"])
        dof = np.where(active, self.dof["active"], self.dof["idle"])
        return scale, dof

    def record(self) -> dict:
        """As an overlay's ``calibration.residual.bands.QUANTITY`` (6 significant figures)."""
        return {"scale": {c: float(f"{self.scale[c]:.6g}") for c in CLASSES},
                "dof": {c: float(f"{self.dof[c]:.6g}") for c in CLASSES}}


def fit_residual(e: np.ndarray, active: np.ndarray) -> ResidualModel:
    """The residual model of one quantity from the fit window's residuals.

    Parameters
    ----------
    e : ndarray, shape (times, devices)
        Twin − measured on the fit window (NaN: no sample).
    active : ndarray of bool, same shape
        Whether the device ran anything in the interval (measured utilisation > 0).

    Returns
    -------
    ResidualModel
    """
    e = np.asarray(e, dtype=float).reshape(len(e), -1)
    active = np.asarray(active, dtype=bool).reshape(e.shape)
    ok = ~np.isnan(e)
    n = int(ok.sum())
    if n == 0:
        nan = {c: math.nan for c in CLASSES}
        return ResidualModel(nan, dict(nan))
    rms = float(np.sqrt(np.mean(e[ok] ** 2)))
    rho = lag1_autocorrelation(e)
    shift = level_shift_variance(e)
    scale, dof, counts = {}, {}, {}
    for c, sel in (("idle", ok & ~active), ("active", ok & active)):
        k = int(sel.sum())
        counts[c] = k
        if k < MIN_CLASS:
            sel, k = ok, n
        s2 = float(np.mean(e[sel] ** 2))
        scale[c] = math.sqrt(s2 + shift)
        dof[c] = max(effective_size(k, rho) - 1.0, MIN_DOF)
    return ResidualModel(scale, dof, rms, rho, shift, counts)


def quantile_factor(dof, level: float = 0.90):
    """Student's t quantile of a central band at ``level`` (1.645 for ν → ∞ at 0.90) [1]."""
    from scipy.special import stdtrit

    return stdtrit(np.asarray(dof, dtype=float), 0.5 + level / 2.0)


def band_quantiles(centre, var_param, scale, dof, q) -> np.ndarray:
    """Quantiles of a measurement around the twin's prediction [the values' unit].

    Parameters
    ----------
    centre : ndarray
        The prediction ŷ.
    var_param : ndarray
        The fitted figures' share of the variance: jᵀCj, or an ensemble's variance over members.
    scale, dof : ndarray or float
        The residual's scale and degrees of freedom (:meth:`ResidualModel.arrays`; dof None: a
        normal residual).
    q : sequence of float
        Quantiles, 0..1 exclusive.

    Returns
    -------
    ndarray, shape (len(q), *centre.shape)
        ŷ + G⁻¹(q)·√(var_param + scale²), G Student's t with ν = dof (or the normal): the band
        ``twin calibrate`` scores and ``twin run --ensemble`` writes as ``p_measured`` and
        ``t_die_measured``.
    """
    from scipy.special import ndtri, stdtrit

    centre = np.asarray(centre, dtype=float)
    width = np.sqrt(np.maximum(np.asarray(var_param, dtype=float), 0.0) + np.square(scale))
    out = []
    for qi in q:
        g = ndtri(float(qi)) if dof is None else stdtrit(np.asarray(dof, dtype=float), float(qi))
        out.append(centre + g * width)
    return np.array(out).reshape((len(q), *np.broadcast(centre, width).shape))
