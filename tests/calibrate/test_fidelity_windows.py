"""The README's BioHPC calibration rows (calibrate on one period, predict another) are what
benchmarks/calibration_fidelity.py computes: each row is regenerated and its figures compared with
the README's. Minutes of fitting per window, so marked slow (CI runs them in its slow leg)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


def _bench():
    spec = importlib.util.spec_from_file_location("calibration_fidelity", ROOT / "benchmarks" / "calibration_fidelity.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?", text)]


@pytest.mark.parametrize("name", ["april-may", "january", "august"])
def test_readme_row_is_the_computed_one(name):
    """Every figure of the README's row within 5 % of the recomputed one (ratios and RMSEs), and
    coverages within 3 points: a different BLAS or scipy release moves a least-squares optimum
    by less; a change of the model or of the band moves them by more. The row's own claims are
    checked too: which quantity got worse on the hold-out, and whether the band is defined."""
    bench = _bench()
    computed = bench.row(name, bench.figures(name))
    label = bench.WINDOWS[name][0]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = [line for line in readme.splitlines() if line.startswith(f"| {label} |")]
    assert len(rows) == 1, f"README has {len(rows)} rows for {label!r}; generated:\n{computed}"
    want = rows[0].split(" | ")[2]
    got = computed.split(" | ")[2]
    assert want.count("worse") == got.count("worse") and want.count("undefined") == got.count("undefined"), (want, got)
    w, g = _numbers(want), _numbers(got)
    assert len(w) == len(g), (want, got)
    for a, b, what in zip(w, g, re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?\s*\S*", got)):
        if what.strip().endswith("%"):
            assert a == pytest.approx(b, abs=3.0), (what, want, got)
        else:
            assert a == pytest.approx(b, rel=0.05, abs=0.015), (what, want, got)
