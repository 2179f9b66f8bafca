"""Command line: ``twin run | validate | schema | catalog``."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from twin.scenario.errors import ScenarioError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="twin: power-thermal digital twin of AI datacenters.",
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)

#: Exit codes.
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def _fail(message: str, code: int = EXIT_BAD_INPUT):
    err.print(message, markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _load(scenario: Path, duration=None, step=None, seed=None, record=None):
    from twin.scenario import load_scenario

    overrides = {}
    if record:
        rec = {}
        for item in record:
            group, sep, interval = item.partition("=")
            if not sep or not group.strip() or not interval.strip():
                _fail(f"--record: expected GROUP=INTERVAL (e.g. device=off, rack=10s), got '{item}'")
            rec[group.strip()] = interval.strip()
        overrides["record"] = rec
    time_over = {k: v for k, v in (("duration", duration), ("step", step)) if v is not None}
    if time_over:
        overrides["time"] = time_over
    if seed is not None:
        overrides["seed"] = seed
    try:
        return load_scenario(scenario, overrides)
    except ScenarioError as exc:
        _fail(str(exc))


class _Progress:
    """A rich progress bar that appears only once a run has taken more than ``after`` seconds."""

    def __init__(self, label: str, simulated_step: float, after: float = 2.0, enabled: bool = True):
        self.label, self.h, self.after, self.enabled = label, simulated_step, after, enabled
        self.t0 = time.perf_counter()
        self.bar = None
        self.task = None

    def __call__(self, done: int, total: int):
        if not self.enabled:
            return
        if self.bar is None:
            if time.perf_counter() - self.t0 < self.after or done >= total:
                return
            from rich.progress import (BarColumn, Progress, TaskProgressColumn, TextColumn,
                                       TimeRemainingColumn)

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                                TextColumn("{task.fields[speed]}"), TimeRemainingColumn(),
                                console=err, transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=total, speed="")
        wall = time.perf_counter() - self.t0
        speed = f"{done * self.h / wall:,.0f}× real time" if wall > 0 else ""
        self.bar.update(self.task, completed=done, speed=speed)

    def close(self):
        if self.bar is not None:
            self.bar.stop()


def _summary_table(kpi: dict, path: Path | None, interrupted: bool) -> Table:
    import numpy as np

    def mw(x):
        return f"{x / 1e6:,.3f} MW" if x >= 1e6 else f"{x / 1e3:,.1f} kW"

    table = Table(title="twin run summary" + (" (interrupted)" if interrupted else ""), show_header=False)
    table.add_column("quantity")
    table.add_column("value", justify="right")
    rows = [
        ("simulated time", f"{kpi['simulated_seconds'] / 3600:,.2f} h"),
        ("devices / racks", f"{kpi['n_devices']:,} / {kpi['n_racks']:,}"),
        ("IT energy", f"{kpi['energy_it_J'] / 3.6e9:,.3f} MWh"),
        ("facility energy", f"{kpi['energy_facility_J'] / 3.6e9:,.3f} MWh"),
        ("mean IT power", mw(kpi["p_it_mean_W"])),
        ("peak facility power", mw(kpi["p_facility_peak_W"])),
        ("peak rack power", mw(kpi["p_rack_peak_W"])),
        ("PUE (energy-weighted)", f"{kpi['pue']:.3f}"),
        ("heat to liquid / air", f"{kpi['energy_liquid_J'] / max(kpi['energy_it_J'], 1e-9):.1%} / "
                                 f"{kpi['energy_air_J'] / max(kpi['energy_it_J'], 1e-9):.1%}"),
        ("max die temperature", f"{kpi['t_die_max_degC']:.1f} °C"),
        ("throttled time", f"{kpi['throttled_device_seconds']:,.0f} device-s "
                           f"({kpi['devices_throttled']} devices)"),
        ("devices tripped", f"{kpi['devices_tripped']}"),
        ("energy balance residual", f"{kpi['energy_residual']:.1e}"),
    ]
    if "wue_L_per_kWh" in kpi:
        rows.append(("WUE (water / IT energy)", f"{kpi['wue_L_per_kWh']:.3f} L/kWh ({kpi['water_m3']:,.1f} m³)"))
        rows.append(("chiller / full free cooling", f"{kpi['chiller_hours']:,.1f} h / {kpi['full_free_cooling_hours']:,.1f} h"))
        rows.append(("cold aisle outside ASHRAE", f"{kpi['hours_outside_ashrae_recommended']:,.1f} h recommended, "
                                                  f"{kpi['hours_outside_ashrae_allowable']:,.1f} h allowable"))
        rows.append(("plant energy residual", f"{kpi['plant_energy_residual']:.1e}"))
    if "ride_through_s" in kpi:
        rows.append(("UPS battery left", f"{kpi['battery_left_J'] / 3.6e6:,.1f} kWh"
                     + (f" (ran out after {kpi['ride_through_s']:,.0f} s)" if np.isfinite(kpi['ride_through_s']) else "")))
    if "peak_to_average" in kpi:
        rows.append((f"IT power peak/average ({kpi['p_it_record_interval_s']:g} s)",
                     f"{kpi['peak_to_average']:.2f}"))
        rows.append(("largest IT power ramp", f"{kpi['largest_ramp_W_per_s'] / 1e3:,.1f} kW/s"))
        if kpi["p_it_record_interval_s"] <= 5.0:  # the band needs samples at least every 5 s
            rows.append(("fluctuation in 0.1-20 Hz", f"{kpi['band_0p1_20Hz_share']:.0%}"))
    if "first_event_s" in kpi:
        def after(x):
            return "never" if not np.isfinite(x) else f"{x:,.0f} s"
        rows.append(("first event at", f"{kpi['first_event_s']:,.0f} s"))
        rows.append(("time to first throttle / trip",
                     f"{after(kpi['time_to_first_throttle_s'])} / {after(kpi['time_to_first_trip_s'])}"))
    if kpi.get("capped_rack_seconds"):
        rows.append(("capped by power limits", f"{kpi['capped_rack_seconds']:,.0f} rack-s"))
    if kpi.get("energy_smoothing_J"):
        rows.append(("energy spent on smoothing", f"{kpi['energy_smoothing_J'] / 3.6e6:,.1f} kWh"))
    for key in [k for k in kpi if k.startswith("job_") and k.endswith("_iterations")]:
        name = key[4:-len("_iterations")]
        def get(suffix, _name=name):
            return kpi.get(f"job_{_name}_{suffix}", float("nan"))
        unit = {"inference": "requests", "cpu": "device-s of work"}.get(kpi.get(f"job_{name}_kind"), "it")
        line = f"{get('iterations'):,.0f} {unit}"
        if get("tokens") > 0:
            ept = get("energy_per_token_J")
            ept_text = f"{ept:,.3g} J/token" if ept >= 1 else f"{ept * 1e3:,.3g} mJ/token"
            tok = get("tokens")
            tok_text = f"{tok / 1e9:,.2f} G" if tok >= 1e9 else f"{tok / 1e6:,.2f} M" if tok >= 1e6 else f"{tok:,.0f}"
            line += f", {tok_text} tokens, {ept_text}"
            if f"job_{name}_cost_per_million_tokens" in kpi:
                line += f", {get('cost_per_million_tokens'):.4f}/M tokens"
        elif get("iterations") > 0 and unit == "it":
            line += f", {get('energy_per_iteration_J') / 1e6:,.2f} MJ/it"
        if get("throttle_loss_s") > 0:
            line += f", {get('throttle_loss_s'):,.0f} s lost to throttling"
        if get("failures") > 0:
            line += f", {get('failures'):.0f} failures"
        rows.append((f"job {name}", line))
    if path is not None:
        rows.append(("output", str(path)))
    for k, v in rows:
        table.add_row(k, v)
    return table


@app.command()
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
    progress: Annotated[bool, typer.Option(help="Show a progress bar on long runs.")] = True,
):
    """Run a scenario and write its dataset; print a summary."""
    from twin.export.dataset import build_tree, summary
    from twin.export.writers import ZarrStream, output_format, write_tree
    from twin.sim.driver import Simulation
    from twin.thermal.integrators import INTEGRATORS

    if solver not in INTEGRATORS:
        _fail(f"--solver: unknown '{solver}' (known: {', '.join(INTEGRATORS)})")
    loaded = _load(scenario, duration, step, seed, record)
    path = output or Path(loaded.scenario.output or f"out/{loaded.scenario.name}.nc")
    try:
        output_format(path)
    except ValueError as exc:
        _fail(f"{path}: {exc}")
    stream = ZarrStream(path) if output_format(path) == "zarr" else None
    try:
        sim = Simulation(loaded, solver=solver, sink=stream)
    except ScenarioError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail("interrupted before the run started; nothing written", EXIT_INTERRUPTED)
    bar = _Progress(loaded.scenario.name, sim.h, enabled=progress and err.is_terminal)
    interrupted = False
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        sim.run(progress=bar)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
        signal.signal(signal.SIGTERM, previous)
    try:
        if stream is not None:
            stream.finish(interrupted)
        else:
            write_tree(build_tree(sim, interrupted=interrupted), path)
    except BaseException:
        if stream is not None:
            stream.abort()
        raise
    if openmetrics is not None:
        import twin
        from twin.export.openmetrics import write_openmetrics

        write_openmetrics(twin.load(path), openmetrics)
    out.print(_summary_table(summary(sim), path, interrupted))
    if interrupted:
        err.print(f"interrupted at {sim.time:,.0f} s of {sim.n_steps * sim.h:,.0f} s; "
                  f"the completed part is in {path}")
        raise typer.Exit(EXIT_INTERRUPTED)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


@app.command()
def validate(scenario: Annotated[Path, typer.Argument(help="Scenario YAML file.")]):
    """Check a scenario without running it (exit 0, or 2 with the error)."""
    import numpy as np

    from twin.scenario.errors import FieldError
    from twin.sim.build import build_system
    from twin.workload.engine import Workload

    loaded = _load(scenario)
    system = build_system(loaded.scenario, loaded.catalog)
    try:
        Workload(loaded.scenario, system, loaded.catalog, loaded.base)  # replay files, job placement
        if loaded.scenario.plant is not None:  # templates and weather files
            from twin.cooling.facility import Plant

            Plant(loaded.scenario.plant, loaded.catalog, list(system.cdu_template), system.cdu_setpoint,
                  np.ones(system.cdu_name.size), loaded.scenario.time.step, base_dir=loaded.base)
    except FieldError as exc:
        _fail(str(loaded.locate(exc)))
    out.print(f"{scenario}: ok — {system.n_racks} racks, {system.sled_name.size} sleds, "
              f"{system.n_devices} devices, {loaded.scenario.time.duration:g} s at "
              f"{loaded.scenario.time.step:g} s steps", highlight=False)


@app.command()
def bench(
    scenarios: Annotated[Optional[list[Path]], typer.Argument(
        help="Scenarios to run (default: the bundled scenarios/bench/*.yaml).")] = None,
    duration: Annotated[Optional[str], typer.Option(help="Override each run's length, e.g. '1 h'.")] = None,
):
    """Benchmark: simulated seconds per wall second, peak memory and where the time goes."""
    import json
    import os
    import subprocess

    if not scenarios:
        folder = Path(__file__).resolve().parents[1] / "scenarios" / "bench"
        scenarios = sorted(folder.glob("*.yaml"))
        if not scenarios:
            _fail("bench: no scenarios given and no scenarios/bench/*.yaml next to the package")
    table = Table(title="twin bench")
    for col in ("scenario", "devices", "simulated", "wall (run)", "speed", "peak RSS",
                "workload", "power", "integration", "controllers", "recording"):
        table.add_column(col, justify="right")
    for path in scenarios:
        loaded = _load(path)  # one clear error line for a bad file before anything runs
        del loaded
        cmd = [sys.executable, "-m", "twin.sim.bench", str(path)] + (["--duration", duration] if duration else [])
        err.print(f"running {path} …")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
        if proc.returncode != 0:
            _fail(f"bench: {path} failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr else proc.returncode}", 1)
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        sh = r["shares"]
        table.add_row(r["scenario"], f"{r['devices']:,}", f"{r['simulated_s'] / 3600:,.2f} h",
                      f"{r['run_s']:,.1f} s", f"{r['speed']:,.0f}×", f"{r['peak_rss_MiB']:,.0f} MiB",
                      *(f"{sh[k]:.0%}" for k in ("workload", "power", "integration", "controllers", "recording")))
    Console(width=max(out.width, 150)).print(table)


@app.command()
def schema():
    """Print the JSON Schema of the scenario format (for editor autocompletion)."""
    from twin.scenario import scenario_json_schema

    sys.stdout.write(scenario_json_schema() + "\n")


@app.command()
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
        _fail(f"catalog: unknown entry '{name}' (known: {', '.join(names)})")
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


from twin.export.server import serve as _serve  # noqa: E402
app.command(name="serve")(_serve)
from twin.sweep.run import sweep_command as _sweep  # noqa: E402
app.command(name="sweep")(_sweep)
from twin.sweep.capacity import capacity_command as _capacity  # noqa: E402
app.command(name="capacity")(_capacity)
from twin.report.plots import report_command as _report  # noqa: E402
app.command(name="report")(_report)


def main():
    app()


if __name__ == "__main__":
    main()
