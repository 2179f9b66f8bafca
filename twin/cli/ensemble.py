"""``twin run --ensemble N``: members with sampled uncertainties on Dask, quantiles written."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from twin.cli.common import Progress, err, fail, load, out


def run_ensemble_command(scenario: Path, output, n: int, *, duration=None, step=None, seed=None, record=None,
                         solver="fast", workers=None, keep_members=False, progress=None):
    from twin.calibrate.ensemble import run_ensemble
    from twin.export.writers import output_format
    from twin.report.plots import format_value
    from twin.scenario.errors import ScenarioError

    if n < 2:
        fail("--ensemble: needs at least 2 members")
    if workers is not None and workers < 0:
        fail("--workers: must not be negative")
    loaded = load(scenario, duration, step, seed, record)
    path = Path(output or f"out/{loaded.scenario.name}-ensemble.nc")
    try:
        output_format(path)
    except ValueError as exc:
        fail(f"{path}: {exc}")
    overrides = {}
    if duration or step:
        overrides["time"] = {k: v for k, v in (("duration", duration), ("step", step)) if v}
    if seed is not None:
        overrides["seed"] = seed
    if record:
        overrides["record"] = dict(item.split("=", 1) for item in record)
    bar = Progress.choose(f"{loaded.scenario.name} ensemble members", 1.0, progress)
    try:
        res = run_ensemble(loaded, path, n, seed=seed or 0, overrides=overrides, workers=workers,
                           keep_members=keep_members, solver=solver, progress=lambda d, t: bar(d, t))
    except ScenarioError as exc:
        fail(str(exc))
    finally:
        bar.close()
    tree = res.tree
    root = tree.to_dataset()
    table = Table(title=f"twin ensemble: {loaded.scenario.name} ({res.n - res.n_failed} members)")
    for col in ("KPI", "p5", "p50", "p95"):
        table.add_column(col, justify="left" if col == "KPI" else "right")
    for name in ("energy_it_J", "p_it_mean_W", "p_facility_peak_W", "p_rack_peak_W", "t_die_max_degC", "pue"):
        if f"kpi_{name}" in root:
            v = root[f"kpi_{name}"].values
            table.add_row(name, *(format_value(name, x) for x in v))
    out.print(table)
    for k, e in sorted(res.errors.items()):
        err.print(f"member {k}: {e}", markup=False, highlight=False, soft_wrap=True)
    out.print(f"{res.n} members ({res.n_failed} failed), {len(root['parameter'])} uncertain figures; "
              f"{res.wall:.1f} s (mean member {tree.attrs['member_wall_mean_seconds']:.1f} s); written to {path}",
              highlight=False, soft_wrap=True)
