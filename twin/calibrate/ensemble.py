"""Ensembles: run a scenario many times with its uncertain figures sampled, and keep quantiles.

What is uncertain:

- the parameters a calibration fitted (the overlay's ``calibration:`` record): sampled jointly
  from a normal distribution with their σ and correlation matrix;
- every other catalogue figure that carries an ``uncertainty`` (one standard deviation):
  sampled independently from a normal distribution.

Draws are clipped to the parameter's default bounds (:mod:`twin.calibrate.params`), so a
sampled power or resistance stays physical.

The members' band is the figures' band. A measurement also carries what no figure explains (the
calibration's residual RMS: jobs the utilisation does not describe, sensor noise), so for the
devices of the calibrated chip kinds the result also holds ``p_measured`` and ``t_die_measured``:
the band a measurement of the site falls in (:func:`measured_quantiles`: the members' mean ±
Student's t quantile × √(members' variance + residual scale²), per activity class — the band
whose coverage ``twin calibrate`` reports). Member ``k`` is the scenario with its draws as
overrides (catalogue figures merged field by field; site temperatures; CDU setpoints), run on
Dask by the sweep machinery (:func:`twin.sweep.run.run_variant`, one Zarr store per member);
the result keeps, for every recorded variable of every group and every KPI, the 5th, 50th and
95th percentile over the members along a new ``quantile`` dimension. Member stores are removed
afterwards unless asked to keep them.
"""

from __future__ import annotations

import math
import shutil
import warnings
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from twin.calibrate.params import Parameter, figure_dimension, _bounds
from twin.scenario.errors import ScenarioError

#: Quantiles kept of every variable and KPI.
QUANTILES = (0.05, 0.5, 0.95)
#: Groups of a run's result.
GROUPS = ("facility", "cdu", "rack", "sled", "device", "job")
#: Device variables a calibration's residual spreads: variable → (result variable, residual field).
MEASURED = {"p": ("p_measured", "power"), "t_die": ("t_die_measured", "temperature")}
#: Devices per chunk of the measured band (bounds the temporaries on large halls).
CHUNK_DEVICES = 256


@dataclass
class Uncertain:
    """The uncertain figures of a scenario and their joint distribution (SI)."""

    params: list[Parameter]
    mean: np.ndarray
    cov: np.ndarray

    def sample(self, n: int, seed: int) -> np.ndarray:
        """``n`` draws (n, P), clipped to each parameter's bounds."""
        rng = np.random.default_rng(seed)
        if not self.params:
            return np.zeros((n, 0))
        draws = rng.multivariate_normal(self.mean, self.cov, size=n, method="eigh")
        lo = np.array([p.lower for p in self.params])
        hi = np.array([p.upper for p in self.params])
        return np.clip(draws, lo, hi)


def uncertain_figures(loaded) -> Uncertain:
    """Fitted parameters (jointly, from ``calibration:``) and catalogue uncertainties (independently)."""
    params, mean, sig = [], [], []
    record = loaded.scenario.calibration
    corr_rows = None
    if record is not None and record.parameters:
        for est in record.parameters:
            p = _parameter(loaded, est.path, est.value)
            params.append(p)
            mean.append(est.value)
            sig.append(est.sigma)
        corr_rows = np.array(record.correlation) if record.correlation is not None else np.eye(len(params))
    fitted = {p.path for p in params}
    for kind in ("chips", "sleds", "racks", "power_shelves", "cdus"):
        for name, entry in getattr(loaded.catalog, kind).items():
            for fname in type(entry).model_fields:
                fig = getattr(entry, fname, None)
                s = getattr(fig, "si_uncertainty", math.nan)
                path = f"{kind}.{name}.{fname}"
                if fig is None or not (isinstance(s, float) and math.isfinite(s) and s > 0) or path in fitted:
                    continue
                dim = figure_dimension(fig.value)
                lo, hi = _bounds(fname, dim, fig.si)
                params.append(Parameter(path, "catalog", dim, fig.si, lo, hi, s))
                mean.append(fig.si)
                sig.append(s)
    n = len(params)
    cov = np.diag(np.square(sig)) if n else np.zeros((0, 0))
    if corr_rows is not None:
        k = corr_rows.shape[0]
        s = np.array(sig[:k])
        cov[:k, :k] = corr_rows * np.outer(s, s)
    return Uncertain(params, np.array(mean, dtype=float), cov)


def _parameter(loaded, path: str, value: float) -> Parameter:
    """A Parameter (dimension and bounds) for a recorded path."""
    head = path.split(".", 1)[0]
    if head == "telemetry":
        lo, hi = _bounds(path.rsplit(".", 1)[-1], "dimensionless", value)
        return Parameter(path, "mapping", "dimensionless", value, lo, hi)
    if head == "site" or (head == "cdus" and path.split(".")[1].isdigit()):
        lo, hi = _bounds(path.rsplit(".", 1)[-1], "temperature", value)
        return Parameter(path, "scenario", "temperature", value, lo, hi)
    kind, name, fname = path.split(".")
    entry = getattr(loaded.catalog, kind, {}).get(name)
    fig = getattr(entry, fname, None) if entry is not None else None
    if fig is None:
        raise ScenarioError(f"calibration.parameters: '{path}' is not in this scenario's catalogue",
                            file=str(loaded.path))
    dim = figure_dimension(fig.value)
    lo, hi = _bounds(fname, dim, value)
    return Parameter(path, "catalog", dim, value, lo, hi)


def member_overrides(loaded, params: list[Parameter], values: np.ndarray, k: int) -> dict:
    """Top-level scenario overrides that set one member's draws."""
    from twin.scenario.loader import merge_over

    sc = loaded.scenario
    figures: dict = {}
    site: dict = {}
    cdus = None
    mapping: dict = {}
    for p, v in zip(params, values):
        if p.kind == "catalog":
            kind, name, fname = p.path.split(".")
            val = float(v) if not p.units else f"{float(v)!r} {p.units}"
            figures.setdefault(kind, {}).setdefault(name, {})[fname] = {
                "value": val, "source": f"ensemble member {k} drawn around {p.format(p.prior)}"}
        elif p.kind == "scenario" and p.path.startswith("site."):
            site[p.field] = f"{float(v)!r} degC"
        elif p.kind == "scenario":
            if cdus is None:
                cdus = [{"name": c.name, "template": c.template, "supply_temperature": f"{c.supply_temperature!r} degC",
                         "count": c.count} for c in sc.cdus]
            cdus[int(p.path.split(".")[1])]["supply_temperature"] = f"{float(v)!r} degC"
        else:
            mapping[p.field] = float(v)
    out: dict = {}
    if figures:
        out["catalog"] = merge_over(sc.catalog or {}, figures)
    if site:
        out["site"] = site
    if cdus is not None:
        out["cdus"] = cdus
    if mapping and sc.telemetry is not None:
        out["telemetry"] = {"utilisation": {**sc.telemetry.utilisation.model_dump(), **mapping}}
    return out


@dataclass
class EnsembleResult:
    tree: object
    path: Path
    n: int
    n_failed: int
    wall: float
    member_walls: list[float] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)


def run_ensemble(loaded, out: str | Path, n: int, *, seed: int = 0, overrides: dict | None = None,
                 workers: int | None = None, scheduler: str | None = None, keep_members: bool = False,
                 solver: str = "fast", progress=None) -> EnsembleResult:
    """Run ``n`` members of ``loaded`` with sampled figures and write the quantile result.

    Parameters
    ----------
    loaded : LoadedScenario
    out : str or Path
        Result file (.nc or .zarr); members go to ``OUT.members/`` (removed unless
        ``keep_members``).
    overrides : dict, optional
        Top-level overrides every member gets (the command line's ``--duration`` …).
    workers, scheduler
        As for ``twin sweep``: a LocalCluster of ``workers`` processes (0: in this process) or a
        running scheduler.

    Raises
    ------
    ScenarioError
        No uncertain figure in the scenario, or a member's scenario is invalid.
    """
    import contextlib

    import yaml

    from twin.export.writers import output_format, write_tree
    from twin.scenario import load_scenario
    from twin.sweep.run import dask_client, run_variant

    t0 = time.perf_counter()
    out = Path(out)
    output_format(out)
    unc = uncertain_figures(loaded)
    if not unc.params:
        raise ScenarioError("nothing uncertain to sample: no calibration overlay and no catalogue figure with "
                            "an 'uncertainty' (run twin calibrate and add its overlay under overlays:)",
                            file=str(loaded.path))
    draws = unc.sample(n, seed)
    folder = out.with_name(out.name.rsplit(".", 1)[0] + ".members")
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    base = str(loaded.path.resolve())
    tasks = []
    for k in range(n):
        ov = {**(overrides or {}), **member_overrides(loaded, unc.params, draws[k], k)}
        for key, value in (overrides or {}).items():  # the command line's own keys merge, not replace
            if key in ov and isinstance(value, dict) and isinstance(ov[key], dict):
                ov[key] = {**ov[key], **value}
        text = (f"# ensemble member {k} of {loaded.path.name} (seed {seed})\n"
                + yaml.safe_dump({"draws": {p.path: float(v) for p, v in zip(unc.params, draws[k])}}, sort_keys=False)
                + loaded.text)
        tasks.append((base, ov, text, str((folder / f"member-{k:04d}.zarr").resolve()), solver))
    try:
        load_scenario(base, tasks[0][1])  # a bad member scenario is one line here, before any run
    except ScenarioError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    results: dict[int, dict] = {}
    if workers == 0 and not scheduler:
        for k, args in enumerate(tasks):
            results[k] = run_variant(*args)
            if progress is not None:
                progress(k + 1, n)
    else:
        from distributed import as_completed

        ctx = dask_client(workers, scheduler, n)
        with (ctx if not isinstance(ctx, contextlib.AbstractContextManager) else ctx) as client:
            futures = {client.submit(run_variant, *args, key=f"twin-member-{k}-{seed}-{time.time_ns()}"): k
                       for k, args in enumerate(tasks)}
            for i, fut in enumerate(as_completed(futures), 1):
                k = futures[fut]
                try:
                    results[k] = fut.result()
                except Exception as exc:  # a worker died
                    results[k] = {"ok": False, "error": f"{type(exc).__name__}: {exc}".splitlines()[0], "wall": 0.0}
                if progress is not None:
                    progress(i, n)
    errors = {k: r["error"] for k, r in results.items() if not r["ok"]}
    ok = [k for k in range(n) if k not in errors]
    if not ok:
        shutil.rmtree(folder, ignore_errors=True)
        raise ScenarioError(f"every ensemble member failed; the first: {errors[min(errors)]}", file=str(loaded.path))
    tree = combine(loaded, [folder / f"member-{k:04d}.zarr" for k in ok], unc, draws[ok], seed)
    wall = time.perf_counter() - t0
    walls = [results[k]["wall"] for k in ok]
    tree.attrs.update({"ensemble_wall_seconds": wall, "member_wall_mean_seconds": float(np.mean(walls)),
                       "n_failed": len(errors)})
    write_tree(tree, out)
    if not keep_members:
        shutil.rmtree(folder, ignore_errors=True)
    return EnsembleResult(tree, out, n, len(errors), wall, walls, errors)


def quantiles(stack: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Quantiles ``q`` over axis 0 (members), NaN where every member is NaN (e.g. the coolant
    temperature of an air-cooled rack). Vectorised; numpy's nanquantile loops per element."""
    nan = np.isnan(stack)
    every = nan.all(axis=0)
    if not (nan.any(axis=0) & ~every).any():
        out = np.quantile(np.where(every, 0.0, stack), q, axis=0)
        out[:, every] = np.nan
        return out
    with np.errstate(all="ignore"):
        return np.nanquantile(stack, q, axis=0)


def measured_quantiles(members: np.ndarray, s, dof, q: np.ndarray) -> np.ndarray:
    """Quantiles of a measurement from the members' values and the calibration's residual.

    Parameters
    ----------
    members : ndarray, shape (K, ..., devices)
        One value per member (NaN: the member has none).
    s, dof : float or ndarray broadcastable to ``members.shape[1:]``
        The residual's scale (the values' unit) and degrees of freedom (None: a normal residual).
    q : ndarray, shape (Q,)

    Returns
    -------
    ndarray, shape (Q, ..., devices)
        The band of :func:`twin.calibrate.residual.band_quantiles` around the members' mean, with
        the members' variance as the figures' share — the calibrated twin's band of
        ``twin calibrate``'s coverage, where that share is jᵀCj. Vectorised, in chunks of
        :data:`CHUNK_DEVICES` devices; NaN where no member has a value.
    """
    from twin.calibrate.residual import band_quantiles

    m = np.asarray(members, dtype=float)
    out = np.full((len(q), *m.shape[1:]), np.nan)
    s = np.broadcast_to(np.asarray(s, dtype=float), m.shape[1:])
    dof = None if dof is None else np.broadcast_to(np.asarray(dof, dtype=float), m.shape[1:])
    for c0 in range(0, m.shape[-1], CHUNK_DEVICES):
        sl = (..., slice(c0, c0 + CHUNK_DEVICES))
        mc = m[sl]
        n = np.isfinite(mc).sum(axis=0)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: NaN, as documented
            centre = np.nanmean(mc, axis=0)
            var = np.where(n > 1, np.nanvar(mc, axis=0, ddof=1), 0.0)
        out[sl] = band_quantiles(centre, var, s[sl], None if dof is None else dof[sl], q)
    return out


def _measured_bands(loaded, first, stacks: dict, q: np.ndarray) -> dict:
    """``p_measured`` and ``t_die_measured`` of the calibrated kinds' devices (see the module).

    With the calibration's band model (``residual.bands``) each sample is spread by its activity
    class's scale and degrees of freedom (Student's t; the class from the members' demanded
    utilisation ``u``: active where any member's is above 0, every sample when ``u`` is not
    recorded); without it, by the residual RMS as a normal.
    """
    record = loaded.scenario.calibration
    residual = record.residual if record is not None else None
    if residual is None or "kind" not in first.coords:
        return {}
    kinds = first["kind"].values.astype(str)
    cols = np.isin(kinds, residual.kinds) if residual.kinds else np.ones(kinds.size, dtype=bool)
    out = {}
    for name, (new, field_name) in MEASURED.items():
        rms = float(getattr(residual, field_name))
        if name not in stacks or not cols.any() or first[name].dims[-1] != "device":
            continue
        stack = stacks[name][..., cols]
        band = residual.bands.get(field_name)
        if band is not None:
            u = stacks.get("u")
            active = (u[..., cols] > 0).any(axis=0) if u is not None and u.shape == stacks[name].shape \
                else np.ones(stack.shape[1:], dtype=bool)
            s = np.where(active, band.scale["active"], band.scale["idle"])
            dof = np.where(active, band.dof["active"], band.dof["idle"])
            what = (f"the calibration's residual (idle {band.scale['idle']:.3g}, active "
                    f"{band.scale['active']:.3g} {first[name].attrs.get('units', '')}, Student's t)")
        else:
            s, dof = rms, None
            what = f"the calibration's residual RMS ({rms:.3g} {first[name].attrs.get('units', '')})"
        if not (np.all(s > 0) and np.all(np.isfinite(s))):
            continue
        qs = np.full((q.size, *stacks[name].shape[1:]), np.nan)
        qs[..., cols] = measured_quantiles(stack, s, dof, q)
        attrs = dict(first[name].attrs)
        attrs["long_name"] = f"{attrs.get('long_name', name)} as measured: the members spread by {what}".replace(" )", ")")
        out[new] = (("quantile", *first[name].dims), qs, attrs)
    return out


def combine(loaded, stores: list[Path], unc: Uncertain, draws: np.ndarray, seed: int):
    """Quantiles over the members of every recorded variable and KPI (see the module docstring)."""
    import xarray as xr
    import zarr

    import twin

    q = np.array(QUANTILES)
    attrs0 = dict(zarr.open_group(str(stores[0]), mode="r").attrs)
    groups = {}
    for g in GROUPS:
        try:
            members = [xr.open_dataset(s, engine="zarr", group=g, consolidated=False) for s in stores]
        except (FileNotFoundError, KeyError, OSError, ValueError):
            continue
        first = members[0]
        data = {}
        stacks = {}
        for name, var in first.data_vars.items():
            stack = np.stack([m[name].values.astype(float) for m in members])
            qs = quantiles(stack, q)
            data[name] = (("quantile", *var.dims), qs, dict(var.attrs))
            if g == "device" and (name in MEASURED or name == "u"):
                stacks[name] = stack
        if g == "device":
            data.update(_measured_bands(loaded, first, stacks, q))
        ds = xr.Dataset(data, coords={**{k: v for k, v in first.coords.items()}, "quantile": ("quantile", q)},
                        attrs=dict(first.attrs))
        for m in members:
            m.close()
        groups[f"/{g}"] = ds
    kpis = sorted({k for s in stores for k in dict(zarr.open_group(str(s), mode="r").attrs) if k.startswith("kpi_")})
    root = {}
    member_attrs = [dict(zarr.open_group(str(s), mode="r").attrs) for s in stores]
    for k in kpis:
        vals = np.array([float(a.get(k, np.nan)) if isinstance(a.get(k), (int, float)) else np.nan for a in member_attrs])
        if np.isfinite(vals).any():
            root[k] = (("quantile",), np.nanquantile(vals, q), {"long_name": f"{k[4:]} over the ensemble"})
    root["draws"] = (("member", "parameter"), draws, {"long_name": "sampled value of each uncertain figure (SI)"})
    root["parameter_band"] = (("quantile", "parameter"), np.quantile(draws, q, axis=0) if len(draws) else
                              np.full((q.size, draws.shape[1]), np.nan),
                              {"long_name": "quantiles of the sampled figures (SI)"})
    coords = {"quantile": ("quantile", q), "member": ("member", np.arange(draws.shape[0])),
              "parameter": ("parameter", np.array([p.path for p in unc.params])),
              "parameter_units": ("parameter", np.array([p.units for p in unc.params])),
              "parameter_mean": ("parameter", unc.mean), "parameter_sigma": ("parameter", np.sqrt(np.diag(unc.cov)))}
    attrs = {k: v for k, v in attrs0.items() if not k.startswith("kpi_")}
    attrs.update({"title": f"twin ensemble: {loaded.scenario.name}", "twin_version": twin.__version__,
                  "twin_ensemble": 1, "n_members": int(draws.shape[0]), "ensemble_seed": seed,
                  "quantiles": ",".join(f"{x:g}" for x in q)})
    for k in kpis:  # the median as the run's KPI, for tables that read kpi_* attributes
        if k in root:
            attrs[k] = float(root[k][1][list(q).index(0.5)])
    groups["/"] = xr.Dataset(root, coords=coords, attrs=attrs)
    return xr.DataTree.from_dict(groups)
