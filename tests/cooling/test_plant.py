"""Plant building blocks against closed forms, energy and mass balances and rating points."""

from __future__ import annotations

import numpy as np
import pytest

from twin.cooling.plant import (
    H_FG_WATER,
    affinity_power,
    air_flow_for_heat,
    cooling_tower_outlet,
    cooling_tower_water,
    crah_fan_power,
    dry_cooler_outlet,
    economiser_split,
    fan_power,
    flow_for_heat,
    hx_effectiveness_counterflow,
    hx_outlets,
)
from twin.units import CP_AIR, CP_WATER, RHO_AIR, RHO_WATER

#: Standard gravity [m s-2].
G = 9.80665


def lmtd(dt1, dt2):
    """Log-mean temperature difference (textbook form, for ΔT1 ≠ ΔT2)."""
    return (dt1 - dt2) / np.log(dt1 / dt2)


# --------------------------------------------------------------------------------------------
# ε-NTU
# --------------------------------------------------------------------------------------------
def test_effectiveness_matches_textbook_formula():
    """The expm1 form against the textbook expression (Incropera Table 11.3) for C_r < 1.

    1e-12 relative: the two are algebraically identical; only round-off differs away from
    C_r = 1.
    """
    ntu, cr = np.meshgrid([0.1, 0.5, 1.0, 2.0, 5.0], [0.0, 0.2, 0.5, 0.8, 0.95])
    e = np.exp(-ntu * (1 - cr))
    textbook = (1 - e) / (1 - cr * e)
    np.testing.assert_allclose(hx_effectiveness_counterflow(ntu, cr), textbook, rtol=1e-12)


def test_effectiveness_limits():
    """C_r = 0: 1 − e^−NTU; C_r = 1: NTU/(1+NTU); NTU = 0: 0; NTU = ∞: 1 (round-off only)."""
    ntu = np.array([0.0, 0.3, 1.0, 3.0, 10.0])
    np.testing.assert_allclose(hx_effectiveness_counterflow(ntu, 0.0), 1 - np.exp(-ntu),
                               rtol=1e-14)
    np.testing.assert_allclose(hx_effectiveness_counterflow(ntu, 1.0), ntu / (1 + ntu),
                               rtol=1e-14)
    assert hx_effectiveness_counterflow(np.inf, [0.0, 0.5, 1.0]).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("gap", [1e-3, 1e-6, 1e-9, 1e-12, 1e-15])
def test_effectiveness_is_continuous_at_balanced_flow(gap):
    """C_r → 1 joins NTU/(1+NTU) without cancellation error.

    dε/dC_r is below 1 in magnitude here, so the exact difference is < gap; allow gap plus
    1e-12 for round-off (the naive formula loses ~log10(1/gap) digits and fails at 1e-12).
    """
    ntu = np.array([0.5, 2.0, 8.0])
    diff = hx_effectiveness_counterflow(ntu, 1.0 - gap) - ntu / (1 + ntu)
    assert np.all(np.abs(diff) < gap + 1e-12)


def test_effectiveness_bad_input():
    with pytest.raises(ValueError, match="NTU must be >= 0"):
        hx_effectiveness_counterflow(-1.0, 0.5)
    with pytest.raises(ValueError, match=r"c_ratio = C_min/C_max must be in 0..1"):
        hx_effectiveness_counterflow(1.0, 1.2)


CASES = [
    # t_hot_in, t_cold_in, m_hot, m_cold, ua
    (45.0, 30.0, 2.0, 1.5, 8000.0),  # CDU: facility (cold) and secondary (hot) loops
    (45.0, 30.0, 1.0, 4.0, 20000.0),
    (60.0, 20.0, 0.3, 0.31, 1500.0),  # nearly balanced
    (25.0, 40.0, 2.0, 1.0, 5000.0),  # "hot" side colder: heat flows the other way
]


@pytest.mark.parametrize(("t_h", "t_c", "m_h", "m_c", "ua"), CASES)
def test_hx_energy_balance_and_lmtd(t_h, t_c, m_h, m_c, ua):
    """q = ṁ_h c_p ΔT_h = ṁ_c c_p ΔT_c (1e-12: same arithmetic, round-off only), and q = UA·LMTD
    (the independent LMTD method for a counterflow exchanger; 1e-9: log of a ratio near 1)."""
    t_ho, t_co, q = hx_outlets(t_h, t_c, m_h, m_c, ua)
    assert q == pytest.approx(m_h * CP_WATER * (t_h - t_ho), rel=1e-12)
    assert q == pytest.approx(m_c * CP_WATER * (t_co - t_c), rel=1e-12)
    assert q == pytest.approx(ua * lmtd(t_h - t_co, t_ho - t_c), rel=1e-9)
    # second law: outlets stay within the inlet span
    lo, hi = min(t_h, t_c), max(t_h, t_c)
    assert lo <= t_ho <= hi and lo <= t_co <= hi


def test_hx_balanced_flow_has_uniform_difference():
    """C_h = C_c: the two streams stay a constant ΔT apart, q = UA·ΔT exactly (1e-12)."""
    t_ho, t_co, q = hx_outlets(50.0, 30.0, 1.0, 1.0, 6000.0)
    dt = 50.0 - t_co
    assert t_ho - 30.0 == pytest.approx(dt, rel=1e-12)
    assert q == pytest.approx(6000.0 * dt, rel=1e-12)
    eps = (6000.0 / CP_WATER) / (1 + 6000.0 / CP_WATER)
    assert q == pytest.approx(eps * CP_WATER * 20.0, rel=1e-12)


def test_hx_zero_flow_and_zero_ua():
    """No flow on a side, or no conductance: nothing exchanged, outlets = inlets, no NaN (and
    no warning, which the test configuration would turn into a failure)."""
    t_ho, t_co, q = hx_outlets(45.0, 30.0, np.array([0.0, 2.0, 0.0, 2.0]),
                               np.array([1.0, 0.0, 0.0, 1.0]), np.array([8e3, 8e3, 8e3, 0.0]))
    np.testing.assert_array_equal(q, 0.0)
    np.testing.assert_array_equal(t_ho, 45.0)
    np.testing.assert_array_equal(t_co, 30.0)


def test_hx_outlets_vectorised_with_air_side():
    """Arrays broadcast (one row per CDU); an air-to-water coil uses cp_hot = CP_AIR."""
    m_hot = np.array([[1.0], [5.0]])
    t_ho, t_co, q = hx_outlets(35.0, 18.0, m_hot, np.array([0.5, 1.0, 2.0]), 4000.0,
                               cp_hot=CP_AIR)
    assert q.shape == (2, 3)
    np.testing.assert_allclose(q, m_hot * CP_AIR * (35.0 - t_ho), rtol=1e-12)



def test_effectiveness_and_outlets_same_bits_on_every_path():
    """The short paths give the same bits as the general one (exact equality, not a
    tolerance: a plant step's results must not depend on which path a row took): without a
    balanced row ε skips the balanced limit, and inputs of one shape skip broadcasting. The
    references are the general path — a balanced row added, or the inputs broadcast first."""
    rng = np.random.default_rng(7)
    ntu = np.concatenate([rng.uniform(0.0, 8.0, 200), [0.0, np.inf, 1e-300]])
    c_ratio = np.concatenate([rng.uniform(0.0, 0.999999, 200), [0.5, 0.3, 0.0]])
    short = hx_effectiveness_counterflow(ntu, c_ratio)
    general = hx_effectiveness_counterflow(np.append(ntu, 2.0), np.append(c_ratio, 1.0))
    np.testing.assert_array_equal(short, general[:-1])
    assert general[-1] == 2.0 / 3.0  # the balanced row: NTU / (1 + NTU)
    m_hot = rng.uniform(0.0, 3.0, (4, 1))
    m_cold = rng.uniform(0.0, 3.0, 5)
    ua = rng.uniform(0.0, 2e4, (4, 5))
    mixed = hx_outlets(45.0, 30.0, m_hot, m_cold, ua, cp_hot=CP_AIR)
    full = hx_outlets(*np.broadcast_arrays(45.0, 30.0, m_hot, m_cold, ua, CP_AIR, CP_WATER))
    for a, b in zip(mixed, full):
        assert a.shape == (4, 5)
        np.testing.assert_array_equal(a, b)

def test_flow_for_heat():
    """1 MW at a 10 K rise needs 1e6 / (4178 · 10) kg/s (the definition; round-off only)."""
    assert flow_for_heat(1e6, 10.0) == pytest.approx(1e6 / (CP_WATER * 10.0), rel=1e-15)
    with pytest.raises(ValueError, match="delta_t must be > 0 K"):
        flow_for_heat(1e6, 0.0)


# --------------------------------------------------------------------------------------------
# Pumps and fans
# --------------------------------------------------------------------------------------------
def test_pump_affinity_law_matches_hydraulic_power():
    """P ∝ (Q/Q_d)³ against P = ρ g Q H / η with H ∝ Q² (a system curve through the origin,
    constant efficiency): two routes to the same number, so 1e-12 (round-off)."""
    q_design, head_design, eta = 0.05, 25.0, 0.7  # m3/s, m, 1
    p_design = RHO_WATER * G * q_design * head_design / eta
    q = np.array([0.0, 0.01, 0.025, 0.05, 0.06])
    p_hydraulic = RHO_WATER * G * q * head_design * (q / q_design) ** 2 / eta
    np.testing.assert_allclose(affinity_power(q / q_design, p_design), p_hydraulic, rtol=1e-12,
                               atol=1e-9)
    assert affinity_power(-0.025 / 0.05, 8.0) == pytest.approx(1.0)  # direction does not matter


def test_speed_and_fan_versions():
    """Half speed → one eighth of the power (exact); exponent 2 → a quarter; fans likewise."""
    assert affinity_power(0.5, 800.0) == 100.0
    assert affinity_power(0.5, 800.0, exponent=2.0) == 200.0
    np.testing.assert_array_equal(fan_power([0.0, 5.0, 10.0], 10.0, 4000.0), [0.0, 500.0, 4000.0])


def test_crah_air_flow_and_fan_power():
    """Air flow from the energy balance q = ρ V̇ c_p ΔT (round-off only), and the fan power at the
    design air flow is the design power."""
    q, dt = 100e3, 12.0
    flow = air_flow_for_heat(q, dt)
    assert RHO_AIR * flow * CP_AIR * dt == pytest.approx(q, rel=1e-14)
    assert crah_fan_power(q, dt, flow, 5e3) == pytest.approx(5e3, rel=1e-14)
    assert crah_fan_power(q / 2, dt, flow, 5e3) == pytest.approx(5e3 / 8, rel=1e-14)


# --------------------------------------------------------------------------------------------
# Chillers and economiser
# --------------------------------------------------------------------------------------------
def test_economiser_split():
    """Cold day: all free; hot day: all chiller; in between: the chiller trims. The two parts
    always sum to ṁ c_p (t_return − t_setpoint) (round-off only)."""
    flow, t_ret, t_set = 20.0, 35.0, 25.0
    t_free = np.array([10.0, 25.0, 30.0, 35.0, 40.0])
    q_free, q_ch = economiser_split(flow, t_ret, t_free, t_set)
    total = flow * CP_WATER * (t_ret - t_set)
    np.testing.assert_allclose(q_free + q_ch, total, rtol=1e-14)
    np.testing.assert_allclose(q_free, flow * CP_WATER * np.array([10.0, 10.0, 5.0, 0.0, 0.0]))
    q_free, q_ch = economiser_split(flow, 20.0, 10.0, t_set)  # return already below set-point
    assert q_free == 0.0 and q_ch == 0.0


# --------------------------------------------------------------------------------------------
# Heat rejection
# --------------------------------------------------------------------------------------------
def test_approach_outlets():
    np.testing.assert_array_equal(cooling_tower_outlet([20.0, 24.8], 4.0), [24.0, 28.8])
    np.testing.assert_array_equal(dry_cooler_outlet([20.0, 35.0], 7.5), [27.5, 42.5])


def test_cooling_tower_evaporation_is_q_over_hfg():
    """E = Q / h_fg exactly (the definition); 1 MW evaporates 0.408 kg/s ≈ 1.47 m³/h."""
    e, b, m = cooling_tower_water(np.array([0.0, 1e6, 5e6]), 4.0)
    np.testing.assert_allclose(e, np.array([0.0, 1e6, 5e6]) / H_FG_WATER, rtol=1e-15)
    assert e[1] * 3600 / RHO_WATER == pytest.approx(1.475, abs=0.005)
    assert cooling_tower_water(-1e6, 4.0)[0] == 0.0
    e_half, _, _ = cooling_tower_water(1e6, 4.0, latent_fraction=0.8)
    assert e_half == pytest.approx(0.8 * e[1], rel=1e-15)


def test_cooling_tower_rule_of_thumb():
    """Evaporation ≈ 1 % of the circulating flow per 10 °F (5.56 K) of range (cooling-tower
    rule of thumb). Tolerance 10 %: the rule is a round figure (c_p ΔT / h_fg = 0.95 %)."""
    flow, rng = 100.0, 50.0 / 9.0  # kg/s, K
    e, _, _ = cooling_tower_water(flow * CP_WATER * rng, 4.0)
    assert e / flow == pytest.approx(0.01, rel=0.1)


def test_cooling_tower_blowdown_closes_solids_balance():
    """Dissolved solids in = out: M·c = B·(C·c), so M = C·B; and M = E + B (round-off only)."""
    cycles = np.array([2.0, 3.0, 5.0, 10.0])
    e, b, m = cooling_tower_water(2e6, cycles)
    np.testing.assert_allclose(m, cycles * b, rtol=1e-14)
    np.testing.assert_allclose(m, e + b, rtol=1e-15)
    with pytest.raises(ValueError, match="cycles_of_concentration must be > 1, got 1.0"):
        cooling_tower_water(1e6, 1.0)
