"""What ``twin run`` does, without typer (see :mod:`twin.cli.run` for its options)."""

from __future__ import annotations

from pathlib import Path

from twin.cli.common import EXIT_INTERRUPTED, Exit, Progress, err, fail, load, out
from twin.export.interrupts import StopRequests
from twin.scenario.errors import ScenarioError


def run_scenario(scenario: Path, output: Path | None = None, duration: str | None = None, step: str | None = None,
                 seed: int | None = None, record: list[str] | None = None, solver: str = "fast",
                 openmetrics: Path | None = None, progress: bool | None = None, allow_large: bool = False,
                 ensemble: int | None = None, workers: int | None = None, keep_members: bool = False):
    """Run a scenario and write its dataset; print a summary (``twin run``, whose options
    :func:`twin.cli.run.run` declares)."""
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
            raise Exit(EXIT_INTERRUPTED)
        if stop.requested:
            err.print(f"interrupted while writing; the run was complete and its result is in {path}",
                      markup=False, highlight=False)
            raise Exit(EXIT_INTERRUPTED)
