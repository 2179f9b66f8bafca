"""Sizing equipment from the IT design load with redundancy (N + R)."""

from __future__ import annotations

import math


def units_for_load(design_load, unit_capacity, redundant=1):
    """Units of one type for a design load: N = ⌈Q_design / Q_unit⌉ duty plus R redundant.

    Parameters
    ----------
    design_load : float
        Load the duty units must carry [W] (IT design load plus the other heat the equipment
        sees: electrical losses, pump and fan heat, the air share for air-side equipment).
    unit_capacity : float
        Rated capacity of one unit [W], > 0.
    redundant : int
        R (1 for N+1, 0 for N).

    Returns
    -------
    int
        N + R, N ≥ 1.

    References
    ----------
    .. [1] Uptime Institute, Tier Standard: Topology (2018): N+1 capacity components.
    """
    if unit_capacity <= 0:
        raise ValueError(f"units_for_load: unit capacity must be > 0, got {unit_capacity}")
    return int(max(1, math.ceil(design_load / unit_capacity - 1e-9)) + redundant)
