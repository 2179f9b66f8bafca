"""Capacity search on a case solvable by hand: one-chip racks at a constant 1 kW chip load.

Every rack draws the same AC power P_r = 1248.4 W (1 kW of chip power through its power shelf,
computed by hand below) from the
first second to the last (constant load, no leakage, steady initial state), so N racks draw
N·P_r plus CDU pump power (P_pump = 15 kW·(ṁ/ṁ_design)³, under a milliwatt here). A budget of
(1 + k + ½)·P_r admits exactly k racks beside the scenario's own one.
"""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from tests.conftest import one_chip_scenario, write_scenario
from twin.cli import app
from twin.scenario import ScenarioError, load_scenario
from twin.sim.driver import Simulation
from twin.sweep.capacity import capacity_search

CONSTANT = [{"select": {"kind": ["testchip"]}, "u": 1.0}]


@pytest.fixture
def case(tmp_path):
    """The scenario file and one rack's AC power P_r [W] (from a one-rack run)."""
    path = write_scenario(tmp_path, one_chip_scenario(CONSTANT, duration="60 s"))
    sim = Simulation(load_scenario(path))
    tot = sim.run()
    # By hand: 1 kW DC on a 6 × 5.5 kW ORv3 shelf is 3 % load, below the curve's first point
    # (93 % at 10 %), where the shelf loses its 10 %-load loss: 3.3 kW·(1/0.93 − 1) = 248.4 W.
    p_rack = 1000.0 + 0.1 * 33_000.0 * (1 / 0.93 - 1)
    assert tot.p_rack_peak == pytest.approx(p_rack, rel=1e-9)
    # The pump of the one CDU adds 15 kW·(1.5/2000)³ ≈ 6e-6 W.
    assert tot.p_facility_peak == pytest.approx(p_rack, abs=1e-3)
    return path, p_rack


def test_power_budget_admits_hand_computed_count(case):
    path, p_rack = case
    res = capacity_search(path, "testrack", budget_power=8.5 * p_rack, duration="30 s")
    assert res.n == 7  # 1 + 7 racks = 8·P_r ≤ 8.5·P_r < 9·P_r
    assert res.binding == ("power",)
    assert res.at_limit.p_facility_peak == pytest.approx(8 * p_rack, abs=1e-2)
    assert res.over_limit.p_facility_peak == pytest.approx(9 * p_rack, abs=1e-2)
    assert res.at_limit.n_racks == 8
    assert len(res.probes) <= 4  # 0 and 1, then the linear guess and the next count


def test_cooling_budget_binds_when_tighter(case):
    """The cooling load is the racks' heat to liquid and air plus pump power: at constant load
    from a steady start it equals the AC power, so 4.5·P_r of cooling admits 3 racks more."""
    path, p_rack = case
    res = capacity_search(path, "testrack", budget_power=100 * p_rack, budget_cooling=4.5 * p_rack,
                          duration="30 s")
    assert res.n == 3
    assert res.binding == ("cooling",)
    assert res.at_limit.cooling_peak == pytest.approx(4 * p_rack, rel=1e-6)


def test_capping_tolerance_binds_on_a_row_limit(tmp_path, case):
    """A row limit of 3.5·P_r caps the row once it holds 4 racks: with a 1 % tolerance the
    answer is 2 added racks and the binding constraint is capping; with 100 % it is the power
    budget again."""
    _, p_rack = case
    data = one_chip_scenario(CONSTANT, duration="60 s")
    data["halls"][0]["rows"][0]["power_limit"] = f"{3.5 * p_rack:.3f} W"
    path = write_scenario(tmp_path, data, name="limited.yaml")
    res = capacity_search(path, "testrack", budget_power=20.5 * p_rack, tolerance=0.01)
    assert (res.n, res.binding) == (2, ("capping",))
    assert res.over_limit.capped_share > 0.5
    loose = capacity_search(path, "testrack", budget_power=6.5 * p_rack, tolerance=1.0)
    assert loose.binding == ("power",)


def test_parallel_probes_on_two_workers_agree(case):
    path, p_rack = case
    res = capacity_search(path, "testrack", budget_power=12.5 * p_rack, duration="20 s", workers=2)
    assert (res.n, res.binding) == (11, ("power",))


def test_cli_reports_answer_and_binding_constraint(case):
    path, p_rack = case
    budget = f"{8.5 * p_rack / 1e3:.6f} kW"
    result = CliRunner().invoke(app, ["capacity", str(path), "--rack", "testrack", "--budget-power", budget,
                                      "--duration", "20 s"])
    assert result.exit_code == 0, result.output
    assert "7 units = 7 racks added (8 racks in all)" in result.output
    assert "binding constraint" in result.output and "power" in result.output


@pytest.mark.parametrize("args, message", [
    (["--rack", "gb301"], "--rack: unknown template 'gb301'"),
    (["--rack", "testrack", "--row", "nope"], "--row: unknown row 'nope' (known: r)"),
    (["--rack", "testrack", "--budget-power", "20 degC"], "--budget-power: '20 degC' is not a power"),
    (["--rack", "testrack", "--tolerance-throttle", "lots"], "--tolerance-throttle: expected a share"),
])
def test_bad_options_are_one_line_exit_2(case, args, message):
    path, _ = case
    argv = ["capacity", str(path), *args]
    if "--budget-power" not in args:
        argv += ["--budget-power", "20MW"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1 and message in result.output, result.output


def test_scenario_over_budget_alone_fits_nothing(case):
    path, p_rack = case
    res = capacity_search(path, "testrack", budget_power=0.5 * p_rack, duration="10 s")
    assert res.n == 0 and res.binding == ("power",)
    assert any("without added racks" in n for n in res.notes)
    with pytest.raises(ScenarioError, match="--cdu: unknown CDU"):
        capacity_search(path, "testrack", budget_power=1e6, cdu="nope")
    assert math.isfinite(res.probes[0].p_facility_peak)
