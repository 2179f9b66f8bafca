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


class Fixed:
    """The scenario's fixed set-points: every control holds its value."""

    name = "fixed"

    def reset(self, env) -> None:
        pass

    def __call__(self, obs: dict, env) -> dict:
        return env.hold_action()


class RuleBased:
    """Raise the water temperature while the hottest die has margin and the chiller trims the
    facility water; let it back down while free cooling carries the load alone.

    Parameters
    ----------
    raise_above : float
        Margin of the hottest liquid-cooled die to its throttle point [K] above which the
        water set-points may be raised.
    lower_below : float
        Margin below which they are lowered whatever else holds [K].
    step : float
        Set-point change per interval [K].
    patience : int
        Intervals of full free cooling before the set-points come down a step.
    keys : tuple of str
        The set-points moved together (each within its action bounds), so the CDUs keep their
        offset above the facility water.

    Notes
    -----
    Each interval, with m the smallest margin of a liquid-cooled kind's hottest die over the
    last interval: m < ``lower_below`` → lower; the chiller trimmed the facility water in the
    last interval (``facility.economiser`` below 2, full free cooling) and m > ``raise_above``
    → raise (free cooling then carries more of the load); ``patience`` intervals of full free
    cooling → lower (cooler dies leak less: the twin's annual sweeps show leakage outweighing
    the plant's savings from warmer water when no chiller runs); else hold. Without a plant
    (no ``facility.economiser``) only the margin rules act.
    """

    name = "rule-based"

    def __init__(self, raise_above: float = 8.0, lower_below: float = 4.0, step: float = 1.0,
                 patience: int = 3, keys: tuple[str, ...] = WATER_KEYS):
        if not lower_below < raise_above:
            raise ValueError("lower_below must be below raise_above")
        self.raise_above, self.lower_below, self.step = raise_above, lower_below, step
        self.patience, self.keys = int(patience), keys

    def reset(self, env) -> None:
        self.actions = _water(env, self.keys)
        self.free = 0  # intervals of full free cooling in a row

    def __call__(self, obs: dict, env) -> dict:
        margin = _margin(obs, env)
        economiser = obs.get("facility.economiser")
        chiller = economiser is not None and float(economiser[0]) < 2.0
        self.free = 0 if chiller else self.free + 1
        if margin < self.lower_below:
            delta = -self.step
        elif economiser is None:
            delta = self.step if margin > self.raise_above else 0.0
        elif chiller:
            delta = self.step if margin > self.raise_above else 0.0
        elif self.free >= self.patience:
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
        Control intervals each candidate is held and rolled out for. Six one-hour intervals on
        ``scenarios/control-leesburg.yaml`` by measurement: with two, the controller drove the
        water up (hottest die 82.5 degC) and a January week cost 4.0 % more facility energy
        than the fixed set-points; with six it saves 3.0 % (README, "Control API"). Why the
        short rollouts favour warmer water is not analysed here.
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
