"""``twin catalog``: the hardware catalogue, or one entry with every figure and its source."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.table import Table

from twin.cli.common import fail, out


def catalog(name: Annotated[Optional[str], typer.Argument(help="Entry to show in full.")] = None):
    """List hardware entries with their key figures, or one entry with every figure and source."""
    from twin.catalog import load_catalog
    from twin.catalog.model import Count, Curve, Figure

    cat = load_catalog()
    if name is None:
        t = Table(title="chips")
        for col in ("name", "role", "cooling", "TDP", "FP8 dense", "HBM", "HBM bandwidth", "status"):
            t.add_column(col)
        for n, c in cat.chips.items():
            t.add_row(n, c.role, c.cooling, f"{c.tdp.si:,.0f} W",
                      f"{c.flops_fp8.si / 1e15:.2f} PF" if c.flops_fp8 else "",
                      str(c.hbm_capacity.value) if c.hbm_capacity else "",
                      f"{c.hbm_bandwidth.si / 1e12:.1f} TB/s" if c.hbm_bandwidth else "", c.status)
        out.print(t)
        t = Table(title="racks and systems")
        for col in ("name", "kind", "contents", "description"):
            t.add_column(col)
        for n, r in cat.racks.items():
            t.add_row(n, "rack", ", ".join(f"{c.value} × {s}" for s, c in r.sleds.items()), r.description)
        for n, s in cat.systems.items():
            t.add_row(n, "system", " + ".join(s.racks), s.description)
        out.print(t)
        t = Table(title="sleds, power shelves, CDUs")
        for col in ("name", "kind", "description"):
            t.add_column(col)
        for kind in ("sleds", "power_shelves", "cdus"):
            for n, e in getattr(cat, kind).items():
                t.add_row(n, kind.rstrip("s").replace("_", " "), e.description)
        out.print(t)
        out.print("`twin catalog NAME` shows every figure of an entry with its source.")
        return
    found = [(k, e) for k, n, e in cat.entries() if n == name]
    if not found:
        names = sorted(n for _, n, _ in cat.entries())
        fail(f"catalog: unknown entry '{name}' (known: {', '.join(names)})")
    kind, entry = found[0]
    t = Table(title=f"{name} ({kind.rstrip('s')}): {entry.description}")
    for col in ("figure", "value", "source"):
        t.add_column(col)
    for field in type(entry).model_fields:
        v = getattr(entry, field)
        if isinstance(v, Figure):
            t.add_row(field, str(v.value), v.source)
        elif isinstance(v, Count):
            t.add_row(field, str(v.value), v.source)
        elif isinstance(v, Curve):
            t.add_row(field, ", ".join(f"{x:g}→{y:.1%}" for x, y in v.points), v.source)
        elif isinstance(v, dict):
            for k, c in v.items():
                t.add_row(f"{field}.{k}", str(c.value), c.source)
        elif field not in ("description",) and v not in (None, ""):
            t.add_row(field, str(v), "")
    out.print(t)
