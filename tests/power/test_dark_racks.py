"""Racks without input power: PSUs tripped on overload, an empty UPS battery, a rack without fans.

Each of these used to run into division by zero, infinities or impossible energy: 47 of 48 PSUs
failed still delivered the whole rack's power (and 48 divided by zero), a 2 h outage drained the
UPS battery to −172 kWh while IT kept drawing (run PUE 0.68), a rack whose fans all failed wrote
+inf exhaust temperatures. The checks here are against hand calculations, a run without the
fault, and conservation of energy.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from twin.export.dataset import build_tree, summary
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

#: Energy balance of a run (AC in − heat out − stored) / AC in: 1e-9 is far above float
#: round-off over a few hundred steps (≈1e-14 measured) and far below one step's power of any
#: component that drew without heating or heated without drawing (≈1e-3 here).
ENERGY_RTOL = 1e-9


def _run(path, over):
    sim = Simulation(load_scenario(path, over))
    with np.errstate(divide="raise", invalid="raise", over="raise"):
        sim.run()
    return sim, build_tree(sim), summary(sim)


QUICK = {"time": {"duration": "2 min"}, "record": {"rack": "1 s", "device": "off"}}


@pytest.fixture(scope="module")
def baseline():
    """The quickstart's first 2 minutes without a fault."""
    sim, tree, _ = _run(SCENARIOS / "quickstart.yaml", QUICK)
    return sim.system, tree


@pytest.mark.parametrize("left", [1, 0], ids=["one-psu-left", "no-psu-left"])
def test_psus_that_cannot_carry_the_rack_trip_it(baseline, left):
    sy, base = baseline
    rack = sy.rack_name[0]
    p_dc = base["rack"]["p_dc"].values[:, 0]
    # Premise: what is left cannot carry the rack (by hand, from the catalogue's rating).
    assert left * sy.rack_psu_rating[0] < p_dc[60:].min()
    over = dict(QUICK, events=[{"at": "60 s", "kind": "psu_failure", "target": str(rack),
                                "count": int(sy.rack_psus[0]) - left}])
    sim, tree, kpi = _run(SCENARIOS / "quickstart.yaml", over)
    r = tree["rack"].to_dataset()
    # Before the failure: the same run. The step of the failure is carried (over-current for one
    # step at full-load efficiency); from the next step the rack draws nothing at all.
    np.testing.assert_array_equal(r["p_ac"].values[:60], base["rack"]["p_ac"].values[:60])
    assert r["p_ac"].values[60, 0] > 0
    assert (r["p_ac"].values[61:, 0] == 0).all() and (r["p_dc"].values[61:, 0] == 0).all()
    assert r["p_ac"].values[61:, 1].min() > 0  # the other rack of the UltraServer keeps running
    assert kpi["devices_tripped"] == int((sy.device_rack == 0).sum())
    assert kpi["energy_residual"] == pytest.approx(0.0, abs=ENERGY_RTOL)
    assert np.isfinite(r["t_air_out"].values).all()


def test_psus_restored_re_energise_the_rack_but_its_devices_stay_off(baseline):
    sy, _ = baseline
    over = dict(QUICK, events=[{"at": "60 s", "kind": "psu_failure", "target": str(sy.rack_name[0]),
                                "count": int(sy.rack_psus[0]), "duration": "30 s"}])
    sim, tree, kpi = _run(SCENARIOS / "quickstart.yaml", over)
    p_ac = tree["rack"]["p_ac"].values[:, 0]
    assert (p_ac[61:90] == 0).all()
    # Boards and fans draw again; the tripped devices do not (they wait for a restart).
    assert (p_ac[91:] > 0).all() and p_ac[91:].max() < 0.5 * p_ac[:60].min()
    assert kpi["devices_tripped"] == int((sy.device_rack == 0).sum())
    assert kpi["energy_residual"] == pytest.approx(0.0, abs=ENERGY_RTOL)


ONE_US = [{"name": "h", "rows": [{"name": "r", "racks": [
    {"name": "us", "template": "trn3-gen2-ultraserver", "cdu": "cdu"}]}]}]


def test_an_empty_ups_battery_darkens_every_rack_and_pue_stays_above_one():
    # A 1 kWh battery per 500 kW module (two modules here, N+1) carries the UltraServer for about
    # 40 s: the outage of 3 min empties it.
    over = {"time": {"start": "2026-07-01T00:00:00", "duration": "5 min", "step": "1 s"}, "halls": ONE_US,
            "plant": {"weather": {"kind": "constant", "t_dry_bulb": "20 degC"}},
            "catalog": {"ups": {"ups-500kw-modern": {"battery_energy": {"value": "1 kWh", "source": "estimate"}}}},
            "events": [{"at": "1 min", "kind": "utility_outage", "duration": "3 min"}],
            "record": {"rack": "off", "cdu": "off", "facility": "1 s"}}
    sim, tree, kpi = _run(SCENARIOS / "annual-leesburg.yaml", over)
    f = tree["facility"].to_dataset()
    p_it, p_fac = f["p_it"].values, f["p_facility"].values
    # By hand: the battery runs out when Σ (IT + busway and UPS losses) · 1 s reaches its energy.
    drawn = np.cumsum((f["p_it"] + f["p_busway_loss"] + f["p_ups_loss"]).values[60:])
    empty = 60 + int(np.argmax(drawn >= sim.battery_energy))
    assert sim.battery_energy == pytest.approx(2 * 1 * 3.6e6)
    assert kpi["ride_through_s"] == pytest.approx(empty + 1 - 60, abs=1.0)
    assert sim.battery_left == 0.0  # never below empty
    # From the step after it empties until the utility returns: no IT power at all.
    assert empty < 200 and (p_it[empty + 2: 240] == 0).all()
    assert p_it[245:].min() > 0  # boards and fans back with the utility; devices stay tripped
    assert kpi["devices_tripped"] == sim.system.n_devices
    # Facility power counts the battery as a source: never below IT power, so PUE ≥ 1 throughout.
    assert (p_fac >= p_it).all()
    pue = f["pue"].values
    assert (pue[np.isfinite(pue)] >= 1.0).all()
    assert kpi["pue"] >= 1.0 and kpi["energy_facility_J"] >= kpi["energy_it_J"]
    assert kpi["energy_residual"] == pytest.approx(0.0, abs=ENERGY_RTOL)


def test_a_rack_without_fans_has_finite_temperatures_and_its_air_cooled_parts_trip():
    over = {"time": {"duration": "6 min"}, "record": {"rack": "1 s", "sled": "1 s", "device": "off"},
            "events": [{"at": "60 s", "kind": "rack_fan_failure", "target": "*", "fraction": 1.0}]}
    sim, tree, kpi = _run(SCENARIOS / "quickstart.yaml", over)
    r, s = tree["rack"].to_dataset(), tree["sled"].to_dataset()
    for ds in (r, s):
        for name, var in ds.data_vars.items():
            if name.startswith("t_"):
                assert np.isfinite(var.values).all(), name
    # No air flows: the exhaust is the still air inside, between the cold aisle and the hottest sled.
    t_out = r["t_air_out"].values[61:]
    assert (t_out >= 25.0).all()
    assert (t_out <= s["t_air_out"].values[61:].max(axis=1)[:, None] + 1e-9).all()
    assert kpi["devices_tripped"] > 0 and sim.first_trip > 60.0
    assert kpi["energy_residual"] == pytest.approx(0.0, abs=ENERGY_RTOL)
