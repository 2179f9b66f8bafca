"""Scenario overlays (``overlays: [file, …]``): merged over the scenario, later wins, errors
placed in the file that holds the bad value; catalogue figures with an ``uncertainty``."""

from __future__ import annotations

import pytest

from tests.conftest import SCENARIOS
from twin.catalog.model import load_catalog
from twin.scenario import ScenarioError, load_scenario

BASE = (SCENARIOS / "calibrate-a100.yaml").read_text()


def _scenario(tmp_path, overlays: dict[str, str]) -> object:
    for name, text in overlays.items():
        (tmp_path / name).write_text(text)
    path = tmp_path / "s.yaml"
    path.write_text(BASE.replace("telemetry:\n", f"overlays: [{', '.join(overlays)}]\ntelemetry:\n", 1))
    return path


def test_overlays_merge_field_by_field_later_wins(tmp_path):
    path = _scenario(tmp_path, {
        "a.yaml": "catalog:\n  chips:\n    a100-sxm:\n      p_idle: {value: 50 W, source: fitted A, uncertainty: 2 W}\n"
                  "site: {cold_aisle: 20 degC}\n",
        "b.yaml": "catalog:\n  chips:\n    a100-sxm:\n      p_idle: {value: 45 W, source: fitted B}\n",
    })
    loaded = load_scenario(path)
    chip = loaded.catalog.chips["a100-sxm"]
    assert chip.p_idle.si == 45.0 and chip.p_idle.source == "fitted B"
    # A figure is replaced whole: B's value does not inherit A's uncertainty.
    assert chip.p_idle.uncertainty is None
    assert chip.tdp.si == load_catalog().chips["a100-sxm"].tdp.si  # the other figures stay
    assert loaded.scenario.site.cold_aisle == 20.0
    # The scenario's own catalogue entries (its sled and rack) are still there.
    assert "gpu-server" in loaded.catalog.sleds


def test_uncertainty_of_a_temperature_is_a_difference(tmp_path):
    path = _scenario(tmp_path, {"a.yaml": "catalog:\n  chips:\n    a100-sxm:\n"
                                          "      t_ref: {value: 60 degC, source: fitted, uncertainty: 1.5 K}\n"})
    assert load_scenario(path).catalog.chips["a100-sxm"].t_ref.si_uncertainty == 1.5


@pytest.mark.parametrize("files, where, message", [
    ({"a.yaml": "site: {cold_aisle: 5 kg}\n"}, "a.yaml:1: site.cold_aisle", "'5 kg' is not a temperature"),
    ({"a.yaml": "catalog:\n  chips:\n    a100-sxm:\n      p_idle: {value: 5 W, source: fitted, uncertainty: -1 W}\n"},
     None, "uncertainty must not be negative"),
    ({"a.yaml": "overlays: [b.yaml]\n"}, "a.yaml:1: overlays", "an overlay cannot name overlays itself"),
])
def test_bad_overlay_is_one_line_in_its_file(tmp_path, files, where, message):
    path = _scenario(tmp_path, files)
    with pytest.raises(ScenarioError) as exc:
        load_scenario(path)
    text = str(exc.value)
    if where is not None:
        assert text.startswith(str(tmp_path / where)), text
    assert message in text and "\n" not in text


def test_missing_overlay_is_reported_at_the_scenario_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(BASE.replace("telemetry:\n", "overlays: [nowhere.yaml]\ntelemetry:\n", 1))
    with pytest.raises(ScenarioError, match=r"s\.yaml:\d+: overlays\[0\]: overlay not found: .*nowhere\.yaml"):
        load_scenario(path)
