"""Power-shelf (PSU) efficiency and rack AC input power."""

from __future__ import annotations

import numpy as np


def psu_efficiency(load_fraction, curve_load, curve_efficiency):
    """Efficiency of a PSU (or a shelf of load-sharing PSUs) at a load fraction.

    Parameters
    ----------
    load_fraction : ndarray
        DC output / rated output of the PSUs sharing the load [1].
    curve_load, curve_efficiency : sequence of float
        The catalogue curve: load fractions (increasing) and efficiencies [1].

    Returns
    -------
    ndarray
        Efficiency η = P_out / P_in [1]; 0 where the load is 0.

    Notes
    -----
    Between curve points η is interpolated linearly; above the last point it is held. Below the
    first point the PSU's losses are held at their value there (fixed losses dominate at light
    load), so η = x / (x + x₀(1/η₀ − 1)) for x < x₀, which falls to 0 at no load.
    """
    x = np.asarray(load_fraction, dtype=float)
    x0, eta0 = curve_load[0], curve_efficiency[0]
    loss0 = x0 * (1.0 / eta0 - 1.0)  # losses at the first point, as a fraction of rating
    light = x / (x + loss0)
    return np.where(x < x0, light, np.interp(x, curve_load, curve_efficiency))


def shelf_input_power(p_dc, capacity, curve_load, curve_efficiency):
    """AC input power of power shelves delivering ``p_dc``.

    Parameters
    ----------
    p_dc : ndarray
        DC power delivered to the busbar [W].
    capacity : ndarray
        Rated output of the PSUs sharing the load [W].
    curve_load, curve_efficiency
        See :func:`psu_efficiency`.

    Returns
    -------
    ndarray
        AC input power [W]: P_ac = P_dc / η(P_dc / capacity); P_ac − P_dc is heat to air.
    """
    p_dc = np.asarray(p_dc, dtype=float)
    eta = psu_efficiency(p_dc / capacity, curve_load, curve_efficiency)
    return np.divide(p_dc, eta, out=np.zeros_like(p_dc), where=eta > 0)
