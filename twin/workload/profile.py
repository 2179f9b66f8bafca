"""Open-loop utilisation: constant values, piecewise profiles with training-like swings, replay.

The driver asks for the demanded utilisation of every device over a block of steps at once
(``demand(t0, h, n)`` → array (n, devices)), so nothing here runs per device or per step.
Values are step means over [t, t + h): a swing's high/low phases are averaged exactly, so
the energy of sub-step swings is kept even at a coarse thermal step.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from twin.scenario.errors import FieldError
from twin.sim.selection import Selection

if TYPE_CHECKING:
    from twin.scenario.model import Scenario, Segment, Select


def square_wave_mean(t0, t1, period, duty):
    """Mean of a 0/1 square wave (1 for the first ``duty`` of each period) over [t0, t1).

    Parameters
    ----------
    t0, t1 : ndarray
        Interval ends, measured from the wave's start [s]; t1 > t0.
    period : float
        Period [s].
    duty : float
        Fraction of each period spent high [1].

    Returns
    -------
    ndarray
        Mean value over the interval [1].

    Notes
    -----
    With F(x) = ⌊x/p⌋·d·p + min(x mod p, d·p) the integral of the wave from 0 to x, the mean is
    (F(t1) − F(t0)) / (t1 − t0).
    """
    def F(x):
        return np.floor(x / period) * duty * period + np.minimum(np.mod(x, period), duty * period)

    return (F(t1) - F(t0)) / (t1 - t0)


def profile_mean(segments: list[Segment], t0, h):
    """Step-mean utilisation of a piecewise profile for steps starting at ``t0`` (array) [1].

    The segment in force at each step's start applies to the whole step.
    """
    starts = np.array([s.at for s in segments])
    which = np.searchsorted(starts, t0, side="right") - 1
    out = np.zeros_like(t0, dtype=float)
    for i, seg in enumerate(segments):
        mask = which == i
        if not mask.any():
            continue
        if seg.u is not None:
            out[mask] = seg.u
        else:
            sw = seg.swing
            tl = t0[mask] - seg.at
            high = square_wave_mean(tl, tl + h, sw.period, sw.duty)
            out[mask] = sw.low + (sw.high - sw.low) * high
    return out


def select_devices(select: Select, system) -> np.ndarray:
    """Boolean mask of the devices a selection picks (all given criteria must hold)."""
    mask = np.ones(system.n_devices, dtype=bool)
    if select.kind:
        mask &= np.isin(system.device_kind, select.kind)
    for crit, names, index in (
        (select.rack, system.rack_name, system.device_rack),
        (select.row, np.array(system.row_names, dtype=object), system.device_row),
        (select.hall, np.array(system.hall_names, dtype=object), system.device_hall),
    ):
        if crit:
            hit = np.array([any(fnmatch.fnmatchcase(n, p) for p in crit) for n in names])
            mask &= hit[index]
    return mask


class Replay:
    """Per-device utilisation from a long-format table (time [s], device, u), held between samples."""

    def __init__(self, path: Path, system, where: tuple):
        import pandas as pd  # only for replay files: pandas costs ~0.5 s of start-up

        try:
            if path.suffix in (".parquet", ".pq"):
                from twin.extras import require

                require("pyarrow", "parquet", "reading Parquet files")
                table = pd.read_parquet(path)
            else:
                table = pd.read_csv(path)
        except Exception as exc:
            raise FieldError(where, f"cannot read replay file {path}: {exc}") from None
        missing = {"time", "device", "u"} - set(table.columns)
        if missing:
            raise FieldError(where, f"replay file {path} lacks columns {sorted(missing)}")
        times = pd.to_numeric(table["time"], errors="coerce")
        bad_time = ~(np.isfinite(times) & (times >= 0))
        if bad_time.any():
            bad = table.index[bad_time][0]
            raise FieldError(where, f"replay file {path} line {bad + 2}: time must be a number of seconds >= 0, "
                                    f"got '{table['time'].iloc[bad]}'")
        table = table.assign(time=times.astype(float))
        if not table["u"].between(0, 1).all():
            bad = table.index[~table["u"].between(0, 1)][0]
            raise FieldError(where, f"replay file {path} line {bad + 2}: u must be within 0..1")
        index = {n: i for i, n in enumerate(system.device_name)}
        unknown = sorted(set(table["device"]) - set(index))
        if unknown:
            raise FieldError(where, f"replay file {path}: unknown device '{unknown[0]}'")
        wide = table.pivot_table(index="time", columns="device", values="u", aggfunc="last").sort_index()
        wide = wide.ffill().fillna(0.0)
        self.path = path
        self.times = wide.index.to_numpy(dtype=float)
        self.values = wide.to_numpy(dtype=float)
        self.columns = np.array([index[d] for d in wide.columns])
        # ∫u dt from the first sample to each sample time (zero-order hold), for step means.
        self.integral = np.zeros_like(self.values)
        if len(self.times) > 1:
            self.integral[1:] = np.cumsum(self.values[:-1] * np.diff(self.times)[:, None], axis=0)

    def at(self, t):
        """Values (len(t), columns) in force at times ``t`` (zero-order hold; 0 before the first)."""
        i = np.searchsorted(self.times, t, side="right") - 1
        out = self.values[np.maximum(i, 0)]
        out[i < 0] = 0.0
        return out

    def _cumulative(self, t):
        """∫₀ᵗ u dt' of the held samples at times ``t`` (len(t), columns) [s]."""
        i = np.searchsorted(self.times, t, side="right") - 1
        j = np.maximum(i, 0)
        out = self.integral[j] + self.values[j] * (np.asarray(t) - self.times[j])[:, None]
        out[i < 0] = 0.0
        return out

    def mean(self, t, h: float):
        """Mean over [t, t + h) of the held samples (len(t), columns) [1]:
        (U(t + h) − U(t)) / h with U the running integral, so samples finer than the step are
        averaged rather than skipped."""
        t = np.asarray(t, dtype=float)
        mean = (self._cumulative(t + h) - self._cumulative(t)) / h
        # A step inside one sample interval is that sample exactly (no round-off of the difference).
        i0 = np.searchsorted(self.times, t, side="right") - 1
        i1 = np.searchsorted(self.times, t + h, side="left") - 1
        within = i0 == np.maximum(i1, i0)
        mean[within] = self.at(t[within])
        return mean


class ProfileWorkload:
    """The scenario's ``workload:`` rules, evaluated for blocks of steps."""

    def __init__(self, scenario: Scenario, system, base: Path):
        self.rules = []
        for w, rule in enumerate(scenario.workload):
            mask = select_devices(rule.select, system)
            if rule.replay is not None:
                replay = Replay(base / rule.replay, system, ("workload", w, "replay"))
                self.rules.append(("replay", replay, mask))
            elif rule.profile is not None:
                self.rules.append(("profile", rule.profile, np.flatnonzero(mask)))
            else:
                self.rules.append(("constant", rule.u, np.flatnonzero(mask)))
        self.n = system.n_devices
        #: Each rule's devices as a view where their layout allows (a slice, or the accelerators
        #: of every node at a constant stride): writing a block of steps costs a strided copy
        #: instead of a scatter of (steps × devices) values.
        self._where = [Selection(idx) if kind != "replay" else None for kind, _, idx in self.rules]
        covered = np.zeros(self.n, dtype=bool)
        for kind, _, idx in self.rules:
            if kind != "replay":
                covered[idx] = True
        #: Some device is left to 0 by every profile and constant rule (else every value of a
        #: block is written by a rule, and the block needs no zeroing first).
        self._zero = not covered.all()

    def warnings(self, t_end: float) -> list[str]:
        """Replay files that end before the run does (their last values are held)."""
        return [f"replay file {spec.path.name} ends at {spec.times[-1]:,.0f} s of a {t_end:,.0f} s run: "
                f"its last values are held" for kind, spec, _ in self.rules
                if kind == "replay" and spec.times[-1] < t_end]

    def demand(self, t0: float, h: float, n: int, start: int = 0, out: np.ndarray | None = None) -> np.ndarray:
        """Step-mean demanded utilisation for ``n`` steps from ``t0`` (shape (n, devices)) [1];
        with ``start``, the steps ``start`` … ``start + n − 1`` of those from ``t0`` (at t0 + h·i,
        the same times), into ``out`` if given."""
        t = t0 + h * np.arange(start, start + n)
        if out is None:
            u = np.zeros((n, self.n)) if self._zero else np.empty((n, self.n))
        else:
            u = out
            if self._zero:
                u[...] = 0.0
        for (kind, spec, idx), where in zip(self.rules, self._where):
            if kind == "constant":
                where.put(u, spec)
            elif kind == "profile":
                where.put(u, profile_mean(spec, t, h)[:, None])
            else:
                cols = spec.columns[idx[spec.columns]]
                u[:, cols] = spec.mean(t, h)[:, idx[spec.columns]]
        return u
