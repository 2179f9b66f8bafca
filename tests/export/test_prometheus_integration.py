"""The live view against a real Prometheus (Debian package ``prometheus``, installed by .ci/run).

One module-scoped stack: ``twin serve scenarios/quickstart.yaml --speed 100`` and a Prometheus
scraping it every second, both on 127.0.0.1 and free ports. Once Prometheus holds about ten
scrapes, every query of every panel of every dashboard (template variables substituted as Grafana
would) is evaluated through Prometheus' HTTP API and must return data with plausible values.
Also: ``promtool check metrics`` on a scrape, ``promtool check config`` on the shipped
configuration, and an OpenMetrics file backfilled with ``promtool tsdb create-blocks-from
openmetrics`` and served by a second Prometheus, on which every panel returns data too.

The tests skip, saying why, only when the prometheus/promtool binaries are not on PATH.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC

import pytest
import yaml

from tests.conftest import ROOT, SCENARIOS
from tests.export.helpers import (
    child,
    child_env,
    free_port,
    http_get,
    prom_query,
    twin_serve_args,
    wait_until,
)
from twin.export.dataset import build_tree
from twin.export.openmetrics import write_openmetrics
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

QUICK = SCENARIOS / "quickstart.yaml"
DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
#: Scrape interval of the test Prometheus, as in grafana/prometheus.yml [s].
SCRAPE_SECONDS = 1
#: Scrapes to wait for before querying: enough for 4-scrape rate windows and a few points.
MIN_SCRAPES = 8
#: What Grafana substitutes for its interval variables at a 1 s scrape interval
#: ($__rate_interval = max(4 × scrape interval, $__interval + scrape interval)).
GRAFANA_VARS = {"$__rate_interval": "4s", "$__interval": "1s", "$__range": "30s"}
#: Seconds of data each panel query is evaluated over (a range query at a 1 s step).
WINDOW = 6

#: Plausible values per panel unit (the quickstart: one UltraServer, 30 degC facility water).
PLAUSIBLE = {
    "watt": (0.0, 1e8),  # up to 100 MW; the quickstart is ~60-200 kW
    "celsius": (10.0, 110.0),  # coolant, air and dies: above freezing, below shutdown + margin
    "kelvin": (0.0, 40.0),  # coolant temperature rises
    "percentunit": (0.0, 1.0),
    "none": (0.0, 1e6),
    "s": (0.0, 30.0),  # lag behind schedule
    "joule": (0.0, 1e15),
    "flowlpm": (1.0, 1e5),
}
#: Tighter checks for panels whose meaning fixes the range.
BY_TITLE = {"PUE": (1.0, 1.5)}


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"`{name}` is not on PATH (Debian package 'prometheus'; .ci/run installs it)")
    return path


@pytest.fixture(scope="module")
def promtool() -> str:
    return _binary("promtool")


def start_prometheus(tmp, config: dict, extra=()):
    """A Prometheus on a free 127.0.0.1 port with ``config``; returns (context manager, URL)."""
    port = free_port()
    cfg = tmp / "prometheus.yml"
    cfg.write_text(yaml.safe_dump(config))
    args = [_binary("prometheus"), f"--config.file={cfg}", f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn", *extra]
    return child(args, tmp / "prometheus.log", cwd=tmp), f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """twin serve (quickstart, 100× real time) + Prometheus scraping it every second."""
    _binary("prometheus")
    tmp = tmp_path_factory.mktemp("stack")
    twin_port = free_port()
    config = {"global": {"scrape_interval": f"{SCRAPE_SECONDS}s", "scrape_timeout": f"{SCRAPE_SECONDS}s"},
              "scrape_configs": [{"job_name": "twin", "static_configs": [{"targets": [f"127.0.0.1:{twin_port}"]}]}]}
    with child(twin_serve_args(QUICK, twin_port, "--speed", "100"), tmp / "twin.log", env=child_env()) as twin:
        twin_url = f"http://127.0.0.1:{twin_port}"
        wait_until(lambda: http_get(f"{twin_url}/healthz", timeout=10)[0] == 200, 240, "twin serve", proc=twin)
        prom_ctx, prom_url = start_prometheus(tmp, config, ["--storage.tsdb.retention.time=1h"])
        with prom_ctx as prom:
            wait_until(lambda: http_get(f"{prom_url}/-/ready", timeout=10)[0] == 200, 240, "Prometheus ready",
                       proc=prom)

            def scrapes():
                got = prom_query(prom_url, "/api/v1/query", query="count_over_time(twin_it_power_watts[1m])")
                return got["result"] and float(got["result"][0]["value"][1]) >= MIN_SCRAPES

            wait_until(scrapes, 240, f"{MIN_SCRAPES} scrapes in Prometheus", interval=0.5, proc=prom)
            target = prom_query(prom_url, "/api/v1/targets")["activeTargets"][0]
            assert target["health"] == "up", target
            yield {"twin": twin_url, "prometheus": prom_url, "twin_proc": twin}
        assert twin.poll() is None, f"twin serve died during the test:\n{twin.log()}"


def panel_queries():
    """(dashboard, panel, target) for every query of every dashboard."""
    for path in DASHBOARDS:
        dash = json.loads(path.read_text())
        for panel in dash["panels"]:
            for target in panel.get("targets", []):
                yield dash, panel, target


def substitute(expr: str, variables: dict[str, str]) -> str:
    for name, value in {**GRAFANA_VARS, **variables}.items():
        expr = expr.replace(name, value)
    assert "$" not in expr, f"unsubstituted variable in {expr!r}"
    return expr


def grafana_regex_escape(value: str) -> str:
    """A label value inside a PromQL regex string, escaped as Grafana's Prometheus datasource does."""
    return "".join("\\\\" + ch if ch in "\\^$.|?*+()[]{}" else ch for ch in value)


def template_values(prom_url: str, dash: dict) -> list[dict[str, str]]:
    """Variable assignments to try: each variable's first value, and 'All' (its allValue)."""
    first, every = {}, {}
    for var in dash["templating"]["list"]:
        m = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", var["query"]["query"])
        metric, label = m.groups()
        values = prom_query(prom_url, f"/api/v1/label/{label}/values", **{"match[]": metric})
        assert values, f"template variable ${var['name']}: no values for {var['query']['query']}"
        first[f"${var['name']}"] = grafana_regex_escape(min(values))
        every[f"${var['name']}"] = var["allValue"]
    return [first, every] if first else [{}]


def check_panel_data(prom_url: str, end: float, window: float = WINDOW, step: float = 1.0):
    """Evaluate every panel query as Grafana would (a range query) and check values; returns count."""
    n = 0
    failures = []
    for dash, panel, target in panel_queries():
        unit = panel["fieldConfig"]["defaults"]["unit"]
        lo, hi = BY_TITLE.get(panel["title"], PLAUSIBLE.get(unit, (-math.inf, math.inf)))
        if unit == "dateTimeAsIso":
            start = load_scenario(QUICK).scenario.time.start.replace(tzinfo=UTC).timestamp() * 1e3
            lo, hi = start, start + 7 * 24 * 3600e3  # within a week of the scenario start
        for variables in template_values(prom_url, dash):
            expr = substitute(target["expr"], variables)
            where = f"{dash['uid']} / {panel['title']!r} / {expr}"
            data = prom_query(prom_url, "/api/v1/query_range", query=expr, start=end - window, end=end, step=step)
            values = [float(v) for series in data["result"] for _, v in series["values"]]
            if not values:
                failures.append(f"{where}: no data")
                continue
            bad = [v for v in values if not (math.isfinite(v) and lo <= v <= hi)]
            if bad:
                failures.append(f"{where}: {len(bad)} values outside [{lo}, {hi}], e.g. {bad[:3]}")
            n += 1
    assert not failures, "\n".join(failures)
    return n


# -- the live stack ----------------------------------------------------------------------------------------
def test_every_panel_query_returns_plausible_data(stack):
    n = check_panel_data(stack["prometheus"], end=time.time())
    assert n >= sum(1 for _ in panel_queries())  # each query at least once (twice with a variable)


def test_scraped_values_track_the_simulation(stack):
    prom = stack["prometheus"]
    got = prom_query(prom, "/api/v1/query", query="twin_simulated_time_seconds")["result"]
    simulated = float(got[0]["value"][1])
    assert simulated > MIN_SCRAPES * 100 * 0.5  # 100× real time, after at least MIN_SCRAPES seconds
    lag = float(prom_query(prom, "/api/v1/query", query="max_over_time(twin_lag_seconds[1m])")["result"][0]["value"][1])
    # The quickstart runs at thousands × real time; a loaded machine may still delay a step now
    # and then, so only a lag that never recovers (a minute) counts as not keeping pace.
    assert 0 <= lag < 60, "the quickstart at 100× should keep pace"
    # Independent closure in PromQL: IT power = Σ rack AC power (same scrape, same sample).
    diff = prom_query(prom, "/api/v1/query", query="abs(sum(twin_rack_power_watts) - sum(twin_it_power_watts))")
    assert float(diff["result"][0]["value"][1]) < 1e-6  # W: float round-off on ~1e5 W (~1e-11 W)
    # Energy counters never reset during the run.
    resets = prom_query(prom, "/api/v1/query", query="sum(resets(twin_rack_energy_joules_total[1m]))")
    assert float(resets["result"][0]["value"][1]) == 0.0


def test_promtool_check_metrics_on_a_scrape_is_clean(stack, promtool):
    status, _, body = http_get(f"{stack['twin']}/metrics")
    assert status == 200
    out = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, timeout=300, check=False)
    assert out.returncode == 0 and not out.stdout.strip() and not out.stderr.strip(), out


def test_promtool_check_config_on_the_shipped_configuration(promtool):
    out = subprocess.run([promtool, "check", "config", str(ROOT / "grafana" / "prometheus.yml")],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0 and "SUCCESS" in out.stdout + out.stderr, out


# -- offline: OpenMetrics backfill ----------------------------------------------------------------------------
def test_openmetrics_backfill_serves_the_dashboards(tmp_path, promtool):
    """twin run → OpenMetrics → promtool blocks → Prometheus: the recorded values, and data on
    every panel of every dashboard for the simulated time."""
    sim = Simulation(load_scenario(QUICK, {"time": {"duration": "5 min"}}))
    sim.run()
    tree = build_tree(sim)
    om = write_openmetrics(tree, tmp_path / "quick.om")
    blocks = tmp_path / "data"
    out = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(om), str(blocks)],
                         capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr
    assert any(p.is_dir() and p.name.startswith("01") for p in blocks.iterdir()), "no block written"

    config = {"global": {"scrape_interval": "15s"}, "scrape_configs": []}
    # The simulated day is in the past: keep blocks older than the default 15-day retention.
    prom_ctx, url = start_prometheus(tmp_path, config, ["--storage.tsdb.retention.time=100y"])
    with prom_ctx as prom:
        wait_until(lambda: http_get(f"{url}/-/ready", timeout=10)[0] == 200, 240, "Prometheus ready", proc=prom)
        start = sim.scenario.time.start.replace(tzinfo=UTC).timestamp()
        at = start + 120
        got = prom_query(url, "/api/v1/query", query='twin_rack_power_watts{rack="us1-a"}', time=at)["result"]
        expected = tree["rack"].to_dataset()["p_ac"].sel(rack="us1-a").values[120]
        assert float(got[0]["value"][1]) == pytest.approx(expected, rel=1e-15)
        energy = prom_query(url, "/api/v1/query", query="twin_it_energy_joules_total", time=start + 299)["result"]
        p_it = tree["facility"].to_dataset()["p_it"].values
        assert float(energy[0]["value"][1]) == pytest.approx(p_it[:299].sum(), rel=1e-12)
        check_panel_data(url, end=start + 280, window=60, step=10)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
