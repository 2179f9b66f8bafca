"""Quantity fields of the scenario models: strings with units, parsed once to SI floats.

``quantity("power", positive=True)`` is a pydantic field type that accepts ``"1.2 kW"``, checks
the dimension with pint and stores watts; its JSON Schema shows an example. Shared by the
scenario models (:mod:`twin.scenario.model`) and the plant section (:mod:`twin.cooling.config`).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, WithJsonSchema

from twin.units import QuantityError, parse_quantity

EXAMPLES = {
    "power": "1.2 kW",
    "temperature": "32 degC",
    "temperature_difference": "10 K",
    "time": "500 ms",
    "volume_flow": "1.5 L/min",
    "price": "0.08 USD/kWh",
    "power_rate": "200 W/s",
    "rate": "2.5 1/s",
    "volume": "10 m**3",
}


def quantity(dimension: str, *, positive: bool = False, non_negative: bool = False):
    """A pydantic float field parsed from a string with units of ``dimension`` (SI inside)."""

    def parse(value):
        try:
            si = parse_quantity(value, dimension)
        except QuantityError as exc:
            raise ValueError(str(exc)) from None
        if positive and not si > 0:
            raise ValueError(f"must be positive, got {value!r}")
        if non_negative and not si >= 0:
            raise ValueError(f"must not be negative, got {value!r}")
        return si

    schema = {
        "type": "string",
        "description": f"{dimension.replace('_', ' ')} with units, e.g. '{EXAMPLES[dimension]}'",
        "examples": [EXAMPLES[dimension]],
    }
    return Annotated[float, BeforeValidator(parse), WithJsonSchema(schema)]
