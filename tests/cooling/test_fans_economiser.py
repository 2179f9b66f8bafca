"""Server fans, CRAH fan walls and the economiser's fan-versus-compressor optimum."""

import numpy as np
import pytest

from twin.cooling.economiser import cheapest_speed
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


def test_cheapest_speed_matches_the_closed_form():
    # P(s) = P_f s³ + Q (1 − s) / COP → s* = √(Q / (3 COP P_f)); searched from the heat-rejection
    # table's 41-point grid, refined twice (bracket 0.05 → ≈ 2e-4)
    p_f, q, cop = 40e3, 300e3, 6.0
    speed, total = cheapest_speed(lambda s: p_f * s ** 3 + q * (1 - s) / cop, np.linspace(0.0, 1.0, 41))
    s_star = np.sqrt(q / (3 * cop * p_f))
    assert speed == pytest.approx(s_star, abs=3e-4)
    assert total == pytest.approx(p_f * s_star ** 3 + q * (1 - s_star) / cop, rel=1e-6)
    # a cheap chiller (high COP) makes slow fans the better deal; flat-out fans are not the answer
    assert cheapest_speed(lambda s: p_f * s ** 3 + q * (1 - s) / 30.0, np.linspace(0.0, 1.0, 41))[0] < speed < 1.0


def test_cheapest_speed_against_a_brute_force_scan_with_staging_steps():
    """A compressor whose power has a minimum-load kink and a step where a second chiller
    starts (the trim crosses 90 % of one chiller) makes the total non-convex, with a local
    minimum on each side of the step: the grid finds the global basin and the refinement its
    minimum, as a scan of 200,001 speeds does (to the scan's step and the refinement's 2e-4)."""
    p_f, q0, unit = 800e3, 1.2e6, 1.0e6

    def compressor(q):
        n = np.ceil(q / (0.9 * unit))  # chillers running
        plr = np.divide(q, n * unit, out=np.zeros_like(q), where=n > 0)
        eir = np.where(plr < 0.25, 0.40 * plr / 0.25, 0.33 + 0.17 * plr + 0.50 * plr ** 2)  # cycling below 25 %
        return n * unit / 3.0 * eir

    def cost(s):
        return p_f * s ** 3 + compressor(q0 * (1.0 - 0.8 * s))

    scan = np.linspace(0.0, 1.0, 200_001)
    c = cost(scan)
    best = scan[np.argmin(c)]
    speed, total = cheapest_speed(cost, np.linspace(0.0, 1.0, 41))
    assert total <= c.min() * (1 + 1e-6)
    assert speed == pytest.approx(best, abs=3e-4)
    # the step is a real choice: a local minimum inside each side (two chillers at low load on
    # the left, one on the right), 45 kW apart, and the search takes the right one
    left = scan < (q0 - 0.9 * unit) / (0.8 * q0)  # trim above one chiller's 90 %: two run
    i_left, i_right = np.argmin(c[left]), np.argmin(c[~left])
    assert 0 < i_left < left.sum() - 1 and 0 < i_right < (~left).sum() - 1
    assert c[left].min() - c[~left].min() > 1e3 and speed > scan[left][-1]
