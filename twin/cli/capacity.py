"""``twin capacity``: how many racks of a template fit a power (and cooling) budget."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from twin.cli.common import err, fail, out
from twin.scenario.errors import ScenarioError
from twin.sweep.capacity import Probe, _mw, _parse_fraction, capacity_search


def capacity_command(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML file (its workload runs on the added racks).")],
    rack: Annotated[str, typer.Option("--rack", help="Catalogue rack or system template to add.")],
    budget_power: Annotated[str, typer.Option("--budget-power", help="Facility power budget, e.g. '20MW' (peak p_facility).")],
    budget_cooling: Annotated[Optional[str], typer.Option(
        "--budget-cooling", help="Cooling budget, e.g. '18MW' (peak heat from racks to liquid and air + CDU pumps).")] = None,
    tolerance_throttle: Annotated[str, typer.Option(
        "--tolerance-throttle", help="Largest share of device-time throttled and of rack-time capped.")] = "1%",
    row: Annotated[Optional[str], typer.Option(help="Row that receives the racks (default: the first).")] = None,
    cdu: Annotated[Optional[str], typer.Option(
        help="Existing CDU or family for the racks (default: a new family sized by design flow).")] = None,
    duration: Annotated[Optional[str], typer.Option(help="Override the run length of every probe, e.g. '1 h'.")] = None,
    workers: Annotated[int, typer.Option(help="Probes at once (>1: a Dask LocalCluster of that many processes).")] = 1,
    scheduler: Annotated[Optional[str], typer.Option(help="Dask scheduler address (tcp://HOST:8786).")] = None,
    max_units: Annotated[int, typer.Option(help="Largest number of template units tried.")] = 10_000,
):
    """Find how many racks of a template fit a power (and cooling) budget, by bisection over runs."""
    from rich.table import Table

    from twin.extras import MissingExtra
    from twin.units import QuantityError, parse_quantity

    budgets = {}
    for option, text in (("--budget-power", budget_power), ("--budget-cooling", budget_cooling)):
        if text is None:
            continue
        try:
            budgets[option] = parse_quantity(text, "power")
        except QuantityError as exc:
            fail(f"{option}: {exc}")
        if not budgets[option] > 0:
            fail(f"{option}: must be positive, got '{text}'")
    bp, bc = budgets["--budget-power"], budgets.get("--budget-cooling")
    try:
        tol = _parse_fraction(tolerance_throttle)
    except ValueError as exc:
        fail(f"--tolerance-throttle: {exc}")
    if not 0 <= tol <= 1:
        fail(f"--tolerance-throttle: must be between 0% and 100%, got '{tolerance_throttle}'")
    if workers < 1:
        fail(f"--workers: must be 1 or more, got {workers}")
    if max_units < 1:
        fail(f"--max-units: must be 1 or more, got {max_units}")

    def show(p: Probe):
        state = "fits" if p.ok else "does not fit: " + ", ".join(p.violated)
        err.print(f"  {p.n:>6} × {rack}: {_mw(p.p_facility_peak)} facility, {_mw(p.cooling_peak)} cooling, "
                  f"{p.throttled_share:.1%} throttled, {p.capped_share:.1%} capped → {state}"
                  + (f" ({p.error})" if p.error else ""), highlight=False, markup=False, soft_wrap=True)

    try:
        res = capacity_search(scenario, rack, bp, bc, tol, row=row, cdu=cdu, duration=duration,
                              workers=workers, scheduler=scheduler, max_units=max_units, on_probe=show)
    except (ScenarioError, MissingExtra) as exc:
        fail(str(exc))
    fit = res.at_limit
    table = Table(title="twin capacity", show_header=False)
    table.add_column("quantity")
    table.add_column("value", justify="right")
    unit = f" ({res.racks_per_unit} racks each)" if res.racks_per_unit > 1 else ""
    table.add_row("template", f"{rack}{unit}")
    table.add_row("row / CDU", f"{res.row} / {res.cdu}")
    table.add_row("fits", f"{res.n:,} units = {res.racks:,} racks added ({fit.n_racks:,} racks in all)")
    table.add_row("power budget / peak facility power", f"{_mw(bp)} / {_mw(fit.p_facility_peak)}")
    if bc is not None:
        table.add_row("cooling budget / peak cooling load", f"{_mw(bc)} / {_mw(fit.cooling_peak)}")
    table.add_row("throttled / capped (tolerance)",
                  f"{fit.throttled_share:.2%} / {fit.capped_share:.2%} ({tol:.2%})")
    table.add_row("binding constraint", ", ".join(res.binding) if res.binding else "none")
    over = res.over_limit
    if over is not None:
        table.add_row(f"with {over.n:,} units", f"{_mw(over.p_facility_peak)} facility, {_mw(over.cooling_peak)} cooling, "
                                                f"{over.throttled_share:.1%} throttled, {over.capped_share:.1%} capped")
    table.add_row("probes / wall time", f"{len(res.probes)} / {res.wall:,.1f} s")
    from rich.console import Console

    Console(width=max(out.width, 120)).print(table)
    for note in res.notes:
        err.print(f"note: {note}", highlight=False)
