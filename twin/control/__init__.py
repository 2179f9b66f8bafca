"""Control API: the twin as a Gymnasium environment, for reinforcement learning and
model-predictive control of cooling set-points, power caps and job placement.

Needs the ``control`` extra (``pip install 'twin[control]'``, Gymnasium). Importing this package
registers the environment ids::

    import gymnasium as gym
    import twin.control

    env = gym.make("twin/Facility-v0", scenario="scenarios/quickstart.yaml")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.unwrapped.hold_action())

``twin/Facility-v0`` acts in the controls' own units (°C, W, choices); ``twin/FacilityNormalized-v0``
in [−1, 1] for learning libraries. :mod:`twin.control.controllers` holds the reference
controllers, :func:`twin.control.evaluate.evaluate` runs them on many scenarios (on Dask).
"""

try:
    from gymnasium.envs.registration import register
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("twin.control needs Gymnasium: pip install 'twin[control]'") from exc

from twin.control.env import FacilityEnv

register(id="twin/Facility-v0", entry_point="twin.control.env:FacilityEnv")
register(id="twin/FacilityNormalized-v0", entry_point="twin.control.env:FacilityEnv",
         kwargs={"normalize_actions": True})

__all__ = ["FacilityEnv"]
