"""Electrical-room cooling by hand, and equipment counts with N+1."""

import pytest

from twin.catalog.model import load_catalog
from twin.cooling.electrical_room import electrical_room_cooling
from twin.cooling.sizing import units_for_load

RC = load_catalog().room_coolers["dx-electrical-room"]
ARGS = (RC.room_temperature.si, RC.evaporator_approach.si, RC.condenser_approach.si,
        RC.carnot_fraction.si, RC.cop_max.si, RC.fan_power_per_watt.si, RC.economiser_approach.si)


def test_dx_cooling_of_ups_losses_by_hand():
    # 60 kW of UPS losses at 40 °C outdoor: evaporating 24 − 8 = 16 °C, condensing 55 °C,
    # COP = 0.45 × 289.15 / 39 = 3.336; P = 60 kW × (0.04 + 1/3.336)
    p, q_out = electrical_room_cooling(60e3, 40.0, *ARGS)
    cop = 0.45 * 289.15 / 39.0
    assert p == pytest.approx(60e3 * (0.04 + 1 / cop))
    assert q_out == pytest.approx(60e3 + p)  # compressor and fans end as heat outdoors too
    # cold outdoor air: economiser, fans only
    p, _ = electrical_room_cooling(60e3, 5.0, *ARGS)
    assert p == pytest.approx(60e3 * 0.04)


def test_units_for_load_n_plus_one():
    assert units_for_load(2.0e6, 1.0e6) == 3
    assert units_for_load(2.0e6, 1.0e6, redundant=0) == 2
    assert units_for_load(2.1e6, 1.0e6) == 4
    with pytest.raises(ValueError, match="capacity"):
        units_for_load(1.0, 0.0)
