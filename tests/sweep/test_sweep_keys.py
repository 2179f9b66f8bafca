"""Sweep cache keys cover everything that decides a result; a NaN variant is an error row; the
exit code says whether a variant failed.

Before: an edited replay CSV gave the old result ("0 runs, 1 already done"), catalogue overlays
and the twin version were not in the key, and a variant whose KPIs were NaN was reported "ok".
"""

from __future__ import annotations

import yaml
from typer.testing import CliRunner

import twin
import twin.export.dataset
from tests.conftest import SCENARIOS
from twin.cli import app
from twin.sweep import spec as spec_mod
from twin.sweep.run import run_sweep, variants_dir
from twin.sweep.spec import load_sweep

QUICK = (SCENARIOS / "quickstart.yaml").read_text()


def _setup(tmp_path, replay_u=0.5):
    """A base scenario with a replay file and an overlay, and a one-variant sweep of it."""
    (tmp_path / "u.csv").write_text("time,device,u\n" + "".join(
        f"0,us1-a/s{s:02d}/trn3-{d},{replay_u}\n" for s in range(2) for d in range(2)))
    (tmp_path / "overlay.yaml").write_text("catalog: {}\n")
    base = QUICK.replace("  - select: {kind: [graviton4]}\n    u: 0.3\n",
                         "  - select: {kind: [graviton4]}\n    u: 0.3\n  - replay: u.csv\n")
    base = base.replace("output: out/quickstart.nc\n", "output: out/quickstart.nc\noverlays: [overlay.yaml]\n")
    assert "replay: u.csv" in base and "overlays:" in base
    (tmp_path / "base.yaml").write_text(base)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({
        "base": "base.yaml", "duration": "2 min", "set": {"record.device": "30 s"},
        "parameters": [{"path": "seed", "values": [1]}]}))
    return sweep


def test_key_follows_referenced_files_overlays_and_version(tmp_path, monkeypatch):
    sweep = _setup(tmp_path)
    key = load_sweep(sweep).variants[0].key
    assert load_sweep(sweep).variants[0].key == key  # stable
    out = tmp_path / "s.zarr"
    first = run_sweep(load_sweep(sweep), out, workers=0)
    assert (first.n_run, first.n_failed) == (1, 0), first.errors
    again = run_sweep(load_sweep(sweep), out, workers=0)
    assert (again.n_run, again.n_skipped) == (0, 1)

    # An edited replay table: a new key, and the variant runs again with the new numbers.
    (tmp_path / "u.csv").write_text((tmp_path / "u.csv").read_text().replace(",0.5\n", ",1.0\n"))
    edited = load_sweep(sweep)
    assert edited.variants[0].key != key
    rerun = run_sweep(edited, out, workers=0)
    assert (rerun.n_run, rerun.n_skipped, rerun.n_failed) == (1, 0, 0)
    e_first = twin.kpis(first.tree)["energy_it_J"].iloc[0]
    e_rerun = twin.kpis(rerun.tree)["energy_it_J"].iloc[0]
    assert e_rerun > e_first  # four chips at full load instead of half

    # An edited overlay (a catalogue override) changes the key too.
    before = load_sweep(sweep).variants[0].key
    (tmp_path / "overlay.yaml").write_text("catalog: {chips: {}}\n")
    assert load_sweep(sweep).variants[0].key != before

    # So does another twin version (or an edited bundled catalogue).
    before = load_sweep(sweep).variants[0].key
    monkeypatch.setattr(twin, "__version__", "999.0")
    spec_mod.twin_fingerprint.cache_clear()
    try:
        assert load_sweep(sweep).variants[0].key != before
    finally:
        monkeypatch.undo()
        spec_mod.twin_fingerprint.cache_clear()


def test_nan_kpis_make_an_error_row_and_exit_1(tmp_path, monkeypatch):
    sweep = _setup(tmp_path)
    real = twin.export.dataset.summary

    def nan_pue(sim):
        kpis = real(sim)
        kpis["pue"] = float("nan")
        return kpis

    monkeypatch.setattr(twin.export.dataset, "summary", nan_pue)
    out = tmp_path / "s.zarr"
    result = CliRunner().invoke(app, ["sweep", str(sweep), "-o", str(out), "--workers", "0"])
    assert result.exit_code == 1, result.output
    assert "1 failed" in result.output and "non-finite KPIs: pue=nan" in result.output
    df = twin.kpis(out)
    assert df["status"].tolist() == ["error"] and "pue=nan" in df["error"].iloc[0]
    assert not list(variants_dir(out).glob("*.zarr"))  # nothing kept to be "already done"
    # Without the fault the same sweep runs and exits 0.
    monkeypatch.setattr(twin.export.dataset, "summary", real)
    result = CliRunner().invoke(app, ["sweep", str(sweep), "-o", str(out), "--workers", "0"])
    assert result.exit_code == 0, result.output
    assert twin.kpis(out)["status"].tolist() == ["ok"]
