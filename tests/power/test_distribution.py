"""Busway, power factor, transformer count, miscellaneous load and the PSU overload policy."""

import numpy as np
import pytest

from twin.power.delivery import (
    OVERLOAD_POLICIES,
    apparent_power,
    busway_loss_share,
    busway_losses,
    misc_power,
    transformer_count,
)


def test_busway_losses_scale_with_load_squared():
    # I²R at fixed voltage and power factor: half the load, a quarter of the loss.
    assert busway_losses(0.5e6, 1e6, 7.5e3) == pytest.approx(7.5e3 / 4)
    assert busway_losses(1e6, 1e6, 7.5e3) == pytest.approx(7.5e3)
    assert busway_losses(0.0, 1e6, 7.5e3) == 0.0


#: Eaton Pow-R-Way III copper plug-in and feeder busway, Technical Data TD01701001E (March 2017),
#: Table 8: line-to-neutral resistance per 100 ft (30.48 m) [mΩ] by UL 857 ampere rating.
POW_R_WAY_III_COPPER = {600: 2.30, 800: 2.30, 1000: 1.67, 1200: 1.39, 1350: 1.20, 1600: 0.94,
                        2000: 0.76, 2500: 0.55, 3200: 0.47, 4000: 0.38, 5000: 0.27}


def test_busway_loss_at_rating_is_a_run_of_published_copper_busway():
    """The chain's 0.5 % busway loss at rating against the manufacturer's resistance table: per
    metre at rated current, 480 V, PF 0.95, every copper rating from 600 to 5,000 A loses
    0.017–0.023 % (hand: √3 I R' / (V PF)), so 0.5 % is a 22–30 m run — the run length is the
    chain's one estimate. Exact arithmetic: to 1e-12."""
    from twin.power.chain import BUSWAY_LOSS_AT_RATING

    per_m = {a: float(busway_loss_share(r * 1e-3 / 30.48, 1.0, a, 480.0, 0.95))
             for a, r in POW_R_WAY_III_COPPER.items()}
    assert per_m[1600] == pytest.approx(3 ** 0.5 * 1600 * 0.94e-3 / 30.48 / (480 * 0.95), rel=1e-12)
    assert 1.6e-4 < min(per_m.values()) and max(per_m.values()) < 2.3e-4
    lengths = {a: BUSWAY_LOSS_AT_RATING / s for a, s in per_m.items()}
    assert 21.5 < min(lengths.values()) and max(lengths.values()) < 30.0
    # the loss is 3 I² R' ℓ: the share at half the current is half (and the watts a quarter)
    assert busway_loss_share(1e-5, 20.0, 800.0, 480.0, 0.95) == pytest.approx(
        2 * busway_loss_share(1e-5, 20.0, 400.0, 480.0, 0.95), rel=1e-12)


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
    """A Phoenix-design-day-sized hall (350 kW IT, 400 kW design) on modern N+1 UPS modules:
    the twin's own chain (:meth:`PowerChain.delivery`, what every run steps) against a hand
    calculation from the catalogue figures, stage by stage.

    Sizing: busway rated 1.25 × 400 kW with 0.5 % loss there; N+1 = 2 modules of 500 kW for the
    401.6 kW at the UPS output; one 1,000 kVA transformer for 1.25 × 400 kW at PF 0.95. Exact
    arithmetic on the same figures: to 1e-12. The total electrical overhead is that of a modern
    double-conversion chain: about 3 % UPS (96.5–97.5 % efficient), under 0.5 % busway and
    0.5–1 % transformers.
    """
    from twin.catalog.model import load_catalog
    from twin.power.chain import PowerChain
    from twin.power.ups import ups_loss_coefficients

    cat = load_catalog()
    ups, tr = cat.ups["ups-500kw-modern"], cat.transformers["mv-transformer-1000kva"]
    room = cat.room_coolers["dx-electrical-room"]
    coef = ups_loss_coefficients([p[0] for p in ups.efficiency.points],
                                 [p[1] for p in ups.efficiency.points])
    design, p_it, p_cool = 400e3, 350e3, 40e3
    chain = PowerChain(design, ups, "double_conversion", tr, redundant=1, power_factor=0.95,
                       misc_fraction=0.01, room_cooler=room)
    assert (chain.n_modules, chain.n_transformers) == (2, 1)
    nl, ll = tr.no_load_loss.si, tr.load_loss.si
    # DOE 2016 minimum: 99.43 % at 50 % load
    assert 500e3 / (500e3 + nl + ll / 4) == pytest.approx(0.9943, abs=1e-5)
    out = chain.delivery(p_it, p_cool, 60.0, 25.0)
    bus = 0.005 * 1.25 * design * (p_it / (1.25 * design)) ** 2
    assert out["busway"] == pytest.approx(bus, rel=1e-12)
    x = (p_it + bus) / (2 * 500e3)
    l_ups = 2 * 500e3 * (coef[0] + coef[1] * x + coef[2] * x * x)
    assert out["ups"] == pytest.approx(l_ups, rel=1e-12)
    misc = 0.01 * design
    assert out["misc"] == pytest.approx(misc, rel=1e-12)
    # the electrical room at 25 degC outdoors (no economiser: 25 + 5 > 24 degC): DX between
    # 24 - 8 = 16 degC evaporating and 25 + 15 = 40 degC condensing at 0.45 of Carnot, fans 4 %
    q_room = bus + l_ups + misc
    cop = 0.45 * (16.0 + 273.15) / (40.0 - 16.0)
    p_room = q_room * (0.04 + 1.0 / cop)
    assert out["room"] == pytest.approx(p_room, rel=1e-12)
    assert out["q_room"] == pytest.approx(q_room + p_room, rel=1e-12)
    # the transformer carries everything on the utility, its copper loss on apparent power
    p_util = p_it + bus + l_ups + p_cool + misc + p_room
    l_tr = nl + ll * (p_util / 0.95 / 1.0e6) ** 2
    assert out["transformer"] == pytest.approx(l_tr, rel=1e-12)
    assert out["p_facility"] == pytest.approx(p_util + l_tr, rel=1e-12)
    assert out["charge"] == out["battery"] == 0.0  # on the utility with the battery full
    assert 0.028 < out["ups"] / p_it < 0.032
    assert out["busway"] / p_it < 0.005
    assert 0.005 < out["transformer"] / p_it < 0.01
