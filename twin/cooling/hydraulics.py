"""Hydraulics of closed cooling loops: pump curves, system curves, control and flow sharing.

Pressures are differential pressures [Pa] (head × ρ g), flows volume flows [m³ s-1], speeds
relative to the pump's rated speed [1]. Pure functions of arrays; the equipment that uses them
(CDU secondary pumps, facility-water and chilled-water pumps) holds the state.

Model (ASHRAE Handbook — HVAC Systems and Equipment 2020, ch. 44 "Centrifugal pumps"):

- pump curve at speed N, n identical pumps in parallel: Δp = N² Δp₀ − a (Q/n)², the quadratic
  through the shut-off pressure Δp₀ and the rated point (Q_d, Δp_d); it obeys the affinity laws
  (Q ∝ N, Δp ∝ N² along a parabola through the origin);
- pump efficiency: η(Q, N) = η_BEP (2r − r²), r = Q / (n N Q_BEP), the parabola through the best
  efficiency point that is constant along affinity parabolas;
- system curve: Δp = Δp_s + k Q², a static (or controlled) part and the flow resistance k;
- parallel branches (racks on a CDU loop, plates in a sled) share one pressure drop, so
  Q_i ∝ k_i^(−1/2).
"""

from __future__ import annotations

import math

import numpy as np

from twin.cooling.plant import as_arrays

#: Standard gravity [m s-2] (head ↔ pressure).
G = 9.80665
#: Types of one number (np.float64 is a float).
_NUMBERS = (float, int, np.integer)


def pump_curve_coefficient(shutoff_pressure, design_flow, design_pressure):
    """Coefficient a of the pump curve Δp = N² Δp₀ − a Q² through the rated point.

    Parameters
    ----------
    shutoff_pressure : array_like
        Δp₀, pressure at zero flow and rated speed [Pa].
    design_flow : array_like
        Q_d, flow at the rated point [m³ s-1], > 0.
    design_pressure : array_like
        Δp_d, pressure at the rated point [Pa], < Δp₀.

    Returns
    -------
    ndarray
        a = (Δp₀ − Δp_d) / Q_d² [Pa s² m-6].
    """
    p0, qd, pd = as_arrays(shutoff_pressure, design_flow, design_pressure)
    if np.any(pd >= p0) or np.any(qd <= 0):
        raise ValueError("pump_curve_coefficient: need 0 < design pressure < shut-off pressure "
                         "and design flow > 0")
    return (p0 - pd) / (qd * qd)


def pump_pressure(flow, speed, shutoff_pressure, a, n_pumps=1):
    """Pressure rise of n identical pumps in parallel at a relative speed.

    Parameters
    ----------
    flow : array_like
        Total flow through the pumps [m³ s-1].
    speed : array_like
        N / N_rated [1].
    shutoff_pressure, a : array_like
        Pump curve (:func:`pump_curve_coefficient`) [Pa], [Pa s² m-6].
    n_pumps : array_like
        Pumps running in parallel [1].

    Returns
    -------
    ndarray
        Δp = N² Δp₀ − a (Q / n)² [Pa].
    """
    q, s, p0, a, n = as_arrays(flow, speed, shutoff_pressure, a, n_pumps)
    per = np.divide(q, n, out=np.zeros_like(q), where=n > 0)
    return s * s * p0 - a * per * per


def system_pressure(flow, static, k):
    """System curve Δp = Δp_s + k Q² [Pa].

    Parameters
    ----------
    flow : array_like
        Flow [m³ s-1].
    static : array_like
        Static head of an open circuit, or the controlled differential pressure at the index
        point of a closed one [Pa].
    k : array_like
        Flow resistance [Pa s² m-6].
    """
    q, ps, k = as_arrays(flow, static, k)
    return ps + k * q * q


def resistance(design_flow, design_pressure):
    """Flow resistance k that gives ``design_pressure`` at ``design_flow``: k = Δp / Q² [Pa s² m-6]."""
    q, p = as_arrays(design_flow, design_pressure)
    return p / (q * q)


def operating_flow(speed, n_pumps, shutoff_pressure, a, static, k):
    """Flow where the pump curve meets the system curve.

    Parameters
    ----------
    speed : array_like
        Relative speed of the running pumps [1].
    n_pumps : array_like
        Identical pumps running in parallel [1]; 0 gives no flow.
    shutoff_pressure, a : array_like
        One pump's curve [Pa], [Pa s² m-6].
    static, k : array_like
        System curve [Pa], [Pa s² m-6].

    Returns
    -------
    ndarray
        Q = √((N² Δp₀ − Δp_s) / (k + a / n²)) [m³ s-1], 0 where the pumps cannot overcome the
        static pressure (check valves closed).

    Notes
    -----
    One of two parallel pumps tripping on a closed loop (Δp_s = 0) leaves
    Q₁/Q₂ = √((k + a/4) / (k + a)) of the flow: the survivor runs out along its curve to a
    higher flow and lower pressure, so a trip leaves much more than half the flow.
    """
    s, n, p0, a, ps, k = as_arrays(speed, n_pumps, shutoff_pressure, a, static, k)
    n_safe = np.where(n > 0, n, 1.0)
    drive = s * s * p0 - ps
    q = np.sqrt(np.maximum(drive, 0.0) / (k + a / (n_safe * n_safe)))
    return np.where((n > 0) & (drive > 0), q, 0.0)


def speed_for_flow(flow, pressure, n_pumps, shutoff_pressure, a, min_speed=0.0):
    """Relative speed at which n parallel pumps deliver ``flow`` against ``pressure``.

    Parameters
    ----------
    flow : array_like
        Required total flow [m³ s-1].
    pressure : array_like
        Required pressure rise at that flow [Pa] (the system curve at ``flow``, or for
        differential-pressure control the set-point plus the losses up to the index point).
    n_pumps : array_like
        Pumps running [1].
    shutoff_pressure, a : array_like
        One pump's curve [Pa], [Pa s² m-6].
    min_speed : array_like
        Lowest speed the drive allows [1] (motor cooling, bearing lubrication: 20–30 %).

    Returns
    -------
    ndarray
        N = √((Δp + a (Q/n)²) / Δp₀), clipped to [min_speed, 1] [1].
    """
    q, p, n, p0, a, nmin = as_arrays(flow, pressure, n_pumps, shutoff_pressure, a, min_speed)
    per = np.divide(q, n, out=np.zeros_like(q), where=n > 0)
    s = np.sqrt(np.maximum(p + a * per * per, 0.0) / p0)
    return np.clip(s, nmin, 1.0)


def dp_control_pressure(flow, setpoint, k_path):
    """Pump pressure a differential-pressure controller at the index rack asks for.

    Parameters
    ----------
    flow : array_like
        Loop flow [m³ s-1].
    setpoint : array_like
        Differential pressure held across the index (hydraulically farthest) rack [Pa].
    k_path : array_like
        Resistance from the pump through the CDU exchanger, strainer and headers to the index
        rack and back [Pa s² m-6].

    Returns
    -------
    ndarray
        Δp_pump = Δp_set + k_path Q² [Pa]: a control curve with the set-point as "static" part,
        so pumping falls roughly with the square, not the cube, of flow (ASHRAE 90.1-2019
        §6.5.4.2 asks for the sensor at the most remote point for this reason).
    """
    return system_pressure(flow, setpoint, k_path)


def pump_efficiency(flow, speed, n_pumps, best_flow, best_efficiency):
    """Hydraulic efficiency of n parallel pumps at a flow and speed.

    Parameters
    ----------
    flow : array_like
        Total flow [m³ s-1].
    speed : array_like
        Relative speed [1], > 0.
    n_pumps : array_like
        Pumps sharing the flow [1].
    best_flow : array_like
        Best-efficiency flow of one pump at rated speed [m³ s-1].
    best_efficiency : array_like
        η at the best-efficiency point [1].

    Returns
    -------
    ndarray
        η = η_BEP (2r − r²), r = Q / (n N Q_BEP), floored at 5 % of η_BEP (near shut-off or
        run-out the parabola would reach 0) [1].
    """
    q, s, n, qb, eb = as_arrays(flow, speed, n_pumps, best_flow, best_efficiency)
    denom = n * s * qb
    r = np.divide(q, denom, out=np.zeros_like(q), where=denom > 0)
    return eb * np.maximum(2.0 * r - r * r, 0.05)


def pump_power(flow, pressure, efficiency, drive_efficiency=1.0):
    """Electrical power of pumps moving ``flow`` against ``pressure``.

    Parameters
    ----------
    flow : array_like
        Flow [m³ s-1].
    pressure : array_like
        Pressure rise [Pa].
    efficiency : array_like
        Pump (hydraulic) efficiency [1].
    drive_efficiency : array_like
        Motor × variable-frequency-drive efficiency [1] (0.90–0.95 for premium motors on a VFD).

    Returns
    -------
    ndarray
        P = Q Δp / (η_pump η_drive) [W]; all of it ends up as heat in the water (friction) or in
        the room (motor and drive losses).
    """
    q, p, e, d = as_arrays(flow, pressure, efficiency, drive_efficiency)
    return np.maximum(q, 0.0) * np.maximum(p, 0.0) / (e * d)


def dp_controlled_power(flow, n_pumps, dp_index, k_path, shutoff_pressure, a, min_speed, best_flow,
                        best_efficiency, drive_efficiency=1.0):
    """Electrical power of n parallel pumps delivering ``flow`` under differential-pressure control.

    Parameters
    ----------
    flow : array_like
        Loop flow [m³ s-1].
    n_pumps : array_like
        Identical pumps running in parallel [1], > 0.
    dp_index : array_like
        Differential pressure held at the index point [Pa].
    k_path : array_like
        Resistance in series with the index point [Pa s² m-6] (:func:`dp_control_pressure`).
    shutoff_pressure, a, min_speed, best_flow, best_efficiency, drive_efficiency : array_like
        One pump: its curve, minimum speed, best-efficiency point and drive, as for
        :func:`loop_operating_point`.

    Returns
    -------
    ndarray
        P = Q Δp / (η(Q, N) η_drive) [W] with Δp = Δp_index + k_path Q² (:func:`dp_control_pressure`)
        at the speed N the pumps' curve needs for it (:func:`speed_for_flow`); below the drive's
        minimum speed the pumps run at the minimum and their surplus pressure is throttled
        (Δp = the curve's pressure at that speed).
    """
    args = (flow, n_pumps, dp_index, k_path, shutoff_pressure, a, min_speed, best_flow, best_efficiency,
            drive_efficiency)
    if all(isinstance(v, _NUMBERS) or np.ndim(v) == 0 for v in args):  # one operating point: on floats
        p = _dp_controlled_power_float(*(float(v) for v in args))
        if math.isfinite(p):
            return np.float64(p)
    need = dp_control_pressure(flow, dp_index, k_path)
    speed = speed_for_flow(flow, need, n_pumps, shutoff_pressure, a, min_speed)
    dp = np.maximum(need, pump_pressure(flow, speed, shutoff_pressure, a, n_pumps))
    eta = pump_efficiency(flow, speed, n_pumps, best_flow, best_efficiency)
    return pump_power(flow, dp, eta, drive_efficiency)


def _dp_controlled_power_float(q, n, dp_index, k_path, p0, a, min_speed, q_best, eta_best, drive):
    """:func:`dp_controlled_power` at one operating point, on floats: the functions it calls,
    operation by operation in their order (``np.maximum(x, y)`` is ``x if x >= y else y`` and
    ``np.clip`` the two in turn for numbers, ``np.sqrt`` is correctly rounded as
    ``math.sqrt`` is), without a numpy call per operation (~90 → ~5 µs). Bit for bit the
    array path for finite results (``tests/cooling/test_hydraulics.py``); a caller takes the
    array path for any other."""
    need = dp_index + k_path * q * q  # dp_control_pressure
    per = q / n if n > 0 else 0.0
    x = need + a * per * per  # speed_for_flow
    x = x if x >= 0.0 else 0.0
    s = math.sqrt(x / p0)
    s = s if s >= min_speed else min_speed
    s = s if s <= 1.0 else 1.0
    dp = s * s * p0 - a * per * per  # pump_pressure
    dp = need if need >= dp else dp
    denom = n * s * q_best  # pump_efficiency
    r = q / denom if denom > 0 else 0.0
    eta = 2.0 * r - r * r
    eta = eta_best * (eta if eta >= 0.05 else 0.05)
    q = q if q >= 0.0 else 0.0  # pump_power
    dp = dp if dp >= 0.0 else 0.0
    return q * dp / (eta * drive)


def branch_flows(total_flow, k, group=None):
    """Flow through parallel branches that share one pressure drop.

    Parameters
    ----------
    total_flow : array_like
        Flow into the parallel set [m³ s-1]: a scalar, or one value per group.
    k : array_like, shape (b,)
        Resistance of each branch [Pa s² m-6], > 0 (``inf`` for a closed branch).
    group : array_like of int, shape (b,), optional
        Parallel set (e.g. the CDU) of each branch; ``total_flow`` is then indexed by group.

    Returns
    -------
    ndarray, shape (b,)
        Q_i = Q · k_i^(−1/2) / Σ_j k_j^(−1/2) [m³ s-1] (sum over the branch's group).

    Notes
    -----
    Δp = k_i Q_i² is the same for every branch, so Q_i = √(Δp / k_i); the pressure drop follows
    from Σ Q_i = Q: √Δp = Q / Σ k_j^(−1/2). Two racks whose resistances differ fourfold take
    flows in the ratio 2 : 1.
    """
    k = np.asarray(k, dtype=float)
    c = np.where(np.isfinite(k), 1.0 / np.sqrt(k), 0.0)
    if group is None:
        return np.asarray(total_flow, dtype=float) * c / c.sum()
    group = np.asarray(group)
    total_c = np.bincount(group, weights=c)
    return np.asarray(total_flow, dtype=float)[group] * c / total_c[group]


def held_branch_flow(design_flow, design_pressure, held_pressure):
    """Flow of a branch (a rack) across which a differential pressure is held.

    Parameters
    ----------
    design_flow : array_like
        The branch's design flow [m³ s-1].
    design_pressure : array_like
        Its pressure drop at the design flow [Pa] (k = Δp_d / Q_d², turbulent: Δp = k Q²).
    held_pressure : array_like
        Differential pressure across it [Pa] (the set-point held at the index rack; with the
        headers' losses lumped into the CDU path every rack of the loop sees it).

    Returns
    -------
    ndarray
        Q = √(Δp_held / k) = Q_d √(Δp_held / Δp_d) [m³ s-1]. Racks of resistances k₁ and k₂ on one
        loop take flows in the ratio Q₁ / Q₂ = √(k₂ / k₁) (:func:`branch_flows`).
    """
    q, dp_d, dp = as_arrays(design_flow, design_pressure, held_pressure)
    return q * np.sqrt(dp / dp_d)


def parallel_resistance(k, group=None):
    """Equivalent resistance of parallel branches: k_eq = (Σ k_i^(−1/2))^(−2) [Pa s² m-6]."""
    k = np.asarray(k, dtype=float)
    c = np.where(np.isfinite(k), 1.0 / np.sqrt(k), 0.0)
    total = c.sum() if group is None else np.bincount(np.asarray(group), weights=c)
    return 1.0 / (total * total)


def fluid_resistance_factor(rho, mu, rho_ref, mu_ref, friction_share=0.5):
    """Change of a loop's resistance k (at equal volume flow) when its fluid changes.

    Parameters
    ----------
    rho, mu : array_like
        Density [kg m-3] and dynamic viscosity [Pa s] of the new fluid.
    rho_ref, mu_ref : array_like
        Those of the fluid the resistance was rated with (water).
    friction_share : array_like
        Share of the rated pressure drop that is pipe friction (the rest is form losses in
        fittings, valves, quick disconnects and manifolds) [1].

    Returns
    -------
    ndarray
        k / k_ref = (1 − s) (ρ/ρ_ref) + s (ρ/ρ_ref)^0.75 (μ/μ_ref)^0.25 [1].

    Notes
    -----
    Form losses Δp = ζ ρ v²/2 scale with ρ at fixed velocity; turbulent friction in smooth
    pipes (Blasius, f = 0.316 Re^−0.25) gives Δp ∝ ρ^0.75 μ^0.25 v^1.75. Going from water to
    25 % propylene glycol at 35 °C (μ ≈ 2.1×) raises friction losses by ≈ 21 %.

    References
    ----------
    .. [1] ASHRAE Handbook — Fundamentals (2021), ch. 22 "Pipe sizing" (Darcy–Weisbach,
       Blasius) and ch. 31 (glycol correction factors for pressure drop).
    """
    r, m, rr, mr, s = as_arrays(rho, mu, rho_ref, mu_ref, friction_share)
    x = r / rr
    return (1.0 - s) * x + s * x ** 0.75 * (m / mr) ** 0.25


def loop_operating_point(k_racks, group, n_groups, dp_setpoint, k_path, n_pumps, shutoff_pressure,
                         a, min_speed, best_flow, best_efficiency, drive_efficiency=1.0):
    """Operating point of CDU secondary loops under differential-pressure control.

    Parameters
    ----------
    k_racks : ndarray, shape (r,)
        Resistance of each rack branch (manifold, sleds, quick disconnects) [Pa s² m-6];
        ``inf`` for a rack that is valved off.
    group : ndarray of int, shape (r,)
        CDU (loop) of each rack.
    n_groups : int
        Number of loops.
    dp_setpoint : array_like, shape (c,) or scalar
        Differential pressure held across the racks (measured at the index rack) [Pa].
    k_path : array_like, shape (c,) or scalar
        Resistance of the CDU (exchanger, strainer) and headers in series with the racks
        [Pa s² m-6].
    n_pumps : array_like, shape (c,)
        Identical pumps running in parallel on each loop [1] (0: no flow).
    shutoff_pressure, a : array_like
        One pump's curve [Pa], [Pa s² m-6] (:func:`pump_curve_coefficient`).
    min_speed : array_like
        Lowest drive speed [1].
    best_flow, best_efficiency : array_like
        One pump's best-efficiency flow [m³ s-1] and efficiency [1].
    drive_efficiency : array_like
        Motor × VFD efficiency [1].

    Returns
    -------
    dict
        ``flow`` (c,) loop flow [m³ s-1], ``rack_flow`` (r,) [m³ s-1], ``speed`` (c,) [1],
        ``pressure`` (c,) pump pressure rise [Pa], ``power`` (c,) electrical power of the pumps
        [W], ``dp_racks`` (c,) pressure across the racks [Pa], ``held`` (c,) bool: the
        set-point is held (neither at full speed nor at the minimum).

    Notes
    -----
    With the headers' losses lumped into ``k_path``, every rack of a loop sees the same
    differential pressure, so the rack flows are √(Δp / k_i) (:func:`branch_flows`) and the
    racks together are one resistance k_eq (:func:`parallel_resistance`). Holding Δp_set needs
    Q = √(Δp_set / k_eq) and a pump pressure Δp_set + k_path Q² (:func:`dp_control_pressure`),
    which fixes the speed (:func:`speed_for_flow`). Clipped to [min_speed, 1], the loop then runs
    where the pump curve at that speed meets the whole loop's curve (k_path + k_eq) Q²
    (:func:`operating_flow`): at full speed it cannot hold the set-point (a pump trip), at
    minimum speed it over-delivers.
    """
    k_racks = np.asarray(k_racks, dtype=float)
    group = np.asarray(group)
    c = np.where(np.isfinite(k_racks), 1.0 / np.sqrt(k_racks), 0.0)
    csum = np.bincount(group, weights=c, minlength=n_groups)
    k_eq = np.divide(1.0, csum * csum, out=np.full(n_groups, np.inf), where=csum > 0)
    dp_set, k_path, n, p0, a, smin, qb, eb, de = np.broadcast_arrays(
        *(np.asarray(v, dtype=float) for v in (dp_setpoint, k_path, n_pumps, shutoff_pressure,
                                               a, min_speed, best_flow, best_efficiency,
                                               drive_efficiency)), np.zeros(n_groups))[:-1]
    q_need = np.where(np.isfinite(k_eq), np.sqrt(dp_set / np.where(np.isfinite(k_eq), k_eq, 1.0)), 0.0)
    s_raw = np.sqrt(np.maximum(dp_control_pressure(q_need, dp_set, k_path)
                               + a * np.divide(q_need, n, out=np.zeros_like(q_need), where=n > 0) ** 2,
                               0.0) / p0)
    speed = np.clip(s_raw, smin, 1.0)
    k_total = k_path + np.where(np.isfinite(k_eq), k_eq, np.inf)
    q = np.where(np.isfinite(k_total), operating_flow(speed, n, p0, a, 0.0,
                                                      np.where(np.isfinite(k_total), k_total, 1.0)), 0.0)
    pressure = np.where(q > 0, pump_pressure(q, speed, p0, a, np.maximum(n, 1.0)), 0.0)
    eta = pump_efficiency(q, speed, np.maximum(n, 1.0), qb, eb)
    power = np.where(q > 0, pump_power(q, pressure, eta, de), 0.0)
    dp_racks = np.where(np.isfinite(k_eq), k_eq * q * q, 0.0)
    rack_flow = np.divide(q[group] * c, csum[group], out=np.zeros_like(c), where=csum[group] > 0)
    held = (n > 0) & (s_raw <= 1.0) & (s_raw >= smin)
    return {"flow": q, "rack_flow": rack_flow, "speed": np.where(n > 0, speed, 0.0),
            "pressure": pressure, "power": power, "dp_racks": dp_racks, "held": held}
