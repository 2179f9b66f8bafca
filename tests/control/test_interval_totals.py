"""The interval KPIs of twin.control from the simulation's totals, against a count per thermal step.

The environment reads work, lost work and violations as differences of the run's totals
(:class:`twin.sim.driver.Totals`, kept by the chip power, the governors, the rack thermal
model and the power chain) at an interval's two ends. The reference here counts them the
direct way: after every thermal step (``Simulation.advance(each=...)``), from that step's
utilisation, clock, trips, cold aisle and facility power. The scenario throttles, trips,
breaks a facility power limit part of the time and (with the allowable cold-aisle range
narrowed to below the quickstart's 25 degC aisle) has its cold aisle outside the range; it
runs in quiet blocks, per step (a rack power limit that caps) and, with numba, in quiet
blocks whose feedback loop is compiled (the totals then added per block from its arrays).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from tests.conftest import SCENARIOS  # noqa: E402
from twin.control import FacilityEnv  # noqa: E402
from twin.sim.component import step_mean  # noqa: E402

#: Full load on the Trainium3 devices; a throttle point of 81 degC and a shutdown at 81.1 degC
#: (the catalogue's are 90 and 100 degC) so that 50 degC CDU water (a die at ~84 degC, its HBM
#: stacks' share of the power beside it) throttles and trips them;
#: a facility limit the quickstart's 170 kW peak crosses part of the time.
OVERRIDES = {"time": {"duration": "15 min"},
             "workload": [{"select": {"kind": ["trn3"]}, "u": 1.0}, {"select": {"kind": ["graviton4"]}, "u": 0.3}],
             "catalog": {"chips": {"trn3": {"t_throttle": {"value": "81 degC", "source": "estimate"},
                                            "t_shutdown": {"value": "81.1 degC", "source": "estimate"}}}},
             "control": {"p_facility_limit": "163 kW"}}
#: The cold-aisle range of the test (the quickstart's aisle, 25 degC, is outside it).
AISLE = (15.0, 24.0)
#: Interval sums of a few hundred per-step terms against differences of run totals: they
#: differ by the rounding of the sums (~1e-16 relative per term).
RTOL = 1e-12


class PerStep:
    """Work, demand and violations of an interval, counted after every thermal step."""

    def __init__(self, sim):
        roles = {n: c.role for n, c in sim.loaded.catalog.chips.items()}
        self.weight = np.array([roles[k] in ("accelerator", "cpu") for k in sim.system.device_kind], dtype=float)
        self.limit = sim.scenario.control.p_facility_limit
        self.h = sim.h
        self.intervals = []

    def start(self, sim) -> None:
        self.work = self.demand = self.violation = 0.0
        tripped = sim.state["device.tripped"]
        self.off = tripped.copy() if tripped.any() else None  # devices off at the next step's start

    def after_step(self, state) -> None:
        h = self.h
        uw = step_mean(state["device.u"]) * self.weight
        clock = state["device.clock"]
        if self.off is not None:  # devices off at the step's start did no work
            clock = clock * ~self.off
        self.demand += float(uw.sum()) * h
        self.work += float(clock @ uw) * h
        tripped = state["device.tripped"]
        self.off = tripped.copy() if tripped.any() else None
        broken = int(self.off is not None)
        broken += not AISLE[0] <= state["facility.t_cold_aisle"][0] <= AISLE[1]
        broken += step_mean(state["facility.p_facility"])[0] > self.limit
        self.violation += broken * h

    def close(self) -> None:
        self.intervals.append({"work_device_seconds": self.work, "demand": self.demand,
                               "violation_seconds": self.violation})


@pytest.mark.parametrize("capped, kernel", [(False, "numpy"), (True, "numpy"), (False, "numba")],
                         ids=["quiet-blocks", "per-step", "compiled-loop"])
def test_interval_totals_equal_a_per_step_count(monkeypatch, capped, kernel):
    if kernel == "numba":
        pytest.importorskip("numba")
    monkeypatch.setenv("TWIN_KERNEL", kernel)
    monkeypatch.setattr("twin.thermal.racks.COLD_AISLE_RANGE", AISLE)
    env = FacilityEnv(SCENARIOS / "quickstart.yaml", overrides=OVERRIDES)
    env.reset()
    sim = env.sim
    assert sim._quiet is not None  # the quickstart takes quiet blocks (unless a power limit caps)
    assert sim.block_kernel == kernel  # numba: the loop compiled (twin.sim.fused), its totals added per block
    ref = PerStep(sim)
    advance = sim.advance

    def counted(n, record=True, each=None):
        ref.start(sim)
        out = advance(n, record=record, each=ref.after_step)
        ref.close()
        return out

    sim.advance = counted
    infos = []
    for i in range(3):
        action = env.hold_action()
        if i >= 1:
            action["cdu.t_supply_set"] = np.array([50.0])
        if capped:
            action["rack.power_limit"] = np.full(2, 83e3)  # below the racks' ~84 kW at full load
        infos.append(env.step(action)[-1])
    assert len(ref.intervals) == 3
    for info, r in zip(infos, ref.intervals):
        assert math.isclose(info["work_device_seconds"], r["work_device_seconds"], rel_tol=RTOL)
        lost = max(r["demand"] - r["work_device_seconds"], 0.0)
        assert math.isclose(info["lost_work_device_seconds"], lost, rel_tol=RTOL, abs_tol=RTOL * r["demand"])
        assert info["violation_seconds"] == r["violation_seconds"]  # whole seconds at a 1 s step
    later = infos[1:]
    # every term is exercised: throttling, lost work, trips and the facility limit (part of the
    # time: fewer than all three constraints broken every step), the cold aisle (all the time)
    assert all(i["throttled_device_seconds"] > 0 and i["lost_work_device_seconds"] > 0 for i in later)
    assert sim.totals.tripped_seconds > 0
    assert 0 < sim.totals.p_facility_over_limit_seconds < sim.time
    assert sim.totals.cold_aisle_excursion_seconds == sim.time
    # the first interval, on the scenario's water and under the cap, loses nothing: exactly 0
    assert infos[0]["lost_work_device_seconds"] == 0.0
    assert bool(sim.totals.capped_rack_seconds > 0) == capped  # (capping: the per-step path)
    assert (sim._quiet.fused is not None) == (kernel == "numba")  # the compiled loop took the blocks
