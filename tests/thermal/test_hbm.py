"""The HBM node: steady state against the series-resistance closed form, recorded and reported."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from tests.conftest import ONE_CHIP_CATALOG, one_chip_scenario
from twin.export.dataset import build_tree, run_warnings, summary
from twin.thermal.integrators import ExponentialIntegrator, ReferenceIntegrator
from twin.thermal.network import SledGroup
from twin.units import CP_AIR, CP_WATER

F, R_HBM, R_JC, G_CONV = 0.2, 0.05, 0.015, 80.0  # [1], [K/W], [K/W], [W/K]


def _group() -> SledGroup:
    """One liquid-cooled device with one HBM node, small capacities (time constants ≤ ~10 s)."""
    return SledGroup(template="t", sleds=np.array([0]), devices=np.array([[0]]), liquid=np.array([True]),
                     g_jc=np.array([1 / R_JC]), g_conv_ref=np.array([G_CONV]), flow_ref=np.array([0.02]),
                     c_die=np.array([5.0]), c_plate=np.array([50.0]), c_coolant=100.0, c_chassis=20.0,
                     hbm_slot=np.array([0]), hbm_fraction=np.array([F]), g_hbm=np.array([1 / R_HBM]),
                     c_hbm=np.array([1.0]))


@pytest.mark.parametrize("integrator", [ExponentialIntegrator, ReferenceIntegrator])
def test_hbm_steady_state_is_the_series_resistances(integrator):
    """At steady state (coolant ṁ, inlet T_in, device power P, share f on the HBM node):

        T_cool = T_in + P/(ṁ c_p),  T_plate = T_cool + P/G_conv,
        T_die = T_plate + (1 − f) P R_jc,  T_hbm = T_plate + f P R_hbm.

    Both the direct solve (L T = q) and one step of 10⁴ s through the propagators (the HBM
    split folded into the die rows; e^{−h/τ} = 0 for every τ ≤ ~10 s) within 1e-9 K: the
    closed form and the solve differ by round-off only. The reference (BDF) integrator is held
    to its own tolerance (1e-6 K; rtol 1e-10 on ~100 degC plus atol 1e-8 per step)."""
    g = _group()
    h = 1e4 if integrator is ExponentialIntegrator else 200.0
    integ = integrator([g], h)
    m_c, m_a, t_in, t_air, p = 0.02, 0.01, 30.0, 25.0, 700.0
    integ.set_flows(0, np.array([m_c]), np.array([m_a]))
    b = integ.boundary(0)
    q = np.zeros((1, g.m))
    q[:, g.cool] = b[:, g.cool] * t_in
    q[:, g.air] = b[:, g.air] * t_air
    t_cool = t_in + p / (m_c * CP_WATER)
    t_plate = t_cool + p / G_CONV
    expected = {0: t_plate + (1 - F) * p * R_JC, 1: t_plate, 2: t_plate + F * p * R_HBM, g.cool: t_cool,
                g.air: t_air}
    tol = 1e-9 if integrator is ExponentialIntegrator else 1e-6
    solved = integ.steady_state(0, q + g.heat_input(np.array([[p]])))[0]
    T = np.full((1, g.m), 40.0)
    for _ in range(1 if integrator is ExponentialIntegrator else 10):
        T, fluid = integ.step(0, T, q, np.array([[p]]))
    for node, value in expected.items():
        assert solved[node] == pytest.approx(value, abs=1e-9), node
        assert T[0, node] == pytest.approx(value, abs=tol), node
    # all of P reaches the coolant (the HBM share too): energy closes
    assert m_c * CP_WATER * (T[0, g.cool] - t_in) + m_a * CP_AIR * (T[0, g.air] - t_air) == pytest.approx(p, rel=1e-9)


def _hbm_catalog(t_hbm_max="95 degC"):
    cat = copy.deepcopy(ONE_CHIP_CATALOG)
    chip = cat["chips"]["testchip"]
    chip["hbm_power_fraction"] = {"value": F, "source": "estimate"}
    chip["r_hbm"] = {"value": f"{R_HBM} K/W", "source": "estimate"}
    chip["c_hbm"] = {"value": "2 J/K", "source": "estimate"}
    chip["t_hbm_max"] = {"value": t_hbm_max, "source": "estimate"}
    return cat


def test_hbm_temperature_is_recorded_and_reported(run_scenario):
    """device.t_hbm is recorded; die and HBM share the plate, so at steady state
    T_die − T_hbm = P ((1 − f) R_jc − f R_hbm) (1e-6 K: 300 s is > 30 plate time constants
    and the power is constant). The summary gives the hottest HBM and its limit; a limit below
    the HBM temperature is reported (KPI and warning)."""
    sim = run_scenario(one_chip_scenario([{"u": 0.8}], duration="300 s", catalog=_hbm_catalog()))
    tree = build_tree(sim)
    p = float(tree["device"]["p"][-1, 0])
    t_die, t_hbm = float(tree["device"]["t_die"][-1, 0]), float(tree["device"]["t_hbm"][-1, 0])
    assert t_die - t_hbm == pytest.approx(p * ((1 - F) * R_JC - F * R_HBM), abs=1e-6)
    kpi = summary(sim)
    assert kpi["t_hbm_max_degC"] == pytest.approx(float(tree["device"]["t_hbm"].max()), abs=0.5)
    assert kpi["t_hbm_limit_degC"] == 95.0 and kpi["devices_over_hbm_limit"] == 0
    assert abs(kpi["energy_residual"]) < 1e-9
    assert not any("HBM" in w for w in run_warnings(sim))

    hot = run_scenario(one_chip_scenario([{"u": 0.8}], duration="60 s", catalog=_hbm_catalog("40 degC")))
    kpi = summary(hot)
    assert kpi["devices_over_hbm_limit"] == 1 and kpi["t_hbm_max_degC"] > 40.0
    assert any("above the HBM temperature limit" in w for w in run_warnings(hot))


def test_chips_without_hbm_figures_have_no_hbm_variable(run_scenario):
    sim = run_scenario(one_chip_scenario([{"u": 0.5}], duration="10 s"))
    assert "t_hbm" not in build_tree(sim)["device"].data_vars
    assert "t_hbm_max_degC" not in summary(sim)
