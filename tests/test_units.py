"""Quantity parsing at the edges."""

from __future__ import annotations

import pytest

from twin.units import QuantityError, parse_quantity


@pytest.mark.parametrize("text, dim, si", [
    ("1.2 kW", "power", 1200.0),
    ("32 degC", "temperature", 32.0),
    ("305.15 K", "temperature", 32.0),
    ("89.6 degF", "temperature", 32.0),
    ("1.5 L/min", "volume_flow", 2.5e-5),
    ("500 ms", "time", 0.5),
    ("2h", "time", 7200.0),
    ("10 K", "temperature_difference", 10.0),
    ("2.517 PFLOP/s", "flops", 2.517e15),
    ("4.9 TB/s", "bandwidth", 4.9e12),
])
def test_parse(text, dim, si):
    assert parse_quantity(text, dim) == pytest.approx(si, rel=1e-12)


@pytest.mark.parametrize("text, dim, match", [
    ("5 kg", "power", "is not a power"),
    ("10", "time", "has no unit"),
    ("fast", "time", "cannot read"),
    ("", "power", "expected a power"),
])
def test_errors(text, dim, match):
    with pytest.raises(QuantityError, match=match):
        parse_quantity(text, dim)
