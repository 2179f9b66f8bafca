"""The KPIs of one control interval and the reward made of them.

Every term is a difference of the run's exact totals (:class:`~twin.sim.driver.Totals`) read at
the interval's two ends, so nothing is counted per thermal step here and the intervals of an
episode add up to the KPIs of the plain run:

- energies [J]: the facility's energy counters;
- throttled device-seconds and capped rack-seconds (the governors);
- work [device-s]: over compute devices (accelerators and CPUs), the work demanded Σ u·h
  (utilisation u) and the work lost to throttling, power caps and trips Σ u·(1 − f·on)·h
  (relative clock f, on 0 for a device that is off), kept by the chip power
  (``demand_device_seconds``, ``lost_work_device_seconds``); the work done is the
  difference, Σ u·f·on·h (device-seconds at full clock);
- violations [s]: h × the number of constraints broken, per thermal step: a device is shut
  down (tripped) or its rack without power; the cold aisle is outside the ASHRAE A1 allowable
  range; the facility power is above ``control.p_facility_limit`` (the sum of
  ``tripped_seconds``, ``cold_aisle_excursion_seconds`` and ``p_facility_over_limit_seconds``).

The reward is minus the interval's cost::

    r = −(c_E·E_facility + c_T·S_throttled + c_W·W_lost + c_V·V)

with the prices of ``control.reward`` (:class:`twin.scenario.control.RewardSpec`), in the
currency the prices are written in.
"""

from __future__ import annotations

from twin.scenario.control import ENERGY_PRICE, RewardSpec

#: Facility energy counters read from :attr:`Totals.energy` ("group.name" of the power).
ENERGY_KEYS = {"energy_facility_J": "facility.p_facility", "energy_it_J": "facility.p_it",
               "energy_cooling_J": "facility.p_cooling"}
#: Totals read as differences over the interval (KPI name → :class:`~twin.sim.driver.Totals` field).
TOTAL_KEYS = {"throttled_device_seconds": "throttled_device_seconds", "capped_rack_seconds": "capped_rack_seconds",
              "demand_device_seconds": "demand_device_seconds", "lost_work_device_seconds": "lost_work_device_seconds"}
#: The totals of the time each constraint is broken [s] (their sum is the violation term).
VIOLATIONS = ("tripped_seconds", "cold_aisle_excursion_seconds", "p_facility_over_limit_seconds")


def _energy(totals, key: str) -> float:
    """The run's energy so far of the power ``key`` [J]."""
    e = totals.energy.get(key)
    return float(e.sum()) if e is not None else 0.0


class IntervalAccount:
    """Counts one control interval of a :class:`~twin.sim.driver.Simulation` from its totals.

    Parameters
    ----------
    sim : Simulation
    reward : RewardSpec
    energy_price : float, optional
        Scenario's electricity price [1/J], used when ``reward.energy`` is not given.

    Notes
    -----
    The facility power limit of the violations is the scenario's ``control.p_facility_limit``,
    counted by the simulation's power chain (:class:`~twin.power.chain.PowerChain`).
    """

    def __init__(self, sim, reward: RewardSpec, energy_price: float | None):
        self.prices = {"energy": reward.energy if reward.energy is not None
                       else energy_price if energy_price is not None else ENERGY_PRICE,
                       "throttled": reward.throttled, "lost_work": reward.lost_work,
                       "violation": reward.violation}
        #: Facility power above which each step is a violation [W] (None: no limit).
        self.p_limit = sim.chain.p_facility_limit

    def start(self, sim) -> None:
        """Read the totals at the interval's start."""
        tot = sim.totals
        self.t0 = sim.time
        self.energy0 = {k: _energy(tot, key) for k, key in ENERGY_KEYS.items()}
        self.totals0 = {k: getattr(tot, f) for k, f in TOTAL_KEYS.items()}
        self.violation0 = sum(getattr(tot, f) for f in VIOLATIONS)

    def kpis(self, sim, t_die_max: float) -> dict:
        """The interval's KPIs and reward terms (plain floats); ``t_die_max`` is the hottest die
        of the interval [degC] (:attr:`twin.control.spaces.IntervalPeak.max`)."""
        tot = sim.totals
        k = {"interval_s": sim.time - self.t0}
        k.update({name: _energy(tot, key) - self.energy0[name] for name, key in ENERGY_KEYS.items()})
        k["pue"] = k["energy_facility_J"] / k["energy_it_J"] if k["energy_it_J"] > 0 else 0.0
        d = {name: getattr(tot, f) - self.totals0[name] for name, f in TOTAL_KEYS.items()}
        k["throttled_device_seconds"] = d["throttled_device_seconds"]
        k["capped_rack_seconds"] = d["capped_rack_seconds"]
        k["work_device_seconds"] = d["demand_device_seconds"] - d["lost_work_device_seconds"]
        k["lost_work_device_seconds"] = d["lost_work_device_seconds"]
        k["violation_seconds"] = sum(getattr(tot, f) for f in VIOLATIONS) - self.violation0
        k["t_die_max_degC"] = float(t_die_max)
        p = self.prices
        cost = {"energy": p["energy"] * k["energy_facility_J"],
                "throttled": p["throttled"] * k["throttled_device_seconds"],
                "lost_work": p["lost_work"] * k["lost_work_device_seconds"],
                "violation": p["violation"] * k["violation_seconds"]}
        k.update({f"cost_{name}": float(v) for name, v in cost.items()})
        k["cost"] = float(sum(cost.values()))
        return {name: float(v) for name, v in k.items()}
