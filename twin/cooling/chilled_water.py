"""Room air, CRAHs and the chilled-water circuit that serves them.

*Air side.* Room air at T_ca: C_a dT_ca/dt = q_air + P_fans − Q_crah, with the CRAHs holding
the cold aisle by Q_crah = q_air + P_fans + C_a (T_ca − T_set)/τ (first-order approach with time
constant τ), within 0 … capacity; the set-point cannot be below the chilled-water supply + coil
approach. The chilled-water circuit (steady, flow ∝ load) is free-cooled by its own
heat-rejection units when the weather allows and trimmed by the chillers' capacity left after
the facility water; capacity they lack comes back as room heat. While the chillers trim it, the
free-cooling fans run at the speed with the least fan + compressor power
(``economiser.fans: optimal``, the facility water's search,
:func:`~twin.cooling.economiser.economiser_speed`) or flat out (``flat_out``); the supply
leaves at its set-point either way, only the split between free cooling and the chillers moves.
"""

from __future__ import annotations

import numpy as np

from twin.cooling.cdu import T_COLD_AISLE_NEXT, T_COLD_AISLE_SET
from twin.cooling.cdu_bank import lookup
from twin.cooling.circuit_pumps import CircuitPumps
from twin.cooling.economiser import economiser_speed, series_trim
from twin.cooling.heat_rejection import HeatRejectionBank
from twin.cooling.plant import crah_fan_power, economiser_split
from twin.cooling.sizing import units_for_load
from twin.cooling.volumes import relax1
from twin.sim.component import Component, Var, step_mean
from twin.units import CP_AIR, CP_WATER, RHO_AIR, RHO_WATER

P_CRAH = Var("facility", "p_crah", "W", "CRAH fan power")
CHW_STEP = Var("facility", "chilled_water_step", "1",
               "room air and chilled water over the plant step: CRAH load, pumps, free cooling, chiller load",
               record=False)
STORED_ROOM = Var("facility", "stored_room", "J", "C·T of the room air (from 0 degC)", record=False)


class ChilledWater(Component):
    """Room air with its CRAHs and their chilled-water circuit (module docstring).

    Parameters
    ----------
    spec : PlantSpec
    catalog : Catalog
    unit : HeatRejectionEntry
        The heat-rejection unit type that free-cools the chilled water.
    design_air : float
        Heat into the room air at the IT design load [W] (:class:`~twin.cooling.sizing.DesignHeat`).
    every : int
        Thermal steps per plant step.

    Notes
    -----
    Sizing (:mod:`twin.cooling.sizing`; a scenario ``count:`` wins): CRAHs N + R for the design
    air load, each unit's rating net of its own fan heat at its rated flow,
    N = ⌈q_air / (Q_crah − P_fan)⌉; the chilled water's heat-rejection units N for the
    chilled-water heat at that load (:attr:`design_heat`: coils + CRAH fans + pumps), without a
    redundant unit: they free-cool ahead of the chillers, which are counted N + R for both
    circuits.
    """

    inputs = ("facility.q_air", "facility.t_outdoor", "facility.t_wet_bulb", "facility.chiller_spare",
              "facility.heat_rejection_in_service", "facility.facility_water_law",
              "facility.facility_water_step")
    outputs = (P_CRAH, T_COLD_AISLE_NEXT, CHW_STEP, STORED_ROOM)
    controls = (T_COLD_AISLE_SET,)
    phase = "integration"
    plant_stage = 50

    @classmethod
    def from_plant(cls, plant):
        return plant.room

    def __init__(self, spec, catalog, unit, design_air: float, every: int = 1):
        self.every = every
        hr, cr = spec.heat_rejection, spec.crah
        crah = lookup(catalog.crahs, cr.template, ("plant", "crah", "template"), "CRAH template")
        self.crah = crah
        self.crah_count = cr.count or units_for_load(design_air, crah.capacity.si - crah.fan_power.si,
                                                     cr.redundant)
        self.crah_capacity = self.crah_count * crah.capacity.si
        self.t_cold_aisle_set = cr.cold_aisle
        self.t_chw_set = cr.chilled_water_supply
        self.c_room = cr.air_volume * RHO_AIR * CP_AIR
        self.k_room = self.c_room / cr.time_constant
        self.m_chw_design = self.crah_capacity / (CP_WATER * crah.delta_t_water.si)
        loc = ("plant", "pumps", "template")
        #: The chilled-water pumps (the facility pumps' template, on the CRAHs' design flow).
        self.pumps = CircuitPumps(lookup(catalog.pumps, spec.pumps.template, loc, "pump template"),
                                  self.m_chw_design / RHO_WATER, loc)
        #: Fan policy while the chillers trim (``optimal`` or ``flat_out``), the economiser's.
        self.fans = spec.economiser.fans
        #: The chillers (:class:`~twin.cooling.chiller.Chiller`; the plant sets them once it has
        #: counted them for both circuits), for the fans' trade against their compressors.
        self.chillers = None
        self.state = None
        self.reset()
        #: Chilled-water heat at the design air load [W]: the CRAH coils (air + fans) and pumps.
        self.design_heat = float(self.air_side(design_air, 1.0)["q_chw"])
        # N, no redundant unit: these free-cool the chilled water ahead of the chillers, which
        # carry it (N + R for both circuits) when a unit is out
        self.chw_bank = HeatRejectionBank(unit, units_for_load(self.design_heat, unit.capacity.si, 0), hr.kind)

    def reset(self) -> None:
        self.t_cold_aisle = self.t_cold_aisle_set
        self.t_chw = self.t_chw_set  # chilled-water supply actually delivered last step

    def stored_heat(self) -> float:
        return self.c_room * self.t_cold_aisle

    def boundaries(self, state) -> None:
        state["facility.t_cold_aisle_next"] = np.array([float(self.t_cold_aisle)])
        state["facility.stored_room"] = self.stored_heat()

    def initialise(self, state) -> None:
        self.state = state
        self.boundaries(state)

    def step(self, t: float, dt: float, state) -> None:
        t_db, t_wb = float(state["facility.t_outdoor"][0]), float(state["facility.t_wet_bulb"][0])
        air = self.air_side(float(step_mean(state["facility.q_air"])[0]), dt)
        bank = self.chw_bank
        in_service = state["facility.heat_rejection_in_service"]
        table = bank.table(air["m_chw"], bank.air_specific_heat(t_wb, self.t_chw_set), in_service)
        chw = self.chilled_water(air, table, state["facility.chiller_spare"], t_db, t_wb, in_service,
                                 self.compressor(state, t_db, t_wb))
        if chw["deficit"] > 0:  # heat the coils could not pass on stays in the room air
            air["tca_end"] += chw["deficit"] * dt / self.c_room
            air["tca_mean"] += chw["deficit"] * dt / (2.0 * self.c_room)
        self.t_cold_aisle = air["tca_end"]
        self.t_chw = chw["t_chw"]
        chw.update(air, t_chw_set=self.t_chw_set)
        state["facility.chilled_water_step"] = chw
        state["facility.p_crah"] = np.array([float(air["p_crah"])])
        self.boundaries(state)

    def air_side(self, q_air: float, dt: float) -> dict:
        """Room air and CRAHs over the step (exact), and the CRAHs' chilled-water load."""
        cr = self.crah
        p_crah = float(crah_fan_power(max(q_air, 0.0), cr.delta_t_air.si,
                                      self.crah_count * cr.air_flow.si,
                                      self.crah_count * cr.fan_power.si))
        q_room = q_air + p_crah
        t_ca_set = max(self.t_cold_aisle_set, self.t_chw + cr.coil_approach.si)
        q_start = q_room + self.k_room * (self.t_cold_aisle - t_ca_set)
        if q_start > self.crah_capacity:  # coils flat out
            tca_end, tca_mean = relax1(self.t_cold_aisle, self.c_room,
                                       q_room - self.crah_capacity, 0.0, 0.0, dt)
            q_crah = self.crah_capacity
        elif q_start < 0.0:  # colder than the set-point: coils off
            tca_end, tca_mean = relax1(self.t_cold_aisle, self.c_room, q_room, 0.0, 0.0, dt)
            q_crah = 0.0
        else:
            tca_end, tca_mean = relax1(self.t_cold_aisle, self.c_room, 0.0, self.k_room,
                                       t_ca_set, dt)
            q_crah = q_room + self.k_room * (tca_mean - t_ca_set)
        m_chw = q_crah / (CP_WATER * cr.delta_t_water.si)
        p_chw = self.pumps.power(m_chw / RHO_WATER) if m_chw > 0 else 0.0
        q_chw = q_crah + p_chw
        t_chw_ret = self.t_chw_set + q_chw / (m_chw * CP_WATER) if m_chw > 0 else self.t_chw_set
        return {"q_air": q_air, "p_crah": p_crah, "tca_end": tca_end, "tca_mean": tca_mean, "m_chw": m_chw,
                "p_chw": p_chw, "q_chw": q_chw, "t_chw_ret": t_chw_ret}

    def compressor(self, state, t_db: float, t_wb: float):
        """The chillers' power at chilled-water trims q (ndarray → W), with the facility water's
        trim of this plant step, for the economiser's choice of fan speed; None without chillers
        or with the fans flat out."""
        if self.chillers is None or self.chillers.chiller is None or self.fans != "optimal":
            return None
        q_fw, t_set = state["facility.facility_water_step"]["q_ch_fw"], state["facility.facility_water_law"]["t_set"]
        return lambda q: self.chillers.power(q_fw, q, t_set, self.t_chw_set, t_db, t_wb)

    def chilled_water(self, air: dict, table_chw, spare: float, t_db: float, t_wb: float,
                      in_service: float = 1.0, compressor=None) -> dict:
        """Chilled-water circuit (steady): free cooling, then the chillers' ``spare`` capacity
        [W]; what neither can take is a deficit that stays in the room. ``in_service``: the
        fraction of the heat-rejection fans working [1]; ``compressor``: the chillers' power at
        chilled-water trims (:meth:`compressor`), with which the fans run at the speed of least
        fan + compressor power while the chillers trim within their spare capacity, else flat
        out."""
        m_chw = air["m_chw"]
        q_free_chw = q_ch_chw = deficit = 0.0
        speed_chw, chw_wet, t_chw = 0.0, False, self.t_chw_set
        if m_chw > 0:
            cw = self.chw_bank.solve(table_chw, air["t_chw_ret"], self.t_chw_set, t_db, t_wb)
            q_free_chw, q_ch_chw = (float(v) for v in economiser_split(
                m_chw, air["t_chw_ret"], cw["t_free"], self.t_chw_set))
            speed_chw = cw["speed"]
            if compressor is not None and q_free_chw > 0 and 0 < q_ch_chw <= spare:
                t_ret, r_chw = air["t_chw_ret"], q_free_chw + q_ch_chw

                def fans(speed):
                    return self.chw_bank.fan_power(speed, in_service)

                speed_chw = economiser_speed(table_chw, cw["t_sink"], self.t_chw_set, t_ret, r_chw, fans,
                                             compressor, spare)
                q_ch_chw = float(series_trim(table_chw, cw["t_sink"], self.t_chw_set, t_ret, r_chw,
                                             np.array([speed_chw]))[0])
                q_free_chw = max(r_chw - q_ch_chw, 0.0)
            if q_ch_chw > spare:
                deficit = q_ch_chw - spare
                q_ch_chw = spare
                t_chw = self.t_chw_set + deficit / (m_chw * CP_WATER)
            if q_free_chw > 0:
                chw_wet = cw["wet"] and speed_chw > 0
            else:
                speed_chw = 0.0
            if self.chw_bank.tower and q_free_chw <= 0 and q_ch_chw > 0:
                speed_chw = in_service
        return {"q_free_chw": q_free_chw, "q_ch_chw": q_ch_chw, "deficit": deficit,
                "speed_chw": speed_chw, "chw_wet": chw_wet, "t_chw": t_chw}

    def control(self, key: str) -> np.ndarray:
        if key == T_COLD_AISLE_SET.key:
            return np.array([self.t_cold_aisle_set])
        return super().control(key)

    def set_control(self, key: str, values) -> None:
        if key != T_COLD_AISLE_SET.key:
            super().set_control(key, values)
        self.t_cold_aisle_set = float(np.asarray(values).reshape(-1)[0])
