"""Clock governors: thermal throttling with hysteresis, and the shutdown trip."""

from __future__ import annotations

import numpy as np

#: Clock-rate gain per kelvin outside the band [1/(K·s)] (estimate; stable for die-to-clock
#: sensitivities up to ~60 K per unit clock at a 1 s step).
THROTTLE_GAIN = 0.02
#: Largest clock fall [1/s] (estimate: firmware can halve clocks within a second).
THROTTLE_DOWN_RATE = 0.5
#: Largest clock recovery [1/s] (estimate: slower recovery avoids limit cycling).
THROTTLE_UP_RATE = 0.02
#: Lowest clock the thermal governor goes to [1] (estimate: lowest DVFS state ~30 % of boost).
CLOCK_MIN = 0.3


def thermal_governor(clock, t_die, t_throttle, hysteresis, dt, gain=THROTTLE_GAIN,
                     down_rate=THROTTLE_DOWN_RATE, up_rate=THROTTLE_UP_RATE, clock_min=CLOCK_MIN):
    """Next relative clock of each device under thermal throttling.

    Parameters
    ----------
    clock : ndarray
        Relative clock now [1].
    t_die : ndarray
        Die temperature [degC].
    t_throttle : ndarray
        Temperature above which the clock is lowered [degC].
    hysteresis : ndarray
        The clock recovers only below ``t_throttle − hysteresis`` [K].
    dt : float
        Governor period (the thermal step) [s].
    gain : float
        Clock rate per kelvin outside the band [1/(K·s)].

    Returns
    -------
    ndarray
        New relative clock in [clock_min, 1] [1].

    Notes
    -----
    Above the throttle point the clock falls at a rate proportional to the excess,
    f ← max(f_min, f − min(r_down, k·(T − T_thr))·dt); below T_thr − ΔT_hyst it recovers,
    f ← min(1, f + min(r_up, k·(T_thr − ΔT_hyst − T))·dt); inside the band it holds. The die is
    thus held in [T_thr − ΔT_hyst, T_thr] without the limit cycle of a fixed-step governor.
    """
    over = t_die - t_throttle
    under = (t_throttle - hysteresis) - t_die
    fall = np.minimum(down_rate, gain * over) * dt
    rise = np.minimum(up_rate, gain * under) * dt
    new = np.where(over > 0, np.maximum(clock_min, clock - fall), clock)
    return np.where(under > 0, np.minimum(1.0, new + rise), new)


def shutdown_trip(t_die, t_shutdown, tripped):
    """Devices that are tripped after this step (a trip latches until restarted).

    Parameters
    ----------
    t_die : ndarray
        Die temperature [degC].
    t_shutdown : ndarray
        Shutdown temperature [degC].
    tripped : ndarray of bool
        Devices already tripped.
    """
    return tripped | (t_die > t_shutdown)


#: Cap governor gain: clock change per unit relative overshoot per second [1/s] (estimate; a
#: rack power-capping loop settles within a few seconds, in line with ~1 s DCM/firmware loops).
CAP_GAIN = 0.5
#: Cap governor recovery rate when under the limit [1/s] (estimate).
CAP_UP_RATE = 0.05


def cap_governor(cap, power, limit, dt, gain=CAP_GAIN, up_rate=CAP_UP_RATE, cap_min=CLOCK_MIN):
    """Clock factor that holds a group of devices (a rack or a row) under a power limit.

    Parameters
    ----------
    cap : ndarray
        Clock factor now, per group [1].
    power : ndarray
        Group power over the last step [W].
    limit : ndarray
        Power limit per group [W]; inf for none.
    dt : float
        Governor period [s].

    Returns
    -------
    ndarray
        New clock factor in [cap_min, 1] [1].

    Notes
    -----
    Integral control with anti-windup by clamping: c ← clip(c − k·(P − P_lim)/P_lim·dt, c_min, 1)
    while over the limit, and c ← min(1, c + min(r_up, k·(P_lim − P)/P_lim)·dt) below it.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        excess = np.where(np.isfinite(limit), (power - limit) / limit, -np.inf)
    fall = gain * excess * dt
    rise = np.minimum(up_rate, gain * -excess) * dt
    new = np.where(excess > 0, cap - fall, np.where(np.isfinite(excess), cap + rise, 1.0))
    return np.clip(new, cap_min, 1.0)
