"""Power delivery upstream of the racks: busway, transformer, power factor, miscellaneous load and
the power shelves' overload policies, as pure functions.

Chain: rack AC input (IT power) → busway/PDU → UPS → transformer → utility. The chain itself,
with its sizing and where each loss ends as heat, is :class:`twin.power.chain.PowerChain`; the UPS
loss model is :mod:`twin.power.ups`.
"""

from __future__ import annotations

import math

import numpy as np


def transformer_losses(p_load, rating, no_load_loss, full_load_loss):
    """Transformer losses: core (no-load) plus copper (load) losses.

    Parameters
    ----------
    p_load : ndarray
        Apparent power through the transformer [VA] (:func:`apparent_power`; the real power
        [W] at unity power factor).
    rating : float
        Nameplate apparent power [VA].
    no_load_loss : float
        Core loss, independent of load [W].
    full_load_loss : float
        Copper loss at rated load [W].

    Returns
    -------
    ndarray
        P_loss = P_nl + P_ll · (S / S_r)² [W] (IEC 60076 loss model: the copper loss goes with
        the current squared, so with the apparent power, not the real power).
    """
    x = np.asarray(p_load, dtype=float) / rating
    return no_load_loss + full_load_loss * x * x


def shelf_load_sharing(p_dc, psus, failed, psu_rating):
    """Load per healthy PSU of a shelf whose PSUs share the load equally.

    Parameters
    ----------
    p_dc : ndarray
        Shelf DC output [W].
    psus : int or ndarray
        PSUs installed.
    failed : int or ndarray
        PSUs failed.
    psu_rating : float
        Rated output of one PSU [W].

    Returns
    -------
    (load_fraction, overload) : (ndarray, ndarray of bool)
        Load fraction of each healthy PSU [1], and whether the healthy PSUs are beyond their
        rating (the shelf cannot carry the load: the rack must be capped or it trips).
    """
    healthy = np.maximum(np.asarray(psus) - np.asarray(failed), 0)
    capacity = healthy * psu_rating
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(capacity > 0, np.asarray(p_dc, dtype=float) / capacity, np.inf)
    return x, x > 1.0


# ---------------------------------------------------------------------------------------------
# Distribution: busway, power factor, transformers, miscellaneous load
# ---------------------------------------------------------------------------------------------
def busway_losses(p_load, rating, loss_at_rating):
    """Conduction losses of a busway or PDU feeder at a load.

    Parameters
    ----------
    p_load : array_like
        Real power carried [W].
    rating : float
        Rated (design) power of the run [W].
    loss_at_rating : float
        Losses at the rated power [W] (:func:`busway_loss_share` at the rated current).

    Returns
    -------
    ndarray
        P_loss = P_loss,r · (P / P_r)² [W].

    Notes
    -----
    I²R: at fixed voltage and power factor the current is proportional to the real power, so the
    losses scale with its square. A busway at half its rating loses a quarter of its rated loss.
    """
    x = np.asarray(p_load, dtype=float) / rating
    return loss_at_rating * x * x


def busway_loss_share(resistance_per_length, length, current, voltage, power_factor):
    """Share of the real power a three-phase busway run loses as I²R heat.

    Parameters
    ----------
    resistance_per_length : array_like
        Line-to-neutral resistance per phase per unit length [Ω m-1] (manufacturers tabulate it
        per 100 ft, e.g. Eaton Pow-R-Way III, Technical Data TD01701001E, 2017, Table 8).
    length : array_like
        Length of the run [m].
    current : array_like
        Line current [A].
    voltage : array_like
        Line-to-line voltage [V].
    power_factor : array_like
        Power factor of the load [1].

    Returns
    -------
    ndarray
        L / P = 3 I² R' ℓ / (√3 V I PF) = √3 I R' ℓ / (V PF) [1].

    Notes
    -----
    At its rated current a busway's share per metre hardly depends on its size, since larger
    ratings have proportionally larger bars: 0.017–0.023 % per metre for the copper
    Pow-R-Way III ratings from 600 to 5,000 A at 480 V and PF 0.95.
    """
    r, ell, i, v, pf = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in
                                             (resistance_per_length, length, current, voltage, power_factor)))
    return np.sqrt(3.0) * i * r * ell / (v * pf)


def apparent_power(p_real, power_factor):
    """Apparent power [VA] for a real power [W] at a power factor.

    Parameters
    ----------
    p_real : array_like
        Real power [W].
    power_factor : array_like
        Displacement × distortion power factor, 0 < PF ≤ 1 [1] (server PSUs with active PFC:
        > 0.95 above 20 % load, 80 PLUS Titanium requirement).

    Returns
    -------
    ndarray
        S = P / PF [VA]: what transformers, breakers and UPS kVA ratings are sized on.
    """
    pf = np.asarray(power_factor, dtype=float)
    if np.any((pf <= 0) | (pf > 1)):
        raise ValueError(f"apparent_power: power factor must be in (0, 1], got {pf.min()}..{pf.max()}")
    return np.asarray(p_real, dtype=float) / pf


def transformer_count(p_design, power_factor, kva_rating, redundant=0, max_load=1.0):
    """Transformers needed to carry a design load in kVA.

    Parameters
    ----------
    p_design : float
        Real power the transformers feed at design [W].
    power_factor : float
        Power factor of that load [1].
    kva_rating : float
        Nameplate apparent power of one transformer [VA].
    redundant : int
        Spare transformers (0 for a single-corded N design, 1 for N+1).
    max_load : float
        Highest loading allowed at design [1] (0.8 is common to leave margin for growth and
        to run near the transformer's efficiency peak).

    Returns
    -------
    int
        ⌈S / (max_load · S_r)⌉ + redundant, at least 1 + redundant, with S = P / PF.
    """
    s = float(apparent_power(p_design, power_factor))
    return int(max(1, math.ceil(s / (max_load * kva_rating) - 1e-9)) + redundant)


def misc_power(p_it_design, fraction):
    """Miscellaneous facility load: lighting, controls, security, offices, BMS, fire systems.

    Parameters
    ----------
    p_it_design : float
        IT design load [W].
    fraction : float
        Miscellaneous load as a share of the IT design load [1].

    Returns
    -------
    float
        P_misc = fraction · P_IT,design [W], constant in time (it does not follow the IT load);
        it is heat in the building, removed by the air-side cooling.

    References
    ----------
    .. [1] The Green Grid, White Paper 49, "PUE: a comprehensive examination of the metric"
       (2012): lighting and other non-IT loads are part of the facility power in PUE.
    """
    return float(fraction) * float(p_it_design)


# ---------------------------------------------------------------------------------------------
# Power-shelf overload policy
# ---------------------------------------------------------------------------------------------
def overload_cap(p_demand, capacity):
    """Shelf overload policy ``cap``: the shelf limits its output to what its healthy PSUs carry.

    Parameters
    ----------
    p_demand : array_like
        DC power the rack asks for [W].
    capacity : array_like
        Rated output of the healthy PSUs [W].

    Returns
    -------
    delivered : ndarray
        min(P_demand, capacity) [W]: the rack's devices are throttled to fit (a power cap).
    tripped : ndarray of bool
        Always False: a capping shelf never drops its rack.
    """
    p, c = np.broadcast_arrays(np.asarray(p_demand, dtype=float), np.asarray(capacity, dtype=float))
    return np.minimum(p, c), np.zeros(p.shape, dtype=bool)


def overload_trip(p_demand, capacity):
    """Shelf overload policy ``trip``: PSUs beyond their rating shut down (over-current).

    Returns
    -------
    delivered : ndarray
        P_demand where it fits, 0 where it exceeds the capacity [W].
    tripped : ndarray of bool
        True where the shelf tripped: the rack goes dark.
    """
    p, c = np.broadcast_arrays(np.asarray(p_demand, dtype=float), np.asarray(capacity, dtype=float))
    tripped = p > c
    return np.where(tripped, 0.0, p), tripped


#: Power-shelf overload policies by name (scenario/catalogue ``overload: cap | trip``).
OVERLOAD_POLICIES = {"cap": overload_cap, "trip": overload_trip}
