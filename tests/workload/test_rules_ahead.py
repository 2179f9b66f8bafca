"""The workload rules written ahead for a block of steps are the per-step path's values."""

from __future__ import annotations

import numpy as np

from tests.conftest import SCENARIOS
from twin.scenario import load_scenario
from twin.sim.driver import Simulation
from twin.workload import engine


def _workload():
    # the quickstart's rules (idle, then a 10 s swing from 10 min) at a 250 ms workload step
    over = {"time": {"duration": "20 min"}, "workload_step": "250 ms"}
    return Simulation(load_scenario(SCENARIOS / "quickstart.yaml", over), kernel="numpy").workload


def test_rules_ahead_is_the_per_step_demand(monkeypatch):
    """``rules_ahead`` over uneven spans (crossing the rules' blocks of 7 steps and the swing's
    start at 600 s), with a span taken back by ``restore`` and a per-step read in between, gives
    each step the values ``demand`` gives it step by step: tolerance 0 (the same times, the
    same operations)."""
    ahead, single = _workload(), _workload()
    assert ahead.jobs is None and ahead.n_sub == 4
    monkeypatch.setattr(engine, "BLOCK_VALUES", 7 * ahead.n_sub * ahead.n_devices)
    clock = np.ones(ahead.n_devices)
    tripped = np.zeros(ahead.n_devices, dtype=bool)
    h, i, got = ahead.h, 590, []
    for j in range(590):  # (both from step 590: the same blocks)
        ahead.demand(j * h, clock, tripped)
        single.demand(j * h, clock, tripped)
    for k in (3, 5, 1, 9, 2, 6):
        cursor = ahead.cursor()
        ahead.rules_ahead(i, k + 2)  # (taken back: the steps are given again)
        ahead.restore(cursor)
        got.append(ahead.rules_ahead(i, k).copy())
        i += k
        u, _ = ahead.demand(i * h, clock, tripped)  # one step on the per-step path
        got.append(u[None].copy())
        i += 1
    got = np.concatenate(got)
    want = np.stack([single.demand(j * h, clock, tripped)[0] for j in range(590, 590 + got.shape[0])])
    assert np.ptp(want[:, :, ahead.rules._where[0].index]) > 0.5  # (the swing is in the span)
    np.testing.assert_array_equal(got, want)
