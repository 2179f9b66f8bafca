"""``twin sweep``: a parameter sweep on Dask, combined along a `scenario` dimension."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from twin.cli.common import EXIT_INTERRUPTED, err, fail, out
from twin.scenario.errors import ScenarioError
from twin.sweep.run import DEFAULT_KPIS, check_plan, run_sweep, summary_table, variants_dir

#: Exit code when the sweep ran but at least one variant failed (its row says why).
EXIT_VARIANT_FAILED = 1


def sweep_command(
    sweep: Annotated[Path, typer.Argument(help="Sweep YAML file (base scenario + parameters).")],
    output: Annotated[Optional[Path], typer.Option(
        "-o", "--output", help="Combined result (.zarr or .nc); per-variant results go beside it in NAME.variants/.")] = None,
    scheduler: Annotated[Optional[str], typer.Option(
        help="Dask scheduler address (tcp://HOST:8786); default: a LocalCluster on this machine.")] = None,
    workers: Annotated[Optional[int], typer.Option(
        help="LocalCluster worker processes (default: CPU count); 0 runs in this process without Dask.")] = None,
    duration: Annotated[Optional[str], typer.Option(help="Override every variant's run length, e.g. '24 h'.")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
):
    """Run a parameter sweep on Dask and combine the variants along a `scenario` dimension.

    Exit 0 when every variant ran, 1 when any failed (the combined result is still written,
    with an error row for each), 2 for a bad sweep file, 130 when interrupted.
    """
    from twin.extras import MissingExtra
    from twin.sweep.spec import load_sweep

    if workers is not None and workers < 0:
        fail(f"--workers: must be 0 or more, got {workers}")
    if duration is not None:
        from twin.units import QuantityError, parse_quantity

        try:
            if not parse_quantity(duration, "time") > 0:
                fail(f"--duration: must be positive, got '{duration}'")
        except QuantityError as exc:
            fail(f"--duration: {exc}")
    try:
        plan = load_sweep(sweep, duration)
    except ScenarioError as exc:
        fail(str(exc))
    path = output or Path(f"out/{plan.name}.zarr")
    try:
        from twin.export.writers import output_format

        output_format(path)
    except ValueError as exc:
        fail(f"--output: {path}: {exc}" if output is not None else f"{path}: {exc}")
    try:
        checked = check_plan(plan)
    except ScenarioError as exc:
        fail(str(exc))
    if workers != 0 or scheduler:  # before saying anything: a missing extra is one line
        from twin.extras import require

        try:
            require("distributed", "sweep", "running on Dask (twin sweep, twin capacity --workers/--scheduler)")
        except MissingExtra as exc:
            fail(str(exc))
    client = None
    if scheduler:  # connect before saying anything: an unreachable scheduler is one line
        from twin.sweep.run import dask_client

        try:
            client = dask_client(scheduler=scheduler)
        except (ScenarioError, MissingExtra) as exc:
            fail(str(exc))
    unique = len({v.key for v in plan.variants})
    err.print(f"{sweep}: {len(plan.variants)} variants ({unique} distinct runs) of {plan.base}",
              highlight=False, soft_wrap=True)
    bar = Bar(enabled=progress and err.is_terminal, console=err.console)
    try:
        result = run_sweep(plan, path, workers=workers, client=client, progress=bar, checked=checked)
    except (ScenarioError, MissingExtra) as exc:
        bar.close()
        fail(str(exc))
    except KeyboardInterrupt:
        bar.close()
        fail(f"interrupted; finished variants are kept in {variants_dir(path)} "
              "and are not run again by the same command", EXIT_INTERRUPTED)
    finally:
        bar.close()
        if client is not None:
            client.close()
    from rich.console import Console

    # As wide as the table needs (rich tables do not stretch beyond their content).
    Console(width=max(out.width, 400)).print(summary_table(result.tree, plan.spec.kpis or DEFAULT_KPIS))
    out.print(f"{result.n_variants} variants: {result.n_run} runs, {result.n_skipped} already done, "
              f"{result.n_failed} failed; {result.wall:,.1f} s; written to {result.path}",
              highlight=False, soft_wrap=True)
    for i, e in sorted(result.errors.items()):
        err.print(f"variant {i}: {e}", markup=False, highlight=False, soft_wrap=True)
    root = result.tree.to_dataset()
    missing = [k for k in plan.spec.kpis or () if k not in root.data_vars]
    if missing and result.n_failed < result.n_variants:
        known = ", ".join(k for k in root.data_vars)
        err.print(f"{sweep}: kpis: {', '.join(missing)} not produced by any variant (known: {known})",
                  markup=False, highlight=False, soft_wrap=True)
    if result.n_failed:
        raise typer.Exit(EXIT_VARIANT_FAILED)


class Bar:
    """A rich progress bar over finished variants."""

    def __init__(self, enabled: bool, console):
        self.enabled, self.console, self.bar, self.task = enabled, console, None, None

    def __call__(self, done: int, total: int):
        if not self.enabled:
            return
        if self.bar is None:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(TextColumn("variants"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                TimeRemainingColumn(), console=self.console, transient=True)
            self.bar.start()
            self.task = self.bar.add_task("sweep", total=total)
        self.bar.update(self.task, completed=done)

    def close(self):
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
