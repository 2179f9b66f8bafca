"""The twin driven by measured utilisation, for many parameter sets in one run.

To fit, the twin is run again and again with different parameters; a Jacobian by central
differences needs 2·P + 1 runs per iteration. Running them one after another spends most of the
time in per-step overhead, which does not grow with the number of devices. So every parameter
set becomes a **copy** of the racks that hold the devices with telemetry, in one scenario: copy
``j`` has its own catalogue entries (``a100-sxm.c3``, its sled, rack and CDU, cloned from the
scenario's catalogue with copy ``j``'s figures), its own CDUs (so coolant setpoints can differ)
and its own utilisation (so the utilisation mapping can differ). Copies do not interact: the
calibration scenario has no plant, row limits, jobs or events — the boundaries are the site's
and the CDUs' setpoints, as measured telemetry gives them. Site temperatures are one per run, so
copies that differ in them run in separate runs.

Everything goes through the public path: a scenario YAML written to a work folder, loaded by
:func:`twin.scenario.load_scenario`, run by :class:`twin.sim.driver.Simulation`, read back from
:func:`twin.export.dataset.build_tree`. The twin runs at the telemetry's interval by default
(``step``), and the device group is recorded as interval means, which is what hourly-average
telemetry is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from twin.calibrate.params import Parameter
from twin.calibrate.telemetry import Telemetry
from twin.scenario.errors import FieldError, ScenarioError

#: Catalogue kinds whose entries a copy clones when its racks reach them by name.
CLONED_KINDS = ("systems", "racks", "sleds", "chips", "power_shelves", "fabrics", "cdus")
#: Source written on a trial figure (never reaches an overlay).
TRIAL_SOURCE = "calibration trial value"


def _si(value: float, unit: str) -> str:
    return f"{float(value)!r} {unit}"


def _suffix(j: int) -> str:
    return f".c{j}"


def _rename(obj, names: dict[str, str]):
    """``obj`` with every mapping key or string equal to a cloned entry's name renamed."""
    if isinstance(obj, dict):
        return {names.get(k, k) if isinstance(k, str) else k: _rename(v, names) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rename(v, names) for v in obj]
    if isinstance(obj, str):
        return names.get(obj, obj)
    return obj


def demanded_utilisation(util, clock, busy: float, held: float, clock_exponent):
    """The twin's demanded utilisation from measured utilisation (and clock) [1].

    Parameters
    ----------
    util : ndarray
        Measured fraction of time busy (nvidia-smi "GPU utilisation" / 100) [1].
    clock : ndarray
        Measured relative clock (NaN where not measured) [1].
    busy, held : float
        The mapping (:class:`twin.calibrate.spec.UtilisationMap`) [1].
    clock_exponent : ndarray or float
        The chip's α [1].

    Notes
    -----
    ``u = held + (busy − held)·g`` where the device ran anything (g > 0), 0 where it did not; a
    measured relative clock ``f`` below 1 enters as ``u·f^α`` — the twin's dynamic power at clock
    f — while the twin's own governors keep their clock (only a measured throttle lowers it).
    """
    util = np.asarray(util, dtype=float)
    u = np.where(util > 0, held + (busy - held) * util, 0.0)
    clock = np.asarray(clock, dtype=float)
    f = np.where(np.isnan(clock), 1.0, np.clip(clock, 0.0, 1.0))
    return np.clip(u * np.power(f, clock_exponent), 0.0, 1.0)


@dataclass
class Prediction:
    """Twin output on the telemetry grid: arrays (copies, intervals, devices)."""

    power: np.ndarray  # [W]
    temperature: np.ndarray  # [degC]
    times: pd.DatetimeIndex


class TwinModel:
    """Runs of the twin on a telemetry window for arrays of parameter values.

    Parameters
    ----------
    loaded : LoadedScenario
    telemetry : Telemetry
    params : list of Parameter
    workdir : Path
        Folder for the calibration scenarios and utilisation files (the caller removes it).
    step : float, optional
        Thermal step [s]; default the telemetry interval. Must divide the interval.
    """

    def __init__(self, loaded, telemetry: Telemetry, params: list[Parameter], workdir: Path,
                 step: float | None = None):
        from twin.scenario.layout import expand_racks
        from twin.sim.build import build_system

        self.loaded, self.tele, self.params = loaded, telemetry, params
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        sc = loaded.scenario
        self.interval = telemetry.interval
        self.step = step or self.interval
        ratio = self.interval / self.step
        if abs(ratio - round(ratio)) > 1e-9 or ratio < 1:
            raise ScenarioError(f"--step {self.step:g} s does not divide the telemetry interval ({self.interval:g} s)",
                                file=str(loaded.path))
        self.runs = 0
        # The racks (scenario entries) that hold devices with telemetry, and their devices in order.
        system = build_system(sc, loaded.catalog)
        names = list(system.device_name)
        index = {n: i for i, n in enumerate(names)}
        wanted = {system.rack_name[system.device_rack[index[d]]] for d in telemetry.devices}
        self.racks = []  # (row spec dict, rack spec)
        for hall in sc.halls:
            for row in hall.rows:
                for spec in row.racks:
                    slots = [s.name for s in expand_racks(spec, loaded.catalog)]
                    if wanted.intersection(slots):
                        self.racks.append(spec)
        chosen = {s.name for spec in self.racks for s in expand_racks(spec, loaded.catalog)}
        subset = [i for i in range(len(names)) if system.rack_name[system.device_rack[i]] in chosen]
        self.n_subset = len(subset)
        pos = {names[i]: k for k, i in enumerate(subset)}
        self.columns = np.array([pos[d] for d in telemetry.devices])  # telemetry device → subset position
        self.subset_kinds = [system.device_kind[i] for i in subset]
        self.catalog = loaded.catalog.model_dump(mode="python", exclude_none=True)
        self.clones = self._closure()
        self._check_parameters()
        self._names: dict[int, list[str]] = {}

    # -- structure ---------------------------------------------------------------------------
    def _closure(self) -> dict[str, set[str]]:
        """Catalogue entries each copy needs its own of: those with fitted figures, and every
        entry (rack, system, sled …) that reaches one of them by name. The rest are shared."""
        cat = self.catalog
        where: dict[str, set[str]] = {}
        for kind in CLONED_KINDS:
            for name in cat.get(kind, {}):
                where.setdefault(name, set()).add(kind)

        def strings(obj):
            if isinstance(obj, dict):
                for k, v in obj.items():
                    yield k
                    yield from strings(v)
            elif isinstance(obj, list):
                for v in obj:
                    yield from strings(v)
            elif isinstance(obj, str):
                yield obj

        # Entries reachable from the copied racks and CDUs, and what each refers to.
        refs: dict[tuple[str, str], set[tuple[str, str]]] = {}
        todo = [(k, spec.template) for spec in self.racks for k in where.get(spec.template, ())]
        todo += [(k, c.template) for c in self._cdu_specs() for k in where.get(c.template, ())]
        while todo:
            node = todo.pop()
            if node in refs:
                continue
            kind, name = node
            refs[node] = {(k, s) for s in strings(cat[kind][name]) if s != name for k in where.get(s, ())}
            todo.extend(refs[node])
        fitted = {tuple(p.path.split(".")[:2]) for p in self.params if p.kind == "catalog"}
        cloned = {n for n in refs if n in fitted}
        grew = True
        while grew:
            grew = False
            for node, out in refs.items():
                if node not in cloned and out & cloned:
                    cloned.add(node)
                    grew = True
        self.reachable = set(refs)
        result: dict[str, set[str]] = {}
        for kind, name in cloned:
            result.setdefault(kind, set()).add(name)
        return result

    def _cdu_specs(self):
        sc = self.loaded.scenario
        return list(sc.cdus)

    def _check_parameters(self):
        cloned = self.reachable
        for i, p in enumerate(self.params):
            if p.kind == "catalog":
                kind, name, _ = p.path.split(".")
                if (kind, name) not in cloned:
                    raise FieldError(("telemetry", "parameters", i),
                                     f"'{p.path}' does not affect the devices with telemetry (their racks use "
                                     f"{', '.join(sorted(n for k, n in cloned if k == kind)) or 'no ' + kind})")
            if p.kind == "scenario" and p.path.startswith("cdus.") and not self.loaded.scenario.cdus:
                raise FieldError(("telemetry", "parameters", i), f"'{p.path}': the scenario has no cdus")

    # -- one calibration scenario -------------------------------------------------------------
    def _copy_catalog(self, j: int, theta: np.ndarray) -> dict:
        names = {n: n + _suffix(j) for ns in self.clones.values() for n in ns}
        out: dict[str, dict] = {}
        for kind, entries in self.clones.items():
            for name in entries:
                out.setdefault(kind, {})[names[name]] = _rename(self.catalog[kind][name], names)
        for p, value in zip(self.params, theta):
            if p.kind == "catalog":
                kind, name, field = p.path.split(".")
                out[kind][names[name]][field] = {"value": _figure_value(p, value),
                                                 "source": TRIAL_SOURCE}
        return out

    def _copy_cdus(self, j: int, theta: np.ndarray) -> list[dict]:
        specs = []
        names = {n: n + _suffix(j) for n in self.clones.get("cdus", ())}
        for i, c in enumerate(self._cdu_specs()):
            supply = c.supply_temperature
            for p, value in zip(self.params, theta):
                if p.kind == "scenario" and p.path == f"cdus.{i}.supply_temperature":
                    supply = value
            specs.append({"name": c.name + _suffix(j), "template": names.get(c.template, c.template),
                          "supply_temperature": _si(supply, "degC"), "count": c.count})
        return specs

    def _copy_racks(self, j: int) -> list[dict]:
        names = {n: n + _suffix(j) for ns in self.clones.values() for n in ns}
        cdus = self._cdu_specs()
        out = []
        for spec in self.racks:
            rack = {"name": spec.name + _suffix(j), "template": names.get(spec.template, spec.template),
                    "count": spec.count}
            if cdus:
                rack["cdu"] = (spec.cdu or cdus[0].name) + _suffix(j)
            if spec.coolant_flow is not None:
                rack["coolant_flow"] = _si(spec.coolant_flow, "m**3/s")
            if spec.power_limit is not None:
                rack["power_limit"] = _si(spec.power_limit, "W")
            out.append(rack)
        return out

    def _site(self, theta: np.ndarray) -> dict:
        site = self.loaded.scenario.site
        values = {"facility_water_supply": site.facility_water_supply, "cold_aisle": site.cold_aisle}
        for p, v in zip(self.params, theta):
            if p.kind == "scenario" and p.path.startswith("site."):
                values[p.path.split(".")[1]] = v
        return {k: _si(v, "degC") for k, v in values.items()}

    def _mapping(self, theta: np.ndarray) -> tuple[float, float]:
        m = self.loaded.scenario.telemetry.utilisation
        busy, held = m.busy, m.held
        for p, v in zip(self.params, theta):
            if p.path == "telemetry.utilisation.busy":
                busy = v
            elif p.path == "telemetry.utilisation.held":
                held = v
        return busy, held

    def _scenario(self, thetas: np.ndarray, start: pd.Timestamp, n: int) -> dict:
        sc = self.loaded.scenario
        catalog: dict[str, dict] = {}
        rows, cdus = [], []
        for j, theta in enumerate(thetas):
            for kind, entries in self._copy_catalog(j, theta).items():
                catalog.setdefault(kind, {}).update(entries)
            rows.append({"name": f"copy-{j}", "racks": self._copy_racks(j)})
            cdus.extend(self._copy_cdus(j, theta))
        data = {
            "name": "calibration",
            "seed": sc.seed,
            "time": {"start": start.isoformat(), "duration": _si(n * self.interval, "s"),
                     "step": _si(self.step, "s")},
            "site": self._site(thetas[0]),
            "halls": [{"name": "calibration", "rows": rows}],
            "record": {"facility": "off", "cdu": "off", "rack": "off", "sled": "off",
                       "device": _si(self.interval, "s"), "job": "off"},
            "catalog": catalog,
        }
        if cdus:
            data["cdus"] = cdus
        return json.loads(json.dumps(data))

    def _device_names(self, data: dict, k: int) -> list[list[str]]:
        """Device names of each copy's subset, in the base scenario's device order."""
        if k not in self._names:
            from twin.scenario.loader import scenario_from_data
            from twin.sim.build import build_system

            loaded = scenario_from_data(data, self.workdir / "calibration.yaml")
            sy = build_system(loaded.scenario, loaded.catalog)
            rows = np.array(sy.row_names, dtype=object)[sy.device_row]
            per = []
            for j in range(k):
                idx = np.flatnonzero(rows == f"copy-{j}")
                if idx.size != self.n_subset:
                    raise RuntimeError(f"copy {j} has {idx.size} devices, expected {self.n_subset}")
                per.append([str(sy.device_name[i]) for i in idx])
            self._names[k] = per
        return self._names[k]


    def _alpha(self, j_theta: np.ndarray) -> np.ndarray:
        """clock_exponent of each telemetry device's chip for one parameter set."""
        cat = self.loaded.catalog
        out = []
        for dev in self.tele.devices:
            kind = self.subset_kinds[self.columns[self.tele.devices.index(dev)]]
            alpha = cat.chips[kind].clock_exponent.si
            for p, v in zip(self.params, j_theta):
                if p.path == f"chips.{kind}.clock_exponent":
                    alpha = v
            out.append(alpha)
        return np.array(out)

    def predict(self, thetas: np.ndarray, start, end) -> Prediction:
        """Device power and die temperature of each parameter set on the telemetry grid.

        Parameters
        ----------
        thetas : ndarray, shape (K, P)
            Parameter values (SI), one row per copy.
        start, end : datetime-like
            The window ``[start, end)``.

        Raises
        ------
        ScenarioError
            When the twin rejects a parameter set (e.g. figures that contradict each other).
        """
        thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
        times = self.tele.grid(start, end)
        n = times.size
        meas = self.tele.arrays(start, end)
        site_cols = [i for i, p in enumerate(self.params) if p.kind == "scenario" and p.path.startswith("site.")]
        groups: dict[tuple, list[int]] = {}
        for j, theta in enumerate(thetas):
            groups.setdefault(tuple(theta[site_cols]), []).append(j)
        power = np.full((len(thetas), n, len(self.tele.devices)), np.nan)
        temp = np.full_like(power, np.nan)
        for members in groups.values():
            p, t = self._run(thetas[members], times[0], n, meas)
            power[members], temp[members] = p, t
        return Prediction(power, temp, times)

    def _run(self, thetas: np.ndarray, start: pd.Timestamp, n: int, meas: dict):
        from twin.export.dataset import build_tree
        from twin.scenario.loader import scenario_from_data
        from twin.sim.driver import Simulation

        k = len(thetas)
        self.runs += 1
        data = self._scenario(thetas, start, n)
        names = self._device_names(data, k)
        t = np.arange(n) * self.interval
        frames = []
        for j, theta in enumerate(thetas):
            busy, held = self._mapping(theta)
            u = demanded_utilisation(meas["utilisation"], meas["clock"], busy, held, self._alpha(theta))
            for c, col in enumerate(self.columns):
                ok = ~np.isnan(meas["utilisation"][:, c])
                frames.append(pd.DataFrame({"time": t[ok], "device": names[j][col], "u": u[ok, c]}))
        replay = self.workdir / f"utilisation-{k}.parquet"
        pd.concat(frames, ignore_index=True).to_parquet(replay, index=False)
        try:
            loaded = scenario_from_data({**data, "workload": [{"replay": str(replay.resolve())}]},
                                        self.workdir / "calibration.yaml")
            sim = Simulation(loaded)
            sim.run()
        except ScenarioError as exc:
            raise ScenarioError(f"the twin rejects a trial parameter set: {exc.message} ({exc.path})",
                                file=str(self.loaded.path)) from None
        dev = build_tree(sim)["device"].to_dataset()
        p = dev["p"].values
        temp = dev["t_die"].values
        index = {str(nm): i for i, nm in enumerate(dev["device"].values)}
        cols = [[index[names[j][c]] for c in self.columns] for j in range(k)]
        P = np.stack([p[:n, c] for c in cols])
        T = np.stack([temp[:n, c] for c in cols])
        return P, T


def _figure_value(p: Parameter, value: float):
    """A trial value as a catalogue figure value (full precision, SI unit)."""
    return float(value) if not p.units else f"{float(value)!r} {p.units}"
