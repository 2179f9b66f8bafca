"""Cooling-tower latent fraction from the weather, and dry mode."""

import numpy as np
import pytest

from twin.cooling.evaporative import (
    moist_air_enthalpy,
    saturated_humidity_ratio,
    tower_latent_fraction,
    tower_runs_dry,
)
from twin.site.weather import humidity_ratio

# One 1 MW cell: 24 kg/s of water over a 10 K range, liquid-to-gas ratio 1.2.
M_W = 1440 / 60 * 0.9956
Q = M_W * 4180 * 10
M_A = M_W / 1.2


def test_leaving_air_closes_the_enthalpy_balance():
    tdb, twb = np.array([35.0, 5.0]), np.array([24.0, 3.0])
    f, t_out = tower_latent_fraction(Q, M_A, tdb, twb)
    h_in = moist_air_enthalpy(tdb, humidity_ratio(tdb, twb))
    h_out = moist_air_enthalpy(t_out, saturated_humidity_ratio(t_out))
    # bisection to 80/2^60 K: the balance closes to far below 1e-9 of the heat
    assert M_A * (h_out - h_in) == pytest.approx(np.full(2, Q), rel=1e-9)


def test_latent_fraction_by_hand_summer_and_winter():
    # Hand calculation (ASHRAE psychrometrics): summer 35/24 °C, h_in = 72.4 kJ/kg,
    # h_out = h_in + Q/ṁ_a = 122.6 kJ/kg → saturated at 33.9 °C, W 0.0345 → f ≈ 0.98;
    # winter 5/3 °C: h_in = 16.6, h_out = 66.8 kJ/kg → 22.1 °C, W 0.0169 → f ≈ 0.63.
    f, t_out = tower_latent_fraction(Q, M_A, np.array([35.0, 5.0]), np.array([24.0, 3.0]))
    assert t_out == pytest.approx([33.9, 22.1], abs=0.1)
    assert f == pytest.approx([0.98, 0.63], abs=0.01)
    # so a fixed 0.85 overstates winter water use by a third and understates summer's by 13 %


def test_dry_mode_when_the_dry_bulb_allows():
    assert tower_runs_dry(np.array([10.0, 25.0]), 32.0, 12.0).tolist() == [True, False]
