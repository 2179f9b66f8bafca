"""The cooling plant inside whole runs: energy balance, climates, pump trip, bad weather files."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import SCENARIOS
from twin.catalog.model import load_catalog
from twin.cli import app
from twin.export.dataset import build_tree, summary
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

ANNUAL = SCENARIOS / "annual-leesburg.yaml"
ONE_US = [{"name": "h", "rows": [{"name": "r", "racks": [
    {"name": "us", "template": "trn3-gen2-ultraserver", "cdu": "cdu"}]}]}]


def _run(path, over):
    sim = Simulation(load_scenario(path, over))
    sim.run()
    return sim, build_tree(sim), summary(sim)


def test_day_energy_balance_closes():
    """Over a simulated day (60 s steps, one UltraServer, Leesburg in July):
    - the plant: heat in (liquid + air + its own electric) = heat rejected + stored, within 0.5 %;
    - the meter: facility energy = IT + cooling + busway, UPS and transformer losses + misc load +
      electrical-room cooling (recorded series)."""
    over = {"time": {"start": "2026-07-01T00:00:00", "duration": "1 d", "step": "60 s"}, "halls": ONE_US,
            "record": {"facility": "60 s", "rack": "60 s"}}
    sim, tree, kpi = _run(ANNUAL, over)
    assert abs(kpi["plant_energy_residual"]) < 0.005
    f = tree["facility"].to_dataset()
    lhs = float(f["p_facility"].sum())
    rhs = float((f["p_it"] + f["p_cooling"] + f["p_ups_loss"] + f["p_busway_loss"] + f["p_transformer_loss"]
                 + f["p_misc"] + f["p_electrical_room_cooling"]).sum())
    assert lhs == pytest.approx(rhs, rel=1e-9)
    assert kpi["pue"] == pytest.approx(lhs / float(f["p_it"].sum()), rel=1e-9)
    assert 1.03 < kpi["pue"] < 1.4


#: The README's annual table: its row labels, the climate (bundled EPW file) and plant changes.
ANNUAL_ROWS = {"Phoenix AZ": ("Phoenix", {}), "Leesburg VA": ("Leesburg", {}), "Seattle WA": ("Seattle", {}),
               "Leesburg VA, cooling towers": ("Leesburg", {"heat_rejection": {"kind": "cooling_tower"}})}


@pytest.fixture(scope="module")
def annual():
    """A year of ``annual-leesburg.yaml`` (hourly weather, W32, the bundled 8-UltraServer hall) for
    each row of the README's annual table: the KPIs, by row label. Computed once for the module:
    the README table test and the climate-ordering test read the same four years."""
    out = {}
    for label, (city, extra) in ANNUAL_ROWS.items():
        plant = {"weather": {"kind": "epw", "file": city}, **extra}
        sim = Simulation(load_scenario(ANNUAL, {"plant": plant, "record": {"rack": "off", "cdu": "off",
                                                                            "device": "off"}}))
        sim.run()
        out[label] = summary(sim)
    return out


@pytest.mark.slow
@pytest.mark.timeout(1800)  # the first of the two runs the four years (~9 min on a loaded machine)
@pytest.mark.xdist_group("annual")  # the same worker as the README table test: the years are computed once
def test_annual_pue_and_chiller_hours_follow_the_climate(annual):
    """A year of hourly weather in three climates, same hall (the bundled one, as in the README's
    table; the ordering is a property of the climates, not of the hall's size) and controls."""
    climates = {c: annual[label] for c, label in (("Phoenix", "Phoenix AZ"), ("Leesburg", "Leesburg VA"),
                                                   ("Seattle", "Seattle WA"))}
    pue = {c: k["pue"] for c, k in climates.items()}
    hours = {c: k["chiller_hours"] for c, k in climates.items()}
    assert pue["Phoenix"] > pue["Leesburg"] > pue["Seattle"]
    assert hours["Phoenix"] > hours["Leesburg"] > hours["Seattle"]
    assert all(1.03 <= p <= 1.4 for p in pue.values()), pue
    assert all(abs(k["plant_energy_residual"]) < 0.005 for k in climates.values())


def test_pump_trip_with_plant():
    """The CDU pump trip scenarios with the plant (both duty pumps trip): without failover,
    throttling and trips; with the standby after 10 s, no device passes its shutdown point and
    the standby alone gives what one of two parallel pumps gives on the loop's curve (by hand
    from the catalogue, √((k + a/4)/(k + a)) ≈ 0.69, to 1e-6: the flow settles within the step)."""
    cat = load_catalog()
    cdu = cat.cdus["in-row-1350kw"]
    pump = cat.pumps[cdu.pump]
    a = (pump.shutoff_pressure.si - pump.design_pressure.si) / pump.design_flow.si ** 2
    k = cdu.design_pressure.si / cdu.design_flow.si ** 2
    one_of_two = np.sqrt((k + a / 4) / (k + a))
    for name, tripped in (("cdu-pump-trip", True), ("cdu-pump-trip-failover", False)):
        over = {"time": {"duration": "12 min"}, "plant": {"weather": {"kind": "constant", "t_dry_bulb": "30 degC"}}}
        sim, tree, kpi = _run(SCENARIOS / f"{name}.yaml", over)
        flow = tree["cdu"]["flow"].sel(cdu="cdu-1").values
        assert flow[599] > 0 and flow[605] == 0.0
        if tripped:
            assert kpi["devices_tripped"] > 0 and kpi["time_to_first_throttle_s"] < 60
        else:
            assert kpi["devices_tripped"] == 0 and sim.totals.t_die_max < 100.0
            assert flow[-1] / flow[599] == pytest.approx(one_of_two, rel=1e-6)
            assert 0.6 < flow[-1] / flow[599] < 0.7


@pytest.mark.parametrize("damage, message", [
    (lambda lines: lines[:8] + [",".join(line.split(",")[:5]) for line in lines[8:]], "bad.epw:9: expected at least 10 fields"),
    (lambda lines: lines[:8] + [line.replace(",", ";") for line in lines[8:]], ""),
])
def test_garbled_epw_is_one_line_exit_2(tmp_path, damage, message):
    from twin.site.weather import bundled_epw

    lines = bundled_epw("Leesburg").read_text(encoding="latin-1").splitlines()
    bad = tmp_path / "bad.epw"
    bad.write_text("\n".join(damage(lines)) + "\n", encoding="latin-1")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(ANNUAL.read_text().replace("file: Leesburg}", f"file: {bad}}}"))
    for command in (["validate", str(scenario)], ["run", str(scenario), "-o", str(tmp_path / "x.nc")]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, result.output
        lines_out = result.stderr.strip().splitlines()
        assert len(lines_out) == 1 and lines_out[0].startswith(f"{scenario}:")
        assert "plant.weather" in lines_out[0] and "bad.epw" in lines_out[0]
        assert message in lines_out[0]
    assert not (tmp_path / "x.nc").exists()


@pytest.mark.slow
def test_multi_rate_plant_agrees_with_every_step():
    """The plant updated every 10 or 60 thermal steps (on block means) gives the same PUE as
    updating every step within 0.05 % over 3 hours of Leesburg weather, and energy still closes."""
    def pue(step):
        plant = {"weather": {"kind": "epw", "file": "Leesburg"}, "facility_water_supply": "32 degC"}
        if step:
            plant["step"] = step
        over = {"time": {"start": "2026-07-01T12:00:00", "duration": "3 h", "step": "1 s"}, "halls": ONE_US,
                "plant": plant, "record": {"rack": "off", "cdu": "off"}}
        kpi = _run(ANNUAL, over)[2]
        assert abs(kpi["plant_energy_residual"]) < 0.005
        return kpi["pue"]
    reference = pue(None)
    for step in ("10 s", "60 s"):
        assert pue(step) == pytest.approx(reference, rel=5e-4)


@pytest.mark.slow
def test_utility_outage_rides_on_the_battery_until_it_is_empty():
    """A utility outage: IT draws the UPS battery down by its UPS input power (by hand: Σ of the
    step's IT + busway + UPS losses × step); an outage longer than the battery lasts trips everything."""
    base = {"time": {"start": "2026-07-01T00:00:00", "duration": "40 min", "step": "1 s"}, "halls": ONE_US,
            "plant": {"weather": {"kind": "constant", "t_dry_bulb": "20 degC"}},
            "record": {"rack": "off", "cdu": "off", "facility": "1 s"}}
    # The short outage's run ends 2 min after the utility is back (the battery is recharging by
    # then); the long one runs on to 40 min, past the battery's end.
    short = dict(base, time=dict(base["time"], duration="8 min"),
                 events=[{"at": "5 min", "kind": "utility_outage", "duration": "1 min"}])
    sim, tree, kpi = _run(ANNUAL, short)
    f = tree["facility"].to_dataset()
    drawn = float((f["p_it"] + f["p_busway_loss"] + f["p_ups_loss"]).isel(time=slice(300, 360)).sum())
    # The battery recharges once the utility is back: its lowest charge is the outage's end.
    assert sim.battery_energy - float(f["e_ups_battery"].min()) == pytest.approx(drawn, rel=1e-9)
    assert kpi["devices_tripped"] == 0 and not np.isfinite(kpi["ride_through_s"])
    # The battery (42 kWh per 500 kW module, two modules here) holds ~195 kW for ~26 min:
    # an outage longer than that empties it.
    long = dict(base, events=[{"at": "5 min", "kind": "utility_outage", "duration": "35 min"}])
    sim, tree, kpi = _run(ANNUAL, long)
    f = tree["facility"].to_dataset()
    drawn = np.cumsum((f["p_it"] + f["p_busway_loss"] + f["p_ups_loss"]).values[300:])  # J per 1 s step
    expected = np.argmax(drawn >= sim.battery_energy) + 1.0  # seconds until the battery is empty
    assert kpi["devices_tripped"] == sim.system.n_devices
    assert kpi["ride_through_s"] == pytest.approx(expected, abs=1.0)


def test_chiller_trip_on_a_hot_day_warms_the_facility_water():
    over = {"time": {"start": "2026-07-15T14:00:00", "duration": "30 min", "step": "1 s"}, "halls": ONE_US,
            "plant": {"weather": {"kind": "constant", "t_dry_bulb": "42 degC", "rh": 0.2},
                      "facility_water_supply": "30 degC"},
            "events": [{"at": "5 min", "kind": "chiller_trip"}],
            "record": {"rack": "off", "facility": "1 s"}}
    sim, tree, kpi = _run(ANNUAL, over)
    f = tree["facility"].to_dataset()
    assert float(f["p_chiller"].isel(time=slice(0, 290)).mean()) > 0
    assert float(f["p_chiller"].isel(time=slice(400, None)).max()) == 0.0
    assert float(f["t_facility_supply"][-1]) > float(f["t_facility_supply"][250]) + 3.0


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.xdist_group("annual")
def test_readme_annual_table_is_these_runs(annual):
    """The README's annual table (the Leesburg hall on W32 in three climates and with cooling
    towers) is what a year of ``annual-leesburg.yaml`` gives with the weather file changed: PUE
    to the three decimals shown, chiller and full free-cooling hours to the hour, WUE to
    0.01 L/kWh (the "before" columns are earlier versions' and not checked)."""
    text = (SCENARIOS.parent / "README.md").read_text(encoding="utf-8")
    table = text.split("| climate (dry coolers, W32) |", 1)[1].split("\n\n", 1)[0]
    for label in ANNUAL_ROWS:
        row = next(r for r in table.splitlines() if r.startswith(f"| {label} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        k = annual[label]
        assert f"{k['pue']:.3f}" == cells[1], (label, k["pue"])
        assert round(k["chiller_hours"]) == int(cells[4].replace(",", "")), (label, k["chiller_hours"])
        assert round(k["full_free_cooling_hours"]) == int(cells[5].replace(",", "")), label
        wue = 0.0 if cells[6] == "0" else float(cells[6].split()[0])
        assert k["wue_L_per_kWh"] == pytest.approx(wue, abs=0.005), label
