"""A scenario validated before is read back from the on-disk cache: equal to the one validated
afresh, for every bundled scenario; data that are not plain YAML values are not stored, and a
bad file is reported exactly as without the cache (errors are never stored)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from tests.conftest import SCENARIOS
from twin.scenario import load_scenario
from twin.scenario.errors import ScenarioError
from twin.scenario.loader import read_document
from twin.scenario.model import Scenario

ALL = sorted(p for p in SCENARIOS.rglob("*.yaml") if p.parent.name != "overlays" and not p.name.startswith("sweep"))


def _entries(folder):
    return sorted((folder / "scenario").glob("*.pickle")) if (folder / "scenario").exists() else []


def test_every_bundled_scenario_reads_back_equal(tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_CACHE_DIR", str(tmp_path))
    for path in ALL:
        first = load_scenario(path).scenario  # validated and stored
        n = len(_entries(tmp_path))
        second = load_scenario(path).scenario  # read back
        assert len(_entries(tmp_path)) == n
        _, _, data = read_document(path, "scenario")
        if "overlays" not in data:
            assert second == Scenario.model_validate(data), path.name
        assert second == first and second is not first, path.name
    assert len(_entries(tmp_path)) == len(ALL)


def test_overrides_are_part_of_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_CACHE_DIR", str(tmp_path))
    path = SCENARIOS / "quickstart.yaml"
    a = load_scenario(path, {"time": {"duration": "2 s"}}).scenario
    b = load_scenario(path, {"time": {"duration": "3 s"}}).scenario
    assert (a.time.duration, b.time.duration) == (2.0, 3.0)
    assert len(_entries(tmp_path)) == 2


def test_data_that_are_not_plain_yaml_values_are_not_stored(tmp_path, monkeypatch):
    from twin.scenario.loader import scenario_from_data

    monkeypatch.setenv("TWIN_CACHE_DIR", str(tmp_path))
    _, _, data = read_document(SCENARIOS / "quickstart.yaml", "scenario")
    data["seed"] = np.int64(7)  # repr is not the YAML value: validated every time
    assert scenario_from_data(data, SCENARIOS / "quickstart.yaml").scenario.seed == 7
    assert _entries(tmp_path) == []


@pytest.mark.parametrize("damage", ["truncated", "not-a-pickle"])
def test_bad_file_after_a_good_one_and_damaged_entries(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("TWIN_CACHE_DIR", str(tmp_path / "cache"))
    text = (SCENARIOS / "quickstart.yaml").read_text(encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    good = load_scenario(path).scenario
    (entry,) = _entries(tmp_path / "cache")
    entry.write_bytes(entry.read_bytes()[:40] if damage == "truncated" else b"not a pickle")
    assert load_scenario(path).scenario == good
    data = yaml.safe_load(text)
    data["time"]["step"] = "-1 s"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(ScenarioError) as exc:
        load_scenario(path)
    assert "time.step" in str(exc.value)


def test_model_defaults_made_without_validation_equal_validated_ones():
    """Defaults that are model instances are made with ``model_construct()`` (no validator is
    built at import); each equals the validated ``X()`` (so it is valid)."""
    import importlib

    from pydantic import BaseModel

    found = 0
    for name in ("twin.scenario.model", "twin.cooling.config", "twin.calibrate.spec", "twin.scenario.control"):
        module = importlib.import_module(name)
        for cls in vars(module).values():
            if not (isinstance(cls, type) and issubclass(cls, BaseModel) and cls.__module__ == name):
                continue
            for field in cls.model_fields.values():
                d = field.default
                if isinstance(d, BaseModel):
                    found += 1
                    given = {k: getattr(d, k) for k in d.model_fields_set}  # EpwWeather's kind
                    validated = type(d).model_validate(given)
                    assert d == validated and d.model_fields_set == validated.model_fields_set, type(d).__name__
    assert found >= 16
    from twin.scenario.model import CDUSpec
    from twin.sim.build import default_cdu

    made = default_cdu(Scenario.model_construct())
    assert made == CDUSpec(name="cdu-1") and made.model_fields_set == {"name"}
