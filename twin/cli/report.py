"""``twin report``: PNG plots and an HTML page of a result."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from twin.cli.common import fail, out
from twin.report.plots import write_report


def report_command(
    result: Annotated[Path, typer.Argument(help="Result of `twin run` (.nc/.zarr) or `twin sweep` (.zarr).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Folder for the PNGs and index.html.")] = Path("report"),
):
    """Write PNG plots and an HTML page (KPI table, power, PUE, temperatures, spectrum, jobs)."""

    if not result.exists():
        fail(f"{result}: file not found")
    try:
        import twin

        tree = twin.load(result)
    except ValueError:
        fail(f"{result}: not a twin result (expected the .nc or .zarr written by `twin run` or `twin sweep`)")
    except (OSError, KeyError) as exc:
        fail(f"{result}: not a twin result ({type(exc).__name__}: {exc})".splitlines()[0])
    from twin.extras import MissingExtra

    try:
        page = write_report(tree, output)
    except MissingExtra as exc:
        fail(str(exc))
    pngs = sorted(p.name for p in output.glob("*.png"))
    out.print(f"{page}: {len(pngs)} plots ({', '.join(pngs)})", highlight=False, soft_wrap=True)
