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


def test_ups_heat_is_cooled_by_the_electrical_room_not_the_crahs():
    """Where the UPS losses end: the electrical room's DX units remove them (with the busway and
    miscellaneous heat), the CRAHs do not — the room air carries only what the racks and the
    network put into it. Half an hour of the Phoenix design day in double conversion and in
    eco mode: the CRAH fans and all plant cooling are the same to the bit (nothing on the air or
    liquid side sees the UPS), while the electrical room's cooling follows the UPS losses,
    each step by hand from the recorded heat and outdoor temperature (to 1e-12: the same
    arithmetic)."""
    import numpy as np

    from tests.conftest import SCENARIOS
    from twin.export.dataset import build_tree
    from twin.scenario import load_scenario
    from twin.sim.driver import Simulation

    runs = {}
    for mode in ("double_conversion", "eco"):
        over = {"time": {"duration": "30 min", "step": "60 s"},
                "record": {"facility": "60 s", "cdu": "off", "rack": "off", "device": "off"},
                "plant": {"ups": {"mode": mode}}}
        sim = Simulation(load_scenario(SCENARIOS / "design-day-phoenix.yaml", over))
        sim.run()
        runs[mode] = build_tree(sim)["facility"].to_dataset()
    dc, eco = runs["double_conversion"], runs["eco"]
    assert np.array_equal(dc["p_crah"].values, eco["p_crah"].values)
    assert np.array_equal(dc["p_cooling"].values, eco["p_cooling"].values)
    assert np.all(eco["p_ups_loss"].values < 0.5 * dc["p_ups_loss"].values)
    for f in (dc, eco):
        q = f["p_busway_loss"].values + f["p_ups_loss"].values + f["p_misc"].values
        p_room, _ = electrical_room_cooling(q, f["t_outdoor"].values, *ARGS)
        assert f["p_electrical_room_cooling"].values == pytest.approx(p_room, rel=1e-12)
    assert np.all(eco["p_electrical_room_cooling"].values < dc["p_electrical_room_cooling"].values)
