"""The facility water's economiser in a running plant: while the chiller trims, the free-cooling
fans run at the speed with the least fan + compressor power — checked against a brute-force scan
of the same plant step, against the closed form for cube-law fans and a linear trim, and against
the flat-out policy it replaces."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from twin.cooling.economiser import series_trim
from twin.cooling.facility_water import FacilityReturn
from twin.export.dataset import build_tree
from twin.scenario import load_scenario
from twin.sim.driver import Simulation
from twin.units import CP_WATER

PHOENIX = SCENARIOS / "design-day-phoenix.yaml"


def _constant_weather(t_dry_bulb: str, rh: float, fans: str, duration: str):
    """The Phoenix hall in constant weather, 60 s steps, run."""
    over = {"time": {"duration": duration, "step": "60 s"},
            "record": {"facility": "60 s", "cdu": "off", "rack": "off", "device": "off"},
            "plant": {"weather": {"kind": "constant", "t_dry_bulb": t_dry_bulb, "rh": rh},
                      "economiser": {"fans": fans}}}
    sim = Simulation(load_scenario(PHOENIX, over))
    sim.run()
    return sim


def _hot_afternoon(fans="optimal"):
    """The Phoenix hall for 30 min at a constant 43 °C (the design day's afternoon peak)."""
    return _constant_weather("43 degC", 0.1, fans, "30 min")


def test_the_chosen_fan_speed_is_the_minimum_of_a_brute_force_scan():
    """The last plant step's speed against fan + compressor power at 100,001 speeds from still
    to flat out (those whose trim the chillers' spare capacity carries), with the same plant
    state: the chosen total is the scan's minimum to 1e-6, the speed the scan's to the search's
    2e-4; flat out (the old policy) costs more."""
    sim = _hot_afternoon()
    state, fw = sim.state, sim.plant.facility_water
    law, step = state["facility.facility_water_law"], state["facility.facility_water_step"]
    assert law["chiller_enabled"] and law["free_enabled"] and law["name"] == "hold"
    (ret,) = [c for c in sim.plant.components if isinstance(c, FacilityReturn)]
    eco = ret.economiser(state, law)
    t_mean, r_mean = step["tf_mean"], step["r_mean"]

    def total(s):
        return eco["fans"](s) + eco["compressor"](fw.trim(law, s, t_mean, r_mean))

    scan = np.linspace(0.0, law["table"][0][-1], 100_001)
    fits = fw.trim(law, scan, t_mean, r_mean) <= max(eco["spare"], float(fw.trim(law, scan[-1:], t_mean, r_mean)[0]))
    c = np.where(fits, total(scan), np.inf)
    chosen = float(total(np.array([step["speed"]]))[0])
    assert chosen <= c.min() * (1 + 1e-6)
    assert step["speed"] == pytest.approx(scan[np.argmin(c)], abs=2e-4)
    assert 0.0 < step["speed"] < 1.0 and step["q_ch_fw"] > 0  # a real trade: neither still nor flat out
    assert chosen < float(total(scan[-1:])[0])
    # the plant ran it: the recorded fan power is the chosen speed's, the trim the chosen trim
    assert float(state["facility.p_heat_rejection_fans"][0]) == pytest.approx(
        float(eco["fans"](np.array([step["speed"]]))[0]), rel=1e-12)
    assert step["q_ch_fw"] == pytest.approx(float(fw.trim(law, np.array([step["speed"]]), t_mean, r_mean)[0]),
                                            rel=1e-12)


def test_split_against_the_closed_form_for_cube_law_fans_and_a_linear_trim():
    """A table whose outlet fraction falls linearly with speed, r(s) = 1 − a s, makes the trim
    linear, q(s) = R̄ (T_sink + (1 − a s)(T̄ − T_sink) − T_set) / (T̄ − T_set), with slope
    −G = −R̄ a (T̄ − T_sink) / (T̄ − T_set); against cube-law fans P_f s³ and a constant COP
    the optimum is s* = √(G / (3 COP P_f))."""
    sim = Simulation(load_scenario(PHOENIX, {"time": {"duration": "1 min"}}))
    fw = sim.plant.facility_water
    fw.chiller_enabled = fw.free_enabled = True
    s = np.linspace(0.0, 1.0, 41)
    a, t_sink, t_mean, r_mean, cop, p_f = 0.8, 43.0, 48.0, 300e3, 2.5, 40e3
    law = {"name": "hold", "table": (s, 1.0 - a * s), "t_sink": t_sink, "q_cap": 2e6}
    t_set = fw.t_set
    g = r_mean * a * (t_mean - t_sink) / (t_mean - t_set)
    s_star = np.sqrt(g / (3 * cop * p_f))
    assert 0.2 < s_star < 0.9
    q_free, q_ch, speed = fw.split(law, t_mean, r_mean, fans=lambda x: p_f * x ** 3,
                                   compressor=lambda q: q / cop)
    assert speed == pytest.approx(s_star, abs=3e-4)
    t_free = t_sink + (1 - a * speed) * (t_mean - t_sink)
    assert q_ch == pytest.approx(r_mean * (t_free - t_set) / (t_mean - t_set), rel=1e-12)
    assert q_free + q_ch == pytest.approx(r_mean, rel=1e-12)
    # the chillers' spare capacity bounds the trim: the search starts at the speed that fits it
    spare = 0.5 * r_mean * (t_sink + (1 - a * 0.9) * (t_mean - t_sink) - t_set) / (t_mean - t_set) + 0.5 * q_ch
    _, q_lim, s_lim = fw.split(law, t_mean, r_mean, fans=lambda x: p_f * x ** 3,
                               compressor=lambda q: q / cop, spare=spare)
    assert s_lim > speed and q_lim == pytest.approx(spare, rel=1e-9)
    # flat out (the old policy): the trim of full fans, and the heat rejection picks the speed
    fw.fans = "flat_out"
    _, q_flat, none = fw.split(law, t_mean, r_mean, fans=lambda x: p_f * x ** 3,
                               compressor=lambda q: q / cop)
    assert none is None
    assert q_flat == pytest.approx(r_mean * (t_sink + (1 - a) * (t_mean - t_sink) - t_set) / (t_mean - t_set))


def _mild(fans="optimal"):
    """The Phoenix hall for 10 min at a constant 23 °C (between the CRAHs' 20 °C chilled-water
    supply and its return): the chilled water's own units free-cool part of it and the chillers
    trim the rest, while the W40 facility water free-cools alone."""
    return _constant_weather("23 degC", 0.5, fans, "10 min")


def test_chilled_water_fan_speed_is_the_minimum_of_a_brute_force_scan():
    """The chilled water's free-cooling fans while the chillers trim it: the last plant step's
    speed against fan + compressor power at 100,001 speeds (the same plant state, the chillers'
    power with the facility water's trim of the step): the chosen total is the scan's minimum to
    1e-6, the speed the scan's to the search's 2e-4; flat out (the old policy) costs more; the
    supply leaves at its set-point either way."""
    sim = _mild()
    state, room = sim.state, sim.plant.room
    chw = state["facility.chilled_water_step"]
    assert state["facility.facility_water_step"]["q_ch_fw"] == 0.0  # only the chilled water trims
    assert chw["q_free_chw"] > 0 and chw["q_ch_chw"] > 0 and chw["deficit"] == 0.0
    assert chw["t_chw"] == room.t_chw_set
    t_db, t_wb = float(state["facility.t_outdoor"][0]), float(state["facility.t_wet_bulb"][0])
    in_service = state["facility.heat_rejection_in_service"]
    bank = room.chw_bank
    table = bank.table(chw["m_chw"], bank.air_specific_heat(t_wb, room.t_chw_set), in_service)
    compressor = room.compressor(state, t_db, t_wb)
    r_chw = chw["q_free_chw"] + chw["q_ch_chw"]
    # the circuit's heat, written out: the coils' load at the return, m c (T_ret − T_set)
    assert r_chw == pytest.approx(chw["m_chw"] * CP_WATER * (chw["t_chw_ret"] - room.t_chw_set), rel=1e-12)

    def trim(s):
        return series_trim(table, t_db, room.t_chw_set, chw["t_chw_ret"], r_chw, s)

    def total(s):
        return bank.fan_power(s, in_service) + compressor(trim(s))

    scan = np.linspace(0.0, table[0][-1], 100_001)
    spare = state["facility.chiller_spare"]
    c = np.where(trim(scan) <= spare, total(scan), np.inf)
    chosen = float(total(np.array([chw["speed_chw"]]))[0])
    assert chosen <= c.min() * (1 + 1e-6)
    assert chw["speed_chw"] == pytest.approx(scan[np.argmin(c)], abs=2e-4)
    assert 0.0 < chw["speed_chw"] < 1.0
    assert chosen < float(total(scan[-1:])[0])
    assert chw["q_ch_chw"] == pytest.approx(float(trim(np.array([chw["speed_chw"]]))[0]), rel=1e-12)
    # the plant ran it: the recorded fan power is the chosen speed's (the facility water's units
    # at the speed that holds its set-point)
    fw_speed = state["facility.heat_rejection_step"]["speed_fw"]
    assert float(state["facility.p_heat_rejection_fans"][0]) == pytest.approx(
        sim.plant.bank.fan_power(fw_speed, in_service) + bank.fan_power(chw["speed_chw"], in_service), rel=1e-12)
    flat = _mild("flat_out").state["facility.chilled_water_step"]
    assert flat["speed_chw"] == pytest.approx(table[0][-1]) and flat["t_chw"] == room.t_chw_set
    assert flat["q_ch_chw"] < chw["q_ch_chw"]  # full fans free-cool more, for far more fan power


def test_chilled_water_split_against_the_closed_form():
    """A table whose outlet fraction falls linearly with speed, r(s) = 1 − a s, makes the chilled
    water's trim linear, q(s) = ṁ c (T_sink + (1 − a s)(T_ret − T_sink) − T_set), slope
    −G = −ṁ c a (T_ret − T_sink); with the bank's cube-law fans P_f s³ and a constant COP the
    optimum is s* = √(G / (3 COP P_f))."""
    sim = Simulation(load_scenario(PHOENIX, {"time": {"duration": "1 min"}}))
    room = sim.plant.room
    p_f = room.chw_bank.p_fan
    s = np.linspace(0.0, 1.0, 41)
    a, t_db, m, cop = 0.8, 21.0, 1.5, 4.0
    t_ret = room.t_chw_set + 6.0
    air = {"m_chw": m, "t_chw_ret": t_ret}
    g = m * CP_WATER * a * (t_ret - t_db)
    s_star = np.sqrt(g / (3 * cop * p_f))
    assert 0.2 < s_star < 0.9
    chw = room.chilled_water(air, (s, 1.0 - a * s), 1e9, t_db, t_db - 5.0, compressor=lambda q: q / cop)
    assert chw["speed_chw"] == pytest.approx(s_star, abs=3e-4)
    t_free = t_db + (1 - a * chw["speed_chw"]) * (t_ret - t_db)
    assert chw["q_ch_chw"] == pytest.approx(m * CP_WATER * (t_free - room.t_chw_set), rel=1e-12)
    assert chw["q_free_chw"] + chw["q_ch_chw"] == pytest.approx(m * CP_WATER * (t_ret - room.t_chw_set), rel=1e-12)
    # without the chillers' power curve (flat_out): full fans, the flat-out split
    flat = room.chilled_water(air, (s, 1.0 - a * s), 1e9, t_db, t_db - 5.0)
    assert flat["speed_chw"] == 1.0
    assert flat["q_ch_chw"] == pytest.approx(m * CP_WATER * (t_db + (1 - a) * (t_ret - t_db) - room.t_chw_set))


def test_chilled_water_fans_use_no_more_energy_than_flat_out_over_a_design_day():
    """The Phoenix hall through Seattle's 0.4 % cooling design day (12–31 °C: at night the
    chilled water's units free-cool part of the CRAHs' load and the chillers trim the rest), with
    the chilled water's fans at the economiser's choice against flat out while the chillers trim
    (the facility water's fans at its choice in both): the room and the facility water are the
    same every step (to 1e-9: the fans only move heat between free cooling and the chillers),
    the racks give the same heat, and the day's fan + compressor and facility energy are lower."""
    over = {"time": {"duration": "1 d", "step": "60 s"},
            "record": {"facility": "60 s", "cdu": "off", "rack": "off", "device": "off"},
            "plant": {"weather": {"kind": "design_day", "file": "Seattle", "day": "cooling_0.4"}}}
    runs = []
    for fans in ("optimal", "flat_out"):
        sim = Simulation(load_scenario(PHOENIX, over))
        sim.plant.room.fans = fans  # the chilled water's policy alone
        sim.run()
        runs.append((sim, build_tree(sim)["facility"].to_dataset()))
    (opt, f), (flat, g) = runs
    assert opt.plant.room.fans == "optimal" and opt.plant.facility_water.fans == "optimal"
    np.testing.assert_allclose(f["t_cold_aisle"].values, g["t_cold_aisle"].values, rtol=1e-9)
    np.testing.assert_allclose(f["t_facility_supply"].values, g["t_facility_supply"].values, rtol=1e-9)
    pt, qt = opt.plant.totals, flat.plant.totals
    assert pt.e_liquid == pytest.approx(qt.e_liquid, rel=1e-9)
    # hours of partial free cooling: full fans of the chilled water's bank on the flat-out day
    assert qt.e_heat_rejection_fans > 3600 * opt.plant.room.chw_bank.p_fan * 4
    assert pt.e_heat_rejection_fans + pt.e_chiller < qt.e_heat_rejection_fans + qt.e_chiller
    assert pt.e_heat_rejection_fans < 0.1 * qt.e_heat_rejection_fans
    assert opt.totals.e_facility < flat.totals.e_facility
