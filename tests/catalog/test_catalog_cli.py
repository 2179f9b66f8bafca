"""``twin catalog``: every kind listed, names whole at 80 columns piped, entries as YAML, field reference."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import yaml
from typer.testing import CliRunner

from twin.catalog import load_catalog
from twin.catalog.model import KINDS, PLURAL
from twin.catalog.reference import HARDWARE_KINDS, field_reference
from twin.cli import app

from tests.conftest import ROOT


def _piped(*args, columns=80):
    env = {**os.environ, "COLUMNS": str(columns)}
    env.pop("FORCE_COLOR", None)
    proc = subprocess.run([sys.executable, "-m", "twin", "catalog", *args], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_overview_at_80_columns_piped_names_every_entry_in_full():
    text = _piped()
    assert max(len(line) for line in text.splitlines()) <= 80
    for kind, name, _ in load_catalog().entries():
        # whole name in one cell: not followed or preceded by more name characters
        assert re.search(rf"│ {re.escape(name)}( \*)? +│", text), (kind, name)
    for kind in KINDS:
        assert f"{PLURAL[kind]} (" in text
    assert "power shelves (2)" in text and "shelve " not in text


def test_kind_filter_and_its_aliases():
    runner = CliRunner()
    for spelling in ("fabrics", "fabric", "power-shelves", "power shelf", "power_shelves"):
        result = runner.invoke(app, ["catalog", "--kind", spelling])
        assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["catalog", "--kind", "fabrics"])
    assert "efa-ultracluster" in result.stdout and "trn3-gen2-rack" not in result.stdout
    result = runner.invoke(app, ["catalog", "--kind", "gizmos"])
    assert result.exit_code == 2 and "--kind: unknown kind 'gizmos'" in result.stderr


def test_yaml_entry_round_trips_as_a_scenario_override():
    """The printed YAML, pasted under `catalog:` as a new entry, validates to the same entry."""
    cat = load_catalog()
    for name, kind in (("trn4-tray", "sleds"), ("orv3-hpr-33kw", "power_shelves"), ("mgx-mixed", "racks"),
                       ("efa-ultracluster", "fabrics"), ("trn4", "chips")):
        result = CliRunner().invoke(app, ["catalog", name, "--yaml"])
        assert result.exit_code == 0, result.output
        data = yaml.safe_load(result.stdout)
        assert list(data) == [kind] and list(data[kind]) == [name]
        copy = cat.merged({kind: {f"{name}-copy": data[kind][name]}})
        assert getattr(copy, kind)[f"{name}-copy"] == getattr(cat, kind)[name]


def test_field_reference_in_the_readme_is_the_generated_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("<!-- catalogue-fields:start -->\n")[1].split("<!-- catalogue-fields:end -->")[0]
    assert section == field_reference(HARDWARE_KINDS), (
        "README catalogue fields are stale: paste `twin catalog --fields --kind …` output, or run "
        "python -c 'from twin.catalog.reference import *; print(field_reference(HARDWARE_KINDS))'")


def test_every_hardware_field_is_documented():
    from twin.catalog.model import ENTRY_MODELS

    for kind in HARDWARE_KINDS:
        for name, info in ENTRY_MODELS[kind].model_fields.items():
            assert info.description, f"{kind}.{name} has no description (Field(description=...))"


def test_fields_option_prints_the_reference():
    result = CliRunner().invoke(app, ["catalog", "--fields", "--kind", "fabrics"])
    assert result.exit_code == 0
    assert "| `latency` | time [s] | yes |" in result.stdout


def test_scenario_option_shows_the_merged_entry(tmp_path):
    from tests.conftest import write_scenario

    path = write_scenario(tmp_path, {
        "name": "t", "time": {"duration": "10 s"},
        "halls": [{"name": "h", "rows": [{"name": "r", "racks": [{"name": "k", "template": "trn4-mgx-nvl72"}]}]}],
        "catalog": {"chips": {"trn4": {"tdp": {"value": "1.6 kW", "source": "estimate: low end"}}}},
    })
    result = CliRunner().invoke(app, ["catalog", "trn4", "--yaml", "--scenario", str(path)])
    assert result.exit_code == 0, result.output
    entry = yaml.safe_load(result.stdout)["chips"]["trn4"]
    assert entry["tdp"] == {"value": "1.6 kW", "source": "estimate: low end"}
    assert entry["p_idle"] == load_catalog().chips["trn4"].p_idle.model_dump(exclude_none=True)
