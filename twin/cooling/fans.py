"""Fans: server fans under speed control, and CRAH fan walls on a static-pressure set-point.

Pure functions of arrays (vectorised over sleds or units). Speeds are relative to the design
speed [1], air flows in m³ s-1, pressures in Pa, powers in W.
"""

from __future__ import annotations

import numpy as np

from twin.cooling.plant import as_arrays


def server_fan_speed(t_inlet, t_component, min_speed, inlet_low, inlet_high,
                     component_target, component_band):
    """Speed a server's fan controller asks for, from its inlet and component temperatures.

    Parameters
    ----------
    t_inlet : array_like
        Air inlet temperature of the server [degC].
    t_component : array_like
        Hottest monitored component (die, VR, DIMM) of the server [degC].
    min_speed : array_like
        Floor of the fan speed [1] (acoustic/reliability floor; 20–40 % on current servers).
    inlet_low, inlet_high : array_like
        Inlet temperatures at which the open-loop inlet curve leaves the floor and reaches full
        speed [degC].
    component_target : array_like
        Component temperature at which the closed-loop part starts to add speed [degC].
    component_band : array_like
        Kelvin above the target at which it asks for full speed [K], > 0.

    Returns
    -------
    ndarray
        s = clip(max(s_min, s_inlet, s_comp), s_min, 1) [1] with s_inlet rising linearly from
        s_min at ``inlet_low`` to 1 at ``inlet_high`` and s_comp from s_min at the target to 1
        at target + band.

    Notes
    -----
    Baseboard management controllers take the largest of several fan-curve outputs: an
    open-loop table on inlet temperature and proportional (or PID) loops on component
    temperatures (DMTF Redfish / OpenBMC ``phosphor-pid-control``: "fan zones" driven by the
    maximum of their thermal and fan PID outputs). The steady proportional form is used here.
    """
    ti, tc, s0, lo, hi, tgt, band = as_arrays(t_inlet, t_component, min_speed, inlet_low,
                                            inlet_high, component_target, component_band)
    s_inlet = s0 + (1.0 - s0) * np.clip((ti - lo) / (hi - lo), 0.0, 1.0)
    s_comp = s0 + (1.0 - s0) * np.clip((tc - tgt) / band, 0.0, 1.0)
    return np.clip(np.maximum(s_inlet, s_comp), s0, 1.0)


def fan_power_floor(speed, power_design, min_speed=0.0, exponent=3.0):
    """Power of a speed-controlled fan with a minimum speed.

    Parameters
    ----------
    speed : array_like
        Relative speed asked for [1].
    power_design : array_like
        Power at design (full) speed [W].
    min_speed : array_like
        Lowest speed the fan runs at [1].
    exponent : float
        Affinity exponent (3: P ∝ N³ on a system curve through the origin).

    Returns
    -------
    ndarray
        P = P_d · max(s, s_min)^n [W].
    """
    s, p, s0 = as_arrays(speed, power_design, min_speed)
    return p * np.maximum(s, s0) ** exponent


def fan_wall_power(air_flow, design_flow, design_pressure, static_setpoint, efficiency):
    """Electrical power of a CRAH fan wall holding a containment static-pressure set-point.

    Parameters
    ----------
    air_flow : array_like
        Air the fans move [m³ s-1]: what the IT equipment draws plus containment leakage.
    design_flow : array_like
        Air flow at design [m³ s-1].
    design_pressure : array_like
        Total pressure rise at design [Pa]: coil, filters and the static set-point.
    static_setpoint : array_like
        Differential pressure held between the cold aisle (or plenum) and the room [Pa]
        (a few pascal in contained aisles).
    efficiency : array_like
        Fan-wall wire-to-air efficiency [1] (EC fans 0.5–0.65).

    Returns
    -------
    ndarray
        P = V̇ (Δp_s + (Δp_d − Δp_s)(V̇/V̇_d)²) / η [W].

    Notes
    -----
    Coil and filter losses scale with the square of the flow; the static set-point does not,
    so the fan wall's power falls between the square and the cube of the air flow. At design
    P_d = V̇_d Δp_d / η.

    References
    ----------
    .. [1] ASHRAE Handbook — HVAC Systems and Equipment (2020), ch. 21 "Fans" (fan laws, system
       effect); ASHRAE TC9.9, "Thermal Guidelines for Data Processing Environments", 5th ed.,
       containment pressure control.
    """
    v, vd, pd, ps, eta = as_arrays(air_flow, design_flow, design_pressure, static_setpoint, efficiency)
    x = np.maximum(v, 0.0) / vd
    return np.maximum(v, 0.0) * (ps + (pd - ps) * x * x) / eta


def containment_air_flow(it_air_flow, leakage_fraction):
    """Air a CRAH fan wall must supply for the IT air flow with containment leakage [m³ s-1].

    V̇ = V̇_IT (1 + leakage); leakage 5–20 % for hot- or cold-aisle containment (estimate,
    ASHRAE TC9.9 guidance on containment).
    """
    v, f = as_arrays(it_air_flow, leakage_fraction)
    return v * (1.0 + f)
