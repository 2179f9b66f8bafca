"""OpenMetrics with timestamps from a result tree: strict format, values, names shared with live.

The promtool backfill of the same file is in test_prometheus_integration.py.
"""

from __future__ import annotations

import io
from itertools import pairwise

import numpy as np
import pytest
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as parse_openmetrics,
)

from tests.conftest import SCENARIOS
from tests.export.helpers import families, scrape_text
from twin.export.dataset import build_tree
from twin.export.openmetrics import _Writer, write_openmetrics
from twin.scenario import load_scenario
from twin.sim.driver import Simulation


@pytest.fixture(scope="module")
def quick_run():
    sim = Simulation(load_scenario(SCENARIOS / "quickstart.yaml", {"time": {"duration": "60 s"}}))
    sim.run()
    return sim, build_tree(sim)


@pytest.fixture(scope="module")
def om_text(quick_run, tmp_path_factory):
    path = write_openmetrics(quick_run[1], tmp_path_factory.mktemp("om") / "sub" / "quick.om")
    assert not list(path.parent.glob(".*.part")), "temporary file left behind"
    return path.read_text()


def _series(fams, name):
    """sample name → {labels tuple: [(timestamp s, value)]}."""
    out: dict = {}
    for fam in fams:
        for s in fam.samples:
            if s.name == name:
                ts = s.timestamp.sec + s.timestamp.nsec / 1e9
                out.setdefault(tuple(sorted(s.labels.items())), []).append((ts, s.value))
    return out


def test_strict_openmetrics_with_eof(om_text):
    assert om_text.endswith("# EOF\n")
    fams = list(parse_openmetrics(om_text))  # the strict parser: raises on any format error
    assert len({f.name for f in fams}) == len(fams), "a family appears twice (interleaved)"


def test_samples_are_the_recorded_values_at_the_recorded_times(quick_run, om_text):
    sim, tree = quick_run
    fams = list(parse_openmetrics(om_text))
    fac = tree["facility"].to_dataset()
    start = fac["time"].values[0].astype("datetime64[ms]").astype(np.int64) / 1e3
    (points,) = _series(fams, "twin_it_power_watts").values()
    assert [t for t, _ in points] == [start + i for i in range(60)]
    assert [v for _, v in points] == fac["p_it"].values.tolist()
    temps = _series(fams, "twin_device_temperature_celsius")
    assert len(temps) == sim.system.n_devices
    dev = tree["device"].to_dataset()
    key = (("device", "us1-a/s00/trn3-0"), ("kind", "trn3"), ("rack", "us1-a"), ("sled", "us1-a/s00"))
    assert [v for _, v in temps[key]] == dev["t_die"].sel(device="us1-a/s00/trn3-0").values.tolist()
    assert [t for t, _ in temps[key]] == [start + 10 * i for i in range(6)]


def test_energy_counter_integrates_power_and_closes_on_the_run(quick_run, om_text):
    sim, tree = quick_run
    fams = {f.name: f for f in parse_openmetrics(om_text)}
    assert fams["twin_rack_energy_joules"].type == "counter"
    rack = tree["rack"].to_dataset()
    energy = _series(fams.values(), "twin_rack_energy_joules_total")
    for name in sim.system.rack_name:
        key = next(k for k in energy if ("rack", name) in k)
        values = [v for _, v in energy[key]]
        assert values[0] == 0.0 and all(b >= a for a, b in pairwise(values))
        p = rack["p_ac"].sel(rack=name).values
        times = [t for t, _ in energy[key]]
        assert len(values) == p.size + 1 and times[-1] - times[-2] == 1.0  # one more: the run's end
        # At the start of each interval: the earlier intervals; at the end: the run's total.
        assert values[-2] == pytest.approx(p[:-1].sum() * 1.0, rel=1e-12)
        final = sim.rack_energy[list(sim.system.rack_name).index(name)]
        assert values[-1] == pytest.approx(final, rel=1e-9)  # float sums in another order


def test_same_names_as_the_live_exporter(quick_run, om_text):
    live = families(scrape_text(quick_run[0]))
    offline = {f.name: f for f in parse_openmetrics(om_text)}
    assert set(offline) == set(live)
    for name, fam in offline.items():
        assert (fam.type, fam.documentation) == (live[name].type, live[name].documentation), name
    (build,) = offline["twin_build_info"].samples[:1]
    assert build.labels == live["twin_build_info"].samples[0].labels
    clock = [s.value for s in offline["twin_simulated_time_seconds"].samples]
    assert clock == [float(i) for i in range(60)]


def test_device_series_follow_the_same_threshold(quick_run, tmp_path):
    text = write_openmetrics(quick_run[1], tmp_path / "q.om", devices=False).read_text()
    names = {f.name for f in parse_openmetrics(text)}
    assert not any(n.startswith("twin_device_") and not n.endswith(("_max_celsius", "_mean_ratio")) for n in names)
    assert "twin_device_temperature_max_celsius" in names and "twin_rack_power_watts" in names
    small = write_openmetrics(quick_run[1], tmp_path / "t.om", device_threshold=100).read_text()
    assert "twin_device_power_watts{" not in small


def test_job_counters_and_labels(tmp_path):
    sim = Simulation(load_scenario(SCENARIOS / "trn3-training.yaml", {"time": {"duration": "30 s"}}))
    sim.run()
    text = write_openmetrics(build_tree(sim), tmp_path / "j.om").read_text()
    fams = {f.name: f for f in parse_openmetrics(text)}
    assert fams["twin_job_tokens"].type == "counter"
    tokens = _series(fams.values(), "twin_job_tokens_total")
    assert list(tokens) == [(("job_kind", "training"), ("job_name", "train"))]
    values = [v for _, v in next(iter(tokens.values()))]
    assert values[-1] > 0 and all(b >= a for a, b in pairwise(values))


def test_non_finite_values_are_left_out():
    buf = io.StringIO()
    _Writer(buf).series("x", "", np.array([1.0, 2.0, 3.0]), np.array([1.0, np.nan, np.inf]))
    assert buf.getvalue() == "x 1.0 1.000\n"
    buf = io.StringIO()
    _Writer(buf).series("x", "", np.array([1.0]), np.array([np.nan]))
    assert buf.getvalue() == ""
