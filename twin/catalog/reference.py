"""The catalogue's field reference, generated from the schema (pydantic models) so that it stays true.

``twin catalog --fields`` prints it; the README's "Catalogue fields" section is this text (a test
compares them).
"""

from __future__ import annotations

import types
import typing

from pydantic.fields import FieldInfo

from twin.catalog.model import ENTRY_MODELS, KINDS, PLURAL, Count, Curve, Dimension, Figure
from twin.units import DIMENSIONS


def _metadata(tp) -> tuple[type, list]:
    """Strip Optional and Annotated: the bare type and the Annotated metadata."""
    meta = []
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            args = typing.get_args(tp)
            tp, meta = args[0], meta + list(args[1:])
        elif origin in (typing.Union, types.UnionType):
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        else:
            return tp, meta


def value_kind(info: FieldInfo) -> str:
    """What a field holds, in words, with its unit: ``power [W]``, ``map of chip → count``."""
    tp, meta = _metadata(info.annotation)
    dims = [m for m in list(info.metadata) + meta if isinstance(m, Dimension)]
    if tp is Figure:
        dim = str(dims[0]) if dims else "dimensionless"
        unit = DIMENSIONS[dim][2]
        return f"{dim.replace('_', ' ')} [{unit}]"
    if tp is Count:
        return "count"
    if tp is Curve:
        return "curve [[load, efficiency], ...]"
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{a}`" for a in typing.get_args(tp))
    if origin is dict:
        value = typing.get_args(tp)[1]
        return "map of name → " + ("count" if value is Count else "name")
    if origin is list:
        return "list of names"
    return "text" if tp is str else getattr(tp, "__name__", str(tp))


#: The kinds the README documents field by field (the IT hardware; the plant's are in ``--fields``).
HARDWARE_KINDS = ("chips", "sleds", "power_shelves", "racks", "systems", "fabrics")


def field_reference(kinds=KINDS) -> str:
    """Markdown tables, one per kind: every field, what it holds with its unit, whether it is
    required, and its meaning (the schema's field descriptions)."""
    out = []
    for kind in kinds:
        model = ENTRY_MODELS[kind]
        out.append(f"**{PLURAL[kind]}** (`{kind}`): {(model.__doc__ or '').strip().splitlines()[0]}\n")
        out.append("| field | value | required | meaning |")
        out.append("| --- | --- | --- | --- |")
        for name, info in model.model_fields.items():
            meaning = (info.description or "").replace("|", "\\|")
            out.append(f"| `{name}` | {value_kind(info)} | {'yes' if info.is_required() else ''} | {meaning} |")
        out.append("")
    return "\n".join(out)
