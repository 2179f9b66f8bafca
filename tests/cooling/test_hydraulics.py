"""Pump and system curves, control and flow sharing against closed-form hand calculations."""

import numpy as np
import pytest

from twin.catalog.model import load_catalog
from twin.cooling.hydraulics import (
    branch_flows,
    dp_control_pressure,
    dp_controlled_power,
    fluid_resistance_factor,
    loop_operating_point,
    operating_flow,
    parallel_resistance,
    pump_curve_coefficient,
    pump_efficiency,
    pump_power,
    pump_pressure,
    resistance,
    speed_for_flow,
)

PUMP = load_catalog().pumps["cdu-pump-row"]
QD, PD, P0 = PUMP.design_flow.si, PUMP.design_pressure.si, PUMP.shutoff_pressure.si
ETA, DRIVE = PUMP.efficiency.si, PUMP.drive_efficiency.si
A = pump_curve_coefficient(P0, QD, PD)


def test_curve_passes_through_rating_and_shutoff():
    assert pump_pressure(QD, 1.0, P0, A) == pytest.approx(PD)
    assert pump_pressure(0.0, 1.0, P0, A) == pytest.approx(P0)
    # affinity laws: at 60 % speed and 60 % flow the pressure is 36 %
    assert pump_pressure(0.6 * QD, 0.6, P0, A) == pytest.approx(0.36 * PD)
    with pytest.raises(ValueError, match="shut-off"):
        pump_curve_coefficient(PD, QD, P0)


def test_design_flow_and_power_by_hand():
    k = resistance(QD, PD)  # loop sized to give the design flow at the rated point
    q = operating_flow(1.0, 1, P0, A, 0.0, k)
    assert q == pytest.approx(QD, rel=1e-12)
    eta = pump_efficiency(q, 1.0, 1, QD, ETA)
    assert eta == pytest.approx(ETA)  # rated at its best-efficiency point
    # hand: P = Q Δp / (η_pump η_drive) = 0.01667 m³/s × 250 kPa / (0.75 × 0.92) = 6.04 kW,
    # which is the catalogue's stated power (rounded to 0.01 kW)
    hand = (1000 / 60000) * 250e3 / (0.75 * 0.92)
    assert pump_power(q, pump_pressure(q, 1.0, P0, A), eta, DRIVE) == pytest.approx(hand, rel=1e-9)
    assert PUMP.power.si == pytest.approx(hand, rel=0.01)
    # OCP guidance: about 1 kW of pumping per 100 kW at 150 L/min and ≤ 40 psi: the CDU's two
    # duty pumps move 1.35 MW for 12.1 kW, 0.9 kW per 100 kW
    assert 0.5e3 < 2 * hand / 13.5 < 1.5e3


def test_one_of_two_parallel_pumps_tripping_leaves_60_to_70_percent():
    k = resistance(2 * QD, PD)  # two pumps, each at its rated point, on a closed loop
    q2 = operating_flow(1.0, 2, P0, A, 0.0, k)
    q1 = operating_flow(1.0, 1, P0, A, 0.0, k)
    assert q2 == pytest.approx(2 * QD)
    # closed form: Q₁/Q₂ = √((k + a/4) / (k + a)) = √(100 / 212.5) = 0.686
    assert q1 / q2 == pytest.approx(np.sqrt((k + A / 4) / (k + A)), rel=1e-12)
    assert q1 / q2 == pytest.approx(0.686, abs=1e-3)
    assert 0.60 <= q1 / q2 <= 0.70


def test_affinity_power_cube_on_a_loop_without_static_head():
    k = resistance(QD, PD)
    q = operating_flow(0.5, 1, P0, A, 0.0, k)
    assert q == pytest.approx(0.5 * QD)
    p_full = pump_power(QD, PD, pump_efficiency(QD, 1.0, 1, QD, ETA))
    p_half = pump_power(q, pump_pressure(q, 0.5, P0, A), pump_efficiency(q, 0.5, 1, QD, ETA))
    assert p_half / p_full == pytest.approx(0.125, rel=1e-9)


def test_dp_control_and_minimum_speed():
    dp_set, k_path = 60e3, resistance(QD, PD - 60e3)  # 60 kPa at the index rack at design
    need = dp_control_pressure(QD, dp_set, k_path)
    assert need == pytest.approx(PD)
    assert speed_for_flow(QD, need, 1, P0, A) == pytest.approx(1.0)
    # at half flow the controller still holds 60 kPa: Δp = 60 + 190/4 = 107.5 kPa
    need_half = dp_control_pressure(QD / 2, dp_set, k_path)
    assert need_half == pytest.approx(60e3 + (PD - 60e3) / 4)
    s = speed_for_flow(QD / 2, need_half, 1, P0, A)
    assert pump_pressure(QD / 2, s, P0, A) == pytest.approx(need_half)
    # at a trickle the drive stops at its minimum speed
    assert speed_for_flow(0.01 * QD, dp_control_pressure(0.01 * QD, 0.0, k_path), 1, P0, A,
                          min_speed=PUMP.min_speed.si) == pytest.approx(0.3)


def test_racks_share_flow_by_resistance():
    # two racks, the second with four times the resistance: flows 2 : 1, same pressure drop
    k = np.array([1.0e9, 4.0e9])
    q = branch_flows(0.003, k)
    assert q.sum() == pytest.approx(0.003)
    assert q[0] / q[1] == pytest.approx(2.0, rel=1e-12)
    assert k[0] * q[0] ** 2 == pytest.approx(k[1] * q[1] ** 2)
    assert parallel_resistance(k) * 0.003 ** 2 == pytest.approx(k[0] * q[0] ** 2)
    # grouped by CDU: each group's flows add up to its own total
    q = branch_flows(np.array([1.0, 2.0]), np.array([1.0, 1.0, 4.0, 1.0]), group=[0, 0, 1, 1])
    assert q.tolist() == pytest.approx([0.5, 0.5, 2 / 3, 4 / 3])


def test_glycol_raises_loop_resistance_as_the_properties_give():
    assert fluid_resistance_factor(995.0, 7e-4, 995.0, 7e-4) == pytest.approx(1.0)
    # all friction, viscosity ×2.14, density +1.85 %: 1.0185^0.75 × 2.14^0.25 = 1.2236
    f = fluid_resistance_factor(1012.5, 1.5417e-3, 994.1, 7.1914e-4, friction_share=1.0)
    assert f == pytest.approx(1.0185 ** 0.75 * (1.5417 / 0.71914) ** 0.25, rel=1e-3)


def loop(k_racks, group, n_groups, n_pumps, dp_set, k_path):
    return loop_operating_point(k_racks, group, n_groups, dp_set, k_path, n_pumps, P0, A,
                                PUMP.min_speed.si, QD, ETA, DRIVE)


def test_loop_at_design_pumps_what_curve_and_pressure_drop_give():
    # one CDU, two identical racks taking half the design flow each at 100 kPa; the CDU and
    # headers take the remaining 150 kPa of the pump's 250 kPa rated pressure at design flow
    dp_rack, q_rack = 100e3, QD / 2
    k_rack = resistance(q_rack, dp_rack)
    k_path = resistance(QD, PD - dp_rack)
    op = loop(np.array([k_rack, k_rack]), np.array([0, 0]), 1, np.array([1]), dp_rack, k_path)
    assert op["held"].all()
    assert op["flow"][0] == pytest.approx(QD, rel=1e-9)
    assert op["speed"][0] == pytest.approx(1.0, rel=1e-9)
    # hand: curve pressure at design (250 kPa) × design flow / (0.75 × 0.92)
    hand = QD * PD / (ETA * DRIVE)
    assert op["power"][0] == pytest.approx(hand, rel=0.05)  # the bound; it is 1e-9 here
    assert op["power"][0] == pytest.approx(hand, rel=1e-9)


def test_two_racks_of_different_resistance_share_flow_as_the_resistances_give():
    k1 = resistance(QD / 2, 100e3)
    k = np.array([k1, 2.25 * k1])  # the second rack 2.25× the resistance: 1.5 : 1 in flow
    op = loop(k, np.array([0, 0]), 1, np.array([1]), 100e3, resistance(QD, PD - 100e3))
    q = op["rack_flow"]
    assert q[0] / q[1] == pytest.approx(1.5, rel=0.02)  # the bound; exact here
    assert q[0] / q[1] == pytest.approx(1.5, rel=1e-12)
    assert k[0] * q[0] ** 2 == pytest.approx(100e3, rel=1e-9)  # DP held at the racks


def test_loop_pump_trip_and_minimum_speed():
    # two half-size duty pumps at their rated points on one loop; one trips: the other,
    # already at full speed, runs out along its curve to 69 % of the flow
    k_path = resistance(2 * QD, PD - 100e3)
    k_rack = resistance(QD, 100e3)
    both = loop(np.array([k_rack, k_rack]), np.array([0, 0]), 1, np.array([2]), 100e3, k_path)
    one = loop(np.array([k_rack, k_rack]), np.array([0, 0]), 1, np.array([1]), 100e3, k_path)
    assert both["held"][0] and not one["held"][0]
    assert one["flow"][0] / both["flow"][0] == pytest.approx(0.686, abs=1e-3)
    # a lightly loaded loop asks for less than the minimum speed and over-delivers
    low = loop(np.array([k_rack, k_rack]), np.array([0, 0]), 1, np.array([2]), 2e3, k_path)
    assert low["speed"][0] == pytest.approx(PUMP.min_speed.si)
    assert low["dp_racks"][0] > 2e3
    none = loop(np.array([k_rack]), np.array([0]), 1, np.array([0]), 100e3, k_path)
    assert none["flow"][0] == 0.0 and none["power"][0] == 0.0


@pytest.mark.parametrize("n_pumps", [1, 2])
def test_loop_operating_point_agrees_with_a_nonlinear_solver(n_pumps):
    """Second solver: scipy.optimize.fsolve on the loop's equations written out in full
    (pump curve = path + racks, equal pressure across the racks, flows add up), for three racks
    of different resistance; agreement to 1e-8 relative (fsolve's xtol)."""
    from scipy.optimize import fsolve

    k = resistance(QD / 3, 100e3) * np.array([0.7, 1.0, 1.6])
    k_path = resistance(2 * QD, PD - 100e3)
    op = loop(k, np.zeros(3, dtype=int), 1, np.array([n_pumps]), 100e3, k_path)
    s = op["speed"][0]

    def equations(x):
        q1, q2, q3, dp_r = x
        q = q1 + q2 + q3
        return [pump_pressure(q, s, P0, A, n_pumps) - k_path * q * q - dp_r,
                k[0] * q1 * q1 - dp_r, k[1] * q2 * q2 - dp_r, k[2] * q3 * q3 - dp_r]

    sol = fsolve(equations, [QD / 3, QD / 3, QD / 3, 1e5], xtol=1e-12)
    assert op["rack_flow"] == pytest.approx(sol[:3], rel=1e-8)
    assert op["dp_racks"][0] == pytest.approx(sol[3], rel=1e-8)


def test_two_racks_of_different_resistance_on_one_cdu_in_a_run():
    """The Phoenix design day with the GB300 NVL72 rack's pressure drop at design flow raised to
    180 kPa (a catalogue override) while the Trn3 racks keep the CDU's 100 kPa index pressure:
    in the run, each rack's flow (from what it records: q_liquid / (c_p (T_return − T_supply)))
    stands in the ratio the resistances give, Q_nvl / Q_trn3 = √(k_trn3 / k_nvl) with
    k = Δp_d / Q_d², within 2 % (a hand calculation's tolerance; the model holds the index
    Δp exactly, so it agrees to rounding). The CDU's pumps then move the smaller total flow."""
    from tests.conftest import SCENARIOS
    from twin.export.dataset import build_tree
    from twin.scenario import load_scenario
    from twin.sim.driver import Simulation
    from twin.units import CP_WATER

    over = {"time": {"duration": "5 min", "step": "10 s"},
            "record": {"rack": "1 min", "cdu": "1 min", "device": "off", "facility": "off"},
            "catalog": {"racks": {"gb300-nvl72": {"pressure_drop": {"value": "180 kPa",
                                                                      "source": "test: a higher-resistance rack"}}}}}
    sim = Simulation(load_scenario(SCENARIOS / "design-day-phoenix.yaml", over))
    sim.run()
    r = build_tree(sim)["rack"].to_dataset()
    flow = (r["q_liquid"] / (CP_WATER * (r["t_coolant_return"] - r["t_coolant_supply"]))).values[-1]
    names = list(r["rack"].values)
    cat = load_catalog()
    dp_index = cat.cdus["in-row-1350kw"].index_pressure.si
    q_trn3, q_nvl = cat.racks["trn3-gen2-rack"].coolant_flow.si, cat.racks["gb300-nvl72"].coolant_flow.si
    k_trn3, k_nvl = dp_index / q_trn3 ** 2, 180e3 / q_nvl ** 2
    hand = np.sqrt(k_trn3 / k_nvl)  # (190 / 135) √(100 / 180) ≈ 1.05
    assert flow[names.index("nvl")] / flow[names.index("us-a")] == pytest.approx(hand, rel=0.02)
    assert flow[names.index("nvl")] / flow[names.index("us-a")] == pytest.approx(hand, rel=1e-9)
    assert flow[names.index("us-a")] == pytest.approx(flow[names.index("us-b")], rel=1e-12)
    # and each at √(Δp_index / k): the Trn3 racks at their design flow, the GB300 rack below its own
    rho = sim.system.rack_m_coolant[0] / q_trn3
    assert flow[names.index("nvl")] / rho == pytest.approx(np.sqrt(dp_index / k_nvl), rel=1e-9)
    c = build_tree(sim)["cdu"].to_dataset()
    assert float(c["flow"].values[-1, 0]) == pytest.approx(float(flow.sum()), rel=1e-9)


def test_dp_controlled_power_at_one_point_is_the_array_path():
    """One operating point takes the float path; a batch of them the array functions. Bit for
    bit equal over flows from none to run-out, below and above the drive's minimum speed, one
    to three pumps (and none) and efficiencies near the 5 % floor."""
    rng = np.random.default_rng(3)
    n = 2000
    q = QD * rng.uniform(0.0, 4.0, n)
    q[:50] = 0.0
    pumps = rng.integers(0, 4, n).astype(float)
    dp_index = PD * rng.uniform(0.05, 0.6, n)
    k_path = (PD - dp_index) / QD ** 2 * rng.uniform(0.5, 2.0, n)
    min_speed = rng.choice([0.0, 0.3, 0.6], n)
    best = QD * rng.uniform(0.2, 1.5, n)
    batch = dp_controlled_power(q, pumps, dp_index, k_path, P0, A, min_speed, best, ETA, DRIVE)
    one = np.array([dp_controlled_power(*v, P0, A, m, b, ETA, DRIVE)
                    for v, m, b in zip(zip(q, pumps, dp_index, k_path), min_speed, best)])
    assert np.isfinite(batch).all() and (batch > 0).any()
    np.testing.assert_array_equal(one, batch)
