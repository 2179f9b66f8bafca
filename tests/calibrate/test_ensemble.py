"""twin run --ensemble: members sample the fitted parameters (jointly, with their correlation)
and run on Dask; every recorded variable and KPI gets p5/p50/p95; twin report draws the bands."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import twin
from tests.calibrate.helpers import INTERVAL, START, TRUTH, base_data, dump
from twin.cli import app

#: Fits of a few dozen twin runs (with, here, a Dask ensemble or a Prometheus) take minutes on a
#: loaded 2-core machine; the limit guards against hangs, not speed.
pytestmark = pytest.mark.timeout(1200)
N = 32
WORKERS = 2


@pytest.fixture(scope="module")
def ensemble(recovery, tmp_path_factory):
    """The recovery scenario with its fitted overlay, 12 hours, 32 members on 2 workers."""
    folder = recovery["folder"]
    data = base_data()
    data["time"] = {"start": START, "duration": "12 h", "step": f"{INTERVAL} s"}
    data["workload"] = [{"replay": "u.csv"}]
    data["overlays"] = ["fitted.yaml"]
    data["record"] = {"facility": f"{INTERVAL} s", "cdu": "off", "rack": f"{INTERVAL} s", "device": f"{INTERVAL} s"}
    scenario = dump(data, folder / "ensemble.yaml")
    out = tmp_path_factory.mktemp("ensemble") / "ens.nc"
    result = CliRunner().invoke(app, ["run", str(scenario), "-o", str(out), "--ensemble", str(N),
                                      "--workers", str(WORKERS), "--seed", "1", "--no-progress"])
    assert result.exit_code == 0, result.output
    return {"tree": twin.load(out), "out": out, "output": result.output}


def test_quantiles_are_ordered_everywhere(ensemble):
    tree = ensemble["tree"]
    checked = 0
    for node in tree.subtree:
        ds = node.to_dataset()
        for name, var in ds.data_vars.items():
            if "quantile" not in var.dims:
                continue
            v = var.transpose("quantile", ...).values
            ok = np.isfinite(v).all(axis=0)
            assert (v[0][ok] <= v[1][ok]).all() and (v[1][ok] <= v[2][ok]).all(), (node.path, name)
            checked += 1
    assert checked >= 20  # facility, rack and device variables and the KPIs
    assert {"facility", "rack", "device"} <= set(tree.children)
    assert tree.attrs["n_members"] == N and tree.attrs["n_failed"] == 0


def test_band_of_the_fitted_figures_covers_the_truth(ensemble, recovery):
    """The ensemble's p5–p95 band of each fitted figure is the fit's ±1.645σ, and it covers the
    truth. For a correct σ each truth falls inside its 90 % band with probability 0.9, so with
    three figures at least two are inside except with probability ~3 % (binomial); with the fixed
    seeds here the fits sit at z = +1.0, −0.45 and −0.3 fitted σ from the truth (p_idle, r_jc,
    p_leak_ref; see helpers.NOISE_SEED for how the σ itself was checked)."""
    root = ensemble["tree"].to_dataset()
    band = root["parameter_band"]
    names = [str(p).split(".")[-1] for p in root["parameter"].values]
    assert sorted(names) == sorted(TRUTH)
    fitted = {p["path"].split(".")[-1]: p for p in recovery["report"]["parameters"]}
    draws = root["draws"].values
    inside = 0
    for i, name in enumerate(names):
        lo, hi = (band.sel(quantile=x).values[i] for x in (0.05, 0.95))
        f = fitted[name]
        # The draws are the fit's N(value, σ²): 32 draws put their mean within 3 standard errors
        # (3σ/√32 = 0.53σ) and their standard deviation within 3 × σ/√62 = 0.38σ.
        assert draws[:, i].mean() == pytest.approx(f["value"], abs=0.53 * f["sigma"]), name
        assert draws[:, i].std(ddof=1) == pytest.approx(f["sigma"], rel=0.38), name
        inside += lo <= TRUTH[name] <= hi
    assert inside >= 2, band.values
    # The draws follow the fitted correlation (idle and leakage trade off against each other).
    corr = yaml.safe_load(recovery["overlay"].read_text())["calibration"]["correlation"]
    drawn = np.corrcoef(root["draws"].values.T)
    assert drawn[0, 2] == pytest.approx(corr[0][2], abs=0.15)  # sampling error of r near −0.93 with 32 draws


def test_member_power_band_follows_the_fitted_uncertainty(ensemble):
    """Idle intervals: the power band's width is what the fitted σ of idle and leakage imply
    (the twin is linear in them there), not zero and not wider than ±3σ."""
    dev = ensemble["tree"]["device"].to_dataset()
    u = dev["u"].sel(quantile=0.5).values[:, 0]
    p = dev["p"].values[:, :, 0]
    idle = u == 0
    assert idle.any()
    width = (p[2] - p[0])[idle]
    assert (width > 0).all()
    assert (width < 10.0).all()  # W: σ(p_idle) ≈ 0.5 W, σ(p_leak_ref) ≈ 0.6 W


def test_report_draws_the_bands(ensemble, tmp_path):
    result = CliRunner().invoke(app, ["report", str(ensemble["out"]), "-o", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "rep" / "ensemble_power.png").stat().st_size > 10_000
    assert (tmp_path / "rep" / "ensemble_devices.png").stat().st_size > 10_000
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "<th>p5</th><th>p50</th><th>p95</th>" in page


def test_timing_is_recorded(ensemble):
    attrs = ensemble["tree"].attrs
    assert attrs["ensemble_wall_seconds"] > 0 and attrs["member_wall_mean_seconds"] > 0
    assert "members (0 failed)" in ensemble["output"]
