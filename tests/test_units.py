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


def _pint_si(text: str, dimension: str) -> float:
    """The same text read by pint alone (the path every unit outside FAST_UNITS takes)."""
    from twin.units import DIMENSIONS, registry

    dim, unit, _ = DIMENSIONS[dimension]
    q = registry().Quantity(text)
    if not isinstance(q, registry().Quantity) or not q.units._units:
        return float(q.magnitude if hasattr(q, "magnitude") else q)
    return float(q.to(unit or "dimensionless").magnitude)


def test_fast_units_are_pints_factors():
    """Every unit read without pint gives pint's float bit for bit, for whole, decimal and
    exponent numbers of many sizes (pint converts "x unit" as x times the unit's factor; exact
    equality, as any other rounding would move results in the last bit)."""
    import random

    from twin.units import FAST_UNITS, _parse

    rng = random.Random(15)
    numbers = ["0", "1", "-3", "30", "1350", ".5", "2.", "1e3", "2.5E-4", "-12.75"]
    numbers += [repr(rng.uniform(0, 1e4)) for _ in range(8)] + [f"{rng.uniform(0, 100):.2f}" for _ in range(8)]
    for dimension, units in FAST_UNITS.items():
        for unit, factor in units.items():
            assert factor == _pint_si(f"1 {unit}", dimension), (dimension, unit)
            for number in numbers:
                spaced = (f"{number} {unit}", f" {number}  {unit} ")
                for text in spaced if unit[:1] in "eEjJ1" else (*spaced, f"{number}{unit}"):
                    assert _parse(text, dimension) == _pint_si(text.strip(), dimension), (text, dimension)


@pytest.mark.parametrize("text, dim, match", [
    ("5 kW", "temperature", "is not a temperature"),  # a known unit of another dimension
    ("30", "temperature", "has no unit"),
    ("1e400 kW", "power", "not a finite number"),
    ("-300 degC", "temperature", "below absolute zero"),
])
def test_fast_units_keep_pints_errors(text, dim, match):
    """Text the table reads wrongly or not at all still fails with pint's message."""
    with pytest.raises(QuantityError, match=match):
        parse_quantity(text, dim)


@pytest.mark.parametrize("text, dimension", [
    ("1e3J", "energy"), ("0.011/K", "per_kelvin"), ("2j", "energy"), ("1.5 L / min", "volume_flow"),
    ("007 W", "power"), ("+5 W", "power"), ("05.5 kW", "power"),
])
def test_fast_units_leave_the_unusual_to_pint(text, dimension):
    """Text pint tokenizes differently (a complex literal, a number running into '1/K') or that
    the table does not spell is read by pint: the same value or the same error as before."""
    try:
        expected = _pint_si(text, dimension)
    except Exception:
        with pytest.raises(QuantityError):
            parse_quantity(text, dimension)
    else:
        assert parse_quantity(text, dimension) == expected
