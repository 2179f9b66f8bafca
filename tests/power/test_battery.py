"""Rack battery backup units: ride-through, discharge and recharge energy."""

import numpy as np
import pytest

from twin.catalog.model import load_catalog
from twin.power.battery import bbu_ride_through, bbu_step

BBU = load_catalog().battery_backup_units["orv3-bbu-shelf-33kw"]
E, PMAX, PC = BBU.energy.si, BBU.rating.si, BBU.charge_power.si
EC, ED = BBU.charge_efficiency.si, BBU.discharge_efficiency.si


def test_ride_through_matches_specification():
    # ORv3 HPR: 240 s at the rated 33 kW from the cells, less the DC-DC output stage.
    assert bbu_ride_through(E, PMAX, PMAX, ED) == pytest.approx(240.0 * ED, rel=1e-12)
    # half load: twice as long; over the rating: cannot carry it
    assert bbu_ride_through(E, PMAX / 2, PMAX, ED) == pytest.approx(480.0 * ED)
    assert bbu_ride_through(E, 1.01 * PMAX, PMAX, ED) == 0.0
    assert np.isinf(bbu_ride_through(E, 0.0, PMAX, ED))


def test_discharge_until_empty_then_recharge_accounts_for_every_joule():
    dt, load = 1.0, np.array([20e3, 33e3])
    e = np.full(2, E)
    t_empty = np.full(2, np.nan)
    delivered = np.zeros(2)
    losses = np.zeros(2)
    for k in range(1000):
        e, p_d, p_c, loss = bbu_step(e, load, True, dt, E, PMAX, PC, EC, ED)
        delivered += p_d * dt
        losses += loss * dt
        newly = np.isnan(t_empty) & (p_d < load)
        t_empty[newly] = k * dt
    # runs out when the hand calculation says, within one step
    assert t_empty == pytest.approx(E * ED / load, abs=dt)
    # cells' energy = delivered + conversion losses (exact bookkeeping)
    assert delivered + losses == pytest.approx(np.full(2, E), rel=1e-12)
    # recharge at constant power: full after E / (η_c P_c) seconds, drawing E / η_c
    drawn = np.zeros(2)
    t_full = np.full(2, np.nan)
    for k in range(20000):
        e, p_d, p_c, loss = bbu_step(e, load, False, 1.0, E, PMAX, PC, EC, ED)
        drawn += p_c
        t_full[np.isnan(t_full) & (e >= E * (1 - 1e-12))] = (k + 1) * 1.0
    assert t_full == pytest.approx(np.full(2, E / (EC * PC)), abs=1.0)
    assert drawn == pytest.approx(np.full(2, E / EC), rel=1e-9)


def test_load_above_rating_is_not_carried():
    e, p_d, _, _ = bbu_step(E, 40e3, True, 1.0, E, PMAX, PC, EC, ED)
    assert p_d == pytest.approx(PMAX)
