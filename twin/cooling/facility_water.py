"""The facility water loop: one mixed volume between the CDUs and the heat rejection, with its
pumps and the economiser (free cooling first, the chillers trimming the rest).

Two scheduled parts, because the CDUs exchange heat with it within a plant step:
:class:`FacilitySupply` sets the modes and the supply the CDUs see over the step (from the loop's
temperature at the start of the step and the flow their valves draw);
:class:`FacilityReturn` then integrates the loop with the heat they passed it.

*Facility water.* One mixed volume at T_f that the CDU primaries return into:
C_f dT_f/dt = Σ q_hx + P_pump − R(T_f). Heat rejection R (water side) is piecewise linear in
T_f: nothing below the supply set-point (bypass), otherwise holding the set-point
(R = ṁ c_p (T_f − T_set)) or, when free cooling and chiller capacity run out, free cooling
flat out (ṁ c_p (1 − r) (T_f − T_sink)) plus the chiller's capacity. The piece that applies
at the start of the step is integrated exactly (with the crossing of T_set handled).
Series economiser: free cooling first, the chiller trims the rest
(:func:`~twin.cooling.plant.economiser_split`); the chiller starts when free cooling at full
fans cannot hold the set-point and stops when it could hold it with ``hysteresis`` to spare;
free cooling is bypassed (chiller only) when it would cool the return by less than
``min_useful``. While the chiller trims a held set-point, the fans run at the speed with the
least fan + compressor power (``economiser.fans: optimal``, :meth:`FacilityWater.split`) or
flat out (``flat_out``); the loop's temperature is the same either way (the set-point is held),
only the split between free cooling and the chiller moves. Pumps (variable primary) on Σ of the
CDU primary flows, on their curve under differential-pressure control at the index CDU
(:mod:`twin.cooling.circuit_pumps`).
"""

from __future__ import annotations

import math

import numpy as np

from twin.cooling.cdu import T_FACILITY_SUPPLY, T_FACILITY_SUPPLY_SET
from twin.cooling.cdu_bank import lookup
from twin.cooling.circuit_pumps import CircuitPumps
from twin.cooling.config import COOLING_MODES
from twin.cooling.economiser import economiser_speed, series_trim
from twin.cooling.volumes import relax1
from twin.sim.component import Component, Control, Var
from twin.units import CP_WATER, RHO_WATER

#: Facility-water volume per watt of design load when none is given [m3 W-1] (estimate: piping
#: plus buffer, 3–11 L/kW from the 3–10 US gal/ton rule of thumb for chilled-water buffers).
FACILITY_VOLUME_PER_WATT = 8e-6

T_FACILITY_RETURN = Var("facility", "t_facility_return", "degC", "facility water return temperature")
FW_LAW = Var("facility", "facility_water_law", "1",
             "modes and water-side rejection law of the facility water over the plant step", record=False)
FW_STEP = Var("facility", "facility_water_step", "1",
              "facility water over the plant step: pumps, rejection, free-cooling and chiller shares", record=False)
CHILLER_SPARE = Var("facility", "chiller_spare", "W",
                    "chiller capacity left for the chilled water after the facility water's trim", record=False)
STORED_FW = Var("facility", "stored_facility_water", "J", "C·T of the facility water loop (from 0 degC)",
                record=False)
COOLING_MODE = Control("facility", "cooling_mode", "1", "cooling mode of the facility plant",
                       0, len(COOLING_MODES) - 1, choices=COOLING_MODES)


class FacilityWater:
    """State and physics of the facility water loop and its economiser (module docstring).

    Parameters
    ----------
    spec : PlantSpec
    catalog : Catalog
    design_heat : float
        Heat the CDUs pass it at the IT design load [W] (sizes its volume when none is given).
    m_f_design : float
        Σ of the CDUs' design primary flows [kg s-1].
    bank : HeatRejectionBank, optional
        The heat-rejection units it rejects through (the plant sets it once it has counted them
        for the design heat with this loop's pumps).
    """

    def __init__(self, spec, catalog, design_heat: float, m_f_design: float, bank=None):
        self.t_set = spec.facility_water_supply
        vol = spec.facility_water_volume or FACILITY_VOLUME_PER_WATT * design_heat
        self.c_facility = vol * RHO_WATER * CP_WATER
        self.m_f_design = m_f_design
        loc = ("plant", "pumps", "template")
        #: The facility-water pumps (variable primary), on the CDUs' design primary flow.
        self.pumps = CircuitPumps(lookup(catalog.pumps, spec.pumps.template, loc, "pump template"),
                                  m_f_design / RHO_WATER, loc)
        self.bank = bank
        eco = spec.economiser
        self.hysteresis, self.min_useful = eco.hysteresis, eco.min_useful
        #: Fan policy while the chiller trims (``optimal`` or ``flat_out``).
        self.fans = eco.fans
        #: Cooling mode (:data:`~twin.cooling.config.COOLING_MODES`), an operator's input.
        self.mode = eco.mode
        self.reset()

    def reset(self) -> None:
        self.t_facility = self.t_set
        self.chiller_enabled = False
        self.free_enabled = True

    def stored_heat(self) -> float:
        return self.c_facility * self.t_facility

    def pump_power(self, m_f: float) -> float:
        """Facility-water pump power at a total primary flow ``m_f`` [kg s-1] → [W]: the
        pumps on their curve (:class:`~twin.cooling.circuit_pumps.CircuitPumps`)."""
        return self.pumps.power(m_f / RHO_WATER)

    def _modes(self, t_free: float, available: bool) -> None:
        """Chiller start/stop and free cooling on/off, with hysteresis."""
        t0, t_set, h = self.t_facility, self.t_set, self.hysteresis
        if not available:
            self.chiller_enabled = False
        elif self.mode == "chiller_only":
            self.chiller_enabled = True
        elif not self.chiller_enabled and t_free > t_set:
            self.chiller_enabled = True
        elif self.chiller_enabled and t_free <= t_set - h:
            self.chiller_enabled = False
        # free cooling on/off with hysteresis (always on without a running chiller)
        useful = max(t0, t_set) - t_free
        if not self.chiller_enabled:
            self.free_enabled = True
        elif self.mode == "chiller_only":
            self.free_enabled = False
        elif self.free_enabled and useful < self.min_useful:
            self.free_enabled = False
        elif not self.free_enabled and useful >= self.min_useful + h:
            self.free_enabled = True

    def law(self, table, t_db: float, t_wb: float, m_f: float, chiller_capacity: float) -> dict:
        """Modes (with hysteresis) and the water-side rejection law R(T) = k (T − t_ref) + q_const
        that holds above the set-point, evaluated at the start-of-step loop temperature;
        ``chiller_capacity`` is what the chillers can give [W] (0: none, or tripped)."""
        t0, t_set = self.t_facility, self.t_set
        fr = self.bank.solve(table, max(t0, t_set), t_set, t_db, t_wb)
        t_sink, r = fr["t_sink"], fr["r_full"]
        t_free = fr["t_free"]
        self._modes(t_free, chiller_capacity > 0 and self.mode != "free_only")
        c = m_f * CP_WATER
        q_cap = chiller_capacity if self.chiller_enabled else 0.0
        t_top = max(t0, t_set)
        hold = {"k": c, "t_ref": t_set, "q_const": 0.0, "name": "hold"}
        if c <= 0:
            law = {"k": 0.0, "t_ref": t_set, "q_const": 0.0, "name": "none"}
        elif self.free_enabled:
            k_free = c * (1.0 - r)
            demand = c * (max(t_free, t_set) - t_set)
            if t_sink >= t_top and q_cap <= 0:
                law = {"k": 0.0, "t_ref": t_set, "q_const": 0.0, "name": "none"}
            elif demand <= q_cap or t_free <= t_set:
                law = hold
            elif t_sink >= t_top:
                law = {"k": 0.0, "t_ref": t_set, "q_const": q_cap, "name": "capped"}
            else:
                law = {"k": k_free, "t_ref": t_sink, "q_const": q_cap, "name": "free"}
        else:
            law = hold if c * (t_top - t_set) <= q_cap else {
                "k": 0.0, "t_ref": t_set, "q_const": q_cap, "name": "capped"}
        if t0 <= t_set or c <= 0:
            t_supply = t0
        else:
            t_supply = t0 - (law["k"] * (t0 - law["t_ref"]) + law["q_const"]) / c
        law.update(t_supply=t_supply, t_free_full=t_free, t_sink=t_sink, r_full=r,
                   wet=fr["wet"], q_cap=q_cap, table=table, m_f=m_f, t_set=t_set,
                   chiller_enabled=self.chiller_enabled, free_enabled=self.free_enabled)
        return law

    def relax(self, t0: float, q: float, law: dict, dt: float):
        """Integrate C_f dT/dt = q − R(T) exactly for the law chosen at the start of the step.

        Returns end temperature, mean temperature and mean rejection R̄ [degC, degC, W].
        """
        c, t_set = self.c_facility, self.t_set
        k, t_ref, q_const = law["k"], law["t_ref"], law["q_const"]
        t, left, t_int, r_int = t0, dt, 0.0, 0.0
        if t < t_set:  # below the set-point nothing is rejected until it is reached
            t1 = c * (t_set - t) / q if q > 0 else math.inf
            if t1 >= dt:
                end, mean = relax1(t, c, q, 0.0, 0.0, dt)
                return end, mean, 0.0
            t_int += 0.5 * (t + t_set) * t1
            t, left = t_set, dt - t1
        a = q - q_const
        t_cross = math.inf
        if law["name"] == "hold" and k > 0 and t_ref + a / k < t_set and t >= t_set:
            t_eq = t_ref + a / k  # falls below the set-point: find when it gets there
            t_cross = -(c / k) * math.log((t_set - t_eq) / (t - t_eq))
        seg = min(left, t_cross)
        end, mean = relax1(t, c, a, k, t_ref, seg)
        t_int += mean * seg
        r_int += (k * (mean - t_ref) + q_const) * seg
        t, left = end, left - seg
        if left > 0:  # below the set-point again: bypass, no rejection
            end, mean = relax1(t_set, c, q, 0.0, 0.0, left)
            t_int += mean * left
            t = end
        return t, t_int / dt, r_int / dt

    def trim(self, law: dict, speed, t_mean: float, r_mean: float):
        """Heat left for the chiller [W] with the free-cooling fans at ``speed`` [1] (ndarray),
        on the step's mean return T̄ and water-side rejection R̄ (:func:`series_trim`)."""
        return series_trim(law["table"], law["t_sink"], self.t_set, t_mean, r_mean, speed)

    def split(self, law: dict, t_mean: float, r_mean: float, fans=None, compressor=None,
              spare: float = np.inf):
        """Free-cooling and chiller shares [W] of the water-side rejection R̄, and the fan speed
        of the free-cooling units where the economiser chose it.

        Parameters
        ----------
        law : dict
            The step's rejection law (:meth:`law`).
        t_mean, r_mean : float
            Mean loop temperature [degC] and water-side rejection [W] over the step.
        fans, compressor : callable, optional
            Fan power of the units at speeds s (ndarray → W) and the chillers' power at
            facility-water trims q (ndarray → W); with both, and ``fans: optimal``, the speed is
            chosen for the least fan + compressor power.
        spare : float
            Chiller capacity the facility-water trim may take [W] (what the chilled water does
            not need); the search keeps the trim within it (or at the flat-out trim).

        Returns
        -------
        q_free, q_chiller : float
            [W].
        speed : float or None
            Relative air flow of the units [1]; None where the heat rejection sets it from the
            set-point (:meth:`twin.cooling.rejection.HeatRejection.fan_speed`).

        Notes
        -----
        While the chiller trims a held set-point, the fans' speed moves heat between free
        cooling and the chiller without changing the loop: the total
        P(s) = P_fan(s) + P_chiller(q_ch(s)) (:meth:`trim`) is minimised over the speeds whose
        trim fits ``spare`` (:func:`~twin.cooling.economiser.economiser_speed`: the step's table
        grid with the speed where the trim reaches zero, refined twice on finer grids). Cube-law
        fans against a trim that falls linearly, Q (1 − s), at a constant COP give
        s* = √(Q / (3 COP P_f)).
        """
        if r_mean <= 0:
            return 0.0, 0.0, None
        if not self.chiller_enabled:
            return r_mean, 0.0, None
        if not self.free_enabled:
            return 0.0, r_mean, None
        if law["name"] in ("free", "capped"):
            q_ch = min(law["q_cap"], r_mean)
            return r_mean - q_ch, q_ch, None
        s_grid = law["table"][0]
        if self.fans == "optimal" and fans is not None and compressor is not None:
            speed = economiser_speed(law["table"], law["t_sink"], self.t_set, t_mean, r_mean, fans,
                                     compressor, spare)
            q_ch = float(self.trim(law, np.array([speed]), t_mean, r_mean)[0])
            return r_mean - q_ch, q_ch, speed
        q_ch = float(self.trim(law, s_grid[-1:], t_mean, r_mean)[0])  # flat out
        return r_mean - q_ch, q_ch, None


class FacilitySupply(Component):
    """The facility water at the start of a plant step: economiser modes, the rejection law and
    the supply the CDUs see over the step. Owns the facility-water set-point and the cooling mode."""

    inputs = ("facility.m_facility_water", "facility.t_outdoor", "facility.t_wet_bulb",
              "facility.chiller_available", "facility.heat_rejection_in_service")
    outputs = (T_FACILITY_SUPPLY, FW_LAW)
    controls = (T_FACILITY_SUPPLY_SET, COOLING_MODE)
    phase = "integration"
    plant_stage = 20

    @classmethod
    def from_plant(cls, plant):
        return cls(plant.facility_water, plant.every)

    def __init__(self, water: FacilityWater, every: int = 1):
        self.water = water
        self.every = every

    def initialise(self, state) -> None:
        state["facility.t_facility_supply"] = np.array([self.water.t_facility])

    def step(self, t: float, dt: float, state) -> None:
        fw, bank = self.water, self.water.bank
        t_db, t_wb = float(state["facility.t_outdoor"][0]), float(state["facility.t_wet_bulb"][0])
        m_f = state["facility.m_facility_water"]
        table = bank.table(m_f, bank.air_specific_heat(t_wb, fw.t_set), state["facility.heat_rejection_in_service"])
        law = fw.law(table, t_db, t_wb, m_f, state["facility.chiller_available"])
        state["facility.facility_water_law"] = law
        state["facility.t_facility_supply"] = np.array([float(law["t_supply"])])

    def control(self, key: str) -> np.ndarray:
        if key == T_FACILITY_SUPPLY_SET.key:
            return np.array([self.water.t_set])
        if key == COOLING_MODE.key:
            return np.array([COOLING_MODES.index(self.water.mode)])
        return super().control(key)

    def set_control(self, key: str, values) -> None:
        value = np.asarray(values).reshape(-1)[0]
        if key == T_FACILITY_SUPPLY_SET.key:
            self.water.t_set = float(value)
        elif key == COOLING_MODE.key:
            self.water.mode = COOLING_MODES[int(value)]
        else:
            super().set_control(key, values)


class FacilityReturn(Component):
    """The facility water loop over a plant step with the heat the CDUs passed it: its end and
    mean temperatures, what the heat rejection removed and its free-cooling and chiller shares."""

    inputs = ("facility.facility_water_law", "facility.q_cdus", "facility.chiller_available",
              "facility.heat_rejection_in_service", "facility.t_outdoor", "facility.t_wet_bulb",
              "facility.chilled_water_step")
    outputs = (T_FACILITY_RETURN, FW_STEP, CHILLER_SPARE, STORED_FW)
    phase = "integration"
    plant_stage = 40

    @classmethod
    def from_plant(cls, plant):
        return cls(plant.facility_water, plant.every, plant.chillers)

    def __init__(self, water: FacilityWater, every: int = 1, chillers=None):
        self.water = water
        self.every = every
        #: the chillers' power curve, for the economiser's fan-versus-compressor choice
        self.chillers = chillers

    def initialise(self, state) -> None:
        state["facility.stored_facility_water"] = self.water.stored_heat()

    def economiser(self, state, law: dict):
        """Fan power, chiller power and the chillers' spare capacity for :meth:`FacilityWater.split`:
        the facility water's units with the fans in service, the chillers staged with the
        chilled water's load of the last plant step (the one a supervisory controller measures
        when it decides; it comes later in this step)."""
        if self.chillers is None:
            return {}
        try:
            chw = state["facility.chilled_water_step"]
            q_chw, t_chw_set = chw["q_ch_chw"], chw["t_chw_set"]
        except KeyError:  # the first plant step: no chilled-water load yet
            q_chw, t_chw_set = 0.0, law["t_set"]
        in_service = state["facility.heat_rejection_in_service"]
        t_db, t_wb = float(state["facility.t_outdoor"][0]), float(state["facility.t_wet_bulb"][0])
        bank, chillers = self.water.bank, self.chillers
        return {"fans": lambda s: bank.fan_power(s, in_service),
                "compressor": lambda q: chillers.power(q, q_chw, law["t_set"], t_chw_set, t_db, t_wb),
                "spare": law["q_cap"] - q_chw}

    def step(self, t: float, dt: float, state) -> None:
        fw, law = self.water, state["facility.facility_water_law"]
        m_f, t_fs, q_hx_total = law["m_f"], law["t_supply"], state["facility.q_cdus"]
        p_fac = fw.pump_power(m_f)
        tf_end, tf_mean, r_mean = fw.relax(fw.t_facility, q_hx_total + p_fac, law, dt)
        q_free_fw, q_ch_fw, speed = fw.split(law, tf_mean, r_mean, **self.economiser(state, law))
        fw.t_facility = tf_end
        capacity = state["facility.chiller_available"]
        state["facility.chiller_spare"] = (0.0 if capacity <= 0 or fw.mode == "free_only"
                                           else max(capacity - q_ch_fw, 0.0))
        state["facility.facility_water_step"] = {"p_fac": p_fac, "tf_mean": tf_mean, "r_mean": r_mean,
                                                 "q_free_fw": q_free_fw, "q_ch_fw": q_ch_fw, "speed": speed}
        state["facility.t_facility_return"] = np.array([
            t_fs + q_hx_total / (m_f * CP_WATER) if m_f > 0 else tf_mean])
        state["facility.stored_facility_water"] = fw.stored_heat()
