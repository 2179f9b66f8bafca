"""The chillers' power over a grid of loads, compiled (numba, the ``fast`` extra): the
economisers' searches for the cheapest fan speed evaluate it three times a plant step.

:func:`grid_power` takes each element through the operations of
:meth:`twin.cooling.chiller.Chiller._power_arrays` (and so of the refrigeration functions'
array path) in their order: additions, products, quotients, ``ceil``, minima and maxima of
finite numbers, which the compiled code rounds as numpy does (no fused multiply-add, no
reassociation: numba's default, not ``fastmath``), so the powers are the same to the bit
(``tests/cooling/test_plant_components.py``, tolerance 0) in one call instead of ~40 numpy
calls (~50 → ~4 µs on 35 loads).
"""

from __future__ import annotations

import numba
import numpy as np

#: 0 degC in kelvin (:data:`twin.cooling.refrigeration.ZERO_CELSIUS`).
ZERO_CELSIUS = 273.15


@numba.njit(cache=True, error_model="numpy")
def grid_power(q_fw, q_chw, out, unit, count, t_cond, c_range, c_approach, te_fw, te_chw, eta,
               cop_max, c0, c1, c2, min_plr, cycling):  # pragma: no cover (compiled)
    """Compressor power of the chillers trimming both circuits at each load pair [W].

    Parameters
    ----------
    q_fw, q_chw : ndarray, shape (n,) or (1,)
        Evaporator loads of the facility-water trim and of the chilled water [W] (one of
        length 1 is the same for every element).
    out : ndarray, shape (n,)
        The powers [W] (written).
    unit : float
        One chiller's capacity C [W].
    count : float
        Chillers installed N [1].
    t_cond : float
        The condensers' sink t_c [degC] (:meth:`~twin.cooling.chiller.Chiller.condenser`).
    c_range, c_approach : float
        Condenser-water range at full load R [K] and condensing approach Δ_c [K].
    te_fw, te_chw : float
        Evaporating temperatures of the two circuits, min(t_set, t_max) − Δ_e [degC].
    eta, cop_max : float
        Fraction of Carnot η [1] and the COP's ceiling [1].
    c0, c1, c2 : float
        Part-load curve EIR-fPLR = c₀ + c₁ x + c₂ x² [1].
    min_plr : float
        Minimum unloading ratio [1].
    cycling : bool
        Below it the chiller cycles (else it false-loads).

    Returns
    -------
    bool
        False (``out`` not complete) at a load sum that is not finite.

    Notes
    -----
    q = q_fw + q_chw; n = min(⌈max(q, 0) / (0.9 C) − 1e-12⌉, N); off (P = 0) unless q > 0 and
    n > 0; cap = n C; PLR = min(q / cap, 1); T_c = R · PLR + t_c + Δ_c; per circuit i:
    COPᵢ = min(η (T_eᵢ + 273.15) / (T_c − T_eᵢ), COP_max) (∞ · η at no lift),
    shareᵢ = cap qᵢ / q, xᵢ = min(max(qᵢ, 0) / shareᵢ, 1), x̂ᵢ = min(max(xᵢ, PLR_min, 0), 1),
    fᵢ = c₁ x̂ᵢ + c₀ + c₂ x̂ᵢ x̂ᵢ (× min(xᵢ / x̂ᵢ, 1) when cycling),
    Pᵢ = shareᵢ / COPᵢ · fᵢ where shareᵢ > 0 and xᵢ > 0, else 0; P = P_fw + P_chw.
    """
    n_fw, n_chw = q_fw.size, q_chw.size
    for i in range(out.size):
        a = q_fw[i if n_fw > 1 else 0]
        b = q_chw[i if n_chw > 1 else 0]
        q = a + b
        if not np.isfinite(q):
            return False
        x = q if q >= 0.0 else 0.0  # stage_chillers
        n = np.ceil(x / (0.9 * unit) - 1e-12)
        n = int(n if n <= count else count)
        if not (q > 0 and n > 0):
            out[i] = 0.0
            continue
        cap = float(n) * unit
        plr = q / cap
        plr = plr if plr <= 1.0 else 1.0
        tc = plr * c_range
        tc += t_cond
        tc += c_approach  # refrigerant_temperatures
        p = _circuit(a, te_fw, cap, q, tc, eta, cop_max, c0, c1, c2, min_plr, cycling)
        out[i] = p + _circuit(b, te_chw, cap, q, tc, eta, cop_max, c0, c1, c2, min_plr, cycling)
    return True


@numba.njit(cache=True, error_model="numpy", inline="always")
def _circuit(load, te, cap, q, tc, eta, cop_max, c0, c1, c2, min_plr, cycling):  # pragma: no cover
    """One circuit's power at one element of :func:`grid_power` [W]."""
    lift = tc - te  # carnot_cop, chiller_full_load_cop
    cop = (te + ZERO_CELSIUS) / lift if lift > 0 else np.inf
    cop = cop * eta
    cop = cop if cop <= cop_max else cop_max
    share = cap * load / q  # chiller_power
    x = (load if load >= 0.0 else 0.0) / share
    x = x if x <= 1.0 else 1.0
    xe = x if x >= min_plr else min_plr  # part_load_power_fraction
    xe = xe if xe >= 0.0 else 0.0
    xe = xe if xe <= 1.0 else 1.0
    f = c1 * xe + c0 + c2 * xe * xe
    if cycling:
        r = x / xe
        f *= r if r <= 1.0 else 1.0
    return share / cop * f if share > 0 and x > 0 else 0.0
