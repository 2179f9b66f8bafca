"""``twin validate``: check a scenario without running it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from twin.cli.common import duration_text, fail, load, out
from twin.report.diagnostics import plural


def validate(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML file.")],
    allow_large: Annotated[bool, typer.Option(
        "--allow-large", help="Accept a scenario above the resource limits (README: Limits).")] = False,
    estimate: Annotated[bool, typer.Option(
        "--estimate", help="Also print the run's resource estimate (devices × steps, memory).")] = False,
):
    """Check a scenario without running it (exit 0, or 2 with the error)."""
    import numpy as np

    from twin.scenario.errors import FieldError
    from twin.sim.build import build_system
    from twin.workload.engine import Workload

    from twin.sim.variables import check_recorded

    loaded = load(scenario, allow_large=allow_large)
    system = build_system(loaded.scenario, loaded.catalog)
    try:
        check_recorded(loaded.scenario)
        workload = Workload(loaded.scenario, system, loaded.catalog, loaded.base)  # replay files, job placement
        if loaded.scenario.plant is not None:  # templates and weather files
            from twin.cooling.facility import Plant

            from twin.cooling.sizing import DesignHeat

            plant = Plant(loaded.scenario.plant, loaded.catalog, list(system.cdu_template), system.cdu_setpoint,
                          np.ones(system.cdu_name.size), loaded.scenario.time.step, base_dir=loaded.base,
                          design=DesignHeat.of_system(system))
            why = plant.weather.span_error(loaded.scenario.time.duration)
            if why is not None:
                raise FieldError(("plant", "weather", "file"), why)
    except FieldError as exc:
        fail(str(loaded.locate(exc)))
    sc = loaded.scenario
    out.print(f"{scenario}: ok — {plural(system.n_racks, 'rack')}, {plural(system.sled_name.size, 'sled')}, "
              f"{plural(system.n_devices, 'device')}, {duration_text(sc.time.duration)} at "
              f"{duration_text(sc.time.step)} steps")
    if estimate:
        out.print(f"estimate: {loaded.estimate.text()}")
    if workload.jobs is not None:
        for text in workload.jobs.warnings(0.0):  # jobs that can never be placed
            out.print(f"warning: {text}", soft_wrap=True, markup=False, highlight=False)
