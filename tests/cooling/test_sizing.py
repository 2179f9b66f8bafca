"""Plant sizing from the IT design load with N + R (twin.cooling.sizing), against hand
calculations from the catalogue's figures."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from tests.cooling.test_circuit_pumps import _hand as pumps_by_hand
from twin.catalog import load_catalog
from twin.cooling.config import PlantSpec
from twin.cooling.facility import Plant
from twin.cooling.sizing import DesignHeat, least_loss_size, standard_rating, unit_size, units_for_load
from twin.power.chain import design_ac_power, design_bus_load
from twin.power.selection import transformer_entry, ups_entry
from twin.power.ups import ups_loss_coefficients
from twin.scenario import load_scenario
from twin.sim.driver import Simulation
from twin.site.weather import Weather
from twin.units import CP_AIR, CP_WATER, RHO_AIR, RHO_WATER

CAT = load_catalog()
MILD = Weather.constant(15.0, rh=0.5)


@pytest.mark.parametrize("load, unit, r, n", [
    (0.31e6, 1e6, 1, 2),  # N = 1 (never 0), + 1
    (2e6, 1e6, 1, 3),  # an exact multiple needs no extra unit
    (2e6 + 1.0, 1e6, 0, 3),
    (0.0, 1e6, 1, 2),
    (1.2e6, 150e3, 2, 10),
])
def test_units_for_load_is_n_plus_r(load, unit, r, n):
    assert units_for_load(load, unit, r) == n


def test_units_for_load_needs_a_capacity():
    with pytest.raises(ValueError, match="unit capacity must be > 0"):
        units_for_load(1e6, 0.0)


@pytest.fixture(scope="module")
def leesburg():
    """The annual Leesburg hall (8 Trn3 UltraServers on two 1.35 MW CDUs), built, not run."""
    return Simulation(load_scenario(SCENARIOS / "annual-leesburg.yaml", {"time": {"duration": "1 h"}}))


def test_design_heat_is_the_racks_design_ac_load(leesburg):
    """Liquid + air = the racks' design AC input (the power chain's design load, the same
    number), the liquid share inside the 85–95 % of liquid-cooled sleds (CATALOGUE-SOURCES,
    "liquid share of heat")."""
    sy, plant = leesburg.system, leesburg.plant
    d = plant.design
    assert d.it == pytest.approx(design_ac_power(sy), rel=1e-12)
    assert leesburg.chain.design == d.it
    assert d.liquid == pytest.approx(float(sy.chip["tdp"][sy.device_liquid].sum()), rel=1e-12)
    assert 0.85 < d.liquid / d.it < 0.95


def test_leesburg_counts_by_hand(leesburg):
    """Each equipment type's count from the design heat it carries (hand calculation, catalogue
    figures), N+1: the liquid 1.274 MW and the air 0.195 MW of the hall's 1.468 MW AC design load.

    - CRAHs: ⌈0.195 MW / (150 − 8 kW)⌉ + 1 = 2 + 1 = 3 (150 kW units net of their 8 kW fans);
    - chilled water: the air, the 3 CRAHs' fans on the cube law and the chilled-water pumps (on
      their curve, 70 kPa held at the farthest coil: tests/cooling/test_circuit_pumps.py's hand
      calculation), ⌈0.198 MW / 1 MW⌉ = 1 dry cooler (N: the chillers back it up);
    - facility water: the liquid plus the CDU pumps (at most their 2 × 12.1 kW nameplate) and the
      facility pumps (at most their 17.3 kW at the CDUs' 2 × 2,000 L/min design flow):
      ⌈1.27–1.32 MW / 1 MW⌉ + 1 = 3 dry coolers;
    - chillers: both circuits, ⌈1.47–1.52 MW / 1 MW⌉ + 1 = 3.
    (Sized from the two CDUs' nameplates instead, the hall had 5 CRAHs and 4 chillers.)
    """
    plant, d = leesburg.plant, leesburg.plant.design
    crah = CAT.crahs["crah-150kw"]
    n_crah = math.ceil(d.air / (crah.capacity.si - crah.fan_power.si)) + 1
    assert plant.crah_count == n_crah == 3
    flow = d.air / (RHO_AIR * CP_AIR * crah.delta_t_air.si)
    p_fans = n_crah * crah.fan_power.si * (flow / (n_crah * crah.air_flow.si)) ** 3
    pump = CAT.pumps["facility-water-pump"]
    q_design = n_crah * crah.capacity.si / (CP_WATER * crah.delta_t_water.si) / RHO_WATER
    q = (d.air + p_fans) / (CP_WATER * crah.delta_t_water.si) / RHO_WATER
    n_pumps = math.ceil(q_design / pump.design_flow.si)
    q_chw = d.air + p_fans + pumps_by_hand(q, q_design, n_pumps)[0]
    assert plant.design_heat["chilled_water"] == pytest.approx(q_chw, rel=1e-9)
    assert plant.chw_bank.count == math.ceil(q_chw / 1e6) == 1
    cdu = CAT.cdus["in-row-1350kw"]
    q_fw_low = d.liquid
    q_fw_design = 2 * cdu.design_flow.si  # the CDUs' primary flow at their rated heat
    p_fw_max = pumps_by_hand(q_fw_design, q_fw_design, math.ceil(q_fw_design / pump.design_flow.si))[0]
    assert p_fw_max == pytest.approx(17.3e3, rel=0.01)
    q_fw_high = d.liquid + 2 * cdu.pump_power.si + p_fw_max
    assert q_fw_low < plant.design_heat["facility_water"] < q_fw_high
    assert plant.bank.count == math.ceil(q_fw_low / 1e6) + 1 == math.ceil(q_fw_high / 1e6) + 1 == 3
    assert plant.chiller_count == math.ceil((q_fw_low + q_chw) / 1e6) + 1 == 3
    # the 1 MW size: two duty units, where the 400 kW size would need four
    assert plant.chillers.chiller.capacity.si == 1e6 and math.ceil((q_fw_low + q_chw) / 400e3) == 4
    assert math.ceil((q_fw_high + q_chw) / 1e6) + 1 == 3
    # the power chain from the same load: UPS ⌈(1.468 MW + busway) / 500 kW⌉ + 1 = 4 modules,
    # transformers ⌈1.25 × 1.468 MW / (0.95 × 1,000 kVA)⌉ = 2
    assert leesburg.chain.n_modules == math.ceil(d.it * 1.004 / 500e3) + 1 == 4
    assert leesburg.chain.n_transformers == math.ceil(1.25 * d.it / (0.95 * 1e6)) == 2


def _plant(spec: dict, design: DesignHeat) -> Plant:
    return Plant(PlantSpec.model_validate({"facility_water_supply": "30 degC", **spec}), CAT, ["in-row-1350kw"],
                 np.array([35.0]), np.array([20.0]), 60.0, weather=MILD, design=design)


def test_scenario_count_and_redundancy_win():
    """``count:`` wins over the sizing; ``redundant:`` is R of N + R for its type (the chilled
    water's free-cooling units are N whatever it is)."""
    design = DesignHeat(0.6e6, 0.1e6)
    plant = _plant({}, design)
    assert (plant.bank.count, plant.chiller_count, plant.crah_count, plant.chw_bank.count) == (2, 2, 2, 1)
    plant = _plant({"crah": {"count": 7}, "chiller": {"redundant": 0},
                    "heat_rejection": {"redundant": 2}}, design)
    assert (plant.crah_count, plant.chiller_count, plant.bank.count, plant.chw_bank.count) == (7, 1, 3, 1)
    plant = _plant({"heat_rejection": {"count": 5}, "chiller": {"count": 0}}, design)
    assert (plant.bank.count, plant.chiller_count) == (5, 0)


def test_towers_are_sized_for_the_water_cooled_condensers():
    """Cooling towers reject the condensers' heat of both circuits at the rated COP:
    (q_fw + q_chw)(1 + 1/6.28) for 0.90 + 0.05 MW is 1.10 MW, two towers + 1, where dry coolers
    for the facility water alone (0.9 MW) are one + 1."""
    design = DesignHeat(0.9e6, 0.05e6)
    towers = _plant({"heat_rejection": {"kind": "cooling_tower"}}, design)
    q_both = towers.design_heat["facility_water"] + towers.design_heat["chilled_water"]
    assert towers.design_heat["heat_rejection"] == pytest.approx(q_both * (1 + 1 / 6.28), rel=1e-12)
    assert towers.bank.count == 3
    assert _plant({}, design).bank.count == 2


@pytest.mark.parametrize("load, sizes, min_loads, chosen", [
    (0.31e6, [1e6, 0.4e6], [0.25, 0.25], 1),  # one duty unit either way: the smaller, PLR 0.78
    (1.48e6, [1e6, 0.4e6], [0.25, 0.25], 0),  # two of 1 MW against four of 400 kW
    (0.8e6, [1e6, 0.4e6], [0.25, 0.25], 0),  # 0.8 MW is exactly two 400 kW units, one 1 MW unit fewer
    (0.3e6, [0.4e6, 0.5e6], [0.9, 0.25], 1),  # the smaller would run below its minimum load (0.75 < 0.9)
    (0.05e6, [1e6, 0.4e6], [0.25, 0.25], 1),  # every size below its minimum: the smallest still
])
def test_unit_size_is_the_smallest_with_the_fewest_duty_units(load, sizes, min_loads, chosen):
    assert unit_size(load, sizes, min_loads) == chosen


def test_unit_size_needs_capacities():
    with pytest.raises(ValueError, match="capacities must be > 0"):
        unit_size(1e6, [1e6, 0.0], [0.25, 0.25])


def test_phoenix_chillers_by_hand():
    """The Phoenix design-day hall (a Trn3 UltraServer and a GB300 NVL72, 0.31 MW of both
    circuits at the IT design load): by hand from the catalogue's air-cooled chillers (dry
    coolers), 1 MW needs ⌈0.315 / 1⌉ = 1 duty unit and 400 kW ⌈0.315 / 0.4⌉ = 1, so the
    smaller: 1 + 1 chillers of 400 kW, at PLR 0.79 at design, above its 25 % minimum load
    (1 MW: 0.31). A ``template:`` in the scenario wins; cooling towers take the water-cooled
    size (the catalogue's only, 1 MW)."""
    plant = Simulation(load_scenario(SCENARIOS / "design-day-phoenix.yaml", {"time": {"duration": "1 h"}})).plant
    q = plant.design_heat["facility_water"] + plant.design_heat["chilled_water"]
    assert 0.30e6 < q < 0.33e6
    air = {n: c for n, c in CAT.chillers.items() if c.condenser == "air"}
    duty = {n: math.ceil(q / c.capacity.si) for n, c in air.items()}
    fewest = [n for n in air if duty[n] == min(duty.values())]
    name = min(fewest, key=lambda n: air[n].capacity.si)
    assert name == "air-cooled-chiller-400kw" and duty[name] == 1
    ch = plant.chillers
    assert ch.chiller.capacity.si == air[name].capacity.si == 400e3
    assert ch.chiller_count == duty[name] + 1 == 2
    plr = q / ch.chiller.capacity.si
    assert plr == pytest.approx(0.79, abs=0.02) and plr > ch.min_load
    assert q / 1e6 > CAT.chillers["air-cooled-chiller-1mw"].min_load.si  # the 1 MW unit passes too
    design = plant.design
    named = _plant({"chiller": {"template": "air-cooled-chiller-1mw"}}, design).chillers
    assert (named.chiller.capacity.si, named.chiller_count) == (1e6, 2)
    towers = _plant({"heat_rejection": {"kind": "cooling_tower"}}, design).chillers
    assert (towers.chiller.condenser, towers.chiller.capacity.si) == ("water", 1e6)


def _loss_by_hand(p, n, rating, a):
    """Losses of n modules of ``rating`` sharing p, on the three-term model (White Paper 113):
    n P_r (a₀ + a₁ x + a₂ x²) with x = p / (n P_r), written out here."""
    x = p / (n * rating)
    return n * rating * (a[0] + a[1] * x + a[2] * x * x)


@pytest.mark.parametrize("design, size, n", [
    (0.3129e6, 250e3, 3),  # Phoenix: 3 × 250 kW at 42 % lose less than 2 × 500 kW at 31 %
    (1.4684e6, 500e3, 4),  # Leesburg: 4 × 500 kW at 74 % lose less than 7 × 250 kW at 84 %
])
def test_ups_module_size_loses_least_at_the_design_load(design, size, n):
    """The module size of the catalogue's modular family whose N+1 modules lose least at the
    design output, against the losses of each size worked out by hand on its fitted curve."""
    p = design_bus_load(design)
    sizes = {k: u for k, u in CAT.ups.items() if u.family == "modular-double-conversion"}
    assert len(sizes) == 2
    by_hand = {}
    for k, u in sizes.items():
        a = ups_loss_coefficients([q[0] for q in u.efficiency.points], [q[1] for q in u.efficiency.points])
        m = math.ceil(p / u.rating.si) + 1
        by_hand[k] = (_loss_by_hand(p, m, u.rating.si, a), m)
    best = min(by_hand, key=lambda k: by_hand[k][0])
    assert (sizes[best].rating.si, by_hand[best][1]) == (size, n)
    assert ups_entry(CAT, None, design) == best
    # the scenario's template wins
    assert ups_entry(CAT, "ups-1250kw", design) == "ups-1250kw"


def test_least_loss_size_rules():
    """No-load losses only (L = n C a₀): the size with the least installed capacity N+1 wins;
    equal losses: the smaller module."""
    caps = [100.0, 250.0, 400.0]
    # 500 W: 6 × 100 (600), 3 × 250 (750), 3 × 400 (1,200)
    assert least_loss_size(500.0, caps, lambda i, n: n * caps[i] * 0.01) == (0, 6)
    # 800 W: 9 × 100 (900), 5 × 250 (1,250), 3 × 400 (1,200)
    assert least_loss_size(800.0, caps, lambda i, n: n * caps[i] * 0.01) == (0, 9)
    assert least_loss_size(800.0, caps, lambda i, n: 1.0) == (0, 9)
    assert least_loss_size(800.0, caps[::-1], lambda i, n: 1.0, redundant=0) == (2, 8)
    with pytest.raises(ValueError, match="capacities must be > 0"):
        least_loss_size(1.0, [0.0], lambda i, n: 0.0)


@pytest.mark.parametrize("kva, rating", [
    (0.4117e6, 500e3),  # Phoenix: 1.25 × 0.313 MW / 0.95
    (0.5e6, 500e3),  # a rating that fits exactly
    (0.6e6, 750e3),
    (1.932e6, 1000e3),  # Leesburg: above the largest, which is then counted (2 units)
])
def test_transformer_standard_rating(kva, rating):
    """The smallest standard rating of the DOE 2016 family at or above the sized kVA, else the
    largest; the entry chosen for an IT design load at PF 0.95."""
    names = [k for k, t in CAT.transformers.items() if t.family == "doe-2016-liquid"]
    ratings = [CAT.transformers[k].rating.si for k in names]
    assert sorted(ratings) == [500e3, 750e3, 1000e3]
    assert ratings[standard_rating(kva, ratings)] == rating
    design = kva * 0.95 / 1.25
    assert CAT.transformers[transformer_entry(CAT, None, design, 0.95)].rating.si == rating
    assert transformer_entry(CAT, "mv-transformer-2500kva", design, 0.95) == "mv-transformer-2500kva"
