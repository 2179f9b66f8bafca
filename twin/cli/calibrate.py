"""``twin calibrate``: fit catalogue figures to measured telemetry; write an overlay and a report."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from twin.cli.common import err, fail, load, out, positive_option


def _time(text: str | None, option: str):
    if text is None:
        return None
    import pandas as pd

    try:
        t = pd.Timestamp(text)
    except (ValueError, TypeError):
        t = None
    if t is None or t is pd.NaT:
        fail(f"{option}: cannot read {text!r} as a time (e.g. 2025-04-12 or 2025-04-12T06:00)")
    return t.tz_convert("UTC").tz_localize(None) if t.tzinfo else t


def _pair(a, b, names: str):
    if (a is None) != (b is None):
        fail(f"{names}: give both or neither")
    return None if a is None else (a, b)


def calibrate_command(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML with a telemetry: section.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Overlay to write (YAML).")],
    telemetry: Annotated[Optional[str], typer.Option(
        "--telemetry", help="CSV/TSV/Parquet file or Prometheus base URL (default: telemetry.source).")] = None,
    start: Annotated[Optional[str], typer.Option("--from", help="Start of the fit window.")] = None,
    end: Annotated[Optional[str], typer.Option("--to", help="End of the fit window.")] = None,
    holdout_start: Annotated[Optional[str], typer.Option("--holdout-from", help="Start of the hold-out window.")] = None,
    holdout_end: Annotated[Optional[str], typer.Option("--holdout-to", help="End of the hold-out window.")] = None,
    fit: Annotated[Optional[list[str]], typer.Option(
        "--fit", help="Parameter to fit (repeatable): a catalogue path (chips.a100-sxm.p_idle), a field of the "
                      "measured chips (p_idle), site.cold_aisle, cdus.0.supply_temperature, "
                      "telemetry.utilisation.busy|held.")] = None,
    report: Annotated[Optional[Path], typer.Option("--report", help="Also write the figures as JSON.")] = None,
    bootstrap: Annotated[int, typer.Option(help="Block-bootstrap refits for σ (0: σ from the Jacobian).")] = 0,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
    step: Annotated[Optional[str], typer.Option(help="Thermal step of the twin (default: the telemetry interval).")] = None,
):
    """Fit the twin to measured power and temperature; write a catalogue overlay (and a report)."""
    from twin.calibrate.overlay import overlay_text, report_text, write_atomically
    from twin.calibrate.pipeline import run_calibration
    from twin.scenario.errors import ScenarioError

    if bootstrap < 0:
        fail("--bootstrap: must not be negative")
    if output.suffix.lower() not in (".yaml", ".yml"):
        fail(f"{output}: the overlay is YAML (.yaml or .yml)")
    if report is not None and report.suffix.lower() != ".json":
        fail(f"{report}: the report is JSON (.json)")
    step_s = positive_option(step, "time", "--step")
    fit_w = _pair(_time(start, "--from"), _time(end, "--to"), "--from/--to")
    hold_w = _pair(_time(holdout_start, "--holdout-from"), _time(holdout_end, "--holdout-to"),
                   "--holdout-from/--holdout-to")
    loaded = load(scenario)
    say = (lambda msg: err.print(f"twin calibrate: {msg}", highlight=False)) if err.is_terminal else None
    try:
        cal = run_calibration(loaded, telemetry, fit_w, hold_w, fit, n_bootstrap=bootstrap, seed=seed,
                              step=step_s, progress=say)
    except ScenarioError as exc:
        fail(str(exc))
    for note in cal.telemetry.notes:
        err.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    res = cal.result
    files = {output: overlay_text(res, loaded, cal.source)}
    if report is not None:
        files[report] = report_text(res, loaded, cal.source, cal.telemetry.notes, cal.telemetry.interval)
    write_atomically(files)
    out.print(parameter_table(res))
    out.print(score_table(res))
    out.print(f"windows: {window_lines(res)}", highlight=False, soft_wrap=True)
    written = f"{output}" + (f" and {report}" if report is not None else "")
    out.print(f"{len(res.params)} parameters fitted to {cal.source} ({res.runs} twin runs); wrote {written}",
              highlight=False, soft_wrap=True)


def _fmt(p, value: float) -> str:
    if not math.isfinite(value):
        return "—"
    return f"{value:.4g}" + (f" {p.units}" if p.units else "")


def parameter_table(res) -> Table:
    t = Table(title="twin calibrate: parameters")
    for col, just in (("parameter", "left"), ("prior", "right"), ("fitted ± σ", "right")):
        t.add_column(col, justify=just)
    for p, v, s in zip(res.params, res.value, res.sigma):
        sig = f"{s:.2g}" + (f" {p.delta_units}" if p.delta_units else "") if math.isfinite(s) else "—"
        t.add_row(p.path, _fmt(p, p.prior), f"{_fmt(p, v)} ± {sig}")
    return t


def score_table(res) -> Table:
    t = Table(title="twin calibrate: RMSE and MAPE, twin vs measured")
    for col in ("window", "quantity", "n", "RMSE before", "after", "MAPE before", "after", "in p5–p95"):
        t.add_column(col, justify="left" if col in ("window", "quantity") else "right")
    units = {"power": "W", "temperature": "K"}
    for name, sc in res.scores.items():
        for q in ("power", "temperature"):
            r, m = sc.rmse[q], sc.mape[q]
            cov = sc.coverage.get(q, math.nan)
            t.add_row(name, q, f"{sc.n[q]:,}", f"{r['before']:.2f} {units[q]}", f"{r['after']:.2f} {units[q]}",
                      f"{m['before']:.1%}", f"{m['after']:.1%}", f"{cov:.0%}" if math.isfinite(cov) else "—")
    return t


def window_lines(res) -> str:
    return "; ".join(f"{name} {a} to {b}" for name, (a, b) in res.windows.items())
