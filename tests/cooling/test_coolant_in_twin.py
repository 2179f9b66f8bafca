"""PG25 against water in the same scenario: the die temperatures and the CDU pump power move by
what the coolant properties (catalogue ρ, c_p, μ, k at the loop temperature) give, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SCENARIOS, one_chip_scenario
from twin.catalog.model import load_catalog
from twin.export.dataset import build_tree
from twin.scenario import load_scenario
from twin.sim.driver import Simulation
from twin.units import RHO_WATER

CAT = load_catalog()


def _props(name, t):
    """ρ, c_p, μ, k of a catalogue coolant at a table row's temperature (no interpolation)."""
    row = next(r for r in CAT.coolants[name].properties.points if r[0] == t)
    return dict(zip(("rho", "cp", "mu", "k"), row[1:]))


def test_one_chip_die_moves_by_the_convection_and_heat_capacity_of_pg25(run_scenario):
    """One 1,000 W chip (no leakage) on 1.5 L/min at 30 °C supply, steady state. By hand:
    T_die − T_supply = P [1/(Q ρ c_p) + r_jc + r_conv], and with PG25 r_conv = r_conv,ref / F,
    F = (k/k_w) ((ρ/μ)/(ρ_w/μ_w))^n (Pr/Pr_w)^(1/3) (Nu ∝ Re^n Pr^(1/3), n = 0.8 for this
    chip), Q ρ c_p lower by (ρ c_p)/(ρ c_p)_w. Properties at 30 °C from the catalogue rows. The
    shift of the die temperature within 1 %: the model carries the water side with its constants
    (ρ_w c_p,w 0.1 % from the table's 30 °C row) and the run is steady to well below that."""
    dies = {}
    for coolant in ("water", "pg25"):
        data = one_chip_scenario([{"select": {"kind": ["testchip"]}, "u": 1.0}], duration="300 s",
                                 record={"device": "10 s", "rack": "off", "sled": "off", "cdu": "off",
                                         "facility": "off"})
        data["cdus"][0]["coolant"] = coolant
        sim = run_scenario(data)
        p = float(np.ravel(sim.state["device.p"])[-1])
        assert p == pytest.approx(1000.0, rel=1e-9)  # u = 1, no leakage: the TDP
        dies[coolant] = float(sim.t_die[0])
    w, g = _props("water", 30.0), _props("pg25", 30.0)
    q = 1.5e-3 / 60
    r_conv = 0.015
    pr = lambda c: c["cp"] * c["mu"] / c["k"]  # noqa: E731
    f = (g["k"] / w["k"]) * ((g["rho"] / g["mu"]) / (w["rho"] / w["mu"])) ** 0.8 * (pr(g) / pr(w)) ** (1 / 3)
    shift = 1000.0 * ((1 / (q * g["rho"] * g["cp"]) - 1 / (q * w["rho"] * w["cp"])) + r_conv * (1 / f - 1))
    assert 0.5 < f < 0.65  # at Nu ∝ Re^0.8 the viscosity (2.2×) costs the plate ≈ 40 %
    assert dies["pg25"] - dies["water"] == pytest.approx(shift, rel=0.01)


def test_quickstart_pg25_pump_power_by_hand():
    """The quickstart hall on PG25: same volume flows (the loop is balanced for its design flows),
    and the CDU's pumps deliver the loop's pressure × the PG25 resistance factor
    k/k_w = (1 − s) ρ/ρ_w + s (ρ/ρ_w)^0.75 (μ/μ_w)^0.25 (s = 0.5 friction share; properties at
    the 34 °C set-point interpolated from the catalogue, μ log-linearly) at the speed and
    efficiency the pump curve gives — the curve rated on water, its pressures × ρ/ρ_w on PG25
    (the same head in metres: shut-off ≈ 2 % higher) — within 5 % of the hand calculation (it
    is exact: same formulas written out independently)."""
    runs = {}
    for coolant in ("water", "pg25"):
        over = {"time": {"duration": "3 min"}, "record": {"cdu": "1 min", "device": "1 min", "rack": "off",
                                                          "sled": "off", "facility": "off"},
                "cdus": [{"name": "cdu-1", "template": "in-row-1350kw", "supply_temperature": "34 degC",
                          "coolant": coolant}]}
        sim = Simulation(load_scenario(SCENARIOS / "quickstart.yaml", over))
        sim.run()
        runs[coolant] = (sim, build_tree(sim)["cdu"].to_dataset(), build_tree(sim)["device"].to_dataset())
    sim_g, c_g, d_g = runs["pg25"]
    _, c_w, d_w = runs["water"]
    # hand: properties at 34 °C between the 30 and 40 °C rows
    a = 0.4
    row = lambda name, t: np.array(next(r for r in CAT.coolants[name].properties.points if r[0] == t)[1:])  # noqa: E731
    interp = lambda name: (1 - a) * row(name, 30.0) + a * row(name, 40.0)  # noqa: E731
    gw, gg = interp("water"), interp("pg25")
    mu_w = np.exp((1 - a) * np.log(row("water", 30.0)[2]) + a * np.log(row("water", 40.0)[2]))
    mu_g = np.exp((1 - a) * np.log(row("pg25", 30.0)[2]) + a * np.log(row("pg25", 40.0)[2]))
    heat = gg[0] * gg[1] / (gw[0] * gw[1])
    x = gg[0] / gw[0]
    f = 0.5 * x + 0.5 * x ** 0.75 * (mu_g / mu_w) ** 0.25
    assert sim_g.system.extra["coolant"]["heat"] == pytest.approx(heat, rel=1e-9)
    assert sim_g.system.extra["coolant"]["resistance"] == pytest.approx(f, rel=1e-9)
    assert 1.08 < f < 1.2  # pumping 10–20 % higher, as glycol loops are quoted
    # the pump curve on PG25: the same head, so ρ/ρ_w × the water curve's pressures (≈ +2 %)
    assert 1.015 < x < 1.025
    p0_water = CAT.pumps[CAT.cdus["in-row-1350kw"].pump].shutoff_pressure.si
    assert sim_g.cooling.pumps.p0[0] == pytest.approx(x * p0_water, rel=1e-12)
    assert runs["water"][0].cooling.pumps.p0[0] == p0_water
    # same volume flow: the recorded (water-equivalent) mass flow / (ρ_w heat)
    q_g = float(c_g["flow"].values[-1, 0]) / (RHO_WATER * heat)
    q_w = float(c_w["flow"].values[-1, 0]) / RHO_WATER
    assert q_g == pytest.approx(q_w, rel=1e-9)
    cdu = CAT.cdus["in-row-1350kw"]
    pump = CAT.pumps[cdu.pump]
    n, qp, p0, pd = cdu.pumps.value, pump.design_flow.si, pump.shutoff_pressure.si, pump.design_pressure.si
    a_curve = (p0 - pd) / qp ** 2
    qd = cdu.design_flow.si

    def power(q, fr, rho):
        dp = fr * (cdu.index_pressure.si + (cdu.design_pressure.si - cdu.index_pressure.si) * (q / qd) ** 2)
        # the curve on this coolant: rho × (s² Δp₀ − a (Q/n)²)
        speed = max(np.sqrt((dp / rho + a_curve * (q / n) ** 2) / p0), pump.min_speed.si)
        dp = max(dp, rho * (speed ** 2 * p0 - a_curve * (q / n) ** 2))  # at minimum speed the surplus is throttled
        r = q / (n * speed * qp)
        return q * dp / (pump.efficiency.si * (2 * r - r * r) * pump.drive_efficiency.si)

    p_g, p_w = float(c_g["p_pump"].values[-1, 0]), float(c_w["p_pump"].values[-1, 0])
    assert p_w == pytest.approx(power(q_w, 1.0, 1.0), rel=0.05)
    assert p_g == pytest.approx(power(q_g, f, x), rel=0.05)
    assert p_g == pytest.approx(power(q_g, f, x), rel=1e-9)
    assert p_g / p_w == pytest.approx(power(q_g, f, x) / power(q_w, 1.0, 1.0), rel=0.01)
    assert p_g > p_w
    # and the dies run warmer on PG25 (worse plates, less heat per litre)
    assert float(d_g["t_die"].values[-1].max()) > float(d_w["t_die"].values[-1].max())


def test_phoenix_with_plant_pg25_against_water_by_hand():
    """The Phoenix hall with its facility plant, 2 h of the design day at 60 s steps, on water and
    on PG25. The plant's CDU holds its 42 °C supply on both (PI), so what moves is what the
    properties give, by hand from the catalogue rows at 42 °C (linear between the 40 and 50 °C
    rows, μ log-linearly: heat-capacity ratio (ρ c_p)/(ρ c_p)_w = 0.967, plate convection factor
    F = (k/k_w) ((ρ/μ)/(ρ_w/μ_w))^0.4 (Pr/Pr_w)^(1/3) = 0.795, loop resistance factor
    (1 − s) ρ/ρ_w + s (ρ/ρ_w)^0.75 (μ/μ_w)^0.25 = 1.115):

    - each GB300 die, steady: T_die = 42 + ΣP_liquid,tray / (Q_tray ρ_w c_p,w · heat)
      + P r_conv,ref (Q_ref / Q_plate)^0.4 / F + (P − P_hbm) r_jc, Q_tray and Q_plate the
      catalogue's volume flows (the same on both coolants: the loop is balanced for them),
      ρ_w c_p,w the model's water constants, P each device's power in its run, P_hbm its HBM
      stacks' share (floor + full-bandwidth power × (P − P_idle)/(TDP − P_idle)) — within
      0.01 K (steady after 2 h to far less); PG25 runs the hottest GPU ~4 K warmer;
    - CDU pumps: the loop pressure under differential-pressure control × the resistance factor at
      the speed and efficiency the pump curve gives (as for water in test_facility_balance.py;
      on PG25 the curve's pressures × ρ/ρ_w: the same head), within 1e-9 (same formulas written
      out): ~15 % more pump power."""
    from twin.units import CP_WATER

    rows = {name: {r[0]: np.array(r[1:]) for r in CAT.coolants[name].properties.points} for name in ("water", "pg25")}

    def props(name, t=42.0):
        lo, hi = rows[name][40.0], rows[name][50.0]
        a = (t - 40.0) / 10.0
        rho, cp, _, k = (1 - a) * lo + a * hi
        mu = np.exp((1 - a) * np.log(lo[2]) + a * np.log(hi[2]))
        return rho, cp, mu, k

    rw, cw, mw, kw = props("water")
    rg, cg, mg, kg = props("pg25")
    heat = rg * cg / (rw * cw)
    conv = (kg / kw) * ((rg / mg) / (rw / mw)) ** 0.4 * ((cg * mg / kg) / (cw * mw / kw)) ** (1 / 3)
    x = rg / rw
    resistance = 0.5 * x + 0.5 * x ** 0.75 * (mg / mw) ** 0.25
    assert heat == pytest.approx(0.967, abs=5e-4) and conv == pytest.approx(0.795, abs=5e-4)
    assert resistance == pytest.approx(1.115, abs=5e-4)
    factors = {"water": (1.0, 1.0, 1.0, 1.0), "pg25": (heat, conv, resistance, x)}

    chip = CAT.chips["gb300"]
    tray = CAT.sleds["gb300-compute-tray"].devices
    liquid_design = lambda sled: sum(CAT.chips[c].flow_ref.si * n.value for c, n in CAT.sleds[sled].devices.items()  # noqa: E731
                                     if CAT.chips[c].cooling == "liquid")
    q_tray = (CAT.racks["gb300-nvl72"].coolant_flow.si * liquid_design("gb300-compute-tray")
              / (18 * liquid_design("gb300-compute-tray") + 9 * liquid_design("nvlink-switch-tray")))
    q_plate = q_tray * chip.flow_ref.si / liquid_design("gb300-compute-tray")
    assert tray["gb300"].value == 4
    cdu = CAT.cdus["in-row-1350kw"]
    pump = CAT.pumps[cdu.pump]
    hottest, power = {}, {}
    for coolant in ("water", "pg25"):
        h, f_conv, f_res, rho = factors[coolant]
        over = {"time": {"duration": "2 h", "step": "60 s"},
                "record": {"facility": "off", "cdu": "off", "rack": "off", "device": "off"},
                "cdus": [{"name": "cdu-1", "template": "in-row-1350kw", "supply_temperature": "42 degC",
                          "coolant": coolant}]}
        sim = Simulation(load_scenario(SCENARIOS / "design-day-phoenix.yaml", over))
        sim.run()
        sy = sim.system
        g = next(g for g in sy.groups if g.template == "gb300-compute-tray")
        assert sim.racks.sled_supply[g.sleds] == pytest.approx(42.0, abs=1e-6)  # the plant holds it
        p = np.asarray(sim.state["device.p_step"])
        gpu = np.array([k == "gb300" for k in sy.device_kind[g.devices[0]]])
        p_liquid = p[g.devices[:, g.liquid]].sum(axis=1)[:, None]
        t_coolant = 42.0 + p_liquid / (q_tray * RHO_WATER * CP_WATER * h)
        p_gpu = p[g.devices[:, gpu]]
        p_hbm = chip.hbm_idle_power.si + chip.hbm_active_power.si * (p_gpu - chip.p_idle.si) / (chip.tdp.si - chip.p_idle.si)
        hand = (t_coolant + p_gpu * chip.r_conv_ref.si * (chip.flow_ref.si / q_plate) ** chip.convection_exponent.si / f_conv
                + (p_gpu - p_hbm) * chip.r_jc.si)
        assert sim.t_die[g.devices[:, gpu]] == pytest.approx(hand, abs=0.01)
        hottest[coolant] = float(sim.t_die[g.devices[:, gpu]].max())
        # the CDU's pumps at the run's volume flow
        q = float(sim.state["cdu.flow"][0]) / (RHO_WATER * h)
        n, qp, p0, pd = cdu.pumps.value, pump.design_flow.si, pump.shutoff_pressure.si, pump.design_pressure.si
        a = (p0 - pd) / qp ** 2
        dp = f_res * (cdu.index_pressure.si + (cdu.design_pressure.si - cdu.index_pressure.si) * (q / cdu.design_flow.si) ** 2)
        speed = max(np.sqrt((dp / rho + a * (q / n) ** 2) / p0), pump.min_speed.si)
        dp = max(dp, rho * (speed ** 2 * p0 - a * (q / n) ** 2))  # throttled at minimum speed
        r = q / (n * speed * qp)
        eta = pump.efficiency.si * (2 * r - r * r)
        power[coolant] = float(sim.state["cdu.p_pump"][0])
        assert power[coolant] == pytest.approx(q * dp / (eta * pump.drive_efficiency.si), rel=1e-9)
    assert 3.0 < hottest["pg25"] - hottest["water"] < 6.0
    assert 1.10 < power["pg25"] / power["water"] < 1.25
