"""The fast integrator's batching: sleds in different flow states are advanced with one product
per state, and give the same result as each state alone and as scipy's ``expm`` applied sled by
sled (an independent evaluation of the same exact solution)."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from tests.conftest import SCENARIOS
from twin.scenario import load_scenario
from twin.sim.build import build_system
from twin.thermal.integrators import ExponentialIntegrator


def _group():
    loaded = load_scenario(SCENARIOS / "quickstart.yaml")
    sy = build_system(loaded.scenario, loaded.catalog)
    i = max(range(len(sy.groups)), key=lambda j: sy.groups[j].sleds.size)
    return sy, i, sy.groups[i]


def test_mixed_flow_states_match_sled_by_sled_expm():
    sy, i, g = _group()
    n, m, h = g.sleds.size, g.m, 1.0
    rng = np.random.default_rng(1)
    m_c = sy.sled_m_coolant[g.sleds] * np.where(np.arange(n) % 3 == 0, 0.5, 1.0)  # two flow states
    m_a = sy.sled_m_air[g.sleds] * np.where(np.arange(n) % 4 == 1, 0.7, 1.0)  # and a third, fourth
    integ = ExponentialIntegrator([g], h)
    integ.set_flows(0, m_c, m_a)
    assert g.h  # (the split is exercised)
    assert not integ.blocks[0].shared and len(integ.blocks[0].rows) == 4
    T0 = 30.0 + 20.0 * rng.random((n, m))
    q = 500.0 * rng.random((n, m))
    T1, mean = integ.step(0, T0, q)

    # Sled by sled: the augmented system d/dt [T, ∫T_fluid] with a constant input, one expm each.
    from twin.thermal.network import conductance_matrices

    fluid = [g.cool, g.air]
    for s in range(n):
        L, _ = conductance_matrices(g, m_c[s:s + 1], m_a[s:s + 1])
        A = L[0] / g.capacity[:, None]
        M = np.zeros((m + 3, m + 3))
        M[:m, :m] = -A
        # constant input as an extra state fixed at 1: the node heat of the inputs q (a die row's
        # power shared with its HBM node, an HBM row's heat moved from the die; Trainium3 sleds
        # have HBM nodes)
        M[:m, m + 2] = g.split(q[s]) / g.capacity
        M[m, fluid[0]] = M[m + 1, fluid[1]] = 1.0  # integrals of the fluid nodes
        y = scipy.linalg.expm(M * h) @ np.concatenate([T0[s], [0.0, 0.0, 1.0]])
        # 1e-9 K: both are exact solutions; they differ by the round-off of two expm evaluations.
        np.testing.assert_allclose(T1[s], y[:m], rtol=0, atol=1e-9)
        np.testing.assert_allclose(mean[s], y[m:m + 2] / h, rtol=0, atol=1e-9)


def test_shared_state_equals_batched_path():
    sy, i, g = _group()
    n, m = g.sleds.size, g.m
    rng = np.random.default_rng(2)
    T0 = 30.0 + 20.0 * rng.random((n, m))
    q = 500.0 * rng.random((n, m))
    shared = ExponentialIntegrator([g], 1.0)
    shared.set_flows(0, sy.sled_m_coolant[g.sleds], sy.sled_m_air[g.sleds])
    assert shared.blocks[0].shared
    split = ExponentialIntegrator([g], 1.0)
    bump = np.where(np.arange(n) == 0, 1.0 + 1e-12, 1.0)  # a distinct state for sled 0 only
    split.set_flows(0, sy.sled_m_coolant[g.sleds] * bump, sy.sled_m_air[g.sleds])
    a, b = shared.step(0, T0, q), split.step(0, T0, q)
    # 1e-9 K: a 1e-12 relative flow change moves temperatures by far less than that.
    np.testing.assert_allclose(a[0], b[0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(a[1], b[1], rtol=0, atol=1e-9)
