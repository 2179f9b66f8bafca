"""The Prometheus collector: names, units, labels, values, cardinality threshold, counters, DCGM."""

from __future__ import annotations

import re
from itertools import pairwise

import numpy as np
import pytest
from prometheus_client.openmetrics.exposition import (
    generate_latest as openmetrics_latest,
)
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as parse_openmetrics,
)

import twin
from tests.conftest import SCENARIOS
from tests.export.helpers import families, samples, scrape_text
from twin.export.prometheus import (
    COUNTERS,
    DCGM_LABELS,
    DEVICE_THRESHOLD,
    GROUP_LABELS,
    KIND_SUMMARIES,
    METRICS,
    UNIT_CONVERSION,
    TwinCollector,
    fine_level_enabled,
    make_registry,
)
from twin.scenario import load_scenario
from twin.sim.driver import Simulation
from twin.sim.variables import VARIABLES

#: Relative tolerance of sums compared with totals: float64 round-off over a few hundred terms.
SUM_RTOL = 1e-9


def _sim(name="quickstart.yaml", duration="700 s", **overrides):
    over = {"time": {"duration": duration}}
    over.update(overrides)
    return Simulation(load_scenario(SCENARIOS / name, over))


@pytest.fixture(scope="module")
def quick():
    """The quickstart after 700 s: past the idle start, into the training swings."""
    sim = _sim()
    sim.run()
    return sim


@pytest.fixture(scope="module")
def quick_scrape(quick):
    return scrape_text(quick)


# -- names and units -------------------------------------------------------------------------
def test_every_mapped_variable_exists_and_names_carry_base_units():
    names = list(METRICS.values())
    assert len(names) == len(set(names)), "a metric name is mapped twice"
    for (group, variable), name in METRICS.items():
        assert variable in VARIABLES[group], f"{name}: {group}.{variable} is not a recorded variable"
        assert re.fullmatch(r"twin_[a-z0-9_]+", name), name
        units = VARIABLES[group][variable][0]
        suffix = UNIT_CONVERSION[units][0]
        base = name.removesuffix("_total")
        assert base.endswith(suffix), f"{name} should end in {suffix} (units {units})"
        if units == "1" and base.endswith("_ratio"):
            assert "fraction" in VARIABLES[group][variable][1] or variable in ("u", "clock", "pue"), name


def test_design_names_are_published_with_their_labels(quick_scrape):
    s = samples(quick_scrape)
    for name in ("twin_it_power_watts", "twin_facility_power_watts", "twin_pue_ratio", "twin_simulated_time_seconds",
                 "twin_lag_seconds"):
        assert len(s[name]) == 1 and s[name][0][0] == {}, name
    assert {"rack", "row", "hall"} == set(s["twin_rack_power_watts"][0][0])
    assert {"rack", "row", "hall"} == set(s["twin_rack_energy_joules_total"][0][0])
    for name in ("twin_device_power_watts", "twin_device_temperature_celsius", "twin_device_clock_ratio"):
        assert {"rack", "sled", "device", "kind"} == set(s[name][0][0]), name
    assert s["twin_cdu_supply_temperature_celsius"] == [({"cdu": "cdu-1"}, 34.0)]
    (labels, value), = s["twin_build_info"]
    assert value == 1.0 and labels["version"] == twin.__version__ and labels["scenario"] == "quickstart"


def test_types_help_and_units_in_help(quick_scrape):
    fams = families(quick_scrape)
    for (group, variable), name in METRICS.items():
        if name not in fams:
            continue
        assert fams[name].type == "gauge"
        unit = UNIT_CONVERSION[VARIABLES[group][variable][0]][2]
        assert fams[name].documentation.endswith(f"[{unit}]."), fams[name].documentation
    for c in COUNTERS:
        assert fams[c.name].type == "counter", c.name
    for name in ("twin_simulated_time_seconds", "twin_lag_seconds", "twin_build_info"):
        assert fams[name].type == "gauge"


def test_openmetrics_exposition_parses_strictly(quick):
    """The OpenMetrics flavour (what Prometheus asks for) passes the strict OpenMetrics parser."""
    text = openmetrics_latest(make_registry(quick)).decode()
    assert text.endswith("# EOF\n")
    names = {f.name for f in parse_openmetrics(text)}
    assert {"twin_rack_energy_joules", "twin_it_power_watts", "twin_device_temperature_celsius"} <= names


# -- values -----------------------------------------------------------------------------------------
def test_values_are_the_latest_recorded_state_in_base_units(quick, quick_scrape):
    s = samples(quick_scrape)
    latest = quick.recorder.latest
    assert s["twin_it_power_watts"][0][1] == latest["facility"]["p_it"][0]
    assert s["twin_pue_ratio"][0][1] == latest["facility"]["pue"][0]
    assert s["twin_simulated_time_seconds"][0][1] == 700.0
    start = quick.scenario.time.start.replace(tzinfo=__import__("datetime").timezone.utc).timestamp()
    assert s["twin_simulated_timestamp_seconds"][0][1] == start + 700.0
    # kg/s in the dataset → g/s in Prometheus (base unit of mass is the gram).
    assert s["twin_cdu_flow_grams_per_second"][0][1] == pytest.approx(1e3 * latest["cdu"]["flow"][0], rel=1e-15)
    racks = {lab["rack"]: v for lab, v in s["twin_rack_power_watts"]}
    assert racks == dict(zip(quick.system.rack_name, latest["rack"]["p_ac"]))
    # Independent closure: IT power is the sum of rack AC power.
    assert sum(racks.values()) == pytest.approx(s["twin_it_power_watts"][0][1], rel=SUM_RTOL)
    dev = {lab["device"]: v for lab, v in s["twin_device_temperature_celsius"]}
    assert len(dev) == quick.system.n_devices
    assert dev["us1-a/s00/trn3-0"] == latest["device"]["t_die"][0]


def test_counters_match_the_simulation_and_close_on_it_energy(quick, quick_scrape):
    s = samples(quick_scrape)
    energy = {lab["rack"]: v for lab, v in s["twin_rack_energy_joules_total"]}
    assert energy == dict(zip(quick.system.rack_name, quick.rack_energy))
    it = s["twin_it_energy_joules_total"][0][1]
    assert it == quick.totals.e_ac
    assert sum(energy.values()) == pytest.approx(it, rel=SUM_RTOL)
    assert s["twin_facility_energy_joules_total"][0][1] == pytest.approx(it + quick.totals.e_cooling, rel=SUM_RTOL)


def test_kind_summaries_reduce_the_device_level(quick, quick_scrape):
    s = samples(quick_scrape)
    dev = quick.recorder.latest["device"]
    kinds = quick.system.device_kind.astype(str)
    n = {lab["kind"]: v for lab, v in s["twin_devices"]}
    assert n == {"trn3": 144, "graviton4": 72, "efa": 72, "neuronswitch": 2} or sum(n.values()) == kinds.size
    power = {lab["kind"]: v for lab, v in s["twin_devices_power_watts"]}
    for kind in set(kinds):
        assert power[kind] == pytest.approx(dev["p"][kinds == kind].sum(), rel=SUM_RTOL)
    hottest = {lab["kind"]: v for lab, v in s["twin_device_temperature_max_celsius"]}
    assert hottest["trn3"] == dev["t_die"][kinds == "trn3"].max()
    assert {k.name for k in KIND_SUMMARIES} <= set(s)


def test_counters_are_monotonic_while_running():
    """Scraped every 25 steps during a run: every counter series never decreases, and grows."""
    sim = _sim(duration="400 s")
    collector = TwinCollector(sim)
    seen: list[dict] = []

    def pace(t):
        if int(t) % 25 == 0:
            text = scrape_text(collector.source)
            seen.append({(name, tuple(sorted(lab.items()))): v
                         for name, series in samples(text).items() if name.endswith("_total")
                         for lab, v in series})

    sim.run(pace=pace)
    assert len(seen) == 16
    for before, after in pairwise(seen):
        assert before.keys() == after.keys()
        for key in before:
            assert after[key] >= before[key], key
    assert all(seen[-1][k] > seen[0][k] for k in seen[0])


def test_unrecorded_variables_and_groups_are_skipped():
    sim = _sim(duration="30 s", record={"facility": "1 s", "cdu": "off", "rack": "1 s", "device": "off",
                                        "variables": {"rack": ["p_ac"]}})
    sim.run()
    s = samples(scrape_text(sim))
    assert "twin_rack_power_watts" in s and "twin_rack_dc_power_watts" not in s
    assert not any(name.startswith("twin_cdu_") for name in s)  # cdu not recorded
    assert not any(name.startswith("twin_device_") for name in s)  # device level off
    assert "twin_devices_power_watts" not in s and "twin_devices" in s


def test_every_recorded_facility_variable_has_a_metric():
    """Facility-level variables are one series each: all of them are published (a variable
    declared later without a METRICS line fails here, not silently on a dashboard)."""
    assert set(VARIABLES["facility"]) <= {v for g, v in METRICS if g == "facility"}


def test_adding_a_metric_is_one_mapping_line(quick, monkeypatch):
    """A new variable (as later issues add) becomes a metric through METRICS alone."""
    monkeypatch.setitem(VARIABLES["facility"], "t_dew_point", ("degC", "outdoor dew-point temperature"))
    monkeypatch.setitem(METRICS, ("facility", "t_dew_point"), "twin_outdoor_dew_point_temperature_celsius")
    assert "twin_outdoor_dew_point_temperature_celsius" not in samples(scrape_text(quick))  # not recorded
    recorded = type(quick.recorder).latest.fget

    def latest(rec):
        out = recorded(rec)
        out["facility"] = dict(out["facility"], t_dew_point=np.array([21.5]))
        return out

    monkeypatch.setattr(type(quick.recorder), "latest", property(latest))
    fam = families(scrape_text(quick))["twin_outdoor_dew_point_temperature_celsius"]
    assert fam.documentation == "Outdoor dew-point temperature [degC]."
    assert [(s.labels, s.value) for s in fam.samples] == [({}, 21.5)]


# -- cardinality -------------------------------------------------------------------------------------
def test_threshold_rule():
    assert DEVICE_THRESHOLD == 2000
    assert fine_level_enabled(1999, None) and not fine_level_enabled(2000, None)
    assert fine_level_enabled(100_000, True) and not fine_level_enabled(10, False)


def _fine_series(text):
    return sum(len(v) for k, v in samples(text).items() if k.startswith(("twin_device_", "twin_sled_"))
               and not k.endswith(("_max_celsius", "_mean_ratio")))


def test_device_series_follow_the_threshold_and_the_flag(quick):
    n = quick.system.n_devices
    recorded = quick.state.recorded("device")
    # every device has a series of each recorded device metric but the memory temperature, which
    # only the 144 Trainium3 with an HBM node have
    n_hbm = int(np.isfinite(quick.racks.t_hbm).sum())
    assert "t_hbm" in recorded and n_hbm == 144
    n_series = n * sum(1 for g, v in METRICS if g == "device" and v in recorded and v != "t_hbm") + n_hbm
    assert _fine_series(scrape_text(quick)) == n_series  # 290 < 2,000: on by default
    assert _fine_series(scrape_text(quick, device_threshold=n)) == 0  # at the threshold: off
    assert _fine_series(scrape_text(quick, device_threshold=n + 1)) == n_series
    assert _fine_series(scrape_text(quick, devices=False)) == 0
    assert _fine_series(scrape_text(quick, devices=True, device_threshold=1)) == n_series
    # Without device series the whole scrape stays small; per-kind summaries remain.
    small = samples(scrape_text(quick, devices=False))
    assert sum(len(v) for v in small.values()) < 150
    assert len(small["twin_device_temperature_max_celsius"]) == 4


def test_sled_series_are_gated_like_devices():
    sim = _sim(duration="20 s", record={"facility": "1 s", "rack": "1 s", "sled": "1 s", "device": "1 s"})
    sim.run()
    n = sim.system.sled_name.size
    s = samples(scrape_text(sim))
    assert len(s["twin_sled_power_watts"]) == n and set(s["twin_sled_power_watts"][0][0]) == set(GROUP_LABELS["sled"])
    assert "twin_sled_power_watts" not in samples(scrape_text(sim, device_threshold=n))


# -- DCGM names --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gb300():
    sim = _sim("gb300-rack.yaml", duration="60 s")
    sim.run()
    return sim


def test_dcgm_series_for_nvidia_gpus_only(gb300):
    s = samples(scrape_text(gb300, dcgm=True))
    kinds = gb300.system.device_kind.astype(str)
    n_gpu = int((kinds == "gb300").sum())
    power = s["DCGM_FI_DEV_POWER_USAGE"]
    assert len(power) == n_gpu == 72
    assert set(power[0][0]) == set(DCGM_LABELS)
    assert len({lab["UUID"] for lab, _ in power}) == n_gpu
    assert {lab["modelName"] for lab, _ in power} == {"NVIDIA GB300"}
    # Same numbers as the twin's own names, translated at the edge.
    twin_power = {lab["device"]: v for lab, v in s["twin_device_power_watts"]}
    first_gpu = gb300.system.device_name[np.flatnonzero(kinds == "gb300")[0]]
    sled = first_gpu.rsplit("/", 1)[0]
    dcgm = {(lab["Hostname"], lab["gpu"]): v for lab, v in power}
    assert dcgm[(sled, "0")] == twin_power[first_gpu]
    clock = {(lab["Hostname"], lab["gpu"]): v for lab, v in s["DCGM_FI_DEV_SM_CLOCK"]}
    dev_clock = {lab["device"]: v for lab, v in s["twin_device_clock_ratio"]}
    assert clock[(sled, "0")] == dev_clock[first_gpu] * 1965.0  # catalogue max_clock of gb300 [MHz]
    util = [v for _, v in s["DCGM_FI_DEV_GPU_UTIL"]]
    assert all(0 <= v <= 100 for v in util)


def test_dcgm_off_by_default_and_absent_without_gpus(gb300, quick):
    assert not any(k.startswith("DCGM_") for k in samples(scrape_text(gb300)))
    assert not any(k.startswith("DCGM_") for k in samples(scrape_text(quick, dcgm=True)))  # Trainium: no GPUs
    assert not any(k.startswith("DCGM_") for k in samples(scrape_text(gb300, dcgm=True, devices=False)))


# -- jobs and air-cooled racks ---------------------------------------------------------------------
def test_job_series_use_job_name_not_the_reserved_job_label():
    """`job` is Prometheus' scrape-job label; the twin's job coordinate is exported as job_name."""
    sim = _sim("trn2-training.yaml", duration="20 s")
    sim.run()
    fams = families(scrape_text(sim))
    assert fams["twin_job_tokens"].type == "counter"
    for name in ("twin_job_progress_iterations", "twin_job_throughput_per_second", "twin_job_power_watts",
                 "twin_job_state", "twin_job_tokens"):
        (sample,) = fams[name].samples
        assert sample.labels == {"job_name": "train", "job_kind": "training"}, name
    (tokens,) = fams["twin_job_tokens"].samples
    assert tokens.value == sim.recorder.latest["job"]["tokens"][0] > 0


def test_air_cooled_racks_have_no_coolant_samples():
    """NaN (no liquid loop) is left out rather than exported as NaN."""
    sim = _sim("trn2-training.yaml", duration="5 s")
    sim.run()
    assert np.isnan(sim.recorder.latest["rack"]["t_coolant_supply"]).all()
    s = samples(scrape_text(sim))
    assert "twin_rack_coolant_supply_temperature_celsius" not in s
    assert len(s["twin_rack_air_outlet_temperature_celsius"]) == sim.system.n_racks
