"""In-row liquid-to-air heat exchangers: rating, energy balance, the hall air's temperature rise,
the capacity limit, and what is not modelled (with a plant) failing clearly."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from twin.catalog import load_catalog
from twin.cooling.plant import hx_outlets
from twin.scenario import ScenarioError, load_scenario
from twin.sim.driver import Simulation
from twin.units import CP_AIR, CP_WATER, RHO_AIR, RHO_WATER

HALL = SCENARIOS / "liquid-to-air-hall.yaml"
STEADY = [{"select": {"kind": ["gb300"]}, "u": 0.8}, {"select": {"kind": ["grace"]}, "u": 0.25}]


def _sim(over):
    return Simulation(load_scenario(HALL, over))


def test_rated_ua_gives_the_rated_capacity():
    """At design flows and full fans, with the supply at the rated approach above the air, the
    coil passes its rated capacity (ε-NTU closed form, Incropera Table 11.4)."""
    from twin.cooling.liquid_to_air import LiquidToAirCdu

    e = load_catalog().cdus["in-row-hx-140kw"]
    ua = LiquidToAirCdu.rated_ua(e)
    m_l, m_a = e.design_flow.si * RHO_WATER, RHO_AIR * e.air_flow.si
    t_air = 25.0
    t_return = t_air + e.approach.si + e.capacity.si / (m_l * CP_WATER)
    t_out, _, q = hx_outlets(t_return, t_air, m_l, m_a, ua, CP_WATER, CP_AIR)
    assert float(q) == pytest.approx(e.capacity.si, rel=1e-9)  # inverse of ntu_counterflow
    assert float(t_out) == pytest.approx(t_air + e.approach.si, rel=1e-9)


def test_energy_balance_closes_and_hall_air_warms_by_q_over_m_cp():
    """Over 20 min: heat from the racks + pump power = heat to the hall air + change of the loops'
    stored heat (exact integration: rounding only). At steady state the air leaving the coils is
    warmer than the hall by Q/(ṁ_a c_p,a), with Q the racks' liquid heat (from the sled networks,
    an independent calculation) plus the pump power."""
    sim = _sim({"time": {"duration": "20 min"}, "workload": STEADY})
    cdu = sim.cooling
    stored0 = cdu.stored_heat()
    e_in = e_out = 0.0
    while sim.step_index < sim.n_steps:
        sim.step()
        st = sim.state
        e_in += float(st["cdu.q_in"].sum() + st["cdu.p_pump"].sum()) * sim.h
        e_out += float(st["cdu.q"].sum()) * sim.h
    stored = cdu.stored_heat() - stored0
    assert (e_in - e_out - stored) / e_in == pytest.approx(0.0, abs=1e-12)  # rounding of ~1e3 sums

    st = sim.state
    q_racks = np.bincount(sim.system.rack_cdu, weights=st["rack.q_liquid"], minlength=2)
    q = q_racks + st["cdu.p_pump"]
    m_air = RHO_AIR * cdu.v_air * cdu.speed
    rise = st["cdu.t_air_out"] - sim.scenario.site.cold_aisle
    # 1e-4: after 20 min of constant load the loops (time constant C_s/G ≈ 2 min) are within
    # e^-10 of steady state, so the stored heat no longer changes measurably.
    assert rise == pytest.approx(q / (m_air * CP_AIR), rel=1e-4)
    assert 5.0 < rise.min() and rise.max() < 30.0  # a hot-aisle rise, not a physics slip
    assert st["cdu.t_supply"] == pytest.approx(40.0, abs=0.01)  # the fans hold the set-point
    assert 0.0 < cdu.speed.min() and cdu.speed.max() < 1.0


def test_capacity_limit_raises_the_supply():
    """With 36 degC hall air the coils cannot bring the coolant down to 40 degC at this load:
    the fans run flat out and the supply settles above the set-point, where ε C_min (T_s − T_air)
    carries the heat."""
    sim = _sim({"time": {"duration": "20 min"}, "workload": STEADY, "site": {"cold_aisle": "36 degC"}})
    sim.run()
    st, cdu = sim.state, sim.cooling
    assert cdu.speed == pytest.approx(1.0)
    assert st["cdu.t_supply"].min() > 41.0
    p_fan = st["cdu.p_fan"]
    assert p_fan == pytest.approx(4000.0, rel=1e-9)  # catalogue fan power at full speed


def test_not_with_a_plant(tmp_path):
    text = HALL.read_text() + "plant: {}\n"
    path = tmp_path / "l2a-plant.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError, match=r"liquid_to_air CDU: the facility plant serves liquid-to-liquid"):
        Simulation(load_scenario(path))


def test_water_side_figures_are_si():
    e = load_catalog().cdus["in-row-hx-140kw"]
    assert e.kind == "liquid_to_air"
    assert e.design_flow.si * RHO_WATER == pytest.approx(210 / 60 / 1000 * RHO_WATER)


def test_readme_section_is_the_real_run(tmp_path, monkeypatch):
    """The README's liquid-to-air section shows this scenario's real summary and coil figures."""
    import contextlib
    import io

    from typer.testing import CliRunner

    from tests.conftest import ROOT
    from tests.test_cli import _summary_rows
    from twin.cli import app

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("### Liquid-cooled racks in an air-cooled hall", 1)[1].split("\n## ", 1)[0]
    assert "twin run scenarios/liquid-to-air-hall.yaml" in block
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", str(HALL)])
    assert result.exit_code == 0, result.output
    shown = block.split("```text", 1)[1].split("```", 1)[0]
    got, want = _summary_rows(result.stdout), _summary_rows(shown)
    key = "energy balance residual"  # round-off: its digits vary with the BLAS build
    assert abs(float(got.pop(key))) < 1e-12 and abs(float(want.pop(key))) < 1e-12
    assert got == want
    code = block.split("```python", 1)[1].split("```", 1)[0]
    expected = block.split("```text", 2)[2].split("```", 1)[0]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, "README.md", "exec"), {})
    assert buf.getvalue().strip() == expected.strip()
