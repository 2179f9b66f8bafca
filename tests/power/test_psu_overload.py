"""A rack that loses all but two PSUs delivers no more than their rating: capped or tripped
per its shelves' overload policy, and the event is in the dataset."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from twin.catalog.model import load_catalog
from twin.export.dataset import build_tree
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

# GB300 NVL72: 8 shelves × 6 PSUs of 5.5 kW; 46 fail for two minutes → 2 × 5.5 = 11 kW left.
EVENTS = [{"at": "60 s", "kind": "psu_failure", "target": "nvl72", "count": 46, "duration": "2 min"}]


def run(policy):
    shelf = load_catalog().power_shelves["orv3-hpr-33kw"].model_dump(mode="json", exclude_none=True)
    shelf["overload"] = policy
    over = {"time": {"duration": "4 min"}, "events": EVENTS, "record": {"rack": "10 s", "device": "10 s"},
            "catalog": {"power_shelves": {"orv3-hpr-33kw": shelf}}}
    sim = Simulation(load_scenario(SCENARIOS / "gb300-rack.yaml", over))
    sim.run()
    return sim, build_tree(sim)


def test_cap_policy_holds_the_rack_at_two_psus():
    sim, tree = run("cap")
    r = tree["rack"].to_dataset()
    p_dc = r["p_dc"].values[:, 0]
    during = r["psu_overload"].values[:, 0] > 0
    assert during.sum() >= 10  # the two minutes of the event, at 10 s intervals
    # exactly the two PSUs' rating, never more (to rounding), and back to normal afterwards
    assert p_dc[during] == pytest.approx(np.full(during.sum(), 11e3), rel=1e-9)
    assert p_dc.max() > 50e3 and p_dc[-1] > 50e3
    assert not sim.governors.tripped.any()


def test_trip_policy_takes_the_rack_down():
    sim, tree = run("trip")
    r = tree["rack"].to_dataset()
    during = r["psu_overload"].values[:, 0] > 0
    assert during.any()
    # the PSUs trip on over-current: the rack is dark (devices, boards and fans) until the PSUs
    # are restored at 180 s; then its devices are back on and draw their load again.
    p_dc = r["p_dc"].values[:, 0]
    first = int(np.argmax(during))
    after = p_dc[first + 1:]
    # 10 s intervals: the trip's own interval, then the 11 others of the 2 min outage are dark
    assert (after[:11] == 0).all()
    assert after[11:].size >= 4 and after[11:].min() > 40e3  # load back (> 4 × the 2 PSUs)
    assert not sim.governors.unpowered.any()
