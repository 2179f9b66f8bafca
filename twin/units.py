"""The one pint registry, and quantity parsing for scenario and catalogue values.

pint lives at the edges only: a string such as ``"1.2 kW"`` is parsed once, its dimension
checked, and an SI float kept. Temperatures are kept in degrees Celsius (``degC``); every
other quantity in its SI base unit. Nothing inside the step loop touches pint.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from typing import Annotated

from twin.text import excerpt

#: Dimension name → (pint dimensionality, unit the SI float is stored in, UDUNITS label).
DIMENSIONS: dict[str, tuple[str, str, str]] = {
    "power": ("[power]", "W", "W"),
    "energy": ("[energy]", "J", "J"),
    "temperature": ("[temperature]", "degC", "degC"),
    "temperature_difference": ("[temperature]", "K", "K"),
    "time": ("[time]", "s", "s"),
    "mass_flow": ("[mass] / [time]", "kg/s", "kg s-1"),
    "volume_flow": ("[length] ** 3 / [time]", "m**3/s", "m3 s-1"),
    "thermal_resistance": ("[temperature] / [power]", "K/W", "K W-1"),
    "thermal_conductance": ("[power] / [temperature]", "W/K", "W K-1"),
    "heat_capacity": ("[energy] / [temperature]", "J/K", "J K-1"),
    "specific_heat": ("[energy] / [mass] / [temperature]", "J/kg/K", "J kg-1 K-1"),
    "per_kelvin": ("1 / [temperature]", "1/K", "K-1"),
    "volume": ("[length] ** 3", "m**3", "m3"),
    "pressure": ("[pressure]", "Pa", "Pa"),
    "flops": ("1 / [time]", "1/s", "s-1"),
    "bytes": ("[]", "byte", "byte"),
    "bandwidth": ("1 / [time]", "1/s", "byte s-1"),
    "dimensionless": ("[]", "", "1"),
    "rate": ("1 / [time]", "1/s", "s-1"),
    "price": ("1 / [energy]", "1/J", "J-1"),
    "power_rate": ("[power] / [time]", "W/s", "W s-1"),
}



def _import_pint():
    """Import pint without its optional dask integration.

    pint imports dask at import time whenever dask is installed (to let dask arrays of
    quantities work); twin never hands pint a dask array, and that import is ~0.3 s of every
    command's start-up. Marking dask as absent while pint loads skips it; a dask imported
    before (a sweep worker) is left alone, and dask imports normally afterwards.
    """
    if "dask" in sys.modules:
        import pint

        return pint
    sys.modules["dask"] = None  # find_spec("dask") is None while pint.compat loads
    try:
        import pint
    finally:
        if sys.modules.get("dask", 0) is None:
            del sys.modules["dask"]
    return pint


@functools.cache
def registry():
    """The one pint registry, built on first use: importing pint and building the registry
    costs about half a second, which modules that only need the constants below never pay.

    pint's parsed definitions are cached in its cache folder (``~/.cache/pint``), which cuts
    building the registry from ~0.4 to ~0.1 s of CPU; a cache that cannot be written or read is
    not used (the definitions are parsed as without one)."""
    pint = _import_pint()
    try:
        reg = pint.UnitRegistry(autoconvert_offset_to_baseunit=True, cache_folder=":auto:")
    except Exception:  # an unwritable home or a damaged cache file
        reg = pint.UnitRegistry(autoconvert_offset_to_baseunit=True)
    reg.define("byte = [] = B")
    reg.define("bit = byte / 8")  # pint's own bit is dimensionless 1, which would make 1 bit = 1 byte
    reg.define("FLOP = [] = flop")
    reg.define("USD = [] ")
    reg.define("EUR = [] ")
    return reg


def __getattr__(name: str):
    """``twin.units.ureg``: the registry, built on first access (PEP 562)."""
    if name == "ureg":
        return registry()
    raise AttributeError(f"module 'twin.units' has no attribute {name!r}")


class QuantityError(ValueError):
    """A quantity string that cannot be parsed or has the wrong dimension."""


#: Longest quantity text read (characters): "1.5e3 L/min" needs a dozen; a cap keeps parsing
#: linear (pint's and Python's number parsing grow faster than linearly with the digits).
MAX_QUANTITY_CHARS = 100


def parse_quantity(text: str | float | int, dimension: str) -> float:
    """Parse a quantity and return it as a finite SI float (temperatures in degC).

    Parameters
    ----------
    text : str or number
        ``"1.2 kW"``, ``"32 degC"``, ``"1.5 L/min"``, ``"500 ms"``. A bare number is accepted
        only for dimensionless quantities (and byte counts).
    dimension : str
        A key of :data:`DIMENSIONS`.

    Returns
    -------
    float
        The value in the stored unit of ``dimension``.

    Raises
    ------
    QuantityError
        Not a string or number (a list, a mapping), longer than :data:`MAX_QUANTITY_CHARS`,
        unreadable, of the wrong dimension, or not finite (``nan``, ``inf``, a number too large
        for a float). The message quotes at most a short excerpt of the text.
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        kind = {list: "a list", dict: "a mapping", set: "a set", tuple: "a list", type(None): "nothing"}
        raise QuantityError(f"expected a {dimension.replace('_', ' ')} such as "
                            f"'{_example(dimension)}', got {kind.get(type(text), excerpt(text))}")
    if isinstance(text, str) and len(text) > MAX_QUANTITY_CHARS:
        raise QuantityError(f"{excerpt(text)} is too long for a quantity "
                            f"(at most {MAX_QUANTITY_CHARS} characters)")
    if isinstance(text, int) and abs(text) >= 2**1023:
        raise QuantityError(f"{excerpt(text)} is too large")
    value = _parse(text, dimension)
    if not math.isfinite(value):
        raise QuantityError(f"{excerpt(text)} is not a finite number")
    if dimension == "temperature" and value < ABSOLUTE_ZERO_DEGC:
        raise QuantityError(f"{excerpt(text)} is below absolute zero (-273.15 degC)")
    return value


#: The units scenarios and the catalogue use most, per dimension: unit text → the factor to the
#: stored unit, which is pint's own (``ureg.Quantity("1 L/min").to("m**3/s")``, bit for bit).
#: pint converts ``"x unit"`` as ``x * factor``, so ``"1.5 L/min"`` read here is the same float
#: pint gives; ``tests/test_units.py`` checks every entry against pint. A text this table does not
#: cover exactly (another unit, an expression, an error to explain) goes to pint, so that
#: importing pint and building its registry (~0.5 CPU-s) is paid only by scenarios that need it.
FAST_UNITS: dict[str, dict[str, float]] = {
    "time": {"s": 1.0, "ms": 0.001, "us": 1e-06, "min": 60.0, "h": 3600.0, "d": 86400.0},
    "power": {"W": 1.0, "kW": 1000.0, "MW": 1000000.0, "kVA": 1000.0},
    "energy": {"J": 1.0, "kWh": 3600000.0, "kW*h": 3600000.0, "MWh": 3600000000.0},
    "temperature": {"degC": 1.0},
    "temperature_difference": {"K": 1.0},
    "thermal_resistance": {"K/W": 1.0},
    "thermal_conductance": {"W/K": 1.0, "kW/K": 1000.0},
    "heat_capacity": {"J/K": 1.0, "kJ/K": 1000.0},
    "per_kelvin": {"1/K": 1.0},
    "volume_flow": {"m**3/s": 1.0, "L/min": 1.666666666666667e-05, "L/s": 0.0010000000000000002,
                    "m**3/h": 0.0002777777777777778},
    "volume": {"m**3": 1.0, "L": 0.0010000000000000002},
    "pressure": {"Pa": 1.0, "kPa": 1000.0, "bar": 100000.0},
    "flops": {"TFLOP/s": 1000000000000.0, "PFLOP/s": 1000000000000000.0},
    "bytes": {"": 1.0, "kB": 1000.0, "MB": 1000000.0, "GB": 1000000000.0, "TB": 1000000000000.0,
              "MiB": 1048576.0, "GiB": 1073741824.0},
    "bandwidth": {"MB/s": 1000000.0, "GB/s": 1000000000.0, "TB/s": 1000000000000.0, "Gbit/s": 125000000.0},
    "rate": {"1/s": 1.0, "1/h": 0.0002777777777777778, "MHz": 1000000.0, "GHz": 1000000000.0},
    "price": {"USD/kWh": 2.7777777777777776e-07},
    "mass_flow": {"kg/s": 1.0},
    "specific_heat": {"J/kg/K": 1.0},
    "power_rate": {"W/s": 1.0},
    "dimensionless": {"": 1.0},
}

#: A plain decimal number, then the unit text (no parentheses, no second number). A unit written
#: without a space must start with a letter other than e or j (Python's tokenizer, which pint
#: uses, reads "1e3J" as a complex number and "0.011/K" is not "0.01 1/K").
_FAST = re.compile(r"\s*([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
                   r"(?:\s+((?:1/)?[A-Za-z][A-Za-z/*0-9]*)|([A-DF-IK-Za-df-ik-z][A-Za-z/*0-9]*)|)\s*")

#: An integer with leading zeros ("007"): Python's tokenizer, and so pint, does not read it as 7.
_LEADING_ZERO = re.compile(r"[+-]?0[0-9]+")


@functools.lru_cache(maxsize=4096)
def _parse(text: str | float | int, dimension: str) -> float:
    dim, unit, _ = DIMENSIONS[dimension]
    if isinstance(text, (int, float)):
        if dim == "[]":
            return float(text)
        raise QuantityError(
            f"{excerpt(text)} has no unit; write it with one, e.g. '{text} {_example_unit(dimension)}'"
        )
    if not text.strip():
        raise QuantityError(f"expected a {dimension.replace('_', ' ')} such as '{_example(dimension)}'")
    fast = _FAST.fullmatch(text)
    if fast is not None and not _LEADING_ZERO.fullmatch(fast.group(1)):
        factor = FAST_UNITS.get(dimension, {}).get(fast.group(2) or fast.group(3) or "")
        if factor is not None:
            value = float(fast.group(1))
            return value if factor == 1.0 else value * factor
    ureg = registry()
    try:
        q = ureg.Quantity(text.strip())
    except Exception as exc:  # pint raises several unrelated types for bad text
        raise QuantityError(f"cannot read {excerpt(text)} as a quantity ({type(exc).__name__})") from None
    if not isinstance(q, ureg.Quantity):
        q = ureg.Quantity(q)
    if dimension == "temperature_difference" and q.units in (ureg.degC, ureg.degF):
        q = ureg.Quantity(q.magnitude, "delta_" + str(q.units))
    if q.dimensionless and dim != "[]":
        shown = text.strip() if len(text.strip()) <= 20 and excerpt(text.strip())[1:-1] == text.strip() else "1"
        raise QuantityError(
            f"{excerpt(text)} has no unit; write it with one, e.g. '{shown} {_example_unit(dimension)}'"
        )
    if not q.check(dim):
        raise QuantityError(
            f"{excerpt(text)} is not a {dimension.replace('_', ' ')} (expected units like "
            f"'{_example_unit(dimension)}', got '{q.units:~}')"
        )
    try:
        if not q.units._units:  # a plain number where a count is wanted (bytes, a ratio)
            return float(q.magnitude)
        # pint counts information in bits: name the stored unit (byte, byte/s), not base units.
        return float(q.to(unit or "dimensionless").magnitude)
    except (OverflowError, TypeError, ValueError):
        raise QuantityError(f"{excerpt(text)} is not a finite number") from None


_EXAMPLES = {
    "power": "kW",
    "energy": "kWh",
    "temperature": "degC",
    "temperature_difference": "K",
    "time": "s",
    "mass_flow": "kg/s",
    "volume_flow": "L/min",
    "thermal_resistance": "K/W",
    "thermal_conductance": "W/K",
    "heat_capacity": "J/K",
    "specific_heat": "J/kg/K",
    "per_kelvin": "1/K",
    "volume": "L",
    "pressure": "kPa",
    "flops": "PFLOP/s",
    "bytes": "GB",
    "bandwidth": "TB/s",
    "dimensionless": "",
    "rate": "1/h",
    "price": "USD/kWh",
    "power_rate": "W/s",
}


def _example_unit(dimension: str) -> str:
    return _EXAMPLES[dimension]


def _example(dimension: str) -> str:
    return f"1 {_EXAMPLES[dimension]}".strip()


def udunits(dimension: str) -> str:
    """UDUNITS label for a stored dimension (for dataset ``units`` attributes)."""
    return DIMENSIONS[dimension][2]


#: An example value per dimension, shown in the scenario JSON Schema.
FIELD_EXAMPLES = {
    "power": "1.2 kW",
    "temperature": "32 degC",
    "temperature_difference": "10 K",
    "time": "500 ms",
    "volume_flow": "1.5 L/min",
    "price": "0.08 USD/kWh",
    "power_rate": "200 W/s",
    "rate": "2.5 1/s",
    "volume": "10 m**3",
    "bytes": "8 MiB",
}


def quantity(dimension: str, *, positive: bool = False, non_negative: bool = False,
             limit: str | None = None):
    """A pydantic float field parsed from a string with units of ``dimension`` (SI inside).

    ``quantity("power", positive=True)`` accepts ``"1.2 kW"``, checks the dimension with pint and
    stores watts; its JSON Schema shows an example. With ``limit`` the value must also lie in
    ``twin.limits.LIMITS[limit]``. Used by the scenario models and the plant section
    (:mod:`twin.scenario.model`, :mod:`twin.cooling.config`).
    """
    from twin.limits import LIMITS, check_limit

    if limit is not None and limit not in LIMITS:
        raise KeyError(f"no limit named {limit!r}")

    def parse(value):
        try:
            si = parse_quantity(value, dimension)
        except QuantityError as exc:
            raise ValueError(str(exc)) from None
        if positive and not si > 0:
            raise ValueError(f"must be positive, got {excerpt(value)}")
        if non_negative and not si >= 0:
            raise ValueError(f"must not be negative, got {excerpt(value)}")
        if limit is not None:
            check_limit(limit, si, value)
        return si

    from pydantic import BeforeValidator, WithJsonSchema

    schema = {
        "type": "string",
        "description": f"{dimension.replace('_', ' ')} with units, e.g. '{FIELD_EXAMPLES[dimension]}'",
        "examples": [FIELD_EXAMPLES[dimension]],
    }
    return Annotated[float, BeforeValidator(parse), WithJsonSchema(schema)]


# Named physical constants used by the models (SI).
#: Specific heat of water at 30 degC [J kg-1 K-1] (IAPWS-95 via NIST WebBook: 4.178 kJ/kg/K).
CP_WATER = 4178.0
#: Density of water at 30 degC [kg m-3] (NIST WebBook: 995.6 kg/m3).
RHO_WATER = 995.6
#: Specific heat of dry air near 25 degC [J kg-1 K-1] (engineering tables, 1.006 kJ/kg/K).
CP_AIR = 1006.0
#: Density of air at 25 degC, 101.325 kPa [kg m-3] (ideal gas: 1.184 kg/m3).
RHO_AIR = 1.184
#: Absolute zero [degC] (the kelvin's definition, SI Brochure 9th ed.).
ABSOLUTE_ZERO_DEGC = -273.15
SECONDS_PER_HOUR = 3600.0
JOULES_PER_KWH = 3.6e6
