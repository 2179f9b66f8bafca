"""Chips as components: device power per workload sub-step, and the clock governors.

:class:`ChipPower` turns demanded utilisation, the clock the governors allow and the die
temperature into device power (:func:`twin.power.device.device_power`), then applies the jobs'
power floors and ramp limits. :class:`Governors` is the controller at the end of each step:
thermal throttling with hysteresis, the shutdown trip and the rack/row power-cap governors set
the clock limit and the trips for the next step (:mod:`twin.power.governor`). Both are array
operations over all devices; the ramp limit loops over sub-steps only.
"""

from __future__ import annotations

import math

import numpy as np

from twin.power.governor import cap_governor
from twin.power.kernels import NumpyKernel
from twin.scenario.errors import FieldError
from twin.sim.component import Component, Control, Var, step_mean

P = Var("device", "p", "W", "device power", per_substep=True)
P_STEP = Var("device", "p_step", "W", "device power, step mean", record=False)
CLOCK = Var("device", "clock", "1", "relative clock")
THROTTLED = Var("device", "throttled", "1", "fraction of the interval spent throttled")
CLOCK_LIMIT = Var("device", "clock_limit", "1", "clock the governors allow from the next step on", record=False)
TRIPPED = Var("device", "tripped", "1",
              "device is off: a shutdown trip not yet restarted, or its rack without input power", record=False)
RACK_THROTTLED = Var("rack", "throttled", "1", "fraction of the rack's devices throttled")
RACK_PSU_OVERLOAD = Var("rack", "psu_overload", "1",
                        "fraction of the interval the rack asked its power shelves for more than its "
                        "healthy PSUs' rating (capped or tripped per the shelf's overload policy)")
P_LIMIT = Var("device", "p_limit", "W", "device power limit in force", record=False)
SLED_P_DEVICES = Var("sled", "p_devices", "W", "device power of each sled (before board and fans)",
                     per_substep=True, record=False)
RACK_CAPPED = Var("rack", "capped", "1", "fraction of the interval the rack's clocks were capped for a power limit")
#: Chip roles that do compute work (the work counters of :class:`ChipPower`); the network's
#: NICs and switches do none.
COMPUTE_ROLES = ("accelerator", "cpu")
#: Top of a power limit's control range relative to the design power of what it limits [1]
#: (estimate: no rack draws twice its design power); a limit set at the top is no limit.
LIMIT_RANGE_TOP = 2.0


class ChipPower(Component):
    """Device power [W] per workload sub-step.

    Parameters
    ----------
    chip : dict of ndarray
        Per-device chip figures (:data:`twin.sim.build.CHIP_FIELDS` + ``p_dyn``).
    h_w : float
        Workload sub-step [s] (ramp limits act per sub-step).
    smoothing : bool
        Apply the jobs' power floors and ramp limits (scenarios with jobs).
    totals : Totals
        Running totals (extra energy spent by floors and ramp limits, ``e_smoothing``).
    kernel : NumpyKernel or NumbaKernel, optional
        Computes the power (:mod:`twin.power.kernels`); default the numpy reference.
    system : System, optional
    compute : ndarray, optional
        1 for each device that does compute work (:data:`COMPUTE_ROLES`), 0 for the network
        [1] (default: every device).

    Notes
    -----
    Besides the power it counts the compute work of the run in ``totals`` [device-s at full
    clock]: each step adds Σ w·ū·h demanded (``demand_device_seconds``) and Σ w·ū·(1 − f·on)·h
    lost (``lost_work_device_seconds``), with ū the step-mean demanded utilisation, f the
    relative clock the step runs at, on 0 for a device that is off (tripped, or its rack
    without power) and w the ``compute`` weight. The work done is the difference (Σ w·ū·f·on·h);
    nothing lost is exactly 0.
    """

    inputs = ("device.u", "device.clock_limit", "device.tripped", "device.t_die", "device.repair",
              "device.p_floor", "device.ramp", "device.held", "device.p_limit", "rack.shelf_capacity",
              "sled.p_fan")
    outputs = (P, P_STEP, CLOCK, RACK_PSU_OVERLOAD, SLED_P_DEVICES)
    phase = "power"

    def __init__(self, chip: dict, h_w: float, smoothing: bool, totals, kernel=None, system=None, compute=None):
        self.sy = system
        self.chip = chip
        self.compute = np.ones(chip["tdp"].size) if compute is None else np.asarray(compute, dtype=float)
        self.kernel = kernel if kernel is not None else NumpyKernel(chip)
        self.h_w = h_w
        self.smoothing = smoothing
        self.totals = totals
        self.p_prev = None  # last sub-step's device power, for ramp limits [W]
        self._fixed = (None, None)  # (sled fan power it was summed with, rack overhead + fans [W])

    def power(self, u, clock, on, t_die, held, p_limit=None):
        """Device power for utilisation ``u`` (devices,) or (sub-steps, devices) [W].

        A device is active when a job holds it (``held``) or it has work (u > 0), idle
        otherwise (:func:`twin.power.device.device_power`). Within a step the power limit may be
        exceeded by at most the part's excursion (the firmware's fast protection clamps there);
        the power-limit governor lowers the clock for the next step. ``p_limit`` is the limit in
        force [W] (default the scenario's, ``chip["p_limit"]``).
        """
        return self.kernel.power(u, clock, on, t_die, held, p_limit)

    def step(self, t: float, dt: float, state) -> None:
        clock, on, repair = state["device.clock_limit"], ~state["device.tripped"], state["device.repair"]
        if repair is not None and repair.size:  # a restarted job's devices are back, at full clock
            on[repair] = True
            clock = clock.copy()
            clock[repair] = 1.0
        u = state["device.u"]
        p_sub = self.power(u, clock, on, state["device.t_die"], state["device.held"], state["device.p_limit"])
        # compute work demanded and done this step (device-seconds at full clock)
        uw = step_mean(u) * self.compute
        tot = self.totals
        tot.demand_device_seconds += float(uw.sum()) * dt
        tot.lost_work_device_seconds += float((1.0 - (clock if on.all() else clock * on)) @ uw) * dt
        if self.smoothing:
            raw = p_sub
            p_sub = self._smooth(p_sub, on, state["device.p_floor"], state["device.ramp"])
            self.totals.e_smoothing += float((p_sub - raw).sum()) * self.h_w
        p_sub = self._shelf_limit(p_sub, state)
        p_step = step_mean(p_sub)
        state["device.p"] = p_sub
        state["device.p_step"] = p_step
        self.totals.e_device += p_step.sum() * dt
        state["device.clock"] = clock

    def initialise(self, state) -> None:
        n = self.sy.n_racks if self.sy is not None else 0
        state["rack.psu_overload"] = np.zeros(n)

    def _shelf_limit(self, p_sub, state):
        """Hold each rack within its healthy PSUs' rating (the shelf's overload policy).

        The rack's DC demand per sub-step is Σ devices + sled overhead + fans. Where it exceeds
        the rated output of the healthy PSUs, a ``cap`` shelf brakes the rack's devices at once
        (fast power brake: device power scaled by (capacity − overhead − fans) / Σ devices, the
        PSUs never deliver more than their rating) and a ``trip`` shelf's over-current
        protection takes the rack's devices down (off until the PSUs are restored; the
        management plane — overhead and fans — stays on the surviving PSUs).
        """
        sy = self.sy
        if sy is None:
            return p_sub
        cap = state["rack.shelf_capacity"]
        p_fan = state["sled.p_fan"]
        if self._fixed[0] is not p_fan:  # (a new array when the fans change)
            self._fixed = (p_fan, sy.rack_sum(sy.sled_overhead + p_fan))
        fixed = self._fixed[1]
        p_sled = np.add.reduceat(p_sub, sy.sled_device_start, axis=1)
        p_dev_rack = np.add.reduceat(p_sled, sy.rack_sled_start, axis=1)  # (n_sub, racks)
        over = p_dev_rack + fixed > cap * (1 + 1e-12)
        capped = over & ~sy.extra["rack_overload_trip"]  # trip shelves: Shelves' over-current trip
        if capped.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                scale = np.where(capped, np.clip((cap * (1 - 1e-12) - fixed) / p_dev_rack, 0.0, 1.0), 1.0)
            p_sub = p_sub * scale[:, sy.device_rack]
            p_sled = np.add.reduceat(p_sub, sy.sled_device_start, axis=1)
        state["sled.p_devices"] = p_sled  # the power shelves sum the same (n_sub, sleds)
        state["rack.psu_overload"] = over.mean(axis=0)
        return p_sub

    def _smooth(self, p_sub, on, floor, ramp):
        """Apply the jobs' power floors and ramp limits; return the smoothed powers [W]."""
        p = np.maximum(p_sub, floor * on)
        if np.isfinite(ramp).any():
            limit = ramp * self.h_w
            prev = p[0] if self.p_prev is None else self.p_prev
            out = np.empty_like(p)
            for k in range(p.shape[0]):  # sequential in time; vectorised over devices
                prev = np.clip(p[k], prev - limit, prev + limit) * on
                out[k] = prev
            p = out
        self.p_prev = p[-1]
        return p


class Governors(Component):
    """Thermal throttling, shutdown trips and power caps, acting at the end of each step.

    Parameters
    ----------
    system : System
        Built system (chip limits, rack and row power limits, device → rack/row maps).
    totals : Totals
        Running totals (throttled device-seconds, capped rack-seconds, the time some device is
        off: ``tripped_seconds``).
    kernel : NumpyKernel or NumbaKernel, optional
        Computes the power-limit clock (:mod:`twin.power.kernels`); default the numpy reference.

    Notes
    -----
    Reads the die temperatures and rack powers of the step just taken and sets the clock limit
    and the trips for the next one (:func:`~twin.power.governor.thermal_governor`,
    :func:`~twin.power.governor.shutdown_trip`, :func:`~twin.power.governor.cap_governor`).
    A restarted job's devices are cleared first. A device that tripped at its shutdown
    temperature restarts once its die has cooled below its throttle point (the node's automatic
    restart; a training job restarts its devices at the same point, :mod:`twin.workload.jobs`),
    so it comes back when its cooling does. The devices of a rack without input power (its PSUs
    tripped on over-current, or the UPS battery ran out) are off while it lasts and back on
    (at the clocks the governors allow) when the power is restored.
    """

    inputs = ("device.u", "device.t_die", "rack.p_ac", "device.repair", "rack.psu_tripped", "facility.battery_empty")
    outputs = (THROTTLED, RACK_THROTTLED, RACK_CAPPED, CLOCK_LIMIT, TRIPPED, P_LIMIT)
    phase = "controllers"

    def __init__(self, system, totals, kernel=None):
        self.sy = sy = system
        self.totals = totals
        self.kernel = kernel if kernel is not None else NumpyKernel(system.chip)
        n = sy.n_devices
        self.clock_thermal = np.ones(n)
        self.clock_power = np.ones(n)  # the power-limit governor's clock
        self.clock = np.ones(n)
        self.tripped = np.zeros(n, dtype=bool)  # shutdown trips not yet restarted
        self.unpowered = np.zeros(n, dtype=bool)  # devices of racks without input power
        self.ever_throttled = np.zeros(n, dtype=bool)
        self.ever_tripped = np.zeros(n, dtype=bool)
        self.rack_cap = np.ones(sy.n_racks)
        self.row_cap = np.ones(len(sy.row_names))
        self.limit = {"rack": sy.rack_power_limit.copy(), "row": sy.row_power_limit.copy()}
        #: Device power limits in force [W] (the scenario's; the ``device.power_limit`` control).
        self.p_limit = sy.chip["p_limit"].copy()
        self.capping = bool(np.isfinite(sy.rack_power_limit).any() or np.isfinite(sy.row_power_limit).any())
        self.controls = self._controls()
        self._tops = {c.key: c.high for c in self.controls}
        self.rack_devices = np.bincount(sy.device_rack, minlength=sy.n_racks)
        with np.errstate(invalid="ignore"):  # (a rack without devices: NaN, as the sums give)
            self._no_rack_throttled = np.zeros(sy.n_racks) / self.rack_devices
        self._no_rack_throttled.flags.writeable = False
        self.first_throttle = math.inf
        self.first_trip = math.inf

    def initialise(self, state) -> None:
        state["device.clock_limit"] = self.clock
        state["device.tripped"] = self.tripped
        state["device.p_limit"] = self.p_limit

    def settle(self, u, t_die, state) -> None:
        """Start at the clock that holds the first step's demand ``u`` within the power limits."""
        self.clock_power = self.kernel.clock_limit(u, t_die, self.p_limit)
        self.clock = np.minimum(self.clock_thermal, self.clock_power)
        state["device.clock_limit"] = self.clock

    def step(self, t: float, dt: float, state) -> None:
        sy, tot = self.sy, self.totals
        repair = state["device.repair"]
        if repair is not None and repair.size:
            self.tripped[repair] = False
            self.clock_thermal[repair] = 1.0
            self.clock_power[repair] = 1.0
        t_die = state["device.t_die"]
        throttled = self.clock_thermal < 1.0
        # Thermal throttling, the power limit (the clock that keeps the step's highest demand at
        # or under the limit in force) and shutdown trips, device by device.
        self.clock_thermal, self.clock_power, clock, tripped = self.kernel.govern(
            state["device.u"], t_die, self.clock_thermal, self.tripped, dt, self.p_limit)
        # A shutdown trip restarts once the die has cooled below the throttle point.
        self.tripped = tripped & ~(t_die < sy.chip["t_throttle"]) if tripped.any() else tripped
        capped = self.rack_cap < 1.0
        if self.capping:
            p_ac = step_mean(state["rack.p_ac"])
            self.rack_cap = cap_governor(self.rack_cap, p_ac, self.limit["rack"], dt)
            row_p = np.bincount(sy.rack_row, weights=p_ac, minlength=len(sy.row_names))
            self.row_cap = cap_governor(self.row_cap, row_p, self.limit["row"], dt)
            cap = np.minimum(self.rack_cap, self.row_cap[sy.rack_row])
            self.clock = np.minimum(clock, cap[sy.device_rack])
            capped = cap < 1.0
            tot.capped_rack_seconds += capped.sum() * dt
        else:
            self.clock = clock
        if self.first_throttle == math.inf and throttled.any():
            self.first_throttle = t
        # A rack without input power from the next step (its PSUs tripped, or the UPS battery is
        # empty): its devices are off while it lasts.
        if state["facility.battery_empty"][0]:
            self.unpowered[:] = True
        elif state["rack.psu_tripped"].any():
            self.unpowered = state["rack.psu_tripped"][sy.device_rack]
        elif self.unpowered.any():  # (every rack powered, the usual case: the mask stays all False)
            self.unpowered = np.zeros(sy.n_devices, dtype=bool)
        off = self.tripped | self.unpowered
        if off.any():
            if self.first_trip == math.inf:
                self.first_trip = t + dt
            self.ever_tripped |= off
            tot.tripped_seconds += dt  # some device off after the step: a broken constraint
        n_thr = np.count_nonzero(throttled)
        state["device.throttled"] = throttled
        # (no device throttled, the usual case: the rack shares are the zeros the sums would give)
        state["rack.throttled"] = (sy.rack_sum(sy.sled_sum(throttled.astype(float))) / self.rack_devices
                                   if n_thr else self._no_rack_throttled)
        state["rack.capped"] = capped
        state["device.clock_limit"] = self.clock
        state["device.tripped"] = off
        tot.throttled_device_seconds += n_thr * dt
        if n_thr:
            self.ever_throttled |= throttled
        tot.t_die_max = max(tot.t_die_max, t_die.max())

    def _controls(self) -> tuple[Control, ...]:
        """Device power limits (from the part's lowest settable limit, else its idle power
        (:func:`twin.sim.build.build_system`), to its TDP: the power-limit governor holds them); rack and row AC power limits, from the
        idle to twice the design power of what they limit (the top of the range: no limit; the
        cap governor holds them)."""
        sy = self.sy
        device_low = np.minimum(sy.chip["p_limit_min"], sy.chip["p_limit"])
        idle = sy.rack_sum(sy.sled_sum(sy.chip["p_idle"]) + sy.sled_overhead + sy.sled_fan_power)
        design = sy.rack_sum(sy.sled_sum(sy.chip["tdp"]) + sy.sled_overhead + sy.sled_fan_power)
        n_rows = len(sy.row_names)
        row_idle, row_design = (np.bincount(sy.rack_row, weights=v, minlength=n_rows) for v in (idle, design))
        return (Control("device", "power_limit", "W", "device power limit (the power-limit governor's)",
                        device_low, sy.chip["tdp"].copy()),
                Control("rack", "power_limit", "W", "rack AC power limit (top of the range: none)",
                        idle, LIMIT_RANGE_TOP * design),
                Control("row", "power_limit", "W", "row AC power limit (top of the range: none)",
                        row_idle, LIMIT_RANGE_TOP * row_design))

    def control(self, key: str) -> np.ndarray:
        group = key.partition(".")[0]
        if key not in self._tops:
            return super().control(key)
        if group == "device":
            return self.p_limit.copy()
        return np.minimum(self.limit[group], self._tops[key])

    def set_control(self, key: str, values) -> None:
        """``"device.power_limit"`` [W] (from the next step on, through the power-limit
        governor); ``"rack.power_limit"`` or ``"row.power_limit"`` [W], where a value at the
        top of the range removes the limit."""
        if key not in self._tops:
            super().set_control(key, values)
        top = self._tops[key]
        if key == "device.power_limit":
            self.p_limit[:] = np.minimum(np.broadcast_to(np.asarray(values, dtype=float), top.shape), top)
            return
        values = np.broadcast_to(np.asarray(values, dtype=float), top.shape)
        self.limit[key.partition(".")[0]] = np.where(values >= top, np.inf, values)
        capping = bool(np.isfinite(self.limit["rack"]).any() or np.isfinite(self.limit["row"]).any())
        if not capping:
            self.rack_cap[:] = 1.0
            self.row_cap[:] = 1.0
        self.capping = capping


def power_limits(rules, system, catalog) -> np.ndarray:
    """Per-device power limits [W]: the TDP, lowered by a scenario's ``power_limits`` rules.

    Raises :class:`FieldError` for a rule that selects no devices or sets a limit below the
    part's lowest settable power limit (catalogue ``p_limit_min``).
    """
    from twin.workload.profile import select_devices

    sy, tdp = system, system.chip["tdp"]
    limit = tdp.copy()
    floor = np.array([catalog.chips[k].p_limit_min.si if catalog.chips[k].p_limit_min else 0.0
                      for k in sy.device_kind])
    for i, rule in enumerate(rules):
        mask = select_devices(rule.select, sy)
        if not mask.any():
            raise FieldError(("power_limits", i, "select"), "selects no devices")
        new = np.full(sy.n_devices, rule.limit) if rule.limit is not None else rule.fraction * tdp
        low = mask & (new < floor)
        if low.any():
            j = int(np.argmax(low))
            raise FieldError(("power_limits", i), f"{new[j]:.0f} W is below the lowest power limit "
                             f"{floor[j]:.0f} W of '{sy.device_kind[j]}'")
        limit[mask] = np.minimum(new[mask], tdp[mask])
    return limit
