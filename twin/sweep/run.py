"""Run a sweep on Dask distributed and combine the variants along a ``scenario`` dimension.

Each variant is the base scenario's YAML with the variant's overrides applied, validated by
:func:`twin.scenario.load_scenario` (so a bad value is reported as the usual
``FILE:LINE: field.path: message`` line) and run by :class:`twin.sim.driver.Simulation` on a
Dask worker, streaming its full result to ``OUT.variants/<key>.zarr`` (key: a hash of the base
scenario text, the overrides and the solver). A variant whose store exists is not run again, so
an interrupted or extended sweep resumes where it stopped, and variants that differ only in
label-only parameters run once.

The combined result ``OUT.zarr`` is a DataTree:

- root: dimension ``scenario``; coordinates ``variant`` (the key), ``status`` (``ok`` /
  ``error``), ``error`` (the one-line error, empty when ok) and one per parameter (quantities as
  SI floats with ``units``); data variables: the KPIs of every variant (the ``kpi_*`` root
  attributes of a single run, without the prefix), NaN for failed variants;
- ``facility``: the facility time series of every variant, ``(scenario, time)``, when the
  variants share one time axis.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from twin.report.kpi import kpi_units
from twin.scenario.errors import ScenarioError

#: Largest facility block (variants × samples × variables) combined into the sweep result;
#: beyond it the time series stay in the per-variant stores only.
MAX_COMBINED_VALUES = 50_000_000
#: KPIs shown in the summary and plotted against the parameters when the sweep names none.
DEFAULT_KPIS = ("pue", "energy_facility_J", "p_facility_peak_W", "t_die_max_degC", "throttled_device_seconds")
def variants_dir(out: str | Path) -> Path:
    """Folder of the per-variant results beside the combined result: ``OUT.variants``."""
    out = Path(out)
    return out.with_name(out.name.rsplit(".", 1)[0] + ".variants")


def scenario_overrides(plan, variant) -> tuple[dict, str]:
    """Top-level overrides for :func:`load_scenario` and the variant's scenario text.

    The overrides replace whole top-level keys of the base (``cdus``, ``site``, …) with their
    modified values, so errors are located on the base file's lines.
    """
    import yaml

    data = plan.variant_data(variant)
    top = {p.split(".")[0] for p in variant.overrides}
    overrides = {k: data[k] for k in top}
    changes = "\n".join(f"#   {p}: {v}" for p, v in variant.overrides.items())
    text = (f"# variant {variant.index} of sweep {plan.path.name} (base {plan.base.name}); overrides:\n"
            f"{changes}\n" + yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return overrides, text


def check_variant(plan, variant) -> ScenarioError | None:
    """Validate one variant; its error (``str(err)`` is the one line), or None."""
    from twin.scenario import load_scenario
    from twin.sim.resources import check_loaded

    overrides, _ = scenario_overrides(plan, variant)
    try:
        check_loaded(load_scenario(plan.base, overrides), streamed=True)  # variants stream to Zarr
    except ScenarioError as exc:
        return exc
    return None


#: glibc ``mallopt`` parameters and the values :func:`tune_malloc` sets [bytes]: heap (not mmap)
#: for arrays below 32 MiB (glibc's largest dynamic threshold on 64-bit), trim above 128 MiB.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD, TRIM_THRESHOLD = 32 * 2**20, 128 * 2**20
_malloc_tuned = False


def tune_malloc() -> bool:
    """Undo the cost of ``MALLOC_TRIM_THRESHOLD_`` in a Dask worker (glibc only; else no-op).

    Dask nannies start workers with ``MALLOC_TRIM_THRESHOLD_=65536``; setting it turns off
    glibc's dynamic mmap threshold, so every array above 128 KiB is mmap'ed and page-faulted
    afresh — a 30,000-device probe ran 4× slower, mostly in system time. Fixed thresholds close
    to the dynamic ones' steady state restore the speed. Returns True when applied.
    """
    global _malloc_tuned
    if _malloc_tuned or "MALLOC_TRIM_THRESHOLD_" not in os.environ or not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        ok = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    except (OSError, AttributeError):  # not glibc
        return False
    _malloc_tuned = ok
    return ok


#: KPIs that are infinite when the thing they time never happens (no throttle, no trip, the
#: battery never ran out); any other non-finite KPI makes a variant an error.
MAY_BE_INFINITE = ("time_to_first_throttle_s", "time_to_first_trip_s", "ride_through_s")


def non_finite_kpis(kpis: dict) -> str:
    """``"pue=nan, …"`` for the numeric KPIs that are NaN (or infinite where they may not be)."""
    import math
    import numbers

    bad = []
    for name, value in kpis.items():
        name = name.removeprefix("kpi_")
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            continue
        value = float(value)
        if math.isnan(value) or (math.isinf(value) and name not in MAY_BE_INFINITE):
            bad.append(f"{name}={value:g}")
    return ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")


def run_variant(base: str, overrides: dict, text: str, dest: str, solver: str = "fast") -> dict:
    """Run one variant and stream its result to ``dest`` (a .zarr store, renamed into place when
    complete). Runs on a Dask worker: arguments and result are plain data.

    Returns
    -------
    dict
        ``{"ok": bool, "error": str, "wall": float}`` (wall-clock seconds of the run).
    """
    from twin.export.dataset import summary
    from twin.export.writers import ZarrStream
    from twin.scenario import load_scenario
    from twin.sim.driver import Simulation

    tune_malloc()
    t0 = time.perf_counter()
    stream = None
    try:
        loaded = dataclasses.replace(load_scenario(base, overrides), text=text)
        stream = ZarrStream(dest)
        sim = Simulation(loaded, solver=solver, sink=stream)
        sim.run()
        bad = non_finite_kpis(summary(sim))
        if bad:  # a result no one should plot: an error row, not "ok"
            stream.abort()
            return {"ok": False, "error": f"non-finite KPIs: {bad}", "wall": time.perf_counter() - t0}
        stream.finish()
    except ScenarioError as exc:
        if stream is not None:
            stream.abort()
        return {"ok": False, "error": str(exc), "wall": time.perf_counter() - t0}
    except Exception as exc:  # a failure of the model: record it, the other variants go on
        if stream is not None:
            stream.abort()
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}".splitlines()[0],
                "wall": time.perf_counter() - t0}
    return {"ok": True, "error": "", "wall": time.perf_counter() - t0}


@dataclass
class SweepResult:
    """What a sweep did: the combined tree, where it is, and counts."""

    tree: object
    path: Path
    n_variants: int
    n_run: int = 0
    n_skipped: int = 0
    n_failed: int = 0
    wall: float = 0.0
    errors: dict[int, str] = field(default_factory=dict)


#: Where the LocalCluster scheduler's HTTP server listens: a free port on the loopback interface.
#: Dask starts that server even without a dashboard, on port 8787 unless told otherwise, and
#: warns (and moves) when 8787 is taken by another cluster or program; no dashboard is served.
SCHEDULER_HTTP = "127.0.0.1:0"

#: Environment of LocalCluster worker processes (Dask's default without MALLOC_TRIM_THRESHOLD_).
WORKER_ENVIRON = {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1, "OPENBLAS_NUM_THREADS": 1}


def dask_client(workers: int | None = None, scheduler: str | None = None, n_tasks: int = 1):
    """Context manager giving a Dask client: the scheduler at ``scheduler``, or a LocalCluster of
    ``workers`` processes (default: CPU count, at most ``n_tasks``) with one thread each.

    The scheduler serves no dashboard and binds its HTTP endpoint to a free loopback port
    (:data:`SCHEDULER_HTTP`), never 8787. Two Dask defaults are changed for the LocalCluster's
    workers:

    - ``MALLOC_TRIM_THRESHOLD_`` is not set (Dask sets 65536 to return memory to the OS
      sooner; see :func:`tune_malloc` for what it costs and how workers of other clusters are
      fixed). One thread per library (OMP, MKL, OpenBLAS) is kept.
    - the workers' statistical profiler is off: it samples the running task's stack every
      10 ms, which costs a few per cent on these long, Python-heavy tasks.
    """
    import contextlib

    from twin.extras import require

    require("distributed", "sweep", "running on Dask (twin sweep, twin capacity --workers/--scheduler)")
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        from twin.scenario.errors import OptionError

        try:
            # Not the process's default client: one that fails to connect would stay the default
            # (dask's `scheduler` config set to it), and later dask work in the process would try
            # to reach it. The sweep submits through the client it is given.
            return Client(scheduler, set_as_default=False)
        except (OSError, ValueError, TypeError) as exc:  # unreachable, refused or malformed
            why = " ".join(str(exc).split()) or type(exc).__name__
            raise OptionError("--scheduler", f"cannot connect to '{scheduler}': {why}") from None
    n = workers or min(os.cpu_count() or 1, max(n_tasks, 1))

    @contextlib.contextmanager
    def local():
        with dask.config.set({"distributed.worker.profile.enabled": False,
                              "distributed.nanny.pre-spawn-environ": WORKER_ENVIRON}):
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                   dashboard_address=SCHEDULER_HTTP, scheduler_kwargs={"dashboard": False})
        with cluster, Client(cluster) as client:
            yield client

    return local()


def check_plan(plan) -> dict[str, str]:
    """Validate every distinct variant here, before anything runs.

    Returns
    -------
    dict
        Variant key → its error line, for the variants that cannot run.

    Raises
    ------
    ScenarioError
        When a variant's error is a mistake in the sweep file itself (an unknown key on a
        parameter's path), placed in the sweep file.
    """
    from twin.sweep.spec import sweep_error_for

    errors, seen = {}, set()
    for v in plan.variants:
        if v.key in seen:
            continue
        seen.add(v.key)
        exc = check_variant(plan, v)
        if exc is not None:
            outer = sweep_error_for(plan, exc)
            if outer is not None:
                raise outer
            errors[v.key] = str(exc)
    return errors


def run_sweep(plan, out: str | Path, *, workers: int | None = None, scheduler: str | None = None,
              client=None, progress=None, checked: dict[str, str] | None = None) -> SweepResult:
    """Run every variant of ``plan`` not done yet and write the combined result to ``out``.

    Parameters
    ----------
    plan : SweepPlan
        From :func:`twin.sweep.spec.load_sweep`.
    out : str or Path
        Combined result (.zarr or .nc); per-variant results go to :func:`variants_dir` ``(out)``.
    workers : int, optional
        LocalCluster worker processes (default: CPU count, at most the number of variants to
        run); 0 runs the variants one after the other in this process, without Dask.
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:8786``); its workers must see the same
        paths (scenario files, output folder).
    client : distributed.Client, optional
        Use this client instead (workers and scheduler are then ignored).
    progress : callable, optional
        ``progress(done, total)`` after each finished variant.
    checked : dict, optional
        The result of :func:`check_plan` when already called.

    Raises
    ------
    ScenarioError
        When a variant's error is a mistake in the sweep file itself (an unknown key on a
        parameter's path).
    """
    from twin.export.writers import output_format

    t0 = time.perf_counter()
    out = Path(out)
    output_format(out)  # ValueError for an unknown suffix, before any work
    folder = variants_dir(out)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(".*.tmp-*"):  # left by a sweep killed mid-write
        _remove(stale)

    errors = dict(checked if checked is not None else check_plan(plan))
    first: dict[str, object] = {}  # key → first variant with that key
    for v in plan.variants:
        first.setdefault(v.key, v)
    todo = [k for k in first if k not in errors and not (folder / f"{k}.zarr").is_dir()]
    skipped = sum(1 for k in first if k not in errors and k not in todo)

    def submit_args(key):
        overrides, text = scenario_overrides(plan, first[key])
        return (str(plan.base.resolve()), overrides, text, str((folder / f"{key}.zarr").resolve()),
                plan.spec.solver)

    if todo:
        if progress is not None:
            progress(0, len(todo))
        if workers == 0 and client is None and not scheduler:
            for i, key in enumerate(todo):
                r = run_variant(*submit_args(key))
                _collect(key, r, errors)
                if progress is not None:
                    progress(i + 1, len(todo))
        else:
            import contextlib

            ctx = contextlib.nullcontext(client) if client is not None else dask_client(workers, scheduler, len(todo))
            with ctx as c:
                _map(c, todo, submit_args, errors, progress)

    from twin.export.writers import write_tree

    tree = combine(plan, folder, errors)
    write_tree(tree, out)
    by_index = {v.index: errors[v.key] for v in plan.variants if v.key in errors}
    return SweepResult(tree, out, len(plan.variants), n_run=len(todo), n_skipped=skipped,
                       n_failed=len(by_index), wall=time.perf_counter() - t0, errors=by_index)


def _map(client, todo, submit_args, errors, progress):
    import uuid

    from distributed import as_completed

    run_id = uuid.uuid4().hex[:8]  # task keys unique to this call (a reused client keeps old results)
    futures = {client.submit(run_variant, *submit_args(k), key=f"twin-variant-{k}-{run_id}"): k for k in todo}
    try:
        for i, fut in enumerate(as_completed(futures), 1):
            key = futures[fut]
            try:
                r = fut.result()
            except Exception as exc:  # a worker died (e.g. out of memory)
                r = {"ok": False, "error": f"{type(exc).__name__}: {exc}".splitlines()[0], "wall": 0.0}
            _collect(key, r, errors)
            if progress is not None:
                progress(i, len(todo))
    except BaseException:
        client.cancel(list(futures))
        raise


def _collect(key, r, errors):
    if not r["ok"]:
        errors[key] = r["error"]


def _remove(path: Path) -> None:
    import shutil

    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists():
        path.unlink()


def _read_variant(store: Path):
    """Root attributes and facility dataset (or None) of one finished variant."""
    import xarray as xr
    import zarr

    attrs = dict(zarr.open_group(str(store), mode="r").attrs)
    try:
        fac = xr.open_dataset(store, engine="zarr", group="facility", consolidated=False).load()
    except (FileNotFoundError, KeyError, OSError, ValueError):
        fac = None
    return attrs, fac


def combine(plan, folder: Path, errors: dict[str, str]):
    """The sweep's DataTree from the per-variant stores (see the module docstring)."""
    import numpy as np
    import pandas as pd
    import xarray as xr

    import twin

    n = len(plan.variants)
    cache = {}
    for v in plan.variants:
        if v.key not in errors and v.key not in cache:
            cache[v.key] = _read_variant(folder / f"{v.key}.zarr")
            bad = non_finite_kpis({k: x for k, x in cache[v.key][0].items() if k.startswith("kpi_")})
            if bad:  # a stored result from before this check
                errors[v.key] = f"non-finite KPIs: {bad}"
    ok = [v.key not in errors for v in plan.variants]

    coords = {"scenario": ("scenario", np.arange(n), {"long_name": "sweep variant index"})}
    for label, (values, attrs) in plan.coords.items():
        coords[label] = ("scenario", np.asarray(values), {"long_name": f"sweep parameter {label}", **attrs})
    coords["variant"] = ("scenario", np.array([v.key for v in plan.variants]),
                         {"long_name": "variant key (file name under the variants folder)"})
    coords["status"] = ("scenario", np.array(["ok" if k else "error" for k in ok]))
    coords["error"] = ("scenario", np.array([errors.get(v.key, "") for v in plan.variants]),
                       {"long_name": "error of a failed variant (FILE:LINE: path: message)"})

    names: list[str] = []
    for attrs, _ in cache.values():
        for k, val in attrs.items():
            if k.startswith("kpi_") and isinstance(val, (int, float)) and not isinstance(val, bool) \
                    and k[4:] not in names:
                names.append(k[4:])
    data = {}
    for name in names:
        arr = np.full(n, np.nan)
        for i, v in enumerate(plan.variants):
            if ok[i]:
                val = cache[v.key][0].get(f"kpi_{name}")
                arr[i] = np.nan if val is None else float(val)
        var = name if name not in coords else f"kpi_{name}"
        data[var] = ("scenario", arr, {"units": kpi_units(name), "long_name": f"KPI {name}"})

    facility, note = _combine_facility(plan, cache, ok)
    root_attrs = {
        "title": f"twin sweep: {plan.name}",
        "twin_version": twin.__version__,
        "twin_sweep": 1,
        "sweep_name": plan.name,
        "sweep": plan.text,
        "base_scenario": plan.base_text,
        "base_path": str(plan.base),
        "combine": plan.spec.combine,
        "parameters": ",".join(plan.coords),
        "kpis": ",".join(plan.spec.kpis or DEFAULT_KPIS),
        "variants_dir": folder.name,
        "n_variants": n,
        "n_failed": int(n - sum(ok)),
        "facility_combined": note,
        "created": str(pd.Timestamp.now(tz="UTC").floor("s")),
        "Conventions": "CF-1.11",
    }
    root = xr.Dataset(data, coords=coords, attrs=root_attrs)
    groups = {"/": root}
    if facility is not None:
        groups["/facility"] = facility
    return xr.DataTree.from_dict(groups)


def _combine_facility(plan, cache, ok):
    """Facility series of every variant along ``scenario`` when they share a time axis."""
    import numpy as np
    import xarray as xr

    series = [(i, cache[v.key][1]) for i, v in enumerate(plan.variants) if ok[i]]
    series = [(i, ds) for i, ds in series if ds is not None]
    if not series:
        return None, "no facility series recorded"
    t0 = series[0][1]["time"].values
    if any(ds.sizes.get("time") != t0.size or not np.array_equal(ds["time"].values, t0) for _, ds in series):
        return None, "variants have different time axes; see the per-variant results"
    names = [k for k in series[0][1].data_vars if all(k in ds.data_vars for _, ds in series)]
    n = len(plan.variants)
    if n * t0.size * max(len(names), 1) > MAX_COMBINED_VALUES:
        return None, (f"too large to combine ({n} variants x {t0.size} samples); "
                      "see the per-variant results")
    out = {}
    for k in names:
        arr = np.full((n, t0.size), np.nan)
        for i, ds in series:
            arr[i] = ds[k].values
        out[k] = (("scenario", "time"), arr, dict(series[0][1][k].attrs))
    ds = xr.Dataset(out, coords={"time": ("time", t0, dict(series[0][1]["time"].attrs))})
    return ds, "yes"


def summary_table(tree, kpis, max_rows: int = 40):
    """A rich table: one row per variant with its parameters, status and chosen KPIs."""
    from rich.table import Table

    from twin.report.plots import format_value, kpi_frame

    df = kpi_frame(tree)
    params = [p for p in tree.attrs.get("parameters", "").split(",") if p]
    shown = [k for k in kpis if k in df.columns]
    table = Table(title=f"twin sweep: {tree.attrs.get('sweep_name', '')}")
    for col in ["#", *params, *shown, "status"]:
        table.add_column(col, justify="right" if col not in ("status",) else "left")
    for i, (idx, row) in enumerate(df.iterrows()):
        if i == max_rows:
            table.add_row("…", *[""] * (len(params) + len(shown)), f"{len(df) - max_rows} more")
            break
        status = row["status"] if row["status"] == "ok" else "error (see below)"
        table.add_row(str(idx), *(format_value(p, row[p], tree) for p in params),
                      *(format_value(k, row[k], tree) for k in shown), status)
    return table
