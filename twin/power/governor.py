"""Clock governors: the device power limit, thermal throttling with hysteresis, the shutdown
trip, and rack/row power caps."""

from __future__ import annotations

import numpy as np

from twin.power.device import clock_for_power

#: Clock-rate gain per kelvin outside the band [1/(K·s)] (estimate; stable for die-to-clock
#: sensitivities up to ~60 K per unit clock at a 1 s step).
THROTTLE_GAIN = 0.02
#: Largest clock fall [1/s] (estimate: firmware can halve clocks within a second).
THROTTLE_DOWN_RATE = 0.5
#: Largest clock recovery [1/s] (estimate: DVFS moves clocks within milliseconds, so recovery
#: is bounded only by the proportional term — a die 10 K below its band recovers at 0.2/s, one
#: 50 K below within a second — and by the twin's step).
THROTTLE_UP_RATE = 1.0
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


def power_limit_governor(limit, u, t_die, chip, clock_min=CLOCK_MIN):
    """Clock that holds each active device at or under its power limit (TGP/TDP or a cap).

    Parameters
    ----------
    limit : ndarray
        Power limit per device [W] (the TDP unless a scenario sets a cap).
    u : ndarray
        Utilisation over the last step [1].
    t_die : ndarray
        Die temperature [degC].
    chip : mapping of str to ndarray
        Per-device power parameters (see :func:`twin.power.device.device_power`).
    clock_min : float
        Lowest clock [1].

    Returns
    -------
    ndarray
        Relative clock in [clock_min, 1] [1].

    Notes
    -----
    Accelerators enforce their power limit in firmware by lowering the voltage-frequency point
    within milliseconds (NVIDIA "SW power cap"; AWS Neuron devices likewise); at the twin's step
    the loop is settled, so the governor sets the clock that puts the step's power exactly on
    the limit: the root of P(u, f, T) = P_lim (:func:`twin.power.device.clock_for_power`).
    Within a step whose load rose the device may exceed the limit until the next governor
    update, by at most its published excursion (the driver clamps there).

    References
    ----------
    .. [1] NVIDIA, "nvidia-smi" documentation: clocks event reasons ``SW Power Cap``.
    .. [2] Patel et al., "POLCA: Power Oversubscription in LLM Cloud Providers", arXiv:2308.12908
       (power capping and frequency locking of A100/H100 in inference clusters).
    """
    return clock_for_power(limit, u, t_die, chip, clock_min=clock_min)
