"""Device-level recording is off by default above 10,000 devices, on when the scenario asks."""

from __future__ import annotations

import yaml

from tests.conftest import SCENARIOS
from twin.scenario import load_scenario
from twin.sim.driver import DEVICE_RECORD_LIMIT, Simulation


def _big(tmp_path, record, count=35):
    data = yaml.safe_load((SCENARIOS / "quickstart.yaml").read_text())
    data["halls"][0]["rows"][0]["racks"][0]["count"] = count  # UltraServers of 290 devices
    data["record"] = record
    data["time"]["duration"] = "10 s"
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_device_recording_off_by_default_above_limit(tmp_path):
    sim = Simulation(load_scenario(_big(tmp_path, {"facility": "1 s", "rack": "10 s"})))
    assert sim.system.n_devices > DEVICE_RECORD_LIMIT
    assert "device" not in sim.recorder.groups and "rack" in sim.recorder.groups


def test_device_recording_when_asked(tmp_path):
    sim = Simulation(load_scenario(_big(tmp_path, {"device": "1 min"})))
    assert sim.recorder.groups["device"].every == 60


def test_small_system_records_devices_by_default(tmp_path):
    sim = Simulation(load_scenario(_big(tmp_path, {"facility": "1 s"}, count=1)))
    assert sim.system.n_devices <= DEVICE_RECORD_LIMIT
    assert sim.recorder.groups["device"].every == 10  # the default interval
