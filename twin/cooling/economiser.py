"""Water-side economiser control: the fan speed that minimises fan plus compressor power.

Running the free-cooling fans harder takes more heat out before the trim chiller, which then
needs less compressor power; but fan power rises with the cube of speed. Flat-out fans are the
right answer only while a kelvin of free cooling saves more compressor work than it costs in
fan work. The controller evaluates the total on a grid of speeds (vectorised over the grid),
then refines the cheapest grid point by a bounded search between its neighbours
(:func:`cheapest_speed`), which is what supervisory "optimal economiser" sequences do
(ASHRAE Guideline 36-2021, §5.20 "plant optimisation": trade tower fan energy against chiller
energy). The facility water's use of it: :meth:`twin.cooling.facility_water.FacilityWater.split`.
"""

from __future__ import annotations

import numpy as np


def cheapest_speed(cost, speeds, refinements: int = 2, points: int = 33):
    """Speed with the least cost: the cheapest point of a grid, refined between its neighbours.

    Parameters
    ----------
    cost : callable
        ndarray of speeds [1] → ndarray of costs (fan + compressor power [W]), vectorised.
    speeds : ndarray, shape (s,)
        Candidate speeds [1], increasing; the search stays within [speeds[0], speeds[-1]].
        Include any speed where the cost has a kink (e.g. where the trim reaches zero): a
        minimum there is then found exactly.
    refinements : int
        Times the bracket around the cheapest point is searched again on a finer grid.
    points : int
        Points of each finer grid.

    Returns
    -------
    speed : float
        The cheapest speed found [1].
    cost : float
        Its cost.

    Notes
    -----
    The grid finds the basin of the global minimum (the total need not be unimodal: chiller
    staging and minimum load put kinks and steps in the compressor's power); each refinement
    searches the bracket between the grid points on either side of the cheapest on a grid of
    ``points`` (a bounded scalar search, vectorised: one cost evaluation per refinement), so the
    bracket shrinks (points − 1) / 2-fold each time — from the table's 0.025 steps to ≈ 2e-4
    with the defaults. Each grid includes the previous best, so the result is never worse than
    the first grid's best.
    """
    s = np.asarray(speeds, dtype=float)
    for k in range(refinements + 1):
        c = np.asarray(cost(s), dtype=float)
        i = int(np.argmin(c))
        best_s, best_c = float(s[i]), float(c[i])
        if k == refinements or s.size < 2:
            break
        lo, hi = s[max(i - 1, 0)], s[min(i + 1, s.size - 1)]
        s = np.union1d(np.linspace(lo, hi, points), [best_s])
    return best_s, best_c
