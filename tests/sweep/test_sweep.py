"""Sweeps: spec expansion, file:line errors, a 2-worker Dask run equal to running each variant
alone, a failing variant recorded while the others complete, reruns skip finished variants."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import twin
from tests.conftest import SCENARIOS
from twin.cli import app
from twin.export.dataset import build_tree, summary
from twin.scenario import ScenarioError, load_scenario
from twin.sim.driver import Simulation
from twin.sweep.run import run_sweep, scenario_overrides, variants_dir
from twin.sweep.spec import load_sweep

QUICKSTART = SCENARIOS / "quickstart.yaml"

#: Quickstart shortened to 3 minutes with the training swing from the first second.
SHORT = {
    "workload.0.profile": [{"at": "0 s", "swing": {"high": 0.95, "low": 0.25, "period": "10 s", "duty": 0.7}}],
    "record.device": "30 s",
}


def write_sweep(tmp_path, parameters, name="sweep.yaml", **extra):
    data = {"base": str(QUICKSTART), "duration": "3 min", "set": SHORT, "parameters": parameters, **extra}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# -- the spec --------------------------------------------------------------------------------
def test_grid_zip_random_and_labels_expand(tmp_path):
    path = write_sweep(tmp_path, [
        {"zip": [{"path": "site.facility_water_supply", "grid": {"start": "27 degC", "stop": "33 degC", "step": "3 K"}},
                 {"path": "cdus.0.supply_temperature", "values": ["31 degC", "34 degC", "37 degC"]}]},
        {"path": "seed", "random": {"distribution": "integers", "low": 0, "high": 1000, "n": 2, "seed": 7}},
        {"name": "climate", "values": ["Leesburg", "Phoenix"]},
    ])
    plan = load_sweep(path)
    assert len(plan.variants) == 3 * 2 * 2
    first = plan.variants[0]
    assert first.overrides["site.facility_water_supply"] == "27 degC"
    assert first.overrides["cdus.0.supply_temperature"] == "31 degC"
    assert first.overrides["time.duration"] == "3 min"
    assert "climate" not in str(first.overrides)  # a label only
    values, attrs = plan.coords["facility_water_supply"]
    assert sorted(set(values)) == [27.0, 30.0, 33.0] and attrs["units"] == "degC"
    # Seeded draws are reproducible; label-only variants share one run (one key).
    assert load_sweep(path).variants[5].overrides["seed"] == plan.variants[5].overrides["seed"]
    assert len({v.key for v in plan.variants}) == 6
    # --duration overrides the file, and changes the keys.
    longer = load_sweep(path, duration="4 min")
    assert longer.variants[0].overrides["time.duration"] == "4 min"
    assert longer.variants[0].key != first.key


@pytest.mark.parametrize("parameters, where, message, line_text", [
    ([{"path": "cdus.3.supply_temperature", "values": ["30 degC"]}], "parameters[0].path",
     "index 3 out of range: 'cdus' has 1 entries", "- path: cdus.3.supply_temperature"),
    ([{"path": "site.facility_water", "values": ["30 degC"]}], "parameters[0].path",
     "site.facility_water: unknown key 'facility_water' (allowed: facility_water_supply, cold_aisle) "
     "in quickstart.yaml", "- path: site.facility_water"),
    ([{"zip": [{"path": "seed", "values": [1, 2]}, {"path": "site.cold_aisle", "values": ["25 degC"]}]}],
     "parameters[0].zip", "zipped parameters need equal numbers of values (got 2, 1)", "- zip:"),
    ([{"path": "seed", "values": [1], "grid": {"start": 1, "stop": 2, "step": 1}}], "parameters[0]",
     "give exactly one of 'values', 'grid' or 'random'", "- path: seed"),
    ([{"path": "seed", "random": {"distribution": "normal", "mean": 1, "n": 3}}], "parameters[0].random",
     "'normal' needs mean and std (missing: std)", "random:"),
])
def test_bad_sweep_file_is_one_line_with_exit_2(tmp_path, parameters, where, message, line_text):
    path = write_sweep(tmp_path, parameters)
    result = CliRunner().invoke(app, ["sweep", str(path), "-o", str(tmp_path / "o.zarr"), "--workers", "0"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"{path}:")
    assert f": {where}: " in lines[0] and message in lines[0], lines[0]
    line_no = int(lines[0].split(":")[1])
    assert path.read_text().splitlines()[line_no - 1].strip() == line_text
    assert not (tmp_path / "o.zarr").exists()


def test_unknown_top_level_key_and_missing_base(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("base: nowhere.yaml\nparameters:\n  - {path: seed, values: [1]}\n")
    with pytest.raises(ScenarioError, match=r"s\.yaml:1: base: base scenario not found"):
        load_sweep(path)
    path.write_text(f"base: {QUICKSTART}\nparameter: []\n")
    with pytest.raises(ScenarioError, match=r"s\.yaml:2: parameter: unknown key 'parameter'"):
        load_sweep(path)


# -- running -----------------------------------------------------------------------------------
def _run_alone(plan, variant):
    """The variant run in this process, as `twin run` would."""
    overrides, _ = scenario_overrides(plan, variant)
    sim = Simulation(load_scenario(plan.base, overrides))
    sim.run()
    return summary(sim), build_tree(sim)


def test_sweep_on_two_workers_matches_single_runs_and_reruns_skip(tmp_path):
    """15 variants (3 facility-water × 5 CDU setpoints, one setpoint not a temperature) on a
    2-worker LocalCluster: 12 complete with the KPIs of running them alone, exactly; the 3 bad
    ones carry their file:line error; a rerun runs nothing."""
    path = write_sweep(tmp_path, [
        {"path": "site.facility_water_supply", "values": ["26 degC", "30 degC", "34 degC"]},
        {"path": "cdus.0.supply_temperature", "values": ["33 degC", "36 degC", "39 degC", "42 degC", "40 kW"]},
    ], kpis=["pue", "t_die_max_degC"])
    plan = load_sweep(path)
    out = tmp_path / "out" / "sweep.zarr"
    res = run_sweep(plan, out, workers=2)
    assert (res.n_variants, res.n_run, res.n_failed) == (15, 12, 3)

    tree = twin.load(out)
    root = tree.to_dataset()
    assert root.sizes["scenario"] == 15
    assert list(root["status"].values).count("ok") == 12
    bad = [i for i, v in enumerate(plan.variants) if v.labels["supply_temperature"] == "40 kW"]
    for i in bad:
        e = str(root["error"].values[i])
        assert e.startswith(f"{QUICKSTART}:") and "cdus[0].supply_temperature" in e and "'40 kW'" in e, e
        assert math.isnan(float(root["pue"].values[i]))
    good = [i for i in range(15) if i not in bad]
    assert all(root["error"].values[i] == "" for i in good)

    # Parameters are coordinates (SI floats with units); KPIs are variables along `scenario`.
    assert root["facility_water_supply"].attrs["units"] == "degC"
    assert sorted(set(root["facility_water_supply"].values)) == [26.0, 30.0, 34.0]
    for name in ("pue", "energy_it_J", "p_facility_peak_W", "t_die_max_degC"):
        assert root[name].dims == ("scenario",)

    # Same results as running a variant alone (in this process), bit for bit.
    for i in (good[0], good[-1]):
        kpi, alone = _run_alone(plan, plan.variants[i])
        for name, value in kpi.items():
            if isinstance(value, str):  # names (the hottest device, a job's kind) are not sweep variables
                continue
            assert float(root[name].values[i]) == pytest.approx(value, rel=0, abs=0), name
        fac = tree["facility"].to_dataset()
        np.testing.assert_array_equal(fac["p_facility"].values[i], alone["facility"]["p_facility"].values)
        np.testing.assert_array_equal(fac["time"].values, alone["facility"]["time"].values)

    # twin.kpis: one row per variant, parameters first.
    df = twin.kpis(tree)
    assert len(df) == 15
    assert list(df.columns[:2]) == ["facility_water_supply", "supply_temperature"]
    assert df.loc[good[0], "pue"] == root["pue"].values[good[0]]

    # The per-variant result is a full run result (scenario text of the variant, device group).
    one = twin.load(variants_dir(out) / f"{plan.variants[good[0]].key}.zarr")
    assert "device" in one.children
    assert "supply_temperature: 33 degC" in one.attrs["scenario"]

    # Rerun: nothing runs again (no cluster needed), same combined result.
    stamps = {p.name: p.stat().st_mtime_ns for p in variants_dir(out).iterdir()}
    again = run_sweep(load_sweep(path), out, workers=2)
    assert (again.n_run, again.n_skipped, again.n_failed) == (0, 12, 3)
    assert {p.name: p.stat().st_mtime_ns for p in variants_dir(out).iterdir()} == stamps
    np.testing.assert_array_equal(twin.load(out).to_dataset()["pue"].values, root["pue"].values)


def test_extended_sweep_runs_only_new_variants_and_cli(tmp_path):
    """Adding a value runs only the new variants (in-process with --workers 0); the CLI prints
    the variants table and the failing variant's error line."""
    out = tmp_path / "s.zarr"
    first = write_sweep(tmp_path, [{"path": "site.facility_water_supply", "values": ["26 degC", "30 degC"]}])
    runner = CliRunner()
    r1 = runner.invoke(app, ["sweep", str(first), "-o", str(out), "--workers", "0"])
    assert r1.exit_code == 0, r1.output
    assert "2 variants: 2 runs, 0 already done, 0 failed" in r1.output
    second = write_sweep(tmp_path, [{"path": "site.facility_water_supply",
                                     "values": ["26 degC", "30 degC", "34 degC", "hot"]}])
    r2 = runner.invoke(app, ["sweep", str(second), "-o", str(out), "--workers", "0"])
    assert r2.exit_code == 1, r2.output  # a variant failed: the exit code says so
    assert "4 variants: 1 runs, 2 already done, 1 failed" in r2.output
    assert "variant 3: " in r2.output and "site.facility_water_supply" in r2.output
    assert len(list(variants_dir(out).glob("*.zarr"))) == 3
    assert twin.kpis(out)["status"].tolist() == ["ok", "ok", "ok", "error"]


@pytest.mark.slow
def test_bundled_facility_water_sweep_runs(tmp_path):
    """scenarios/sweep-facility-water.yaml: 5 facility-water setpoints × 3 climates (the plant's
    EPW weather), every variant runs (here for 6 hourly steps, in this process)."""
    plan = load_sweep(SCENARIOS / "sweep-facility-water.yaml", duration="6 h")
    assert len(plan.variants) == 15 and len({v.key for v in plan.variants}) == 15
    assert sorted(set(plan.coords["climate"][0])) == ["Leesburg", "Phoenix", "Seattle"]
    assert sorted(set(plan.coords["facility_water_supply"][0])) == [27.0, 32.0, 37.0, 40.0, 45.0]
    assert plan.variants[1].overrides["plant.weather.file"] == "Phoenix"
    res = run_sweep(plan, tmp_path / "fw.zarr", workers=0)
    assert res.n_failed == 0, res.errors
    df = twin.kpis(res.tree)
    assert (df["pue"] > 1.0).all()
    # Hotter water, hotter dies (leakage): the same in every climate.
    hottest = df.groupby("facility_water_supply")["t_die_max_degC"].max()
    assert hottest.is_monotonic_increasing


def test_tune_malloc_applies_only_under_dask_env(monkeypatch):
    """Workers started by a Dask nanny carry MALLOC_TRIM_THRESHOLD_; the tasks then set fixed
    glibc thresholds (a 4x speed-up on large runs). Without the variable nothing is changed."""
    import sys

    from twin.sweep import run

    monkeypatch.setattr(run, "_malloc_tuned", False)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    assert run.tune_malloc() is False
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    assert run.tune_malloc() is sys.platform.startswith("linux")


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a simulated year: ~40 s of CPU, minutes more on a loaded machine
@pytest.mark.parametrize("fw", [27.0, 32.0, 37.0, 40.0, 45.0])
def test_readme_facility_water_sweep_is_this_sweep(fw):
    """The README's worked example (annual PUE against facility-water temperature in three
    climates) is what ``twin sweep scenarios/sweep-facility-water.yaml --duration 365d`` gives.
    Checked on the five Phoenix variants (one test each), each run for its year as the sweep runs
    it (the whole sweep is 15 such years): their rows of the sweep table (PUE to 4 decimals,
    chiller hours, MWh, MW and die temperature as printed), the Phoenix columns of the PUE and
    facility MWh tables, and the Phoenix IT, chiller and dry-cooler-fan energies (MWh, as printed)."""
    import re

    readme = (SCENARIOS.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Worked example: annual PUE against facility-water temperature", 1)[1]
    section = section.split("\n### ", 1)[0]
    printed = section.split("```python\n", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    blocks = printed.split("climate ")
    pue_table, mwh_table = blocks[1], blocks[2]
    phoenix_energy = printed.split("p_heat_rejection_fans", 1)[1]
    rows = {(float(m[0]), m[1]): m for m in
            re.findall(r"│\s+[\d]+ │\s+([\d.]+) °C │\s+[\d.]+ °C │\s+(\w+) │\s+([\d.]+) │\s+([\d,]+) h │"
                       r"\s+([\d,.]+) MWh │\s+([\d.]+) MW │\s+([\d.]+) °C │", section)}
    plan = load_sweep(SCENARIOS / "sweep-facility-water.yaml", duration="365 d")
    phoenix = [v for v in plan.variants if v.overrides["plant.weather.file"] == "Phoenix"]
    assert sorted(float(v.labels["facility_water_supply"].split()[0]) for v in phoenix) == [27.0, 32.0, 37.0, 40.0, 45.0]
    for v in phoenix:
        if float(v.labels["facility_water_supply"].split()[0]) != fw:
            continue
        kpi, tree = _run_alone(plan, v)
        line = lambda table: next(x for x in table.splitlines() if x.startswith(f"{fw:.1f} "))  # noqa: E731
        assert line(pue_table).split()[2] == f"{kpi['pue']:.3f}"
        assert line(mwh_table).split()[2] == f"{np.round(kpi['energy_facility_J'] / 3.6e9):.1f}"
        fac = tree["facility"].to_dataset()
        mwh = [f"{np.round(float(fac[k].sum()) / 1e6):.1f}" for k in ("p_it", "p_chiller", "p_heat_rejection_fans")]
        assert line(phoenix_energy).split()[1:] == mwh
        if (fw, "Phoenix") in rows:
            _, _, pue, hours, e, peak, die = rows[(fw, "Phoenix")]
            assert pue == f"{kpi['pue']:.4f}" and hours == f"{kpi['chiller_hours']:,.0f}"
            assert e == f"{kpi['energy_facility_J'] / 3.6e9:,.3f}" and peak == f"{kpi['p_facility_peak_W'] / 1e6:.3f}"
            assert die == f"{kpi['t_die_max_degC']:.1f}"
