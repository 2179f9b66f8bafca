"""Condenser-water pumps: a piece of plant equipment added as one module and one catalogue entry.

Checked against a hand calculation (pumps staged one per running chiller at the catalogue's
power), the sourced catalogue figures (AHRI 550/590 3.0 gpm/ton, ASHRAE 90.1 Appendix G
19 W/gpm), the plant's energy balance with the pumps in it, and the registry: nothing in the
package but its own module names it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from twin.catalog import load_catalog
from twin.cooling.condenser_pumps import CondenserWaterPumps, condenser_pump_power
from twin.cooling.config import PlantSpec
from twin.cooling.facility import Plant
from twin.scenario.errors import FieldError
from twin.site.weather import Weather
from twin.units import RHO_WATER

CAT = load_catalog()
M_900KW = 1350.0 / 60e3 * RHO_WATER  # secondary flow of a CDU at 900 kW, 1.5 L/min per kW [kg/s]
HOT = Weather.constant(38.0, rh=0.5)  # wet-bulb ≈ 29 degC: towers alone cannot hold 30 degC
GPM = 3.785411784e-3 / 60.0  # [m3/s]
TON = 3516.8528  # refrigeration ton [W]


def tower_plant(equipment=None, kind="cooling_tower", dt=60.0, n_cdu=2):
    spec = PlantSpec.model_validate({"facility_water_supply": "30 degC", "heat_rejection": {"kind": kind},
                                     "equipment": equipment if equipment is not None
                                     else {"condenser_water_pumps": {}}})
    return Plant(spec, CAT, ["in-row-1350kw"] * n_cdu, np.full(n_cdu, 35.0), np.full(n_cdu, M_900KW), dt,
                 weather=HOT)


def test_pump_power_by_hand():
    """n = min(N, ⌈Q/Q_unit⌉) pumps at P_pump each."""
    assert condenser_pump_power(0.0, 1e6, 4, 16.2e3) == 0.0
    assert condenser_pump_power(0.3e6, 1e6, 4, 16.2e3) == 16.2e3
    assert condenser_pump_power(1.5e6, 1e6, 4, 16.2e3) == 2 * 16.2e3
    assert condenser_pump_power(2.0e6, 1e6, 4, 16.2e3) == 2 * 16.2e3  # exactly two chillers' load
    assert condenser_pump_power(9.0e6, 1e6, 4, 16.2e3) == 4 * 16.2e3  # no more pumps than chillers


def test_catalogue_pump_is_the_sourced_figures():
    """3.0 gpm per ton of the 1 MW chiller and 19 W per gpm (to the rounding of the entry, 0.2 %)."""
    pump, chiller = CAT.pumps["condenser-water-pump"], CAT.chillers["water-cooled-chiller-1mw"]
    gpm = pump.design_flow.si / GPM
    assert gpm / (chiller.capacity.si / TON) == pytest.approx(3.0, rel=2e-3)
    assert pump.power.si / gpm == pytest.approx(19.0, rel=2e-3)


def test_plant_runs_the_pumps_with_its_chillers_and_balances_energy():
    """In the hot steady state the chillers trim; the pumps draw n × 16.2 kW, the ledger adds
    them to the cooling power, and the plant's energy balance still closes (the pump heat is
    rejected by the towers)."""
    plant = tower_plant()
    plant.initialise(np.full(2, 1.2e6), 80e3)
    pump = CAT.pumps["condenser-water-pump"].power.si
    unit = plant.chillers.chiller.capacity.si
    steps = []
    for k in range(10):
        t = k * plant.dt
        f = M_900KW * plant.secondary_flow_factor
        ret = plant.cdu_supply + 1.2e6 / (f * 4186.0)
        steps.append(plant.step(t, ret, f, 80e3, 2.5e6))
    for st in steps:
        assert st.q_chiller > 0
        want = min(plant.chillers.chiller_count, math.ceil(st.q_chiller / unit - 1e-9)) * pump
        assert st.p_other == want
        parts = st.p_cdu_pumps + st.p_facility_pumps + st.p_heat_rejection_fans + st.p_chiller + st.p_crah
        assert st.p_cooling == pytest.approx(parts + want, rel=1e-12)
    # rounding of ~1e7 J sums; a missed 16 kW term over 600 s would be ~1e-3
    assert abs(plant.totals.energy_residual) < 1e-9


def test_without_the_option_the_plant_has_no_pumps():
    plant = tower_plant(equipment={})
    assert not any(isinstance(c, CondenserWaterPumps) for c in plant.components)
    plant.initialise(np.full(2, 1.2e6), 80e3)
    assert plant.plant_state.p_other == 0.0


def test_bad_configuration_names_the_field():
    with pytest.raises(FieldError) as exc:
        tower_plant(kind="dry_cooler")
    assert exc.value.loc == ("plant", "equipment", "condenser_water_pumps")
    with pytest.raises(FieldError) as exc:
        tower_plant(equipment={"condenser_water_pumps": {"template": "no-such-pump"}})
    assert exc.value.loc == ("plant", "equipment", "condenser_water_pumps", "template")
    with pytest.raises(FieldError) as exc:
        tower_plant(equipment={"condenser_water_pumps": {"size": 3}})
    assert exc.value.loc == ("plant", "equipment", "condenser_water_pumps", "size")
    with pytest.raises(FieldError) as exc:
        tower_plant(equipment={"condensr_water_pumps": {}})
    assert exc.value.loc == ("plant", "equipment", "condensr_water_pumps")
    assert "condenser_water_pumps" in exc.value.message


def test_nothing_else_in_the_package_names_it():
    """Adding it was its module and its catalogue entry: the plant, the variable registry and
    the metrics find it through the equipment registry and its declarations."""
    package = Path(__file__).resolve().parents[2] / "twin"
    own = package / "cooling" / "condenser_pumps.py"
    for word in ("CondenserWaterPumps", "condenser_pumps", "p_condenser_pumps", "condenser_water_pumps"):
        users = [p for p in package.rglob("*.py") if p != own and word in p.read_text(encoding="utf-8")]
        assert users == [], f"{word} named outside its module: {users}"
    from twin.export.prometheus import METRICS
    from twin.sim.variables import PLANT_EQUIPMENT, VARIABLES

    assert CondenserWaterPumps in PLANT_EQUIPMENT
    assert "p_condenser_pumps" in VARIABLES["facility"]
    assert METRICS[("facility", "p_condenser_pumps")] == "twin_condenser_water_pump_power_watts"


def test_twin_validate_names_the_file_line_and_field(tmp_path):
    """Bad equipment options fail before anything runs: one line, FILE:LINE: field: message, exit 2."""
    from typer.testing import CliRunner

    from tests.conftest import SCENARIOS
    from twin.cli import app

    text = (SCENARIOS / "quickstart.yaml").read_text(encoding="utf-8")
    path = tmp_path / "bad.yaml"
    path.write_text(text + "plant:\n  heat_rejection: {kind: dry_cooler}\n  equipment:\n"
                           "    condenser_water_pumps: {}\n", encoding="utf-8")
    line = len(text.splitlines()) + 4
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert result.stderr.strip() == (f"{path}:{line}: plant.equipment.condenser_water_pumps: condenser-water "
                                     "pumps need water-cooled chillers (plant.chiller)")


def test_in_a_whole_run_the_pumps_are_recorded_and_the_facility_balances():
    """Phoenix design day with 20 degC facility water, cooling towers and water-cooled chillers: the pumps run with the
    chillers, their power is recorded and part of the cooling power, and the facility's energy
    balance (utility in = heat rejected outdoors + stored) still closes to rounding."""
    from tests.conftest import SCENARIOS
    from twin.export.dataset import build_tree
    from twin.scenario import load_scenario
    from twin.sim.driver import Simulation

    over = {"time": {"duration": "1 d", "step": "120 s"},
            "record": {"facility": "120 s", "cdu": "off", "rack": "off", "device": "off"},
            "plant": {"facility_water_supply": "20 degC", "heat_rejection": {"kind": "cooling_tower"},
                      "equipment": {"condenser_water_pumps": {}}}}
    sim = Simulation(load_scenario(SCENARIOS / "design-day-phoenix.yaml", over))
    sim.run()
    f = build_tree(sim)["facility"].to_dataset()
    p = f["p_condenser_pumps"].values
    assert p.max() > 0  # the chillers trim in the afternoon (wet-bulb ~21 degC)
    pump = CAT.pumps["condenser-water-pump"].power.si
    assert np.allclose(p / pump, np.round(p / pump), rtol=0, atol=1e-9)  # whole pumps per step
    assert sim.plant.totals.e_cooling > float((p * 120.0).sum())
    # rounding over ~1e10 J; a pump term on one side only would leave ~1e-3
    assert abs(sim.facility_balance()["residual"]) < 1e-9
