"""Power delivery upstream of the racks: busway/PDU, UPS and transformer losses.

Chain: rack AC input (IT power) → busway/PDU → UPS → transformer → utility. Each stage's loss is
heat released where the stage stands (electrical rooms: air).
"""

from __future__ import annotations

import numpy as np

from twin.power.psu import psu_efficiency


#: Busway/PDU conduction loss at the operating point [1] (estimate: 0.5–1 % per
#: CATALOGUE-SOURCES.md, "transformer / busbar losses").
BUSWAY_LOSS_FRACTION = 0.0075


def busway_input_power(p_out, loss_fraction=BUSWAY_LOSS_FRACTION):
    """Busway/PDU input power for a delivered power.

    Parameters
    ----------
    p_out : ndarray
        Power delivered to the racks [W].
    loss_fraction : float
        Conduction loss at the operating point as a fraction of the delivered power [1]
        (0.5–1 %, CATALOGUE-SOURCES.md, estimate).

    Returns
    -------
    ndarray
        P_in = P_out · (1 + loss_fraction) [W].
    """
    return np.asarray(p_out) * (1.0 + loss_fraction)


def ups_input_power(p_out, rating, curve_load, curve_efficiency):
    """UPS input power from its efficiency curve.

    Parameters
    ----------
    p_out : ndarray
        UPS output power [W].
    rating : float
        Rated output of the UPS modules in service [W].
    curve_load, curve_efficiency : sequence of float
        Efficiency against load fraction (double conversion 92–97 %, eco mode 98–99 %; ~85 % at
        20–25 % load for double conversion, UPS vendor documentation).

    Returns
    -------
    ndarray
        P_in = P_out / η(P_out / rating) [W], with fixed losses held below the first curve point
        (see :func:`twin.power.psu.psu_efficiency`).
    """
    p_out = np.asarray(p_out, dtype=float)
    eta = psu_efficiency(p_out / rating, curve_load, curve_efficiency)
    return np.divide(p_out, eta, out=np.zeros_like(p_out), where=eta > 0)


def transformer_losses(p_load, rating, no_load_loss, full_load_loss):
    """Transformer losses: core (no-load) plus copper (load) losses.

    Parameters
    ----------
    p_load : ndarray
        Power through the transformer [W] (unity power factor assumed).
    rating : float
        Rated power [W].
    no_load_loss : float
        Core loss, independent of load [W].
    full_load_loss : float
        Copper loss at rated load [W].

    Returns
    -------
    ndarray
        P_loss = P_nl + P_ll · (P / P_rated)² [W] (IEC 60076 loss model).
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
