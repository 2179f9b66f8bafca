"""The run loop in blocks between boundaries: a block is its single steps, to the bit.

``Simulation.block_length`` ends a block before a due event and before a multi-rate component
(the facility plant) updates; ``run`` and ``advance`` take the steps in such blocks, ``step``
one at a time. Both must give the same arithmetic in the same order, so every recorded
variable and every total is compared with tolerance 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SCENARIOS
from tests.sim.test_kpi_regression import _FULL, _QUICK_EVENTS
from twin.export.dataset import build_tree
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

#: Short spans that still cross each scenario's boundaries: the quickstart's idle → swing change
#: (10 min), the pump trip (moved to 20 s) with a 100 ms workload step and a job, the training
#: swings' sub-second power, and the hall's plant updating every 10 steps with jobs and events.
CASES = {
    "quickstart": ("quickstart.yaml", {"time": {"duration": "11 min"}}),
    "cdu-pump-trip": ("cdu-pump-trip.yaml", {"time": {"duration": "1 min"},
                                             "events": [{"at": "20 s", "kind": "cdu_pump_trip", "target": "cdu-1",
                                                         "count": 2, "failover": False}]}),
    "training-swings": ("training-swings.yaml", {"time": {"duration": "3 min"}}),
    # every rack-level event of the quickstart, under full load so the PSU failure overloads
    # its shelves: quiet blocks stop at each event, at the trip and while the pipes carry a
    # set-point change, and resume after
    "quickstart-events": ("quickstart.yaml", {"time": {"duration": "9 min"}, "events": _QUICK_EVENTS,
                                              "workload": _FULL}),
    "gb300-rack": ("gb300-rack.yaml", {"time": {"duration": "4 min"}}),
    "hall-1k": ("bench/hall-1k.yaml", {"time": {"duration": "2 min"},
                                       "events": [{"at": "37 s", "kind": "cdu_pump_trip", "target": "cdu-1",
                                                   "count": 1, "failover": False}]}),
    # the Frontier shape at two cabinets: a training job (5 s iterations, past its 20-minute
    # profile change into the swing) on a dry-cooler plant updating every 10 steps, with a
    # UPS and transformers, through a utility outage (the UPS on battery: per step) and back
    "frontier": ("bench/frontier.yaml", {
        "time": {"duration": "3 min", "start": "2026-07-01T00:19:00"},
        "cdus": [{"name": "cdu", "template": "in-row-1350kw", "supply_temperature": "34 degC", "count": 1}],
        "halls": [{"name": "hall-1", "rows": [{"name": "row-1", "racks": [
            {"name": "cab", "template": "frontier-cabinet", "count": 2, "cdu": "cdu"}]}]}],
        "jobs": [{"kind": "training", "name": "app", "devices": {"kind": "mi250x", "count": 896},
                  "iteration_time": "5 s", "compute_share": 0.8,
                  "checkpoint": {"interval": "1 min", "duration": "10 s"}}],
        "events": [{"at": "95 s", "kind": "utility_outage", "duration": "20 s"}],
        "record": {"device": "10 s", "sled": "10 s"}}),
    # the cluster-100k shape (one synchronous job over every Trn3, no plant) at two UltraServers
    "cluster-100k": ("bench/cluster-100k.yaml", {
        "time": {"duration": "2 min"},
        "cdus": [{"name": "cdu", "template": "in-row-1350kw", "supply_temperature": "34 degC", "count": 1}],
        "halls": [{"name": "hall-1", "rows": [{"name": "row-1", "racks": [
            {"name": "us", "template": "trn3-gen2-ultraserver", "count": 2, "cdu": "cdu"}]}]}],
        "jobs": [{"kind": "training", "name": "frontier", "devices": {"kind": "trn3", "count": 288},
                  "iteration_time": "4 s", "compute_share": 0.75, "tokens_per_iteration": 16777216,
                  "checkpoint": {"interval": "1 min", "duration": "15 s"}}]}),
    # 256 air-cooled A100 SXM with HBM nodes (device.t_hbm recorded)
    "seren-fleet": ("seren-fleet.yaml", {"time": {"duration": "3 min"}}),
}


def _sim(case):
    path, over = CASES[case]
    return Simulation(load_scenario(SCENARIOS / path, over))


#: The cases the quiet-block path (twin.sim.block) takes: all but the pump trip, whose plant
#: steps every thermal step (it has no steps between its updates to make quiet).
QUIET = set(CASES) - {"cdu-pump-trip"}


@pytest.mark.parametrize("case", list(CASES))
def test_blocks_are_the_single_steps(case):
    a, b = _sim(case), _sim(case)
    assert (b._quiet is not None) == (case in QUIET)
    if b._quiet is not None:  # the quiet blocks' per-step loop (the compiled one: test_fused_loop_is_the_reference)
        a._quiet._compile = b._quiet._compile = False
    while a.step_index < a.n_steps:
        a.advance(1)  # (as run does, with BLAS on the run loop's threads)
    a.run()  # (nothing left: finalises)
    b.run()
    ta, tb = build_tree(a), build_tree(b)
    for group in ("facility", "cdu", "rack", "sled", "device", "job"):
        if group not in ta.children:
            continue
        for name, var in ta[group].data_vars.items():
            np.testing.assert_array_equal(var.values, tb[group][name].values, err_msg=f"{case} {group}.{name}")
    for key, e in a.totals.energy.items():
        np.testing.assert_array_equal(e, b.totals.energy[key], err_msg=key)
    for f in ("e_device", "e_dc", "e_liquid", "e_air", "t_die_max", "stored_end", "throttled_device_seconds",
              "demand_device_seconds", "lost_work_device_seconds", "tripped_seconds", "cold_aisle_excursion_seconds",
              "p_facility_over_limit_seconds"):
        assert getattr(a.totals, f) == getattr(b.totals, f), f
    assert a.event_log == b.event_log
    if case in QUIET:  # most steps were quiet (not the plant's updates, events, trips)
        assert b._quiet.steps > b.n_steps // 2, (b._quiet.steps, b.n_steps)


def test_block_boundaries():
    """Blocks end before a due event and before the plant's update every 10 steps."""
    sim = _sim("hall-1k")
    assert sim.schedule.steps_to_update() == 10  # the plant updates on the first step
    lengths = []
    while sim.step_index < sim.n_steps:
        k = sim.block_length(1000)
        lengths.append((sim.step_index, k))
        sim.advance(k)
    starts = [i for i, _ in lengths]
    assert all(k <= 10 for _, k in lengths)
    assert all(i % 10 == 0 for i in starts if i not in (37,))  # the plant's updates: steps 0, 10, 20, …
    assert 37 in starts  # the pump trip (at 37 s) is due at step 37 (its start is < 37 s + 1 s)
    assert sum(k for _, k in lengths) == sim.n_steps
    quick = _sim("quickstart")
    assert quick.schedule.steps_to_update() is None
    assert quick.block_length(5000) == 5000


@pytest.mark.parametrize("kernel", ["numpy", "numba"])
def test_plant_updates_at_the_end_of_quiet_blocks(kernel):
    """The plant's update step is the last step of a quiet block (its new outputs are the next
    block's boundaries), not a step through every component: hall-1k's plant every 10 s takes
    blocks of 10 steps, each ending on an update (steps 0, 10, 20, …), except around the pump
    trip at 37 s (the event starts a block; its CDUs' supply pipes carry the change for a few
    steps). The values are those of the single steps (test_blocks_are_the_single_steps:
    hall-1k and the Frontier shape to the bit on the numpy loop; test_fused_loop_is_the_reference:
    the compiled loop to 1e-11)."""
    if kernel == "numba":
        pytest.importorskip("numba")
    path, over = CASES["hall-1k"]
    sim = Simulation(load_scenario(SCENARIOS / path, over), kernel=kernel)
    updates, blocks = [], []
    multi, run = sim.schedule.step_multi, sim._quiet.run
    sim.schedule.step_multi = lambda *a: updates.append(sim.schedule.steps_done) or multi(*a)
    sim._quiet.run = lambda k, *a: blocks.append((sim.step_index, k)) or run(k, *a)
    assert sim.quiet_length(1000) == 1  # the plant updates on the first step: a block of one
    sim.run()
    assert all(i % 10 == 0 for i in updates)
    assert len(updates) >= 10, updates  # of the 12 updates (steps 0 … 110)
    assert sim._quiet.steps > 100 and all(k <= 10 for _, k in blocks)
    assert sum(1 for i, k in blocks if i % 10 == 1 and k == 10) >= 8


#: Cases of the compiled quiet-block loop (twin.sim.fused) against the per-step numpy reference:
#: the quickstart across its idle → swing change, the GB300 rack, the training swings' 1,152
#: chips with their 0.5 Hz gang swing as open-loop rules at a 100 ms workload step (ten
#: sub-steps per thermal step; the scenario's job is what the rules stand for), the quickstart's
#: rack events at full load, hall-1k's three rack kinds (3,352 devices) with its plant updating
#: every 10 steps and its workload rules without the jobs, and a PSU failure at 60 s (12 of rack
#: us1-a's 24 PSUs) followed by
#: full load at 150 s, in the middle of a block: its shelves trip on over-current (``trip`` policy) or hold the rack at
#: their rating (``cap``); the compiled loop stops before that step and the per-step loop takes it.
_SWING = [{"select": {"kind": ["trn3"]},
           "profile": [{"at": "0 s", "swing": {"high": 0.95, "low": 0.2, "period": "2 s", "duty": 0.7}}]},
          {"select": {"kind": ["graviton4"]}, "u": 0.3}]
_SHELF = {"time": {"duration": "4 min"},
          "events": [{"at": "60 s", "kind": "psu_failure", "target": "us1-a", "count": 12, "duration": "3 min"}],
          "workload": [{"select": {"kind": ["trn3"]}, "profile": [{"at": "0 s", "u": 0.3}, {"at": "150 s", "u": 1.0}]},
                       {"select": {"kind": ["graviton4"]}, "u": 0.3}]}


def _mixed(water: str, rate: str, start: str) -> dict:
    """scenarios/mixed-hall.yaml at one rack of each kind, 2 min, the GPUs' water at ``water``
    and the inference pool's arrivals at ``rate`` from ``start``."""
    return {
        "time": {"duration": "2 min"},
        "cdus": [{"name": "cdu-trn", "template": "in-row-1350kw", "supply_temperature": "34 degC"},
                 {"name": "cdu-gpu", "template": "in-row-1350kw", "supply_temperature": water}],
        "halls": [{"name": "hall-1", "rows": [
            {"name": "row-trn", "racks": [{"name": "us", "template": "trn3-gen2-ultraserver", "count": 1,
                                           "cdu": "cdu-trn"}]},
            {"name": "row-gpu", "racks": [{"name": "nvl", "template": "gb300-nvl72", "count": 1, "cdu": "cdu-gpu"}]},
            {"name": "row-cpu", "racks": [{"name": "cpu", "template": "graviton-rack", "count": 1}]}]}],
        "jobs": [{"kind": "training", "name": "pretrain", "devices": {"kind": "trn3", "count": 144},
                  "iteration_time": "3 s", "compute_share": 0.7, "tokens_per_iteration": 2097152,
                  "checkpoint": {"interval": "1 min", "duration": "10 s"}},
                 {"kind": "inference", "name": "chat", "devices": {"kind": "gb300", "count": 72}, "replica_size": 8,
                  "start": start, "model": {"params": 400.0e9, "format": "fp8", "kv_bytes_per_token": 245760},
                  "arrivals": {"rate": rate}},
                 {"kind": "cpu", "name": "dataprep", "devices": {"kind": "graviton4", "select": {"row": ["row-cpu"]}},
                  "profile": [{"at": "0 min", "u": 0.6}]}]}


FUSED = {
    "quickstart": CASES["quickstart"],
    "gb300-rack": CASES["gb300-rack"],
    "training-swings-rules": ("training-swings.yaml", {"time": {"duration": "2 min"}, "jobs": [],
                                                       "workload": _SWING}),
    "quickstart-events": CASES["quickstart-events"],
    "hall-1k-rules": ("bench/hall-1k.yaml", {"time": {"duration": "2 min"}, "jobs": []}),
    "shelf-trip": ("quickstart.yaml", _SHELF),
    "shelf-cap": ("quickstart.yaml", _SHELF),
    # with jobs (their demand written ahead while every gang runs at full clock): hall-1k's
    # training job, CPU batch job and rules through a CDU pump trip; the Frontier and
    # cluster-100k shapes (checkpoints every minute); the training swings at a 100 ms workload
    # step on 62 degC water, where the gang throttles and the blocks stop before the step
    # that reads a lowered clock (the per-step loop takes the job while it is slowed)
    "hall-1k": CASES["hall-1k"],
    "frontier": CASES["frontier"],
    "cluster-100k": CASES["cluster-100k"],
    "training-swings-hot": ("training-swings.yaml", {
        "time": {"duration": "3 min"},
        "cdus": [{"name": "cdu-1", "template": "in-row-1350kw", "supply_temperature": "62 degC"},
                 {"name": "cdu-2", "template": "in-row-1350kw", "supply_temperature": "62 degC"}],
        "jobs": [{"kind": "training", "name": "pretrain", "devices": {"kind": "trn3", "count": 1152},
                  "iteration_time": "2 s", "compute_share": 0.7, "u_compute": 0.95, "u_collective": 0.2,
                  "tokens_per_iteration": 4194304, "checkpoint": {"interval": "1 min", "duration": "10 s"}}]}),
    # sleds with HBM nodes: 256 air-cooled A100 SXM, device.t_hbm recorded and its peak kept
    "seren-fleet": CASES["seren-fleet"],
    # the mixed hall at one rack of each kind (548 devices): a Trn3 gang, a GB300 inference pool
    # (9 replicas of 8, Poisson arrivals at a 100 ms workload step, started at 25 s: the block
    # before it stops at its start) and Graviton batch; the pool is served ahead for each block
    # while it runs at full clock. On 70 degC water at 100 requests/s its GPUs slow within
    # 20 s: the block that reaches that step stops there and the pool is put back as after the
    # steps taken (its request table, tokens and progress then come from clocks a few ulp apart)
    "mixed-hall": ("mixed-hall.yaml", _mixed("34 degC", "40 1/s", "25 s")),
    "mixed-hall-hot": ("mixed-hall.yaml", _mixed("70 degC", "100 1/s", "0 s")),
}


@pytest.mark.parametrize("case", list(FUSED))
def test_fused_loop_is_the_reference(case):
    """Every recorded variable and total of the compiled loop equals the numpy reference's to
    1e-11 relative (of the variable's largest magnitude, so values that cancel to near zero
    are compared at the scale of the variable). Why not to the bit: numba's ``exp``/``pow``
    (libm) and the sled product summed row by row differ from numpy's SIMD ``exp`` and BLAS by
    a few ulp per step; over a few hundred steps of a stable network that stays below ~1e-14
    (measured: die temperatures 3e-15, rack heat 2e-14 on the quickstart). Discrete outcomes
    (throttled fractions, trips, the step count) are equal: a flip would need a die within
    ~1e-13 K of a threshold."""
    pytest.importorskip("numba")
    path, over = FUSED[case]
    ref = Simulation(load_scenario(SCENARIOS / path, over), kernel="numpy")
    fast = Simulation(load_scenario(SCENARIOS / path, over), kernel="numba")
    assert ref._quiet is not None and ref._quiet.compiled() is None and fast._quiet.fused is None
    assert fast._quiet.compiled() is not None  # (built at the first quiet block, or here)
    for sim in (ref, fast):
        sim.system.extra["rack_overload_trip"][:] = case == "shelf-trip"
    taken = []
    run = fast._quiet.fused.run
    fast._quiet.fused.run = lambda U, *a: taken.append((U.shape[0], run(U, *a))) or taken[-1][1]
    ref.run()
    fast.run()
    assert any(n > 1 for n, _ in taken), "the compiled loop took no block"
    if case.startswith("shelf"):  # the compiled loop stopped short at 150 s, mid-block
        assert any(t < n for n, t in taken)
        assert ref._quiet.shelves.overloaded[0] == (case == "shelf-trip")
        assert (ref.governors.first_trip == 151.0) == (case == "shelf-trip")
    ta, tb = build_tree(ref), build_tree(fast)
    for group in ("facility", "cdu", "rack", "sled", "device", "job"):
        if group not in ta.children:
            continue
        for name, var in ta[group].data_vars.items():
            x, y = var.values, tb[group][name].values
            if x.dtype.kind != "f" or name in ("throttled", "capped", "state"):
                np.testing.assert_array_equal(x, y, err_msg=f"{case} {group}.{name}")
                continue
            scale = np.nanmax(np.abs(x)) if np.isfinite(x).any() else 0.0
            np.testing.assert_allclose(y, x, rtol=0, atol=1e-11 * scale, equal_nan=True,
                                       err_msg=f"{case} {group}.{name}")
    for key, e in ref.totals.energy.items():
        np.testing.assert_allclose(fast.totals.energy[key], e, rtol=1e-11, err_msg=key)
    for f in ("e_device", "e_dc", "e_liquid", "e_air", "t_die_max", "stored_end", "demand_device_seconds",
              "lost_work_device_seconds"):
        assert getattr(fast.totals, f) == pytest.approx(getattr(ref.totals, f), rel=1e-11, abs=1e-9), f
    for f in ("throttled_device_seconds", "steps", "devices_throttled", "devices_tripped", "tripped_seconds",
              "cold_aisle_excursion_seconds", "p_facility_over_limit_seconds"):
        assert getattr(fast.totals, f) == getattr(ref.totals, f), f
    assert (fast.governors.first_throttle, fast.governors.first_trip) == (ref.governors.first_throttle,
                                                                          ref.governors.first_trip)
    if ref.racks.hbm:  # the HBM nodes' running peak (the KPIs' t_hbm_max), NaN where a device has none
        assert "device" not in tb.children or "t_hbm" in tb["device"].data_vars  # (recorded unless off)
        np.testing.assert_allclose(fast.racks.t_hbm_peak, ref.racks.t_hbm_peak, rtol=1e-11, equal_nan=True)
    if ref.jobs is not None:  # progress and tokens to the bit while the gangs run at full clock (a
        # throttled gang's clocks come from die temperatures a few ulp apart: 1e-11 relative)
        exact = ref.governors.first_throttle == np.inf
        for a, b in zip(ref.jobs.jobs, fast.jobs.jobs):
            ka, kb = a.kind.kpis(a), b.kind.kpis(b)
            assert (b.state, kb["failures"]) == (a.state, ka["failures"]), a.spec.name
            for x, y in ((a.progress, b.progress), (a.tokens, b.tokens), (ka["throttle_loss_s"], kb["throttle_loss_s"])):
                assert y == x if exact else y == pytest.approx(x, rel=1e-11, abs=1e-9), a.spec.name
            assert b.energy == pytest.approx(a.energy, rel=1e-11), a.spec.name
            pool = getattr(a.kind_state, "pool", None)
            if pool is not None and exact:  # (an inference pool served ahead: every request as served step by step)
                pd.testing.assert_frame_equal(b.kind_state.pool.request_table(), pool.request_table(), check_exact=True)
                assert pool.n_completed > 100
        if case.endswith("hot"):  # the gang throttles from 17 s: blocks stop at a lowered clock
            assert ref.governors.first_throttle < 30.0 and any(t < n for n, t in taken)
        else:
            assert sum(t for _, t in taken) > ref.n_steps // 2, "the compiled loop took under half the steps"


@pytest.mark.parametrize("case", ["mixed-hall-hot"])
def test_fused_loop_in_tiles(case, monkeypatch):
    """The compiled loop in tiles of one rack each (temporal blocking, :func:`twin.sim.fused._loop`)
    equals it as one tile to the bit: every recorded variable and total at tolerance 0. The
    case stops blocks early (its gang throttles on hot water), so tiles that ran further
    are put back and run again."""
    pytest.importorskip("numba")
    from twin.sim import fused

    path, over = FUSED[case]
    sims = []
    for tiles in (False, True):
        if tiles:
            monkeypatch.setattr(fused, "TILE_ABOVE", 0)
            monkeypatch.setattr(fused, "TILE_DEVICES", 1)
        sim = Simulation(load_scenario(SCENARIOS / path, over), kernel="numba")
        taken = []
        loop = sim._quiet.compiled()
        run = loop.run
        loop.run = lambda U, *a, run=run, taken=taken: taken.append((U.shape[0], run(U, *a))) or taken[-1][1]
        sim.run()
        assert any(t < n for n, t in taken)  # (blocks stopped early)
        assert (loop.tiles[1].size - 1 > 1) == tiles, loop.tiles[1]
        sims.append(sim)
    a, b = sims
    ta, tb = build_tree(a), build_tree(b)
    for group in ("facility", "cdu", "rack", "sled", "device", "job"):
        if group in ta.children:
            for name, var in ta[group].data_vars.items():
                np.testing.assert_array_equal(var.values, tb[group][name].values, err_msg=f"{case} {group}.{name}")
    for key, e in a.totals.energy.items():
        np.testing.assert_array_equal(e, b.totals.energy[key], err_msg=key)
    for f in ("e_device", "e_dc", "e_liquid", "e_air", "t_die_max", "stored_end", "throttled_device_seconds",
              "demand_device_seconds", "lost_work_device_seconds", "tripped_seconds"):
        assert getattr(a.totals, f) == getattr(b.totals, f), f
