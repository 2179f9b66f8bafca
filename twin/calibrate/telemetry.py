"""Measured telemetry: read it, translate foreign names once, convert units, check it.

Sources (all give the same :class:`Telemetry`):

- a **long** table (CSV, TSV or Parquet): one row per sample with a time, a device id (one or
  several columns, joined with ``/``), a metric name and a value;
- a **wide** table (CSV or TSV): a time, an id and one column per quantity, named by the
  scenario's ``telemetry.columns`` — e.g. the BioHPC file as shipped (UTF-8 byte-order mark,
  newest row first, an SQL client's footer after the rows);
- a **Prometheus** server (``http://host:9090``), read through its HTTP API (``query_range`` of
  ``avg_over_time(metric[interval])``, so each sample is the mean over its interval, as the
  twin records).

Metric names are translated to the twin's quantities by one table, :data:`METRIC_NAMES`: NVIDIA
dcgm-exporter names (``DCGM_FI_DEV_POWER_USAGE`` …), the twin's own metric and variable names,
and plain quantity names. Values are converted to SI (W, degC, fraction, relative clock) with
the units the scenario gives or the metric's own.

Problems are either one :class:`~twin.scenario.errors.ScenarioError` line
(``SOURCE:LINE: column: message``; nothing is fitted or written) or, when the rest of the data
is still good, one note each (:attr:`Telemetry.notes`) and the bad part is left out: ids the
scenario does not map, unknown metrics, blank values, gaps, stuck sensors.
"""

from __future__ import annotations

import io
import json
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from twin.calibrate.spec import QUANTITIES, TelemetrySpec
from twin.scenario.errors import ScenarioError

#: Foreign and own metric names → (twin quantity, the metric's own unit). The one translation.
METRIC_NAMES: dict[str, tuple[str, str]] = {
    # NVIDIA dcgm-exporter (DCGM field names)
    "DCGM_FI_DEV_POWER_USAGE": ("power", "W"),
    "DCGM_FI_DEV_GPU_TEMP": ("temperature", "degC"),
    "DCGM_FI_DEV_GPU_UTIL": ("utilisation", "percent"),
    "DCGM_FI_DEV_SM_CLOCK": ("clock", "MHz"),
    "DCGM_FI_DEV_MEMORY_TEMP": ("memory_temperature", "degC"),
    # the twin's own Prometheus metrics (twin.export.prometheus.METRICS)
    "twin_device_power_watts": ("power", "W"),
    "twin_device_temperature_celsius": ("temperature", "degC"),
    "twin_device_utilization_ratio": ("utilisation", "1"),
    "twin_device_clock_ratio": ("clock", "1"),
    # the twin's dataset variables (device group)
    "p": ("power", "W"),
    "t_die": ("temperature", "degC"),
    "u": ("utilisation", "1"),
    "clock": ("clock", "1"),
    # plain names (units from telemetry.units)
    "power": ("power", "W"),
    "temperature": ("temperature", "degC"),
    "utilisation": ("utilisation", "1"),
    "utilization": ("utilisation", "1"),
    "memory_temperature": ("memory_temperature", "degC"),
}
#: Names whose unit the scenario gives (``telemetry.units``); the others carry their own.
PLAIN_NAMES = ("power", "temperature", "utilisation", "utilization", "memory_temperature", "clock")
#: Label (or column) names that identify a device, by metric family, when the scenario names none.
DEFAULT_ID_LABELS = {"DCGM": ("Hostname", "gpu"), "twin": ("device",)}
#: Unit names accepted per quantity → factor (and offset) to the SI unit used inside the twin.
UNITS: dict[str, dict[str, tuple[float, float]]] = {
    "power": {"W": (1.0, 0.0), "mW": (1e-3, 0.0), "kW": (1e3, 0.0)},
    "temperature": {"degC": (1.0, 0.0), "C": (1.0, 0.0), "K": (1.0, -273.15),
                    "degF": (5.0 / 9.0, -32.0 * 5.0 / 9.0), "F": (5.0 / 9.0, -32.0 * 5.0 / 9.0)},
    "memory_temperature": {"degC": (1.0, 0.0), "C": (1.0, 0.0), "K": (1.0, -273.15)},
    "utilisation": {"1": (1.0, 0.0), "fraction": (1.0, 0.0), "ratio": (1.0, 0.0), "percent": (0.01, 0.0),
                    "%": (0.01, 0.0)},
    "clock": {"1": (1.0, 0.0), "ratio": (1.0, 0.0), "MHz": (1e6, 0.0), "GHz": (1e9, 0.0), "Hz": (1.0, 0.0)},
}
#: Clock units that are frequencies (divided by ``telemetry.clock_max`` to a relative clock).
FREQUENCY_UNITS = ("MHz", "GHz", "Hz")
#: Column names tried for the time and for the device id when the scenario names none.
TIME_COLUMNS = ("time", "timestamp", "Time", "Timestamp", "ts")
ID_COLUMNS = ("device", "id", "gpu_id", "uuid", "UUID")
#: Plausible ranges after conversion (wrong units are caught here): temperature [degC].
TEMPERATURE_RANGE = (-20.0, 150.0)
#: Power beyond this multiple of the device's TDP is taken for wrong units (e.g. mW as W) [1].
POWER_OVER_TDP = 3.0
#: Nonzero power whose median is below this share of TDP is taken for wrong units (kW as W) [1].
POWER_UNDER_TDP = 0.02
#: Utilisation range a stuck sensor must see elsewhere to be called stuck [1].
STUCK_UTILISATION_SPAN = 0.25
#: Largest number of points Prometheus returns for one series of a range query (its limit is 11,000).
PROMETHEUS_MAX_POINTS = 10_000
#: Prometheus timestamps are in milliseconds: evaluation times sit this far before the interval end [s].
PROMETHEUS_EPSILON = 1e-3
#: Seconds to wait for one Prometheus answer.
PROMETHEUS_TIMEOUT = 60.0


@dataclass
class Telemetry:
    """Measured data on a regular grid, per scenario device, in SI units.

    ``data``: a DataFrame with a (device, time) MultiIndex and one column per quantity of
    :data:`~twin.calibrate.spec.QUANTITIES` (NaN where not measured); ``time`` is the start of
    each interval (naive, as in the source; UTC for Prometheus). ``notes``: one line per
    problem that was reported and skipped.
    """

    data: pd.DataFrame
    interval: float  # [s]
    source: str
    ids: dict[str, str]  # scenario device → telemetry id
    notes: list[str] = field(default_factory=list)

    @property
    def devices(self) -> list[str]:
        return list(self.ids)

    @property
    def start(self) -> pd.Timestamp:
        return self.data.index.get_level_values("time").min()

    @property
    def end(self) -> pd.Timestamp:
        """End of the last interval."""
        return self.data.index.get_level_values("time").max() + pd.Timedelta(seconds=self.interval)

    def grid(self, start, end) -> pd.DatetimeIndex:
        """Interval starts from ``start`` (inclusive) to ``end`` (exclusive)."""
        return pd.date_range(pd.Timestamp(start), pd.Timestamp(end), freq=pd.Timedelta(seconds=self.interval),
                             inclusive="left")

    def arrays(self, start, end, devices=None) -> dict[str, np.ndarray]:
        """Each quantity as an array (intervals, devices) over ``[start, end)`` (NaN: missing)."""
        times = self.grid(start, end)
        devices = list(devices or self.devices)
        out = {q: np.full((times.size, len(devices)), np.nan) for q in QUANTITIES}
        # One scatter per quantity (no loop over devices): each row's interval and device column.
        row_time = times.get_indexer(self.data.index.get_level_values("time"))
        row_dev = pd.Index(devices).get_indexer(self.data.index.get_level_values("device"))
        keep = (row_time >= 0) & (row_dev >= 0)
        for q in QUANTITIES:
            out[q][row_time[keep], row_dev[keep]] = self.data[q].to_numpy(dtype=float)[keep]
        return out

    def restricted(self, start, end) -> "Telemetry":
        """The same telemetry limited to ``[start, end)`` (notes are kept)."""
        t = self.data.index.get_level_values("time")
        keep = (t >= pd.Timestamp(start)) & (t < pd.Timestamp(end))
        return Telemetry(self.data.loc[keep].copy(), self.interval, self.source, self.ids, list(self.notes))

    def count(self, start, end) -> int:
        """Samples with a power or temperature value in ``[start, end)``."""
        t = self.data.index.get_level_values("time")
        sel = (t >= pd.Timestamp(start)) & (t < pd.Timestamp(end))
        return int(self.data.loc[sel, ["power", "temperature"]].notna().any(axis=1).sum())


# -- reading -----------------------------------------------------------------------------------
def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def _fail(source, message, line=1, column=""):
    return ScenarioError(message, file=str(source), line=line, path=column or "<telemetry>")


def _split_lines(path: Path, separator: str | None):
    """Header, data lines with their line numbers, and the separator of a delimited text file.

    Blank lines are skipped; after the last line with the header's number of fields, lines with
    another number of fields are a footer (an SQL client's "(N rows affected)") and dropped.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise _fail(path, f"cannot read telemetry file: {exc.strerror or exc}") from None
    if b"\0" in raw[:4096]:
        raise _fail(path, "not a text table (binary data); CSV, TSV or Parquet expected")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _fail(path, f"not UTF-8 text ({exc.reason})") from None
    lines = text.splitlines()
    numbered = [(i + 1, ln) for i, ln in enumerate(lines) if ln.strip()]
    if not numbered:
        raise _fail(path, "empty telemetry file")
    head_no, header = numbered[0]
    if separator is None:
        separator = "\t" if path.suffix.lower() in (".tsv", ".tab") or "\t" in header else ","
    n = len(header.split(separator))
    if n < 2:
        raise _fail(path, f"one column only in the header; is the separator {separator!r} right? "
                          "(set telemetry.separator)", head_no)
    last = max((k for k, (_, ln) in enumerate(numbered) if len(ln.split(separator)) == n), default=0)
    body = numbered[1:last + 1]
    for no, ln in body:
        if len(ln.split(separator)) != n:
            raise _fail(path, f"{len(ln.split(separator))} fields where the header has {n}", no)
    return header, body, separator


def read_table(path: Path, separator: str | None = None) -> tuple[pd.DataFrame, np.ndarray]:
    """A table of strings and the file line (or Parquet row) of each row."""
    if not path.exists():
        raise _fail(path, "telemetry file not found")
    if path.is_dir():
        raise _fail(path, "is a directory, not a telemetry file")
    if path.suffix.lower() in (".parquet", ".pq"):
        try:
            table = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several unrelated types
            raise _fail(path, f"cannot read Parquet: {str(exc).splitlines()[0]}") from None
        return table, np.arange(1, len(table) + 1)
    header, body, sep = _split_lines(path, separator)
    text = "\n".join([header] + [ln for _, ln in body])
    table = pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, engine="python",
                        quoting=3 if sep == "\t" else 0)
    table.columns = [str(c).strip() for c in table.columns]
    return table, np.array([no for no, _ in body], dtype=np.int64)


def _column(table, spec_value, candidates, role, source, required=True):
    names = [spec_value] if isinstance(spec_value, str) else list(spec_value or [])
    if not names:
        names = [next((c for c in candidates if c in table.columns), None)]
        if names[0] is None:
            if not required:
                return []
            raise _fail(source, f"no {role} column (tried {', '.join(candidates)}; columns: "
                                f"{', '.join(map(str, table.columns))}); name it in telemetry.columns.{role}")
    missing = [c for c in names if c not in table.columns]
    if missing:
        raise _fail(source, f"telemetry.columns.{role}: no column '{missing[0]}' (columns: "
                            f"{', '.join(map(str, table.columns))})")
    return names


def _times(values: pd.Series, lines, source, column) -> pd.Series:
    """Times as naive datetimes (UTC when the source has zones; numbers are Unix seconds)."""
    text = values.astype(str).str.strip()
    numeric = pd.to_numeric(text, errors="coerce")
    if numeric.notna().all():
        return pd.to_datetime(numeric, unit="s")
    parsed = pd.to_datetime(text, errors="coerce", format="mixed", utc=True)
    bad = parsed.isna().to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fail(source, f"cannot read {text.iloc[i]!r} as a time", int(lines[i]), column)
    return parsed.dt.tz_localize(None)


def _numbers(values: pd.Series, lines, source, column) -> pd.Series:
    text = values.astype(str).str.strip()
    out = pd.to_numeric(text, errors="coerce")
    bad = (out.isna() & ~text.isin(["", "nan", "NaN", "NA", "null", "None"])).to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fail(source, f"cannot read {text.iloc[i]!r} as a number", int(lines[i]), column)
    return out.astype(float)


def _ids(table, columns) -> pd.Series:
    parts = [table[c].astype(str).str.strip() for c in columns]
    out = parts[0]
    for p in parts[1:]:
        out = out + "/" + p
    return out


def _rows_from_file(path: Path, spec: TelemetrySpec) -> pd.DataFrame:
    """Long rows (time, id, metric, value, line) from a long or wide file."""
    table, lines = read_table(path, spec.separator)
    if table.empty:
        raise _fail(path, "no data rows")
    cols = spec.columns
    tcol = _column(table, cols.get("time"), TIME_COLUMNS, "time", path)[0]
    idcols = _column(table, cols.get("id"), ID_COLUMNS, "id", path)
    times = _times(table[tcol], lines, path, tcol)
    ids = _ids(table, idcols)
    if spec.layout == "wide":
        parts = []
        for q in QUANTITIES:
            if q not in cols:
                continue
            col = _column(table, cols[q], (), q, path)[0]
            parts.append(pd.DataFrame({"time": times, "id": ids, "metric": q,
                                       "value": _numbers(table[col], lines, path, col), "line": lines}))
        return pd.concat(parts, ignore_index=True)
    mcol = _column(table, cols.get("metric"), ("metric", "__name__", "name", "field"), "metric", path)[0]
    vcol = _column(table, cols.get("value"), ("value", "val"), "value", path)[0]
    return pd.DataFrame({"time": times, "id": ids, "metric": table[mcol].astype(str).str.strip(),
                         "value": _numbers(table[vcol], lines, path, vcol), "line": lines})


# -- Prometheus ----------------------------------------------------------------------------------
def prometheus_get(base: str, path: str, **params) -> object:
    """``data`` of a Prometheus HTTP API answer; a ScenarioError line on any failure."""
    url = f"{base.rstrip('/')}{path}?{urllib.parse.urlencode(params, doseq=True)}"
    try:
        with urllib.request.urlopen(url, timeout=PROMETHEUS_TIMEOUT) as r:
            body = r.read()
    except urllib.error.HTTPError as exc:
        with exc:
            body = exc.read()
        try:
            why = json.loads(body).get("error", "")
        except (ValueError, AttributeError):
            why = body[:200].decode(errors="replace")
        raise _fail(base, f"Prometheus answered {exc.code} to {path}: {why}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise _fail(base, f"cannot reach Prometheus: {reason}") from None
    try:
        answer = json.loads(body)
    except ValueError:
        raise _fail(base, f"not a Prometheus API answer from {path} (not JSON)") from None
    if not isinstance(answer, dict) or answer.get("status") != "success":
        raise _fail(base, f"Prometheus error on {path}: {answer.get('error', answer) if isinstance(answer, dict) else answer}")
    return answer["data"]


def id_labels(spec: TelemetrySpec, metric: str) -> list[str]:
    """Labels naming the device of a Prometheus series of ``metric``."""
    given = spec.columns.get("id")
    if given:
        return [given] if isinstance(given, str) else list(given)
    return list(DEFAULT_ID_LABELS["DCGM" if metric.startswith("DCGM") else "twin"])


def series_id(labels: dict, names: list[str], metric: str, base: str) -> str:
    """The telemetry id of one series: its id labels joined with ``/``."""
    missing = [lab for lab in names if lab not in labels]
    if missing:
        raise _fail(base, f"{metric}: series without label '{missing[0]}' (labels: "
                          f"{', '.join(sorted(labels))}); name the id labels in telemetry.columns.id")
    return "/".join(str(labels[lab]) for lab in names)


def known_metrics(base: str) -> list[str]:
    """The metrics the twin reads that a Prometheus server holds."""
    names = set(prometheus_get(base, "/api/v1/label/__name__/values"))
    known = [n for n in METRIC_NAMES if n in names and n.startswith(("DCGM_", "twin_"))]
    if not known:
        raise _fail(base, "Prometheus holds none of the metrics the twin reads (e.g. "
                          "DCGM_FI_DEV_POWER_USAGE, DCGM_FI_DEV_GPU_TEMP, twin_device_power_watts)")
    return known


def interval_means(base: str, spec: TelemetrySpec, metrics: list[str], end: float, interval: float) -> pd.DataFrame:
    """Long rows (id, metric, value) of each metric's mean over ``[end − interval, end)``
    (Unix seconds), by Prometheus instant queries of ``avg_over_time``."""
    rows = []
    for name in metrics:
        labels = id_labels(spec, name)
        data = prometheus_get(base, "/api/v1/query", query=f"avg_over_time({name}{spec.selector or ''}[{interval:g}s])",
                              time=f"{end - PROMETHEUS_EPSILON:.3f}")
        for series in data.get("result", []):
            rows.append((series_id(series.get("metric", {}), labels, name, base), name, float(series["value"][1])))
    return pd.DataFrame(rows, columns=["id", "metric", "value"])


def to_si(rows: pd.DataFrame, spec: TelemetrySpec, name: str) -> pd.DataFrame:
    """Rows of known metrics with their quantity and SI value (others dropped)."""
    q = rows["metric"].map(lambda m: METRIC_NAMES.get(m, (None, None))[0])
    rows = rows.assign(quantity=q).loc[q.notna()].copy()
    if not rows.empty:
        rows["value"] = _convert(rows, spec, name)
    return rows


def _unix(t) -> float:
    return (pd.Timestamp(t) - pd.Timestamp("1970-01-01")) / pd.Timedelta(seconds=1)


def _rows_from_prometheus(base: str, spec: TelemetrySpec, start, end, interval: float) -> pd.DataFrame:
    """Interval means of every known metric in ``[start, end)`` as long rows.

    Each sample is ``avg_over_time(metric[interval])`` evaluated just before the interval's end,
    i.e. the mean of the samples stamped in ``[t, t + interval)``, returned at ``t``.
    """
    known = known_metrics(base)
    selector = spec.selector or ""
    t0, t1 = _unix(start), _unix(end)
    n = int(round((t1 - t0) / interval))
    rows = []
    for name in known:
        labels = id_labels(spec, name)
        query = f"avg_over_time({name}{selector}[{interval:g}s])"
        for k0 in range(0, n, PROMETHEUS_MAX_POINTS):
            k1 = min(n, k0 + PROMETHEUS_MAX_POINTS)
            first = t0 + k0 * interval + interval - PROMETHEUS_EPSILON
            last = t0 + (k1 - 1) * interval + interval - PROMETHEUS_EPSILON
            data = prometheus_get(base, "/api/v1/query_range", query=query, start=f"{first:.3f}",
                                  end=f"{last:.3f}", step=f"{interval:g}")
            for series in data.get("result", []):
                ident = series_id(series.get("metric", {}), labels, name, base)
                for ts, value in series.get("values", []):
                    t = round((float(ts) + PROMETHEUS_EPSILON - interval) * 1e3) / 1e3
                    rows.append((t, ident, name, float(value)))
    if not rows:
        raise _fail(base, f"no samples between {start} and {end} for {', '.join(known)}")
    frame = pd.DataFrame(rows, columns=["time", "id", "metric", "value"])
    frame["time"] = pd.to_datetime(frame["time"], unit="s")
    frame["line"] = 0
    return frame


# -- the whole pipeline ---------------------------------------------------------------------------
def read_telemetry(spec: TelemetrySpec, source: str, *, base: Path = Path("."), devices=None,
                   tdp: dict[str, float] | None = None, span=None, checks: bool = True) -> Telemetry:
    """Read, translate, convert and check telemetry.

    Parameters
    ----------
    spec : TelemetrySpec
        The scenario's ``telemetry:`` section.
    source : str
        A file (relative to ``base``) or a Prometheus base URL.
    devices : collection of str, optional
        The scenario's device names (a mapping to any other is an error).
    tdp : dict, optional
        Device → TDP [W], for the power-units check.
    span : (start, end), optional
        Time range to keep (and to check); required for Prometheus.
    checks : bool
        Check units, ranges, gaps and stuck sensors (see :func:`check`).

    Raises
    ------
    ScenarioError
        One line for data that cannot be used.
    """
    name = source if is_url(source) else str(base / source)
    if is_url(source):
        if span is None:
            raise _fail(source, "a Prometheus source needs a time range: --from/--to or telemetry.fit")
        if spec.interval is None:
            raise _fail(source, "a Prometheus source needs telemetry.interval (the averaging interval, e.g. '1 min')")
        rows = _rows_from_prometheus(source, spec, span[0], span[1], spec.interval)
    else:
        rows = _rows_from_file(base / source, spec)
    notes: list[str] = []

    # Metric names → quantities; unknown names are reported and skipped.
    translated = rows["metric"].map(lambda m: METRIC_NAMES.get(m, (None, None))[0])
    unknown = sorted(set(rows.loc[translated.isna(), "metric"]))
    if unknown:
        notes.append(f"{name}: metrics the twin does not use, skipped: {', '.join(unknown[:8])}"
                     + (" …" if len(unknown) > 8 else ""))
    rows = rows.assign(quantity=translated).loc[translated.notna()]
    if rows.empty:
        raise _fail(name, f"no metric the twin reads (known: {', '.join(METRIC_NAMES)})")

    # Ids → scenario devices.
    mapping = dict(spec.devices)
    found = set(rows["id"])
    stray = sorted(found - set(mapping))
    if stray:
        notes.append(f"{name}: ids not in telemetry.devices, skipped: {', '.join(stray[:8])}"
                     + (f" … ({len(stray)} in all)" if len(stray) > 8 else ""))
    absent = [i for i in mapping if i not in found]
    if absent:
        raise _fail(name, f"telemetry.devices: id '{absent[0]}' has no rows (ids found: "
                          f"{', '.join(sorted(found)[:8]) or 'none'})")
    if devices is not None:
        known = set(devices)
        for ident, dev in mapping.items():
            if dev not in known:
                shown = ", ".join(sorted(known)[:6])
                raise ScenarioError(f"telemetry.devices.{ident}: no device '{dev}' in the scenario "
                                    f"(devices: {shown}{', …' if len(known) > 6 else ''})", file=name)
    rows = rows.loc[rows["id"].isin(mapping)].copy()
    rows["device"] = rows["id"].map(mapping)

    # Units → SI.
    rows["value"] = _convert(rows, spec, name)
    blank = rows["value"].isna()
    if blank.any():
        notes.append(f"{name}: {int(blank.sum())} blank or NaN values skipped")
        rows = rows.loc[~blank]

    # Regular grid: interval from the data unless given; samples within one interval averaged.
    interval = spec.interval or _interval(rows, name)
    origin = rows["time"].min()
    offset = (rows["time"] - origin) / pd.Timedelta(seconds=interval)
    rows["time"] = origin + pd.to_timedelta(np.floor(offset + 1e-9) * interval, unit="s")
    if spec.stamp == "end":
        rows["time"] -= pd.Timedelta(seconds=interval)
    dup = rows.duplicated(["device", "quantity", "time"], keep=False)
    if dup.any():
        notes.append(f"{name}: {int(dup.sum())} samples share an interval with another; averaged")
    data = rows.pivot_table(index=["device", "time"], columns="quantity", values="value", aggfunc="mean")
    data = data.reindex(columns=list(QUANTITIES))
    data.columns.name = None
    ids = {dev: ident for ident, dev in mapping.items()}
    tele = Telemetry(data.sort_index(), float(interval), name, ids, notes)
    if span is not None:
        tele = tele.restricted(*span)
        if tele.data.empty:
            raise _fail(name, f"no samples of the mapped devices between {span[0]} and {span[1]}")
    if checks:
        check(tele, spec, tdp or {})
    return tele


def _convert(rows: pd.DataFrame, spec: TelemetrySpec, name: str) -> pd.Series:
    out = rows["value"].astype(float).copy()
    for metric, sel in rows.groupby("metric").groups.items():
        quantity, own = METRIC_NAMES[metric]
        # Exporters fix their units; plain names (and wide columns) take the scenario's.
        unit = spec.units.get(quantity, own) if metric in PLAIN_NAMES else own
        table = UNITS[quantity]
        if unit not in table:
            raise _fail(name, f"telemetry.units.{quantity}: unknown unit '{unit}' (known: {', '.join(table)})")
        factor, offset = table[unit]
        values = out.loc[sel] * factor + offset
        if quantity == "clock" and unit in FREQUENCY_UNITS:
            if spec.clock_max is None:
                raise _fail(name, f"{metric} is a frequency ({unit}); give telemetry.clock_max (the chip's "
                                  "maximum SM clock, e.g. '1410 MHz') to turn it into a relative clock")
            values = values / spec.clock_max
        if quantity == "utilisation" and unit in ("percent", "%"):
            raw = out.loc[sel].dropna()
            if raw.size and raw.max() <= 1.0 and (raw % 1 != 0).any():
                raise _fail(name, f"{metric}: utilisation declared in percent never exceeds 1 %; is it a "
                                  "fraction? (set telemetry.units.utilisation: '1')")
        out.loc[sel] = values
    return out


def _interval(rows: pd.DataFrame, name: str) -> float:
    steps = []
    for _, t in rows.groupby(["device", "quantity"])["time"]:
        d = np.diff(np.sort(t.unique())) / np.timedelta64(1, "s")
        steps.append(d[d > 0])
    steps = np.concatenate(steps) if steps else np.array([])
    if steps.size == 0:
        raise _fail(name, "one sample per device only: cannot tell the interval (set telemetry.interval)")
    return float(np.median(steps))


def check(tele: Telemetry, spec: TelemetrySpec, tdp: dict[str, float]) -> None:
    """Units and ranges (errors), gaps and stuck sensors (notes; stuck values are left out)."""
    d = tele.data
    name = tele.source
    for dev in tele.devices:
        block = d.xs(dev, level="device")
        p = block["power"].dropna()
        if p.size:
            if (p < 0).any():
                raise _fail(name, f"{dev}: negative power ({p.min():g} W); wrong sign or units?", column="power")
            limit = tdp.get(dev)
            if limit and p.max() > POWER_OVER_TDP * limit:
                raise _fail(name, f"{dev}: power up to {p.max():,.6g} W is more than {POWER_OVER_TDP:g}× the "
                                  f"chip's TDP ({limit:g} W): wrong units? (set telemetry.units.power, e.g. mW)",
                            column="power")
            nonzero = p[p > 0]
            if limit and nonzero.size and nonzero.median() < POWER_UNDER_TDP * limit:
                raise _fail(name, f"{dev}: median power {nonzero.median():.4g} W is below "
                                  f"{POWER_UNDER_TDP:.0%} of the chip's TDP ({limit:g} W): wrong units? "
                                  "(set telemetry.units.power, e.g. kW)", column="power")
        for q in ("temperature", "memory_temperature"):
            t = block[q].dropna()
            lo, hi = TEMPERATURE_RANGE
            if t.size and (t.max() > hi or t.min() < lo):
                bad = t.max() if t.max() > hi else t.min()
                raise _fail(name, f"{dev}: {q.replace('_', ' ')} {bad:g} degC is outside {lo:g}..{hi:g} degC: "
                                  f"kelvin or Fahrenheit? (set telemetry.units.{q})", column=q)
        u = block["utilisation"].dropna()
        if u.size and (u.min() < 0 or u.max() > 1.0 + 1e-9):
            bad = u.max() if u.max() > 1 else u.min()
            raise _fail(name, f"{dev}: utilisation {bad:g} is outside 0..1 after conversion: percent given as "
                              "a fraction or the other way round? (set telemetry.units.utilisation)",
                        column="utilisation")
        c = block["clock"].dropna()
        if c.size and (c.min() < 0 or c.max() > 1.5):
            raise _fail(name, f"{dev}: relative clock {c.max():g} outside 0..1.5: check telemetry.clock_max "
                              "or telemetry.units.clock", column="clock")
    _gaps(tele, spec)
    _stuck(tele, spec)


def _gaps(tele: Telemetry, spec: TelemetrySpec) -> None:
    max_gap = spec.max_gap or 3 * tele.interval
    for dev in tele.devices:
        t = tele.data.xs(dev, level="device").index
        if t.size < 2:
            continue
        d = np.diff(t.values) / np.timedelta64(1, "s")
        big = np.flatnonzero(d > max_gap)
        if big.size:
            longest = int(big[np.argmax(d[big])])
            notes = (f"{tele.source}: {dev}: {big.size} gap(s) longer than {max_gap / 3600:g} h (longest "
                     f"{d[longest] / 3600:g} h from {t[longest]} to {t[longest + 1]}); utilisation is held "
                     "through a gap and nothing is compared there")
            tele.notes.append(notes)


def _runs(values: np.ndarray):
    """(start, stop) index pairs of runs of equal consecutive non-NaN values."""
    if values.size == 0:
        return []
    change = np.flatnonzero(np.r_[True, values[1:] != values[:-1], True])
    return [(int(a), int(b)) for a, b in zip(change[:-1], change[1:]) if not math.isnan(values[a])]


def _stuck(tele: Telemetry, spec: TelemetrySpec) -> None:
    """A power or temperature reading unchanged for ``stuck_samples`` intervals in a row while
    the measured utilisation moves by more than :data:`STUCK_UTILISATION_SPAN`: left out."""
    d = tele.data
    for dev in tele.devices:
        block = d.xs(dev, level="device")
        util = block["utilisation"].to_numpy(dtype=float)
        for q in ("power", "temperature"):
            vals = block[q].to_numpy(dtype=float)
            for a, b in _runs(vals):
                if b - a < spec.stuck_samples:
                    continue
                u = util[a:b]
                u = u[~np.isnan(u)]
                if u.size and u.max() - u.min() > STUCK_UTILISATION_SPAN:
                    t = block.index
                    d.loc[(dev, t[a]):(dev, t[b - 1]), q] = np.nan
                    tele.notes.append(
                        f"{tele.source}: {dev}: {q} stuck at {vals[a]:g} for {b - a} samples from {t[a]} to "
                        f"{t[b - 1]} while utilisation moved {u.min():.0%}..{u.max():.0%}; left out")
