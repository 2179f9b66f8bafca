"""The live-view stack files: docker-compose.yml against the compose-spec JSON Schema, the
Dockerfile, Grafana provisioning and dashboards (structure, units, metric names that exist).

``tests/data/compose-spec.json`` is the Compose Specification schema as shipped in the PyPI
package ``docker-compose`` 1.29.2 (``compose/config/compose_spec.json``, Apache-2.0, from
github.com/compose-spec/compose-spec); there is no Docker engine here, so the schema is the check.
Real queries of every panel against a real Prometheus are in test_prometheus_integration.py.
"""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
import yaml

from tests.conftest import ROOT
from twin.export.prometheus import COUNTERS, DEVICES_METRIC, KIND_SUMMARIES, METRICS

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SCHEMA = json.loads((ROOT / "tests" / "data" / "compose-spec.json").read_text())
DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
DATASOURCE_UID = "twin-prometheus"
#: The schema declares draft 2019-09 (as "…/draft/2019-09/schema#", which jsonschema does not look up).
VALIDATOR = jsonschema.Draft201909Validator

#: Every metric name the exporter can publish (the dashboards may use no other).
KNOWN_METRICS = (
    {n.removesuffix("_total") + ("_total" if n.endswith("_total") else "") for n in METRICS.values()}
    | {f"{c.name}_total" for c in COUNTERS} | {s.name for s in KIND_SUMMARIES}
    | {DEVICES_METRIC, "twin_build_info", "twin_simulated_time_seconds", "twin_simulated_timestamp_seconds",
       "twin_lag_seconds"}
)


def panels(dashboard: dict):
    for p in dashboard["panels"]:
        yield p
        yield from p.get("panels", [])  # collapsed rows


# -- docker compose -----------------------------------------------------------------------------------
def test_compose_file_is_valid_against_the_compose_spec_schema():
    VALIDATOR.check_schema(SCHEMA)
    validator = VALIDATOR(SCHEMA)
    errors = sorted(validator.iter_errors(COMPOSE), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_the_schema_rejects_what_compose_rejects():
    """Guard against a schema that accepts anything: a typo'd key must fail."""
    validator = VALIDATOR(SCHEMA)
    broken = {"services": {"twin": {"imagee": "twin:local"}}}
    assert not validator.is_valid(broken)


def test_compose_services_images_and_mounts():
    services = COMPOSE["services"]
    assert set(services) == {"twin", "prometheus", "grafana"}
    for name in ("prometheus", "grafana"):
        image = services[name]["image"]
        assert re.fullmatch(r"[\w./-]+:v?\d+\.\d+\.\d+", image), f"{name}: pin an exact version, not {image}"
    assert services["twin"]["build"] == "." and (ROOT / "Dockerfile").is_file()
    for name, svc in services.items():
        for volume in svc.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), f"{name}: bind mount {source} does not exist"
    prom_mounts = services["prometheus"]["volumes"]
    assert "./grafana/prometheus.yml:/etc/prometheus/prometheus.yml:ro" in prom_mounts
    graf = services["grafana"]
    assert "./grafana/provisioning:/etc/grafana/provisioning:ro" in graf["volumes"]
    provider = yaml.safe_load((ROOT / "grafana/provisioning/dashboards/twin.yml").read_text())
    path = provider["providers"][0]["options"]["path"]
    assert f"./grafana/dashboards:{path}:ro" in graf["volumes"]
    env = graf["environment"]
    assert re.fullmatch(r"\$\{GF_ADMIN_PASSWORD:-[^}]+\}", env["GF_SECURITY_ADMIN_PASSWORD"])
    assert env["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer" and "GF_AUTH_ANONYMOUS_ENABLED" in env
    assert env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"].startswith(path + "/")
    assert (ROOT / "grafana/dashboards" / env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"].rsplit("/", 1)[1]).is_file()


def test_dockerfile_serves_the_quickstart_on_all_interfaces():
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim$", text, re.MULTILINE)
    assert re.search(r"^RUN pip install \.", text, re.MULTILINE)
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", text, re.MULTILINE).group(1))
    assert cmd == ["twin", "serve", "scenarios/quickstart.yaml", "--host", "0.0.0.0", "--loop"]
    for copied in re.findall(r"^COPY (.+) \S+$", text, re.MULTILINE):
        for item in copied.split():
            assert (ROOT / item).exists(), f"Dockerfile copies {item}, which does not exist"


def test_prometheus_config_scrapes_twin_every_second():
    conf = yaml.safe_load((ROOT / "grafana" / "prometheus.yml").read_text())
    (job,) = conf["scrape_configs"]
    assert job["scrape_interval"] == "1s"
    assert job["static_configs"][0]["targets"] == ["twin:9808"]
    assert "twin" in COMPOSE["services"]


def test_datasource_has_the_fixed_uid_and_points_at_the_compose_prometheus():
    ds = yaml.safe_load((ROOT / "grafana/provisioning/datasources/prometheus.yml").read_text())
    (source,) = ds["datasources"]
    assert source["uid"] == DATASOURCE_UID and source["type"] == "prometheus"
    assert source["url"] == "http://prometheus:9090"


# -- dashboards -----------------------------------------------------------------------------------------
def test_the_four_dashboards_exist():
    assert {p.stem for p in DASHBOARDS} == {"facility", "racks", "workload", "cooling"}


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_dashboard_structure_units_and_metric_names(path):
    dash = json.loads(path.read_text())
    assert dash["uid"].startswith("twin-") and dash["title"]
    ids = [p["id"] for p in panels(dash)]
    assert len(ids) == len(set(ids)), "duplicate panel ids"
    for p in panels(dash):
        if p["type"] == "row":
            continue
        where = f"{path.stem}: panel {p['title']!r}"
        assert p["datasource"] == {"type": "prometheus", "uid": DATASOURCE_UID}, where
        assert p["fieldConfig"]["defaults"].get("unit"), f"{where}: no unit in fieldConfig"
        assert p["targets"], f"{where}: no query"
        for t in p["targets"]:
            assert t["datasource"]["uid"] == DATASOURCE_UID, where
            for name in re.findall(r"\b(twin_[a-z0-9_]+)", t["expr"]):
                assert name in KNOWN_METRICS, f"{where}: {name} is not a metric the exporter publishes"
    for var in dash["templating"]["list"]:
        assert var["datasource"]["uid"] == DATASOURCE_UID


def test_racks_dashboard_has_the_rack_variable():
    dash = json.loads((ROOT / "grafana/dashboards/racks.json").read_text())
    (var,) = dash["templating"]["list"]
    assert var["name"] == "rack" and var["query"]["query"] == "label_values(twin_rack_power_watts, rack)"
    assert all('rack=~"$rack"' in t["expr"] for p in panels(dash) for t in p["targets"])


# -- the documentation ----------------------------------------------------------------------------------
def _live_view_doc() -> str:
    """The "Live view" section of the README, or docs/live-view.md until it is merged there."""
    readme = (ROOT / "README.md").read_text()
    if "## Live view (Prometheus and Grafana)" in readme:
        return readme.split("## Live view (Prometheus and Grafana)", 1)[1].split("\n## ", 1)[0]
    return (ROOT / "docs" / "live-view.md").read_text()


def _expand(name: str) -> set[str]:
    """Shell-style brace expansion of one name: twin_a_{x,y}_w → {twin_a_x_w, twin_a_y_w}."""
    m = re.search(r"\{([^{}]*,[^{}]*)\}", name)
    if not m:
        return {name}
    return set().union(*(_expand(name[: m.start()] + alt + name[m.end():]) for alt in m.group(1).split(",")))


def test_the_documented_metrics_are_exactly_the_published_ones():
    doc = _live_view_doc()
    documented = set()
    for token in re.findall(r"`(twin_[a-z0-9_{},]+)", doc):
        documented |= _expand(token)
    assert documented == KNOWN_METRICS, (f"undocumented: {sorted(KNOWN_METRICS - documented)}; "
                                         f"not published: {sorted(documented - KNOWN_METRICS)}")
