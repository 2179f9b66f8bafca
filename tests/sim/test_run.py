"""Whole runs: energy balance, fast vs reference, throttling, determinism."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from tests.conftest import SCENARIOS
from twin.export.dataset import build_tree
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

QUICKSTART = SCENARIOS / "quickstart.yaml"


def test_energy_closes_over_quickstart(run_scenario):
    """AC energy in = heat to liquid + heat to air + change in stored heat, within 0.1 %.

    Heat to liquid and air are summed from the fluid nodes' step-mean temperatures
    (ṁ·c_p·ΔT), independently of the electrical side; the stored heat is Σ C·T of all nodes.
    """
    sim = run_scenario(QUICKSTART)
    tot = sim.totals
    heat = tot.e_liquid + tot.e_air + (tot.stored_end - tot.stored_start)
    assert tot.e_ac > 0
    assert abs(tot.e_ac - heat) / tot.e_ac < 1e-3
    # The recorded facility power integrates to the same energy (1 s intervals of 1 s steps).
    tree = build_tree(sim)
    assert float(tree["facility"]["p_it"].sum()) * sim.h == pytest.approx(tot.e_ac, rel=1e-9)


def test_fast_and_reference_paths_agree():
    """Die temperatures of the exact exponential integrator and solve_ivp (BDF) agree within 0.05 K.

    A shortened quickstart: the training swing starts at once and runs 3 minutes, so every step
    has a power transient.
    """
    workload = [
        {"select": {"kind": ["trn3"]}, "profile": [
            {"at": "0 s", "u": 0.1},
            {"at": "20 s", "swing": {"high": 0.95, "low": 0.25, "period": "10 s", "duty": 0.7}},
            {"at": "120 s", "u": 1.0}]},
        {"select": {"kind": ["graviton4"]}, "u": 0.5},
    ]
    over = {"time": {"duration": "180 s"}, "workload": workload,
            "record": {"device": "1 s", "rack": "1 s", "facility": "1 s", "cdu": "1 s"}}
    runs = {}
    for solver in ("fast", "reference"):
        sim = Simulation(load_scenario(QUICKSTART, over), solver=solver)
        sim.run()
        runs[solver] = build_tree(sim)
    a = runs["fast"]["device"]["t_die"].values
    b = runs["reference"]["device"]["t_die"].values
    assert np.max(np.abs(a - b)) < 0.05
    ra = runs["fast"]["rack"]["t_coolant_return"].values
    rb = runs["reference"]["rack"]["t_coolant_return"].values
    assert np.max(np.abs(ra - rb)) < 0.05


@pytest.mark.parametrize("supply", ["34 degC", "57 degC", "62 degC", "66 degC"])
def test_hot_coolant_throttles_but_does_not_trip(supply):
    """Raising the CDU supply until Trn3 passes its throttle point (90 °C) lowers clocks and power
    and keeps every die under its shutdown point (100 °C)."""
    over = {
        "time": {"duration": "15 min"},
        "cdus": [{"name": "cdu-1", "supply_temperature": supply}],
        "workload": [{"select": {"kind": ["trn3"]},
                      "profile": [{"at": "0 s", "u": 0.0}, {"at": "60 s", "u": 1.0}]}],
        "record": {"device": "1 s"},
    }
    sim = Simulation(load_scenario(QUICKSTART, over))
    sim.run()
    dev = build_tree(sim)["device"].to_dataset()
    trn3 = dev.where(dev.kind == "trn3", drop=True)
    last = trn3.isel(time=slice(-60, None)).mean("time")
    assert sim.totals.devices_tripped == 0
    assert float(trn3["t_die"].max()) < 100.0
    if supply == "34 degC":
        assert float(last["clock"].min()) == 1.0
        assert float(trn3["t_die"].max()) < 90.0
    else:
        # Hot enough to pass the throttle point at full load: clocks and power fall.
        assert float(last["clock"].max()) < 1.0
        assert float(last["p"].mean()) < 1000.0
        # Regulated at the top of the hysteresis band [87, 90] °C: the governor's clock rate is
        # proportional to the excess, so the die settles at the throttle point (0.5 K allows
        # for the last minute still converging).
        assert float(last["t_die"].max()) < 90.5
        assert float(last["t_die"].min()) > 87.0 - 0.5


def test_same_seed_same_dataset(tmp_path):
    over = {"time": {"duration": "10 min"}}
    trees = []
    for _ in range(2):
        sim = Simulation(load_scenario(QUICKSTART, over))
        sim.run()
        trees.append(build_tree(sim))
    for group in ("facility", "rack", "device", "cdu"):
        xr.testing.assert_identical(trees[0][group].to_dataset(), trees[1][group].to_dataset())
    assert trees[0].attrs == trees[1].attrs


def test_fast_and_reference_agree_on_hall_1k():
    """The benchmark hall (3,352 devices, jobs, plant) shortened to 40 s: the fast and the
    reference integrators agree within 0.05 K on every die."""
    trees = {}
    for solver in ("fast", "reference"):
        sim = Simulation(load_scenario(SCENARIOS / "bench" / "hall-1k.yaml",
                                       {"time": {"duration": "40 s"}, "record": {"device": "1 s"}}), solver=solver)
        sim.run()
        trees[solver] = build_tree(sim)
    a = trees["fast"]["device"]["t_die"].values
    b = trees["reference"]["device"]["t_die"].values
    assert np.max(np.abs(a - b)) < 0.05
