"""The KPIs of one control interval and the reward made of them.

Energies, throttled device-seconds and capped rack-seconds are differences of the run's exact
totals (:class:`~twin.sim.driver.Totals`), so the intervals of an episode add up to the KPIs of
the plain run. Work and violations are counted here, per thermal step:

- work [device-s]: Σ over compute devices (accelerators and CPUs) of u·f·on·h, the demanded
  utilisation u done at relative clock f (device-seconds at full clock); the work demanded is
  Σ u·h, and the difference is the work lost to throttling, power caps and trips.
- violations [s]: per thermal step, h × the number of constraints broken: a device is shut
  down (tripped); the cold aisle is outside the ASHRAE A1 allowable range; the facility power
  is above ``control.p_facility_limit``.

The reward is minus the interval's cost::

    r = −(c_E·E_facility + c_T·S_throttled + c_W·W_lost + c_V·V)

with the prices of ``control.reward`` (:class:`twin.scenario.control.RewardSpec`), in the
currency the prices are written in.
"""

from __future__ import annotations

import numpy as np

from twin.cooling.cdu import COLD_AISLE_RANGE
from twin.scenario.control import ENERGY_PRICE, RewardSpec
from twin.sim.component import step_mean

#: Facility energy counters read from :attr:`Totals.energy` ("group.name" of the power).
ENERGY_KEYS = {"energy_facility_J": "facility.p_facility", "energy_it_J": "facility.p_it",
               "energy_cooling_J": "facility.p_cooling"}
COMPUTE_ROLES = ("accelerator", "cpu")


def _energy(totals, key: str) -> float:
    """The run's energy so far of the power ``key`` [J]."""
    e = totals.energy.get(key)
    return float(e.sum()) if e is not None else 0.0


class IntervalAccount:
    """Counts one control interval of a :class:`~twin.sim.driver.Simulation`.

    Parameters
    ----------
    sim : Simulation
    reward : RewardSpec
    energy_price : float, optional
        Scenario's electricity price [1/J], used when ``reward.energy`` is not given.
    p_facility_limit : float, optional
        Facility power above which each step is a violation [W].
    """

    def __init__(self, sim, reward: RewardSpec, energy_price: float | None, p_facility_limit: float | None):
        roles = {n: c.role for n, c in sim.loaded.catalog.chips.items()}
        #: 1 for compute devices (accelerators and CPUs), 0 for the network [1].
        self.weight = np.array([roles[k] in COMPUTE_ROLES for k in sim.system.device_kind], dtype=float)
        self.prices = {"energy": reward.energy if reward.energy is not None
                       else energy_price if energy_price is not None else ENERGY_PRICE,
                       "throttled": reward.throttled, "lost_work": reward.lost_work,
                       "violation": reward.violation}
        self.p_limit = p_facility_limit
        self.cold_aisle = "facility.t_cold_aisle" in sim.state.vars

    def start(self, sim) -> None:
        tot = sim.totals
        self.t0, self.h = sim.time, sim.h
        self.energy0 = {k: _energy(tot, key) for k, key in ENERGY_KEYS.items()}
        self.throttled0 = tot.throttled_device_seconds
        self.capped0 = tot.capped_rack_seconds
        self.work = self.demand = self.violation = 0.0
        tripped = sim.state["device.tripped"]
        self.off = tripped.copy() if tripped.any() else None  # devices off at the next step's start

    def after_step(self, state) -> None:
        """Count the thermal step just taken (call after each :meth:`Simulation.step`; the
        ``each`` of :meth:`Simulation.advance`)."""
        h = self.h
        u = state["device.u"]
        u = u[0] if u.shape[0] == 1 else u.mean(axis=0)
        uw = u * self.weight
        clock = state["device.clock"]
        if self.off is not None:  # devices tripped at the step's start did no work
            repair = state["device.repair"]
            on = ~self.off
            if repair is not None and repair.size:
                on[repair] = True
            clock = clock * on
        self.demand += float(uw.sum()) * h
        self.work += float(clock @ uw) * h
        tripped = state["device.tripped"]
        self.off = tripped.copy() if tripped.any() else None
        broken = self.off is not None
        if self.cold_aisle:
            t = state["facility.t_cold_aisle"][0]
            broken += not COLD_AISLE_RANGE[0] <= t <= COLD_AISLE_RANGE[1]
        if self.p_limit is not None:
            broken += step_mean(state["facility.p_facility"])[0] > self.p_limit
        if broken:
            self.violation += float(broken) * h

    def kpis(self, sim, t_die_max: float) -> dict:
        """The interval's KPIs and reward terms (plain floats); ``t_die_max`` is the hottest die
        of the interval [degC] (:attr:`twin.control.spaces.IntervalPeak.max`)."""
        tot = sim.totals
        k = {"interval_s": sim.time - self.t0}
        k.update({name: _energy(tot, key) - self.energy0[name] for name, key in ENERGY_KEYS.items()})
        k["pue"] = k["energy_facility_J"] / k["energy_it_J"] if k["energy_it_J"] > 0 else 0.0
        k["throttled_device_seconds"] = tot.throttled_device_seconds - self.throttled0
        k["capped_rack_seconds"] = tot.capped_rack_seconds - self.capped0
        k["work_device_seconds"] = self.work
        k["lost_work_device_seconds"] = max(self.demand - self.work, 0.0)
        k["violation_seconds"] = self.violation
        k["t_die_max_degC"] = float(t_die_max)
        p = self.prices
        cost = {"energy": p["energy"] * k["energy_facility_J"],
                "throttled": p["throttled"] * k["throttled_device_seconds"],
                "lost_work": p["lost_work"] * k["lost_work_device_seconds"],
                "violation": p["violation"] * k["violation_seconds"]}
        k.update({f"cost_{name}": float(v) for name, v in cost.items()})
        k["cost"] = float(sum(cost.values()))
        return {name: float(v) for name, v in k.items()}
