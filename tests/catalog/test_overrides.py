"""A scenario's ``catalog:`` merges field by field into the built-in catalogue; errors name the full path."""

from __future__ import annotations

import pytest

from twin.catalog import load_catalog
from twin.catalog.model import CatalogError, merge_fields
from twin.scenario import ScenarioError, load_scenario

from tests.conftest import write_scenario

BASE = """\
name: t
time:
  duration: 10 s
  step: 1 s
halls:
  - name: h
    rows:
      - name: r
        racks:
          - name: k
            template: trn4-mgx-nvl72
catalog:
"""


def _load(tmp_path, text):
    return load_scenario(write_scenario(tmp_path, BASE + text))


def test_one_field_override_keeps_the_rest(tmp_path):
    loaded = _load(tmp_path, "  chips:\n    trn4:\n      tdp: {value: 1.6 kW, source: 'estimate: low end'}\n")
    base, new = load_catalog().chips["trn4"], loaded.catalog.chips["trn4"]
    assert new.tdp.si == 1600.0
    assert new.tdp.source == "estimate: low end"
    for field in type(base).model_fields:
        if field != "tdp":
            assert getattr(new, field) == getattr(base, field), field
    assert load_catalog().chips["trn4"].tdp.si == 1800.0  # the built-in catalogue is unchanged


def test_one_device_count_of_a_sled(tmp_path):
    loaded = _load(tmp_path, "  sleds:\n    trn4-tray:\n      devices:\n"
                             "        efa: {value: 2, source: estimate}\n")
    devices = loaded.catalog.sleds["trn4-tray"].devices
    assert devices["efa"].value == 2
    assert devices["trn4"].value == 4 and devices["graviton4"].value == 1  # kept, in order
    assert list(devices) == list(load_catalog().sleds["trn4-tray"].devices)


def test_a_figure_is_replaced_whole_so_its_source_comes_with_it(tmp_path):
    with pytest.raises(ScenarioError, match=r":15: catalog\.chips\.trn4\.tdp\.source: required field is missing"):
        _load(tmp_path, "  chips:\n    trn4:\n      tdp: {value: 1.6 kW}\n")


def test_unknown_field_names_the_full_path(tmp_path):
    with pytest.raises(ScenarioError) as info:
        _load(tmp_path, "  sleds:\n    trn4-tray:\n      descripton: x\n")
    msg = str(info.value)
    assert msg.count("\n") == 0
    assert ":15: catalog.sleds.trn4-tray.descripton: unknown field (allowed: description," in msg


def test_missing_field_of_a_new_entry_names_the_full_path(tmp_path):
    with pytest.raises(ScenarioError, match=r":14: catalog\.sleds\.trn4-tray2\.description: required field is missing"):
        _load(tmp_path, "  sleds:\n    trn4-tray2:\n      devices:\n        trn4: {value: 2, source: estimate}\n")


def test_wrong_dimension_inside_an_override(tmp_path):
    with pytest.raises(ScenarioError, match=r":15: catalog\.fabrics\.nvlink-5\.latency: '3 kg' is not a time"):
        _load(tmp_path, "  fabrics:\n    nvlink-5:\n      latency: {value: 3 kg, source: estimate}\n")


def test_unknown_reference_names_the_full_path(tmp_path):
    with pytest.raises(ScenarioError, match=r":15: catalog\.racks\.trn4-mgx-nvl72\.power_shelf: unknown power shelf 'nope'"):
        _load(tmp_path, "  racks:\n    trn4-mgx-nvl72:\n      power_shelf: nope\n")


def test_domain_larger_than_its_fabric_is_refused(tmp_path):
    with pytest.raises(ScenarioError, match=r"catalog\.racks\.trn4-mgx-nvl72\.fabric\.trn4: 144 'trn4' exceed "
                                            r"the nvlink-fusion-6 domain size \(72\)"):
        _load(tmp_path, "  sleds:\n    trn4-tray:\n      devices:\n        trn4: {value: 8, source: estimate}\n")


def test_merge_fields_rules():
    old = {"a": {"value": 1, "source": "s"}, "d": {"x": {"value": 1, "source": "s"}}, "l": [1, 2]}
    new = {"a": {"value": 2}, "d": {"y": {"value": 3, "source": "t"}}, "l": [3]}
    assert merge_fields(old, new) == {"a": {"value": 2}, "d": {"x": {"value": 1, "source": "s"},
                                                                 "y": {"value": 3, "source": "t"}}, "l": [3]}


def test_catalog_error_outside_a_scenario():
    with pytest.raises(CatalogError) as info:
        load_catalog().merged({"chips": {"trn3": {"tdp": {"value": "5 kg", "source": "estimate"}}}})
    assert info.value.loc == ("chips", "trn3", "tdp")
