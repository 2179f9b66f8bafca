"""Every bundled scenario validates, and each (but the benchmarks) runs a few minutes cleanly."""

from __future__ import annotations

import pytest

from tests.conftest import SCENARIOS
from twin.export.dataset import summary
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

#: Catalogue overlays (scenarios/overlays) are not scenarios; the scenarios that include them load them.
ALL = sorted(p for p in SCENARIOS.rglob("*.yaml") if p.parent.name != "overlays")
RUNNABLE = [p for p in ALL if p.parent == SCENARIOS and not p.name.startswith("sweep")]


@pytest.mark.parametrize("path", ALL, ids=[str(p.relative_to(SCENARIOS)) for p in ALL])
def test_validates(path):
    if path.name.startswith("sweep"):
        pytest.skip("a sweep file, not a scenario (tested in tests/sweep)")
    load_scenario(path)


@pytest.mark.parametrize("path", RUNNABLE, ids=[p.name for p in RUNNABLE])
def test_runs_briefly_with_closed_energy(path):
    sc = load_scenario(path).scenario
    # Events must fall inside the run; coarse-step scenarios get three of their steps.
    seconds = max([180.0, 3 * sc.time.step] + [e.at + 60.0 for e in sc.events])
    sim = Simulation(load_scenario(path, {"time": {"duration": f"{seconds} s"}}))
    sim.run()
    kpi = summary(sim)
    assert kpi["energy_it_J"] > 0
    assert abs(kpi["energy_residual"]) < 1e-9
    if sim.jobs is not None:
        assert all(j.progress > 0 or j.spec.start > 0 for j in sim.jobs.jobs)
