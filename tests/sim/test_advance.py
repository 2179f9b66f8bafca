"""``Simulation.advance``: k steps in one call are the k single steps; without recording the
totals stay exact and the skipped intervals are missing (NaN) at their own times."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from twin.export.dataset import build_tree
from twin.scenario import load_scenario
from twin.sim.component import step_mean
from twin.sim.driver import Simulation

#: The quickstart's first 12 minutes cross its idle → training-swing boundary (at 10 min), so
#: the steps carry real transients; recording intervals of 1 s to 1 min.
OVER = {"time": {"duration": "12 min"},
        "record": {"facility": "1 s", "cdu": "10 s", "rack": "1 min", "device": "30 s"}}


def _sim():
    return Simulation(load_scenario(SCENARIOS / "quickstart.yaml", OVER))


def test_advance_is_the_same_steps():
    """advance(k) in uneven blocks gives bit-identical totals and recorded series to single
    steps: it is the same arithmetic in the same order (tolerance 0)."""
    a, b = _sim(), _sim()
    while a.step_index < a.n_steps:
        a.step()
    taken = [b.advance(k) for k in (1, 7, 300, 13, 1000)]
    assert sum(taken) == b.n_steps and taken[-1] == b.n_steps - sum(taken[:-1])
    assert b.advance(5) == 0  # the run is over
    ta, tb = build_tree(a), build_tree(b)
    for group in ("facility", "cdu", "rack", "device"):
        for name, var in ta[group].data_vars.items():
            np.testing.assert_array_equal(var.values, tb[group][name].values, err_msg=f"{group}.{name}")
    assert a.totals.e_ac == b.totals.e_ac and a.totals.e_liquid == b.totals.e_liquid


def test_advance_without_recording_keeps_totals_and_times():
    """Totals and energy counters are those of the recorded run exactly (recording does not
    feed back into the physics); samples of intervals touched by unrecorded steps are NaN, the
    others equal the recorded run's at the same times."""
    a, b = _sim(), _sim()
    a.run()
    seen = []
    b.advance(95, record=True)
    b.advance(200, record=False, each=lambda st: seen.append(float(step_mean(st["facility.p_it"])[0])))
    b.run()
    assert len(seen) == 200
    assert b.totals.e_ac == a.totals.e_ac and b.totals.e_facility == a.totals.e_facility
    np.testing.assert_array_equal(b.totals.energy["rack.p_ac"], a.totals.energy["rack.p_ac"])
    ta, tb = build_tree(a), build_tree(b)
    # facility every 1 s: steps 95…294 missing; the each() callback saw their values
    pa, pb = ta["facility"]["p_it"].values, tb["facility"]["p_it"].values
    assert pb.shape == pa.shape == (a.n_steps,)
    assert np.isnan(pb[95:295]).all() and not np.isnan(pb[:95]).any() and not np.isnan(pb[295:]).any()
    np.testing.assert_array_equal(pb[:95], pa[:95])
    np.testing.assert_array_equal(pb[295:], pa[295:])
    np.testing.assert_allclose(seen, pa[95:295], rtol=0, atol=0)
    # cdu every 10 s: intervals 9 (90–99 s) … 29 (290–299 s) touched, the rest equal
    ca, cb = ta["cdu"]["t_return"].values, tb["cdu"]["t_return"].values
    assert np.isnan(cb[9:30]).all()
    np.testing.assert_array_equal(cb[:9], ca[:9])
    np.testing.assert_array_equal(cb[30:], ca[30:])
    # rack every 60 s: intervals 1 (60–119 s) … 4 (240–299 s) missing
    ra, rb = ta["rack"]["q_liquid"].values, tb["rack"]["q_liquid"].values
    assert np.isnan(rb[1:5]).all()
    np.testing.assert_array_equal(rb[0], ra[0])
    np.testing.assert_array_equal(rb[5:], ra[5:])


@pytest.mark.parametrize("n", [0, -3])
def test_advance_nothing(n):
    sim = _sim()
    assert sim.advance(n) == 0 and sim.step_index == 0
