"""The facility water's economiser in a running plant: while the chiller trims, the free-cooling
fans run at the speed with the least fan + compressor power — checked against a brute-force scan
of the same plant step, against the closed form for cube-law fans and a linear trim, and against
the flat-out policy it replaces."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from twin.cooling.facility_water import FacilityReturn
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

PHOENIX = SCENARIOS / "design-day-phoenix.yaml"


def _hot_afternoon(fans="optimal"):
    """The Phoenix hall for 30 min at a constant 43 °C (the design day's afternoon peak), 60 s steps."""
    over = {"time": {"duration": "30 min", "step": "60 s"},
            "record": {"facility": "60 s", "cdu": "off", "rack": "off", "device": "off"},
            "plant": {"weather": {"kind": "constant", "t_dry_bulb": "43 degC", "rh": 0.1},
                      "economiser": {"fans": fans}}}
    sim = Simulation(load_scenario(PHOENIX, over))
    sim.run()
    return sim


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
