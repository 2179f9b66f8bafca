"""Run controllers over whole episodes, on many scenarios or seeds at once.

:func:`episode` runs one scenario under one controller and totals its intervals;
:func:`evaluate` runs every (scenario, controller, seed) combination, on a Dask cluster when
given a client (each episode is independent: the natural unit of parallel work), and returns a
table; :func:`make_vector` builds a Gymnasium vector environment over several scenarios or
seeds for learning (``gym.make_vec("twin/Facility-v0", num_envs=n, scenario=...)`` does the
same for one scenario).
"""

from __future__ import annotations

import resource
from functools import partial

from twin.control.env import FacilityEnv

#: Interval KPIs summed over an episode.
SUMMED = ("energy_facility_J", "energy_it_J", "energy_cooling_J", "throttled_device_seconds",
          "capped_rack_seconds", "work_device_seconds", "lost_work_device_seconds", "violation_seconds",
          "cost", "cost_energy", "cost_throttled", "cost_lost_work", "cost_violation")
#: Run KPIs (:func:`twin.export.dataset.summary`) copied into the episode's row when present.
RUN_KPIS = ("t_die_max_degC", "devices_throttled", "devices_tripped", "chiller_hours",
            "full_free_cooling_hours", "water_m3", "wue_L_per_kWh")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def episode(scenario, controller, seed: int | None = None, overrides: dict | None = None) -> dict:
    """Run ``scenario`` to its end under ``controller``; its totals as one row.

    Parameters
    ----------
    scenario : str, Path or LoadedScenario
    controller : callable
        ``controller(obs, env) -> action`` with ``reset(env)`` (:mod:`twin.control.controllers`).
    seed : int, optional
        Scenario seed (default the scenario's own).
    overrides : dict, optional
        Top-level scenario values (``{"time": {"duration": "30 d"}}``).

    Returns
    -------
    dict
        Summed interval KPIs (energies [J], device-seconds, costs), ``pue`` (facility over IT
        energy), ``goodput`` (work done over work demanded [1]), the run's ``RUN_KPIS``,
        ``intervals`` and ``cpu_seconds`` (user + system time of the episode).
    """
    t0 = _cpu()
    env = FacilityEnv(scenario, overrides=overrides)
    obs, _ = env.reset(seed=seed)
    controller.reset(env)
    row = dict.fromkeys(SUMMED, 0.0)
    n, done = 0, False
    while not done:
        obs, _, terminated, truncated, info = env.step(controller(obs, env))
        for k in SUMMED:
            row[k] += info[k]
        n += 1
        done = terminated or truncated
    kpi = env.kpis()
    demand = row["work_device_seconds"] + row["lost_work_device_seconds"]
    row.update({
        "scenario": env.loaded.scenario.name, "controller": getattr(controller, "name", type(controller).__name__),
        "seed": env.loaded.scenario.seed if seed is None else seed, "intervals": n,
        "pue": row["energy_facility_J"] / row["energy_it_J"] if row["energy_it_J"] else float("nan"),
        "goodput": row["work_device_seconds"] / demand if demand else float("nan"),
    })
    row.update({k: kpi[k] for k in RUN_KPIS if k in kpi})
    row["cpu_seconds"] = _cpu() - t0
    return row


def evaluate(scenarios, controllers, seeds=(None,), overrides: dict | None = None, client=None):
    """Episodes of every scenario × controller × seed, as a pandas DataFrame (a row each).

    ``controllers`` are controller objects (each episode gets a copy); with a
    ``dask.distributed.Client`` the episodes run on its workers, otherwise one after another.
    """
    import copy

    import pandas as pd

    jobs = [(s, c, seed) for s in scenarios for c in controllers for seed in seeds]
    if client is None:
        rows = [episode(s, copy.deepcopy(c), seed, overrides) for s, c, seed in jobs]
    else:
        futures = [client.submit(episode, s, copy.deepcopy(c), seed, overrides, pure=False) for s, c, seed in jobs]
        rows = client.gather(futures)
    return pd.DataFrame(rows)


def make_vector(scenarios, mode: str = "sync", **kwargs):
    """A Gymnasium vector environment with one sub-environment per scenario.

    The scenarios must offer the same actions and observations (e.g. one hall under several
    weather files or seeds); ``mode`` "async" runs each in its own process.
    """
    from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

    fns = [partial(FacilityEnv, s, **kwargs) for s in scenarios]
    return (AsyncVectorEnv if mode == "async" else SyncVectorEnv)(fns)
