"""Capacity search: the largest number of racks of a template that fits a facility's budgets.

The racks are added to one row of a scenario (``count: N`` of the template, default the first
row) and run under the scenario's own workload (rules that select by device kind apply to them;
rules that name racks do not). A probe with N added racks is *feasible* when, over the whole run,

- **power**: the peak facility power ``p_facility`` (KPI ``p_facility_peak_W``: IT AC input plus
  cooling, at the workload step) ≤ the power budget;
- **cooling**: the peak cooling load ≤ the cooling budget, where the cooling load is the heat the
  racks give to liquid and air, Σ_racks (``q_liquid`` + ``q_air``) (power-shelf losses
  included), plus the CDU pump power (pump work ends up in the water), each step mean: the
  heat the plant must reject (the plant's own fans, chillers, pumps and UPS and transformer
  losses count against the power budget through ``p_facility``);
- **throttling**: the share of device-time spent throttled, throttled_device_seconds /
  (devices × run length), ≤ the tolerance;
- **capping**: the share of rack-time under a power cap (rack or row limit), capped_rack_seconds
  / (racks × run length), ≤ the tolerance;
- **trips**: no device trips (shutdown temperature).

The search assumes feasibility falls with N (more racks never make a budget easier). It probes
N = 0 and 1, extrapolates both budgets linearly from them to a first guess N̂ and probes N̂ and
N̂ + 1; while everything fits it extrapolates again from the two largest counts that fit, then
doubles; once a count does not fit it interpolates the broken budget and bisects (k-sects with k
workers: probes of a round run in parallel on Dask) until the largest feasible N sits next to the
smallest infeasible one. The binding constraint is what the smallest infeasible probe violated.

Added racks get their own CDU family (the template and setpoint of the row's CDU, or the first
CDU) with one CDU per ⌊CDU design flow / rack design flow⌋ racks, so pump power stays near
design; ``cdu=`` puts them on an existing CDU or family instead.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from twin.scenario.errors import OptionError, ScenarioError

#: Default largest number of template units tried (the scenario's per-entry count limit).
MAX_UNITS = 100_000
#: Name of the added rack entry and of its CDU family (a suffix is added on a clash).
RACK_ENTRY = "added"
CDU_ENTRY = "added-cdu"
#: Constraint names, in the order they are reported.
CONSTRAINTS = ("power", "cooling", "throttling", "capping", "trips", "error")


@dataclass
class Probe:
    """One run with ``n`` template units added, and what it used."""

    n: int
    n_racks: int = 0
    p_facility_peak: float = math.nan  # [W]
    cooling_peak: float = math.nan  # [W]
    throttled_share: float = math.nan  # [1]
    capped_share: float = math.nan  # [1]
    tripped: int = 0
    idle_racks: int = 0  # racks no workload rule or job selects
    error: str = ""
    wall: float = 0.0  # [s]
    violated: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.violated


@dataclass
class CapacityResult:
    """Answer of a capacity search."""

    template: str
    racks_per_unit: int
    n: int  # template units that fit (added to the scenario)
    binding: tuple[str, ...]  # constraints violated at n + 1 (empty: none up to max_units)
    budget_power: float
    budget_cooling: float | None
    tolerance: float
    row: str
    cdu: str
    probes: dict[int, Probe] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    wall: float = 0.0

    @property
    def racks(self) -> int:
        """Racks added (units × racks per unit)."""
        return self.n * self.racks_per_unit

    @property
    def at_limit(self) -> Probe:
        return self.probes[self.n]

    @property
    def over_limit(self) -> Probe | None:
        return self.probes.get(self.n + 1)


# -- one probe (runs on a Dask worker) ----------------------------------------------------------
def run_probe(base: str, overrides: dict, n: int) -> dict:
    """Run the scenario with ``overrides`` and return the probe's measures (plain data)."""
    import numpy as np

    from twin.report.diagnostics import unselected_racks
    from twin.scenario import load_scenario
    from twin.sim.driver import Simulation
    from twin.sweep.run import tune_malloc

    tune_malloc()
    t0 = time.perf_counter()
    try:
        sim = Simulation(load_scenario(base, overrides))
        tot = sim.run()
    except ScenarioError as exc:
        return {"n": n, "error": str(exc), "wall": time.perf_counter() - t0}
    except Exception as exc:  # noqa: BLE001 - reported as the probe's error
        return {"n": n, "error": f"{type(exc).__name__}: {exc}".splitlines()[0], "wall": time.perf_counter() - t0}
    snap = sim.recorder.snapshot()
    seconds = tot.steps * sim.h
    rack = snap.get("rack", {})
    heat = np.zeros(0)
    if "q_liquid" in rack and "q_air" in rack:
        heat = rack["q_liquid"].sum(axis=1) + rack["q_air"].sum(axis=1)
        pump = snap.get("cdu", {}).get("p_pump")
        if pump is not None and pump.shape[0] == heat.shape[0]:
            heat = heat + pump.sum(axis=1)
    sy = sim.system
    return {
        "n": n,
        "n_racks": int(sy.n_racks),
        "p_facility_peak": float(tot.p_facility_peak),
        "cooling_peak": float(heat.max()) if heat.size else math.nan,
        "throttled_share": float(tot.throttled_device_seconds / (sy.n_devices * seconds)) if seconds else 0.0,
        "capped_share": float(sim.capped_rack_seconds / (sy.n_racks * seconds)) if seconds else 0.0,
        "tripped": int(tot.devices_tripped),
        "idle_racks": len(unselected_racks(sim)),
        "wall": time.perf_counter() - t0,
    }


# -- setting up the probes ----------------------------------------------------------------------
@dataclass
class _Setup:
    base: Path
    data: dict
    hall: int
    row: int
    row_name: str
    template: str
    racks_per_unit: int
    cdu_name: str  # what the added racks' `cdu:` says
    cdu_entry: dict | None  # a new CDU family to add (count set per probe), or None
    units_per_cdu: int
    rack_entry: str
    duration: str | None

    def overrides(self, n: int) -> dict:
        data = json.loads(json.dumps(self.data, default=str))
        if n > 0:
            row = data["halls"][self.hall]["rows"][self.row]
            row["racks"].append({"name": self.rack_entry, "template": self.template, "count": n,
                                 "cdu": self.cdu_name})
            if self.cdu_entry is not None:
                entry = dict(self.cdu_entry, count=max(1, math.ceil(n / self.units_per_cdu)))
                if entry["count"] == 1:
                    entry.pop("count")
                data.setdefault("cdus", [])
                data["cdus"] = list(data["cdus"] or []) + [entry]
        step = self._step()
        record = dict(data.get("record") or {})
        variables = dict(record.get("variables") or {})
        variables["rack"] = ["q_liquid", "q_air"]
        variables["cdu"] = ["p_pump"]
        record.update({"rack": step, "cdu": step, "sled": "off", "device": "off", "variables": variables})
        out = {"halls": data["halls"], "record": record}
        if "cdus" in data:
            out["cdus"] = data["cdus"]
        if self.duration is not None:
            out["time"] = dict(data["time"], duration=self.duration)
        return out

    def _step(self) -> str:
        from twin.units import parse_quantity

        step = (self.data.get("time") or {}).get("step", "1 s")
        return f"{parse_quantity(step, 'time'):.12g} s"


def _unique(name: str, taken: set[str]) -> str:
    out, i = name, 2
    while out in taken or any(t.startswith(out + "-") for t in taken):
        out, i = f"{name}-{i}", i + 1
    return out


def setup(scenario: str | Path, template: str, row: str | None = None, cdu: str | None = None,
          duration: str | None = None) -> _Setup:
    """Check the inputs against the scenario and prepare the probes.

    Raises
    ------
    ScenarioError
        Bad scenario, unknown template, row or CDU.
    """
    import yaml

    from twin.scenario import load_scenario
    from twin.scenario.layout import expand_cdus

    scenario = Path(scenario)
    loaded = load_scenario(scenario, {"time": {"duration": duration}} if duration else None,
                           options={"time.duration": "--duration"})
    sc, cat = loaded.scenario, loaded.catalog
    if template not in cat.templates():
        raise OptionError("--rack", f"unknown template '{template}' (known: {', '.join(cat.templates())})")
    rows = [(h, r, rw) for h, hall in enumerate(sc.halls) for r, rw in enumerate(hall.rows)]
    if row is None:
        h, r, row_spec = rows[0]
    else:
        found = [x for x in rows if x[2].name == row]
        if not found:
            raise OptionError("--row", f"unknown row '{row}' (known: {', '.join(x[2].name for x in rows)})")
        h, r, row_spec = found[0]
    members = cat.systems[template].racks if template in cat.systems else [template]
    unit_flow = sum(cat.racks[m].coolant_flow.si for m in members)
    data = yaml.safe_load(loaded.text)
    rack_names = {rk.name for hall in sc.halls for rw in hall.rows for rk in rw.racks}
    _, cdu_names = expand_cdus(sc.cdus)
    rack_entry = _unique(RACK_ENTRY, rack_names)
    if cdu is not None:
        if cdu not in cdu_names:
            known = ", ".join(sorted(cdu_names)) or "none defined"
            raise OptionError("--cdu", f"unknown CDU '{cdu}' (known: {known})")
        return _Setup(scenario, data, h, r, row_spec.name, template, len(members), cdu, None, 1,
                      rack_entry, duration)
    # A new CDU family like the row's CDU (or the first CDU, or the default one).
    ref = next((rk.cdu for rk in row_spec.racks if rk.cdu), None)
    ref_entry = None
    for entry in data.get("cdus") or []:
        if ref is None or entry["name"] == ref or (ref in cdu_names and entry["name"] in cdu_names
                                                   and cdu_names[ref][0] in cdu_names[entry["name"]]):
            ref_entry = entry
            break
    new = {"name": _unique(CDU_ENTRY, set(cdu_names))}
    if ref_entry is not None:
        new.update({k: ref_entry[k] for k in ("template", "supply_temperature") if k in ref_entry})
    cdu_template = new.get("template", "in-row-1350kw")
    design = cat.cdus[cdu_template].design_flow.si if cdu_template in cat.cdus else 0.0
    per_cdu = max(1, int(design // unit_flow)) if unit_flow > 0 and design > 0 else MAX_UNITS
    return _Setup(scenario, data, h, r, row_spec.name, template, len(members), new["name"], new, per_cdu,
                  rack_entry, duration)


# -- the search ---------------------------------------------------------------------------------
def _violations(p: Probe, budget_power: float, budget_cooling: float | None, tolerance: float) -> tuple[str, ...]:
    if p.error:
        return ("error",)
    out = []
    if p.p_facility_peak > budget_power:
        out.append("power")
    if budget_cooling is not None and not p.cooling_peak <= budget_cooling:
        out.append("cooling")
    if p.throttled_share > tolerance:
        out.append("throttling")
    if p.capped_share > tolerance:
        out.append("capping")
    if p.tripped > 0:
        out.append("trips")
    return tuple(out)


def capacity_search(scenario: str | Path, template: str, budget_power: float, budget_cooling: float | None = None,
                    tolerance: float = 0.01, row: str | None = None, cdu: str | None = None,
                    duration: str | None = None, workers: int = 1, scheduler: str | None = None, client=None,
                    max_units: int = MAX_UNITS, on_probe: Callable[[Probe], None] | None = None) -> CapacityResult:
    """Largest number of ``template`` units that fit the budgets (see the module docstring).

    Parameters
    ----------
    scenario : str or Path
        Scenario YAML file; its workload runs on the added racks too.
    template : str
        Catalogue rack or system (a system unit counts all its racks).
    budget_power : float
        Facility power budget, compared with the peak facility power [W].
    budget_cooling : float, optional
        Cooling budget, compared with the peak cooling load [W].
    tolerance : float
        Largest share of device-time throttled and of rack-time capped [1].
    row, cdu : str, optional
        Row that receives the racks (default: the first); CDU or CDU family that feeds them
        (default: a new family sized by design flow).
    duration : str, optional
        Override the scenario's run length for every probe.
    workers : int
        Probes run at once: 1 runs them here; more start a LocalCluster of that many processes.
    scheduler : str, optional
        Dask scheduler address (its workers must see the scenario path).
    client : distributed.Client, optional
        Use this client (probes at once = its worker count).
    max_units : int
        Largest number of units tried.
    on_probe : callable, optional
        Called with each finished :class:`Probe`.

    Raises
    ------
    ScenarioError
        Bad scenario, template, row or CDU.
    """
    import contextlib

    t0 = time.perf_counter()
    st = setup(scenario, template, row, cdu, duration)
    max_units = min(max_units, MAX_UNITS)
    base = str(st.base.resolve())
    probes: dict[int, Probe] = {}
    notes: list[str] = []

    def finish(r: dict) -> Probe:
        p = Probe(**{k: v for k, v in r.items() if k in Probe.__dataclass_fields__})
        p.violated = _violations(p, budget_power, budget_cooling, tolerance)
        probes[p.n] = p
        if on_probe is not None:
            on_probe(p)
        return p

    if client is not None:
        ctx = contextlib.nullcontext(client)
    elif scheduler or workers > 1:
        from twin.sweep.run import dask_client

        ctx = dask_client(workers, scheduler, workers)
    else:
        ctx = contextlib.nullcontext(None)

    with ctx as c:
        k = max(1, len(c.scheduler_info()["workers"]) if c is not None else 1)

        def run(ns):
            ns = sorted({n for n in ns if 0 <= n <= max_units and n not in probes})
            if not ns:
                return
            if c is None:
                for n in ns:
                    finish(run_probe(base, st.overrides(n), n))
                return
            from distributed import as_completed

            futs = [c.submit(run_probe, base, st.overrides(n), n, pure=False) for n in ns]
            for fut in as_completed(futs):
                finish(fut.result())

        def bracket():
            bad = [n for n, p in probes.items() if not p.ok]
            hi = min(bad) if bad else None
            good = [n for n, p in probes.items() if p.ok and (hi is None or n < hi)]
            lo = max(good) if good else None
            return lo, hi

        run([0, 1])
        lo, hi = bracket()
        if lo is None:  # the scenario alone does not fit
            notes.append("the scenario without added racks already violates a constraint")
        elif hi is None or hi > lo + 1:
            est = _estimate(probes, budget_power, budget_cooling)
            if est is not None and hi is None:
                pts = [est, est + 1]
                for j in range(1, k - 1):  # more workers: probe around the guess
                    pts.append(est - j if j % 2 else est + 1 + j)
                run([min(max(p, 2), max_units) for p in pts])
                lo, hi = bracket()
            grow = 0
            while hi is None and lo < max_units:
                # Extrapolate the budgets from the two largest counts that fit (the per-unit
                # increment changes a little with scale: pumps, plant); double after that.
                g = _extrapolate(probes, budget_power, budget_cooling) if grow == 0 else None
                pts = [g, g + 1] if g is not None and g > lo else []
                pts += [lo * 2 ** (j + 1) for j in range(max(0, k - len(pts)))]
                run([min(p, max_units) for p in pts])
                lo, hi = bracket()
                grow += 1
            rounds = 0
            while hi is not None and hi - lo > 1:
                # Interpolate the violated budget between the bracket's ends and probe the guess
                # and the next count (a linear budget closes in one round); from the second
                # round on add the midpoint, so the bracket at least halves; k-sect with the
                # remaining workers.
                pts = []
                g = _interpolate(probes[lo], probes[hi], budget_power, budget_cooling)
                if g is not None:
                    pts += [g, g + 1]
                if g is None or rounds > 0:
                    pts.append((lo + hi) // 2)
                step = (hi - lo) / (k + 1)
                pts += [lo + round(step * (j + 1)) for j in range(max(0, k - len(pts)))]
                run([p for p in pts if lo < p < hi])
                lo, hi = bracket()
                rounds += 1
    lo = 0 if lo is None else lo
    above = [n for n, p in probes.items() if p.ok and hi is not None and n > hi]
    if above:
        notes.append(f"not monotone: {min(above)} units also fit although {hi} do not; "
                     "the answer is the largest N below the first that does not fit")
    if 0 in probes and any(p.idle_racks > probes[0].idle_racks for n, p in probes.items() if n > 0 and not p.error):
        notes.append("the added racks are selected by no workload rule or job (rules that name racks "
                     "do not reach them): they stay idle, so only their idle power counts")
    binding = probes[hi].violated if hi is not None else ()
    if hi is None:
        notes.append(f"no constraint binds up to {max_units} units (--max-units)")
    if lo == 0 and not probes[0].ok:
        binding = probes[0].violated
    return CapacityResult(template, st.racks_per_unit, lo, binding, budget_power, budget_cooling, tolerance,
                          st.row_name, st.cdu_name, probes, notes, time.perf_counter() - t0)


def _interpolate(lo: Probe, hi: Probe, budget_power, budget_cooling) -> int | None:
    """Largest count at which the budget ``hi`` broke is still met, interpolated linearly
    between the probes ``lo`` (fits) and ``hi`` (does not); None when no budget broke."""
    guesses = []
    for attr, budget, name in (("p_facility_peak", budget_power, "power"),
                               ("cooling_peak", budget_cooling, "cooling")):
        if budget is None or name not in hi.violated:
            continue
        a, b = getattr(lo, attr), getattr(hi, attr)
        if math.isfinite(a) and math.isfinite(b) and b > a:
            guesses.append(lo.n + int(math.floor((budget - a) / (b - a) * (hi.n - lo.n) + 1e-9)))
    if not guesses:
        return None
    return min(max(min(guesses), lo.n + 1), hi.n - 1)


def _extrapolate(probes, budget_power, budget_cooling) -> int | None:
    """Next guess beyond the largest count that fits, by linear extrapolation of the budgets
    from the two largest counts that fit."""
    fits = sorted(n for n, p in probes.items() if p.ok)
    if len(fits) < 2:
        return None
    a, b = probes[fits[-2]], probes[fits[-1]]
    guesses = []
    for attr, budget in (("p_facility_peak", budget_power), ("cooling_peak", budget_cooling)):
        if budget is None:
            continue
        pa, pb = getattr(a, attr), getattr(b, attr)
        if math.isfinite(pa) and math.isfinite(pb) and pb > pa:
            guesses.append(b.n + int(math.floor((budget - pb) / ((pb - pa) / (b.n - a.n)) + 1e-9)))
    return min(guesses) if guesses else None


def _estimate(probes, budget_power, budget_cooling) -> int | None:
    """First guess of the answer by linear extrapolation from the probes at 0 and 1."""
    p0, p1 = probes.get(0), probes.get(1)
    if p0 is None or p1 is None or not (p0.ok and p1.ok):
        return None
    guesses = []
    for attr, budget in (("p_facility_peak", budget_power), ("cooling_peak", budget_cooling)):
        if budget is None:
            continue
        a, b = getattr(p0, attr), getattr(p1, attr)
        if math.isfinite(a) and math.isfinite(b) and b > a:
            guesses.append(int(math.floor((budget - a) / (b - a) + 1e-9)))
    return max(1, min(guesses)) if guesses else None


# -- command line ---------------------------------------------------------------------------
def _parse_fraction(text: str) -> float:
    t = text.strip()
    try:
        return float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise ValueError(f"expected a share such as '1%' or '0.01', got '{text}'") from None


def _mw(x: float) -> str:
    if not math.isfinite(x):
        return "—"
    return f"{x / 1e6:,.3f} MW" if abs(x) >= 1e6 else f"{x / 1e3:,.1f} kW"

