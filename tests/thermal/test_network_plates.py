"""Per-plate flow split, convection exponent and the HBM node, against closed forms.

The steady state is solved here directly from the conductance matrix (numpy.linalg.solve on
L T = q + b T_in), independently of the integrators.
"""

import numpy as np
import pytest

from twin.catalog.model import load_catalog
from twin.thermal.network import SledGroup, conductance_matrices, convection_conductance, plate_flows
from twin.units import CP_AIR, CP_WATER, RHO_WATER

CAT = load_catalog()


def gb300_tray(**extra):
    """A GB300 compute tray's slots as a SledGroup (liquid GPUs and Grace, NICs on air)."""
    sled = CAT.sleds["gb300-compute-tray"]
    chips = [CAT.chips[c] for c, n in sled.devices.items() for _ in range(n.value)]
    liquid = np.array([c.cooling == "liquid" for c in chips])
    rho = np.where(liquid, RHO_WATER, 1.184)
    k = len(chips)
    return SledGroup(
        template="gb300-compute-tray", sleds=np.array([0]), devices=np.arange(k)[None, :],
        liquid=liquid, g_jc=np.array([1 / c.r_jc.si for c in chips]),
        g_conv_ref=np.array([1 / c.r_conv_ref.si for c in chips]),
        flow_ref=np.array([c.flow_ref.si for c in chips]) * rho,
        c_die=np.array([c.c_die.si for c in chips]), c_plate=np.array([c.c_plate.si for c in chips]),
        c_coolant=1000.0, c_chassis=3000.0, **extra), chips


def test_gb300_gpu_plate_gets_its_design_flow():
    group, chips = gb300_tray()
    gpu = np.array([c.description.startswith("NVIDIA Blackwell") for c in chips])
    design = np.where(group.liquid, group.flow_ref, 0.0)
    m_sled = np.array([design.sum()])  # the sled at its design flow
    per = plate_flows(m_sled, design)[0]
    # each GPU plate gets exactly its 2.1 L/min (to rounding), Grace its own
    assert per[gpu] == pytest.approx(np.full(gpu.sum(), 2.1e-3 / 60 * RHO_WATER), rel=1e-12)
    # the equal split (the old behaviour) starves the GPUs of flow
    eq = plate_flows(m_sled, group.liquid.astype(float))[0]
    assert eq[gpu][0] / per[gpu][0] < 0.85


def steady(group, m_c, m_a, p, t_in=30.0, t_air=25.0):
    L, b = conductance_matrices(group, np.array([m_c]), np.array([m_a]))
    q = group.heat_input(p[None, :])[0]
    q[group.cool] += b[0, group.cool] * t_in
    q[group.air] += b[0, group.air] * t_air
    return np.linalg.solve(L[0], q)


def test_split_and_exponent_set_the_die_temperature_by_hand():
    exponent = np.full(10, 0.4)
    group, chips = gb300_tray(conv_exponent=exponent)
    design = np.where(group.liquid, group.flow_ref, 0.0)
    p = np.array([c.tdp.si for c in chips])
    m_c = design.sum()
    T = steady(group, m_c, 0.025 * 1.184, p)
    t_cool = T[group.cool]
    # coolant node = inlet + liquid heat / (ṁ c_p)
    assert t_cool == pytest.approx(30.0 + p[group.liquid].sum() / (m_c * CP_WATER), rel=1e-12)
    # GPU at design flow: die = coolant + P (r_jc + r_conv_ref)
    g = chips[0]
    assert T[0] == pytest.approx(t_cool + p[0] * (g.r_jc.si + g.r_conv_ref.si), rel=1e-12)
    # at half the sled flow the plate's conductance falls by 0.5^0.4 (laminar), not 0.5^0.8
    T_half = steady(group, m_c / 2, 0.025 * 1.184, p)
    g_half = convection_conductance(1 / g.r_conv_ref.si, design[0] / 2, design[0], 0.4)
    assert g_half == pytest.approx(0.5 ** 0.4 / g.r_conv_ref.si)
    assert T_half[0] == pytest.approx(T_half[group.cool] + p[0] * (g.r_jc.si + 1 / g_half), rel=1e-12)


def test_hbm_node_takes_its_share_and_has_its_own_temperature():
    f, r_hbm = 0.15, 0.08
    group, chips = gb300_tray(hbm_slot=np.arange(4), hbm_fraction=np.full(4, f),
                              g_hbm=np.full(4, 1 / r_hbm), c_hbm=np.full(4, 40.0))
    assert group.m == 2 * 10 + 4 + 2 and group.cool == 24 and group.air == 25
    p = np.array([c.tdp.si for c in chips])
    T = steady(group, np.where(group.liquid, group.flow_ref, 0.0).sum(), 0.025 * 1.184, p)
    g = chips[0]
    plate = T[10]
    # HBM = plate + f P r_hbm; die = plate + (1 − f) P r_jc; plate = coolant + P r_conv
    assert T[group.hbm[0]] == pytest.approx(plate + f * p[0] * r_hbm, rel=1e-12)
    assert T[0] == pytest.approx(plate + (1 - f) * p[0] * g.r_jc.si, rel=1e-12)
    assert plate == pytest.approx(T[group.cool] + p[0] * g.r_conv_ref.si, rel=1e-12)
    # the heat input conserves the package power
    q = group.heat_input(p[None, :])
    assert q.sum() == pytest.approx(p.sum())
    # air side unaffected: chassis node = inlet + air heat / (ṁ c_p,a)
    assert T[group.air] == pytest.approx(25.0 + p[~group.liquid].sum() / (0.025 * 1.184 * CP_AIR))


def test_gb300_rack_at_design_flow_gives_each_gpu_plate_its_design_flow():
    """Built from the bundled GB300 NVL72 scenario: the rack's design flow reaches each GPU plate
    as 2.1 L/min (its catalogue design flow), not the equal share of the sled's plates."""
    from tests.conftest import SCENARIOS
    from twin.scenario import load_scenario
    from twin.sim.build import build_system

    loaded = load_scenario(SCENARIOS / "gb300-rack.yaml")
    sy = build_system(loaded.scenario, loaded.catalog)
    g = next(g for g in sy.groups if g.template == "gb300-compute-tray")
    m_sled = sy.sled_m_coolant[g.sleds]
    per = plate_flows(m_sled, np.where(g.liquid, g.flow_ref, 0.0))
    gpu = np.array([k == "gb300" for k in sy.device_kind[g.devices[0]]])
    rack_design = CAT.racks["gb300-nvl72"].coolant_flow.si * RHO_WATER
    plates_design = sum(CAT.chips[c].flow_ref.si * n.value * RHO_WATER * 18
                        for c, n in CAT.sleds["gb300-compute-tray"].devices.items()
                        if CAT.chips[c].cooling == "liquid")
    # the rack's flow is shared by design: each GPU plate gets 2.1 L/min scaled by
    # rack flow / Σ plate design flows (1 when the rack is fed its design flow)
    scale = rack_design / (plates_design + sum(CAT.chips[c].flow_ref.si * n.value * RHO_WATER * 9
                                               for c, n in CAT.sleds["nvlink-switch-tray"].devices.items()
                                               if CAT.chips[c].cooling == "liquid"))
    assert scale >= 1.0  # 190 L/min for 177.3 L/min of plates: every plate gets ≥ its design flow
    assert per[:, gpu] == pytest.approx(np.full((m_sled.size, gpu.sum()), 2.1e-3 / 60 * RHO_WATER * scale),
                                        rel=1e-12)


def test_gb300_gpu_plate_gets_its_design_flow_in_a_run():
    """The bundled GB300 NVL72 rack run for 10 min at a constant load (no plant: the in-row
    CDU's 35 °C supply). In the run, each GPU plate takes its sled's flow × 2.1 / Σ plate design
    flows of the sled, the sled the rack's 190 L/min × its plates' share: 2.1 L/min (the
    catalogue's design flow, OCP's 1.5 L/min per kW × 1.4 kW) × 190 / 177.3 — at least its design
    flow. And the dies and HBM stacks are where that flow puts them, by hand at steady state:
    T_plate = T_coolant + P r_conv,ref (ṁ_ref / ṁ)^0.4, T_die = T_plate + (P − P_hbm) r_jc,
    T_hbm = T_plate + P_hbm r_hbm with P_hbm = floor + full-bandwidth power × (P − P_idle) /
    (TDP − P_idle) and the run's coolant-node temperature and device power, within 0.01 K (the
    run is steady to ~1e-13 K; a GPU at ~1,230 W would be 0.4 K hotter at exactly 2.1 L/min and
    1.6 K at 80 % of it, the equal share of the sled's plates)."""
    from tests.conftest import SCENARIOS
    from twin.scenario import load_scenario
    from twin.sim.driver import Simulation

    over = {"time": {"duration": "10 min"},
            "workload": [{"select": {"kind": ["gb300"]}, "u": 0.9}, {"select": {"kind": ["grace"]}, "u": 0.25},
                         {"select": {"kind": ["nvswitch", "connectx8"]}, "u": 0.5}],
            "record": {"facility": "1 min", "cdu": "off", "rack": "off", "device": "off", "sled": "off"}}
    sim = Simulation(load_scenario(SCENARIOS / "gb300-rack.yaml", over))
    sim.run()
    sy = sim.system
    g = next(g for g in sy.groups if g.template == "gb300-compute-tray")
    gpu = np.array([k == "gb300" for k in sy.device_kind[g.devices[0]]])
    m_sled = sim.racks.m_coolant[g.sleds]  # the flows of the run's last step
    plates = CAT.sleds["gb300-compute-tray"].devices
    tray_design = sum(CAT.chips[c].flow_ref.si * n.value for c, n in plates.items()
                      if CAT.chips[c].cooling == "liquid")
    switch_design = sum(CAT.chips[c].flow_ref.si * n.value for c, n in CAT.sleds["nvlink-switch-tray"].devices.items()
                        if CAT.chips[c].cooling == "liquid")
    rack = CAT.racks["gb300-nvl72"].coolant_flow.si
    design = CAT.chips["gb300"].flow_ref.si  # 2.1 L/min
    expected = design * rack / (18 * tray_design + 9 * switch_design)  # [m³/s]
    per = plate_flows(m_sled, np.where(g.liquid, g.flow_ref, 0.0))[:, gpu] / RHO_WATER
    assert per == pytest.approx(np.full(per.shape, expected), rel=1e-12)
    assert expected >= design
    # the dies, by hand from the catalogue at that flow
    chip = CAT.chips["gb300"]
    dev = g.devices[:, gpu]
    p = np.asarray(sim.state["device.p_step"])[dev]  # the power the step's network was given
    t_coolant = sim.racks.T[list(sy.groups).index(g)][:, g.cool][:, None]  # sled coolant node
    plate = t_coolant + p * chip.r_conv_ref.si * (design / expected) ** chip.convection_exponent.si
    p_hbm = chip.hbm_idle_power.si + chip.hbm_active_power.si * (p - chip.p_idle.si) / (chip.tdp.si - chip.p_idle.si)
    assert sim.t_die[dev] == pytest.approx(plate + (p - p_hbm) * chip.r_jc.si, abs=0.01)
    assert sim.racks.t_hbm[dev] == pytest.approx(plate + p_hbm * chip.r_hbm.si, abs=0.01)
