"""Chiller: refrigerant approaches, rating round trip, part load, staging, envelope."""

import numpy as np
import pytest

from twin.catalog.model import load_catalog
from twin.cooling.refrigeration import (
    carnot_cop,
    carnot_fraction_from_rating,
    chiller_full_load_cop,
    chiller_leaving_temperature,
    chiller_power,
    part_load_power_fraction,
    refrigerant_temperatures,
    stage_chillers,
)

CAT = load_catalog()


@pytest.mark.parametrize("name", sorted(CAT.chillers))
def test_rated_cop_is_reproduced_at_the_rating_point(name):
    c = CAT.chillers[name]
    args = (c.rating_chw_leaving.si, c.rating_sink_leaving.si, c.evaporator_approach.si,
            c.condenser_approach.si)
    eta = carnot_fraction_from_rating(c.cop_rated.si, *args)
    assert 0.3 < eta < 0.8  # real machines reach 40–75 % of Carnot between refrigerant temperatures
    assert chiller_full_load_cop(*args, eta, 100.0) == pytest.approx(c.cop_rated.si, rel=1e-12)
    # part-load curve is 1 at full load
    assert part_load_power_fraction(1.0, c.part_load.values) == pytest.approx(1.0, abs=1e-9)


def test_approaches_add_to_the_lift_by_hand():
    te, tc = refrigerant_temperatures(6.7, 35.0, 1.5, 1.5)
    assert (te, tc) == (pytest.approx(5.2), pytest.approx(36.5))
    assert carnot_cop(te, tc) == pytest.approx(278.35 / 31.3)
    # a warm-water trim (20 °C leaving, 32 °C condenser leaving): 12 K of water lift is 15 K
    # of refrigerant lift, so COP is 12/15 · (291.65/291.65+…) of the approach-free figure
    eta = 0.7
    with_app = chiller_full_load_cop(20.0, 32.0, 1.5, 1.5, eta, 100.0)
    without = eta * (20.0 + 273.15) / 12.0
    assert with_app == pytest.approx(eta * 291.65 / 15.0)
    assert without / with_app == pytest.approx((293.15 / 12.0) / (291.65 / 15.0))
    assert chiller_full_load_cop(20.0, 20.5, 1.5, 1.5, eta, 12.0) == 12.0  # cap at low lift


def test_part_load_and_minimum_load():
    c = CAT.chillers["water-cooled-chiller-1mw"]
    coef, plr_min = c.part_load.values, c.min_load.si
    # 1 MW chiller at COP 6 and half load: P = (1 MW / 6) · EIR-fPLR(0.5)
    c0, c1, c2 = coef
    assert chiller_power(0.5e6, 1e6, 6.0, coef) == pytest.approx(1e6 / 6 * (c0 + c1 / 2 + c2 / 4))
    # below the minimum unloading ratio the power stays at that of the minimum (hot-gas bypass)
    assert chiller_power(0.05e6, 1e6, 6.0, coef, plr_min) == pytest.approx(
        1e6 / 6 * part_load_power_fraction(plr_min, coef))
    assert chiller_power(0.0, 1e6, 6.0, coef, plr_min) == 0.0
    # or it cycles at the minimum: the same power for the fraction PLR / PLR_min of the time
    assert chiller_power(0.05e6, 1e6, 6.0, coef, plr_min, cycling=True) == pytest.approx(
        1e6 / 6 * part_load_power_fraction(plr_min, coef) * 0.05 / plr_min)
    assert chiller_power(0.5e6, 1e6, 6.0, coef, plr_min, cycling=True) == pytest.approx(
        chiller_power(0.5e6, 1e6, 6.0, coef, plr_min))  # above the minimum: no difference


def test_staging_and_envelope():
    assert stage_chillers(2.5e6, 1e6, 4).tolist() == 3  # ⌈2.5 / 0.9⌉
    assert stage_chillers(np.array([0.0, 0.85e6, 0.95e6, 5e6]), 1e6, 3).tolist() == [0, 1, 2, 3]
    assert chiller_leaving_temperature(np.array([12.0, 32.0]), 20.0).tolist() == [12.0, 20.0]


def test_chiller_plant_by_hand():
    from twin.cooling.refrigeration import chiller_plant

    c = CAT.chillers["water-cooled-chiller-1mw"]
    eta = carnot_fraction_from_rating(c.cop_rated.si, c.rating_chw_leaving.si,
                                      c.rating_sink_leaving.si, c.evaporator_approach.si,
                                      c.condenser_approach.si)
    args = (1e6, 3, eta, 15.0, 1.5, 1.5, c.part_load.values, c.min_load.si, c.max_leaving_water.si)
    # 1.2 MW at 18 °C leaving against 30 °C condenser water: 2 chillers at PLR 0.6
    out = chiller_plant(1.2e6, 18.0, 30.0, *args)
    cop = eta * (16.5 + 273.15) / (31.5 - 16.5)
    c0, c1, c2 = c.part_load.values
    assert out["running"] == 2
    assert out["power"] == pytest.approx(2e6 / cop * (c0 + c1 * 0.6 + c2 * 0.36))
    assert out["q_condenser"] == pytest.approx(1.2e6 + out["power"])
    # a warm-water set-point beyond the envelope: the chiller leaves 20 °C water, not 32 °C
    assert chiller_plant(0.5e6, 32.0, 36.0, *args)["t_leaving"] == 20.0
    # more load than three chillers: carries their capacity only
    assert chiller_plant(5e6, 18.0, 30.0, *args)["q"] == pytest.approx(3e6)


def _run_chillers(kind, template=None):
    """The chillers of a run (the Phoenix design-day scenario with dry coolers, or cooling towers:
    the plant picks the air- or water-cooled trim chiller and its size, or the ``template``)."""
    from tests.conftest import SCENARIOS
    from twin.scenario import load_scenario
    from twin.sim.driver import Simulation

    plant = {"heat_rejection": {"kind": kind}}
    if template is not None:
        plant["chiller"] = {"template": template}
    sim = Simulation(load_scenario(SCENARIOS / "design-day-phoenix.yaml", {"plant": plant}))
    return sim.plant.chillers


@pytest.mark.parametrize("kind, name", [("dry_cooler", "air-cooled-chiller-400kw"),
                                        ("cooling_tower", "water-cooled-chiller-1mw")])
def test_the_runs_chillers_give_the_rated_cop_at_the_rating_point(kind, name):
    """What a run's chillers use (:meth:`twin.cooling.chiller.Chiller.power`, the approach model
    with staging, part load and envelope) at the AHRI 550/590 rating point — one chiller at full
    load, 6.7 °C leaving chilled water, 35 °C air or 29.4 °C entering condenser water (the
    towers' water: wet bulb + their approach) — gives the catalogue's ``cop_rated``, the ASHRAE
    90.1 minimum its ``carnot_fraction`` is derived from. Tolerance 1 %: the fraction is quoted
    to three digits (0.4826 and 0.7062 exactly), so the COP is within 0.1 % of the rating."""
    ch = _run_chillers(kind)
    c = CAT.chillers[name]
    assert ch.chiller.capacity.si == c.capacity.si
    assert ch.chiller.condenser == ("air" if kind == "dry_cooler" else "water")
    assert ch.chiller.carnot_fraction.si == c.carnot_fraction.si
    ch.chiller_count = 1
    q = c.capacity.si
    t_wb = 29.4 - ch.sink_approach  # the towers' water enters the condensers at 29.4 °C
    for loads in ((q, 0.0), (0.0, q), (0.4 * q, 0.6 * q)):  # either circuit, or both at one temperature
        p = ch.power(*loads, 6.7, 6.7, 35.0, t_wb)
        assert q / p == pytest.approx(c.cop_rated.si, rel=0.01)
    exact = carnot_fraction_from_rating(c.cop_rated.si, c.rating_chw_leaving.si, c.rating_sink_leaving.si,
                                        c.evaporator_approach.si, c.condenser_approach.si)
    assert c.carnot_fraction.si == pytest.approx(exact, rel=0.001)


def test_the_runs_chillers_by_hand_at_a_warm_water_trim():
    """The Phoenix afternoon: the air-cooled trim chiller (one, 1 MW, named in the scenario) takes 200 kW off the
    W40 facility water and 50 kW off the 20 °C chilled water at 43 °C dry-bulb. By hand: the
    envelope holds the facility water's chiller at 20 °C leaving (its 40 °C set-point is beyond
    it), so both circuits evaporate at 20 − 2 = 18 °C and condense at 43 + 15 = 58 °C; PLR 0.25;
    P = (1 MW / COP) · EIR-fPLR(0.25) with COP = η (18 + 273.15) / 40. Closed form to 1e-12.
    The old model (fraction of Carnot 0.30 between 40 °C water and 43 °C air) gave COP 8 (its
    cap) for the facility water: ~2.2× less compressor power."""
    ch = _run_chillers("dry_cooler", "air-cooled-chiller-1mw")
    c = CAT.chillers["air-cooled-chiller-1mw"]
    ch.chiller_count = 1
    p = ch.power(200e3, 50e3, 40.0, 20.0, 43.0, 25.0)
    cop = c.carnot_fraction.si * (18.0 + 273.15) / 40.0
    c0, c1, c2 = c.part_load.values
    assert p == pytest.approx(1e6 / cop * (c0 + c1 * 0.25 + c2 * 0.0625), rel=1e-12)
    # below its minimum load (25 %) the screw chiller cycles (catalogue: below_min_load: cycle):
    # 100 kW runs it at 25 % for 40 % of the time
    assert ch.power(80e3, 20e3, 40.0, 20.0, 43.0, 25.0) == pytest.approx(0.4 * p, rel=1e-12)
    # two chillers: a load above 90 % of one starts the second, each at half of it
    ch.chiller_count = 2
    p2 = ch.power(0.95e6, 0.0, 15.0, 20.0, 43.0, 25.0)
    cop15 = c.carnot_fraction.si * (13.0 + 273.15) / 45.0
    x = 0.95 / 2
    assert p2 == pytest.approx(2e6 / cop15 * (c0 + c1 * x + c2 * x * x), rel=1e-12)
