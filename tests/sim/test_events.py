"""Events and power caps."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from twin.export.dataset import build_tree, summary
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

QUICK = SCENARIOS / "quickstart.yaml"
FULL_LOAD = [{"select": {"kind": ["trn3"]}, "u": 1.0}]


def _run(over):
    sim = Simulation(load_scenario(QUICK, over))
    sim.run()
    return sim, build_tree(sim)


@pytest.mark.parametrize("failover", [False, True])
def test_cdu_pump_trip(failover):
    """A CDU pump trip at full load. Both duty pumps down and no standby: the chips throttle,
    then trip. One of the two parallel duty pumps down: the survivor gives 60–70 % of the flow
    (where its curve meets the loop's, by hand from the catalogue: √((k + a/4)/(k + a)), to
    1e-9), the standby restores the full flow 10 s later, nothing reaches its shutdown point."""
    count = 1 if failover else 2
    over = {"time": {"duration": "10 min"}, "workload": FULL_LOAD,
            "events": [{"at": "60 s", "kind": "cdu_pump_trip", "target": "cdu-1", "count": count,
                        "failover": failover}],
            "record": {"device": "1 s", "rack": "1 s"}}
    sim, tree = _run(over)
    kpi = summary(sim)
    flow = tree["cdu"]["flow"].values[:, 0]
    if failover:
        from twin.catalog import load_catalog

        cat = load_catalog()
        cdu = cat.cdus["in-row-1350kw"]
        pump = cat.pumps[cdu.pump]
        a = (pump.shutoff_pressure.si - pump.design_pressure.si) / pump.design_flow.si ** 2
        k = cdu.design_pressure.si / cdu.design_flow.si ** 2
        assert flow[61] / flow[59] == pytest.approx(np.sqrt((k + a / 4) / (k + a)), rel=1e-9)
        assert 0.6 < flow[61] / flow[59] < 0.7
        assert flow[75] == pytest.approx(flow[59])
        assert kpi["devices_tripped"] == 0
        assert sim.totals.t_die_max < 100.0  # Trn3 shutdown point
        dev = tree["device"].to_dataset()
        assert float(dev["clock"].where(dev.kind == "trn3")[-1].min()) == 1.0  # recovered
    else:
        assert flow[59] > 0 and flow[61] == 0.0
        assert kpi["devices_tripped"] > 0
        assert 0 < kpi["time_to_first_throttle_s"] < kpi["time_to_first_trip_s"] < 540
        dev = tree["device"].to_dataset()
        assert float(dev["clock"].where(dev.kind == "trn3").min()) < 1.0


def test_coolant_flow_loss_on_one_rack_is_cleared():
    over = {"time": {"duration": "15 min"}, "workload": FULL_LOAD,
            "events": [{"at": "60 s", "kind": "coolant_flow_loss", "target": "us1-b", "fraction": 0.8,
                        "duration": "5 min"}],
            "record": {"rack": "1 s"}}
    sim, tree = _run(over)
    ret = tree["rack"]["t_coolant_return"].to_series().unstack()
    rise = ret["us1-b"] - ret["us1-a"]
    assert rise.iloc[30] == pytest.approx(0.0, abs=1e-9)       # same before
    assert rise.iloc[300] > 10.0                                # 1/5 of the flow: ~5× the ΔT
    assert rise.iloc[-1] == pytest.approx(0.0, abs=0.05)        # cleared and recovered


def test_psu_failure_raises_shelf_losses_as_by_hand():
    """Two of 24 PSUs failed in us1-a: the other 22 carry the load; the loss follows the curve."""
    over = {"time": {"duration": "2 min"}, "workload": FULL_LOAD,
            "events": [{"at": "60 s", "kind": "psu_failure", "target": "us1-a", "count": 2}],
            "record": {"rack": "1 s"}}
    sim, tree = _run(over)
    rack = tree["rack"].to_dataset().sel(rack="us1-a")
    from twin.catalog import load_catalog
    from twin.power.psu import shelf_input_power

    pts = load_catalog().power_shelves["orv3-hpr-33kw"].efficiency.points
    loads, etas = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
    for t, psus in ((50, 24), (100, 22)):
        p_dc = float(rack["p_dc"][t])
        expected = shelf_input_power(np.array([p_dc]), psus * 5500.0, loads, etas)[0]
        assert float(rack["p_ac"][t]) == pytest.approx(expected, rel=1e-12)


def test_rack_power_limit_is_held_by_capping():
    """A 75 kW limit on racks that draw ~90 kW at full load: the cap governor lowers clocks until
    the rack sits at the limit (within 1 % after settling) and reports the capped time."""
    over = {"time": {"duration": "5 min"}, "workload": FULL_LOAD,
            "halls": [{"name": "h", "rows": [{"name": "r", "racks": [
                {"name": "us1", "template": "trn3-gen2-ultraserver", "cdu": "cdu-1", "power_limit": "75 kW"}]}]}],
            "record": {"rack": "1 s", "device": "10 s"}}
    sim, tree = _run(over)
    p = tree["rack"]["p_ac"].values
    assert p[:5].max() > 1.05 * 75e3  # above the limit before the governor acts
    np.testing.assert_allclose(p[-60:], 75e3, rtol=0.01)
    assert float(tree["rack"]["capped"][-60:].mean()) == 1.0
    assert summary(sim)["capped_rack_seconds"] > 0
    assert float(tree["device"]["clock"][-1].min()) < 1.0


def test_cdu_pump_trip_scenarios():
    """scenarios/cdu-pump-trip*.yaml (first 13 minutes): without failover the racks on cdu-1
    throttle within seconds, trip, and the job fails (state 3, progress stalls); with failover
    nothing reaches its shutdown point and the job runs on."""
    over = {"time": {"duration": "13 min"}}
    results = {}
    for name in ("cdu-pump-trip", "cdu-pump-trip-failover"):
        sim = Simulation(load_scenario(SCENARIOS / f"{name}.yaml", over))
        sim.run()
        results[name] = (sim, build_tree(sim), summary(sim))
    sim, tree, kpi = results["cdu-pump-trip"]
    assert 0 < kpi["time_to_first_throttle_s"] < kpi["time_to_first_trip_s"] < 60
    assert kpi["devices_tripped"] > 0
    state = tree["job"]["state"].values[:, 0]
    progress = tree["job"]["progress"].values[:, 0]
    assert state[-1] == 3 and progress[-1] == progress[-60]  # restarting, no progress
    dev = tree["device"].to_dataset()
    tripped_racks = set(dev.rack.values[(dev["p"][-1] == 0).values])
    assert tripped_racks == {"us1-a", "us1-b"}  # only the racks on cdu-1
    sim, tree, kpi = results["cdu-pump-trip-failover"]
    assert kpi["devices_tripped"] == 0 and sim.totals.t_die_max < 100.0
    assert tree["job"]["state"].values[-1, 0] in (1, 2)


def test_devices_tripped_by_a_pump_trip_restart_once_the_pumps_are_back():
    """Both duty pumps down for 4 min at full load: the chips trip at their shutdown point; the
    pumps back, the dies cool and the devices restart below their throttle point (before: off
    for the rest of the run, whatever the cooling did)."""
    over = {"time": {"duration": "10 min"}, "workload": FULL_LOAD,
            "events": [{"at": "60 s", "kind": "cdu_pump_trip", "target": "cdu-1", "count": 2,
                        "duration": "4 min"}],
            "record": {"device": "1 s", "rack": "off", "sled": "off"}}
    sim, tree = _run(over)
    kpi = summary(sim)
    dev = tree["device"].to_dataset()
    p, t_die, chip = dev["p"].values, dev["t_die"].values, sim.system.chip
    assert kpi["devices_tripped"] > 0 and 0 < kpi["time_to_first_trip_s"] < 240
    off_during = (p[60:300] == 0).any(axis=0)  # off at some time while the pumps are down
    assert off_during.sum() == kpi["devices_tripped"]
    # After the pumps are back every device is on again, drawing at least its idle power, and
    # every die is below its throttle point.
    assert not sim.governors.tripped.any()
    assert (p[-30:] >= chip["p_idle"]).all()
    assert (t_die[-30:] < chip["t_throttle"]).all()
