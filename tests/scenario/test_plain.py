"""Stand-ins of the validated models (twin.scenario.plain), as ``twin run`` reads its scenario
from the start-up cache: the same values and methods as the models, and a run built from them
identical to one built from the models."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from twin.scenario import load_scenario, plain
from twin.scenario.errors import ScenarioError


def _same(model, stand_in, where="") -> None:
    """``stand_in`` holds exactly ``model``'s values (NaN where NaN), recursively."""
    from pydantic import BaseModel

    if isinstance(model, BaseModel):
        assert plain.is_stand_in(stand_in), where
        assert type(stand_in).__name__ == type(model).__name__, where
        assert type(stand_in).model_path == f"{type(model).__module__}:{type(model).__qualname__}", where
        assert stand_in.model_fields_set == model.model_fields_set, where
        assert list(vars(stand_in)) == list(vars(model)), where
        for k, v in vars(model).items():
            _same(v, getattr(stand_in, k), f"{where}.{k}")
    elif isinstance(model, dict):
        assert type(stand_in) is dict and list(stand_in) == list(model), where
        for k, v in model.items():
            _same(v, stand_in[k], f"{where}[{k!r}]")
    elif isinstance(model, (list, tuple)):
        assert type(stand_in) is type(model) and len(stand_in) == len(model), where
        for i, (a, b) in enumerate(zip(model, stand_in)):
            _same(a, b, f"{where}[{i}]")
    elif isinstance(model, float) and math.isnan(model):
        assert isinstance(stand_in, float) and math.isnan(stand_in), where
    else:
        assert type(stand_in) is type(model) and stand_in == model, where


BUNDLED = sorted(p.name for p in SCENARIOS.glob("*.yaml") if p.name != "sweep-facility-water.yaml")


@pytest.mark.parametrize("name", BUNDLED)
def test_stand_ins_hold_the_models_values_and_methods(name, tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_CACHE_DIR", str(tmp_path / "cache"))
    models = load_scenario(SCENARIOS / name)
    cold = load_scenario(SCENARIOS / name, plain=True)  # validated, stored
    warm = load_scenario(SCENARIOS / name, plain=True)  # read back from the cache
    assert list((tmp_path / "cache" / "loaded").glob("*.pickle"))
    for loaded in (cold, warm):
        _same(models.scenario, loaded.scenario, "scenario")
        _same(models.catalog, loaded.catalog, "catalog")
        assert loaded.catalog.templates() == models.catalog.templates()
        assert [(k, n) for k, n, _ in loaded.catalog.entries()] == [(k, n) for k, n, _ in models.catalog.entries()]
        rack = next(iter(models.catalog.racks))
        assert loaded.catalog.chips_in(rack) == models.catalog.chips_in(rack)
        if models.scenario.plant is not None:  # a method found on the model class on first use
            assert loaded.scenario.plant.templates() == models.scenario.plant.templates()
    assert cold.scenario == warm.scenario and hash(cold.scenario.time) == hash(warm.scenario.time)


def test_stand_ins_are_frozen_pickle_and_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_CACHE_DIR", str(tmp_path / "cache"))
    sc = load_scenario(SCENARIOS / "quickstart.yaml", plain=True).scenario
    with pytest.raises(TypeError):
        sc.name = "other"
    with pytest.raises(AttributeError):
        sc.no_such_field  # noqa: B018
    assert pickle.loads(pickle.dumps(sc)) == sc
    assert copy.deepcopy(sc) == sc and copy.copy(sc) == sc
    assert "TimeSpec(" in repr(sc.time)


def test_errors_are_the_same_with_stand_ins(tmp_path, monkeypatch):
    """Validation errors come from the models whichever way the scenario is read."""
    monkeypatch.setenv("TWIN_CACHE_DIR", str(tmp_path / "cache"))
    good = (SCENARIOS / "quickstart.yaml").read_text(encoding="utf-8")
    bad = tmp_path / "bad.yaml"
    for text in (good.replace("duration:", "duraton:"), good + "\nbogus: 1\n",
                 good.replace("quickstart", "bad name with spaces")):
        bad.write_text(text, encoding="utf-8")
        messages = []
        for read_plain in (False, True, True):
            with pytest.raises(ScenarioError) as info:
                load_scenario(bad, plain=read_plain)
            messages.append(str(info.value))
        assert messages[0] == messages[1] == messages[2]
        assert messages[0].startswith(f"{bad}:")


@pytest.mark.parametrize("name, duration", [("quickstart.yaml", "120 s"), ("design-day-phoenix.yaml", "30 min")])
def test_a_run_from_stand_ins_is_the_run_from_the_models(name, duration, tmp_path, monkeypatch):
    """Bit for bit: every recorded variable and the summary."""
    from twin.export.dataset import summary
    from twin.sim.driver import Simulation

    monkeypatch.setenv("TWIN_CACHE_DIR", str(tmp_path / "cache"))
    overrides = {"time": {"duration": duration}}
    runs = []
    for read_plain in (False, True, True):
        sim = Simulation(load_scenario(SCENARIOS / name, overrides, plain=read_plain))
        sim.run()
        runs.append(sim)
    ref = runs[0]
    expected = ref.recorder.snapshot()
    assert sum(len(v) for v in expected.values()) > 10
    for sim in runs[1:]:
        np.testing.assert_equal(summary(sim), summary(ref))
        got = sim.recorder.snapshot()
        assert {g: list(v) for g, v in got.items()} == {g: list(v) for g, v in expected.items()}
        for group, variables in expected.items():
            for var, values in variables.items():
                np.testing.assert_array_equal(got[group][var], values, err_msg=f"{group}.{var}")
