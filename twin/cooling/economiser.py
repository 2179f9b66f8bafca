"""Water-side economiser control: the fan speed that minimises fan plus compressor power.

Running the free-cooling fans harder takes more heat out before the trim chiller, which then
needs less compressor power; but fan power rises with the cube of speed. Flat-out fans are the
right answer only while a kelvin of free cooling saves more compressor work than it costs in
fan work. The controller evaluates the total on a grid of speeds (vectorised over the grid),
then refines the cheapest grid point by a bounded search between its neighbours
(:func:`cheapest_speed`), which is what supervisory "optimal economiser" sequences do
(ASHRAE Guideline 36-2021, §5.20 "plant optimisation": trade tower fan energy against chiller
energy). Both water circuits use it while their chillers trim: the facility water
(:meth:`twin.cooling.facility_water.FacilityWater.split`) and the CRAHs' chilled water
(:meth:`twin.cooling.chilled_water.ChilledWater.chilled_water`), each through
:func:`economiser_speed` on its own series trim (:func:`series_trim`).
"""

from __future__ import annotations

import numpy as np

from twin.cooling.heat_rejection import HeatRejectionBank


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
        i = int(c.argmin())
        best_s, best_c = float(s[i]), float(c[i])
        if k == refinements or s.size < 2:
            break
        lo, hi = s[max(i - 1, 0)], s[min(i + 1, s.size - 1)]
        s = _with_point(np.linspace(lo, hi, points), best_s)
    return best_s, best_c


def _with_point(grid, x: float):
    """``np.union1d(grid, [x])`` for a grid of increasing speeds [1]: x inserted in its place
    unless the grid holds it (a few numpy calls instead of union1d's sort; a grid that is not
    strictly increasing, or x = 0, whose sign union1d may take from either, goes to union1d)."""
    if x != 0.0 and (grid[1:] > grid[:-1]).all():
        j = int(grid.searchsorted(x))
        if j < grid.size and grid[j] == x:
            return grid
        return np.concatenate((grid[:j], [x], grid[j:]))
    return np.union1d(grid, [x])


def series_trim(table, t_sink: float, t_set: float, t_mean: float, r_mean: float, speed):
    """Heat left for the chiller [W] with the free-cooling fans at ``speed`` [1] (ndarray: air
    flow relative to the bank's design, within the step's table).

    Parameters
    ----------
    table : (ndarray, ndarray)
        Speeds s and outlet fractions r(s) = (T_out − T_sink) / (T_in − T_sink) of the step
        (:meth:`twin.cooling.heat_rejection.HeatRejectionBank.table`).
    t_sink, t_set : float
        The units' sink and the circuit's supply set-point [degC].
    t_mean, r_mean : float
        Water entering the units [degC] and the heat the circuit rejects [W].

    Notes
    -----
    Series economiser (:func:`~twin.cooling.plant.economiser_split`): free cooling brings the
    water to T_free(s) = T_sink + r(s) (T̄ − T_sink) (r(s) interpolated in the table), not below
    the set-point; the chiller takes the rest,
    q_ch(s) = R̄ (clip(T_free(s), T_set, T̄) − T_set) / (T̄ − T_set), non-increasing in s and
    linear between the table's speeds.
    """
    s_grid, r_grid = table
    speed = np.asarray(speed, dtype=float)
    if t_mean <= t_set or r_mean <= 0:
        return np.zeros_like(speed)
    r = np.interp(speed, s_grid, r_grid)
    t_free = t_sink + r * (t_mean - t_sink) if t_mean > t_sink else np.full_like(speed, t_mean)
    # (np.clip(t_free, t_set, t_mean) as its maximum, then minimum: without clip's wrappers)
    return r_mean * (np.minimum(np.maximum(t_free, t_set), t_mean) - t_set) / (t_mean - t_set)


def economiser_speed(table, t_sink: float, t_set: float, t_mean: float, r_mean: float, fans,
                     compressor, spare: float = np.inf) -> float:
    """Fan speed with the least fan + compressor power while the chiller trims [1].

    Parameters
    ----------
    table, t_sink, t_set, t_mean, r_mean
        The step's series trim (:func:`series_trim`).
    fans, compressor : callable
        Fan power of the units at speeds s (ndarray → W) and the chillers' power at this
        circuit's trims q (ndarray → W).
    spare : float
        Chiller capacity the trim may take [W]; the search keeps the trim within it (or at the
        flat-out trim, if even that exceeds it).

    Notes
    -----
    P(s) = P_fan(s) + P_chiller(q_ch(s)) is minimised by :func:`cheapest_speed` over the table's
    speeds from the lowest whose trim fits ``spare`` (found exactly: q_ch is linear between the
    table's speeds), with the speed where free cooling alone reaches the set-point (the trim's
    kink at zero) added to the grid. Cube-law fans against a trim that falls linearly, Q (1 − s),
    at a constant COP give s* = √(Q / (3 COP P_f)).
    """
    s, r = table
    if t_mean > t_sink:  # where free cooling alone reaches the set-point: the trim's kink
        s = _with_point(s, HeatRejectionBank.speed_for(s, r, (t_set - t_sink) / (t_mean - t_sink)))

    def trim(speed):
        return series_trim(table, t_sink, t_set, t_mean, r_mean, speed)

    q = trim(s)
    cap = max(spare, float(q[-1]))
    over = np.flatnonzero(q > cap)
    if over.size:  # the lowest speed whose trim fits: q is linear in s between grid points
        k = over[-1]
        lo = float(np.interp(cap, [q[k + 1], q[k]], [s[k + 1], s[k]]))
        s = np.concatenate([[lo], s[k + 1:]])
        q = None

    def cost(speed):
        # (the first grid's trims are q, when the grid is still s)
        return fans(speed) + compressor(q if speed is s and q is not None else trim(speed))

    return cheapest_speed(cost, s)[0]
