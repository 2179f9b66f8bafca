"""Each kind of action the environment offers acts as the scenario's own setting of it.

An action set from the first interval on and held runs the same steps as the plain ``twin run``
of a scenario that declares the same thing (a plant's cooling mode, a rack or row power limit, a
job's start time or device selection), so the KPIs agree to 1e-9; one step later, or another
value, gives a different run, so each check can fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from tests.conftest import SCENARIOS  # noqa: E402
from twin.control import FacilityEnv  # noqa: E402
from twin.export.dataset import summary  # noqa: E402
from twin.scenario import load_scenario  # noqa: E402
from twin.sim.driver import Simulation  # noqa: E402

QUICK = SCENARIOS / "quickstart.yaml"
#: 1e-9 relative: the same steps in the same order as the plain run (a handful of interval sums).
RTOL = 1e-9
KPIS = ("energy_it_J", "energy_facility_J", "t_die_max_degC", "throttled_device_seconds", "capped_rack_seconds")


def _plain(path, overrides) -> dict:
    sim = Simulation(load_scenario(path, overrides))
    sim.run()
    return summary(sim)


def _episode(env, first: dict) -> tuple[list, list]:
    """Run to the end with ``first`` applied in the first interval and held after."""
    obs, _ = env.reset()
    action = {**env.hold_action(), **first}
    observations, infos, done = [], [], False
    while not done:
        obs, _, _, done, info = env.step(action)
        observations.append(obs)
        infos.append(info)
        action = env.hold_action()
    return observations, infos


def _close(mine: dict, plain: dict, keys=KPIS) -> None:
    for k in keys:
        assert math.isclose(mine[k], plain[k], rel_tol=RTOL, abs_tol=1e-9), k


def test_cooling_mode_action_is_the_plants_mode():
    """``facility.cooling_mode`` = chiller_only on a January morning in Leesburg (full free
    cooling when left to itself) runs the hall of ``plant.economiser.mode: chiller_only``."""
    window = {"time": {"start": "2026-01-08T00:00:00", "duration": "6 h"}}
    env = FacilityEnv(SCENARIOS / "control-leesburg.yaml",
                      overrides={**window, "control": {"actions": [{"control": "facility.cooling_mode"}]}})
    assert env.metadata["choices"]["facility.cooling_mode"] == ["auto", "free_only", "chiller_only"]
    held_obs, held = _episode(env, {})
    obs, infos = _episode(env, {"facility.cooling_mode": np.int64(2)})
    assert all(o["facility.economiser"][0] == 2.0 for o in held_obs)  # free cooling carries January
    assert all(o["facility.economiser"][0] == 0.0 and o["facility.p_chiller"][0] > 0 for o in obs)
    assert sum(i["energy_facility_J"] for i in infos) > sum(i["energy_facility_J"] for i in held)
    chiller = _plain(SCENARIOS / "control-leesburg.yaml",
                     {**window, "plant": {"economiser": {"mode": "chiller_only"}}})
    _close(env.kpis(), chiller, KPIS + ("chiller_hours",))


FULL = {"time": {"duration": "10 min"}, "workload": [{"select": {"kind": ["trn3"]}, "u": 1.0}]}


@pytest.mark.parametrize("group", ["rack", "row"])
def test_power_limit_actions_are_the_scenarios_limits(group):
    """``rack.power_limit`` of 75 kW on each of the UltraServer's two racks (which draw ~90 kW
    at full load), or ``row.power_limit`` of 150 kW on their row, runs the scenario that
    declares the same limits: the cap governor holds them and counts the capped time."""
    env = FacilityEnv(QUICK, overrides=FULL)
    env.reset()
    key = f"{group}.power_limit"
    limit = {"rack": 75e3, "row": 150e3}[group]
    n = len(env.metadata["entities"][key])
    _, infos = _episode(env, {key: np.full(n, limit)})
    if group == "rack":
        racks = [{"name": "us1", "template": "trn3-gen2-ultraserver", "cdu": "cdu-1", "power_limit": "75 kW"}]
        row = {"name": "row-a", "racks": racks}
    else:
        racks = [{"name": "us1", "template": "trn3-gen2-ultraserver", "cdu": "cdu-1"}]
        row = {"name": "row-a", "power_limit": "150 kW", "racks": racks}
    capped = _plain(QUICK, {**FULL, "halls": [{"name": "hall-1", "rows": [row]}]})
    _close(env.kpis(), capped)
    assert capped["capped_rack_seconds"] > 0  # the limit bites
    assert sum(i["capped_rack_seconds"] for i in infos) == pytest.approx(capped["capped_rack_seconds"], rel=RTOL)
    assert env.kpis()["energy_it_J"] < 0.95 * _plain(QUICK, FULL)["energy_it_J"]


#: Two UltraServers on two CDUs and one training job for one of them (10 s steps: 15 minutes in
#: three control intervals).
TWO_CDUS = {
    "time": {"duration": "15 min", "step": "10 s"},
    "cdus": [{"name": "cdu-1", "template": "in-row-1350kw", "supply_temperature": "34 degC"},
             {"name": "cdu-2", "template": "in-row-1350kw", "supply_temperature": "34 degC"}],
    "halls": [{"name": "hall-1", "rows": [{"name": "row-a", "racks": [
        {"name": "us1", "template": "trn3-gen2-ultraserver", "cdu": "cdu-1"},
        {"name": "us2", "template": "trn3-gen2-ultraserver", "cdu": "cdu-2"}]}]}],
    "workload": [{"select": {"kind": ["graviton4"]}, "u": 0.3}],
    "jobs": [{"kind": "training", "name": "pretrain", "devices": {"kind": "trn3", "count": 144},
              "iteration_time": "3 s"}],
    "control": {"actions": [{"control": "job.admit"}, {"control": "job.placement"}],
                "observations": ["cdu.q", "job.state", "job.progress", "facility.p_it"]},
}


def _job(overrides: dict) -> dict:
    job = {**TWO_CDUS["jobs"][0], **overrides}
    return {**TWO_CDUS, "jobs": [job]}


def test_job_admission_holds_a_queued_job_until_admitted():
    """Held in the first interval and admitted in the second, the job runs as one that starts
    at 5 min; its state reads queued, then running."""
    env = FacilityEnv(QUICK, overrides=TWO_CDUS)
    assert isinstance(env.action_space["job.admit"], type(env.action_space["job.placement"]))
    env.reset()
    states, progress = [], []
    for admit in (0, 1, 1):
        action = env.hold_action()
        action["job.admit"] = np.int64(admit)
        obs, _, _, done, _ = env.step(action)
        states.append(obs["job.state"][0])
        progress.append(obs["job.progress"][0])
    assert done and states == [0.0, 1.0, 1.0]
    assert progress[0] == 0.0 < progress[1] < progress[2]
    late = _plain(QUICK, _job({"start": "5 min"}))
    _close(env.kpis(), late)
    assert env.kpis()["energy_it_J"] < _plain(QUICK, TWO_CDUS)["energy_it_J"]  # against no holding


def test_job_placement_sends_a_queued_job_to_a_cdus_racks():
    """``job.placement`` = cdu-2 puts the job on us2 (the racks cdu-2 cools), as a job that
    selects those racks; left to itself it goes to us1. The CDUs' heat shows where it runs."""
    env = FacilityEnv(QUICK, overrides=TWO_CDUS)
    assert env.metadata["choices"]["job.placement"] == ["any", "cdu-1", "cdu-2"]
    anywhere, _ = _episode(env, {})
    there, _ = _episode(env, {"job.placement": np.int64(2)})
    q_any, q_there = anywhere[-1]["cdu.q"], there[-1]["cdu.q"]
    assert q_any[0] > 2 * q_any[1] and q_there[1] > 2 * q_there[0]
    on_us2 = _plain(QUICK, _job({"devices": {"kind": "trn3", "count": 144, "select": {"rack": ["us2-*"]}}}))
    _close(env.kpis(), on_us2)


# ---------------------------------------------------------------------------------------------
# New equipment: a component that declares a control and an output is an action and an
# observation as it is, with no change to the environment.
# ---------------------------------------------------------------------------------------------
from twin.sim.component import Component, Control, Var  # noqa: E402

#: The toy's fan power per unit of speed [W] (any figure: the test checks it is passed through).
DOOR_FAN_W = 120.0


class _DoorFans(Component):
    """A toy rear-door fan per rack: a speed control (0.2–1, "1") and the fans' power output."""

    outputs = (Var("rack", "door_fan_power", "W", "rear-door fan power (test equipment)"),)

    def __init__(self, n_racks: int):
        self.speed = np.full(n_racks, 0.6)
        self.controls = (Control("rack", "door_fan_speed", "1", "rear-door fan speed (test equipment)",
                                 0.2, 1.0),)
        self.set_calls = 0

    def initialise(self, state) -> None:
        state["rack.door_fan_power"] = DOOR_FAN_W * self.speed

    def step(self, t, dt, state) -> None:
        state["rack.door_fan_power"] = DOOR_FAN_W * self.speed

    def control(self, key):
        return self.speed.copy()

    def set_control(self, key, values):
        self.set_calls += 1
        self.speed = np.asarray(values, dtype=float).copy()


@pytest.fixture
def door_fans(monkeypatch):
    """Every simulation built while the test runs gets the toy fans after its components."""
    import twin.sim.driver as driver

    built = []
    assemble = driver.assemble

    def with_fans(loaded, system, *args, **kwargs):
        parts = assemble(loaded, system, *args, **kwargs)
        parts.components.append(_DoorFans(system.n_racks))
        built.append(parts.components[-1])
        return parts

    monkeypatch.setattr(driver, "assemble", with_fans)
    return built


def test_a_new_components_control_and_output_are_an_action_and_an_observation(door_fans):
    """The toy's control appears in the action space with its own range and units, an action
    reaches the component (clipped to its range, counted), and its output is observed."""
    control = {"observations": ["rack.door_fan_power", "facility.p_facility"]}
    env = FacilityEnv(QUICK, overrides={"time": {"duration": "20 min"}, "control": control})
    space = env.action_space["rack.door_fan_speed"]
    n = len(env.metadata["entities"]["rack.door_fan_speed"])
    assert n == 2 and space.shape == (n,)  # the quickstart's two racks
    np.testing.assert_array_equal(space.low, [0.2, 0.2])
    np.testing.assert_array_equal(space.high, [1.0, 1.0])
    assert env.metadata["units"]["rack.door_fan_speed"] == "1"
    assert env.metadata["units"]["rack.door_fan_power"] == "W"
    obs, _ = env.reset()
    np.testing.assert_allclose(obs["rack.door_fan_speed"], [0.6, 0.6])  # the value in force
    np.testing.assert_allclose(obs["rack.door_fan_power"], [0.6 * DOOR_FAN_W] * 2)
    obs, _, _, _, info = env.step({"rack.door_fan_speed": np.array([0.5, 1.7])})
    assert info["clipped"] == 1
    fans = env.sim.components[-1]
    assert isinstance(fans, _DoorFans) and fans.set_calls == 1
    np.testing.assert_allclose(fans.speed, [0.5, 1.0])
    np.testing.assert_allclose(obs["rack.door_fan_speed"], [0.5, 1.0])
    np.testing.assert_allclose(obs["rack.door_fan_power"], [0.5 * DOOR_FAN_W, DOOR_FAN_W])
    env.step(env.hold_action())  # holding the values in force sets nothing
    assert fans.set_calls == 1
