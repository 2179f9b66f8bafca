"""Scheduling, replay and ramp limits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SCENARIOS
from twin.export.dataset import build_tree
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

QUICK = SCENARIOS / "quickstart.yaml"


def _run(over, path=QUICK):
    sim = Simulation(load_scenario(path, over))
    sim.run()
    return sim, build_tree(sim)


def test_second_job_queues_until_the_first_frees_its_ultraserver():
    """Two jobs each wanting all 144 chips: the second waits (state 0) until the first finishes
    its 30 iterations (60 s at 2 s each), then takes the same devices."""
    jobs = [{"kind": "training", "name": "a", "devices": {"kind": "trn3"}, "iteration_time": "2 s",
             "iterations": 30},
            {"kind": "training", "name": "b", "devices": {"kind": "trn3"}, "iteration_time": "2 s",
             "start": "10 s"}]
    sim, tree = _run({"time": {"duration": "3 min"}, "workload": [], "jobs": jobs, "record": {"job": "1 s"}})
    state = tree["job"]["state"].to_series().unstack()
    assert (state["b"].iloc[10:59] == 0).all()          # queued while a runs
    assert (state["a"].iloc[59:] == 4).all()             # a done in its 60th second
    assert (state["b"].iloc[59:] >= 1).all()             # b placed on the freed devices at once
    assert sim.jobs.jobs[0].progress == pytest.approx(30.0)
    assert np.array_equal(np.sort(sim.jobs.jobs[0].devices), np.sort(sim.jobs.jobs[1].devices))


def test_gang_placement_takes_whole_ultraservers():
    """A 144-chip job on a hall of two UltraServers takes all chips of one UltraServer."""
    over = {"time": {"duration": "1 min"}, "workload": [],
            "halls": [{"name": "h", "rows": [{"name": "r", "racks": [
                {"name": "us", "template": "trn3-gen2-ultraserver", "count": 2, "cdu": "cdu-1"}]}]}],
            "jobs": [{"kind": "training", "name": "a", "devices": {"kind": "trn3", "count": 144},
                      "iteration_time": "2 s", "start": "0 s"}]}
    sim, _ = _run(over)
    systems = set(sim.system.rack_system[sim.system.device_rack[sim.jobs.jobs[0].devices]])
    assert len(systems) == 1


def test_replay_holds_each_sample(tmp_path):
    """Per-device utilisation replayed from CSV (long format) and Parquet: held between samples."""
    sim0 = Simulation(load_scenario(QUICK, {"time": {"duration": "1 min"}}))
    dev = sim0.system.device_name[0]
    table = pd.DataFrame({"time": [0.0, 20.0, 40.0], "device": [dev] * 3, "u": [0.1, 0.9, 0.5]})
    for suffix in (".csv", ".parquet"):
        path = tmp_path / f"u{suffix}"
        table.to_csv(path, index=False) if suffix == ".csv" else table.to_parquet(path)
        scen = tmp_path / "s.yaml"
        scen.write_text(QUICK.read_text())
        over = {"time": {"duration": "1 min"}, "workload": [{"replay": path.name}], "record": {"device": "1 s"}}
        _, tree = _run(over, scen)
        u = tree["device"]["u"].sel(device=dev).values
        np.testing.assert_array_equal(u[[0, 19, 20, 39, 40, 59]], [0.1, 0.1, 0.9, 0.9, 0.5, 0.5])
        assert float(tree["device"]["u"].isel(device=1).max()) == 0.0  # not in the file: idle


def test_replay_finer_than_the_step_is_averaged_not_sampled(tmp_path):
    """Samples every 0.5 s alternating 0 and 1 give a step mean of exactly 0.5 at a 1 s step (a
    point sample would give 0 or 1); a sample at 10.5 s splits step 10 half and half. A file that
    ends before the run is a warning (its last value is held)."""
    sim0 = Simulation(load_scenario(QUICK, {"time": {"duration": "1 min"}}))
    assert sim0.h_w == 1.0
    dev = sim0.system.device_name[0]
    t = np.arange(0.0, 10.0, 0.5)
    table = pd.DataFrame({"time": [*t, 10.5, 30.0], "device": [dev] * (len(t) + 2),
                          "u": [*(np.arange(len(t)) % 2), 0.8, 0.3]})
    path = tmp_path / "u.csv"
    table.to_csv(path, index=False)
    scen = tmp_path / "s.yaml"
    scen.write_text(QUICK.read_text())
    over = {"time": {"duration": "1 min"}, "workload": [{"replay": path.name}], "record": {"device": "1 s"}}
    _, tree = _run(over, scen)
    u = tree["device"]["u"].sel(device=dev).values
    np.testing.assert_allclose(u[:10], 0.5, rtol=0, atol=1e-12)
    # step 10 is [10, 11): 0.5 s of the last 0/1 sample (t = 9.5, u = 1) held, then 0.5 s of 0.8
    np.testing.assert_allclose(u[10], 0.5 * 1.0 + 0.5 * 0.8, atol=1e-12)
    np.testing.assert_allclose(u[11:30], 0.8, atol=1e-12)
    np.testing.assert_allclose(u[30:], 0.3, atol=1e-12)
    assert "replay file u.csv ends at 30 s of a 60 s run: its last values are held" in tree.attrs["warnings"]


def test_replay_time_that_is_not_seconds_is_one_line(tmp_path):
    from twin.scenario import ScenarioError

    sim0 = Simulation(load_scenario(QUICK, {"time": {"duration": "1 min"}}))
    dev = sim0.system.device_name[0]
    path = tmp_path / "u.csv"
    pd.DataFrame({"time": [0.0, "2026-01-01T00:00"], "device": [dev] * 2, "u": [0.1, 0.2]}).to_csv(path, index=False)
    scen = tmp_path / "s.yaml"
    scen.write_text(QUICK.read_text())
    with pytest.raises(ScenarioError, match=r"line 3: time must be a number of seconds >= 0"):
        Simulation(load_scenario(scen, {"workload": [{"replay": path.name}]}))


def test_ramp_limit_bounds_every_power_step():
    """A 100 W/s ramp limit: no chip's power changes by more than 10 W between 100 ms sub-steps."""
    jobs = [{"kind": "training", "name": "a", "devices": {"kind": "trn3"}, "iteration_time": "2 s",
             "smoothing": {"ramp": "100 W/s"}}]
    over = {"time": {"duration": "1 min"}, "workload_step": "100 ms", "workload": [], "jobs": jobs,
            "record": {"device": "100 ms"}}
    sim, tree = _run(over)
    p = tree["device"]["p"].isel(device=sim.jobs.jobs[0].devices).values
    assert np.abs(np.diff(p, axis=0)).max() <= 10.0 + 1e-6
    free = _run({**over, "jobs": [dict(jobs[0], smoothing=None)]})[1]["device"]["p"]
    assert np.abs(np.diff(free.isel(device=sim.jobs.jobs[0].devices).values, axis=0)).max() > 100.0
