"""Vapour-compression chillers: refrigerant approaches, part load, staging, minimum load and the
operating envelope. Pure functions of arrays; temperatures in degC, heat and power in W.

Full-load COP from the refrigerant lift: the evaporator boils ``evaporator_approach`` below the
leaving chilled water and the condenser condenses ``condenser_approach`` above the leaving
condenser water (water-cooled) or the outdoor dry-bulb (air-cooled), and the machine achieves a
fixed fraction of the Carnot COP between those two saturation temperatures. That fraction is not
guessed: it is fixed by the chiller's rated COP at its AHRI 550/590 rating point
(:func:`carnot_fraction_from_rating`). Part load multiplies the full-load energy input ratio by
a curve of the part-load ratio (the DOE-2 / EnergyPlus EIR-fPLR form).
"""

from __future__ import annotations

import numpy as np

from twin.cooling.plant import as_arrays

#: 0 degC in kelvin.
ZERO_CELSIUS = 273.15
#: Entering condenser water of the AHRI 550/590 water-cooled rating point, 85 °F [degC].
AHRI_CONDENSER_ENTERING = 29.4


def refrigerant_temperatures(t_chw_leaving, t_sink_leaving, evaporator_approach, condenser_approach):
    """Saturated evaporating and condensing temperatures of a chiller [degC].

    Parameters
    ----------
    t_chw_leaving : array_like
        Chilled water leaving the evaporator [degC].
    t_sink_leaving : array_like
        Condenser water leaving the condenser (water-cooled) or outdoor dry-bulb (air-cooled)
        [degC].
    evaporator_approach, condenser_approach : array_like
        Leaving chilled water − evaporating temperature, and condensing temperature − leaving
        condenser water (or dry-bulb) [K] (shell-and-tube: 1–3 K; air-cooled condensers 10–20 K).

    Returns
    -------
    t_evaporating, t_condensing : ndarray
        [degC].
    """
    te, tc, ae, ac = as_arrays(t_chw_leaving, t_sink_leaving, evaporator_approach, condenser_approach)
    return te - ae, tc + ac


def carnot_cop(t_evaporating, t_condensing):
    """Carnot COP of refrigeration, T_e / (T_c − T_e) with T in kelvin; ``inf`` at no lift [1]."""
    te, tc = as_arrays(t_evaporating, t_condensing)
    lift = tc - te
    return np.divide(te + ZERO_CELSIUS, lift, out=np.full(lift.shape, np.inf), where=lift > 0)


def carnot_fraction_from_rating(cop_rated, t_chw_leaving, t_sink_leaving, evaporator_approach,
                                condenser_approach):
    """Second-law efficiency of a chiller from its rated COP.

    Parameters
    ----------
    cop_rated : float
        Full-load COP at the rating point [1].
    t_chw_leaving, t_sink_leaving : float
        Rating conditions [degC]: AHRI 550/590 water-cooled: 6.7 °C leaving chilled water and
        35.0 °C leaving condenser water (29.4 °C entering, 3 gpm/ton); air-cooled: 35 °C
        dry-bulb.
    evaporator_approach, condenser_approach : float
        Approaches [K] (see :func:`refrigerant_temperatures`).

    Returns
    -------
    float
        η_II = COP_rated / COP_Carnot(T_e, T_c) [1].
    """
    te, tc = refrigerant_temperatures(t_chw_leaving, t_sink_leaving, evaporator_approach,
                                      condenser_approach)
    return float(cop_rated / carnot_cop(te, tc))


def chiller_full_load_cop(t_chw_leaving, t_sink_leaving, evaporator_approach, condenser_approach,
                          carnot_fraction, cop_max):
    """Full-load COP at operating conditions.

    Parameters
    ----------
    t_chw_leaving, t_sink_leaving : array_like
        [degC] (see :func:`refrigerant_temperatures`).
    evaporator_approach, condenser_approach : array_like
        [K].
    carnot_fraction : array_like
        η_II [1] (:func:`carnot_fraction_from_rating`).
    cop_max : array_like
        Upper limit as the lift vanishes [1].

    Returns
    -------
    ndarray
        COP = min(η_II · T_e / (T_c − T_e), COP_max) [1].

    Notes
    -----
    Against a Carnot COP between the water temperatures themselves, the approaches add
    Δ_e + Δ_c (4–5 K water-cooled, 15–20 K air-cooled) to the lift, which matters most at the
    low lifts of warm-water plants: at 6 K of water lift a water-cooled chiller sees ≈ 10 K of
    refrigerant lift, so its energy is ~40 % above a fraction-of-Carnot on water temperatures
    with the same rated COP.

    References
    ----------
    .. [1] ASHRAE Handbook — Fundamentals (2021), ch. 2 (Carnot refrigeration cycle); ASHRAE
       Handbook — HVAC Systems and Equipment (2020), ch. 43 "Liquid-chilling systems".
    """
    te, tc = refrigerant_temperatures(t_chw_leaving, t_sink_leaving, evaporator_approach,
                                      condenser_approach)
    eta, cmax = as_arrays(carnot_fraction, cop_max)
    return np.minimum(eta * carnot_cop(te, tc), cmax)


def part_load_power_fraction(plr, coefficients, min_plr=0.0, cycling=False):
    """Power at a part-load ratio as a fraction of full-load power at the same temperatures.

    Parameters
    ----------
    plr : array_like
        Part-load ratio, evaporator load / available capacity [1], 0..1.
    coefficients : sequence of 3 float
        (c₀, c₁, c₂) of EIR-fPLR = c₀ + c₁ PLR + c₂ PLR² (1 at PLR = 1).
    min_plr : array_like
        Minimum unloading ratio [1]: the chiller does not unload below it.
    cycling : bool
        Below ``min_plr``: False, it false-loads (hot-gas bypass), drawing the power of
        ``min_plr`` while delivering less; True, it cycles on and off at ``min_plr``, drawing
        that power for the fraction PLR / PLR_min of the time.

    Returns
    -------
    ndarray
        P / P_full = EIR-fPLR(max(PLR, PLR_min)) [1], times min(PLR / PLR_min, 1) when cycling;
        0 at PLR = 0 (chiller off).

    References
    ----------
    .. [1] EnergyPlus Engineering Reference, "Electric chiller model based on condenser entering
       temperature" (Chiller:Electric:EIR): P = P_ref · CAPFT · EIRFT · EIRFPLR.
    """
    c0, c1, c2 = coefficients
    x, m = as_arrays(plr, min_plr)
    xe = np.clip(np.maximum(x, m), 0.0, 1.0)
    f = c0 + c1 * xe + c2 * xe * xe
    if cycling:
        f = f * np.minimum(np.divide(x, xe, out=np.ones_like(xe), where=xe > 0), 1.0)
    return np.where(x > 0, f, 0.0)


def chiller_power(q, capacity, cop_full, coefficients, min_plr=0.0, cycling=False):
    """Electrical power of running chillers that share a load equally.

    Parameters
    ----------
    q : array_like
        Evaporator load [W], ≥ 0.
    capacity : array_like
        Capacity of the chillers running [W] (:func:`stage_chillers`).
    cop_full : array_like
        Full-load COP at the present temperatures [1] (:func:`chiller_full_load_cop`).
    coefficients : sequence of 3 float
        EIR-fPLR (:func:`part_load_power_fraction`).
    min_plr : array_like
        Minimum unloading ratio [1].
    cycling : bool
        Below it the chiller cycles (True) or false-loads (:func:`part_load_power_fraction`).

    Returns
    -------
    ndarray
        P = (capacity / COP_full) · EIR-fPLR(q / capacity) [W]; the condenser rejects q + P.
    """
    q, cap, cop = as_arrays(q, capacity, cop_full)
    plr = np.divide(np.maximum(q, 0.0), cap, out=np.zeros_like(q), where=cap > 0)
    return np.where(cap > 0, cap / cop * part_load_power_fraction(np.minimum(plr, 1.0),
                                                                  coefficients, min_plr, cycling), 0.0)


def stage_chillers(q, unit_capacity, available, stage_up=0.9):
    """Chillers to run for a load: the fewest that carry it below the staging threshold.

    Parameters
    ----------
    q : array_like
        Evaporator load [W].
    unit_capacity : float
        Capacity of one chiller at the present conditions [W].
    available : array_like
        Chillers available (not tripped) [1].
    stage_up : float
        Load fraction of the running chillers above which another starts [1] (0.8–0.95).

    Returns
    -------
    ndarray of int
        n = min(⌈q / (stage_up · capacity)⌉, available); 0 at no load.
    """
    q, avail = as_arrays(q, available)
    n = np.ceil(np.maximum(q, 0.0) / (stage_up * unit_capacity) - 1e-12)
    return np.minimum(n, avail).astype(int)


def chiller_leaving_temperature(t_setpoint, t_max_leaving):
    """Leaving chilled-water temperature a chiller can hold [degC].

    Parameters
    ----------
    t_setpoint : array_like
        Leaving-water set-point asked for [degC].
    t_max_leaving : array_like
        Highest leaving chilled water of the compressor's envelope [degC] (standard centrifugal
        and screw chillers about 15–20 °C; oil-free magnetic-bearing machines up to ~25 °C):
        above it the evaporating pressure is beyond what the compressor and motor are built for.

    Returns
    -------
    ndarray
        min(set-point, t_max) [degC]: a warm-water plant whose trim chiller cannot leave water
        as warm as the set-point makes colder water than asked and mixes or bypasses.
    """
    ts, tm = as_arrays(t_setpoint, t_max_leaving)
    return np.minimum(ts, tm)


def chiller_plant(q, t_setpoint, t_sink_leaving, unit_capacity, available, carnot_fraction,
                  cop_max, evaporator_approach, condenser_approach, coefficients, min_plr,
                  t_max_leaving, stage_up=0.9):
    """Chillers serving a load: staging, envelope, full-load COP and part load together.

    Parameters
    ----------
    q : float
        Evaporator load asked for [W].
    t_setpoint : float
        Leaving chilled-water set-point [degC].
    t_sink_leaving : float
        Leaving condenser water, or outdoor dry-bulb for air-cooled machines [degC].
    unit_capacity : float
        Capacity of one chiller [W].
    available : int
        Chillers not tripped [1].
    carnot_fraction, cop_max, evaporator_approach, condenser_approach
        See :func:`chiller_full_load_cop`.
    coefficients, min_plr
        See :func:`part_load_power_fraction`.
    t_max_leaving : float
        Envelope limit on leaving chilled water [degC] (:func:`chiller_leaving_temperature`).
    stage_up : float
        See :func:`stage_chillers`.

    Returns
    -------
    dict
        ``running`` chillers [1], ``q`` evaporator load carried [W] (≤ the capacity running),
        ``power`` [W], ``cop`` effective q / power [1], ``t_leaving`` [degC], ``q_condenser``
        heat the condensers reject, q + power [W].
    """
    t_leave = float(chiller_leaving_temperature(t_setpoint, t_max_leaving))
    n = int(stage_chillers(q, unit_capacity, available, stage_up))
    cap = n * unit_capacity
    carried = min(max(float(q), 0.0), cap)
    cop = float(chiller_full_load_cop(t_leave, t_sink_leaving, evaporator_approach,
                                      condenser_approach, carnot_fraction, cop_max))
    power = float(chiller_power(carried, cap, cop, coefficients, min_plr))
    return {"running": n, "q": carried, "power": power,
            "cop": carried / power if power > 0 else 0.0, "t_leaving": t_leave,
            "q_condenser": carried + power}
