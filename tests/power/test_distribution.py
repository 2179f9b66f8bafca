"""Busway, power factor, transformer count, miscellaneous load and the PSU overload policy."""

import numpy as np
import pytest

from twin.power.delivery import (
    OVERLOAD_POLICIES,
    apparent_power,
    busway_losses,
    misc_power,
    transformer_count,
)


def test_busway_losses_scale_with_load_squared():
    # I²R at fixed voltage and power factor: half the load, a quarter of the loss.
    assert busway_losses(0.5e6, 1e6, 7.5e3) == pytest.approx(7.5e3 / 4)
    assert busway_losses(1e6, 1e6, 7.5e3) == pytest.approx(7.5e3)
    assert busway_losses(0.0, 1e6, 7.5e3) == 0.0


def test_power_factor_changes_the_transformer_count():
    assert apparent_power(1e6, 0.95) == pytest.approx(1e6 / 0.95)
    # 3.9 MW on 2,500 kVA transformers loaded to 80 % (2 MVA each):
    # PF 1 → 3.9 MVA → 2 units; PF 0.95 → 4.105 MVA → 3 units.
    assert transformer_count(3.9e6, 1.0, 2.5e6, max_load=0.8) == 2
    assert transformer_count(3.9e6, 0.95, 2.5e6, max_load=0.8) == 3
    assert transformer_count(3.9e6, 0.95, 2.5e6, redundant=1, max_load=0.8) == 4
    with pytest.raises(ValueError, match="power factor"):
        apparent_power(1e6, 1.2)


def test_misc_load_is_a_constant_share_of_design():
    assert misc_power(2e6, 0.015) == pytest.approx(30e3)


def test_shelf_with_two_psus_left_caps_or_trips():
    # 24 PSUs of 5.5 kW, 22 failed: 11 kW left against an 86 kW demand.
    capacity, demand = 2 * 5.5e3, np.array([86e3, 10e3])
    delivered, tripped = OVERLOAD_POLICIES["cap"](demand, capacity)
    assert delivered.tolist() == [11e3, 10e3] and not tripped.any()
    delivered, tripped = OVERLOAD_POLICIES["trip"](demand, capacity)
    assert delivered.tolist() == [0.0, 10e3] and tripped.tolist() == [True, False]


def test_power_chain_overhead_of_a_350_kw_hall_by_hand():
    """A Phoenix-design-day-sized hall (350 kW IT, 400 kW design) on modern N+1 UPS modules.

    Each loss by hand from the catalogue figures; the total electrical overhead is that of a
    modern double-conversion chain: about 3 % UPS (96.5–97.5 % efficient), under 0.5 %
    busway and 0.5–1 % transformers.
    """
    from twin.catalog.model import load_catalog
    from twin.power.delivery import power_chain
    from twin.power.ups import ups_loss_coefficients, ups_modules

    cat = load_catalog()
    ups = cat.ups["ups-500kw-modern"]
    coef = ups_loss_coefficients([p[0] for p in ups.efficiency.points],
                                 [p[1] for p in ups.efficiency.points])
    design, p_it, p_cool = 400e3, 350e3, 40e3
    n_ups = ups_modules(design * 1.005, ups.rating.si)  # 1 + 1
    assert n_ups == 2
    tr = cat.transformers["mv-transformer-1000kva"]
    nl, ll = tr.no_load_loss.si, tr.load_loss.si
    # DOE 2016 minimum: 99.43 % at 50 % load
    assert 500e3 / (500e3 + nl + ll / 4) == pytest.approx(0.9943, abs=1e-5)
    out = power_chain(p_it, p_cool, design, 0.005 * design, n_ups, ups.rating.si, coef,
                      1, tr.rating.si, nl, ll, 0.95)
    bus = 0.005 * design * (p_it / design) ** 2
    assert out["busway"] == pytest.approx(bus)
    x = (p_it + bus) / (2 * 500e3)
    assert out["ups"] == pytest.approx(2 * 500e3 * (coef[0] + coef[1] * x + coef[2] * x * x))
    s = (p_it + bus + out["ups"] + p_cool) / 0.95
    assert out["transformer"] == pytest.approx(nl + ll * (s / 1.0e6) ** 2)
    assert out["utility"] == pytest.approx(p_it + p_cool + bus + out["ups"] + out["transformer"])
    assert 0.028 < out["ups"] / p_it < 0.032
    assert out["busway"] / p_it < 0.005
    assert 0.005 < out["transformer"] / p_it < 0.01
