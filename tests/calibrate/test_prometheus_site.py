"""A real Prometheus as the "site": the recovery telemetry backfilled under dcgm-exporter names
(OpenMetrics → ``promtool tsdb create-blocks-from openmetrics``), then

- ``twin calibrate --telemetry http://127.0.0.1:PORT`` gives the same overlay as the CSV path
  (to 1e-6 relative);
- ``twin shadow --prometheus …`` replays the site, and Prometheus scrapes its measured values
  and residuals (``twin_residual_*``) — the measured values equal the telemetry, and residual =
  predicted − measured;
- every panel of the "twin vs site" dashboard returns data; the drift alert rules pass
  ``promtool check rules`` and ``promtool test rules``.

Skips only when the prometheus/promtool binaries are missing (Debian package ``prometheus``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tests.calibrate.conftest import FIT
from tests.calibrate.helpers import DEVICE, GPU, HOST, INTERVAL, base_data, dump
from tests.conftest import ROOT
from tests.export.helpers import child, child_env, free_port, http_get, prom_query, wait_until
from twin.cli import app

#: Fits of a few dozen twin runs (with, here, a Dask ensemble or a Prometheus) take minutes on a
#: loaded 2-core machine; the limit guards against hangs, not speed.
pytestmark = pytest.mark.timeout(1200)
DASHBOARD = ROOT / "grafana" / "dashboards" / "site" / "twin-vs-site.json"
RULES = ROOT / "grafana" / "alerts" / "twin-drift.rules.yml"
#: Intervals the shadow replays (two hours of 10-minute telemetry).
STEPS = 12


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"`{name}` is not on PATH (Debian package 'prometheus'; .ci/run installs it)")
    return path


def openmetrics(csv, path):
    """The long-form telemetry as OpenMetrics: one family per metric, labels as dcgm-exporter's."""
    df = pd.read_csv(csv)
    t = pd.to_datetime(df["time"]).astype("datetime64[ms]").astype("int64") / 1e3
    df = df.assign(ts=t)
    lines = []
    for metric, fam in df.groupby("metric", sort=True):
        lines.append(f"# TYPE {metric} gauge")
        for (host, gpu), s in fam.groupby(["Hostname", "gpu"], sort=True):
            uid = uuid.uuid5(uuid.NAMESPACE_URL, f"{host}/{gpu}")
            labels = f'gpu="{gpu}",UUID="GPU-{uid}",device="nvidia{gpu}",modelName="NVIDIA A100-SXM4-80GB",Hostname="{host}"'
            for ts, v in zip(s["ts"].tolist(), s["value"].tolist()):
                lines.append(f"{metric}{{{labels}}} {float(v)!r} {ts:.3f}")
    path.write_text("\n".join(lines) + "\n# EOF\n")
    return path


@pytest.fixture(scope="module")
def site(recovery, tmp_path_factory):
    """Prometheus holding the backfilled recovery telemetry and scraping a shadow port."""
    promtool = _binary("promtool")
    prometheus = _binary("prometheus")
    tmp = tmp_path_factory.mktemp("site")
    om = openmetrics(recovery["telemetry"]["csv"], tmp / "site.om")
    blocks = tmp / "data"
    out = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(om), str(blocks)],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    shadow_port, port = free_port(), free_port()
    config = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
              "scrape_configs": [{"job_name": "shadow", "static_configs": [{"targets": [f"127.0.0.1:{shadow_port}"]}]}]}
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    args = [prometheus, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={blocks}",
            f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn", "--storage.tsdb.retention.time=100y"]
    with child(args, tmp / "prometheus.log", cwd=tmp) as prom:
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: http_get(f"{url}/-/ready", timeout=2)[0] == 200, 60, "Prometheus ready", proc=prom)
        yield {"url": url, "tmp": tmp, "shadow_port": shadow_port, "proc": prom}


def test_prometheus_path_gives_the_csv_overlay(site, recovery):
    folder = recovery["folder"]
    data = yaml.safe_load(recovery["scenario"].read_text())
    data["telemetry"]["interval"] = f"{INTERVAL} s"
    scenario = dump(data, folder / "calibrate-prometheus.yaml")
    out = site["tmp"] / "fitted-prometheus.yaml"
    args = ["calibrate", str(scenario), "--telemetry", site["url"], "-o", str(out), "--report", str(site["tmp"] / "r.json"),
            "--from", "2025-01-01", "--to", "2025-01-03", "--holdout-from", "2025-01-03", "--holdout-to", "2025-01-04"]
    for p in FIT:
        args += ["--fit", p]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    via_prom = yaml.safe_load(out.read_text())["calibration"]["parameters"]
    via_csv = yaml.safe_load(recovery["overlay"].read_text())["calibration"]["parameters"]
    assert [p["path"] for p in via_prom] == [p["path"] for p in via_csv]
    for a, b in zip(via_prom, via_csv):
        assert a["value"] == pytest.approx(b["value"], rel=1e-6)
        assert a["sigma"] == pytest.approx(b["sigma"], rel=1e-6)
    rep = json.loads((site["tmp"] / "r.json").read_text())
    for q in ("power", "temperature"):
        assert rep["windows"]["holdout"]["rmse"][q] == pytest.approx(
            recovery["report"]["windows"]["holdout"]["rmse"][q], rel=1e-6)


@pytest.fixture(scope="module")
def shadow(site, recovery):
    """twin shadow replaying the first two hours of the site with the fitted overlay."""
    folder = recovery["folder"]
    data = base_data()
    data["time"]["start"] = "2025-01-01T00:00:00"
    data["overlays"] = ["fitted.yaml"]
    data["telemetry"] = {"columns": {"id": ["Hostname", "gpu"]}, "devices": {f"{HOST}/{GPU}": DEVICE},
                         "interval": f"{INTERVAL} s"}
    scenario = dump(data, folder / "shadow.yaml")
    port = site["shadow_port"]
    args = [sys.executable, "-m", "twin", "shadow", str(scenario), "--prometheus", site["url"], "--port", str(port),
            "--from", "2025-01-01T00:00:00", "--steps", str(STEPS), "--speed", "max"]
    with child(args, site["tmp"] / "shadow.log", env=child_env()) as proc:
        wait_until(lambda: http_get(f"http://127.0.0.1:{port}/healthz", timeout=2)[0] == 200, 60, "twin shadow", proc=proc)

        def scraped():
            got = prom_query(site["url"], "/api/v1/query", query="twin_shadow_steps_total")["result"]
            return got and float(got[0]["value"][1]) >= STEPS

        wait_until(scraped, 90, "Prometheus scraping the finished shadow", interval=0.5, proc=proc)
        yield {"proc": proc, "url": site["url"], "port": port}
        assert proc.poll() is None, proc.log()


def _query(url, expr):
    return {r["metric"].get("device", ""): float(r["value"][1])
            for r in prom_query(url, "/api/v1/query", query=expr)["result"]}


def test_shadow_residuals_are_scraped(shadow, recovery):
    url = shadow["url"]
    measured = _query(url, "twin_measured_device_power_watts")
    predicted = _query(url, "twin_device_power_watts")
    residual = _query(url, "twin_residual_device_power_watts")
    t_res = _query(url, "twin_residual_device_temperature_celsius")
    assert set(residual) == {DEVICE} and set(t_res) == {DEVICE}
    # The measured value is the site's own sample of the last interval (the 12th), exactly.
    noisy = recovery["telemetry"]["noisy"]
    assert measured[DEVICE] == pytest.approx(noisy["power"][STEPS - 1], rel=1e-12)
    # One definition: residual = predicted − measured, from the same scrape.
    assert residual[DEVICE] == pytest.approx(predicted[DEVICE] - measured[DEVICE], abs=1e-9)
    # With the fitted overlay the residuals are the measurement noise (2 W, 0.3 K): within 4σ.
    assert abs(residual[DEVICE]) < 8.0
    assert abs(t_res[DEVICE]) < 1.2
    ts = _query(url, "twin_shadow_site_timestamp_seconds")
    assert list(ts.values()) == [pd.Timestamp("2025-01-01T02:00:00").timestamp()]


def test_every_twin_vs_site_panel_returns_data(shadow):
    dash = json.loads(DASHBOARD.read_text())
    assert dash["title"] == "twin vs site"
    now = prom_query(shadow["url"], "/api/v1/query", query="time()")["result"][1]
    n = 0
    for panel in dash["panels"]:
        for target in panel["targets"]:
            expr = target["expr"].replace("$device", ".*")
            data = prom_query(shadow["url"], "/api/v1/query_range", query=expr, start=float(now) - 20,
                              end=float(now), step=1)
            values = [float(v) for s in data["result"] for _, v in s["values"]]
            assert values and np.isfinite(values).all(), (panel["title"], expr)
            n += 1
    assert n >= 9


def test_drift_rules_pass_promtool(tmp_path):
    promtool = _binary("promtool")
    out = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "SUCCESS: 3 rules found" in out.stdout + out.stderr, out
    # Unit test of the rules: a device 30 W off on 200 W for two hours fires TwinPowerDrift; one
    # 5 W off does not; a temperature residual of 8 K fires TwinTemperatureDrift.
    test = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                {"series": 'twin_residual_device_power_watts{device="d0"}', "values": "30+0x150"},
                {"series": 'twin_measured_device_power_watts{device="d0"}', "values": "200+0x150"},
                {"series": 'twin_residual_device_power_watts{device="d1"}', "values": "5+0x150"},
                {"series": 'twin_measured_device_power_watts{device="d1"}', "values": "200+0x150"},
                {"series": 'twin_residual_device_temperature_celsius{device="d0"}', "values": "8+0x150"},
            ],
            "alert_rule_test": [
                {"eval_time": "120m", "alertname": "TwinPowerDrift", "exp_alerts": [{
                    "exp_labels": {"severity": "warning", "device": "d0"},
                    "exp_annotations": {
                        "summary": "twin power drifts from d0",
                        "description": "Mean power residual above 10 % of the measured power for d0 over the last "
                                       "hour; recalibrate with twin calibrate or check the device."}}]},
                {"eval_time": "20m", "alertname": "TwinPowerDrift", "exp_alerts": []},
                {"eval_time": "120m", "alertname": "TwinTemperatureDrift", "exp_alerts": [{
                    "exp_labels": {"severity": "warning", "device": "d0"},
                    "exp_annotations": {
                        "summary": "twin temperature drifts from d0",
                        "description": "Mean die-temperature residual above 5 K for d0 over the last hour; check "
                                       "the device's cooling or recalibrate."}}]},
            ],
        }],
    }
    path = tmp_path / "drift.test.yml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    out = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
