"""Server fans, CRAH fan walls and the economiser's fan-versus-compressor optimum."""

import numpy as np
import pytest

from twin.cooling.economiser import economiser_optimum
from twin.cooling.fans import containment_air_flow, fan_power_floor, fan_wall_power, server_fan_speed


def test_server_fan_speed_floor_inlet_and_component_loops():
    s = server_fan_speed(t_inlet=np.array([20.0, 30.0, 40.0, 22.0]),
                         t_component=np.array([60.0, 60.0, 60.0, 85.0]),
                         min_speed=0.3, inlet_low=25.0, inlet_high=35.0,
                         component_target=80.0, component_band=10.0)
    # floor; halfway up the inlet ramp; flat out; halfway up the component loop
    assert s.tolist() == pytest.approx([0.3, 0.65, 1.0, 0.65])
    # power: cube law with a floor (2.9 kW at full speed → 78.3 W at the 30 % floor)
    assert fan_power_floor(np.array([0.0, 0.3, 1.0]), 2.9e3, 0.3).tolist() == pytest.approx(
        [2.9e3 * 0.027, 2.9e3 * 0.027, 2.9e3])


def test_fan_wall_power_by_hand():
    vd, pd, ps, eta = 11.0, 500.0, 20.0, 0.6
    assert fan_wall_power(vd, vd, pd, ps, eta) == pytest.approx(vd * pd / eta)
    # half the air: Δp = 20 + 480/4 = 140 Pa → P = 5.5 × 140 / 0.6 = 1283 W, 14 % of design
    # (not the 12.5 % of the cube law: the static set-point does not fall with flow)
    assert fan_wall_power(vd / 2, vd, pd, ps, eta) == pytest.approx(5.5 * 140 / 0.6)
    assert containment_air_flow(10.0, 0.1) == pytest.approx(11.0)


def test_economiser_optimum_matches_the_closed_form():
    # P(s) = P_f s³ + Q (1 − s) / COP → s* = √(Q / (3 COP P_f))
    p_f, q, cop = 40e3, 300e3, 6.0
    s = np.linspace(0.0, 1.0, 1001)
    speed, total, _ = economiser_optimum(s, p_f * s ** 3, q * (1 - s), cop)
    s_star = np.sqrt(q / (3 * cop * p_f))
    assert speed == pytest.approx(s_star, abs=1e-3)  # grid step
    assert total == pytest.approx(p_f * s_star ** 3 + q * (1 - s_star) / cop, rel=1e-6)
    # a cheap chiller (high COP) makes slow fans the better deal; flat-out fans are not the answer
    assert economiser_optimum(s, p_f * s ** 3, q * (1 - s), 30.0)[0] < speed < 1.0
