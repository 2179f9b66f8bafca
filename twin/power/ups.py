"""Static UPS systems: module count from the IT design load, losses by operating mode.

A UPS system is ``n`` identical modules in parallel sharing the load equally (N+R: N modules
carry the design load, R are redundant and share the load too, so each runs lighter). Losses of
one module follow the three-term loss model fitted to its catalogue efficiency curve, which
extrapolates honestly below the first rated point (no-load losses stay) and keeps the losses of
a system a smooth function of load.
"""

from __future__ import annotations

import math

import numpy as np

#: UPS operating modes → the catalogue curve that describes each (a registry, not an if/elif).
UPS_MODES = {
    "double_conversion": "efficiency",
    "eco": "efficiency_eco",
}


def ups_modules(p_design, module_rating, redundant=1, max_load=1.0):
    """Modules of a parallel UPS system sized from the IT design load (N + R).

    Parameters
    ----------
    p_design : float
        Design load the UPS system must carry [W] (IT design load plus the busway losses at it).
    module_rating : float
        Rated real-power output of one module [W] (kVA rating × output power factor).
    redundant : int
        Redundant modules R (1 for N+1).
    max_load : float
        Highest load fraction a module may carry with all N duty modules running [1]
        (1.0: sized to the rating; 0.8–0.9 where the design keeps headroom).

    Returns
    -------
    int
        n = ⌈p_design / (max_load · module_rating)⌉ + R, at least 1 + R.

    References
    ----------
    .. [1] Uptime Institute, Tier Standard: Topology (2018): N+1 components ("concurrently
       maintainable" capacity components).
    """
    if module_rating <= 0 or not 0 < max_load <= 1:
        raise ValueError(f"ups_modules: module_rating must be > 0 and max_load in (0, 1], got "
                         f"{module_rating}, {max_load}")
    n = max(1, math.ceil(p_design / (max_load * module_rating) - 1e-9))
    return int(n + redundant)


def ups_active_modules(p_out, n_modules, module_rating, redundant=1, max_load=0.8):
    """Modules a module-management mode keeps in double conversion at a load (N + R active).

    Parameters
    ----------
    p_out : array_like
        Output power of the UPS system [W], ≥ 0.
    n_modules : int
        Modules installed [1].
    module_rating : float
        Rated real-power output of one module [W].
    redundant : int
        Redundant modules kept active beyond those the load needs (R) [1].
    max_load : float
        Highest load fraction an active module may carry before another is activated [1]
        (Eaton VMMS: 80 % by default, user-configurable).

    Returns
    -------
    ndarray of int
        n_active = min(n_modules, max(⌈P / (max_load · P_r)⌉, 1) + R).

    Notes
    -----
    The active modules share the load in double conversion; the others are parked and take the
    load back within milliseconds on a load step or a mains disturbance. Eaton's Variable Module
    Management System (VMMS) does this with a load limit and a redundancy setting; ABB's Xtra
    VFI likewise keeps the configured redundancy. Neither is an eco mode: the load stays on the
    inverters (IEC 62040-3 VFI). On a mains failure every module is made active again.

    References
    ----------
    .. [1] Eaton, Power Xpert 9395P 500/600 kVA User's and Installation Guide, P-164000476
       rev. 002, §6.2.4 "Variable Module Management System" (load limit 80 % by default,
       redundancy setting, parked UPMs keep the DC link primed and the output contactor closed).
    .. [2] ABB/Kohler Uninterruptible Power, "Maintaining UPS efficiency at low loads" (Xtra VFI
       on the PowerWAVE 9500DPA: active modules reduced with the load, redundancy kept; all
       modules switched to active on a mains failure or alarm).
    """
    if module_rating <= 0 or not 0 < max_load <= 1:
        raise ValueError(f"ups_active_modules: module_rating must be > 0 and max_load in (0, 1], got "
                         f"{module_rating}, {max_load}")
    need = np.ceil(np.asarray(p_out, dtype=float) / (max_load * module_rating) - 1e-9)
    return np.minimum(int(n_modules), np.maximum(need, 1) + int(redundant)).astype(np.int64)


def ups_loss_coefficients(curve_load, curve_efficiency):
    """Three-term loss model of a UPS module fitted to its efficiency curve.

    Parameters
    ----------
    curve_load, curve_efficiency : sequence of float
        Efficiency η against load fraction x (catalogue curve) [1].

    Returns
    -------
    ndarray, shape (3,)
        (a₀, a₁, a₂) with losses P_loss / P_rated = a₀ + a₁ x + a₂ x² [1], all ≥ 0.

    Notes
    -----
    At each curve point P_loss / P_rated = x (1/η − 1). The three terms are the no-load losses
    (control, fans, magnetising, switching at zero current: a₀), losses proportional to load
    (diode and IGBT conduction at fixed voltage drop: a₁) and resistive I²R losses (a₂). Fitted
    by non-negative least squares (:func:`scipy.optimize.nnls`) on 1/η − 1 = a₀/x + a₁ + a₂ x,
    so the residuals are efficiency errors and no term can come out negative.

    References
    ----------
    .. [1] N. Rasmussen, "Electrical efficiency modeling for data centers", Schneider Electric
       White Paper 113 (three-term loss model of UPS, PDU and transformer losses).
    """
    from scipy.optimize import nnls

    x = np.asarray(curve_load, dtype=float)
    eta = np.asarray(curve_efficiency, dtype=float)
    # weighted by 1/x: the residuals are then errors in 1/η − 1, i.e. in efficiency points
    a = np.column_stack([1.0 / x, np.ones_like(x), x])
    coeffs, _ = nnls(a, 1.0 / eta - 1.0)
    return coeffs


def ups_losses(p_out, n_modules, module_rating, coefficients):
    """Losses of a UPS system whose modules share the load equally.

    Parameters
    ----------
    p_out : array_like
        Output power of the UPS system [W], ≥ 0.
    n_modules : array_like
        Modules in service [1], ≥ 1.
    module_rating : float
        Rated real-power output of one module [W].
    coefficients : sequence of 3 float
        (a₀, a₁, a₂) of :func:`ups_loss_coefficients`.

    Returns
    -------
    ndarray
        P_loss = n · P_r · (a₀ + a₁ x + a₂ x²) with x = P_out / (n · P_r) [W].

    Notes
    -----
    Running N+1 modules lowers x by N/(N+1): the proportional losses stay, the I²R losses fall
    and the no-load losses of the extra module are added. Input power is P_out + P_loss; the
    losses are heat in the UPS room.
    """
    a0, a1, a2 = coefficients
    n = np.asarray(n_modules, dtype=float)
    cap = n * module_rating
    x = np.divide(np.asarray(p_out, dtype=float), cap, out=np.zeros(np.broadcast(p_out, n).shape),
                  where=cap > 0)
    return cap * (a0 + a1 * x + a2 * x * x)


def ups_efficiency(load_fraction, coefficients):
    """Efficiency of a UPS module (or of modules sharing a load) at a load fraction.

    Parameters
    ----------
    load_fraction : array_like
        Output / rated output of the modules sharing the load [1].
    coefficients : sequence of 3 float
        (a₀, a₁, a₂) of :func:`ups_loss_coefficients`.

    Returns
    -------
    ndarray
        η = x / (x + a₀ + a₁ x + a₂ x²) [1]; 0 at no load.
    """
    a0, a1, a2 = coefficients
    x = np.asarray(load_fraction, dtype=float)
    return x / (x + a0 + a1 * x + a2 * x * x)


def ups_battery_step(energy, capacity, p_discharge, on_battery, dt, p_charge_max, eta_charge):
    """Advance the UPS battery over one step: discharge during an outage, recharge otherwise.

    Parameters
    ----------
    energy : float
        Energy in the battery at the start of the step [J].
    capacity : float
        Usable energy when full [J].
    p_discharge : float
        Power the UPS draws from the battery during an outage (its input: the load, busway and
        UPS losses) [W].
    on_battery : bool
        The utility is out over this step.
    dt : float
        Step [s].
    p_charge_max : float
        Highest power the charger draws from the utility while the battery is not full [W].
    eta_charge : float
        Utility → stored energy efficiency of the charger and cells [1].

    Returns
    -------
    energy_end : float
        E_end [J], between 0 and ``capacity``.
    p_battery : float
        Mean power the battery gives the UPS over the step [W]: ``p_discharge`` during an
        outage (a step that empties the battery is still carried; the racks go dark from the
        next one), else 0.
    p_charge : float
        Mean power the charger draws from the utility over the step [W].

    Notes
    -----
    Discharge: P_b = P_d, E_end = max(E − P_b dt, 0) (never below empty; the step that empties
    it overdraws by less than one step's P_d dt).
    Recharge at constant power (the constant-current phase, most of a recharge):
    P_c = min(P_c,max, (E_max − E) / (η_c dt)), E_end = E + η_c P_c dt; the charger's loss
    (1 − η_c) P_c is heat in the UPS room. So E_end − E = η_c P_c dt − P_b dt (but for the
    clamp at empty).
    """
    if on_battery:
        return max(0.0, energy - p_discharge * dt), p_discharge, 0.0
    room = max(capacity - energy, 0.0)
    p_charge = min(p_charge_max, room / (eta_charge * dt)) if eta_charge > 0 else 0.0
    return min(capacity, energy + eta_charge * p_charge * dt), 0.0, p_charge
