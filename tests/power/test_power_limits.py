"""Power limits in a running simulation: a cap slows training as the device equation says, and
no device exceeds its limit by more than its excursion."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from tests.conftest import SCENARIOS
from twin.catalog import load_catalog
from twin.export.dataset import build_tree
from twin.power.device import dynamic_power_full
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

T_ITER, SHARE, U = 120.0, 0.9, 0.95  # iteration at full clock [s], compute share, compute utilisation
CAP = 0.7  # of the Trn2's 500 W TDP


def _run(cap):
    job = {"kind": "training", "name": "t", "devices": {"kind": "trn2"}, "iteration_time": f"{T_ITER} s",
           "compute_share": SHARE, "u_compute": U}
    over = {"time": {"duration": "22 min"}, "jobs": [job],
            "record": {"device": "100 ms", "job": "1 s", "facility": "off", "rack": "off", "cdu": "off"}}
    if cap:
        over["power_limits"] = [{"select": {"kind": ["trn2"]}, "fraction": cap}]
    sim = Simulation(load_scenario(SCENARIOS / "trn2-training.yaml", over))
    sim.run()
    tree = build_tree(sim)
    dev = tree["device"].to_dataset()
    return dev.where(dev.kind == "trn2", drop=True), tree["job"].to_dataset().progress.values[:, 0]


@pytest.fixture(scope="module")
def runs():
    """One Trn2 UltraServer training at u = 0.95 for 90 % of each 120 s iteration, uncapped and
    capped at 0.7 TDP (350 W), every sub-step of 100 ms recorded."""
    return {cap: _run(cap) for cap in (None, CAP)}


def _iteration_time(progress, first, last):
    """Mean measured time per iteration between progress ``first`` and ``last`` [s] (crossing
    times interpolated in the 1 s record, progress recorded at each interval's end)."""
    t = np.arange(1, progress.size + 1, dtype=float)
    cross = np.interp([first, last], progress, t)
    return (cross[1] - cross[0]) / (last - first)


def test_cap_slows_training_as_the_device_equation_says(runs):
    """By hand: at full clock the Trn2 draws less than its TDP at u = 0.95 below its maximum
    operating temperature, so uncapped iterations take 120 s. Capped at 350 W the governor sets
    the clock f* that solves the catalogue's device equation (hardware.yaml header)

        P(f) = p_active_idle − L(1, T_idle) + L(f, T) + P_dyn · u · f^α = 350 W,
        L(f, T) = p_leak_ref · f^(α−1) · e^{β (T − T_ref)},

    solved here with brentq at the median die temperature of the compute phase; compute slows
    by 1/f*, the collectives (u = 0.2, far under the cap) run at full clock, so an iteration
    takes 0.9 · 120 s / f* + 0.1 · 120 s. Tolerance 1 %: the devices' die temperatures spread
    by a few kelvin (±3 K moves leakage by ~±3 W of 350 W, f* by ~0.4 %), and each phase change
    spends up to one 1 s step at the previous phase's clock."""
    c = load_catalog().chips["trn2"]
    dev, progress = runs[None]
    assert float(dev.clock.min()) == 1.0
    assert _iteration_time(progress, 2, 9) == pytest.approx(T_ITER, rel=1e-6)

    dev, progress = runs[CAP]
    compute = dev.u.values > 0.9
    t_die = float(np.median(dev.t_die.values[compute]))
    p_dyn = dynamic_power_full(c.tdp.si, c.p_active_idle.si, c.p_leak_ref.si, c.t_ref.si, c.t_idle.si,
                               c.leak_beta.si)
    alpha, beta = c.clock_exponent.si, c.leak_beta.si
    floor = c.p_active_idle.si - c.p_leak_ref.si * np.exp(beta * (c.t_idle.si - c.t_ref.si))

    def power(f):
        return floor + c.p_leak_ref.si * f ** (alpha - 1) * np.exp(beta * (t_die - c.t_ref.si)) + p_dyn * U * f ** alpha

    limit = CAP * c.tdp.si
    f_star = brentq(lambda f: power(f) - limit, 0.3, 1.0, xtol=1e-12)
    assert 0.8 < f_star < 0.95  # the cap binds, and well above the lowest clock
    t_hand = SHARE * T_ITER / f_star + (1 - SHARE) * T_ITER
    assert _iteration_time(progress, 2, 8) == pytest.approx(t_hand, rel=0.01)
    # The clock the governor holds during compute is that root (same tolerance, same reason).
    assert float(np.median(dev.clock.values[compute])) == pytest.approx(f_star, rel=0.01)


def test_no_device_over_its_limit_by_more_than_its_excursion(runs):
    """Every sub-step of every Trn2, capped or not: P ≤ excursion × limit (catalogue
    ``power_excursion`` 1.1). With the cap the excursions happen — when compute resumes after a
    collective phase the clock is still the collective phase's until the governor's next update —
    but they are short: under 1 % of the sub-steps exceed the limit at all, and in the compute
    phase the power sits on the cap (median within 1 %: die temperatures spread)."""
    excursion = load_catalog().chips["trn2"].power_excursion.si
    for cap, (dev, _) in runs.items():
        limit = (cap or 1.0) * 500.0
        p = dev.p.values
        assert p.max() <= excursion * limit * (1 + 1e-12)
        if cap:
            over = p > limit * (1 + 1e-9)
            assert over.any() and over.mean() < 0.01
            compute = dev.u.values > 0.9
            assert float(np.median(p[compute])) == pytest.approx(limit, rel=0.01)
