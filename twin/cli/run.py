"""``twin run``: run a scenario, write its dataset, print a summary."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from twin.cli.common import EXIT_INTERRUPTED, Progress, err, fail, load, out
from twin.export.interrupts import StopRequests
from twin.scenario.errors import ScenarioError


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
    if ensemble is not None:
        from twin.cli.ensemble import run_ensemble_command

        return run_ensemble_command(scenario, output, ensemble, duration=duration, step=step, seed=seed,
                                    record=record, solver=solver, workers=workers, keep_members=keep_members,
                                    progress=progress)
    from twin.export.writers import ZarrStream, output_format, write_tree
    from twin.sim.driver import Simulation
    from twin.thermal.integrators import INTEGRATORS

    if solver not in INTEGRATORS:
        fail(f"--solver: unknown '{solver}' (known: {', '.join(INTEGRATORS)})")
    loaded = load(scenario, duration, step, seed, record, output=output, allow_large=allow_large, plain=True)
    path = output or Path(loaded.scenario.output or f"out/{loaded.scenario.name}.nc")
    try:
        output_format(path)
    except ValueError as exc:
        if output is not None:
            fail(f"--output: {path}: {exc}")
        from twin.scenario.errors import FieldError

        fail(str(loaded.locate(FieldError(("output",), f"{path}: {exc}"))))
    with StopRequests() as stop:
        try:
            stream = ZarrStream(path) if output_format(path) == "zarr" else None
            sim = Simulation(loaded, solver=solver, sink=stream)
        except ScenarioError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            fail("interrupted before the run started; nothing written", EXIT_INTERRUPTED)
        bar = Progress.choose(loaded.scenario.name, sim.h, progress)
        try:
            try:
                sim.run(progress=bar)
            finally:
                stop.disarm()  # from here on a signal is honoured after the final write
                bar.close()
        except KeyboardInterrupt:
            pass
        # The data stops early if the run did not reach its end.
        interrupted = sim.step_index < sim.n_steps
        from twin.export.dataset import build_tree, run_warnings, summary  # xarray: after the run

        try:
            if stream is not None:
                stream.finish(interrupted)
            else:
                write_tree(build_tree(sim, interrupted=interrupted, index=False), path)
        except Exception as exc:
            if stream is not None:
                stream.abort()
            fail(f"{path}: could not write the result ({type(exc).__name__}: {exc}); nothing written", 1)
        if openmetrics is not None:
            import twin
            from twin.export.openmetrics import write_openmetrics

            write_openmetrics(twin.load(path), openmetrics)
        from twin.cli.summary import summary_table  # rich: when there is something to print

        out.print(summary_table(summary(sim), path, interrupted))
        for text in run_warnings(sim):  # one unwrapped line each, after the table
            out.print(f"warning: {text}", soft_wrap=True, markup=False, highlight=False)
        if interrupted:
            err.print(f"interrupted at {sim.time:,.0f} s of {sim.n_steps * sim.h:,.0f} s; "
                      f"the completed part is in {path}", markup=False, highlight=False)
            raise typer.Exit(EXIT_INTERRUPTED)
        if stop.requested:
            err.print(f"interrupted while writing; the run was complete and its result is in {path}",
                      markup=False, highlight=False)
            raise typer.Exit(EXIT_INTERRUPTED)
