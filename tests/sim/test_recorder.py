"""The recorder: categorical variables keep the value at the end of the interval; the live view
sees the first interval's mean so far before it ends."""

from __future__ import annotations

import numpy as np
import yaml

from tests.conftest import SCENARIOS, write_scenario
from twin.export.dataset import build_tree
from twin.export.prometheus import make_registry
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

QUICK = yaml.safe_load((SCENARIOS / "quickstart.yaml").read_text())
JOB = {"kind": "training", "name": "pretrain", "devices": {"kind": "trn3", "count": 144},
       "iteration_time": "2 s", "compute_share": 0.7, "u_compute": 0.95, "u_collective": 0.2,
       "checkpoint": {"interval": "60 s", "duration": "25 s"}}


def _sim(tmp_path, record, duration="4 min", name="s.yaml"):
    data = dict(QUICK, time=dict(QUICK["time"], duration=duration), workload=[], jobs=[JOB], record=record)
    data.pop("output")
    return Simulation(load_scenario(write_scenario(tmp_path, data, name)))


def test_job_state_is_the_state_at_the_end_of_each_interval(tmp_path):
    """Recorded every 10 s, a job's state is the state of the interval's last step (recorded
    every step as the reference), never a mean of two states such as 1.5."""
    every_step = _sim(tmp_path, {"job": "1 s"}, name="a.yaml")
    every_step.run()
    coarse = _sim(tmp_path, {"job": "10 s"}, name="b.yaml")
    coarse.run()
    fine = build_tree(every_step)["job"]["state"].values[:, 0]
    got = build_tree(coarse)["job"]["state"].values[:, 0]
    assert set(np.unique(fine)) == {1.0, 2.0}  # running and checkpointing both happen
    np.testing.assert_array_equal(got, fine[9::10])
    # 25 s checkpoints every 60 s: some 10 s intervals hold both states, and their sample is one of them
    mixed = [k for k in range(got.size) if len(set(fine[10 * k: 10 * k + 10])) > 1]
    assert mixed and set(got[mixed]) <= {1.0, 2.0}
    attrs = build_tree(coarse)["job"]["state"].attrs
    from twin.workload.jobs import STATE_NAMES

    assert attrs["flag_meanings"].split()[:5] == ["queued", "running", "checkpoint", "restarting", "done"]
    assert list(attrs["flag_values"]) == sorted(STATE_NAMES) and len(STATE_NAMES) == len(attrs["flag_meanings"].split())


def test_live_view_has_device_series_before_the_first_interval_ends(tmp_path):
    """Devices recorded every 10 minutes: after 30 s the exporter already serves device and
    per-kind series (the mean of the interval so far)."""
    sim = _sim(tmp_path, {"device": "10 min", "rack": "1 s"}, duration="20 min")

    class Enough(Exception):
        pass

    def pace(t):
        if t >= 30:
            raise Enough

    try:
        sim.run(pace=pace)
    except Enough:
        pass
    from prometheus_client import generate_latest

    text = generate_latest(make_registry(sim)).decode()
    assert "twin_device_temperature_celsius{" in text
    assert 'twin_device_temperature_max_celsius{kind="trn3"}' in text
    latest = sim.recorder.latest["device"]
    assert np.all(np.isfinite(latest["t_die"])) and latest["t_die"].max() > 30.0
