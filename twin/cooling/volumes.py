"""Mixed volumes integrated exactly over a step (loops, rooms): the closed form of
C dT/dt = q − k (T − T_ref) for inputs held over the step, so any step is stable and the heat
bookkeeping closes to rounding error.
"""

from __future__ import annotations

import math

import numpy as np


def relax(t0, capacity, q, k, t_ref, dt):
    """Exact end and mean temperature of a mixed volume over a step.

    Parameters
    ----------
    t0 : array_like
        Temperature at the start of the step [degC].
    capacity : array_like
        Heat capacity C [J K-1], > 0.
    q : array_like
        Heat input held over the step [W].
    k : array_like
        Conductance of the loss term [W K-1], ≥ 0.
    t_ref : array_like
        Temperature the loss term pulls towards [degC].
    dt : float
        Step [s].

    Returns
    -------
    t_end, t_mean : ndarray
        Temperature at the end of the step and its mean over the step [degC].

    Notes
    -----
    C dT/dt = q − k (T − T_ref), with x = k·dt / C and r₀ = q − k (T₀ − T_ref):

    T(dt) = T₀ + r₀ (dt / C) φ(x),  T̄ = T₀ + r₀ (dt / C) ψ(x),
    φ(x) = (1 − e^−x) / x,  ψ(x) = (x − 1 + e^−x) / x²,

    with φ → 1 and ψ → ½ as x → 0 (no loss term: a linear ramp). So the heat lost over the
    step, k (T̄ − T_ref) dt, and the stored change C (T(dt) − T₀) add up to q·dt exactly.
    """
    # elementwise throughout: numpy's broadcasting gives each element the same operations as
    # broadcasting the inputs first would (and costs no views)
    t0, capacity, q, k, t_ref = (np.asarray(v, dtype=float) for v in (t0, capacity, q, k, t_ref))
    x = k * dt / capacity
    small = x < 1e-4
    xs = np.where(small, 1.0, x)
    em = np.expm1(-xs)  # e^-x − 1
    phi = np.where(small, 1.0 - x / 2.0 + x * x / 6.0, -em / xs)
    psi = np.where(small, 0.5 - x / 6.0 + x * x / 24.0, (xs + em) / (xs * xs))
    r0 = (q - k * (t0 - t_ref)) * dt / capacity
    return t0 + r0 * phi, t0 + r0 * psi


def relax1(t0: float, capacity: float, q: float, k: float, t_ref: float, dt: float):
    """:func:`relax` for Python floats (the plant's scalar volumes; no array overhead)."""
    x = k * dt / capacity
    if x < 1e-4:
        phi, psi = 1.0 - x / 2.0 + x * x / 6.0, 0.5 - x / 6.0 + x * x / 24.0
    else:
        em = math.expm1(-x)
        phi, psi = -em / x, (x + em) / (x * x)
    r0 = (q - k * (t0 - t_ref)) * dt / capacity
    return t0 + r0 * phi, t0 + r0 * psi
