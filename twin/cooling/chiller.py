"""The trim chillers, serving the facility water (in series after free cooling) and the CRAHs'
chilled water.

COP from lift (:func:`~twin.cooling.plant.chiller_cop`): evaporator at each circuit's set-point,
condenser at the dry-bulb (air-cooled) or the heat-rejection units' rated approach above their
sink (water-cooled). A trip (or a utility outage, until the utility or generator returns) takes
them all out: the plant runs on free cooling alone.
"""

from __future__ import annotations

import math

import numpy as np

from twin.cooling.cdu_bank import lookup
from twin.cooling.plant import COP_MAX, chiller_cop, chiller_power
from twin.sim.component import Component, Var

P_CHILLER = Var("facility", "p_chiller", "W", "chiller compressor power")
AVAILABLE = Var("facility", "chiller_available", "W", "chiller capacity in service (0: none, or tripped)",
                record=False)


class Chiller(Component):
    """The plant's chillers (module docstring).

    Parameters
    ----------
    spec : PlantSpec
    catalog : Catalog
    design_load : float
        Design heat of both circuits [W] (sizes the chillers when no count is given).
    bank : HeatRejectionBank
        The facility water's heat-rejection units (the sink of water-cooled condensers: their
        kind and rated approach, read once here).
    every : int
        Thermal steps per plant step.
    """

    inputs = ("facility.facility_water_step", "facility.facility_water_law", "facility.chilled_water_step",
              "facility.t_outdoor", "facility.t_wet_bulb")
    outputs = (P_CHILLER, AVAILABLE)
    events = ("chiller_trip", "utility_outage")
    phase = "integration"
    plant_stage = 60

    @classmethod
    def from_plant(cls, plant):
        return plant.chillers

    def __init__(self, spec, catalog, design_load: float, bank, every: int = 1):
        self.every = every
        self.tower = bank.tower
        self.sink_approach = bank.entry.approach.si
        names = spec.templates()
        self.chiller = None
        self.chiller_count = 0
        if spec.chiller is not None and names["chiller"] is not None:
            ch = lookup(catalog.chillers, names["chiller"], ("plant", "chiller", "template"),
                        "chiller template")
            count = spec.chiller.count
            if count is None:
                count = max(1, math.ceil(design_load / ch.capacity.si - 1e-9))
            self.chiller = ch
            self.chiller_count = count
        self.chiller_capacity = (self.chiller.capacity.si * self.chiller_count
                                 if self.chiller is not None else 0.0)
        self.cop_max = (self.chiller.cop_max.si if self.chiller is not None
                        and self.chiller.cop_max is not None else COP_MAX)
        self.water_cooled = self.chiller is not None and self.chiller.condenser == "water"
        self.tripped = False
        self.state = None

    @property
    def available(self) -> float:
        """Capacity in service [W]."""
        return 0.0 if self.chiller is None or self.tripped else self.chiller_capacity

    def initialise(self, state) -> None:
        self.state = state
        state["facility.chiller_available"] = self.available

    def condenser(self, t_db: float, t_wb: float) -> float:
        """Heat-sink temperature [degC]: outdoor dry-bulb for air-cooled condensers, else the
        heat-rejection units' rated approach above their sink."""
        if self.chiller is None or self.chiller.condenser == "air":
            return t_db
        return (t_wb if self.tower else t_db) + self.sink_approach

    def power(self, q_ch_fw: float, q_ch_chw: float, t_set: float, t_chw_set: float, t_db: float,
              t_wb: float) -> float:
        """Compressor power of the chillers trimming both circuits [W]."""
        if self.chiller is None or not q_ch_fw + q_ch_chw > 0:
            return 0.0
        cop = chiller_cop(self.condenser(t_db, t_wb), np.array([t_set, t_chw_set]),
                          self.chiller.carnot_fraction.si, self.cop_max)
        return float(chiller_power(np.array([q_ch_fw, q_ch_chw]), cop).sum())

    def step(self, t: float, dt: float, state) -> None:
        fw, chw = state["facility.facility_water_step"], state["facility.chilled_water_step"]
        p = self.power(fw["q_ch_fw"], chw["q_ch_chw"], state["facility.facility_water_law"]["t_set"],
                       chw["t_chw_set"], float(state["facility.t_outdoor"][0]),
                       float(state["facility.t_wet_bulb"][0]))
        state["facility.p_chiller"] = np.array([p])
        state["facility.chiller_available"] = self.available

    def apply(self, action) -> bool:
        # on a utility outage the chillers stop until the utility (or generator) returns
        self.set_tripped(action.what == "start")
        return True

    def set_tripped(self, tripped: bool) -> None:
        """All chillers out of service (``True``) or back; the capacity in service is published."""
        self.tripped = bool(tripped)
        if self.state is not None:
            self.state["facility.chiller_available"] = self.available
