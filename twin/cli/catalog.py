"""``twin catalog``: every kind of hardware entry, one kind, or one entry with every figure and source."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from twin.cli.common import fail, load, out


def _si(x: float, unit: str) -> str:
    """A figure with an SI prefix: 1.8e3 W → '1.8 kW'."""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.3g} {prefix}{unit}"
    if 0 < abs(x) < 1e-3:
        return f"{x * 1e6:.3g} µ{unit}"
    return f"{x:.3g} {unit}"


def _flow(m3s: float) -> str:
    return f"{m3s * 6e4:,.0f} L/min"


def _items(counts) -> str:
    return ", ".join(f"{c.value} {n}" for n, c in counts.items())


def _sled_power(cat, name) -> float:
    """Sled power with every device at TDP, plus overhead and fans [W]."""
    sled = cat.sleds[name]
    return (sum(cat.chips[c].tdp.si * n.value for c, n in sled.devices.items())
            + sled.overhead.si + sled.fan_power.si)


def _rack_power(cat, name) -> float:
    return sum(_sled_power(cat, s) * n.value for s, n in cat.racks[name].sleds.items())


#: Kind → key figures of one entry, as one short text (the overview's middle column).
FIGURES = {
    "chips": lambda cat, n, e: ", ".join(x for x in (
        e.role, e.cooling, f"TDP {_si(e.tdp.si, 'W')}",
        (lambda k: f"{k.upper()} {e.flops[k].si / 1e15:.3g} PF")(max(e.flops, key=lambda k: e.flops[k].si))
        if e.flops else "",
        f"HBM {_si(e.hbm_bandwidth.si, 'B/s')}" if e.hbm_bandwidth else "") if x),
    "sleds": lambda cat, n, e: f"{_items(e.devices)}; {_si(_sled_power(cat, n), 'W')} at TDP",
    "power_shelves": lambda cat, n, e: f"{e.psus.value} × {_si(e.psu_rating.si, 'W')} PSUs"
                                        + (f", {e.redundant.value} spare" if e.redundant else ""),
    "racks": lambda cat, n, e: (f"{_items(e.sleds)}; {_si(_rack_power(cat, n), 'W')} at TDP, "
                                f"{e.shelves.value} × {e.power_shelf}, {_flow(e.coolant_flow.si)}"
                                + "".join(f"; {c} on {f}" for c, f in e.fabric.items())),
    "systems": lambda cat, n, e: (" + ".join(e.racks)
                                  + "".join(f"; {c} on {f}" for c, f in e.fabric.items())),
    "fabrics": lambda cat, n, e: ", ".join(x for x in (
        e.scope, e.topology,
        f"{_si(e.bandwidth.si, 'B/s')} per chip" if e.bandwidth else "",
        f"{_si(e.port_speed.si * 8, 'bit/s')} ports" if e.port_speed else "",
        f"{_si(e.latency.si, 's')} per step",
        f"domain {e.domain_size.value}" if e.domain_size else "",
        f"switch chip {e.switch_chip} ({_si(cat.chips[e.switch_chip].tdp.si, 'W')})" if e.switch_chip else "",
        f"radix {e.switch_radix.value}, {_si(e.switch_power.si, 'W')} per switch, {_si(e.optics_power.si, 'W')} "
        "per transceiver" if e.switch_radix else "") if x),
    "cdus": lambda cat, n, e: f"{_si(e.capacity.si, 'W')}, {_flow(e.design_flow.si)}, approach {e.approach.si:g} K",
    "dry_coolers": lambda cat, n, e: f"{_si(e.capacity.si, 'W')}, approach {e.approach.si:g} K, fans {_si(e.fan_power.si, 'W')}",
    "cooling_towers": lambda cat, n, e: f"{_si(e.capacity.si, 'W')}, approach {e.approach.si:g} K, fans {_si(e.fan_power.si, 'W')}",
    "chillers": lambda cat, n, e: f"{_si(e.capacity.si, 'W')}, {e.condenser}-cooled, {e.carnot_fraction.si:.2f} of Carnot",
    "crahs": lambda cat, n, e: f"{_si(e.capacity.si, 'W')}, fans {_si(e.fan_power.si, 'W')}",
    "pumps": lambda cat, n, e: f"{_flow(e.design_flow.si)}, {_si(e.power.si, 'W')}",
    "ups": lambda cat, n, e: f"{_si(e.rating.si, 'W')}" + (f", battery {e.battery_energy.si / 3.6e6:,.0f} kWh"
                                                            if e.battery_energy else ""),
    "transformers": lambda cat, n, e: f"{_si(e.rating.si, 'VA')}, losses {_si(e.no_load_loss.si, 'W')} + "
                                      f"{_si(e.load_loss.si, 'W')} at rating",
    "coolants": lambda cat, n, e: (f"{len(e.properties.points)} property rows, "
                                   f"{e.properties.points[0][0]:g} to {e.properties.points[-1][0]:g} °C"),
    "battery_backup_units": lambda cat, n, e: f"{_si(e.rating.si, 'W')}, {e.energy.si / 3.6e6:.3g} kWh",
    "room_coolers": lambda cat, n, e: f"{e.carnot_fraction.si:.2f} of Carnot, COP ≤ {e.cop_max.si:g}",
}


def _kind_of(text: str) -> str:
    from twin.catalog.model import KINDS, PLURAL, SINGULAR

    key = text.strip().lower().replace("-", "_").replace(" ", "_")
    for kind in KINDS:
        words = {kind, SINGULAR[kind].lower().replace(" ", "_"), PLURAL[kind].lower().replace(" ", "_")}
        if key in words:
            return kind
    fail(f"--kind: unknown kind '{text}' (known: {', '.join(KINDS)})")


def _overview(cat, kinds) -> None:
    from twin.catalog.model import PLURAL

    width = max((len(n) for k in kinds for n in getattr(cat, k)), default=4)
    for kind in kinds:
        entries = getattr(cat, kind)
        if not entries:
            continue
        t = Table(title=f"{PLURAL[kind]} ({len(entries)})", title_justify="left", show_lines=False,
                  expand=False)
        t.add_column("name", no_wrap=True, min_width=width)
        t.add_column("key figures", overflow="fold", ratio=3)
        t.add_column("description", overflow="fold", ratio=2)
        for name, entry in entries.items():
            label = name + (" *" if entry.status == "projected" else "")
            t.add_row(label, FIGURES.get(kind, lambda *_: "")(cat, name, entry), entry.description)
        out.print(t)
    out.print("* projected (not shipping; figures are estimates from announcements).\n"
              "`twin catalog NAME` shows every figure of an entry with its source;\n"
              "`twin catalog NAME --yaml` prints it to paste under a scenario's `catalog:`.",
              highlight=False, markup=False)


def _detail(kind: str, name: str, entry) -> None:
    from twin.catalog.model import SINGULAR, Claim, Count, Curve, Figure, Range

    t = Table(title=f"{name} ({SINGULAR[kind]}): {entry.description}", title_justify="left")
    t.add_column("figure", no_wrap=True)
    t.add_column("value", overflow="fold")
    t.add_column("source", overflow="fold")
    for field in type(entry).model_fields:
        v = getattr(entry, field)
        if isinstance(v, (Figure, Count)):
            t.add_row(field, str(v.value), v.source)
        elif isinstance(v, Curve):
            t.add_row(field, ", ".join(f"{x:g}→{y:.1%}" for x, y in v.points), v.source)
        elif isinstance(v, Range):
            t.add_row(field, f"{v.low} to {v.high}", v.source)
        elif isinstance(v, list) and v and isinstance(v[0], Claim):
            for c in v:
                ratio = f"{c.ratio:g}x " if c.ratio is not None else ""
                t.add_row("claim", f"{c.metric}: {ratio}vs {c.versus}; \"{c.statement}\" ({c.basis})", c.source)
        elif isinstance(v, dict):
            for k, c in v.items():
                if isinstance(c, (Figure, Count)):
                    t.add_row(f"{field}.{k}", str(c.value), c.source)
                else:
                    t.add_row(f"{field}.{k}", str(c), "")
        elif isinstance(v, list):
            t.add_row(field, ", ".join(map(str, v)), "")
        elif field not in ("description",) and v not in (None, ""):
            t.add_row(field, str(v), "")
    out.print(t)


def entry_yaml(kind: str, name: str, entry) -> str:
    """One entry as YAML ready to paste under a scenario's ``catalog:`` (figures on one line each)."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def represent_dict(dumper, data):
        flow = "source" in data and all(not isinstance(v, (dict, list)) or k == "points"
                                        for k, v in data.items())
        return dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=flow)

    def represent_list(dumper, data):
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)

    Dumper.add_representer(dict, represent_dict)
    Dumper.add_representer(list, represent_list)
    Dumper.add_representer(tuple, represent_list)
    data = entry.model_dump(mode="python", exclude_none=True, exclude_defaults=True)
    data = {"description": entry.description, **data}
    return yaml.dump({kind: {name: data}}, Dumper=Dumper, sort_keys=False, allow_unicode=True,
                     width=4096, default_flow_style=False)


def catalog(
    name: Annotated[Optional[str], typer.Argument(help="Entry to show in full.")] = None,
    kind: Annotated[Optional[str], typer.Option("--kind", help="Only this kind, e.g. chips, racks, fabrics, cdus.")] = None,
    as_yaml: Annotated[bool, typer.Option("--yaml", help="Print the entry as YAML, ready to paste under `catalog:`.")] = False,
    scenario: Annotated[Optional[Path], typer.Option(
        "--scenario", help="Show the catalogue with this scenario's `catalog:` entries merged in.")] = None,
    fields: Annotated[bool, typer.Option("--fields", help="Print every field of each kind with its unit (Markdown).")] = False,
):
    """List every kind of hardware entry with key figures, or one entry with every figure and source."""
    from twin.catalog import load_catalog
    from twin.catalog.model import KINDS

    cat = load(scenario).catalog if scenario is not None else load_catalog()
    kinds = [_kind_of(kind)] if kind is not None else list(KINDS)
    if fields:
        from twin.catalog.reference import field_reference

        print(field_reference(kinds), end="")
        return
    if name is None:
        if as_yaml:
            fail("--yaml: give an entry NAME, e.g. `twin catalog trn4-tray --yaml`")
        _overview(cat, kinds)
        return
    found = [(k, e) for k, n, e in cat.entries() if n == name and k in kinds]
    if not found:
        names = sorted(n for k, n, _ in cat.entries() if k in kinds)
        fail(f"catalog: unknown entry '{name}' (known: {', '.join(names)})")
    kind_, entry = found[0]
    if as_yaml:
        print(entry_yaml(kind_, name, entry), end="")
        return
    _detail(kind_, name, entry)
