"""The trim chillers, serving the facility water (in series after free cooling) and the CRAHs'
chilled water.

One chiller model (:mod:`twin.cooling.refrigeration`): full-load COP as the catalogue's fraction
of Carnot between the refrigerant temperatures — the evaporator ``evaporator_approach`` below the
leaving chilled water, the condenser ``condenser_approach`` above the leaving condenser water
(water-cooled: the heat-rejection units' water, their rated approach above their sink, plus the
condenser water's range at the load) or the dry-bulb (air-cooled) — the leaving water held
within the compressor's envelope (``max_leaving_water``), the chillers staged for the load of
both circuits and sharing it equally, and the part-load curve with its minimum unloading ratio.
The catalogue's ``carnot_fraction`` is derived from its ``cop_rated`` at the AHRI 550/590 point
through the same approaches (a test runs :meth:`Chiller.power` there). An entry without the
refrigerant-side figures reduces to a fraction of Carnot between the water temperatures with
power ∝ load. A trip (or a utility outage, until the utility or generator returns) takes them
all out: the plant runs on free cooling alone.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from twin.cooling.cdu_bank import lookup
from twin.cooling.plant import as_arrays
from twin.cooling.refrigeration import (
    AHRI_CONDENSER_ENTERING,
    ZERO_CELSIUS,
    chiller_full_load_cop,
    chiller_leaving_temperature,
    chiller_power,
    stage_chillers,
)
from twin.cooling.sizing import unit_size, units_for_load
from twin.sim.component import Component, Var

#: Highest COP of a chiller without a catalogue ``cop_max`` [1] (estimate: variable-speed
#: centrifugal chillers report part-load COPs of 10–15 at very low lift; the Carnot expression
#: diverges as the lift → 0).
COP_MAX = 15.0
#: Part-load curve of a chiller without one: power ∝ load (EIR-fPLR = PLR) [1].
LINEAR_PART_LOAD = (0.0, 1.0, 0.0)

P_CHILLER = Var("facility", "p_chiller", "W", "chiller compressor power")
AVAILABLE = Var("facility", "chiller_available", "W", "chiller capacity in service (0: none, or tripped)",
                record=False)


def chiller_entry(spec, catalog, design_load=None):
    """The catalogue entry of the scenario's chillers, or None without chillers; raises
    FieldError at ``plant.chiller.template``.

    A ``template:`` in the scenario is that entry. Without one, the size is chosen for the
    ``design_load`` [W] of both circuits (:func:`~twin.cooling.sizing.unit_size`: the smallest
    of the sizes that carry it with the fewest duty units) among the catalogue's chillers with
    the condenser of the plant's default (air-cooled beside dry coolers, water-cooled beside
    towers); with no ``design_load``, the default itself."""
    name = spec.templates()["chiller"]
    if spec.chiller is None or name is None:
        return None
    default = lookup(catalog.chillers, name, ("plant", "chiller", "template"), "chiller template")
    if spec.chiller.template is not None or design_load is None:
        return default
    sizes = [c for c in catalog.chillers.values() if c.condenser == default.condenser]
    return sizes[unit_size(design_load, [c.capacity.si for c in sizes],
                           [c.min_load.si if c.min_load is not None else 0.0 for c in sizes])]


def condenser_heat_factor(entry) -> float:
    """Heat the condensers reject per watt of evaporator load at the rating [1]: 1 + 1/COP_rated
    for water-cooled chillers (whose condensers reject through the towers: the towers are sized
    for it), 0 without water-cooled chillers or a rated COP."""
    if entry is None or entry.condenser != "water" or entry.cop_rated is None:
        return 0.0
    return 1.0 + 1.0 / entry.cop_rated.si


def _grid_kernel():
    """The compiled chillers' power over a grid of loads (:func:`twin.cooling.compiled.grid_power`)
    when numba is loaded in this process already, else None (numpy: the same numbers)."""
    if "numba" not in sys.modules:
        return None
    from twin.cooling.compiled import grid_power

    return grid_power


class Chiller(Component):
    """The plant's chillers (module docstring).

    Parameters
    ----------
    spec : PlantSpec
    catalog : Catalog
    design_load : float
        Heat of both circuits at the IT design load [W]: the unit size for it when the scenario
        gives no template (:func:`chiller_entry`), N + R chillers for it when it gives no count
        (:func:`~twin.cooling.sizing.units_for_load`).
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
        self.chiller = None
        self.chiller_count = 0
        ch = chiller_entry(spec, catalog, design_load)
        if ch is not None:
            count = spec.chiller.count
            if count is None:
                count = units_for_load(design_load, ch.capacity.si, spec.chiller.redundant)
            self.chiller = ch
            self.chiller_count = count
        self.chiller_capacity = (self.chiller.capacity.si * self.chiller_count
                                 if self.chiller is not None else 0.0)
        self.cop_max = (self.chiller.cop_max.si if self.chiller is not None
                        and self.chiller.cop_max is not None else COP_MAX)
        self.water_cooled = self.chiller is not None and self.chiller.condenser == "water"
        ch = self.chiller
        if ch is not None:
            def si(q, default):
                return q.si if q is not None else default
            self.evaporator_approach = si(ch.evaporator_approach, 0.0)
            self.condenser_approach = si(ch.condenser_approach, 0.0)
            self.part_load = tuple(ch.part_load.values) if ch.part_load is not None else LINEAR_PART_LOAD
            self.min_load = si(ch.min_load, 0.0)
            self.cycling = ch.below_min_load == "cycle"
            self.max_leaving = si(ch.max_leaving_water, math.inf)
            # condenser-water range at full load: the rating's leaving less its entering water
            self.condenser_range = (si(ch.rating_sink_leaving, AHRI_CONDENSER_ENTERING) - AHRI_CONDENSER_ENTERING
                                    if self.water_cooled else 0.0)
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
        water entering the condensers, the heat-rejection units' rated approach above their sink."""
        if self.chiller is None or self.chiller.condenser == "air":
            return t_db
        return (t_wb if self.tower else t_db) + self.sink_approach

    def power(self, q_ch_fw, q_ch_chw: float, t_set: float, t_chw_set: float, t_db: float,
              t_wb: float):
        """Compressor power of the chillers trimming both circuits [W].

        Parameters
        ----------
        q_ch_fw, q_ch_chw : float or ndarray
            Evaporator loads of the facility-water trim and of the chilled water [W]; arrays
            (broadcast together) give the power at each (the economisers' searches,
            :func:`twin.cooling.economiser.economiser_speed`).
        t_set, t_chw_set : float
            Their leaving-water set-points [degC].
        t_db, t_wb : float
            Outdoor dry- and wet-bulb [degC].

        Returns
        -------
        float or ndarray
            A float when both loads are, else an array of their broadcast shape.

        Notes
        -----
        n = min(⌈(q_fw + q_chw) / (0.9 C)⌉, N) chillers run (:func:`stage_chillers`, C one
        chiller's capacity) at PLR = (q_fw + q_chw) / (n C), each circuit on its share of them:
        P = Σᵢ (n C qᵢ / q) / COPᵢ · EIR-fPLR(max(PLR, PLR_min)) (:func:`chiller_power`; a
        chiller that cycles below PLR_min draws that for the fraction PLR / PLR_min), with
        COPᵢ = min(η_II T_e / (T_c − T_e), COP_max) (:func:`chiller_full_load_cop`) at
        T_e = min(tᵢ, t_max) − Δ_e and T_c = t_sink + Δ_c; for water-cooled machines t_sink is the
        leaving condenser water, entering + R_rated · PLR (constant condenser flow per running
        chiller: the range follows the load; R_rated = the rating's 35.0 − 29.4 °C, taking the
        compressor's share of the condenser heat at its rated value).
        """
        scalar = np.ndim(q_ch_fw) == 0 and np.ndim(q_ch_chw) == 0
        if scalar and self.chiller is not None:
            p = self._power_float(float(q_ch_fw), float(q_ch_chw), float(t_set), float(t_chw_set), t_db, t_wb)
            if p is not None:
                return p
        if not scalar and self.chiller is not None:
            q_fw, q_chw = np.asarray(q_ch_fw, dtype=float), np.asarray(q_ch_chw, dtype=float)
            if q_fw.ndim <= 1 and q_chw.ndim <= 1:
                p = self._power_arrays(q_fw, q_chw, float(t_set), float(t_chw_set), t_db, t_wb)
                if p is not None:
                    return p
        q_fw, q_chw = as_arrays(np.atleast_1d(np.asarray(q_ch_fw, dtype=float)), q_ch_chw)
        q = q_fw + q_chw
        if self.chiller is None:
            return 0.0 if scalar else np.zeros_like(q)
        unit = self.chiller.capacity.si
        n = stage_chillers(q, unit, self.chiller_count)
        cap = n * unit
        on = (q > 0) & (n > 0)
        plr = np.minimum(np.divide(q, cap, out=np.zeros_like(q), where=on), 1.0)
        t_sink = self.condenser(t_db, t_wb) + self.condenser_range * plr
        t_leave = chiller_leaving_temperature(np.array([[t_set], [t_chw_set]]), self.max_leaving)
        cop = chiller_full_load_cop(t_leave, t_sink, self.evaporator_approach, self.condenser_approach,
                                    self.chiller.carnot_fraction.si, self.cop_max)
        loads = np.stack([q_fw, q_chw])
        share = np.divide(cap * loads, q, out=np.zeros_like(loads), where=on)
        p = np.where(on, chiller_power(loads, share, cop, self.part_load, self.min_load,
                                       self.cycling).sum(axis=0), 0.0)
        return float(p[0]) if scalar else p

    def _power_arrays(self, q_fw: np.ndarray, q_chw: np.ndarray, t_set: float, t_chw_set: float,
                      t_db: float, t_wb: float) -> np.ndarray | None:
        """:meth:`power` at loads of at most one dimension (the economisers' searches: a grid
        of trims of one circuit against one load of the other) in one compiled call
        (:func:`twin.cooling.compiled.grid_power`, ~4 µs on 35 loads against ~50 µs of the
        array path's numpy calls), each element taking the array path's operations in their
        order, bit for bit (``tests/cooling/test_plant_components.py``); the temperatures that
        are the same for every element (leaving water, evaporating temperature) as floats.
        None (take the array path) when the process has not loaded numba (a run's compiled
        loop loads it; importing it for this alone costs more than it saves), or for a load
        or temperature that is not finite, or loads that do not broadcast.

        Notes
        -----
        Per element, as in :meth:`power`: q = q_fw + q_chw; n = min(⌈max(q, 0) / (0.9 C) −
        1e-12⌉, N); cap = n C; PLR = min(q / cap, 1); T_c = t_c + R · PLR + Δ_c; per circuit
        i Pᵢ (:func:`~twin.cooling.compiled.grid_power`); P = P_fw + P_chw where q > 0 and
        n > 0, else 0.
        """
        kernel = _grid_kernel()
        if kernel is None:
            return None
        t_c = self.condenser(t_db, t_wb)
        if not (math.isfinite(t_c) and math.isfinite(t_set) and math.isfinite(t_chw_set)):
            return None
        te = [(t if t <= self.max_leaving else self.max_leaving) - self.evaporator_approach  # (leaving water)
              for t in (t_set, t_chw_set)]
        size = max(q_fw.size, q_chw.size)
        if q_fw.size not in (1, size) or q_chw.size not in (1, size):
            return None
        p = np.empty(size)
        c0, c1, c2 = self.part_load
        ok = kernel(q_fw.reshape(-1), q_chw.reshape(-1), p, self.chiller.capacity.si, float(self.chiller_count),
                    t_c, self.condenser_range, self.condenser_approach, te[0], te[1],
                    self.chiller.carnot_fraction.si, float(self.cop_max), c0, c1, c2, self.min_load, self.cycling)
        return p if ok else None

    def _power_float(self, q_fw: float, q_chw: float, t_set: float, t_chw_set: float, t_db: float,
                     t_wb: float) -> float | None:
        """:meth:`power` at one facility-water load, on floats: the array path's operations in
        its order (:func:`stage_chillers`, :func:`chiller_leaving_temperature`,
        :func:`chiller_full_load_cop`, :func:`chiller_power` per circuit, their sum;
        ``np.maximum(x, y)`` is ``x if x >= y else y`` for numbers), without a numpy call per
        operation (~200 → ~10 µs). Bit for bit the array path (``tests/cooling/test_plant_components.py``);
        None (take the array path) for a load or temperature that is not finite."""
        q = q_fw + q_chw
        if not math.isfinite(q) or not math.isfinite(t_db) or not math.isfinite(t_wb):
            return None
        unit = self.chiller.capacity.si
        x = q if q >= 0.0 else 0.0  # stage_chillers
        n = math.ceil(x / (0.9 * unit) - 1e-12)
        n = int(min(float(n), float(self.chiller_count)))
        if not (q > 0 and n > 0):
            return 0.0
        cap = n * unit
        plr = q / cap
        plr = plr if plr <= 1.0 else 1.0
        t_sink = self.condenser(t_db, t_wb) + self.condenser_range * plr
        tc = t_sink + self.condenser_approach  # refrigerant_temperatures
        c0, c1, c2 = self.part_load
        m = self.min_load
        p = []
        for load, t in ((q_fw, t_set), (q_chw, t_chw_set)):
            t = t if t <= self.max_leaving else self.max_leaving  # chiller_leaving_temperature
            te = t - self.evaporator_approach
            lift = tc - te  # carnot_cop
            cop = (te + ZERO_CELSIUS) / lift if lift > 0 else math.inf
            cop = self.chiller.carnot_fraction.si * cop  # chiller_full_load_cop
            if math.isnan(cop):
                return None
            cop = cop if cop <= self.cop_max else self.cop_max
            share = cap * load / q
            if not share > 0:  # chiller_power
                p.append(0.0)
                continue
            x = (load if load >= 0.0 else 0.0) / share
            x = x if x <= 1.0 else 1.0
            xe = x if x >= m else m  # part_load_power_fraction
            xe = xe if xe >= 0.0 else 0.0
            xe = xe if xe <= 1.0 else 1.0
            f = c0 + c1 * xe + c2 * xe * xe
            if self.cycling:
                r = x / xe if xe > 0 else 1.0
                f = f * (r if r <= 1.0 else 1.0)
            p.append(share / cop * (f if x > 0 else 0.0))
        return p[0] + p[1]

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
