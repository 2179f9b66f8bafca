"""OpenMetrics text with timestamps from a result tree, for backfilling Prometheus.

``promtool tsdb create-blocks-from openmetrics OUT.om DATA_DIR`` turns the file into TSDB blocks,
so a simulated day can be browsed in Grafana with the same dashboards as a live run: the metric
names, labels and units are those of the live exporter (:mod:`twin.export.prometheus`, one
mapping table for both).

One sample per recorded time of each group, stamped with the start of its recording interval
(the dataset's ``time``; values are interval means). Energy counters are the running integral of
the group's power up to that time (0 at the scenario start), with one more sample at the end of
the last interval: the run's total, equal to the live counter and the KPI at the end of the run
(all three integrate the same variable, :data:`twin.export.prometheus.COUNTERS`). Samples of a series are contiguous
and in time order, families are not interleaved, and the file ends with ``# EOF``, as the
OpenMetrics text format requires. Non-finite values (e.g. coolant temperatures of an air-cooled
rack) are left out.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from twin.export.prometheus import (
    BUILD_INFO_LABELS,
    COUNTERS,
    DEVICE_THRESHOLD,
    DEVICES_HELP,
    DEVICES_METRIC,
    FINE_GROUPS,
    GROUP_LABELS,
    KIND_SUMMARIES,
    LABEL_COORDS,
    METRICS,
    RUN_METRICS,
    fine_level_enabled,
    kind_masks,
    kind_reduce,
    metric_help,
    metric_scale,
)

#: Milliseconds per second (OpenMetrics timestamps are in seconds; written to the millisecond).
MS_PER_S = 1e3


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _labelset(names, values) -> str:
    if not names:
        return ""
    return "{" + ",".join(f'{n}="{_escape(str(v))}"' for n, v in zip(names, values)) + "}"


def _seconds(time: np.ndarray) -> np.ndarray:
    """datetime64 times (naive = UTC) → Unix seconds [s]."""
    return np.asarray(time).astype("datetime64[ms]").astype(np.int64) / MS_PER_S


class _Writer:
    def __init__(self, fh):
        self.fh = fh

    def family(self, name: str, kind: str, help_: str) -> None:
        self.fh.write(f"# HELP {name} {_escape(help_)}\n# TYPE {name} {kind}\n")

    def series(self, sample: str, labels: str, t: np.ndarray, v: np.ndarray) -> None:
        ok = np.isfinite(v)
        if not ok.any():
            return
        prefix = f"{sample}{labels} "
        self.fh.write("".join(f"{prefix}{x!r} {ts:.3f}\n" for x, ts in zip(v[ok].tolist(), t[ok].tolist())))


def _entity_labels(ds, group: str) -> list[tuple]:
    names = GROUP_LABELS[group]
    if not names:
        return [()]
    return list(zip(*(ds[LABEL_COORDS.get(n, n)].values.astype(str).tolist() for n in names)))


def _interval_seconds(ds, tree) -> float:
    """Recording interval of a group [s], from its time coordinate (or the step if one sample)."""
    t = _seconds(ds["time"].values)
    if t.size > 1:
        return float(t[1] - t[0])
    return float(tree.attrs.get("step_seconds", 1.0))


def _run_metrics(w: _Writer, tree, t: np.ndarray) -> None:
    """The live exporter's run metrics at the facility sample times, as an offline run has them:
    build info, simulated time and clock, and a lag of 0 (an offline run is never behind)."""
    attrs = tree.attrs
    start = _seconds(np.array([np.datetime64(attrs["start"].replace(" ", "T"))]))[0] if "start" in attrs else t[0]
    info = (attrs.get("twin_version", ""), attrs.get("scenario_name", ""), attrs.get("solver", ""))
    values = {"twin_build_info": np.ones(t.size), "twin_simulated_time_seconds": t - start,
              "twin_simulated_timestamp_seconds": t, "twin_lag_seconds": np.zeros(t.size)}
    for name, help_ in RUN_METRICS.items():
        w.family(name, "gauge", help_)
        labels = _labelset(BUILD_INFO_LABELS, info) if name == "twin_build_info" else ""
        w.series(name, labels, t, values[name])


def write_openmetrics(tree, path, *, devices: bool | None = None,
                      device_threshold: int = DEVICE_THRESHOLD) -> Path:
    """Write ``tree`` (a twin result) as OpenMetrics text with timestamps.

    Parameters
    ----------
    tree : xarray.DataTree
        A result tree (:func:`twin.export.dataset.build_tree` or :func:`twin.load`).
    path : str or Path
        Output file (conventionally ``.om``); written under a temporary name and renamed.
    devices : bool or None
        Device- and sled-level series: True, False, or None = only below ``device_threshold``
        entities (as the live exporter).
    device_threshold : int
        Entity count from which device/sled series are off by default.

    Returns
    -------
    Path
        The file written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.part")
    groups = {name: tree[name].to_dataset() for name in GROUP_LABELS if name in tree.children}
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            w = _Writer(fh)
            fac = groups.get("facility")
            if fac is not None and fac.sizes.get("time", 0):
                _run_metrics(w, tree, _seconds(fac["time"].values))
            for (group, variable), name in METRICS.items():
                ds = groups.get(group)
                if ds is None or variable not in ds or ds.sizes.get("time", 0) == 0:
                    continue
                if group in FINE_GROUPS and not fine_level_enabled(ds.sizes[group], devices, device_threshold):
                    continue
                t = _seconds(ds["time"].values)
                values = np.asarray(ds[variable].values, dtype=float).reshape(t.size, -1)
                values = values * metric_scale(group, variable)
                counter = name.endswith("_total")
                w.family(name[: -len("_total")] if counter else name, "counter" if counter else "gauge",
                         metric_help(group, variable))
                for j, lab in enumerate(_entity_labels(ds, group)):
                    w.series(name, _labelset(GROUP_LABELS[group], lab), t, values[:, j])

            for c in COUNTERS:
                ds = groups.get(c.group)
                if ds is None or c.power not in ds or ds.sizes.get("time", 0) == 0:
                    continue
                interval = _interval_seconds(ds, tree)
                t = _seconds(ds["time"].values)
                power = np.asarray(ds[c.power].values, dtype=float).reshape(t.size, -1)
                # Energy at the start of each interval: Σ of the earlier intervals' mean power ×
                # length; one more sample at the end of the last interval holds the run's total.
                energy = np.vstack([np.zeros((1, power.shape[1])),
                                    np.cumsum(np.nan_to_num(power) * interval, axis=0)])
                t = np.append(t, t[-1] + interval)
                w.family(c.name, "counter", c.help)
                for j, lab in enumerate(_entity_labels(ds, c.group)):
                    w.series(f"{c.name}_total", _labelset(GROUP_LABELS[c.group], lab), t, energy[:, j])

            dev = groups.get("device")
            if dev is not None and dev.sizes.get("time", 0):
                t = _seconds(dev["time"].values)
                masks = kind_masks(dev["kind"].values)
                w.family(DEVICES_METRIC, "gauge", DEVICES_HELP)
                for kind, mask in masks.items():
                    w.series(DEVICES_METRIC, _labelset(("kind",), (kind,)), t, np.full(t.size, float(mask.sum())))
                for s in KIND_SUMMARIES:
                    if s.variable not in dev:
                        continue
                    w.family(s.name, "gauge", s.help)
                    reduced = kind_reduce(np.asarray(dev[s.variable].values, dtype=float), masks, s.reduce)
                    for kind, v in reduced.items():
                        w.series(s.name, _labelset(("kind",), (kind,)), t, v)
            fh.write("# EOF\n")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
