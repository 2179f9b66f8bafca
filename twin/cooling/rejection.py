"""Heat rejection to outdoors: the dry coolers or cooling towers of the facility water and of
the chilled water (one unit type, a bank per circuit; physics in
:mod:`twin.cooling.heat_rejection`).

Per plant step: the facility-water bank's fan speed (what holds the set-point with free cooling
on; flat out for towers carrying a water-cooled chiller's condenser heat), the fan power of both
banks and the make-up water (tower evaporation and blowdown, or adiabatic pad water). A fan
failure takes a fraction of the fans of both banks out until cleared: :class:`HeatRejection`
owns the fans and publishes the fraction in service (``facility.heat_rejection_in_service``),
which the water circuits read for their free-cooling solve.

*Coupling.* The water leaving the units at a fan speed and the loop's temperature are one joint
solve (the loop's rejection R(T) over the step depends on both), so the component of each water
circuit owns it, with the bank's physics (:meth:`~twin.cooling.heat_rejection.HeatRejectionBank.solve`):
:class:`~twin.cooling.facility_water.FacilitySupply` for the facility water,
:class:`~twin.cooling.chilled_water.ChilledWater` for the chilled water. They hand the result on
as declared variables (``facility.facility_water_law``, ``facility.chilled_water_step``), from
which this component sets the fans and the make-up water. The banks themselves hold only
catalogue figures and sizes.
"""

from __future__ import annotations

import numpy as np

from twin.cooling.cdu_bank import lookup
from twin.cooling.heat_rejection import HeatRejectionBank
from twin.scenario.errors import FieldError
from twin.sim.component import Component, Var

P_FANS = Var("facility", "p_heat_rejection_fans", "W", "dry cooler / cooling tower fan power")
WATER = Var("facility", "water", "kg s-1", "make-up water (evaporation and blowdown)")
HR_STEP = Var("facility", "heat_rejection_step", "1", "facility water heat rejection over the plant step: fan speed",
              record=False)
IN_SERVICE = Var("facility", "heat_rejection_in_service", "1",
                 "fraction of the heat-rejection fans in service (both circuits)", record=False)


def rejection_unit(spec, catalog):
    """The catalogue unit of the scenario's ``plant.heat_rejection`` (the plant counts the units
    of each circuit, :mod:`twin.cooling.sizing`); raises FieldError at the template's path."""
    hr = spec.heat_rejection
    names = spec.templates()
    loc = ("plant", "heat_rejection", "template")
    if hr.kind == "cooling_tower":
        return lookup(catalog.cooling_towers, names["heat_rejection"], loc, "cooling-tower template")
    unit = lookup(catalog.dry_coolers, names["heat_rejection"], loc, "dry-cooler template")
    if (hr.kind == "hybrid") != (unit.adiabatic_effectiveness is not None):
        want = "with" if hr.kind == "hybrid" else "without"
        raise FieldError(loc, f"kind '{hr.kind}' needs a dry cooler {want} adiabatic "
                              f"pre-cooling; '{names['heat_rejection']}' is not")
    return unit


class HeatRejection(Component):
    """Fans and make-up water of the facility-water and chilled-water heat-rejection banks.

    Parameters
    ----------
    bank, chw_bank : HeatRejectionBank
        The facility water's and the chilled water's units.
    water_cooled : bool
        The chillers' condensers reject through the towers.
    every : int
        Thermal steps per plant step.
    """

    inputs = ("facility.facility_water_law", "facility.facility_water_step", "facility.chilled_water_step",
              "facility.p_chiller", "facility.t_outdoor", "facility.t_wet_bulb")
    outputs = (P_FANS, WATER, HR_STEP, IN_SERVICE)
    events = ("dry_cooler_fan_failure",)
    phase = "integration"
    plant_stage = 70

    @classmethod
    def from_plant(cls, plant):
        return plant.heat_rejection

    def __init__(self, bank: HeatRejectionBank, chw_bank: HeatRejectionBank, water_cooled: bool, every: int = 1):
        self.bank, self.chw_bank = bank, chw_bank
        self.water_cooled = water_cooled
        self.every = every
        self.in_service = 1.0  # fraction of the fans working [1]
        self.state = None

    def initialise(self, state) -> None:
        self.state = state
        state[IN_SERVICE.key] = self.in_service

    def set_failed(self, fraction: float) -> None:
        """A ``fraction`` (0..1) of the fans of both banks is out of service from now on."""
        fraction = float(fraction)
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"dry_cooler_fan_failure: fraction must be in 0..1, got {fraction}")
        self.in_service = 1.0 - fraction
        if self.state is not None:
            self.state[IN_SERVICE.key] = self.in_service

    def fan_speed(self, law: dict, fw: dict) -> float:
        """Relative air flow of the facility water's units over the step [1]: the economiser's
        choice where it made one (:meth:`~twin.cooling.facility_water.FacilityWater.split`), else
        the lowest speed that holds the set-point (flat out when none does)."""
        speed = 0.0
        if fw["speed"] is not None:  # the economiser's choice (fan + compressor power)
            speed = fw["speed"]
        elif law["m_f"] > 0:
            if law["free_enabled"]:
                t_sink, tf_mean, t_set = law["t_sink"], fw["tf_mean"], law["t_set"]
                if tf_mean > t_set and tf_mean > t_sink:
                    speed = self.bank.speed_for(*law["table"], (t_set - t_sink) / (tf_mean - t_sink))
            elif self.bank.tower and fw["q_ch_fw"] > 0:
                speed = self.in_service  # towers carry the condenser heat
        return speed

    def water(self, fw: dict, chw: dict, speed_fw: float, fw_wet: bool, p_chiller: float, t_db: float,
              t_wb: float) -> float:
        """Make-up water [kg/s]: tower evaporation and blowdown, or adiabatic pad water."""
        if self.bank.tower:
            q_ch_total = fw["q_ch_fw"] + chw["q_ch_chw"]
            q_condenser = q_ch_total + p_chiller if self.water_cooled else 0.0
            return self.bank.water(fw["q_free_fw"] + chw["q_free_chw"] + q_condenser, 0.0, False, t_db, t_db)
        wet_air = t_db - (self.bank.adiabatic or 0.0) * (t_db - t_wb)
        return (self.bank.water(0.0, speed_fw, fw_wet, t_db, wet_air)
                + self.chw_bank.water(0.0, chw["speed_chw"], chw["chw_wet"], t_db, wet_air))

    def step(self, t: float, dt: float, state) -> None:
        law, fw = state["facility.facility_water_law"], state["facility.facility_water_step"]
        chw = state["facility.chilled_water_step"]
        t_db, t_wb = float(state["facility.t_outdoor"][0]), float(state["facility.t_wet_bulb"][0])
        speed_fw = self.fan_speed(law, fw)
        fw_wet = law["wet"] and speed_fw > 0
        p_fans = (self.bank.fan_power(speed_fw, self.in_service)
                  + self.chw_bank.fan_power(chw["speed_chw"], self.in_service))
        water = self.water(fw, chw, speed_fw, fw_wet, float(state["facility.p_chiller"][0]), t_db, t_wb)
        state["facility.p_heat_rejection_fans"] = np.array([float(p_fans)])
        state["facility.water"] = np.array([float(water)])
        state["facility.heat_rejection_step"] = {"speed_fw": speed_fw, "p_fans": p_fans, "water": water}

    def apply(self, action) -> bool:
        self.set_failed(float(action.event.fraction) if action.what == "start" else 0.0)
        return True
