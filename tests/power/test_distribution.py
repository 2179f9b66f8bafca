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
