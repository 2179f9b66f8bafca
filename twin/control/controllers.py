"""Reference controllers for :class:`~twin.control.env.FacilityEnv`.

A controller is a callable ``controller(obs, env) -> action`` with an optional
``reset(env)``; ``env`` is the unwrapped environment (its bounds, metadata and
:meth:`~twin.control.env.FacilityEnv.fork`).

- :class:`Fixed`: the scenario's fixed set-points (holds every control).
- :class:`RuleBased`: raise the water temperatures while the hottest liquid-cooled die has
  margin to its throttle point and the chiller trims the facility water; let them down while
  free cooling carries the load alone, or when the margin runs short.
- :class:`ModelPredictive`: the twin itself as the model: each interval, fork the environment,
  roll each candidate set-point out over a short horizon, and apply the one with the best
  return (a perfect forecast of weather and workload: an upper bound on what a model-predictive
  controller with real forecasts achieves).
"""

from __future__ import annotations

import numpy as np

#: The water set-points the reference controllers move together (those the scenario offers).
WATER_KEYS = ("facility.t_facility_supply_set", "cdu.t_supply_set")
#: The facility-water supply set-point (the one whose free-cooling boundary the rule learns).
FACILITY_KEY = "facility.t_facility_supply_set"


def _margin(obs: dict, env) -> float:
    """Smallest margin [K] of a liquid-cooled device kind's hottest die over the last interval
    to its throttle point (inf when no liquid-cooled kind is observed)."""
    if "device.t_die" not in obs:
        raise KeyError("the controller needs the observation 'device.t_die'")
    kinds = env.metadata["entities"]["device.t_die"]
    margins = [env.device_kinds[k]["t_throttle"] - t for k, t in zip(kinds, obs["device.t_die"])
               if env.device_kinds[k]["liquid"]]
    return min(margins, default=np.inf)


def _water(env, keys) -> list:
    """The water set-point actions ``keys`` the environment offers (continuous, in units)."""
    if env.normalize_actions:
        raise ValueError("the reference controllers act in the controls' units: use twin/Facility-v0")
    found = [a for a in env.actions if a.key in keys]
    if not found:
        raise KeyError(f"none of the controls {', '.join(keys)} is an action of this scenario")
    return found


def _shifted(env, actions, delta: float) -> dict:
    """The action holding everything but moving the water set-points by ``delta`` [K]."""
    action = env.hold_action()
    for a in actions:
        action[a.key] = np.clip(action[a.key] + delta, a.low, a.high)
    return action


def response_delay(env, actions, delta: float, limit: int) -> int | None:
    """Control intervals after which the IT power first answers a set-point change.

    Rolls two forks of ``env`` out from its current state, one holding every control and one
    with the set-points ``actions`` moved by ``delta`` [K], and compares the intervals' IT
    energy: the count of leading intervals in which the two agree exactly (the same steps in the
    same order give the same bits until the change reaches the devices).

    Returns
    -------
    int or None
        The delay [intervals]; None when the IT energy does not answer within ``limit``
        intervals (or the episode ends first).

    Notes
    -----
    A change reaches the devices through a chain of one-thermal-step couplings: the plant moves
    the facility water in the step the set-point changes, the CDUs' secondary supply follows
    from the next step, and device power (leakage) follows the die temperature at the start of
    a step. At one-hour thermal steps (one step per interval) that is two intervals without
    any IT response, though the loops settle in minutes.
    """
    hold, moved = env.fork(), env.fork()
    a_hold, a_moved = env.hold_action(), _shifted(env, actions, delta)
    for i in range(limit):
        _, _, _, end, k_hold = hold.step(a_hold)
        _, _, _, _, k_moved = moved.step(a_moved)
        if k_hold["energy_it_J"] != k_moved["energy_it_J"]:
            return i
        if end:
            break
    return None


class Fixed:
    """The scenario's fixed set-points: every control holds its value."""

    name = "fixed"

    def reset(self, env) -> None:
        pass

    def __call__(self, obs: dict, env) -> dict:
        return env.hold_action()


class RuleBased:
    """Raise the water temperature while the hottest die has margin and the chiller trims the
    facility water; let it back down while free cooling carries the load alone, but never below
    the boundary where free cooling stops carrying it.

    Parameters
    ----------
    raise_above : float
        Margin of the hottest liquid-cooled die to its throttle point [K] above which the
        water set-points may be raised while the chiller trims.
    lower_below : float
        Margin below which they are lowered whatever else holds [K]; a jump back above the
        free-cooling boundary keeps at least this margin.
    step : float
        Set-point change per interval [K].
    patience : int
        Intervals of full free cooling before the set-points come down a step.
    guard : float
        Distance kept above the learned free-cooling boundary [K]: the chiller, once started,
        stops only with the plant's hysteresis (1 K by default) to spare, and an hour of lag
        costs more than a kelvin of leakage.
    keys : tuple of str
        The set-points moved together (each within its action bounds), so the CDUs keep their
        offset above the facility water.
    boundary : bool
        Learn and keep off the plant's mode boundary (below). False gives the rule blind to it
        (lower a step after ``patience`` intervals of free cooling, raise a step while the
        chiller trims and the dies have margin), kept for comparison (README, "Control API").

    Notes
    -----
    Each interval, with m the smallest margin of a liquid-cooled kind's hottest die over the
    last interval: m < ``lower_below`` → lower; the chiller trims the facility water at the end
    of the last interval (``facility.economiser`` below 2, full free cooling) and m > ``raise_above``
    → raise (free cooling then carries more of the load); ``patience`` intervals of full free
    cooling → lower (cooler dies leak less: in the twin's device model the leakage saved
    outweighs the heat-rejection fans' extra energy while no chiller runs); else hold. Without
    a plant (no ``facility.economiser``) only the margin rules act.

    *The plant's mode boundary.* Free cooling holds a facility-water set-point T only while T
    sits far enough above the sink temperature t (the outdoor dry bulb for dry coolers, the
    wet bulb for cooling towers) for the heat-rejection units at full fans to bring the water
    down to T; below that the chiller starts, and a chiller trimming for hours costs far more
    than the leakage a few kelvin save (on a summer morning the sink warms faster than a
    1 K-an-interval rule climbs back). The rule learns the boundary's offset b from what it
    sees: when the chiller starts after an interval of full free cooling, b is at least the
    interval's T − t plus one step. With t' = t + max(0, t − t_previous) (the sink one interval
    on, if it keeps warming as it did) and B = t' + b + ``guard``: it lowers only while
    T − step ≥ B; while free cooling holds and T < B, it raises T to B ahead of the chiller;
    and when the chiller trims below B it jumps to B at once (both by at most
    m − ``lower_below``). Without a sink observation
    (``facility.t_outdoor``, or ``facility.t_wet_bulb`` for towers) b is learned on T alone.
    """

    name = "rule-based"

    def __init__(self, raise_above: float = 8.0, lower_below: float = 4.0, step: float = 1.0,
                 patience: int = 3, guard: float = 1.0, keys: tuple[str, ...] = WATER_KEYS,
                 boundary: bool = True):
        if not lower_below < raise_above:
            raise ValueError("lower_below must be below raise_above")
        self.raise_above, self.lower_below, self.step = raise_above, lower_below, step
        self.patience, self.guard, self.keys = int(patience), guard, keys
        self.boundary = bool(boundary)
        if not self.boundary:
            self.name = "rule-based, blind to the boundary"

    def reset(self, env) -> None:
        self.actions = _water(env, self.keys)
        self.free = 0  # intervals of full free cooling in a row (since the last lowering)
        self.was_free = False  # the last interval was one of full free cooling
        self.sink = None  # the sink temperature at the end of the last interval [degC]
        #: Learned offset of the facility-water set-point over the sink below which free cooling
        #: does not carry the load [K] (−inf: not seen yet).
        self.floor = -np.inf
        plant = env.loaded.scenario.plant
        tower = plant is not None and plant.heat_rejection.kind == "cooling_tower"
        self.sink_key = "facility.t_wet_bulb" if tower else "facility.t_outdoor"
        keys = [a.key for a in self.actions]
        self.lead = FACILITY_KEY if FACILITY_KEY in keys else keys[0]  # the set-point b is learned on

    def __call__(self, obs: dict, env) -> dict:
        margin = _margin(obs, env)
        economiser = obs.get("facility.economiser")
        chiller = economiser is not None and float(economiser[0]) < 2.0
        was_free, self.was_free = self.was_free, not chiller
        self.free = 0 if chiller else self.free + 1
        sink = obs.get(self.sink_key)
        sink = float(sink[0]) if sink is not None else 0.0
        ahead = sink + max(0.0, sink - self.sink) if self.sink is not None else sink
        self.sink = sink
        setpoint = float(env.hold_action()[self.lead][0])
        headroom = margin - self.lower_below  # the most the dies can take [K]
        below = ahead + self.floor + self.guard - setpoint  # how far under B [K]
        if margin < self.lower_below:
            delta = -self.step
        elif economiser is None:
            delta = self.step if margin > self.raise_above else 0.0
        elif chiller:
            if was_free and self.boundary:  # free cooling just stopped carrying the load at this offset
                self.floor = max(self.floor, setpoint - sink + self.step)
                below = ahead + self.floor + self.guard - setpoint
            if below > 0:
                delta = min(max(below, self.step), headroom)
            else:
                delta = self.step if margin > self.raise_above else 0.0
        elif below > 0:  # the sink warms towards the boundary: stay ahead of the chiller
            delta = min(below, headroom)
        elif self.free >= self.patience and below <= -self.step:
            delta, self.free = -self.step, 0
        else:
            delta = 0.0
        return _shifted(env, self.actions, delta)


class ModelPredictive:
    """The twin as its own model: roll candidate water set-points out on forks, apply the best.

    Parameters
    ----------
    offsets : tuple of float
        Candidate changes of the water set-points from the values in force [K].
    horizon : int
        Control intervals each candidate is held and rolled out for; it must be longer than
        the scenario's :func:`response_delay` (checked at :meth:`reset`, a ValueError otherwise).
        Six by default: on ``scenarios/control-leesburg.yaml`` (one-hour thermal steps) the IT
        power answers a set-point change only in the third interval, so two-interval rollouts
        see the plant's fan saving of warmer water and none of the dies' extra leakage, and drive
        the water to the top of its range (README, "Control API").
    keys : tuple of str
        The set-points moved together, as in :class:`RuleBased`.

    Notes
    -----
    Each interval costs ``len(offsets)`` forks and ``len(offsets) × horizon`` simulated
    intervals. The return compared is the sum of rewards over the horizon, so throttling, lost
    work and violations weigh against energy exactly as the scenario's reward says.
    """

    name = "model-predictive"

    def __init__(self, offsets: tuple[float, ...] = (-1.0, 0.0, 1.0), horizon: int = 6,
                 keys: tuple[str, ...] = WATER_KEYS):
        if horizon < 1 or not offsets:
            raise ValueError("need a horizon of at least 1 and at least one offset")
        # ties go to the smallest change (holding first)
        self.offsets = tuple(sorted(offsets, key=abs))
        self.horizon, self.keys = int(horizon), keys

    def reset(self, env) -> None:
        self.actions = _water(env, self.keys)
        step = max(self.offsets, key=abs)
        self.delay = response_delay(env, self.actions, step, self.horizon + 2)
        if self.delay is not None and self.delay >= self.horizon:
            raise ValueError(f"a horizon of {self.horizon} control intervals does not reach the IT power's "
                             f"answer to a set-point change, {self.delay} intervals later on this scenario: "
                             "the rollouts would weigh the plant's energy without the dies' leakage "
                             f"(use a horizon of at least {self.delay + 1})")

    def __call__(self, obs: dict, env) -> dict:
        best, best_return = None, -np.inf
        for delta in self.offsets:
            action = _shifted(env, self.actions, delta)
            model = env.fork()
            total = 0.0
            for _ in range(self.horizon):
                _, reward, _, truncated, _ = model.step(action)
                total += reward
                if truncated:
                    break
            if total > best_return:
                best, best_return = action, total
        return best


#: Reference controllers by name.
CONTROLLERS = {c.name: c for c in (Fixed, RuleBased, ModelPredictive)}
