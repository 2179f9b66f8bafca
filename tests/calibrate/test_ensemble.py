"""twin run --ensemble: members sample the fitted parameters (jointly, with their correlation)
and run on Dask; every recorded variable and KPI gets p5/p50/p95; twin report draws the bands."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import twin
from tests.calibrate.helpers import DEVICE, INTERVAL, TRUTH, base_data, dump
from twin.calibrate.ensemble import measured_quantiles
from twin.cli import app

#: Fits of a few dozen twin runs (with, here, a Dask ensemble or a Prometheus) take minutes on a
#: loaded 2-core machine; the limit guards against hangs, not speed.
pytestmark = pytest.mark.timeout(1200)
N = 32
WORKERS = 2


#: The recovery's hold-out day: the third of its three (fitted on the first two).
HOLDOUT_START = "2025-01-03T00:00:00"
HOLDOUT_OFFSET = 2 * 86400  # [s] from the telemetry's start


@pytest.fixture(scope="module")
def ensemble(recovery, tmp_path_factory):
    """The recovery scenario with its fitted overlay on the hold-out day, driven by the measured
    utilisation, 32 members on 2 workers."""
    folder = recovery["folder"]
    u = pd.read_csv(folder / "u.csv")
    u = u[u["time"] >= HOLDOUT_OFFSET].assign(time=lambda d: d["time"] - HOLDOUT_OFFSET)
    u.to_csv(folder / "u-holdout.csv", index=False)
    data = base_data()
    data["time"] = {"start": HOLDOUT_START, "duration": "24 h", "step": f"{INTERVAL} s"}
    data["workload"] = [{"replay": "u-holdout.csv"}]
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
    seeds here the fits sit at z = +1.0, +0.2 and −0.1 fitted σ from the truth (p_idle, r_jc,
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


def test_measured_band_holds_ninety_percent_of_the_held_out_samples(ensemble, recovery):
    """``p_measured`` and ``t_die_measured``: the members spread by the calibration's residual.
    The telemetry is the twin itself plus Gaussian noise, so an honest band holds 90 % of the
    held-out samples; over 144 samples the binomial spread is 2.5 points, and ±7.5 points fails a
    band a quarter too narrow or too wide (0.78, 0.96). The members' own band (the figures'
    uncertainty only, σ(p_idle) ≈ 0.3 W against 2 W of noise) holds far fewer."""
    dev = ensemble["tree"]["device"].to_dataset().sel(device=DEVICE)
    tel = recovery["telemetry"]
    for var, own, q in (("p_measured", "p", "power"), ("t_die_measured", "t_die", "temperature")):
        lo, hi = (dev[var].sel(quantile=x).to_series() for x in (0.05, 0.95))
        meas = pd.Series(tel["noisy"][q], index=tel["times"]).reindex(lo.index)
        assert meas.notna().sum() == 144, q
        share = float(((meas >= lo) & (meas <= hi)).mean())
        assert share == pytest.approx(0.90, abs=0.075), (var, share)
        lo_m, hi_m = (dev[own].sel(quantile=x).to_series() for x in (0.05, 0.95))
        assert float(((meas >= lo_m) & (meas <= hi_m)).mean()) < 0.5, own


def test_measured_quantiles_closed_forms():
    """Identical members: the residual's own band m ± G⁻¹(0.95)·s (normal: 1.645 s; Student's t
    with ν = 4: 2.132 s). Normal members N(0, 1) spread by s = 1: N(0, 2), band ±1.645·√2
    (20,000 members: quantile error ~0.02). Per-device scales and degrees of freedom broadcast."""
    q = np.array([0.05, 0.5, 0.95])
    Z = 1.6448536269514722  # the standard normal's 95th percentile
    T4 = 2.1318467813362907  # Student's t, ν = 4
    same = measured_quantiles(np.full((32, 3, 1), 10.0), 2.0, None, q)[:, 0, 0]
    assert same == pytest.approx([10 - Z * 2, 10.0, 10 + Z * 2], abs=1e-9)
    normal = measured_quantiles(np.random.default_rng(0).normal(0.0, 1.0, (20_000, 1)), 1.0, None, q)[:, 0]
    assert normal == pytest.approx([-Z * 2 ** 0.5, 0.0, Z * 2 ** 0.5], abs=0.05)
    per = measured_quantiles(np.full((8, 2, 2), 5.0), np.array([1.0, 3.0]), np.array([4.0, 1e12]), q)
    assert per[:, 1, 0] == pytest.approx([5 - T4, 5, 5 + T4], abs=1e-6)
    assert per[:, 1, 1] == pytest.approx([5 - 3 * Z, 5, 5 + 3 * Z], abs=1e-6)
    # A member without a value is left out; no member with one gives NaN.
    assert measured_quantiles(np.array([[1.0], [np.nan]]), 1.0, None, q)[:, 0] == pytest.approx([1 - Z, 1.0, 1 + Z])
    assert np.isnan(measured_quantiles(np.full((2, 1), np.nan), 1.0, None, q)).all()


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
