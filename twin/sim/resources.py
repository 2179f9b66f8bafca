"""What a run will cost, estimated from the scenario before anything is built.

A scenario can ask for more than a machine has: ten million devices, a microsecond step for a
day, a century at ten seconds recorded in memory. :func:`estimate` counts devices, steps and
recorded samples from the scenario and the catalogue alone (arithmetic, no layout is expanded),
and :func:`check` refuses a run above :data:`LIMITS` with one line stating the estimate — unless
the caller confirms (``twin run --allow-large``). :func:`check_loaded` does it for a loaded
scenario, placing the refusal at what to change (the layout, the time or the recording); the
command line runs it right after loading, before anything is built.

Memory model (measured on this project's 2-core x86_64 machine; see the README's "Limits"):

- state: :data:`BYTES_PER_DEVICE` per device covers the built system and the driver's per-device
  arrays (tracemalloc peak 0.6–1.0 kB per device building and stepping 29,000–116,000 devices;
  RSS of the cluster-100k benchmark 436 MiB for 201,550 devices), plus :data:`BASE_BYTES` for
  the interpreter and libraries;
- recording: samples × entities × variables × 8 bytes for a result kept in memory (``.nc``),
  twice (the result tree is built beside the recorder's arrays when it is written); a streamed
  result (``.zarr``) holds one buffer per group, plus the facility IT power series (8 bytes a
  sample) kept for power-quality KPIs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from twin.scenario.names import GROUPS

if TYPE_CHECKING:
    from twin.scenario.model import Scenario

#: Bytes of state per device (measured 0.6–1.2 kB; a margin for jobs and the plant).
BYTES_PER_DEVICE = 2048
#: Interpreter, numpy/scipy/pandas/xarray and the catalogue [bytes].
BASE_BYTES = 300 * 2**20
#: Share of physical memory a run may plan to use.
MEMORY_SHARE = 0.75




def physical_memory() -> int:
    """Physical memory of this machine [bytes] (0 if unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


#: Limits above which a run needs confirmation: name → (limit, what it bounds).
LIMITS: dict[str, tuple[float, str]] = {
    # 200 ns of CPU per device-step (cluster-100k: 201,550 devices, 3,600 steps in 143 s):
    # 2 M devices simulate an hour in ≈ 25 min.
    "devices": (2_000_000, "devices in one run"),
    # 16 years at 1 s; each step costs tens of microseconds of Python however small the system.
    "steps": (5e8, "steps"),
    # ≈ 55 h of CPU at 200 ns per device-step.
    "device_steps": (1e12, "devices × steps"),
    "memory": (MEMORY_SHARE * physical_memory() or 16 * 2**30, "memory"),
}


@dataclass(frozen=True)
class Estimate:
    """What a run needs: counts, steps, recorded samples and memory [bytes]."""

    devices: int
    sleds: int
    racks: int
    steps: int
    samples: int  # recorded samples of all groups (each a row of its entities)
    state_bytes: float
    record_bytes: float
    streamed: bool

    @property
    def memory(self) -> float:
        return BASE_BYTES + self.state_bytes + self.record_bytes

    @property
    def device_steps(self) -> float:
        return float(self.devices) * self.steps

    def text(self) -> str:
        where = "streamed" if self.streamed else "in memory"
        return (f"{self.devices:,} devices × {self.steps:,} steps = {self.device_steps:.2g} device-steps; "
                f"memory ≈ {_size(self.memory)} ({_size(self.state_bytes)} state + "
                f"{_size(self.record_bytes)} recorded {where})")

    def over(self, limits: dict | None = None) -> list[str]:
        """The limits this estimate exceeds (names of :data:`LIMITS`)."""
        limits = LIMITS if limits is None else limits
        values = {"devices": self.devices, "steps": self.steps, "device_steps": self.device_steps,
                  "memory": self.memory}
        return [k for k, (limit, _) in limits.items() if values[k] > limit]


def _size(n: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.3g} {unit}"
    return f"{n:,.0f} B"


def _per_template(catalog) -> dict[str, tuple[int, int, int]]:
    """Devices, sleds and racks of every rack and system template."""
    racks = {}
    for name, rack in catalog.racks.items():
        sleds = devices = 0
        for sled_name, count in rack.sleds.items():
            sled = catalog.sleds.get(sled_name)
            n = count.value
            sleds += n
            if sled is not None:
                devices += n * sum(c.value for c in sled.devices.values())
        racks[name] = (devices, sleds, 1)
    out = dict(racks)
    for name, system in catalog.systems.items():
        parts = [racks.get(r, (0, 0, 1)) for r in system.racks]
        out[name] = tuple(sum(p[i] for p in parts) for i in range(3))
    return out


def _hbm_templates(catalog) -> set[str]:
    """Rack and system templates with an accelerator that has an HBM node (``device.t_hbm``)."""
    chips = {name for name, c in catalog.chips.items() if getattr(c, "hbm_idle_power", None) is not None}
    sleds = {name for name, s in catalog.sleds.items() if chips & set(s.devices)}
    racks = {name for name, r in catalog.racks.items() if sleds & set(r.sleds)}
    return racks | {name for name, s in catalog.systems.items() if racks & set(s.racks)}


def estimate(scenario: Scenario, catalog, streamed: bool = False) -> Estimate:
    """Devices, steps, recorded samples and memory of ``scenario``, from arithmetic alone.

    Parameters
    ----------
    scenario : Scenario
    catalog : Catalog
        With the scenario's own entries merged in. Unknown templates count as empty (the
        loader reports them).
    streamed : bool
        The result is streamed to Zarr (bounded buffers) rather than kept in memory.
    """
    from twin.sim.variables import VARIABLES, plant_classes, writers

    plant_only = plant_classes()  # their variables are recorded only with a plant

    per = _per_template(catalog)
    devices = sleds = racks = 0
    for hall in scenario.halls:
        for row in hall.rows:
            for spec in row.racks:
                d, s, r = per.get(spec.template, (0, 0, 1))
                devices += spec.count * d
                sleds += spec.count * s
                racks += spec.count * r
    hbm_racks = _hbm_templates(catalog)
    hbm = any(spec.template in hbm_racks for hall in scenario.halls for row in hall.rows for spec in row.racks)
    cdus = sum(c.count for c in scenario.cdus) or 1
    h = scenario.time.step
    h_w = scenario.workload_step or h
    n_sub = max(1, int(round(h / h_w)))
    steps = max(1, int(round(scenario.time.duration / h)))
    substeps = steps * n_sub
    sizes = {"facility": 1, "cdu": cdus, "rack": racks, "sled": sleds, "device": devices,
             "job": len(scenario.jobs)}
    record = scenario.record
    samples = 0
    record_bytes = 0.0
    for group in GROUPS:
        interval = getattr(record, group)
        if interval == "off" or not sizes[group]:
            continue
        every = max(1, int(round(interval / h_w)))
        n = substeps // every
        names = record.variables.get(group) or [
            v for v in VARIABLES[group]
            if (scenario.plant is not None or set(writers(f"{group}.{v}")) - plant_only)
            and (hbm or f"{group}.{v}" != "device.t_hbm")]  # (written only by systems with HBM nodes)
        row = 8.0 * sizes[group] * len(names)
        samples += n
        if streamed:
            record_bytes += min(n * row, max(record.buffer, 16 * row))
            if group == "facility":
                record_bytes += 8.0 * n
        else:
            record_bytes += 2 * n * row
    state = BYTES_PER_DEVICE * float(devices)
    return Estimate(devices, sleds, racks, steps, samples, state, record_bytes, streamed)


def check(scenario: Scenario, catalog, streamed: bool = False, allow_large: bool = False) -> Estimate:
    """The estimate; ValueError (one line, stating it) when above :data:`LIMITS` unconfirmed."""
    est = estimate(scenario, catalog, streamed)
    over = est.over()
    if over and not allow_large:
        limits = "; ".join(f"{LIMITS[k][1]} above {_limit(k)}" for k in over)
        raise ValueError(f"too large for this machine: {est.text()}; {limits}. Shorten the run, "
                         f"use a longer step, record less (or to .zarr), or confirm with --allow-large")
    return est


def _limit(key: str) -> str:
    value = LIMITS[key][0]
    if key == "memory":
        return _size(value)
    if key in ("devices", "steps"):
        return f"{value:,.0f}" if value < 1e7 else f"{value:.2g}"
    return f"{value:.2g}"


def check_loaded(loaded, streamed: bool | None = None, allow_large: bool = False) -> Estimate:
    """:func:`check` for a loaded scenario; the refusal is a ScenarioError at its file and line.

    Parameters
    ----------
    loaded : twin.scenario.LoadedScenario
        Its ``estimate`` is set.
    streamed : bool, optional
        The result is streamed (to ``.zarr``, or to a live view) rather than kept in memory.
        Default: whether the scenario's ``output`` is a ``.zarr``.
    allow_large : bool
        Accept a run above :data:`LIMITS`.
    """
    from pathlib import Path

    from twin.scenario.errors import FieldError

    scenario, catalog = loaded.scenario, loaded.catalog
    if streamed is None:
        streamed = scenario.output is not None and Path(scenario.output).suffix.lower() == ".zarr"
    try:
        est = check(scenario, catalog, streamed=streamed, allow_large=allow_large)
    except ValueError as exc:  # placed at what to change: the layout, the time or the recording
        est = estimate(scenario, catalog, streamed)
        over = est.over()
        if "devices" in over:
            loc = ("halls",)
        elif "steps" in over or "device_steps" in over:
            loc = ("time",)
        else:
            loc = ("record",) if est.record_bytes > est.state_bytes else ("halls",)
        raise loaded.locate(FieldError(loc, str(exc))) from None
    loaded.estimate = est
    return est
