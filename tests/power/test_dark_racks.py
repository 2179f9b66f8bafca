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


def test_psus_restored_re_energise_the_rack_and_its_devices(baseline):
    """Before: the devices of a rack whose PSUs came back stayed off for the rest of the run."""
    sy, base = baseline
    over = dict(QUICK, events=[{"at": "60 s", "kind": "psu_failure", "target": str(sy.rack_name[0]),
                                "count": int(sy.rack_psus[0]), "duration": "30 s"}])
    sim, tree, kpi = _run(SCENARIOS / "quickstart.yaml", over)
    p_ac = tree["rack"]["p_ac"].values[:, 0]
    assert (p_ac[61:90] == 0).all()
    # Devices, boards and fans draw again: the rack's power returns to that of the run without
    # the fault. 2 %: the dies cooled while dark and the leakage power (exponential in die
    # temperature) is still catching up 10 s later; a rack without its devices draws < 30 %.
    base_ac = base["rack"]["p_ac"].values[:, 0]
    np.testing.assert_allclose(p_ac[100:], base_ac[100:], rtol=0.02)
    assert not sim.governors.unpowered.any() and not sim.governors.tripped.any()
    assert kpi["devices_tripped"] == int((sy.device_rack == 0).sum())  # off at some time
    assert kpi["time_to_first_trip_s"] == pytest.approx(1.0)  # dark from the step after the failure
    assert kpi["energy_residual"] == pytest.approx(0.0, abs=ENERGY_RTOL)


ONE_US = [{"name": "h", "rows": [{"name": "r", "racks": [
    {"name": "us", "template": "trn3-gen2-ultraserver", "cdu": "cdu"}]}]}]


def test_an_empty_ups_battery_darkens_every_rack_and_the_utility_carries_the_rest():
    # A 1 kWh battery per 500 kW module (two modules here, N+1) carries the UltraServer for about
    # 40 s: the outage of 3 min empties it.
    over = {"time": {"start": "2026-07-01T00:00:00", "duration": "5 min", "step": "1 s"}, "halls": ONE_US,
            "plant": {"weather": {"kind": "constant", "t_dry_bulb": "20 degC"},
                      "ups": {"template": "ups-500kw-modern"}},
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
    assert f["e_ups_battery"].values.min() == 0.0  # never below empty
    # From the step after it empties until the utility returns: no IT power at all.
    assert empty < 200 and (p_it[empty + 2: 240] == 0).all()
    assert p_it[245:].min() > 0  # boards, fans and devices back with the utility
    assert not sim.governors.unpowered.any()
    assert kpi["devices_tripped"] == sim.system.n_devices  # all were off for a while
    # Facility power is the utility's draw (and the standby generators' for the loads outside the
    # UPS): through the outage, on battery and dark alike, it is those loads and the transformers'
    # losses alone, the battery's discharge an internal transfer (1e-9: the same sum written out).
    outside = sum(f[v].values for v in ("p_cooling", "p_misc", "p_electrical_room_cooling",
                                         "p_transformer_loss"))
    np.testing.assert_allclose(p_fac[60:240], outside[60:240], rtol=1e-9)
    assert (p_fac[61:empty] < p_it[61:empty]).all()  # so the step's PUE is below 1 on battery
    assert (f["pue"].values[61:empty] < 1.0).all()
    assert kpi["pue"] == pytest.approx(kpi["energy_facility_J"] / kpi["energy_it_J"], rel=1e-12)
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


def test_the_ups_battery_recharges_after_an_outage_and_energy_is_conserved():
    """Before: the battery stayed at what the outage left for the rest of the run. Now the UPS
    recharges it at the catalogue's charge power, drawn from the utility and counted in
    facility power; every joule the battery gives or takes is accounted for: its discharge is
    not facility (utility) energy, its recharge is."""
    over = {"time": {"start": "2026-07-01T00:00:00", "duration": "10 min", "step": "1 s"}, "halls": ONE_US,
            "plant": {"weather": {"kind": "constant", "t_dry_bulb": "20 degC"}},
            "events": [{"at": "1 min", "kind": "utility_outage", "duration": "2 min"}],
            "record": {"rack": "off", "cdu": "off", "device": "off", "facility": "1 s"}}
    sim, tree, kpi = _run(SCENARIOS / "annual-leesburg.yaml", over)
    f = tree["facility"].to_dataset()
    ups = sim.chain.ups
    n = sim.chain.n_modules
    full, p_max, eta = sim.battery_energy, n * ups.battery_charge_power.si, ups.battery_charge_efficiency.si
    e = f["e_ups_battery"].values
    charge = f["p_ups_battery_charge"].values
    # The outage draws the battery by the UPS input (IT, busway and UPS losses), joule for joule
    # (1e-9: sums of ~200 floats of ~1e5 W, round-off ~1e-14).
    drawn = float((f["p_it"] + f["p_busway_loss"] + f["p_ups_loss"]).values[60:180].sum())
    assert full - e[179] == pytest.approx(drawn, rel=1e-9)
    assert (charge[:180] == 0).all()
    # Then it recharges at the catalogue's power until full: η P_c of each second is stored.
    recharging = charge > 0
    assert recharging[180] and not recharging[-1] and e[-1] == pytest.approx(full, rel=1e-12)
    assert (charge[recharging][:-1] == pytest.approx(p_max, rel=1e-12))
    assert eta * charge.sum() == pytest.approx(full - e[179], rel=1e-9)
    # By hand: (E_full − E_after) / (η P_c) seconds of charging, the last one partial.
    assert recharging.sum() == int(np.ceil((full - e[179]) / (eta * p_max)))
    # Facility power, defined once: p_facility − (IT + cooling + busway, UPS (charger included)
    # and transformer losses + misc + electrical-room cooling) is exactly the power stored in the
    # battery, less what the battery gives the UPS (its input: IT, busway and UPS losses) during
    # the outage.
    parts = sum(f[v].values for v in ("p_it", "p_cooling", "p_busway_loss", "p_ups_loss",
                                      "p_transformer_loss", "p_misc", "p_electrical_room_cooling"))
    given = np.zeros_like(parts)
    given[60:180] = (f["p_it"] + f["p_busway_loss"] + f["p_ups_loss"]).values[60:180]
    np.testing.assert_allclose(f["p_facility"].values - parts, eta * charge - given, atol=1e-6 * parts.max())
    # Through the outage the loads outside the UPS stay on the transformers (standby generators
    # are not modelled: they carry them as the utility did): pumps and fans, the miscellaneous
    # load, the electrical room's cooling and the transformers' own losses are all drawn.
    for v in ("p_cooling", "p_misc", "p_electrical_room_cooling", "p_transformer_loss"):
        assert (f[v].values[60:180] > 0).all(), v
    assert kpi["energy_residual"] == pytest.approx(0.0, abs=ENERGY_RTOL)
    assert kpi["pue"] >= 1.0
