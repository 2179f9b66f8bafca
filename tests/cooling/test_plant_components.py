"""The plant as separately scheduled equipment: each piece one component (or two stages of one),
stepping at the plant's rate, owning its own events and controls."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from twin.cooling.cdu_bank import CduDemand, CduLoops
from twin.cooling.chilled_water import ChilledWater
from twin.cooling.chiller import Chiller
from twin.cooling.equipment import plant_equipment
from twin.cooling.facility import PlantLedger
from twin.cooling.facility_water import FacilityReturn, FacilitySupply
from twin.cooling.rejection import HeatRejection
from twin.scenario import load_scenario
from twin.sim.driver import Simulation
from twin.site.station import WeatherStation

PLANT_EQUIPMENT = plant_equipment()
#: The equipment of every plant, in step order.
BUNDLED = (WeatherStation, CduDemand, FacilitySupply, CduLoops, FacilityReturn, ChilledWater, Chiller, HeatRejection,
           PlantLedger)


def _sim(**over):
    return Simulation(load_scenario(SCENARIOS / "design-day-phoenix.yaml", {"time": {"duration": "2 min"}, **over}))


def test_each_piece_of_equipment_is_scheduled_at_the_plant_step():
    sim = _sim(plant={"step": "5 s"}, time={"duration": "2 min", "step": "1 s"})
    every = int(round(sim.scenario.plant.step / sim.h))
    plant = [c for c in sim.components if type(c) in PLANT_EQUIPMENT]
    assert plant == sim.plant.components  # the plant's equipment, in its order, scheduled as built
    assert [type(c) for c in plant] == [c for c in PLANT_EQUIPMENT if c in BUNDLED]
    assert every > 1 and all(c.every == every for c in plant)
    # each output has exactly one writer, and each piece writes something of its own
    for c in plant:
        assert c.outputs and all(sim.state.owner[v.key] == c.name for v in c.outputs)


def test_events_and_controls_go_to_the_equipment_that_owns_them():
    sim = _sim()
    owners = {kind: [c.name for c in cs] for kind, cs in sim.schedule.owners.items()}
    assert owners["chiller_trip"] == ["Chiller"]
    assert owners["dry_cooler_fan_failure"] == ["HeatRejection"]
    assert owners["cdu_pump_trip"] == ["CduLoops"] and owners["cdu_failure"] == ["CduLoops"]
    assert "Chiller" in owners["utility_outage"]
    controls = {ctl.key: c.name for c in sim.components for ctl in c.controls}
    assert controls["cdu.t_supply_set"] == "CduLoops"
    assert controls["facility.t_facility_supply_set"] == "FacilitySupply"
    assert controls["facility.cooling_mode"] == "FacilitySupply"
    assert controls["facility.t_cold_aisle_set"] == "ChilledWater"


def test_a_chiller_trip_reaches_the_facility_water_through_the_state():
    """The chillers publish the capacity in service; the facility water reads it: with them
    tripped on a hot design day the economiser runs on free cooling alone (mode 2) and the
    chillers draw nothing."""
    events = [{"kind": "chiller_trip", "at": "0 s", "duration": "1 h"}]
    sim = _sim(events=events)
    sim.run()
    assert sim.state["facility.chiller_available"] == 0.0
    assert float(sim.state["facility.p_chiller"][0]) == 0.0
    assert float(sim.state["facility.economiser"][0]) == 2.0


def test_equipment_classes_are_the_registry():
    """The registry finds each piece of equipment in its module and orders it by its declared
    stage; the variable registry declares all of their outputs."""
    from twin.sim.variables import COMPONENT_TYPES

    # the equipment every plant has, in this order (optional equipment steps between them)
    assert [c for c in PLANT_EQUIPMENT if c in BUNDLED] == list(BUNDLED)
    stages = [c.plant_stage for c in PLANT_EQUIPMENT]
    assert stages == sorted(stages) and len(set(stages)) == len(stages)
    assert set(PLANT_EQUIPMENT) <= set(COMPONENT_TYPES)
    assert np.all([hasattr(c, "outputs") and hasattr(c, "from_plant") for c in PLANT_EQUIPMENT])


def test_two_pieces_of_equipment_at_one_stage_are_refused(monkeypatch):
    """The step order is what the equipment declares: a tie would leave it to chance."""
    import twin.cooling.equipment as eq

    monkeypatch.setattr(Chiller, "plant_stage", ChilledWater.plant_stage)
    eq.plant_equipment.cache_clear()
    try:
        with pytest.raises(ValueError, match="share stage 50"):
            eq.plant_equipment()
    finally:
        monkeypatch.undo()
        eq.plant_equipment.cache_clear()


def test_unknown_equipment_in_the_scenario_names_the_field():
    from twin.scenario.errors import ScenarioError

    with pytest.raises(ScenarioError, match=r"plant\.equipment\.no_such_unit: unknown equipment"):
        _sim(plant={"equipment": {"no_such_unit": {}}})


def test_cdu_models_are_found_by_the_kind_they_declare():
    """A CDU model without a plant registers by its catalogue kind; a subclass that does not
    declare one of its own is not registered twice."""
    from twin.cooling.cdu import SimpleCdu
    from twin.cooling.equipment import cdu_models, declaring
    from twin.cooling.liquid_to_air import LiquidToAirCdu

    assert cdu_models() == {"liquid_to_liquid": SimpleCdu, "liquid_to_air": LiquidToAirCdu}
    assert LiquidToAirCdu in declaring("cdu_kind") and issubclass(LiquidToAirCdu, SimpleCdu)
    assert all("plant_stage" in vars(c) for c in PLANT_EQUIPMENT)


@pytest.mark.parametrize("rejection", ["dry_cooler", "cooling_tower"])
def test_chiller_power_at_one_load_is_the_array_path(rejection):
    """One facility-water load takes the float path, an array of loads (the economiser's
    search) the refrigeration functions: bit for bit equal over loads from none to beyond the
    chillers' capacity, set-points, and weather from frost to past the Phoenix design day; an
    air-cooled chiller that cycles below its minimum load, and a water-cooled one that
    false-loads."""
    sim = _sim(plant={"heat_rejection": {"kind": rejection}})
    (ch,) = [c for c in sim.components if isinstance(c, Chiller)]
    assert ch.water_cooled == (rejection == "cooling_tower") and ch.cycling == (rejection == "dry_cooler")
    rng = np.random.default_rng(11)
    cap, powers = ch.chiller_capacity, []
    for _ in range(3000):
        q_fw, q_chw = rng.choice([0.0, 1.0], 2) * rng.uniform(0.0, 1.3 * cap, 2)
        t_set, t_chw = rng.uniform(18.0, 45.0), rng.uniform(5.0, 18.0)
        t_db = rng.uniform(-15.0, 50.0)
        t_wb = t_db - rng.uniform(0.0, 25.0)
        one = ch._power_float(q_fw, q_chw, t_set, t_chw, t_db, t_wb)
        assert one is not None and one == ch.power(q_fw, q_chw, t_set, t_chw, t_db, t_wb)
        assert one == ch.power(np.array([q_fw]), q_chw, t_set, t_chw, t_db, t_wb)[0]
        powers.append(one)
    assert 0.5 < np.mean(np.array(powers) > 0) < 0.9  # (some loads of none)


@pytest.mark.parametrize("rejection", ["dry_cooler", "cooling_tower"])
def test_chiller_power_over_a_grid_of_loads_is_the_array_path(rejection, monkeypatch):
    """A 1-D grid of loads against one load of the other circuit (the economisers' searches)
    takes :meth:`Chiller._power_arrays` (compiled: :func:`twin.cooling.compiled.grid_power`)
    when numba is loaded, else the array path: the compiled powers bit for bit the refrigeration
    functions' array path and, element by element, the float path, over loads from none (and below) to beyond the chillers'
    capacity, set-points above and below the envelope, and weather from frost to past the
    Phoenix design day; a NaN load is left to the array path."""
    import twin.cooling.chiller as chiller_module

    compiled = pytest.importorskip("twin.cooling.compiled").grid_power
    sim = _sim(plant={"heat_rejection": {"kind": rejection}})
    (ch,) = [c for c in sim.components if isinstance(c, Chiller)]
    rng = np.random.default_rng(12)
    cap, on = ch.chiller_capacity, 0
    for _ in range(300):
        n = int(rng.integers(1, 40))
        grid = rng.choice([0.0, 1.0, -0.01], n, p=[0.1, 0.85, 0.05]) * rng.uniform(0.0, 1.3 * cap, n)
        other = float(rng.choice([0.0, 1.0]) * rng.uniform(0.0, 1.3 * cap))
        t_set, t_chw = rng.uniform(18.0, 45.0), rng.uniform(5.0, 30.0)
        t_db = rng.uniform(-15.0, 50.0)
        t_wb = t_db - rng.uniform(0.0, 25.0)
        args = (t_set, t_chw, t_db, t_wb)
        for q_fw, q_chw in ((other, grid), (grid, np.array([other])), (grid, grid[::-1])):
            with monkeypatch.context() as m:
                m.setattr(chiller_module, "_grid_kernel", lambda: None)
                fast = ch.power(q_fw, q_chw, *args)
                m.setattr(ch, "_power_arrays", lambda *a: None)
                np.testing.assert_array_equal(fast, ch.power(q_fw, q_chw, *args))
            with monkeypatch.context() as m:
                m.setattr(chiller_module, "_grid_kernel", lambda: compiled)
                np.testing.assert_array_equal(fast, ch.power(q_fw, q_chw, *args))
            floats = [ch._power_float(a, b, *args) for a, b in np.broadcast(q_fw, q_chw)]
            np.testing.assert_array_equal(fast, floats)
            on += int(np.count_nonzero(fast > 0))
    assert on > 5_000  # (most loads run chillers)
    q = np.array([1e5, np.nan])
    for kernel in (None, compiled):
        monkeypatch.setattr(chiller_module, "_grid_kernel", lambda: kernel)
        assert ch._power_arrays(q, q, 20.0, 10.0, 30.0, 20.0) is None
