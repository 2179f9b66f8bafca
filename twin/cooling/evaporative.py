"""Evaporative heat rejection: how much of a cooling tower's heat leaves as vapour, and when a
closed-circuit (hybrid) tower can run dry.

The latent share is not a constant: air leaving a tower is close to saturation (Merkel), so the
water it picks up is fixed by the inlet air state and the heat it takes. In hot dry weather
nearly all the heat leaves by evaporation (the air is even cooled); in cold weather a large
share is sensible heating of the air, and water use per kWh falls.
"""

from __future__ import annotations

import numpy as np

from twin.cooling.plant import H_FG_WATER
from twin.site.weather import P_STANDARD, humidity_ratio
from twin.units import CP_AIR

#: Latent heat of vaporisation at 0 degC [J kg-1] and specific heat of water vapour
#: [J kg-1 K-1], for moist-air enthalpy (ASHRAE Handbook — Fundamentals 2021, ch. 1, eq. 30).
H_FG_0 = 2.501e6
CP_VAPOUR = 1860.0


def moist_air_enthalpy(t, w):
    """Enthalpy of moist air per kg of dry air [J kg-1]: h = c_p,a t + W (h_fg,0 + c_p,v t).

    Parameters
    ----------
    t : array_like
        Dry-bulb temperature [degC].
    w : array_like
        Humidity ratio [kg kg-1].
    """
    t = np.asarray(t, dtype=float)
    return CP_AIR * t + np.asarray(w, dtype=float) * (H_FG_0 + CP_VAPOUR * t)


def saturated_humidity_ratio(t, pressure=P_STANDARD):
    """Humidity ratio of saturated air at ``t`` [kg kg-1]."""
    return humidity_ratio(t, t, pressure)


def tower_latent_fraction(q, m_air, t_dry_bulb, t_wet_bulb, pressure=P_STANDARD, h_fg=H_FG_WATER):
    """Share of a cooling tower's heat that leaves by evaporation, from the weather.

    Parameters
    ----------
    q : array_like
        Heat rejected [W], > 0.
    m_air : array_like
        Dry-air mass flow through the tower [kg s-1], > 0 (fans' air flow × ρ).
    t_dry_bulb, t_wet_bulb : array_like
        Outdoor air [degC].
    pressure : float
        Barometric pressure [Pa].
    h_fg : float
        Latent heat of the evaporated water [J kg-1].

    Returns
    -------
    latent_fraction : ndarray
        f = ṁ_a (W_out − W_in) h_fg / Q [1] (may slightly exceed 1 in hot dry air, which the
        tower cools while humidifying it).
    t_air_out : ndarray
        Leaving air temperature [degC].

    Notes
    -----
    Leaving air saturated (Merkel's assumption) with h_out = h_in + Q / ṁ_a; its temperature is
    found by bisection on the saturation curve (vectorised, 60 halvings of a 0–80 °C bracket,
    far below 1 mK). Evaporation E = ṁ_a (W_sat(T_out) − W_in).

    References
    ----------
    .. [1] ASHRAE Handbook — HVAC Systems and Equipment (2020), ch. 40 "Cooling towers"
       (Merkel theory; evaporation about 1 % of the water flow per 7 K of range, i.e. mostly
       latent in summer).
    .. [2] J. E. Braun, S. A. Klein, J. W. Mitchell, "Effectiveness models for cooling towers and
       cooling coils", ASHRAE Transactions 95(2), 1989 (leaving air state).
    """
    q, m_a, tdb, twb = np.broadcast_arrays(*(np.asarray(v, dtype=float)
                                             for v in (q, m_air, t_dry_bulb, t_wet_bulb)))
    w_in = humidity_ratio(tdb, twb, pressure)
    h_out = moist_air_enthalpy(tdb, w_in) + q / m_a
    lo = np.minimum(twb, tdb) - 1.0
    hi = np.full_like(lo, 80.0)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        above = moist_air_enthalpy(mid, saturated_humidity_ratio(mid, pressure)) > h_out
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    t_out = 0.5 * (lo + hi)
    evaporation = m_a * (saturated_humidity_ratio(t_out, pressure) - w_in)
    return np.divide(evaporation * h_fg, q, out=np.zeros_like(q), where=q > 0), t_out


def tower_runs_dry(t_dry_bulb, t_setpoint, dry_approach):
    """Whether a closed-circuit (hybrid) tower can hold its set-point with the sprays off.

    Parameters
    ----------
    t_dry_bulb : array_like
        Outdoor dry-bulb [degC].
    t_setpoint : array_like
        Leaving-water set-point [degC].
    dry_approach : array_like
        Leaving water − dry-bulb of the coil run dry at full fans [K] (about twice the wet
        approach, estimate).

    Returns
    -------
    ndarray of bool
        T_db + approach_dry ≤ set-point: dry mode (no water used, and no freezing risk).
    """
    tdb, ts, a = np.broadcast_arrays(*(np.asarray(v, dtype=float)
                                       for v in (t_dry_bulb, t_setpoint, dry_approach)))
    return tdb + a <= ts
