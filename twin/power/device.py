"""Device (chip package) electrical power: idle, active idle, dynamic and leakage power.

A device is in one of two states:

- *idle*: no job holds it and nothing runs on it. Clocks are parked, idle blocks are power
  gated; it draws its measured whole-chip idle power ``p_idle`` (at the idle temperature
  ``t_idle``), which already contains its (gated) leakage.
- *active*: a job holds it (a context is open, clocks are up) or work runs on it. It draws the
  measured active-idle level ``p_active_idle`` at u = 0 and rises with utilisation u as
  ``P_dyn · u · f^α`` at relative clock f.

Leakage is explicit in both states so that it follows the die temperature, and in the active
state the voltage (and so the clock): at full voltage it is ``p_leak_ref`` at ``t_ref``, the
maximum operating temperature at which the part is rated for its TDP. The measured levels are
taken at ``t_idle``; the model subtracts the leakage there, so that the catalogue's measured
idle is reproduced exactly at the temperature it was measured at.

Units: W, degC, K, and fractions [1]. Every function takes numbers or ndarrays (broadcast
together) and returns ndarrays; none keeps state.
"""

from __future__ import annotations

import numpy as np

#: Newton iterations for :func:`clock_for_power` (the residual is convex and increasing in f,
#: so Newton from f = 1 converges monotonically; 6 steps reach 1e-10 relative for α ≤ 3).
CLOCK_NEWTON_STEPS = 6


def leakage_power(t_die, clock, p_leak_ref, t_ref, leak_beta, clock_exponent):
    """Static (leakage) power of an active device.

    Parameters
    ----------
    t_die : ndarray
        Die temperature [degC].
    clock : ndarray
        Relative clock f, 0..1 [1] (the governor's voltage-frequency point).
    p_leak_ref : ndarray
        Leakage at full voltage (f = 1) and ``t_ref`` [W].
    t_ref : ndarray
        Reference temperature: the maximum operating temperature at which the part is rated
        for its TDP [degC].
    leak_beta : ndarray
        Exponential temperature coefficient of leakage [1/K].
    clock_exponent : ndarray
        α of the dynamic power ``∝ f^α`` [1].

    Returns
    -------
    ndarray
        Leakage power [W].

    Notes
    -----
    P_leak = P_leak,ref · f^(α−1) · exp(β (T − T_ref)).

    Subthreshold leakage grows about exponentially with temperature (β of 0.01–0.02 /K, 1–2 %/K,
    for modern nodes). Along the DVFS curve the supply voltage falls with the clock; dynamic
    power C·V²·f ∝ f^α means V² ∝ f^(α−1), and leakage power I_leak·V, with I_leak rising
    about linearly with V over the DVFS range (drain-induced barrier lowering), scales as V²,
    i.e. as f^(α−1) — about 2.4× less at the lowest DVFS point (V ≈ 0.65 V_max) than at the
    highest.

    References
    ----------
    .. [1] N. S. Kim et al., "Leakage current: Moore's law meets static power", IEEE Computer
       36(12), 2003.
    .. [2] J. Leng et al., "GPUWattch: enabling energy optimizations in GPGPUs", ISCA 2013
       (static power and its voltage and temperature dependence).
    """
    f = np.asarray(clock, dtype=float)
    return p_leak_ref * np.power(f, clock_exponent - 1.0) * np.exp(leak_beta * (np.asarray(t_die) - t_ref))


def dynamic_power_full(tdp, p_active_idle, p_leak_ref, t_ref, t_idle, leak_beta):
    """Dynamic power at u = 1, f = 1 that makes the model draw its TDP at ``t_ref``.

    Parameters
    ----------
    tdp : ndarray
        Rated (thermal design) power [W].
    p_active_idle : ndarray
        Measured active-idle power at ``t_idle`` [W].
    p_leak_ref, t_ref, leak_beta
        See :func:`leakage_power` [W], [degC], [1/K].
    t_idle : ndarray
        Die temperature of the idle and active-idle measurements [degC].

    Returns
    -------
    ndarray
        P_dyn [W].

    Notes
    -----
    P(u = 1, f = 1, T_ref) = p_active_idle + P_leak,ref · (1 − e^{β(T_idle − T_ref)}) + P_dyn
    = TDP, so P_dyn = TDP − p_active_idle − P_leak,ref · (1 − e^{β(T_idle − T_ref)}).
    """
    return tdp - p_active_idle - p_leak_ref * (1.0 - np.exp(leak_beta * (np.asarray(t_idle) - t_ref)))


def idle_power(t_die, p_idle, t_idle, p_leak_ref, t_ref, leak_beta, idle_leak_fraction):
    """Whole-chip idle power (no job holds the device; clocks parked, idle blocks gated).

    Parameters
    ----------
    t_die : ndarray
        Die temperature [degC].
    p_idle : ndarray
        Measured whole-chip idle power at ``t_idle`` [W].
    t_idle : ndarray
        Die temperature of that measurement [degC].
    p_leak_ref, t_ref, leak_beta
        See :func:`leakage_power` [W], [degC], [1/K].
    idle_leak_fraction : ndarray
        Share of the full-voltage leakage left at idle (parked voltage, power gating) [1].

    Returns
    -------
    ndarray
        Idle power [W].

    Notes
    -----
    P_idle(T) = p_idle + g · P_leak,ref · (e^{β(T − T_ref)} − e^{β(T_idle − T_ref)}),

    with g the idle leakage fraction: the measured idle contains the gated leakage at T_idle,
    which is subtracted and replaced by that at the die's temperature. So P_idle(T_idle) =
    p_idle exactly.
    """
    d = np.exp(leak_beta * (np.asarray(t_die) - t_ref)) - np.exp(leak_beta * (np.asarray(t_idle) - t_ref))
    return p_idle + idle_leak_fraction * p_leak_ref * d


def active_power(u, clock, t_die, p_active_idle, t_idle, p_dyn, p_leak_ref, t_ref, leak_beta,
                 clock_exponent):
    """Power of an active device (a job holds it or work runs on it).

    Parameters
    ----------
    u : ndarray
        Utilisation (dynamic activity at full clock), 0..1 and above for work beyond the rated
        activity (then the power limit binds) [1].
    clock : ndarray
        Relative clock f, 0..1 [1].
    t_die : ndarray
        Die temperature [degC].
    p_active_idle : ndarray
        Measured active-idle power (u = 0, f = 1) at ``t_idle`` [W].
    t_idle : ndarray
        Die temperature of that measurement [degC].
    p_dyn : ndarray
        Dynamic power at u = 1, f = 1 (:func:`dynamic_power_full`) [W].
    p_leak_ref, t_ref, leak_beta, clock_exponent
        See :func:`leakage_power`.

    Returns
    -------
    ndarray
        Power [W].

    Notes
    -----
    P = p_active_idle − P_leak(1, T_idle) + P_leak(f, T) + P_dyn · u · f^α,

    with P_leak from :func:`leakage_power`: P = TDP at u = 1, f = 1, T = T_ref and P =
    p_active_idle at u = 0, f = 1, T = T_idle. Dynamic CMOS power is α_sw·C·V²·f; with the voltage
    following the clock under DVFS, P_dyn ∝ f^α with α ≈ 2–3. Throughput ∝ u·f. The active
    floor (uncore, memory controllers and PHYs, clock trees) is held constant.
    """
    leak_idle = p_leak_ref * np.exp(leak_beta * (np.asarray(t_idle) - t_ref))
    f = np.asarray(clock, dtype=float)
    return (p_active_idle - leak_idle
            + leakage_power(t_die, f, p_leak_ref, t_ref, leak_beta, clock_exponent)
            + p_dyn * u * np.power(f, clock_exponent))


def device_power(u, clock, t_die, active, chip):
    """Electrical power of device packages, idle or active.

    Parameters
    ----------
    u : ndarray
        Utilisation [1] (devices,) or (sub-steps, devices).
    clock : ndarray
        Relative clock [1], broadcast against ``u``.
    t_die : ndarray
        Die temperature [degC] (devices,).
    active : ndarray of bool
        Devices in the active state (held by a job, or u > 0), broadcast against ``u``.
    chip : mapping of str to ndarray
        Per-device parameters: ``p_idle``, ``t_idle``, ``idle_leak_fraction``,
        ``p_active_idle``, ``p_dyn``, ``p_leak_ref``, ``t_ref``, ``leak_beta``,
        ``clock_exponent`` (see :func:`idle_power` and :func:`active_power`).

    Returns
    -------
    ndarray
        Power [W], shaped like ``u``.
    """
    c = chip
    p_act = active_power(u, clock, t_die, c["p_active_idle"], c["t_idle"], c["p_dyn"], c["p_leak_ref"],
                         c["t_ref"], c["leak_beta"], c["clock_exponent"])
    p_off = idle_power(t_die, c["p_idle"], c["t_idle"], c["p_leak_ref"], c["t_ref"], c["leak_beta"],
                       c["idle_leak_fraction"])
    return np.where(active, p_act, p_off)


def clock_for_power(limit, u, t_die, chip, clock_min=0.0, steps=CLOCK_NEWTON_STEPS):
    """Highest relative clock at which an active device draws no more than ``limit``.

    Parameters
    ----------
    limit : ndarray
        Power limit [W].
    u : ndarray
        Utilisation [1].
    t_die : ndarray
        Die temperature [degC].
    chip : mapping of str to ndarray
        As for :func:`device_power` (entries broadcast against ``u``).
    clock_min : float or ndarray
        Lowest clock the governor may set [1].
    steps : int
        Newton iterations.

    Returns
    -------
    ndarray
        Clock in [clock_min, 1] [1]: 1 where the device stays under the limit at full clock,
        ``clock_min`` where it cannot reach the limit at any clock (the floor alone exceeds it).

    Notes
    -----
    Solves g(f) = a + b·f^(α−1) + d·f^α − P_lim = 0 with a = p_active_idle − P_leak(1, T_idle),
    b = P_leak,ref·e^{β(T − T_ref)} and d = P_dyn·u. g is increasing and convex on (0, 1] for
    α ≥ 2, so Newton's method started at f = 1 approaches the root from above without
    overshooting: after the iterations the clock is never above the root by more than the
    Newton error and the power never above the limit by more than that.
    """
    c = chip
    alpha = np.asarray(c["clock_exponent"], dtype=float)
    a = c["p_active_idle"] - c["p_leak_ref"] * np.exp(c["leak_beta"] * (np.asarray(c["t_idle"]) - c["t_ref"]))
    b = c["p_leak_ref"] * np.exp(c["leak_beta"] * (np.asarray(t_die) - c["t_ref"]))
    d = c["p_dyn"] * np.asarray(u, dtype=float)
    a, b, d, alpha, lim = np.broadcast_arrays(a, b, d, alpha, np.asarray(limit, dtype=float))
    f = np.ones(a.shape)
    over = a + b + d > lim
    if not over.any():
        return f
    aa, bb, dd, al, ll = a[over], b[over], d[over], alpha[over], lim[over]
    x = np.ones(aa.shape)
    for _ in range(steps):
        xa = np.power(x, al - 1.0)
        g = aa + bb * xa + dd * xa * x - ll
        dg = (al - 1.0) * bb * xa / x + al * dd * xa
        x = np.maximum(x - g / dg, 1e-6)
    f[over] = x
    return np.clip(f, clock_min, 1.0)


def hbm_power_coefficients(p_idle, tdp, hbm_idle_power, hbm_active_power):
    """Slope and offset of the HBM stacks' power as an affine function of the device's power.

    Parameters
    ----------
    p_idle : ndarray
        Measured whole-chip idle power [W] (the HBM floor is part of it).
    tdp : ndarray
        Rated power [W] (the HBM streams at full bandwidth there, see :func:`hbm_power`).
    hbm_idle_power : ndarray
        The stacks' floor: refresh, standby of the DRAM dies, base die and PHY [W].
    hbm_active_power : ndarray
        The stacks' power above the floor at full bandwidth: energy per bit moved × 8 ×
        bandwidth [W].

    Returns
    -------
    (ndarray, ndarray)
        s = dP_hbm/dP [1] and c = P_hbm at P = 0 [W], so that P_hbm = s·P + c.

    Notes
    -----
    s = P_hbm,act / (TDP − P_idle),  c = P_hbm,idle − s · P_idle (see :func:`hbm_power`).
    """
    s = np.asarray(hbm_active_power, dtype=float) / (np.asarray(tdp, dtype=float) - p_idle)
    return s, hbm_idle_power - s * p_idle


def hbm_power(p, p_idle, tdp, hbm_idle_power, hbm_active_power, on=True):
    """Power of an accelerator's HBM stacks (part of the device's power, on its HBM node).

    Parameters
    ----------
    p : ndarray
        Device (package) power [W].
    p_idle, tdp, hbm_idle_power, hbm_active_power : ndarray
        See :func:`hbm_power_coefficients` [W].
    on : ndarray of bool, optional
        Devices that are powered (a device without power draws nothing, its stacks neither).

    Returns
    -------
    ndarray
        HBM power [W] (the die takes P − P_hbm).

    Notes
    -----
    DRAM power is a floor — refresh, the standby current of the DRAM dies, the base (logic)
    die and the PHYs at both ends, drawn whenever the memory is powered — plus the energy of
    the bits moved: E_bit · 8 · B_used (pJ per bit from the memory's generation; 3.9 pJ/bit for
    HBM2, O'Connor et al., MICRO 2017, and for HBM3E as Samsung gives it). The twin carries no
    memory traffic per device, so the bandwidth used follows the device's power above idle,
    reaching the full bandwidth at the TDP::

        B_used / B = (P − P_idle) / (TDP − P_idle)
        P_hbm = P_hbm,idle + P_hbm,act · (P − P_idle) / (TDP − P_idle) = s · P + c

    with P_hbm,act = E_bit · 8 · B. That is an upper bound on the traffic of compute-bound
    work (training at TDP streams a fraction of the bandwidth) and right for memory-bound
    decode, which draws most of its dynamic power moving bytes. Affine in P, so the split
    folds into the sled's linear network (:class:`twin.thermal.network.SledGroup`).
    """
    s, c = hbm_power_coefficients(p_idle, tdp, hbm_idle_power, hbm_active_power)
    return (s * np.asarray(p, dtype=float) + c) * np.asarray(on)
