"""Condenser-water pumps of water-cooled chillers: the pumps that carry the chillers' condenser
heat to the cooling towers.

A water-cooled chiller plant has one constant-speed condenser-water pump per chiller, started
and stopped with it (the arrangement of the ASHRAE 90.1 Appendix G baseline plant). Per plant
step the chillers carry the evaporator load Q_ch (both water circuits, W); the chillers running
are n = min(N, ⌈Q_ch / Q_unit⌉) (N chillers of capacity Q_unit each), so

    P = n · P_pump

with P_pump the pump's power at its design flow (catalogue ``pumps:`` entry). The catalogue's
``condenser-water-pump`` is sized for one 1 MW (284 ton) water-cooled chiller at the AHRI
550/590 rating flow of 3.0 gpm per ton (853 gpm, 53.8 L/s) and draws the ASHRAE 90.1 Appendix G
baseline 19 W per gpm (16.2 kW). The pump work ends up as heat in the condenser water, which
the towers reject outdoors, so the plant ledger counts P on both sides of the energy balance
(``cooling_power``). Not modelled: the towers' extra evaporation for that heat (≈ 1.4 % of the
condenser heat of a fully loaded 1 MW chiller at COP 6.3) and its effect on the condenser
temperature.

Enabled by the scenario (the plant needs water-cooled chillers)::

    plant:
      heat_rejection: {kind: cooling_tower}
      equipment:
        condenser_water_pumps: {template: condenser-water-pump}
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict

from twin.cooling.cdu_bank import lookup
from twin.cooling.equipment import options
from twin.scenario.errors import FieldError
from twin.sim.component import Component, Var

P_CONDENSER_PUMPS = Var("facility", "p_condenser_pumps", "W", "condenser-water pump power (water-cooled chillers)",
                        metric="twin_condenser_water_pump_power_watts")


def condenser_pump_power(q_evaporator: float, unit_capacity: float, count: int, pump_power: float) -> float:
    """Power of constant-speed condenser-water pumps staged one per running chiller [W].

    Parameters
    ----------
    q_evaporator : float
        Evaporator load the chillers carry [W].
    unit_capacity : float
        Evaporator capacity of one chiller [W].
    count : int
        Chillers installed (one pump each).
    pump_power : float
        Power of one pump at its design flow [W].

    Returns
    -------
    float
        n · P_pump with n = min(count, ⌈q_evaporator / unit_capacity⌉) [W].
    """
    if not q_evaporator > 0:
        return 0.0
    running = min(count, math.ceil(q_evaporator / unit_capacity - 1e-9))
    return running * pump_power


class CondenserWaterPumps(Component):
    """The condenser-water pumps of the plant's water-cooled chillers (module docstring).

    Parameters
    ----------
    pump : Pump
        Catalogue entry of each pump.
    unit_capacity : float
        Evaporator capacity of one chiller [W].
    count : int
        Chillers (and pumps).
    every : int
        Thermal steps per plant step.
    """

    inputs = ("facility.facility_water_step", "facility.chilled_water_step")
    outputs = (P_CONDENSER_PUMPS,)
    cooling_power = (P_CONDENSER_PUMPS.key,)
    phase = "integration"
    plant_stage = 65  # after the chillers (their loads of this step), before the ledger
    config_key = "condenser_water_pumps"

    class Spec(BaseModel):
        """``plant.equipment.condenser_water_pumps``: the catalogue pump of each chiller."""

        model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built on first use
        template: str = "condenser-water-pump"

    def __init__(self, pump, unit_capacity: float, count: int, every: int = 1):
        self.pump_power = pump.power.si
        self.unit_capacity = unit_capacity
        self.count = count
        self.every = every

    @classmethod
    def from_plant(cls, plant):
        spec = options(cls, plant.spec)
        if spec is None:
            return None
        loc = ("plant", "equipment", cls.config_key)
        ch = plant.chillers
        if not ch.water_cooled or ch.chiller_count == 0:
            raise FieldError(loc, "condenser-water pumps need water-cooled chillers (plant.chiller)")
        pump = lookup(plant.catalog.pumps, spec.template, loc + ("template",), "pump template")
        return cls(pump, ch.chiller.capacity.si, ch.chiller_count, plant.every)

    def initialise(self, state) -> None:
        state[P_CONDENSER_PUMPS.key] = np.zeros(1)

    def step(self, t: float, dt: float, state) -> None:
        load = state["facility.facility_water_step"]["q_ch_fw"] + state["facility.chilled_water_step"]["q_ch_chw"]
        state[P_CONDENSER_PUMPS.key] = np.array([
            condenser_pump_power(load, self.unit_capacity, self.count, self.pump_power)])
