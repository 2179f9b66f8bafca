"""Reports: PNG plots and one HTML page for a run or a sweep (matplotlib, headless), and the
KPI table behind :func:`twin.kpis`.

A run gives: power stack over time (IT, power-shelf losses, cooling), PUE over time, rack power
against its limit, a device-temperature heatmap (device × time, downsampled), CDU temperatures,
the spectrum of facility power (training swings), job throughput, and the KPI table. A sweep
gives each KPI against the parameters, the facility power of every variant, and the table of
variants. A plot whose data is absent is skipped, never an error.

Each plot function takes the result tree and a target file and returns the path written, or
None when the tree lacks the data; :data:`RUN_PLOTS` and :data:`SWEEP_PLOTS` are the registries.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Callable

from twin.report.kpi import kpi_label, kpi_units

#: Figure size [inch] and resolution [dpi] of every plot: 1100 × 550 pixels.
FIGSIZE = (11.0, 5.5)
DPI = 100
#: Largest heatmap drawn (devices × time bins); larger data is averaged down to it.
HEATMAP_MAX = (400, 600)
#: Most time samples drawn per line; longer series are averaged in contiguous bins.
MAX_POINTS = 2_000
#: Most lines drawn one by one (racks, CDUs, variants) before switching to envelopes.
MAX_LINES = 12
#: Frequency band of concern for synchronous training swings [Hz] (Choukse et al. 2025).
SWING_BAND = (0.1, 20.0)


# -- KPI table ------------------------------------------------------------------------------
def _as_tree(result):
    if isinstance(result, (str, Path)):
        import twin

        return twin.load(result)
    return result


def is_sweep(tree) -> bool:
    """True for a combined sweep result (root dimension ``scenario``)."""
    return "scenario" in tree.to_dataset().dims


def kpi_frame(result):
    """KPIs as a pandas DataFrame: one row per result, or per variant of a sweep.

    Parameters
    ----------
    result : xarray.DataTree, str, Path, or a list of them
        A run result, a sweep result (``twin sweep``), or several (rows concatenated).

    Returns
    -------
    pandas.DataFrame
        Index ``scenario`` (the scenario name of a run; the variant index of a sweep). Columns:
        for a sweep, the parameters, ``variant``, ``status`` and ``error`` first; then the KPIs
        (the ``kpi_*`` root attributes of a run without the prefix, units in the name:
        ``energy_it_J``, ``p_facility_peak_W``, ``t_die_max_degC``, …).
    """
    import pandas as pd

    if isinstance(result, (list, tuple)):
        return pd.concat([kpi_frame(r) for r in result])
    tree = _as_tree(result)
    root = tree.to_dataset()
    if "scenario" in root.dims:
        cols = {}
        params = [p for p in tree.attrs.get("parameters", "").split(",") if p in root.coords]
        rest = [n for n in root.coords if n not in params and n != "scenario"]
        for name in [*params, *rest]:
            if root[name].dims == ("scenario",):
                cols[name] = root[name].values
        for name, v in root.data_vars.items():
            if v.dims == ("scenario",):
                cols[name] = v.values
        df = pd.DataFrame(cols, index=pd.Index(root["scenario"].values, name="scenario"))
        return df
    attrs = tree.attrs
    row = {k[4:]: v for k, v in attrs.items() if k.startswith("kpi_")}
    name = attrs.get("scenario_name", "result")
    return pd.DataFrame([row], index=pd.Index([name], name="scenario"))


def format_value(name: str, value, tree=None) -> str:
    """A KPI or parameter value for a table, scaled by its unit (kW/MW, MWh, °C …)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(x):
        return "—"
    units = ""
    if tree is not None and name in tree.to_dataset().variables:
        units = tree.to_dataset()[name].attrs.get("units", "")
    units = units or kpi_units(name)
    if units == "W":
        return f"{x / 1e6:,.3f} MW" if abs(x) >= 1e6 else f"{x / 1e3:,.1f} kW"
    if units == "J":
        return f"{x / 3.6e9:,.3f} MWh" if abs(x) >= 3.6e8 else f"{x / 3.6e6:,.2f} kWh"
    if units == "degC":
        return f"{x:.1f} °C"
    if name == "pue":
        return f"{x:.4f}"
    if units and units != "1":
        return f"{x:,.4g} {units}"
    return f"{x:,.0f}" if x == int(x) and abs(x) < 1e15 else f"{x:,.4g}"


# -- helpers ------------------------------------------------------------------------------------
def _group(tree, name):
    """A group's Dataset, or None when absent or empty."""
    if name not in tree.children:
        return None
    ds = tree[name].to_dataset()
    if not ds.data_vars or ds.sizes.get("time", 0) == 0:
        return None
    return ds


def _figure(title: str, nrows: int = 1, **kw):
    from twin.extras import require

    matplotlib = require("matplotlib", "report", "twin report")
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(nrows, 1, figsize=FIGSIZE, dpi=DPI, squeeze=True, **kw)
    fig.suptitle(title)
    return fig, ax


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _scale(values, unit="W"):
    """Scale for watts: (factor, label)."""
    import numpy as np

    top = float(np.nanmax(np.abs(values))) if np.size(values) and np.isfinite(values).any() else 0.0
    if top >= 1e6:
        return 1e-6, f"M{unit}"
    if top >= 1e3:
        return 1e-3, f"k{unit}"
    return 1.0, unit


def _thin(ds):
    """``ds`` averaged over contiguous time bins so at most :data:`MAX_POINTS` remain (for
    drawing only); the title says when it was."""
    k = _bin(ds)
    if k == 1:
        return ds, ""
    t = ds["time"].values
    return ds.coarsen(time=k, boundary="trim").mean(), f" (means over {_duration((t[1] - t[0]) * k)})"


#: Bin lengths for drawing long series [s]: each divides a day (no beat with daily cycles).
BIN_SECONDS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)


def _bin(ds) -> int:
    """Samples per drawing bin: 1 up to :data:`MAX_POINTS` samples, else the shortest bin of
    :data:`BIN_SECONDS` (a whole number of samples) that brings the count under it."""
    import numpy as np

    n = ds.sizes.get("time", 0)
    if n <= MAX_POINTS:
        return 1
    t = ds["time"].values
    dt = float((t[1] - t[0]) / np.timedelta64(1, "s"))
    need = n * dt / MAX_POINTS
    for b in BIN_SECONDS:
        k = round(b / dt)
        if b >= need and k >= 1 and abs(k * dt - b) < 1e-9 * b:
            return k
    return -(-n // MAX_POINTS)


def _duration(td) -> str:
    import numpy as np

    s = float(td / np.timedelta64(1, "s"))
    return f"{s / 3600:g} h" if s >= 3600 else f"{s / 60:g} min" if s >= 60 else f"{s:g} s"


def _finite(da) -> bool:
    import numpy as np

    return da.size > 0 and bool(np.isfinite(da.values).any())


# -- run plots ------------------------------------------------------------------------------
def plot_power_stack(tree, path: Path) -> Path | None:
    """Facility power stacked: IT (DC side), power-shelf losses, cooling [W] over time."""
    fac = _group(tree, "facility")
    if fac is None or "p_it" not in fac:
        return None
    import numpy as np

    peak = None
    if "p_facility" in fac and _bin(fac) > 1:
        peak = fac["p_facility"].coarsen(time=_bin(fac), boundary="trim").max()
    fac, note = _thin(fac)
    t = fac["time"].values
    p_it = fac["p_it"].values
    loss = fac["p_loss"].values if "p_loss" in fac else np.zeros_like(p_it)
    cool = fac["p_cooling"].values if "p_cooling" in fac else np.zeros_like(p_it)
    k, unit = _scale(p_it + cool)
    fig, ax = _figure("Facility power" + note)
    ax.stackplot(t, (p_it - loss) * k, loss * k, cool * k,
                 labels=["IT (DC, after power shelves)", "power-shelf losses", "cooling"],
                 colors=["#4C72B0", "#DD8452", "#55A868"])
    if peak is not None:
        ax.plot(t, peak.values * k, color="0.3", lw=0.6, label="facility, peak in each bin")
    elif "p_facility" in fac:
        ax.plot(t, fac["p_facility"].values * k, color="k", lw=0.6, label="facility")
    ax.set_ylabel(f"power [{unit}]")
    ax.set_xlabel("time")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def plot_pue(tree, path: Path) -> Path | None:
    """PUE over time."""
    fac = _group(tree, "facility")
    if fac is None or "pue" not in fac or not _finite(fac["pue"]):
        return None
    fac, note = _thin(fac[["pue"]])
    fig, ax = _figure("PUE (facility power / IT power)" + note)
    ax.plot(fac["time"].values, fac["pue"].values, lw=0.8)
    ax.set_ylabel("PUE [1]")
    ax.set_xlabel("time")
    ax.grid(alpha=0.3)
    ax.ticklabel_format(axis="y", useOffset=False)
    return _save(fig, path)


def plot_rack_power(tree, path: Path) -> Path | None:
    """Rack AC power against each rack's limit (lines per rack, or min/mean/max envelopes)."""
    rack = _group(tree, "rack")
    if rack is None or "p_ac" not in rack:
        return None
    import numpy as np

    rack, note = _thin(rack[["p_ac"]])
    p = rack["p_ac"]
    t = rack["time"].values
    k, unit = _scale(p.values)
    fig, ax = _figure("Rack power (AC input) and limits" + note)
    if rack.sizes["rack"] <= MAX_LINES:
        for name in rack["rack"].values:
            ax.plot(t, p.sel(rack=name).values * k, lw=0.8, label=str(name))
    else:
        ax.fill_between(t, p.min("rack").values * k, p.max("rack").values * k, alpha=0.3, label="min–max of racks")
        ax.plot(t, p.mean("rack").values * k, lw=0.8, label="mean of racks")
    if "power_limit" in rack.coords:
        limits = np.unique(rack["power_limit"].values)
        for lim in limits[np.isfinite(limits)]:
            ax.axhline(lim * k, color="r", ls="--", lw=1, label=f"limit {lim * k:,.1f} {unit}")
    ax.set_ylabel(f"power [{unit}]")
    ax.set_xlabel("time")
    ax.legend(loc="upper right", fontsize=8, ncol=2)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def _bin_mean(values, n_max: int, axis: int):
    """Average ``values`` along ``axis`` in contiguous bins so at most ``n_max`` remain."""
    import numpy as np

    n = values.shape[axis]
    if n <= n_max:
        return values, np.arange(n)
    edges = np.linspace(0, n, n_max + 1).astype(int)
    with np.errstate(invalid="ignore"):
        out = np.add.reduceat(np.nan_to_num(values), edges[:-1], axis=axis)
        counts = np.diff(edges).reshape([-1 if i == axis else 1 for i in range(values.ndim)])
    return out / counts, edges[:-1]


def plot_device_heatmap(tree, path: Path) -> Path | None:
    """Die temperature, device × time (devices sorted by kind then rack; bins averaged)."""
    dev = _group(tree, "device")
    if dev is None or "t_die" not in dev or not _finite(dev["t_die"]):
        return None
    import numpy as np

    da = dev["t_die"]
    order = np.lexsort((da["rack"].values, da["kind"].values)) if "kind" in da.coords else np.arange(da.sizes["device"])
    values = da.transpose("device", "time").values[order]
    values, rows = _bin_mean(values, HEATMAP_MAX[0], axis=0)
    values, cols = _bin_mean(values, HEATMAP_MAX[1], axis=1)
    t = dev["time"].values
    hours = (t - t[0]) / np.timedelta64(1, "h")
    fig, ax = _figure("Die temperature by device")
    span = hours[-1] + (hours[1] - hours[0] if hours.size > 1 else 1.0)
    im = ax.imshow(values, aspect="auto", interpolation="nearest", cmap="inferno",
                   extent=(0, span, values.shape[0], 0))
    fig.colorbar(im, ax=ax, label="die temperature [°C]")
    if "kind" in da.coords:
        kinds = da["kind"].values[order]
        bounds = [i for i in range(1, kinds.size) if kinds[i] != kinds[i - 1]]
        starts = [0, *bounds]
        scale = values.shape[0] / kinds.size
        for s, e in zip(starts, [*bounds, kinds.size]):
            if s:
                ax.axhline(s * scale, color="w", lw=0.5)
            ax.text(-0.01, (s + e) / 2 * scale, str(kinds[s]), transform=ax.get_yaxis_transform(),
                    ha="right", va="center", fontsize=8)
        ax.set_yticks([])
    ax.set_xlabel("hours since start")
    return _save(fig, path)


def plot_cdu(tree, path: Path) -> Path | None:
    """CDU secondary supply and return temperatures."""
    cdu = _group(tree, "cdu")
    if cdu is None or not any(v in cdu for v in ("t_supply", "t_return")):
        return None
    import numpy as np

    cdu, note = _thin(cdu[[v for v in ("t_supply", "t_return") if v in cdu]])
    fig, ax = _figure("CDU secondary temperatures" + note)
    t = cdu["time"].values
    many = cdu.sizes["cdu"] > MAX_LINES
    for var, style in (("t_supply", "-"), ("t_return", "--")):
        if var not in cdu or not _finite(cdu[var]):
            continue
        da = cdu[var]
        if many:
            ax.fill_between(t, np.nanmin(da.values, axis=1), np.nanmax(da.values, axis=1), alpha=0.3,
                            label=f"{var} (min–max of CDUs)")
        else:
            for name in cdu["cdu"].values:
                ax.plot(t, da.sel(cdu=name).values, ls=style, lw=0.9, label=f"{name} {var[2:]}")
    fac = _group(tree, "facility")
    if fac is not None and "t_facility_supply" in fac:
        fac, _ = _thin(fac[["t_facility_supply"]])
        ax.plot(fac["time"].values, fac["t_facility_supply"].values, color="k", lw=0.8, label="facility water supply")
    ax.set_ylabel("temperature [°C]")
    ax.set_xlabel("time")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def power_spectrum(power, dt: float):
    """One-sided amplitude spectrum of a power series.

    Parameters
    ----------
    power : ndarray
        Power at a fixed interval [W].
    dt : float
        Sample interval [s].

    Returns
    -------
    freqs : ndarray
        Frequencies [Hz], from 1/(n·dt) to the Nyquist frequency 1/(2·dt).
    amplitude : ndarray
        Amplitude of the sinusoid at each frequency [W]: 2·|X(f)|/n with X the real FFT of
        the mean-removed series (Hann window, amplitude-corrected).
    """
    import numpy as np

    x = np.asarray(power, dtype=float)
    x = x[np.isfinite(x)]
    n = x.size
    w = np.hanning(n)
    spec = np.abs(np.fft.rfft((x - x.mean()) * w)) * 2.0 / w.sum()
    freqs = np.fft.rfftfreq(n, d=dt)
    return freqs[1:], spec[1:]


def plot_spectrum(tree, path: Path) -> Path | None:
    """Spectrum of facility power: training swings show as lines in the 0.1–20 Hz band."""
    fac = _group(tree, "facility")
    var = "p_facility" if fac is not None and "p_facility" in fac else "p_it"
    if fac is None or var not in fac or fac.sizes["time"] < 16:
        return None
    import numpy as np

    t = fac["time"].values
    dt = float((t[1] - t[0]) / np.timedelta64(1, "s"))
    if not dt > 0:
        return None
    freqs, amp = power_spectrum(fac[var].values, dt)
    if not np.isfinite(amp).any() or amp.max() <= 0:
        return None
    k, unit = _scale(amp)
    fig, ax = _figure(f"Spectrum of facility power (sampled every {dt:g} s)")
    ax.loglog(freqs, np.maximum(amp * k, 1e-12), lw=0.8)
    lo, hi = SWING_BAND
    ax.axvspan(max(lo, freqs[0]), min(hi, freqs[-1]), color="orange", alpha=0.15,
               label=f"{lo:g}–{hi:g} Hz (training swings)")
    peak = np.argmax(np.where((freqs >= lo) & (freqs <= hi), amp, 0))
    if amp[peak] > 0 and lo <= freqs[peak] <= hi:
        ax.annotate(f"{freqs[peak]:.3g} Hz, {amp[peak] * k:,.1f} {unit}", (freqs[peak], amp[peak] * k),
                    textcoords="offset points", xytext=(10, 5), fontsize=8)
    ax.set_xlabel("frequency [Hz]")
    ax.set_ylabel(f"amplitude [{unit}]")
    ax.set_ylim(bottom=max(amp.max() * k * 1e-6, 1e-12))
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    return _save(fig, path)


#: What a job's progress counts, by job kind: (axis label of its rate, axis label of its total).
JOB_PROGRESS_UNITS = {
    "training": ("iterations/s", "iterations"),
    "moe_training": ("iterations/s", "iterations"),
    "inference": ("output tokens/s", "requests completed"),
    "cpu": ("device-s at full clock per s", "device-s at full clock"),
}


def plot_jobs(tree, path: Path) -> Path | None:
    """Job throughput and progress, one row per kind of progress (iterations of training jobs,
    tokens and requests of inference jobs, full-clock device-seconds of CPU jobs): quantities
    of different units never share an axis."""
    import numpy as np

    job = _group(tree, "job")
    if job is None or "throughput" not in job or job.sizes.get("job", 0) == 0:
        return None
    names = job["job"].values[:MAX_LINES]
    kinds = (job["job_kind"].values[:MAX_LINES] if "job_kind" in job.coords
             else np.array(["training"] * len(names)))
    units = list(dict.fromkeys(JOB_PROGRESS_UNITS.get(str(k), ("1/s", "1")) for k in kinds))
    fig, axes = _figure("Jobs", nrows=2 * len(units), sharex=True)
    t = job["time"].values
    for row, (rate_label, total_label) in enumerate(units):
        ax_rate, ax_total = axes[2 * row], axes[2 * row + 1]
        for name, kind in zip(names, kinds):
            if JOB_PROGRESS_UNITS.get(str(kind), ("1/s", "1")) != (rate_label, total_label):
                continue
            ax_rate.plot(t, job["throughput"].sel(job=name).values, lw=0.8, label=str(name))
            if "progress" in job:
                ax_total.plot(t, job["progress"].sel(job=name).values, lw=0.8, label=str(name))
        ax_rate.set_ylabel(f"throughput [{rate_label}]")
        ax_total.set_ylabel(f"progress [{total_label}]")
    axes[-1].set_xlabel("time")
    for ax in axes:
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(loc="upper left", fontsize=8)
    return _save(fig, path)


# -- sweep plots ----------------------------------------------------------------------------
def _numeric(values) -> bool:
    import numpy as np

    return np.issubdtype(np.asarray(values).dtype, np.number)


def plot_sweep_kpis(tree, folder: Path) -> list[Path]:
    """One PNG per KPI: the KPI against the first numeric parameter that varies, one line per
    combination of the other parameters (bars by variant when no parameter is numeric)."""
    import numpy as np

    df = kpi_frame(tree)
    root = tree.to_dataset()
    params = [p for p in tree.attrs.get("parameters", "").split(",") if p and p in df.columns]
    kpis = [k for k in tree.attrs.get("kpis", "").split(",") if k in df.columns]
    ok = df[df["status"] == "ok"] if "status" in df else df
    if ok.empty or not kpis:
        return []
    varying = [p for p in params if ok[p].nunique() > 1]
    x = next((p for p in varying if _numeric(ok[p].values)), None)
    # Other parameters that vary independently of x (a parameter zipped with x is not one).
    others = [p for p in varying if p != x and (x is None or ok.groupby(x)[p].nunique().max() > 1)]
    paths = []
    for kpi in kpis:
        if not np.isfinite(ok[kpi].to_numpy(dtype=float)).any():
            continue
        units = root[kpi].attrs.get("units", "") if kpi in root else ""
        fig, ax = _figure(f"{kpi} across the sweep")
        if x is not None:
            groups = ok.groupby(others, sort=True) if others else [((), ok)]
            for label, sub in groups:
                sub = sub.sort_values(x)
                text = ", ".join(f"{o}={v}" for o, v in zip(others, label if isinstance(label, tuple) else (label,)))
                ax.plot(sub[x].values, sub[kpi].values, marker="o", lw=1, label=text or kpi)
            xunits = root[x].attrs.get("units", "") if x in root.coords else ""
            ax.set_xlabel(f"{x}" + (f" [{xunits}]" if xunits else ""))
            if others:
                ax.legend(fontsize=8)
        else:
            names = [", ".join(str(r[p]) for p in varying) or str(i) for i, r in ok.iterrows()]
            ax.bar(range(len(ok)), ok[kpi].values)
            ax.set_xticks(range(len(ok)), names, rotation=45, ha="right", fontsize=8)
        ax.set_ylabel(kpi + (f" [{units}]" if units and units != "1" else ""))
        ax.ticklabel_format(axis="y", useOffset=False)
        ax.grid(alpha=0.3)
        paths.append(_save(fig, folder / f"kpi_{kpi}.png"))
    return paths


def plot_sweep_facility(tree, path: Path) -> Path | None:
    """Facility power of every variant over time (or the min–max envelope of many)."""
    fac = _group(tree, "facility")
    if fac is None or "p_facility" not in fac or "scenario" not in fac["p_facility"].dims:
        return None
    import numpy as np

    if not _finite(fac["p_facility"]):
        return None
    fac, note = _thin(fac[["p_facility"]])
    p = fac["p_facility"]
    t = fac["time"].values
    k, unit = _scale(p.values)
    few = p.sizes["scenario"] <= MAX_LINES
    title = "Facility power of each variant" if few else f"Facility power across {p.sizes['scenario']} variants (min–max and mean)"
    fig, ax = _figure(title + note)
    if few:
        for i in range(p.sizes["scenario"]):
            ax.plot(t, p.isel(scenario=i).values * k, lw=0.7, label=f"variant {i}")
        ax.legend(fontsize=7, ncol=3, loc="upper right")
    else:
        ax.fill_between(t, np.nanmin(p.values, 0) * k, np.nanmax(p.values, 0) * k, alpha=0.3, label="min–max")
        ax.plot(t, np.nanmean(p.values, 0) * k, lw=0.8, label="mean")
        ax.legend(fontsize=8)
    ax.set_ylabel(f"facility power [{unit}]")
    ax.set_xlabel("time")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def is_ensemble(tree) -> bool:
    """True for an ensemble result (``twin run --ensemble``: a ``quantile`` dimension)."""
    return bool(tree.attrs.get("twin_ensemble"))


def _band(ax, t, da, k, label, color):
    """p5–p95 shaded and p50 drawn, from a (quantile, time) DataArray."""
    lo, mid, hi = (da.sel(quantile=x, method="nearest").values * k for x in (0.05, 0.5, 0.95))
    ax.fill_between(t, lo, hi, alpha=0.3, color=color, lw=0, label=f"{label} p5–p95")
    ax.plot(t, mid, lw=0.9, color=color, label=f"{label} p50")


def plot_ensemble_power(tree, path: Path) -> Path | None:
    """Facility and IT power of an ensemble: p5–p95 band and median."""
    fac = _group(tree, "facility")
    if fac is None or "quantile" not in fac.dims or "p_it" not in fac:
        return None
    fac, note = _thin(fac[[v for v in ("p_it", "p_facility") if v in fac]])
    t = fac["time"].values
    k, unit = _scale(fac["p_it"].values)
    fig, ax = _figure("Power across the ensemble" + note)
    if "p_facility" in fac:
        _band(ax, t, fac["p_facility"], k, "facility", "#55A868")
    _band(ax, t, fac["p_it"], k, "IT", "#4C72B0")
    ax.set_ylabel(f"power [{unit}]")
    ax.set_xlabel("time")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def plot_ensemble_devices(tree, path: Path) -> Path | None:
    """Power and die temperature of a few devices (the hottest at p50): bands over the ensemble."""
    dev = _group(tree, "device")
    if dev is None or "quantile" not in dev.dims or "t_die" not in dev:
        return None
    import numpy as np

    hottest = dev["t_die"].sel(quantile=0.5, method="nearest").max("time").values
    order = np.argsort(-np.nan_to_num(hottest, nan=-np.inf))[:4]
    sel = dev.isel(device=order)
    sel, note = _thin(sel[[v for v in ("p", "t_die") if v in sel]])
    t = sel["time"].values
    fig, axes = _figure("Devices across the ensemble (p5–p95, p50)" + note, nrows=2, sharex=True)
    colors = ["#4C72B0", "#DD8452", "#55A868", "#C44E52"]
    for i, name in enumerate(sel["device"].values):
        if "p" in sel:
            k, unit = _scale(sel["p"].values)
            _band(axes[0], t, sel["p"].sel(device=name), k, str(name), colors[i % 4])
            axes[0].set_ylabel(f"device power [{unit}]")
        _band(axes[1], t, sel["t_die"].sel(device=name), 1.0, str(name), colors[i % 4])
    axes[1].set_ylabel("die temperature [°C]")
    axes[1].set_xlabel("time")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper right", fontsize=7, ncol=2)
    return _save(fig, path)


#: Plots of an ensemble: file stem → (title, function).
ENSEMBLE_PLOTS: dict[str, tuple[str, Callable]] = {
    "ensemble_power": ("Power across the ensemble", plot_ensemble_power),
    "ensemble_devices": ("Devices across the ensemble", plot_ensemble_devices),
}


#: Plots of a run: file stem → (title, function).
RUN_PLOTS: dict[str, tuple[str, Callable]] = {
    "power_stack": ("Power stack over time", plot_power_stack),
    "pue": ("PUE over time", plot_pue),
    "rack_power": ("Rack power against limits", plot_rack_power),
    "device_temperature": ("Die temperature heatmap", plot_device_heatmap),
    "cdu_temperature": ("CDU temperatures", plot_cdu),
    "spectrum": ("Facility power spectrum (training swings)", plot_spectrum),
    "jobs": ("Job throughput", plot_jobs),
}
#: Plots of a sweep besides one per KPI.
SWEEP_PLOTS: dict[str, tuple[str, Callable]] = {
    "sweep_facility_power": ("Facility power of each variant", plot_sweep_facility),
}


# -- HTML ---------------------------------------------------------------------------------------
def _table_html(df, tree, max_rows: int = 500) -> str:
    head = "".join(f"<th>{html.escape(kpi_label(str(c)))}</th>" for c in [df.index.name or "", *df.columns])
    rows = []
    for idx, row in df.head(max_rows).iterrows():
        cells = "".join(f"<td>{html.escape(format_value(c, row[c], tree))}</td>" for c in df.columns)
        rows.append(f"<tr><th>{html.escape(str(idx))}</th>{cells}</tr>")
    more = f"<p>… {len(df) - max_rows} more rows.</p>" if len(df) > max_rows else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"


_CSS = ("body{font-family:sans-serif;margin:2em;max-width:1200px} img{max-width:100%;border:1px solid #ddd}"
        " table{border-collapse:collapse;font-size:90%} td,th{border:1px solid #ccc;padding:3px 8px;"
        "text-align:right} thead th{background:#eee} .note{color:#666}")


def write_report(result, folder: str | Path) -> Path:
    """Write the PNG plots and ``index.html`` of a run or sweep result into ``folder``.

    Parameters
    ----------
    result : xarray.DataTree, str or Path
        A result of ``twin run`` or ``twin sweep`` (or its path).
    folder : str or Path
        Output folder (created).

    Returns
    -------
    Path
        The HTML page.
    """
    tree = _as_tree(result)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    sweep = is_sweep(tree)
    ensemble = is_ensemble(tree)
    sections, skipped = [], []
    if sweep:
        for p in plot_sweep_kpis(tree, folder):
            sections.append((p.stem.replace("kpi_", "KPI: "), p))
        registry = SWEEP_PLOTS
    elif ensemble:
        registry = ENSEMBLE_PLOTS
    else:
        registry = RUN_PLOTS
    for stem, (title, fn) in registry.items():
        p = fn(tree, folder / f"{stem}.png")
        if p is None:
            skipped.append(title)
        else:
            sections.append((title, p))
    df = kpi_frame(tree)
    if sweep:
        title = f"twin sweep report: {tree.attrs.get('sweep_name', '')}"
        table = _table_html(df, tree)
    elif ensemble:
        title = f"twin ensemble report: {tree.attrs.get('scenario_name', '')} ({tree.attrs.get('n_members', '')} members)"
        root = tree.to_dataset()
        rows = "".join(
            f"<tr><th>{html.escape(k[4:])}</th>"
            + "".join(f"<td>{html.escape(format_value(k[4:], x))}</td>" for x in root[k].values) + "</tr>"
            for k in root.data_vars if k.startswith("kpi_"))
        table = ("<table><thead><tr><th>KPI</th><th>p5</th><th>p50</th><th>p95</th></tr></thead>"
                 f"<tbody>{rows}</tbody></table>")
    else:
        title = f"twin run report: {tree.attrs.get('scenario_name', '')}"
        rows = "".join(f"<tr><th>{html.escape(kpi_label(k))}</th><td>{html.escape(format_value(k, v))}</td></tr>"
                       for k, v in df.iloc[0].items()) if not df.empty else ""
        table = f"<table><thead><tr><th>KPI</th><th>value</th></tr></thead><tbody>{rows}</tbody></table>"
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"]
    meta = [("twin version", tree.attrs.get("twin_version", "")), ("solver", tree.attrs.get("solver", "")),
            ("start", tree.attrs.get("start", "")), ("variants", tree.attrs.get("n_variants", "")),
            ("failed variants", tree.attrs.get("n_failed", ""))]
    meta_html = "".join(f"<li>{html.escape(k)}: {html.escape(str(v))}</li>" for k, v in meta if v != "")
    parts.append(f"<ul class='note'>{meta_html}</ul>")
    parts.append(f"<h2>KPIs</h2>{table}")
    for heading, p in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2><img src='{html.escape(p.name)}' alt='{html.escape(heading)}'>")
    if skipped:
        parts.append("<p class='note'>Not shown (no data in this result): " + html.escape(", ".join(skipped)) + ".</p>")
    parts.append("</body></html>")
    page = folder / "index.html"
    page.write_text("\n".join(parts), encoding="utf-8")
    return page
