"""The CDU bank's valve controllers: the float path of a few CDUs against the array path."""

from __future__ import annotations

import copy

import numpy as np

from tests.conftest import SCENARIOS
from twin.cooling import cdu_bank
from twin.cooling.cdu_bank import CduLoops
from twin.scenario import load_scenario
from twin.sim.driver import Simulation


def test_valve_control_on_floats_is_the_array_path(monkeypatch):
    """Random operating points of a bank of CDUs (some not flowing, valves at their limits,
    integrators not yet started, set-points above and below the supply): the PI on floats
    gives the valves and integrators of the array operations bit for bit."""
    sim = Simulation(load_scenario(SCENARIOS / "bench/hall-1k.yaml", {"time": {"duration": "1 min"}}))
    (loops,) = [c for c in sim.components if isinstance(c, CduLoops)]
    bank = loops.bank
    n = bank.n_cdu
    rng = np.random.default_rng(5)
    for trial in range(300):
        flowing = rng.uniform(size=n) > 0.2
        m_s = np.where(flowing, bank.design_secondary_flow * rng.uniform(0.2, 1.2, n), 0.0)
        g = bank.conductance(np.where(flowing, m_s, bank.design_secondary_flow),
                             rng.uniform(bank.valve_min, 1.0, n) * bank.m_p_design)
        t_fs = rng.uniform(15.0, 40.0)
        ts_end = t_fs + rng.uniform(-2.0, 15.0, n)
        q_in = rng.uniform(-1e4, 1.5e6, n)
        bank.valve = rng.choice([bank.valve_min, 1.0, 0.5], n) if trial % 2 else rng.uniform(bank.valve_min, 1.0, n)
        bank.integral = np.where(rng.uniform(size=n) > 0.3, rng.uniform(0.0, 1.0, n), np.nan)
        bank.cdu_setpoint = rng.uniform(20.0, 45.0, n)
        a, b = copy.deepcopy(bank), copy.deepcopy(bank)
        assert a._control_numbers(flowing, m_s, g, ts_end, q_in, t_fs, 10.0)
        monkeypatch.setattr(cdu_bank, "CONTROL_NUMBERS_MAX", 0)
        b.control(flowing, m_s, g, ts_end, q_in, t_fs, 10.0)
        monkeypatch.undo()
        np.testing.assert_array_equal(a.valve, b.valve)
        np.testing.assert_array_equal(a.integral, b.integral)
