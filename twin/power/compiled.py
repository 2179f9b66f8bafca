"""Per-device equations of chip power and the governors, compiled with numba (the ``fast`` extra).

Each equation is written once here, for one device, and called by both compiled paths: the
per-step component kernels (:class:`twin.power.kernels.NumbaKernel`) and the quiet blocks'
compiled loop (:mod:`twin.sim.fused`). Each is the scalar form of the numpy reference, with
the same operations in the same order:

- :func:`leak_factor`, :func:`power_terms`, :func:`device_power`: chip power with leakage
  (:func:`twin.power.device.device_power`, :func:`~twin.power.device.active_power`,
  :func:`~twin.power.device.idle_power`), clamped at the part's excursion above its limit;
- :func:`power_clock`: the clock holding a demand at the power limit
  (:func:`twin.power.governor.power_limit_governor`, Newton as
  :func:`twin.power.device.clock_for_power`);
- :func:`thermal_clock`: the thermal throttle's next clock (:func:`twin.power.governor.thermal_governor`).

Importing this module imports numba: the callers import it when they compile. Numba's on-disk
cache keys each compiled caller on the caller's own source file, so after editing this module
remove the callers' cached code (``twin/power/__pycache__/kernels*.nb*``,
``twin/sim/__pycache__/fused*.nb*``) or they keep the equations they were compiled with.
"""

from __future__ import annotations

import math

import numba

_jit = numba.njit(cache=True, nogil=True)


@_jit
def peak(u, d):
    """Device ``d``'s highest demand [1] over the sub-steps of ``u`` (sub-steps, devices)."""
    um = u[0, d]
    for k in range(1, u.shape[0]):
        um = max(um, u[k, d])
    return um


@_jit
def leak_factor(t_die, t_ref, beta):
    """Leakage's temperature factor exp(β (T − T_ref)) [1] at die temperature ``t_die`` [°C]
    (reference ``t_ref`` [°C], ``beta`` [1/K])."""
    return math.exp(beta * (t_die - t_ref))


@_jit
def power_terms(clock, e, a, e_idle, p_leak_ref, alpha, p_idle, ilf):
    """The parts of a device's power that do not depend on its demand, at clock ``clock`` [1]
    and leakage factor ``e`` (:func:`leak_factor`).

    Returns
    -------
    (float, float, float)
        Active power at zero demand, ``a + P_leak,ref · f^(α−1) · e`` [W] (``a`` the active
        floor less its leakage at the idle temperature); the dynamic power's clock factor
        ``f^α`` [1]; idle power ``P_idle + ilf · P_leak,ref · (e − e_idle)`` [W].
        At full clock (most devices) ``1 ** x`` is exactly 1 and no ``pow`` is taken.
    """
    if clock == 1.0:
        leak = p_leak_ref * e
        fa = 1.0
    else:
        leak = p_leak_ref * clock ** (alpha - 1.0) * e
        fa = clock ** alpha
    return a + leak, fa, p_idle + ilf * p_leak_ref * (e - e_idle)


@_jit
def device_power(u, held, floor, fa, p_dyn, idle, cap):
    """Power [W] at demand ``u`` [1]: active ``floor + P_dyn · u · f^α`` when the device works
    (``u > 0``) or is held active, else ``idle``; at most ``cap`` (excursion × limit) [W]."""
    p = floor + p_dyn * u * fa if u > 0.0 or held else idle
    return min(p, cap)


@_jit
def power_clock(u_max, e, limit, a, p_leak_ref, alpha, p_dyn, clock_min, steps):
    """Clock [1] holding demand ``u_max`` at power limit ``limit`` [W]: 1 when the power at
    full clock, ``a + P_leak,ref · e + P_dyn · u``, is within the limit; else ``steps`` Newton
    iterations on ``a + b f^(α−1) + d f^α = limit`` from f = 1, kept in [``clock_min``, 1]."""
    b = p_leak_ref * e
    d = p_dyn * u_max
    if not a + b + d > limit:
        return 1.0
    x = 1.0
    for _ in range(steps):
        xa = x ** (alpha - 1.0)
        g = a + b * xa + d * xa * x - limit
        dg = (alpha - 1.0) * b * xa / x + alpha * d * xa
        x = max(x - g / dg, 1e-6)
    return min(max(x, clock_min), 1.0)


@_jit
def thermal_clock(clock, t_die, t_throttle, hysteresis, gain, down_rate, up_rate, clock_min, dt):
    """The thermal throttle's clock [1] after a step of ``dt`` [s] from ``clock``: down by
    ``min(down_rate, gain · (T − T_throttle)) · dt`` above the throttle point, up by
    ``min(up_rate, gain · (T_throttle − hysteresis − T)) · dt`` below its release point."""
    over = t_die - t_throttle
    under = (t_throttle - hysteresis) - t_die
    if over > 0:
        clock = max(clock_min, clock - min(down_rate, gain * over) * dt)
    if under > 0:
        clock = min(1.0, clock + min(up_rate, gain * under) * dt)
    return clock


@_jit
def chunk_product(x, y, W, w0, rows, cols, ns, stride):
    """``ns`` sleds' products ``[T | q] @ W`` with one W: ``y[c, s] = Σ_r x[r, s] · W[r, c]``,
    each sum from 0 over the rows in order (as a row-by-row matrix product), with ``x``
    (rows × ``stride``), ``y`` (cols × ``stride``) and W (rows × cols, from offset ``w0``)
    flat. The innermost loop runs over the sleds, linearly in ``x`` and ``y``, so the compiler
    makes it vector instructions (the indices are unsigned: no negative-index wraparound test
    in the loop to stop it). Four rows are added per pass over ``y``,
    ``(((y + x₀w₀) + x₁w₁) + x₂w₂) + x₃w₃`` (the first pass from 0): the same additions in the
    same order as one row at a time, with a quarter of the loads and stores of ``y``."""
    r = 0
    while r < rows:
        first = r == 0
        four = r + 4 <= rows
        for c in range(cols):
            wo = w0 + r * cols + c
            yo = c * stride
            w_0 = W[wo]
            if four:
                w_1, w_2, w_3 = W[wo + cols], W[wo + 2 * cols], W[wo + 3 * cols]
                x0, x1, x2, x3 = r * stride, (r + 1) * stride, (r + 2) * stride, (r + 3) * stride
                for s in range(ns):
                    acc = 0.0 if first else y[numba.uint64(yo + s)]
                    y[numba.uint64(yo + s)] = (((acc + x[numba.uint64(x0 + s)] * w_0) + x[numba.uint64(x1 + s)] * w_1)
                                               + x[numba.uint64(x2 + s)] * w_2) + x[numba.uint64(x3 + s)] * w_3
            else:
                x0 = r * stride
                for s in range(ns):
                    acc = 0.0 if first else y[numba.uint64(yo + s)]
                    y[numba.uint64(yo + s)] = acc + x[numba.uint64(x0 + s)] * w_0
        r += 4 if four else 1
