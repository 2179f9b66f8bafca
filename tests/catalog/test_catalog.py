"""The hardware catalogue: every figure sourced, references resolve, published figures kept."""

from __future__ import annotations

import pytest
import yaml

from twin.catalog import load_catalog
from twin.catalog.model import CATALOG_FILE, Catalog, Coefficients, Count, Curve, Figure, PropertyTable


def _figures(entry):
    for name in type(entry).model_fields:
        value = getattr(entry, name)
        if isinstance(value, (Figure, Count, Curve, Coefficients, PropertyTable)):
            yield name, value
        elif isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, (Figure, Count, Curve, Coefficients, PropertyTable)):
                    yield f"{name}.{k}", v


def test_every_figure_has_a_source_or_estimate():
    cat = load_catalog()
    n = 0
    for kind, name, entry in cat.entries():
        for field, fig in _figures(entry):
            n += 1
            src = fig.source.strip()
            assert src, f"{kind}.{name}.{field} has no source"
            assert len(src) >= 8 or src.lower().startswith("estimate"), (kind, name, field, src)
    assert n > 300  # the catalogue is not empty by accident


def test_every_number_in_the_file_is_inside_a_sourced_figure():
    """Walk the raw YAML: any number or quantity string must sit in a mapping with 'source'."""
    raw = yaml.safe_load(CATALOG_FILE.read_text())

    def walk(node, path, sourced):
        if isinstance(node, dict):
            here = sourced or "source" in node
            for k, v in node.items():
                walk(v, path + (k,), here)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, path + (i,), sourced)
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            assert sourced, f"unsourced number at {path}"

    walk(raw, (), False)


@pytest.mark.parametrize("chip, tdp, fp8, hbm_bw", [
    ("trn3", 1000.0, 2.517e15, 4.9e12),    # AWS Neuron docs (FLOPS, HBM); DCD (power)
    ("trn2", 500.0, 1.299e15, 2.9e12),     # AWS Neuron docs; SemiAnalysis
    ("h200", 700.0, 1.979e15, 4.8e12),     # NVIDIA H200 datasheet
    ("gb300", 1400.0, 5.0e15, 8.0e12),     # NVIDIA
])
def test_published_chip_figures(chip, tdp, fp8, hbm_bw):
    c = load_catalog().chips[chip]
    assert c.tdp.si == tdp
    assert c.flops_fp8.si == pytest.approx(fp8, rel=1e-12)
    assert c.hbm_bandwidth.si == pytest.approx(hbm_bw, rel=1e-12)


def test_trn4_is_projected_from_trn3():
    """Trainium4 preview: 3× FP8 and 4× memory bandwidth of Trainium3 (within rounding, 0.1 %)."""
    cat = load_catalog()
    t3, t4 = cat.chips["trn3"], cat.chips["trn4"]
    assert t4.status == "projected"
    assert t4.flops_fp8.si / t3.flops_fp8.si == pytest.approx(3.0, rel=1e-3)
    assert t4.hbm_bandwidth.si / t3.hbm_bandwidth.si == pytest.approx(4.0, rel=1e-3)


def test_ultraserver_has_144_trn3_in_two_racks():
    cat = load_catalog()
    system = cat.systems["trn3-gen2-ultraserver"]
    assert len(system.racks) == 2
    chips = 0
    for rack in system.racks:
        for sled, count in cat.racks[rack].sleds.items():
            chips += count.value * (cat.sleds[sled].devices.get("trn3").value
                                    if "trn3" in cat.sleds[sled].devices else 0)
    assert chips == 144  # AWS Neuron docs: Trn3 Gen2 UltraServer


def test_nvl72_has_72_gpus():
    cat = load_catalog()
    for rack, gpu in (("gb300-nvl72", "gb300"), ("gb200-nvl72", "gb200")):
        n = sum(c.value * cat.sleds[s].devices[gpu].value
                for s, c in cat.racks[rack].sleds.items() if gpu in cat.sleds[s].devices)
        assert n == 72


def test_unknown_reference_is_rejected():
    data = load_catalog().model_dump(mode="python", exclude_none=True)
    data["racks"]["trn3-gen2-rack"]["power_shelf"] = "nope"
    with pytest.raises(ValueError, match=r"racks\.trn3-gen2-rack\.power_shelf: unknown power shelf 'nope'"):
        Catalog.model_validate(data)


def test_wrong_dimension_is_rejected():
    data = load_catalog().model_dump(mode="python", exclude_none=True)
    data["chips"]["trn3"]["tdp"] = {"value": "5 kg", "source": "estimate"}
    with pytest.raises(ValueError, match="'5 kg' is not a power"):
        Catalog.model_validate(data)
