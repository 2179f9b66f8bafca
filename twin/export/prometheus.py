"""Prometheus metrics of a running (or finished) simulation: one mapping table, one collector.

Every recorded variable of :data:`twin.sim.variables.VARIABLES` that has a Prometheus name is
listed once in :data:`METRICS` (``(group, variable) → metric name``); labels come from the
group (:data:`GROUP_LABELS`) and help from the variable's ``long_name`` and units. Adding a
metric for a new variable is one line in :data:`METRICS` (or its declaration's ``metric``); a variable the scenario does not record
is skipped. Every recorded facility-level variable has a metric (one series each, so the cost is
nil; the tests hold the table to the declarations). The same tables drive the live collector (:class:`TwinCollector`) and the OpenMetrics
writer (:mod:`twin.export.openmetrics`), so live and backfilled data have the same names.

Names follow DESIGN.md: prefix ``twin_``, base units in the name (watts, joules, celsius,
seconds, ratio, grams per second), counters end in ``_total``. Device- and sled-level series
are emitted only when asked (``devices=True``) or when the level has fewer entities than
``device_threshold`` (default :data:`DEVICE_THRESHOLD`), so a 100k-chip hall does not emit
millions of series by default; per-kind summaries (:data:`KIND_SUMMARIES`) are always there.

Optional DCGM-compatible names (``dcgm=True``) for NVIDIA GPUs — the foreign names are
translated here, in :data:`DCGM_METRICS`, and nowhere else — let dashboards made for NVIDIA's
dcgm-exporter read the twin unchanged.

The collector only reads (``sim.recorder.latest``, ``sim.totals``); it never changes the
simulation.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC

import numpy as np
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

import twin
from twin.sim.variables import DECLARED, VARIABLES

#: Device- or sled-level series are emitted by default only below this many entities.
DEVICE_THRESHOLD = 2000

#: Entity levels gated by the cardinality threshold.
FINE_GROUPS = ("sled", "device")

#: Labels of each group's series. A label has the name of its dataset coordinate, except where
#: Prometheus reserves the name (:data:`LABEL_COORDS`).
GROUP_LABELS: dict[str, tuple[str, ...]] = {
    "facility": (),
    "cdu": ("cdu",),
    "rack": ("rack", "row", "hall"),
    "sled": ("sled", "rack"),
    "device": ("device", "sled", "rack", "kind"),
    "job": ("job_name", "job_kind"),
}
#: label → dataset coordinate where they differ: ``job`` is the scrape job's label in Prometheus.
LABEL_COORDS = {"job_name": "job"}

#: UDUNITS unit of a variable → (metric-name suffix, factor to the metric's unit, unit in help).
#: Prometheus' base units: watts, joules, celsius, seconds — and grams (not kilograms) for mass.
#: Dimensionless "1" is a ratio (``_ratio``) or a count (named for what it counts).
GRAMS_PER_KILOGRAM = 1e3
UNIT_CONVERSION: dict[str, tuple[str, float, str]] = {
    "W": ("_watts", 1.0, "W"),
    "J": ("_joules", 1.0, "J"),
    "degC": ("_celsius", 1.0, "degC"),
    "1": ("", 1.0, "1"),
    "s-1": ("_per_second", 1.0, "s-1"),
    "kg s-1": ("_grams_per_second", GRAMS_PER_KILOGRAM, "g s-1"),
    "s": ("_seconds", 1.0, "s"),
}

#: (group, variable) → metric name. ONE line per metric; help, labels and units are derived. A
#: name ending in ``_total`` is exposed as a counter (the variable must never decrease).
METRICS: dict[tuple[str, str], str] = {
    ("facility", "p_it"): "twin_it_power_watts",
    ("facility", "p_facility"): "twin_facility_power_watts",
    ("facility", "p_cooling"): "twin_cooling_power_watts",
    ("facility", "p_loss"): "twin_power_delivery_loss_watts",
    ("facility", "pue"): "twin_pue_ratio",
    ("facility", "t_facility_supply"): "twin_facility_water_supply_temperature_celsius",
    ("facility", "t_cold_aisle"): "twin_cold_aisle_temperature_celsius",
    ("facility", "p_network"): "twin_network_power_watts",
    ("facility", "p_busway_loss"): "twin_busway_loss_watts",
    ("facility", "p_ups_loss"): "twin_ups_loss_watts",
    ("facility", "p_transformer_loss"): "twin_transformer_loss_watts",
    ("facility", "p_misc"): "twin_misc_power_watts",
    ("facility", "p_electrical_room_cooling"): "twin_electrical_room_cooling_power_watts",
    ("facility", "p_ups_battery_charge"): "twin_ups_battery_charge_power_watts",
    ("facility", "e_ups_battery"): "twin_ups_battery_energy_joules",
    ("facility", "t_outdoor"): "twin_outdoor_temperature_celsius",
    ("facility", "t_wet_bulb"): "twin_outdoor_wet_bulb_temperature_celsius",
    ("facility", "t_facility_return"): "twin_facility_water_return_temperature_celsius",
    ("facility", "p_crah"): "twin_crah_fan_power_watts",
    ("facility", "p_chiller"): "twin_chiller_power_watts",
    ("facility", "p_heat_rejection_fans"): "twin_heat_rejection_fan_power_watts",
    ("facility", "water"): "twin_makeup_water_grams_per_second",
    ("facility", "p_cdu_pumps"): "twin_cdu_pumps_power_watts",
    ("facility", "p_facility_pumps"): "twin_facility_pump_power_watts",
    ("facility", "economiser"): "twin_economiser_mode",
    ("facility", "chiller_on"): "twin_chiller_on_ratio",
    ("cdu", "t_supply"): "twin_cdu_supply_temperature_celsius",
    ("cdu", "t_return"): "twin_cdu_return_temperature_celsius",
    ("cdu", "flow"): "twin_cdu_flow_grams_per_second",
    ("cdu", "p_pump"): "twin_cdu_pump_power_watts",
    ("cdu", "q"): "twin_cdu_heat_removed_watts",
    ("rack", "p_ac"): "twin_rack_power_watts",
    ("rack", "p_dc"): "twin_rack_dc_power_watts",
    ("rack", "t_coolant_supply"): "twin_rack_coolant_supply_temperature_celsius",
    ("rack", "t_coolant_return"): "twin_rack_coolant_return_temperature_celsius",
    ("rack", "t_air_in"): "twin_rack_air_inlet_temperature_celsius",
    ("rack", "t_air_out"): "twin_rack_air_outlet_temperature_celsius",
    ("rack", "q_liquid"): "twin_rack_heat_to_liquid_watts",
    ("rack", "q_air"): "twin_rack_heat_to_air_watts",
    ("rack", "throttled"): "twin_rack_throttled_ratio",
    ("sled", "p_dc"): "twin_sled_power_watts",
    ("sled", "t_coolant_out"): "twin_sled_coolant_outlet_temperature_celsius",
    ("sled", "t_air_out"): "twin_sled_air_outlet_temperature_celsius",
    ("device", "u"): "twin_device_utilization_ratio",
    ("device", "p"): "twin_device_power_watts",
    ("device", "t_die"): "twin_device_temperature_celsius",
    ("device", "clock"): "twin_device_clock_ratio",
    ("device", "throttled"): "twin_device_throttled_ratio",
    ("job", "progress"): "twin_job_progress_iterations",
    ("job", "throughput"): "twin_job_throughput_per_second",
    ("job", "tokens"): "twin_job_tokens_total",
    ("job", "p"): "twin_job_power_watts",
    ("job", "state"): "twin_job_state",
}
# … and the variables that name their metric in their declaration (``Var.metric``)
METRICS.update({(v.group, v.name): v.metric for v in DECLARED.values()
                if v.metric is not None and v.record and (v.group, v.name) not in METRICS})


@dataclass(frozen=True)
class Counter:
    """A cumulative energy counter: live value from the simulation, offline from a power series.

    ``live(sim)`` gives the cumulative value per entity [J]; offline, the counter is the running
    sum of ``power`` × recording interval from the ``group``'s samples.
    """

    name: str  # without the _total suffix
    group: str
    power: str  # variable whose time integral the counter is
    live: Callable
    help: str


def _counters() -> tuple[Counter, ...]:
    """One counter per variable that declares one (its exact time integral, kept by the driver)."""
    out = []
    for var in DECLARED.values():
        if var.counter:
            long_name = var.long_name.split(" (")[0]
            out.append(Counter(var.counter, var.group, var.name,
                               lambda sim, key=var.key: sim.totals.energy.get(key),
                               f"{long_name[0].upper()}{long_name[1:]}, energy since the start [J]."))
    return tuple(out)


#: Energy counters (``<name>_total``), monotonic over a run and across ``--loop`` restarts: the
#: variables that declare a counter (:class:`twin.sim.component.Var`), so the live value, the
#: backfill and the KPIs (``energy_*_J``) integrate the same quantity.
COUNTERS: tuple[Counter, ...] = _counters()


@dataclass(frozen=True)
class KindSummary:
    """A per-device-kind reduction of a device variable (always emitted: one series per kind)."""

    name: str
    variable: str
    reduce: str  # sum | max | mean
    help: str


#: Per-kind summaries of the device level: dashboards work at any scale with these.
KIND_SUMMARIES: tuple[KindSummary, ...] = (
    KindSummary("twin_devices_power_watts", "p", "sum", "Power of all devices of a kind [W]."),
    KindSummary("twin_device_temperature_max_celsius", "t_die", "max",
                "Hottest die temperature of a kind [degC]."),
    KindSummary("twin_device_utilization_mean_ratio", "u", "mean",
                "Mean demanded utilisation of a kind [1]."),
    KindSummary("twin_device_clock_mean_ratio", "clock", "mean", "Mean relative clock of a kind [1]."),
    KindSummary("twin_devices_throttled", "throttled", "sum",
                "Devices of a kind throttled (interval-mean count)."),
)

#: Metrics about the run rather than the simulated equipment: name → help.
RUN_METRICS = {
    "twin_build_info": "twin version and the scenario being run.",
    "twin_simulated_time_seconds": "Simulated time since the scenario start [s].",
    "twin_simulated_timestamp_seconds": "Simulated clock as a Unix time (scenario start taken as UTC) [s].",
    "twin_lag_seconds": "Wall-clock time the run is behind its schedule (0 when keeping pace or at speed max) [s].",
}
BUILD_INFO_LABELS = ("version", "scenario", "solver")

#: Number of devices per kind (constant over a run).
DEVICES_METRIC = "twin_devices"
DEVICES_HELP = "Number of devices of a kind."

#: twin device variable → (DCGM field name, scale, help) for NVIDIA GPUs (dcgm-exporter names).
#: ``None`` scale on the clock means "× the chip's maximum SM clock in MHz" (catalogue ``max_clock``).
DCGM_METRICS: dict[str, tuple[str, float | None, str]] = {
    "p": ("DCGM_FI_DEV_POWER_USAGE", 1.0, "Power draw (in W)."),
    "t_die": ("DCGM_FI_DEV_GPU_TEMP", 1.0, "GPU temperature (in C)."),
    "t_hbm": ("DCGM_FI_DEV_MEMORY_TEMP", 1.0, "Memory temperature (in C)."),
    "clock": ("DCGM_FI_DEV_SM_CLOCK", None, "SM clock frequency (in MHz)."),
    "u": ("DCGM_FI_DEV_GPU_UTIL", 100.0, "GPU utilization (in %)."),
}
#: dcgm-exporter's labels on every GPU series.
DCGM_LABELS = ("gpu", "UUID", "device", "modelName", "Hostname")
#: Hz per MHz (DCGM reports clocks in MHz).
HZ_PER_MHZ = 1e6


def metric_scale(group: str, variable: str) -> float:
    """Factor from the variable's units (VARIABLES) to its metric's base unit."""
    return UNIT_CONVERSION[VARIABLES[group][variable][0]][1]


def metric_help(group: str, variable: str) -> str:
    """Help text of a mapped variable: its long_name from VARIABLES and the metric's unit."""
    units, long_name = VARIABLES[group][variable]
    return f"{long_name[0].upper()}{long_name[1:]} [{UNIT_CONVERSION[units][2]}]."


def fine_level_enabled(n_entities: int, devices: bool | None, threshold: int = DEVICE_THRESHOLD) -> bool:
    """Whether a device/sled level with ``n_entities`` is exported (``devices`` None = automatic)."""
    if devices is None:
        return n_entities < threshold
    return bool(devices)


def kind_masks(kinds: np.ndarray) -> dict[str, np.ndarray]:
    """Device kind → boolean mask over the devices, kinds in sorted order."""
    kinds = np.asarray(kinds).astype(str)
    return {str(k): kinds == k for k in np.unique(kinds)}


def kind_reduce(values: np.ndarray, masks: dict[str, np.ndarray], how: str) -> dict[str, np.ndarray]:
    """Reduce ``values`` (..., devices) over the devices of each kind → {kind: (...)}."""
    reduce = {"sum": np.sum, "max": np.max, "mean": np.mean}[how]
    return {kind: reduce(values[..., mask], axis=-1) for kind, mask in masks.items()}


def system_labels(sim) -> dict[str, dict[str, np.ndarray]]:
    """Label values of every entity, per group (same names as the dataset coordinates)."""
    sy = sim.system
    rows = np.array(sy.row_names, dtype=object)
    halls = np.array(sy.hall_names, dtype=object)
    rack = sy.rack_name.astype(str)
    jobs = sim.jobs.jobs if getattr(sim, "jobs", None) is not None else []
    return {
        "facility": {},
        "cdu": {"cdu": sy.cdu_name.astype(str)},
        "rack": {"rack": rack, "row": rows[sy.rack_row].astype(str), "hall": halls[sy.rack_hall].astype(str)},
        "sled": {"sled": sy.sled_name.astype(str), "rack": rack[sy.sled_rack]},
        "device": {"device": sy.device_name.astype(str), "sled": sy.sled_name[sy.device_sled].astype(str),
                   "rack": rack[sy.device_rack], "kind": sy.device_kind.astype(str)},
        "job": {"job_name": np.array([j.spec.name for j in jobs], dtype=str),
                "job_kind": np.array([j.spec.kind for j in jobs], dtype=str)},
    }


def label_tuples(labels: dict[str, np.ndarray], group: str) -> list[tuple[str, ...]]:
    """Per-entity label-value tuples in :data:`GROUP_LABELS` order."""
    names = GROUP_LABELS[group]
    if not names:
        return [()]
    return list(zip(*(labels[n].tolist() for n in names)))


def dcgm_labels(sim) -> tuple[np.ndarray, list[tuple[str, ...]], np.ndarray]:
    """GPU devices (NVIDIA accelerators), their dcgm-exporter labels and max SM clock [MHz].

    ``gpu`` is the index of the GPU on its sled (the host), ``Hostname`` the sled name, and
    ``UUID`` a stable name-based UUID, so a series keeps its identity across restarts.
    """
    sy = sim.system
    chips = sim.loaded.catalog.chips
    kinds = sy.device_kind.astype(str)
    gpu_kinds = {k for k in set(kinds.tolist()) if chips[k].vendor == "NVIDIA" and chips[k].role == "accelerator"}
    idx = np.flatnonzero(np.isin(kinds, list(gpu_kinds)))
    labels, mhz, seen = [], [], {}
    for i in idx:
        sled = str(sy.sled_name[sy.device_sled[i]])
        n = seen.get(sled, 0)
        seen[sled] = n + 1
        name = str(sy.device_name[i])
        labels.append((str(n), f"GPU-{uuid.uuid5(uuid.NAMESPACE_URL, 'twin:' + name)}", f"nvidia{n}",
                       f"NVIDIA {kinds[i].upper()}", sled))
        clock = chips[kinds[i]].max_clock
        mhz.append(clock.si / HZ_PER_MHZ if clock is not None else np.nan)  # no figure: no series
    return idx, labels, np.array(mhz)


class StaticSource:
    """The minimal source a collector reads: a simulation, no pacing, nothing carried over."""

    def __init__(self, sim):
        self.current = (sim, {})

    def lag_seconds(self) -> float:
        return 0.0


class TwinCollector(Collector):
    """A prometheus_client collector over a simulation's latest recorded state.

    Parameters
    ----------
    source : Simulation or object
        A :class:`~twin.sim.driver.Simulation`, or a live source with ``current`` =
        ``(sim, carried)`` (``carried``: counter name → values carried over from earlier loops
        [J]) and ``lag_seconds()`` (see :class:`twin.export.server.LiveRun`).
    devices : bool or None
        Emit device- and sled-level series: True, False, or None = only below ``device_threshold``.
    dcgm : bool
        Also emit DCGM-compatible series for NVIDIA GPUs (when device series are emitted).
    device_threshold : int
        Entity count from which device/sled series are off by default.
    """

    def __init__(self, source, *, devices: bool | None = None, dcgm: bool = False,
                 device_threshold: int = DEVICE_THRESHOLD):
        self.source = source if hasattr(source, "current") else StaticSource(source)
        self.devices = devices
        self.dcgm = dcgm
        self.device_threshold = device_threshold
        self._labels_sim = None
        self._labels = None

    def describe(self):
        return []  # collected on demand; nothing to check at registration

    def _entity_labels(self, sim):
        """Label tuples per group and the DCGM tables, computed once per simulation object."""
        if self._labels_sim is not sim:
            labels = system_labels(sim)
            self._labels = {
                "tuples": {g: label_tuples(labels[g], g) for g in GROUP_LABELS},
                "kinds": kind_masks(sim.system.device_kind),
                "dcgm": dcgm_labels(sim) if self.dcgm else None,
            }
            self._labels_sim = sim
        return self._labels

    def level_enabled(self, sim, group: str) -> bool:
        if group not in FINE_GROUPS:
            return True
        n = sim.system.n_devices if group == "device" else sim.system.sled_name.size
        return fine_level_enabled(n, self.devices, self.device_threshold)

    def collect(self):
        sim, carried = self.source.current
        tables = self._entity_labels(sim)
        tuples = tables["tuples"]
        latest = sim.recorder.latest  # the last complete sample of each group

        info = GaugeMetricFamily("twin_build_info", RUN_METRICS["twin_build_info"], labels=BUILD_INFO_LABELS)
        info.add_metric((twin.__version__, sim.scenario.name, sim.solver), 1.0)
        yield info
        start = sim.scenario.time.start
        if start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
        for name, value in (("twin_simulated_time_seconds", sim.time),
                            ("twin_simulated_timestamp_seconds", start.timestamp() + sim.time),
                            ("twin_lag_seconds", self.source.lag_seconds())):
            yield GaugeMetricFamily(name, RUN_METRICS[name], value=value)

        for (group, variable), name in METRICS.items():
            row = latest.get(group)
            if row is None or variable not in row or not self.level_enabled(sim, group):
                continue
            family = CounterMetricFamily if name.endswith("_total") else GaugeMetricFamily
            fam = family(name, metric_help(group, variable), labels=GROUP_LABELS[group])
            values = row[variable] * metric_scale(group, variable)
            for lab, v in zip(tuples[group], values.tolist()):
                if math.isfinite(v):
                    fam.add_metric(lab, v)
            yield fam

        for c in COUNTERS:
            if c.group not in sim.recorder.groups:
                continue
            key = f"{c.group}.{c.power}"
            if key not in sim.totals.energy:  # no component of this system writes it
                continue
            live = c.live(sim)
            if live is None:  # no step taken yet
                live = np.zeros(len(tuples[c.group]))
            values = np.asarray(live, dtype=float) + carried.get(c.name, 0.0)
            fam = CounterMetricFamily(c.name, c.help, labels=GROUP_LABELS[c.group])
            for lab, v in zip(tuples[c.group], values.tolist()):
                fam.add_metric(lab, v)
            yield fam

        masks = tables["kinds"]
        fam = GaugeMetricFamily(DEVICES_METRIC, DEVICES_HELP, labels=("kind",))
        for kind, mask in masks.items():
            fam.add_metric((kind,), float(mask.sum()))
        yield fam
        dev = latest.get("device")
        if dev is not None:
            for s in KIND_SUMMARIES:
                if s.variable not in dev:
                    continue
                fam = GaugeMetricFamily(s.name, s.help, labels=("kind",))
                for kind, v in kind_reduce(dev[s.variable], masks, s.reduce).items():
                    fam.add_metric((kind,), float(v))
                yield fam

        if self.dcgm and dev is not None and self.level_enabled(sim, "device"):
            idx, labels, mhz = tables["dcgm"]
            if idx.size:
                for variable, (name, scale, help_) in DCGM_METRICS.items():
                    if variable not in dev:
                        continue
                    values = dev[variable][idx] * (mhz if scale is None else scale)
                    fam = GaugeMetricFamily(name, help_, labels=DCGM_LABELS)
                    for lab, v in zip(labels, values.tolist()):
                        if math.isfinite(v):
                            fam.add_metric(lab, v)
                    yield fam


def make_registry(source, **options) -> CollectorRegistry:
    """A registry holding only a :class:`TwinCollector` over ``source`` (options as the collector)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(TwinCollector(source, **options))
    return registry


__all__ = [
    "COUNTERS", "DCGM_METRICS", "DEVICE_THRESHOLD", "GROUP_LABELS", "KIND_SUMMARIES", "METRICS", "RUN_METRICS",
    "TwinCollector", "make_registry",
]
