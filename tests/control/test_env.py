"""twin.control: the Gymnasium environment against Gymnasium's checker and the plain run.

Each check compares the environment with something it does not compute itself: Gymnasium's own
API checker, the plain ``twin run`` of the same scenario (KPIs and energies), the scenario's own
``power_limits`` path for the power-limit control, and a second episode with the same seed.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from tests.conftest import SCENARIOS  # noqa: E402
from twin.control import FacilityEnv  # noqa: E402
from twin.export.dataset import summary  # noqa: E402
from twin.scenario import load_scenario  # noqa: E402
from twin.sim.driver import Simulation  # noqa: E402

QUICK = SCENARIOS / "quickstart.yaml"
#: 20 min of the quickstart: 10 min idle, then the training-like swing (4 control intervals).
SHORT = {"time": {"duration": "20 min"}}
#: 1e-9 relative: an episode of no-op actions runs the same steps in the same order as the plain
#: run, so KPIs agree to rounding (the interval sums add ~4 terms: far below this).
RTOL = 1e-9
#: KPIs of the plain run that the environment reproduces (those from the run's totals).
KPIS = ("energy_it_J", "energy_facility_J", "energy_loss_J", "energy_liquid_J", "energy_air_J",
        "t_die_max_degC", "throttled_device_seconds", "devices_throttled", "devices_tripped",
        "capped_rack_seconds", "pue", "energy_stored_J")


def _plain(overrides, path=QUICK) -> dict:
    sim = Simulation(load_scenario(path, overrides))
    sim.run()
    return summary(sim)


def _episode(env, policy, seed=None) -> tuple[list, list, list]:
    obs, _ = env.reset(seed=seed)
    observations, rewards, infos = [obs], [], []
    done = False
    while not done:
        obs, r, terminated, truncated, info = env.step(policy(env, obs))
        observations.append(obs)
        rewards.append(r)
        infos.append(info)
        done = terminated or truncated
    return observations, rewards, infos


def _hold(env, obs):
    return env.hold_action()


def test_gymnasium_env_checker_passes_in_units():
    """The environment in the controls' own units: only the advice to normalise Box actions
    (which ``twin/FacilityNormalized-v0`` follows) may be warned about."""
    env = gym.make("twin/Facility-v0", scenario=QUICK, overrides=SHORT)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*symmetric and normalized space")
        check_env(env.unwrapped, skip_render_check=True)


def test_gymnasium_env_checker_passes_normalised():
    """Normalised actions pass the checker with every warning an error (the test settings)."""
    env = gym.make("twin/FacilityNormalized-v0", scenario=QUICK, overrides=SHORT)
    check_env(env.unwrapped, skip_render_check=True)


@pytest.mark.parametrize("path, overrides", [
    (QUICK, SHORT),  # CDUs without a plant, a training job
    (SCENARIOS / "control-leesburg.yaml", {"time": {"start": "2026-01-08T00:00:00", "duration": "2 h"}}),  # a plant
])
def test_every_space_has_its_units_long_name_and_entities(path, overrides):
    """Each Box (actions and observations) has a UDUNITS string, a long name and one entity
    name per value in the metadata; each choice its names. The units are those the component
    declares (the Var or the Control), so a new component's are there as it declares them."""
    from twin.sim.variables import DECLARED

    env = FacilityEnv(path, overrides=overrides)
    meta = env.metadata
    declared = {a.key: a.control for a in env.actions}
    spaces = {**env.observation_space.spaces, **env.action_space.spaces}
    assert set(spaces) == set(meta["units"]) == set(meta["long_names"]) == set(meta["entities"])
    for key, space in spaces.items():
        units, name = meta["units"][key], meta["long_names"][key]
        assert isinstance(units, str) and units.strip() and isinstance(name, str) and name.strip(), key
        source = declared[key] if key in declared else DECLARED[key]
        assert units == source.units, key
        if isinstance(space, gym.spaces.Box):
            shared = key in declared and next(a for a in env.actions if a.key == key).shared
            n = len(meta["entities"][key])
            assert space.shape == ((1,) if shared and key in env.action_space.spaces else (n,)), key
        else:
            assert meta["choices"][key] == list(declared[key].choices), key
    assert {"facility.p_facility", "device.t_die"} <= set(env.observation_space.spaces)


def test_no_op_policy_reproduces_the_plain_run():
    env = FacilityEnv(QUICK, overrides=SHORT)
    _, rewards, infos = _episode(env, _hold)
    assert len(infos) == 4  # 20 min in 5 min intervals
    plain = _plain(SHORT)
    mine = env.kpis()
    for k in KPIS:
        assert math.isclose(mine[k], plain[k], rel_tol=RTOL, abs_tol=1e-9), k
    # the intervals add up to the run: facility energy and throttling
    for k in ("energy_facility_J", "energy_it_J", "throttled_device_seconds"):
        assert math.isclose(sum(i[k] for i in infos), plain[k], rel_tol=RTOL, abs_tol=1e-9), k
    # the reward is minus the priced facility energy when nothing throttles or is lost
    price = env.account.prices["energy"]
    assert math.isclose(-sum(rewards), price * plain["energy_facility_J"], rel_tol=RTOL)


def test_same_seed_and_actions_give_identical_trajectories():
    env = FacilityEnv(QUICK, overrides=SHORT)
    env.action_space.seed(3)
    actions = [env.action_space.sample() for _ in range(4)]  # random set-points and limits
    runs = []
    for _ in range(2):
        it = iter(actions)
        runs.append(_episode(env, lambda env, obs: next(it), seed=5))
    (o1, r1, i1), (o2, r2, i2) = runs
    assert r1 == r2  # bit-identical floats
    for a, b in zip(o1, o2):
        assert a.keys() == b.keys()
        for k in a:
            assert np.array_equal(a[k], b[k]), k
    assert i1 == i2


def test_out_of_range_actions_are_clipped_or_rejected():
    env = FacilityEnv(QUICK, overrides=SHORT)
    env.reset()
    action = env.hold_action()
    action["cdu.t_supply_set"] = np.array([99.0])  # the CDU range tops at 50 degC
    *_, info = env.step(action)
    assert info["clipped"] == 1
    assert env.sim.components[env._index["cdu.t_supply_set"]].control("cdu.t_supply_set")[0] == 50.0

    loaded = load_scenario(QUICK, {**SHORT, "control": {"out_of_range": "reject"}})
    env = FacilityEnv(loaded)
    env.reset()
    action = env.hold_action()
    action["cdu.t_supply_set"] = np.array([99.0])
    with pytest.raises(ValueError, match=r"cdu.t_supply_set\[cdu-1\]: 99 is outside 17…50 degC"):
        env.step(action)
    with pytest.raises(ValueError, match="unknown action keys"):
        env.step({"cdu.nonsense": 1.0})


def test_hot_water_throttles_and_the_reward_shows_it():
    """At full load the Trainium3 die runs about 67 degC on the quickstart's 34 degC CDU water
    and about 84 degC on 50 degC water (its HBM stacks take 150-160 W of its power off the die);
    with the throttle point overridden to 81 degC (the
    catalogue's is 90 degC) the hot water throttles and the fixed set-point does not: the
    throttled device-seconds and the lost work are priced into the reward."""
    full = {"time": {"duration": "15 min"},
            "workload": [{"select": {"kind": ["trn3"]}, "u": 1.0}, {"select": {"kind": ["graviton4"]}, "u": 0.3}],
            "catalog": {"chips": {"trn3": {"t_throttle": {"value": "81 degC", "source": "estimate"}}}}}
    rewards = {}
    for name, t_set in (("hold", None), ("hot", 50.0)):
        env = FacilityEnv(QUICK, overrides=full)
        env.reset()
        total, info_sum = 0.0, {"throttled_device_seconds": 0.0, "cost_throttled": 0.0, "cost_lost_work": 0.0}
        for _ in range(3):
            action = env.hold_action()
            if t_set is not None:
                action["cdu.t_supply_set"] = np.array([t_set])
            _, r, _, _, info = env.step(action)
            total += r
            for k in info_sum:
                info_sum[k] += info[k]
        rewards[name] = (total, info_sum)
    hold, hot = rewards["hold"], rewards["hot"]
    assert hold[1]["throttled_device_seconds"] == 0.0
    assert hot[1]["throttled_device_seconds"] > 0.0
    assert hot[1]["cost_throttled"] > 0.0 and hot[1]["cost_lost_work"] > 0.0
    # every throttled device-second is priced at the scenario's default rate
    assert math.isclose(hot[1]["cost_throttled"], env.account.prices["throttled"] * hot[1]["throttled_device_seconds"],
                        rel_tol=1e-12)
    assert hot[0] < hold[0]


def test_device_power_limit_acts_through_the_power_limit_governor():
    """Setting ``device.power_limit`` from the first interval runs exactly the scenario that
    declares the same cap in ``power_limits`` (the governor path of issue 11)."""
    cap = 0.7
    env = FacilityEnv(QUICK, overrides=SHORT)
    env.reset()
    kinds = env.sim.system.device_kind
    tdp = env.sim.system.chip["tdp"]
    action = env.hold_action()
    action["device.power_limit"] = np.where(kinds == "trn3", cap * tdp, tdp)
    done = False
    while not done:
        *_, truncated, _ = env.step(action)
        done = truncated
        action = env.hold_action()  # holds the new limits
    capped = _plain({**SHORT, "power_limits": [{"select": {"kind": ["trn3"]}, "fraction": cap}]})
    uncapped = _plain(SHORT)
    mine = env.kpis()
    for k in ("energy_it_J", "energy_facility_J", "t_die_max_degC"):
        assert math.isclose(mine[k], capped[k], rel_tol=RTOL), k
    assert mine["energy_it_J"] < 0.95 * uncapped["energy_it_J"]  # the cap really bites


def test_fork_is_independent():
    env = FacilityEnv(QUICK, overrides=SHORT)
    env.reset()
    env.step(env.hold_action())
    fork = env.fork()
    hot = env.hold_action()
    hot["cdu.t_supply_set"] = np.array([45.0])
    fork.step(hot)
    _, r_env, *_ = env.step(env.hold_action())
    # the original continues as if the fork had not run: its next interval equals a fresh one
    ref = FacilityEnv(QUICK, overrides=SHORT)
    ref.reset()
    ref.step(ref.hold_action())
    _, r_ref, *_ = ref.step(ref.hold_action())
    assert r_env == r_ref


def test_missing_gymnasium_is_one_line_naming_the_extra():
    import subprocess
    import sys

    code = "import sys; sys.modules['gymnasium'] = None; import twin.control"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode != 0
    assert "twin.control needs Gymnasium: pip install 'twin[control]'" in out.stderr


def test_vector_environment_steps_each_seed_as_its_own_env():
    """Gymnasium's vector API over two copies of the scenario: each sub-environment's first
    interval equals the single environment's (same scenario, same held set-points)."""
    from twin.control.evaluate import make_vector

    venv = make_vector([QUICK, QUICK], overrides=SHORT)
    obs, _ = venv.reset(seed=0)
    single = FacilityEnv(QUICK, overrides=SHORT)
    o1, _ = single.reset(seed=0)
    hold = single.hold_action()
    _, r1, *_ = single.step(hold)
    batched = {k: np.stack([v, v]) for k, v in hold.items()}
    _, rewards, terminated, truncated, _ = venv.step(batched)
    assert rewards.tolist() == [r1, r1]
    assert not terminated.any() and not truncated.any()
    assert np.array_equal(obs["facility.p_it"][0], o1["facility.p_it"])
    venv.close()


def test_step_holds_blas_to_the_run_loops_threads(monkeypatch):
    """A control step advances the simulation as ``twin run`` does: BLAS on one thread inside
    the step (the run loop's default), the libraries' own settings back afterwards."""
    from threadpoolctl import threadpool_info

    def blas_now():
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    monkeypatch.delenv("TWIN_BLAS_THREADS", raising=False)
    before = blas_now()
    if not before:
        pytest.skip("no BLAS library that threadpoolctl can see")
    env = FacilityEnv(QUICK, overrides={"time": {"duration": "10 s"}})
    env.reset()
    seen = []
    governors = env.sim.governors
    governors_step = governors.step

    def spy(t, dt, state):  # each thermal step, inside the interval's advance
        seen.append(blas_now())
        governors_step(t, dt, state)

    governors.step = spy
    env.step(env.hold_action())
    assert len(seen) == 10
    assert seen and all(s == [1] * len(before) for s in seen)
    assert blas_now() == before


def test_gymnasium_make_vec_runs_each_seed_as_its_own_episode():
    """``gym.make_vec`` over one scenario with random job failures (a 5-minute MTBF): each
    sub-environment runs its own seed exactly as a single environment reset with that seed,
    and the two seeds give different episodes (so the seeds do reach the sub-environments)."""
    from tests.control.test_actions import TWO_CDUS

    over = {**TWO_CDUS, "jobs": [{**TWO_CDUS["jobs"][0], "mtbf": "5 min", "restart_time": "1 min"}]}
    venv = gym.make_vec("twin/Facility-v0", num_envs=2, vectorization_mode="sync", scenario=QUICK, overrides=over)
    venv.reset(seed=[1, 2])
    hold = venv.envs[0].unwrapped.hold_action()
    batched = {k: np.stack([v, v]) for k, v in hold.items()}
    rewards = np.array([venv.step(batched)[1] for _ in range(3)])
    venv.close()
    for i, seed in enumerate((1, 2)):
        env = FacilityEnv(QUICK, overrides=over)
        env.reset(seed=seed)
        assert rewards[:, i].tolist() == [env.step(env.hold_action())[1] for _ in range(3)]
    assert rewards[:, 0].tolist() != rewards[:, 1].tolist()
