"""Cooling-plant building blocks as pure functions of arrays.

Heat exchangers (ε-NTU), pumps and fans (affinity laws), cooling
towers and dry coolers (approach to the wet- or dry-bulb, evaporated water), CRAH air flow and
the economiser / chiller split (chillers themselves: :mod:`twin.cooling.refrigeration`). No state and no time: the driver holds the plant's state and
calls these each step. Temperatures in degC, heat and power in W, mass flow in kg/s, volume flow
in m³/s.
"""

from __future__ import annotations

import numpy as np

from twin.units import CP_AIR, CP_WATER, RHO_AIR

#: Latent heat of vaporisation of water near 25 degC [J kg-1] (IAPWS-95 via NIST WebBook:
#: 2442 kJ/kg at 25 degC, 2454 kJ/kg at 20 degC; 2.45 MJ/kg is the usual round figure).
H_FG_WATER = 2.45e6


def as_arrays(*values):
    """The values as float arrays of one shape: those of another shape broadcast into copies
    (the same values as ``np.broadcast_arrays``' views, a fifth of its time on small arrays)."""
    arrays = [np.asarray(v, dtype=float) for v in values]
    shape = arrays[0].shape
    for a in arrays:
        if a.shape != shape:
            break
    else:  # (the usual case, scalars: nothing to broadcast)
        return arrays
    shape = np.broadcast(*arrays).shape
    for i, a in enumerate(arrays):
        if a.shape != shape:
            arrays[i] = np.empty(shape)
            arrays[i][...] = a
    return arrays


# --------------------------------------------------------------------------------------------
# Heat exchangers
# --------------------------------------------------------------------------------------------
def hx_effectiveness_counterflow(ntu, c_ratio):
    """Effectiveness of a counterflow heat exchanger.

    Parameters
    ----------
    ntu : array_like
        Number of transfer units NTU = UA / C_min [1], ≥ 0 (``inf`` allowed).
    c_ratio : array_like
        Heat-capacity-rate ratio C_r = C_min / C_max [1], 0..1.

    Returns
    -------
    ndarray
        Effectiveness ε = q / q_max [1], 0..1.

    Raises
    ------
    ValueError
        NTU negative or C_r outside 0..1.

    Notes
    -----
    ε = (1 − exp(−NTU(1 − C_r))) / (1 − C_r·exp(−NTU(1 − C_r)))   for C_r < 1,
    ε = NTU / (1 + NTU)                                             for C_r = 1.

    Written with x = NTU(1 − C_r) as ε = −expm1(−x) / ((1 − C_r) − C_r·expm1(−x)): both terms of
    the denominator are ≥ 0, so the form stays accurate as C_r → 1 (no 0/0 cancellation) and
    joins the balanced limit continuously. C_r = 0 gives ε = 1 − exp(−NTU) (a condensing or
    evaporating stream, or one of much larger flow).

    References
    ----------
    .. [1] F. P. Incropera, D. P. DeWitt, T. L. Bergman, A. S. Lavine, Fundamentals of Heat and
       Mass Transfer, 6th ed., Wiley, 2007, §11.4, Table 11.3.
    """
    ntu, c_ratio = as_arrays(ntu, c_ratio)
    if (ntu < 0).any():
        raise ValueError(f"hx_effectiveness_counterflow: NTU must be >= 0, got {np.min(ntu)}")
    if ((c_ratio < 0) | (c_ratio > 1)).any():
        raise ValueError(
            "hx_effectiveness_counterflow: c_ratio = C_min/C_max must be in 0..1, got "
            f"{np.min(c_ratio)}..{np.max(c_ratio)}"
        )
    one_minus = 1.0 - c_ratio
    balanced = one_minus == 0.0
    if not balanced.any():  # (the usual case: no balanced limit to join)
        em1 = np.expm1(-ntu * one_minus)
        den = one_minus - c_ratio * em1
        return np.divide(-em1, den, out=np.zeros(ntu.shape), where=den > 0)
    with np.errstate(invalid="ignore"):  # inf·0 where NTU = inf and C_r = 1: masked below
        em1 = np.expm1(-ntu * one_minus)
    num = -em1
    den = one_minus - c_ratio * em1
    eps = np.divide(num, den, out=np.zeros_like(ntu), where=~balanced & (den > 0))
    eps_balanced = np.divide(ntu, 1.0 + ntu, out=np.ones_like(ntu), where=np.isfinite(ntu))
    return np.where(balanced, eps_balanced, eps)


def hx_outlets(t_hot_in, t_cold_in, m_hot, m_cold, ua, cp_hot=CP_WATER, cp_cold=CP_WATER):
    """Outlet temperatures and duty of a counterflow liquid-to-liquid heat exchanger (ε-NTU).

    Parameters
    ----------
    t_hot_in, t_cold_in : array_like
        Inlet temperatures of the hot and cold streams [degC].
    m_hot, m_cold : array_like
        Mass flows [kg s-1], ≥ 0.
    ua : array_like
        Overall conductance UA [W K-1], ≥ 0.
    cp_hot, cp_cold : array_like, optional
        Specific heats [J kg-1 K-1]; water by default.

    Returns
    -------
    t_hot_out : ndarray
        Hot-side outlet [degC].
    t_cold_out : ndarray
        Cold-side outlet [degC].
    q : ndarray
        Heat passed from the hot to the cold stream [W] (negative if ``t_cold_in`` is the
        warmer).

    Notes
    -----
    C_h = ṁ_h c_p,h, C_c = ṁ_c c_p,c, C_min = min, C_max = max, NTU = UA / C_min,
    C_r = C_min / C_max, ε from :func:`hx_effectiveness_counterflow`;

    q = ε · C_min · (T_h,in − T_c,in),  T_h,out = T_h,in − q / C_h,  T_c,out = T_c,in + q / C_c.

    With no flow on either side (C_min = 0) nothing is exchanged: q = 0 and both outlets equal
    their inlets (a stagnant stream has no outlet temperature of its own). Steady state: the
    exchanger's own heat capacity belongs to the thermal network, not here.

    References
    ----------
    .. [1] F. P. Incropera et al., Fundamentals of Heat and Mass Transfer, 6th ed., §11.4.
    """
    t_hot_in, t_cold_in, m_hot, m_cold, ua, cp_hot, cp_cold = args = [
        np.asarray(v, dtype=float) for v in (t_hot_in, t_cold_in, m_hot, m_cold, ua, cp_hot, cp_cold)]
    # the ufuncs broadcast the inputs themselves (the same values element by element): only
    # the outputs written in place need the common shape
    shapes = {a.shape for a in args}
    shapes.discard(())  # (numbers broadcast to any shape)
    shape = shapes.pop() if len(shapes) == 1 else () if not shapes else np.broadcast_shapes(*shapes)
    c_hot = m_hot * cp_hot
    c_cold = m_cold * cp_cold
    c_min = np.minimum(c_hot, c_cold)
    c_max = np.maximum(c_hot, c_cold)
    flowing = c_min > 0
    ntu = np.divide(ua, c_min, out=np.zeros(shape), where=flowing)
    c_ratio = np.divide(c_min, c_max, out=np.zeros(shape), where=flowing)
    q = hx_effectiveness_counterflow(ntu, c_ratio) * c_min * (t_hot_in - t_cold_in)
    t_hot_out = t_hot_in - np.divide(q, c_hot, out=np.zeros(shape), where=flowing)
    t_cold_out = t_cold_in + np.divide(q, c_cold, out=np.zeros(shape), where=flowing)
    return t_hot_out, t_cold_out, q


def flow_for_heat(q, delta_t, cp=CP_WATER):
    """Mass flow that carries a heat load at a given temperature change.

    Parameters
    ----------
    q : array_like
        Heat [W].
    delta_t : array_like
        Temperature change of the stream [K], > 0.
    cp : array_like, optional
        Specific heat [J kg-1 K-1]; water by default.

    Returns
    -------
    ndarray
        ṁ = q / (c_p ΔT) [kg s-1].
    """
    q, delta_t, cp = as_arrays(q, delta_t, cp)
    if np.any(delta_t <= 0):
        raise ValueError(f"flow_for_heat: delta_t must be > 0 K, got {np.min(delta_t)}")
    return q / (cp * delta_t)


# --------------------------------------------------------------------------------------------
# Pumps and fans
# --------------------------------------------------------------------------------------------
def affinity_power(speed, power_design, exponent=3.0):
    """Shaft power of a variable-speed pump or fan at a relative speed (affinity law).

    Parameters
    ----------
    speed : array_like
        Speed relative to the design speed, N / N_d [1], ≥ 0.
    power_design : array_like
        Power at design speed [W].
    exponent : float, optional
        Affinity exponent [1]: 3 for a system curve through the origin (no static head);
        2–2.7 is often used where static head or motor/drive losses flatten the curve.

    Returns
    -------
    ndarray
        P = P_d · (N / N_d)^n [W].

    Notes
    -----
    Affinity laws: Q ∝ N, H ∝ N², P = ρ g Q H / η ∝ N³ at constant efficiency.

    References
    ----------
    .. [1] ASHRAE Handbook — HVAC Systems and Equipment (2020), ch. 44 "Centrifugal Pumps",
       "Affinity laws".
    """
    # (numpy broadcasts the two: the same products as with copies of one shape)
    return np.asarray(power_design, dtype=float) * np.abs(np.asarray(speed, dtype=float)) ** exponent


def fan_power(flow, flow_design, power_design, exponent=3.0):
    """Power of a variable-speed fan moving ``flow`` (affinity law, flow ∝ speed).

    Parameters
    ----------
    flow : array_like
        Air flow [m³ s-1] (only the ratio to ``flow_design`` matters).
    flow_design : array_like
        Air flow at design speed, same unit, > 0.
    power_design : array_like
        Electrical power at the design flow [W].
    exponent : float, optional
        See :func:`affinity_power`.

    Returns
    -------
    ndarray
        P = P_d · (V̇ / V̇_d)^n [W].
    """
    return affinity_power(np.asarray(flow, dtype=float) / flow_design, power_design, exponent)


def air_flow_for_heat(q, delta_t, cp=CP_AIR, rho=RHO_AIR):
    """Volume flow of air that carries a sensible heat load at a given temperature rise.

    Parameters
    ----------
    q : array_like
        Sensible heat [W].
    delta_t : array_like
        Air temperature rise (return − supply) [K], > 0.
    cp : array_like, optional
        Specific heat of air [J kg-1 K-1].
    rho : array_like, optional
        Density of air [kg m-3].

    Returns
    -------
    ndarray
        V̇ = q / (ρ c_p ΔT) [m³ s-1].
    """
    return flow_for_heat(q, delta_t, cp) / rho


def crah_fan_power(q_air, delta_t_air, flow_design, power_design, exponent=3.0,
                   cp=CP_AIR, rho=RHO_AIR):
    """Fan power of CRAH/CRAC units removing the air-side heat of the IT equipment.

    Parameters
    ----------
    q_air : array_like
        Heat the air carries to the CRAH coils [W].
    delta_t_air : array_like
        Air temperature rise across the IT equipment (hot aisle − cold aisle) [K], > 0.
    flow_design : array_like
        Design air flow of the CRAH units [m³ s-1].
    power_design : array_like
        Fan power at the design air flow [W].
    exponent : float, optional
        See :func:`affinity_power`.
    cp, rho : array_like, optional
        Specific heat [J kg-1 K-1] and density [kg m-3] of air.

    Returns
    -------
    ndarray
        P = P_d · (V̇ / V̇_d)^n with V̇ = q_air / (ρ c_p ΔT) [W].

    Notes
    -----
    Assumes the CRAH fans are speed-controlled to move exactly the air the IT fans draw (no
    bypass or recirculation); in practice a margin of 10–20 % more air is common, which
    the caller can fold into ``delta_t_air``.
    """
    return fan_power(air_flow_for_heat(q_air, delta_t_air, cp, rho), flow_design, power_design,
                     exponent)


def economiser_split(flow, t_return, t_free, t_setpoint, cp=CP_WATER):
    """Split of the facility-water cooling load between free cooling and a trim chiller.

    Parameters
    ----------
    flow : array_like
        Facility-water mass flow [kg s-1].
    t_return : array_like
        Water returning from the CDUs [degC].
    t_free : array_like
        Lowest temperature free cooling can reach [degC] (:func:`cooling_tower_outlet` or
        :func:`dry_cooler_outlet`, plus any economiser heat-exchanger approach).
    t_setpoint : array_like
        Facility-water supply set-point [degC].
    cp : array_like, optional
        Specific heat [J kg-1 K-1]; water by default.

    Returns
    -------
    q_free : ndarray
        Heat removed by free cooling [W].
    q_chiller : ndarray
        Heat left for the chiller [W].

    Notes
    -----
    Series (integrated) water-side economiser: the return is first cooled towards t_free,
    but not below the set-point (fans or a bypass hold it there), then the chiller trims
    to the set-point:

    t_mid = clip(t_free, t_setpoint, t_return),
    q_free = ṁ c_p (t_return − t_mid),  q_chiller = ṁ c_p (t_mid − t_setpoint),

    so q_free + q_chiller = ṁ c_p (t_return − t_setpoint) when t_return ≥ t_setpoint (both
    0 otherwise). Heat rejected outdoors is q_free + q_chiller + P_chiller.

    References
    ----------
    .. [1] ASHRAE Handbook — HVAC Systems and Equipment (2020), ch. 40 "Cooling Towers",
       "Water-side economizer" (free cooling).
    """
    flow, t_return, t_free, t_setpoint, cp = as_arrays(flow, t_return, t_free, t_setpoint, cp)
    top = np.maximum(t_return, t_setpoint)
    t_mid = np.clip(t_free, t_setpoint, top)
    c = flow * cp
    return c * (top - t_mid), c * (t_mid - t_setpoint)


# --------------------------------------------------------------------------------------------
# Heat rejection
# --------------------------------------------------------------------------------------------
def cooling_tower_outlet(t_wet_bulb, approach):
    """Cold-water temperature leaving a cooling tower.

    Parameters
    ----------
    t_wet_bulb : array_like
        Outdoor wet-bulb temperature [degC].
    approach : array_like
        Approach, cold water − wet-bulb [K] (3–5 K at design for typical towers).

    Returns
    -------
    ndarray
        T_out = T_wb + approach [degC] (fans at full speed; a controller may hold the water
        warmer than this, never colder).

    References
    ----------
    .. [1] ASHRAE Handbook — HVAC Systems and Equipment (2020), ch. 40 "Cooling Towers".
    """
    t_wet_bulb, approach = as_arrays(t_wet_bulb, approach)
    return t_wet_bulb + approach


def dry_cooler_outlet(t_dry_bulb, approach):
    """Fluid temperature leaving a dry cooler (closed-circuit air-cooled heat exchanger).

    Parameters
    ----------
    t_dry_bulb : array_like
        Outdoor dry-bulb temperature [degC].
    approach : array_like
        Approach, leaving fluid − dry-bulb [K] (typically 5–10 K at design).

    Returns
    -------
    ndarray
        T_out = T_db + approach [degC] (fans at full speed; never colder).
    """
    t_dry_bulb, approach = as_arrays(t_dry_bulb, approach)
    return t_dry_bulb + approach


def cooling_tower_water(q, cycles_of_concentration, h_fg=H_FG_WATER, latent_fraction=1.0):
    """Evaporation, blowdown and make-up water of an evaporative cooling tower.

    Parameters
    ----------
    q : array_like
        Heat rejected by the tower [W]; negative values are treated as 0.
    cycles_of_concentration : array_like
        Ratio of dissolved solids in the basin to those in the make-up water [1], > 1
        (typically 3–6).
    h_fg : array_like, optional
        Latent heat of vaporisation of water [J kg-1].
    latent_fraction : array_like, optional
        Share of the heat rejected by evaporation [1]; 1 (all) is the conservative default,
        0.75–0.9 is typical in summer.

    Returns
    -------
    evaporation, blowdown, makeup : ndarray
        Water flows [kg s-1].

    Notes
    -----
    E = f · Q / h_fg,  B = E / (C − 1),  M = E + B = E · C / (C − 1)
    (drift, ≤ 0.005 % of the circulating flow in modern towers, is neglected). The blowdown
    follows from a balance of dissolved solids: M·c = B·(C·c).

    References
    ----------
    .. [1] ASHRAE Handbook — HVAC Systems and Equipment (2020), ch. 40 "Cooling Towers",
       "Water treatment" (blowdown and cycles of concentration).
    """
    q, cycles, h_fg, f = as_arrays(q, cycles_of_concentration, h_fg, latent_fraction)
    if np.any(cycles <= 1):
        raise ValueError(
            f"cooling_tower_water: cycles_of_concentration must be > 1, got {np.min(cycles)}"
        )
    evaporation = f * np.maximum(q, 0.0) / h_fg
    blowdown = evaporation / (cycles - 1.0)
    return evaporation, blowdown, evaporation + blowdown
