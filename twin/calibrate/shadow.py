"""Shadow a live site: the twin runs alongside it, driven by its measured utilisation, and the
residuals (twin − measured) of every device with telemetry are exported as metrics.

Each step covers one interval of the site, ``[t, t + Δ)``. Once the interval is over (plus a
``delay`` for the site's exporters and Prometheus to have scraped it), the shadow asks
Prometheus for the interval means of utilisation, clock, power and temperature
(``avg_over_time(metric[Δ])``, the same reading as ``twin calibrate``), maps utilisation to the
twin's ``u`` (:func:`twin.calibrate.model.demanded_utilisation`), advances the twin one step and
publishes, per device::

    twin_measured_device_power_watts, twin_measured_device_temperature_celsius,
    twin_measured_device_utilization_ratio,
    twin_residual_device_power_watts, twin_residual_device_temperature_celsius

beside the twin's own metrics (``twin_device_power_watts`` …, the predicted values), plus
``twin_shadow_site_timestamp_seconds`` (end of the last interval compared) and
``twin_shadow_steps_total``. Devices without telemetry follow the scenario's workload. A site
interval with no sample of a device leaves its utilisation as it was and its residual NaN.

Replaying a site's history is the same loop with ``start`` in the past and a ``speed`` (site
seconds per wall second, or None for as fast as Prometheus answers).
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pandas as pd
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from twin.calibrate.model import demanded_utilisation
from twin.calibrate.telemetry import interval_means, known_metrics, to_si
from twin.scenario.errors import FieldError, ScenarioError

#: Labels of the shadow's per-device series.
SHADOW_LABELS = ("device", "rack", "kind", "telemetry_id")
#: Shadow metrics: name → (quantity array, help).
SHADOW_METRICS = {
    "twin_measured_device_power_watts": ("measured_power", "Measured device power, mean over the last interval [W]."),
    "twin_measured_device_temperature_celsius": ("measured_temperature",
                                                  "Measured die temperature, mean over the last interval [degC]."),
    "twin_measured_device_utilization_ratio": ("measured_utilisation",
                                                "Measured utilisation (fraction of time busy), mean over the last interval [1]."),
    "twin_residual_device_power_watts": ("residual_power", "Twin minus measured device power, last interval [W]."),
    "twin_residual_device_temperature_celsius": ("residual_temperature",
                                                  "Twin minus measured die temperature, last interval [K]."),
}
#: Default wait after an interval's end before it is read, for the site's scrapes to land [s].
DEFAULT_DELAY = 30.0
#: Seconds a live shadow's scenario lasts (it stops earlier when asked).
LIVE_DURATION = 366 * 86400.0


def _unix(t: pd.Timestamp) -> float:
    return (t - pd.Timestamp("1970-01-01")) / pd.Timedelta(seconds=1)


class ShadowRun:
    """The twin alongside a site (see the module docstring); :meth:`start` runs it in a thread.

    Parameters
    ----------
    loaded : LoadedScenario
        With ``telemetry.devices``; its step is replaced by the interval.
    url : str
        Prometheus base URL holding the site's telemetry.
    start : pandas.Timestamp, optional
        Site time (UTC) of the first interval; default the last whole interval before now.
    speed : float or None
        Replaying history (``start`` given): site seconds per wall second, None for as fast as
        possible. Live (no ``start``), the wall clock paces the run.
    steps : int, optional
        Stop after this many intervals.
    delay : float
        Seconds to wait after an interval's end before reading it (live only).
    """

    def __init__(self, loaded, url: str, *, start=None, speed: float | None = 1.0, steps: int | None = None,
                 delay: float = DEFAULT_DELAY, interval: float | None = None):
        from twin.export.server import DiscardSink
        from twin.scenario import load_scenario
        from twin.sim.driver import Simulation

        spec = loaded.scenario.telemetry
        if spec is None or not spec.devices:
            raise loaded.locate(FieldError(("telemetry",), "twin shadow needs telemetry.devices: which telemetry id "
                                                          "is which device of the scenario"))
        self.url = url.rstrip("/")
        self.spec = spec
        self.interval = float(interval or spec.interval or loaded.scenario.time.step)
        now = pd.Timestamp.now(tz="UTC").tz_localize(None)
        self.live = start is None
        if start is None:
            start = (now - pd.Timedelta(seconds=delay)).floor(f"{self.interval:g}s") - pd.Timedelta(seconds=self.interval)
        self.start = pd.Timestamp(start)
        self.speed, self.steps, self.delay = speed, steps, delay
        iv = f"{self.interval!r} s"
        overrides = {"time": {"start": self.start.isoformat(), "step": iv,
                              "duration": f"{(steps or LIVE_DURATION / self.interval) * self.interval!r} s"},
                     "record": {"facility": iv, "cdu": iv, "rack": iv, "device": iv, "job": iv}}
        self.loaded = load_scenario(loaded.path, overrides)
        self.sim = Simulation(self.loaded, solver="fast", sink=DiscardSink())
        sy = self.sim.system
        names = [str(n) for n in sy.device_name]
        index = {n: i for i, n in enumerate(names)}
        for ident, dev in spec.devices.items():
            if dev not in index:
                raise loaded.locate(FieldError(("telemetry", "devices", ident), f"no device '{dev}' in the scenario"))
        self.ids = list(spec.devices)
        self.devices = np.array([index[spec.devices[i]] for i in self.ids])
        # The demand component reads the site's utilisation for the measured devices.
        self.measured = MeasuredWorkload(self.sim.demand.workload, self.devices)
        self.sim.demand.workload = self.measured
        chips = self.loaded.catalog.chips
        self.alpha = np.array([chips[str(sy.device_kind[d])].clock_exponent.si for d in self.devices])
        m = self.loaded.scenario.telemetry.utilisation
        self.busy, self.held = m.busy, m.held
        self.labels = [(names[d], str(sy.rack_name[sy.device_rack[d]]), str(sy.device_kind[d]), i)
                       for i, d in zip(self.ids, self.devices)]
        n = len(self.ids)
        nan = np.full(n, np.nan)
        self.values = {k: nan.copy() for k in ("measured_power", "measured_temperature", "measured_utilisation",
                                                "residual_power", "residual_temperature")}
        self.u = np.zeros(n)
        self.site_time = math.nan  # end of the last interval compared [Unix s]
        self.metrics = known_metrics(self.url)
        self.error: BaseException | None = None
        self.finished = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, name="twin-shadow", daemon=True)
        self._version = 0
        self._wall0 = None

    # -- what the collectors and the HTTP app read ---------------------------------------------
    @property
    def current(self):
        return self.sim, {}

    def lag_seconds(self) -> float:
        if self._wall0 is None or self.finished.is_set():
            return 0.0
        return max(0.0, time.monotonic() - self._due(self.sim.step_index))

    def version(self) -> tuple:
        return (self._version,)

    def status(self) -> str:
        state = "failed" if self.error else "finished" if self.finished.is_set() else "running"
        return (f"{state} shadow of {self.url}: {self.sim.step_index} intervals of {self.interval:g} s from "
                f"{self.start}")

    # -- control ----------------------------------------------------------------------------------
    def start_thread(self) -> None:
        self._wall0 = time.monotonic()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout=None) -> None:
        self._thread.join(timeout)

    def _due(self, k: int) -> float:
        """Wall (monotonic) time at which interval ``k`` may be read."""
        if self.live:  # against the wall clock: the interval's end plus the scrape delay
            end = _unix(self.start) + (k + 1) * self.interval + self.delay
            return time.monotonic() + (end - time.time())
        if self.speed is None:
            return self._wall0
        return self._wall0 + (k + 1) * self.interval / self.speed

    def _main(self) -> None:
        try:
            k = 0
            while not self._stop.is_set() and (self.steps is None or k < self.steps):
                wait = self._due(k) - time.monotonic()
                if wait > 0 and self._stop.wait(wait):
                    break
                self.step(k)
                k += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the command, which exits 1
            self.error = exc
        finally:
            self.finished.set()

    # -- one interval -------------------------------------------------------------------------------
    def read(self, k: int) -> dict[str, np.ndarray]:
        """Measured interval means of interval ``k`` per telemetry device (NaN: no sample)."""
        end = _unix(self.start) + (k + 1) * self.interval
        rows = to_si(interval_means(self.url, self.spec, self.metrics, end, self.interval), self.spec, self.url)
        out = {q: np.full(len(self.ids), np.nan) for q in ("power", "temperature", "utilisation", "clock")}
        pos = pd.Index(self.ids).get_indexer(rows["id"])  # −1: an id the scenario does not map
        quantity, value = rows["quantity"].to_numpy(), rows["value"].to_numpy(dtype=float)
        for q, arr in out.items():  # one scatter per quantity, no loop over devices
            sel = (quantity == q) & (pos >= 0)
            arr[pos[sel]] = value[sel]
        return out

    def step(self, k: int) -> None:
        """Read interval ``k`` of the site, advance the twin over it, publish the residuals."""
        sim = self.sim
        meas = self.read(k)
        have = ~np.isnan(meas["utilisation"])
        u_new = demanded_utilisation(np.nan_to_num(meas["utilisation"]), meas["clock"], self.busy, self.held, self.alpha)
        self.u = np.where(have, u_new, self.u)
        self.measured.u = self.u
        sim.step()
        dev = sim.recorder.latest.get("device", {})
        p = np.asarray(dev.get("p", np.full(sim.system.n_devices, np.nan)))[self.devices]
        t = np.asarray(dev.get("t_die", np.full(sim.system.n_devices, np.nan)))[self.devices]
        v = self.values
        v["measured_power"], v["measured_temperature"] = meas["power"], meas["temperature"]
        v["measured_utilisation"] = meas["utilisation"]
        v["residual_power"] = p - meas["power"]
        v["residual_temperature"] = t - meas["temperature"]
        self.site_time = _unix(self.start) + (k + 1) * self.interval
        self._version += 1


class MeasuredWorkload:
    """A scenario's workload with the utilisation of the measured devices replaced by the site's.

    Parameters
    ----------
    workload : twin.workload.engine.Workload
        The scenario's own (it still drives every device without telemetry, and its jobs).
    devices : ndarray of int
        Device indices with telemetry.
    """

    def __init__(self, workload, devices: np.ndarray):
        self.base = workload
        self.devices = devices
        self.u = np.zeros(len(devices))  # the latest interval's demanded utilisation [1]

    def __getattr__(self, name):
        return getattr(self.base, name)

    def demand(self, t, clock_limit, tripped, t_die):
        """The workload's demand (sub-steps, devices), the measured devices' columns set to ``u``."""
        u, repair = self.base.demand(t, clock_limit, tripped, t_die)
        u = np.array(u, dtype=float, copy=True)
        u[:, self.devices] = self.u
        return u, repair


class ShadowCollector(Collector):
    """Measured values and residuals of a :class:`ShadowRun` (it only reads)."""

    def __init__(self, run: ShadowRun):
        self.run = run

    def describe(self):
        return []

    def collect(self):
        run = self.run
        for name, (key, help_) in SHADOW_METRICS.items():
            fam = GaugeMetricFamily(name, help_, labels=SHADOW_LABELS)
            for lab, x in zip(run.labels, run.values[key].tolist()):
                if math.isfinite(x):
                    fam.add_metric(lab, x)
            yield fam
        if math.isfinite(run.site_time):
            yield GaugeMetricFamily("twin_shadow_site_timestamp_seconds",
                                    "End of the last site interval the twin was compared on (Unix time) [s].",
                                    value=run.site_time)
        yield GaugeMetricFamily("twin_shadow_interval_seconds", "Length of one shadow interval [s].",
                                value=run.interval)
        c = CounterMetricFamily("twin_shadow_steps", "Site intervals shadowed since the start.")
        c.add_metric((), float(run.sim.step_index))
        yield c


def shadow_registry(run: ShadowRun):
    """A registry with the twin's own metrics (predicted) and the shadow's (measured, residual)."""
    from twin.export.prometheus import make_registry

    registry = make_registry(run, devices=True)
    registry.register(ShadowCollector(run))
    return registry


__all__ = ["SHADOW_METRICS", "ShadowCollector", "ShadowRun", "ScenarioError", "shadow_registry"]
