"""The HBM node: its power (a floor plus the bits moved) against the hand calculation, the steady
state against the series-resistance closed form, recorded and reported."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from tests.conftest import ONE_CHIP_CATALOG, one_chip_scenario
from twin.export.dataset import build_tree, run_warnings, summary
from twin.power.device import hbm_power, hbm_power_coefficients
from twin.thermal.integrators import ExponentialIntegrator, ReferenceIntegrator
from twin.thermal.network import SledGroup
from twin.units import CP_AIR, CP_WATER

# The test chip (tests/conftest.py: P_idle 100 W, TDP 1000 W) with a 20 W floor and 180 W of
# stacks at full bandwidth: s = 180/900 = 0.2, c = 20 − 0.2·100 = 0 W would hide the floor, so
# the floor is 30 W: c = 10 W.
P_IDLE, TDP, HBM_IDLE, HBM_ACTIVE = 100.0, 1000.0, 30.0, 180.0  # [W]
F, C = HBM_ACTIVE / (TDP - P_IDLE), HBM_IDLE - HBM_ACTIVE / (TDP - P_IDLE) * P_IDLE  # [1], [W]
R_HBM, R_JC, G_CONV = 0.05, 0.015, 80.0  # [K/W], [K/W], [W/K]


def _group() -> SledGroup:
    """One liquid-cooled device with one HBM node, small capacities (time constants ≤ ~10 s)."""
    return SledGroup(template="t", sleds=np.array([0]), devices=np.array([[0]]), liquid=np.array([True]),
                     g_jc=np.array([1 / R_JC]), g_conv_ref=np.array([G_CONV]), flow_ref=np.array([0.02]),
                     c_die=np.array([5.0]), c_plate=np.array([50.0]), c_coolant=100.0, c_chassis=20.0,
                     hbm_slot=np.array([0]), hbm_fraction=np.array([F]), hbm_offset=np.array([C]), g_hbm=np.array([1 / R_HBM]),
                     c_hbm=np.array([1.0]))


@pytest.mark.parametrize("integrator", [ExponentialIntegrator, ReferenceIntegrator])
def test_hbm_steady_state_is_the_series_resistances(integrator):
    """At steady state (coolant ṁ, inlet T_in, device power P, P_hbm = s P + c on the HBM node):

        T_cool = T_in + P/(ṁ c_p),  T_plate = T_cool + P/G_conv,
        T_die = T_plate + (P − P_hbm) R_jc,  T_hbm = T_plate + P_hbm R_hbm.

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
    q += g.heat_offset()  # the floor (RackThermal puts it in each powered sled's q_base)
    p_hbm = F * p + C
    assert p_hbm == pytest.approx(hbm_power(p, P_IDLE, TDP, HBM_IDLE, HBM_ACTIVE), rel=1e-15)
    t_cool = t_in + p / (m_c * CP_WATER)
    t_plate = t_cool + p / G_CONV
    expected = {0: t_plate + (p - p_hbm) * R_JC, 1: t_plate, 2: t_plate + p_hbm * R_HBM, g.cool: t_cool,
                g.air: t_air}
    tol = 1e-9 if integrator is ExponentialIntegrator else 1e-6
    # the node heat: P less the stacks' part on the die, P_hbm on the stacks, nothing made
    node = g.split(q + np.eye(g.m)[0] * p) - q + g.heat_offset()
    assert node[0, 0] == pytest.approx(p - p_hbm, rel=1e-14) and node[0, 2] == pytest.approx(p_hbm, rel=1e-14)
    assert node[0].sum() == pytest.approx(p, rel=1e-14)
    solved = integ.steady_state(0, q + np.eye(g.m)[0] * p)[0]
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
    chip["hbm_idle_power"] = {"value": f"{HBM_IDLE} W", "source": "estimate"}
    chip["hbm_active_power"] = {"value": f"{HBM_ACTIVE} W", "source": "estimate"}
    chip["r_hbm"] = {"value": f"{R_HBM} K/W", "source": "estimate"}
    chip["c_hbm"] = {"value": "2 J/K", "source": "estimate"}
    chip["t_hbm_max"] = {"value": t_hbm_max, "source": "estimate"}
    return cat


def test_hbm_temperature_is_recorded_and_reported(run_scenario):
    """device.t_hbm is recorded; die and HBM share the plate, so at steady state
    T_die − T_hbm = (P − P_hbm) R_jc − P_hbm R_hbm with P_hbm = s P + c (1e-6 K: 300 s is
    > 30 plate time constants and the power is constant). The summary gives the hottest HBM and its limit; a limit below
    the HBM temperature is reported (KPI and warning)."""
    sim = run_scenario(one_chip_scenario([{"u": 0.8}], duration="300 s", catalog=_hbm_catalog()))
    tree = build_tree(sim)
    p = float(tree["device"]["p"][-1, 0])
    t_die, t_hbm = float(tree["device"]["t_die"][-1, 0]), float(tree["device"]["t_hbm"][-1, 0])
    p_hbm = F * p + C
    assert t_die - t_hbm == pytest.approx((p - p_hbm) * R_JC - p_hbm * R_HBM, abs=1e-6)
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


def test_hbm_power_is_the_floor_at_idle_and_floor_plus_bits_at_tdp():
    """P_hbm(P_idle) = the floor, P_hbm(TDP) = floor + full-bandwidth power, linear between;
    nothing for an unpowered device; s and c as their closed forms."""
    p = np.array([0.0, P_IDLE, 0.5 * (P_IDLE + TDP), TDP])
    got = hbm_power(p, P_IDLE, TDP, HBM_IDLE, HBM_ACTIVE, on=np.array([False, True, True, True]))
    np.testing.assert_allclose(got, [0.0, HBM_IDLE, HBM_IDLE + HBM_ACTIVE / 2, HBM_IDLE + HBM_ACTIVE], rtol=1e-14)
    s, c = hbm_power_coefficients(P_IDLE, TDP, HBM_IDLE, HBM_ACTIVE)
    assert (s, c) == pytest.approx((0.2, 10.0), rel=1e-14)


#: Chips with HBM figures: stacks, GB per stack (capacity / stacks, the datasheets' totals), dies
#: per stack and energy per bit moved [pJ/bit], for the hand calculation the catalogue's figures
#: must meet.
HBM_HAND = {
    "a100-sxm": (5, 16, 8, 3.9),
    "a100-pcie": (5, 16, 8, 3.9),
    "h100-sxm": (5, 16, 8, 3.9),
    "h100-pcie": (5, 16, 8, 3.9),
    "h200": (6, 24, 8, 3.9),
    "b200": (8, 24, 8, 3.9),
    "gb200": (8, 24, 8, 3.9),
    "gb300": (8, 36, 12, 3.9),  # 288 GB: NVIDIA's "8S HBM3e 12H"
    "trn2": (4, 24, 12, 3.9),  # 96 GiB on 4 stacks (AWS Neuron docs); 24 GB HBM3 is 12 × 16 Gbit
    "trn3": (4, 36, 12, 3.9),  # 144 GiB HBM3E on 4 stacks
}


def test_every_chip_with_hbm_figures_has_its_hand_calculation():
    from twin.catalog import load_catalog

    with_hbm = {n for n, c in load_catalog().chips.items() if c.hbm_idle_power is not None}
    assert with_hbm == set(HBM_HAND)


@pytest.mark.parametrize("name", sorted(HBM_HAND))
def test_catalogue_hbm_power_is_the_hand_calculation(name):
    """Floor = stacks × (1.0 W base die and PHYs + 0.03 W/GB refresh and standby); full
    bandwidth = E_bit · 8 · hbm_bandwidth (within 0.051 W: the catalogue rounds to 0.1 W);
    r_hbm = (0.4 K/W through an 8-high stack, 0.6 K/W 12-high, + 0.1 K/W interface) / stacks
    (within 0.0006 K/W: the catalogue rounds to 0.001 K/W); the capacity is stacks × GB."""
    from twin.catalog import load_catalog

    chip = load_catalog().chips[name]
    stacks, gb, high, e_bit = HBM_HAND[name]
    assert chip.hbm_capacity.si / 1e9 == pytest.approx(stacks * gb, rel=0.08)  # (GB or GiB: 7.4 %)
    assert chip.hbm_idle_power.si == pytest.approx(stacks * (1.0 + 0.03 * gb), abs=0.051)
    assert chip.r_hbm.si == pytest.approx(({8: 0.4, 12: 0.6}[high] + 0.1) / stacks, abs=0.0006)
    assert chip.hbm_active_power.si == pytest.approx(e_bit * 1e-12 * 8 * chip.hbm_bandwidth.si, abs=0.051)
    # at idle the stacks draw their floor; at the TDP the floor plus the full bandwidth's power
    args = (chip.p_idle.si, chip.tdp.si, chip.hbm_idle_power.si, chip.hbm_active_power.si)
    assert hbm_power(chip.p_idle.si, *args) == pytest.approx(chip.hbm_idle_power.si, rel=1e-12)
    assert hbm_power(chip.tdp.si, *args) == pytest.approx(chip.hbm_idle_power.si + chip.hbm_active_power.si,
                                                          rel=1e-12)


#: The README's table of die and HBM temperatures at TDP: chip → (scenario whose rack carries it,
#: label, the supplies: coolant for liquid-cooled chips, inlet air for air-cooled ones [degC]).
AT_TDP = {
    "gb300": ("gb300-rack.yaml", "GB300, 1,400 W", (30.0, 40.0, 45.0)),
    "trn3": ("quickstart.yaml", "Trainium3, 1,000 W", (30.0, 40.0, 45.0)),
    "trn2": ("trn2-training.yaml", "Trainium2, 500 W (air)", (25.0, 35.0)),
}


def _at_tdp(name, supply):
    """Steady die, plate and HBM temperatures [degC] and the stacks' power [W] of the first
    device ``name`` in its rack's first sled, every device of the sled at its TDP, the sled on
    its rack's catalogue flows (the direct solve of L T = q + b T_in)."""
    from tests.conftest import SCENARIOS
    from twin.scenario import load_scenario
    from twin.sim.build import build_system
    from twin.thermal.network import conductance_matrices

    loaded = load_scenario(SCENARIOS / AT_TDP[name][0])
    cat, sy = loaded.catalog, build_system(loaded.scenario, loaded.catalog)
    g = next(g for g in sy.groups if name in sy.device_kind[g.devices[0]])
    kinds = list(sy.device_kind[g.devices[0]])
    j = kinds.index(name)
    liquid = bool(g.liquid[j])
    s0 = g.sleds[0]
    m_c = sy.sled_m_coolant[s0] if g.liquid.any() else 1.0  # (an all-air sled: any coolant flow)
    L, b = conductance_matrices(g, np.array([m_c]), np.array([sy.sled_m_air[s0]]))
    p = np.array([cat.chips[k].tdp.si for k in kinds])
    q = g.heat_offset()  # the package power on the die rows, the floor's offset on the HBM rows
    q[: g.k] = p
    q = g.split(q)
    q[g.cool] += b[0, g.cool] * (supply if liquid else 30.0)
    q[g.air] += b[0, g.air] * (25.0 if liquid else supply)
    T = np.linalg.solve(L[0], q)
    p_hbm = hbm_power(p[j], *(getattr(cat.chips[name], f).si for f in ("p_idle", "tdp", "hbm_idle_power",
                                                                        "hbm_active_power")))
    return T[j], T[g.k + j], T[g.hbm[list(g.hbm_slot).index(j)]], p_hbm, cat.chips[name]


@pytest.mark.parametrize("name", sorted(AT_TDP))
def test_readme_die_and_hbm_at_tdp(name):
    """At TDP the stacks draw floor + full bandwidth, so beside the shared plate
    T_die = T_plate + (P − P_hbm) r_jc and T_hbm = T_plate + P_hbm r_hbm (1e-9 K: the solve is
    these series resistances); the README's row is these temperatures and their margins to the
    throttle point and t_hbm_max, to the printed 0.1 K."""
    scenario, label, supplies = AT_TDP[name]
    rows = [_at_tdp(name, t) for t in supplies]
    for die, plate, hbm, p_hbm, chip in rows:
        assert p_hbm == pytest.approx(chip.hbm_idle_power.si + chip.hbm_active_power.si, rel=1e-12)
        assert die == pytest.approx(plate + (chip.tdp.si - p_hbm) * chip.r_jc.si, abs=1e-9)
        assert hbm == pytest.approx(plate + p_hbm * chip.r_hbm.si, abs=1e-9)
    chip = rows[0][4]

    def col(values, unit):
        return " / ".join(f"{v:.1f}".replace("-", "−") for v in values) + f" {unit}"

    medium = "°C water" if chip.cooling == "liquid" else "°C inlet"
    row = (f"| {label} | {' / '.join(f'{t:.0f}' for t in supplies)} {medium} | {col([r[0] for r in rows], '°C')} | "
           f"{col([r[2] for r in rows], '°C')} | {col([chip.t_throttle.si - r[0] for r in rows], 'K')} | "
           f"{col([chip.t_hbm_max.si - r[2] for r in rows], 'K')} |")
    from tests.conftest import ROOT

    assert row in (ROOT / "README.md").read_text(encoding="utf-8"), row
