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


@pytest.mark.parametrize("chip, tdp, fmt, flops, hbm_bw", [
    ("trn3", 1000.0, "mxfp8", 2.517e15, 4.9e12),    # AWS Neuron docs (FLOPS, HBM); DCD (power)
    ("trn2", 500.0, "fp8", 1.299e15, 2.9e12),       # AWS Neuron docs; SemiAnalysis
    ("h200", 700.0, "fp8", 1.979e15, 4.8e12),       # NVIDIA H200 datasheet
    ("gb300", 1400.0, "fp8", 5.0e15, 8.0e12),       # NVIDIA
    ("a100-sxm", 400.0, "bf16", 312e12, 2.039e12),  # NVIDIA A100 datasheet
    ("h100-sxm", 700.0, "fp8", 1978.9e12, 3.35e12),  # NVIDIA H100 datasheet (SXM5)
    ("h100-pcie", 350.0, "bf16", 756e12, 2.0e12),   # NVIDIA H100 PCIe product brief
])
def test_published_chip_figures(chip, tdp, fmt, flops, hbm_bw):
    c = load_catalog().chips[chip]
    assert c.tdp.si == tdp
    assert c.flops[fmt].si == pytest.approx(flops, rel=1e-12)
    assert c.hbm_bandwidth.si == pytest.approx(hbm_bw, rel=1e-12)


def test_number_formats_follow_published_ratios():
    """GB300 raises FP4 1.5x over GB200 at the same FP8 (NVIDIA NVL72 pages); Trainium4 is
    previewed at >= 6x Trainium3's FP4 (AWS); MXFP4 on Trainium3 runs at the MXFP8 rate."""
    chips = load_catalog().chips
    assert chips["gb300"].flops["fp4"].si / chips["gb200"].flops["fp4"].si == pytest.approx(1.5)
    assert chips["gb300"].flops["fp8"].si == chips["gb200"].flops["fp8"].si
    assert chips["trn4"].flops["mxfp4"].si / chips["trn3"].flops["mxfp4"].si >= 6.0 - 1e-3
    assert chips["trn3"].flops["mxfp4"].si == chips["trn3"].flops["mxfp8"].si


def test_trn3_tdp_is_a_sourced_range_and_aws_claims_are_claims():
    cat = load_catalog()
    t3 = cat.chips["trn3"]
    assert t3.tdp_range is not None and "40 %" in t3.tdp_range.source
    # The low end follows from AWS's chip claim: 1.4x perf/W at 2.517/1.299 the FP8 rate of a
    # 500 W Trn2 (to 1 %: the range is quoted in whole watts).
    low = 2.517 / 1.299 / 1.4 * 500.0
    assert float(str(t3.tdp_range.low).split()[0]) == pytest.approx(low, rel=0.01)
    claims = {c.metric: c for c in cat.systems["trn3-gen2-ultraserver"].claims}
    assert claims["performance per watt"].ratio == 4.0
    assert "workload-level" in claims["performance per watt"].basis


def test_trn4_is_projected_from_trn3():
    """Trainium4 preview: 3× FP8 and 4× memory bandwidth of Trainium3 (within rounding, 0.1 %)."""
    cat = load_catalog()
    t3, t4 = cat.chips["trn3"], cat.chips["trn4"]
    assert t4.status == "projected"
    assert t4.flops["mxfp8"].si / t3.flops["mxfp8"].si == pytest.approx(3.0, rel=1e-3)
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
