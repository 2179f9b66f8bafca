"""Every bundled scenario closes its energy balances to rounding: the racks' (AC energy in =
heat to liquid and air + heat stored) and, with a plant, the plant's (heat in + electrical
power inside = heat rejected + heat stored), each within 1e-9 of the energy through it.

The scenarios are found by globbing ``scenarios/`` (a new scenario is covered without editing
this file); sweep files are skipped (their base is a scenario here) and the calibration overlays
are run by the scenarios that include them. Each run is shortened to 40 steps (4 plant steps at
least) and to past the end of its last event, so the events, failovers and plant of every
scenario run while the module stays near 30 s of CPU.
"""

from __future__ import annotations

import pytest

from tests.conftest import SCENARIOS
from twin.export.dataset import summary
from twin.scenario import load_scenario
from twin.scenario.loader import read_document
from twin.sim.driver import Simulation

#: The balances are exact sums of the same step energies on both sides, so what is left is
#: floating-point rounding (measured 1e-16 … 2e-14 relative on every scenario); a real leak — a
#: loss never turned into heat, a flow computed twice — is orders of magnitude above 1e-9.
RESIDUAL_MAX = 1e-9


def _scenario_files():
    out = []
    for path in sorted(SCENARIOS.rglob("*.yaml")):
        _, _, data = read_document(path, "scenario")
        if "halls" in data:
            out.append(path)
    return out


def _overlays():
    return sorted((SCENARIOS / "overlays").glob("*.yaml"))


def _shortened(path, extra=None):
    sc = load_scenario(path).scenario
    step = sc.time.step
    plant_step = sc.plant.step if sc.plant is not None and sc.plant.step else step
    ends = [e.at + (e.duration or 0.0) + (e.failover_delay if e.failover else 0.0) for e in sc.events]
    duration = min(sc.time.duration, max([40 * step, 4 * plant_step] + [t + 10 * step for t in ends]))
    duration = max(step, (duration // step) * step)
    return load_scenario(path, {"time": {"duration": f"{duration} s"}, **(extra or {})})


def _check(loaded):
    sim = Simulation(loaded)
    sim.run()
    kpi = summary(sim)
    assert abs(kpi["energy_residual"]) <= RESIDUAL_MAX, kpi["energy_residual"]
    if "plant_energy_residual" in kpi:
        assert abs(kpi["plant_energy_residual"]) <= RESIDUAL_MAX, kpi["plant_energy_residual"]


def test_every_scenario_file_is_found():
    names = {p.name for p in _scenario_files()}
    # the glob sees the bundled scenarios and the benchmark ones, not the sweep or the overlay
    assert {"quickstart.yaml", "design-day-phoenix.yaml", "annual-leesburg.yaml", "hall-1k.yaml"} <= names
    assert "sweep-facility-water.yaml" not in names and "a100-fitted.yaml" not in names
    assert len(names) >= 20


@pytest.mark.parametrize("path", _scenario_files(), ids=lambda p: str(p.relative_to(SCENARIOS)))
def test_energy_residual_of_every_scenario(path):
    _check(_shortened(path))


def test_every_overlay_is_run_by_a_scenario():
    """The calibration overlays change catalogue figures only; each is included by a bundled
    scenario (so its residual is checked above)."""
    included = set()
    for path in _scenario_files():
        _, _, data = read_document(path, "scenario")
        included |= {(path.parent / o).resolve() for o in data.get("overlays", [])}
    assert set(p.resolve() for p in _overlays()) <= included
