"""Water-side economiser control: the fan speed that minimises fan plus compressor power.

Running the free-cooling fans harder takes more heat out before the trim chiller, which then
needs less compressor power; but fan power rises with the cube of speed. Flat-out fans are the
right answer only while a kelvin of free cooling saves more compressor work than it costs in
fan work. The controller evaluates the total on a grid of speeds (vectorised over the grid)
and picks the cheapest, which is what supervisory "optimal economiser" sequences do
(ASHRAE Guideline 36-2021, §5.20 "plant optimisation": trade tower fan energy against chiller
energy).
"""

from __future__ import annotations

import numpy as np


def economiser_optimum(speeds, p_fan, q_trim, cop):
    """Fan speed of the free-cooling units with the least fan + chiller power.

    Parameters
    ----------
    speeds : ndarray, shape (s,)
        Candidate relative fan speeds [1], increasing.
    p_fan : ndarray, shape (s,)
        Fan power at each speed [W].
    q_trim : ndarray, shape (s,)
        Heat left for the chiller at each speed [W] (what free cooling at that speed leaves
        above the set-point), non-increasing with speed.
    cop : float or ndarray
        Chiller COP at the present conditions [1] (scalar, or one per speed).

    Returns
    -------
    speed : float
        The cheapest speed [1].
    p_total : float
        Fan + chiller power there [W].
    index : int
        Its position in ``speeds``.

    Notes
    -----
    Total P(s) = P_fan(s) + q_trim(s) / COP. Ties go to the slower speed. With a cube-law fan
    P_f s³ and a trim that falls linearly, q_trim = Q (1 − s) for s ≤ 1, the optimum is
    s* = √(Q / (3 COP P_f)) (dP/ds = 3 P_f s² − Q / COP = 0), clipped to [0, 1].
    """
    total = np.asarray(p_fan, dtype=float) + np.asarray(q_trim, dtype=float) / np.asarray(cop, dtype=float)
    i = int(np.argmin(total))
    return float(np.asarray(speeds)[i]), float(total[i]), i
