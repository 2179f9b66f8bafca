"""``twin run``: run a scenario, write its dataset, print a summary.

The command's options are declared here for typer; what it does is
:func:`twin.cli.scenario_run.run_scenario` (no typer there: a plain command line reaches it
through :mod:`twin.cli.fastparse` without importing typer)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from twin.cli.scenario_run import run_scenario


def run(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML file.")],
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Result file: .nc (NetCDF) or .zarr.")] = None,
    duration: Annotated[Optional[str], typer.Option(help="Override the run length, e.g. '24 h'.")] = None,
    step: Annotated[Optional[str], typer.Option(help="Override the thermal step, e.g. '1 s'.")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Override the random seed.")] = None,
    record: Annotated[Optional[list[str]], typer.Option(
        help="Override a recording interval: GROUP=INTERVAL or GROUP=off (repeatable).")] = None,
    solver: Annotated[str, typer.Option(help="Integrator: fast (exact exponential) or reference (solve_ivp).")] = "fast",
    openmetrics: Annotated[Optional[Path], typer.Option(
        "--openmetrics", help="Also write OpenMetrics with timestamps (for promtool tsdb create-blocks-from openmetrics).")] = None,
    progress: Annotated[Optional[bool], typer.Option(
        "--progress/--no-progress",
        help="Progress on long runs: a bar on a terminal; --progress also prints a line every 10 s "
             "when stderr is not a terminal (default: only on a terminal).")] = None,
    allow_large: Annotated[bool, typer.Option(
        "--allow-large", help="Run even when the resource estimate is above the limits (README: Limits).")] = False,
    ensemble: Annotated[Optional[int], typer.Option(
        "--ensemble", help="Run N members with the fitted and catalogue uncertainties sampled (--seed seeds the "
                           "draws); write p5/p50/p95 of every variable and KPI.")] = None,
    workers: Annotated[Optional[int], typer.Option(
        help="Ensemble: Dask worker processes (default: CPU count; 0 runs the members here).")] = None,
    keep_members: Annotated[bool, typer.Option("--keep-members", help="Ensemble: keep every member's result.")] = False,
):
    """Run a scenario and write its dataset; print a summary."""
    return run_scenario(scenario, output, duration, step, seed, record, solver, openmetrics, progress,
                        allow_large, ensemble, workers, keep_members)
