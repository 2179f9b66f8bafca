"""Warnings about runs that pass without an error but almost certainly not as meant, and the
hottest device of each kind. Each warning is in the summary (stderr, one line each) and in the
dataset's root ``warnings`` attribute."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import twin
from tests.conftest import SCENARIOS, write_scenario
from twin.cli import app
from twin.export.dataset import build_tree, summary
from twin.report.diagnostics import plural, run_warnings
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

QUICK = yaml.safe_load((SCENARIOS / "quickstart.yaml").read_text())


def _quick(tmp_path, duration="2 min", **changes) -> dict:
    data = dict(QUICK, time=dict(QUICK["time"], duration=duration), **changes)
    data.pop("output")
    return data


def _run(tmp_path, data):
    sim = Simulation(load_scenario(write_scenario(tmp_path, data)))
    sim.run()
    return sim


TRAINING = {"kind": "training", "name": "pretrain", "devices": {"kind": "trn3", "count": 144},
            "iteration_time": "2 s", "compute_share": 0.7, "u_compute": 0.95, "u_collective": 0.2}


def test_quickstart_has_no_warnings_once_its_chips_start(tmp_path):
    """The quickstart's Trainium idle for the first 10 minutes: a shorter run says so."""
    sim = _run(tmp_path, _quick(tmp_path, duration="11 min"))
    assert run_warnings(sim) == []
    assert build_tree(sim).attrs["warnings"] == ""
    sim = _run(tmp_path, _quick(tmp_path, duration="5 min"))
    assert run_warnings(sim) == ["144 devices never used (utilisation 0 the whole run): 144 trn3"]


def test_job_queued_the_whole_run_is_a_warning(tmp_path):
    """The README's jobs example: a training gang takes the Graviton hosts of its sleds, so a cpu
    job asking for every Graviton4 never starts."""
    data = _quick(tmp_path, workload=[], jobs=[
        TRAINING, {"kind": "cpu", "name": "dataprep", "devices": {"kind": "graviton4"},
                   "profile": [{"at": "0 s", "u": 0.4}]}])
    sim = _run(tmp_path, data)
    want = "job dataprep never started: its devices were busy the whole run"
    assert run_warnings(sim) == [want]
    assert build_tree(sim).attrs["warnings"] == want
    result = CliRunner().invoke(app, ["run", str(write_scenario(tmp_path, data)), "-o", str(tmp_path / "r.nc")])
    assert result.exit_code == 0, result.output
    assert [ln for ln in result.stdout.splitlines() if ln.startswith("warning: ")] == [f"warning: {want}"]
    assert twin.load(tmp_path / "r.nc").attrs["warnings"] == want


def test_inference_serving_nothing(tmp_path):
    late = dict(TRAINING, start="1 h")
    serving = {"kind": "inference", "name": "chat", "devices": {"kind": "trn3", "count": 16},
               "replica_size": 16, "model": {"params": 70.0e9, "format": "fp8", "kv_bytes_per_token": 163840},
               "arrivals": {"rate": "1e-9 1/s"}}  # one request in ~30 years: none in two minutes
    sim = _run(tmp_path, _quick(tmp_path, workload=[{"select": {"kind": ["graviton4"]}, "u": 0.3}],
                                jobs=[late, serving]))
    got = run_warnings(sim)
    assert got[:1] == ["job chat served 0 requests"]  # the late job is not due within the run


def test_racks_no_workload_selects_and_devices_never_used(tmp_path):
    """Rules that name one rack leave the other idle (one warning naming it); its devices are not
    listed again. A rule that selects no Graviton leaves them unused."""
    rules = [{"select": {"rack": ["us1-a"], "kind": ["trn3"]}, "u": 0.5}]
    sim = _run(tmp_path, _quick(tmp_path, workload=rules))
    n_cpu = int(((sim.system.device_kind == "graviton4")
                 & (sim.system.rack_name[sim.system.device_rack] == "us1-a")).sum())
    assert run_warnings(sim) == [
        "1 rack no workload rule or job selects (idle the whole run): us1-b",
        f"{n_cpu} devices never used (utilisation 0 the whole run): {n_cpu} graviton4"]


def test_capacity_notes_added_racks_no_workload_selects(tmp_path):
    """Capacity search adds racks that only rules by device kind reach: with rules that name
    racks, the added racks idle and the answer says so."""
    from twin.sweep.capacity import capacity_search

    rules = [{"select": {"rack": ["us1-*"]}, "u": 0.5}]
    path = write_scenario(tmp_path, _quick(tmp_path, workload=rules))
    res = capacity_search(path, "gb300-nvl72", budget_power=1.2e6, duration="30 s", max_units=4)
    assert any(n.startswith("the added racks are selected by no workload rule or job") for n in res.notes), res.notes


def test_plural():
    assert [plural(n, "rack") for n in (0, 1, 2, 1152)] == ["0 racks", "1 rack", "2 racks", "1,152 racks"]
    assert plural(1, "failure") == "1 failure" and plural(3, "failure") == "3 failures"


def test_hottest_device_of_each_kind_is_the_recorded_maximum(tmp_path):
    """On a GB300 NVL72 rack the hottest die is a ConnectX-8 NIC: the summary says which device
    and kind, and each kind's maximum equals the maximum of its die temperature recorded every
    step (an independent path: the recorder's samples)."""
    data = yaml.safe_load((SCENARIOS / "gb300-rack.yaml").read_text())
    data["time"] = dict(data["time"], duration="5 min")
    data["record"] = {"device": data["time"].get("step", "1 s")}
    data.pop("output", None)
    sim = _run(tmp_path, data)
    kpi = summary(sim)
    dev = build_tree(sim)["device"].to_dataset()
    per_kind = dev["t_die"].max("time").groupby("kind").max()
    for kind, value in per_kind.to_series().items():
        assert kpi[f"t_die_max_{kind}_degC"] == pytest.approx(value, abs=1e-12)  # the same samples
    # Identical devices on identical plates (the sled's two ConnectX-8s) tie to within rounding,
    # which may differ in the last bit between the summary's reduction and the recorder's, so the
    # test asks that the named device is one whose recorded maximum is the hall's maximum.
    die_max = dev["t_die"].max("time")
    named = kpi["t_die_max_device"]
    assert float(die_max.sel(device=named)) == pytest.approx(float(die_max.max()), abs=1e-9)
    assert kpi["t_die_max_kind"] == dev["kind"].sel(device=named).item() == "connectx8"
    assert kpi["t_die_max_degC"] == pytest.approx(float(per_kind.max()), abs=1e-12)
    assert np.isclose(kpi["t_die_max_gb300_degC"], per_kind.sel(kind="gb300"))


def test_run_too_short_for_a_spectrum_has_no_band_share(tmp_path):
    """Three facility samples have no 0.1-20 Hz spectrum: the KPI is left out (not NaN), so a sweep
    keeps such a variant ("non-finite KPIs" would make it an error) and the summary table prints;
    four samples give a share in [0, 1] (the band of a 1 s series reaches its 0.5 Hz Nyquist limit)."""
    from twin.cli.summary import summary_table
    from twin.sweep.run import non_finite_kpis

    short = summary(_run(tmp_path, _quick(tmp_path, duration="3 s")))
    assert "peak_to_average" in short and "band_0p1_20Hz_share" not in short
    assert non_finite_kpis(short) == ""
    assert summary_table(short, None, False).row_count > 0
    four = summary(_run(tmp_path, _quick(tmp_path, duration="4 s")))
    assert 0.0 <= four["band_0p1_20Hz_share"] <= 1.0


def test_hottest_index_names_the_first_of_devices_tied_to_round_off():
    """Devices within a microkelvin of the maximum tie (round-off breaks such ties differently in
    different reductions): the first is named, NaN (no node, or not a candidate) is skipped, and a
    device a millikelvin hotter wins outright."""
    from twin.report.kpi import hottest_index

    assert hottest_index([np.nan, 80.0, 80.0 + 1e-9, 79.0]) == 1
    assert hottest_index([np.nan, 80.0, 80.0 + 1e-3, 79.0]) == 2
    assert hottest_index([np.nan, np.nan, 70.0]) == 2
