"""Device (chip package) electrical power."""

from __future__ import annotations

import numpy as np


def leakage_power(t_die, p_leak_ref, t_ref, leak_beta):
    """Temperature-dependent static (leakage) power.

    Parameters
    ----------
    t_die : ndarray
        Die temperature [degC].
    p_leak_ref : ndarray
        Leakage power at ``t_ref`` [W].
    t_ref : ndarray
        Reference temperature [degC].
    leak_beta : ndarray
        Exponential temperature coefficient [1/K].

    Returns
    -------
    ndarray
        Leakage power [W].

    Notes
    -----
    P_leak = P_leak,ref · exp(β (T − T_ref)). Subthreshold leakage grows roughly exponentially
    with temperature; β of 0.01–0.02 /K (1–2 %/K) is the usual range for modern nodes.
    """
    return p_leak_ref * np.exp(leak_beta * (t_die - t_ref))


def device_power(u, clock, t_die, p_idle, p_dyn, p_leak_ref, t_ref, leak_beta, clock_exponent):
    """Electrical power of a device package.

    Parameters
    ----------
    u : ndarray
        Demanded utilisation, 0..1 [1].
    clock : ndarray
        Relative clock f, 0..1 [1]; 0 for a device that is off.
    t_die : ndarray
        Die temperature [degC].
    p_idle : ndarray
        Idle power excluding leakage [W].
    p_dyn : ndarray
        Dynamic power at u = 1, f = 1: ``tdp − p_idle − p_leak_ref`` [W].
    p_leak_ref, t_ref, leak_beta
        See :func:`leakage_power`.
    clock_exponent : ndarray
        α in f^α [1].

    Returns
    -------
    ndarray
        Power [W].

    Notes
    -----
    P = P_idle + P_dyn · u · f^α + P_leak,ref · exp(β (T − T_ref)), so that P = TDP at u = 1,
    f = 1, T = T_ref. Dynamic CMOS power is C·V²·f; with voltage scaled roughly linearly with
    frequency under DVFS, P_dyn ∝ f^α with α ≈ 2–3. Throughput ∝ u·f.

    References
    ----------
    DESIGN.md, "Physics"; CATALOGUE-SOURCES.md for the per-chip figures.
    """
    return (
        p_idle
        + p_dyn * u * np.power(clock, clock_exponent)
        + leakage_power(t_die, p_leak_ref, t_ref, leak_beta)
    )
