"""Schema of the hardware catalogue and its loader.

The catalogue is data (``hardware.yaml`` beside this module). One schema validates it; a
scenario may add entries under its own ``catalog:`` key with the same schema, or override any
field of an existing entry: ``catalog: {chips: {trn4: {tdp: {value: 1.6 kW, source: ...}}}}``
changes that one figure and keeps the rest (see :meth:`Catalog.merged`).
Each figure is ``{value: ..., source: ...}``: ``value`` a quantity string with units (parsed
with pint, dimension checked, stored as an SI float in ``.si``) and ``source`` a citation or
``estimate``.
"""

from __future__ import annotations

import functools
import types
import typing
import math
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from twin.units import QuantityError, parse_quantity

from twin.catalog.base import CATALOG_FILE, KINDS, PLURAL, SINGULAR, CatalogMethods, FigureMethods  # noqa: E402,F401


class _Strict(BaseModel):
    # defer_build: a model's validator is built when first used, not when the module is
    # imported (the scenario's models are ~0.15 CPU-s of every command's start-up otherwise)
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Figure(FigureMethods, _Strict):
    """One catalogue figure: a quantity and where it comes from."""

    value: str | float | int
    source: Annotated[str, Field(min_length=3)]
    uncertainty: str | float | int | None = None  # one standard deviation, same units as value
    si: float = Field(default=float("nan"), exclude=True, json_schema_extra={"readOnly": True})
    si_uncertainty: float = Field(default=float("nan"), exclude=True, json_schema_extra={"readOnly": True})


#: Dimension of a figure's ``uncertainty`` (a spread of temperatures is a temperature difference).
UNCERTAINTY_DIMENSION = {"temperature": "temperature_difference"}


class Dimension(str):
    """Marks a figure type with its dimension (a key of :data:`twin.units.DIMENSIONS`)."""


def _figure(dimension: str):
    def convert(fig: Figure) -> Figure:
        try:
            update = {"si": parse_quantity(fig.value, dimension)}
            if fig.uncertainty is not None:
                sigma = parse_quantity(fig.uncertainty, UNCERTAINTY_DIMENSION.get(dimension, dimension))
                if not sigma >= 0:
                    raise QuantityError(f"uncertainty must not be negative, got {fig.uncertainty!r}")
                update["si_uncertainty"] = sigma
        except QuantityError as exc:
            raise ValueError(str(exc)) from None
        return fig.model_copy(update=update)

    return Annotated[Figure, AfterValidator(convert), Dimension(dimension)]


def _positive(fig: Figure) -> Figure:
    if not fig.si > 0:
        raise ValueError(f"must be positive, got {fig.value!r}")
    return fig


def _non_negative(fig: Figure) -> Figure:
    if not fig.si >= 0:
        raise ValueError(f"must not be negative, got {fig.value!r}")
    return fig


Power = Annotated[_figure("power"), AfterValidator(_non_negative)]
Temperature = _figure("temperature")
TemperatureDelta = Annotated[_figure("temperature_difference"), AfterValidator(_positive)]
ThermalResistance = Annotated[_figure("thermal_resistance"), AfterValidator(_positive)]
HeatCapacity = Annotated[_figure("heat_capacity"), AfterValidator(_positive)]
VolumeFlow = Annotated[_figure("volume_flow"), AfterValidator(_non_negative)]
Volume = Annotated[_figure("volume"), AfterValidator(_positive)]
PerKelvin = Annotated[_figure("per_kelvin"), AfterValidator(_non_negative)]
Ratio = Annotated[_figure("dimensionless"), AfterValidator(_positive)]
Flops = Annotated[_figure("flops"), AfterValidator(_positive)]
Frequency = Annotated[_figure("rate"), AfterValidator(_positive)]
Bytes = Annotated[_figure("bytes"), AfterValidator(_positive)]
Bandwidth = Annotated[_figure("bandwidth"), AfterValidator(_positive)]
ThermalConductance = Annotated[_figure("thermal_conductance"), AfterValidator(_positive)]
Energy = Annotated[_figure("energy"), AfterValidator(_positive)]
Pressure = Annotated[_figure("pressure"), AfterValidator(_positive)]
Time = Annotated[_figure("time"), AfterValidator(_positive)]


class Count(_Strict):
    """An integer count with its source."""

    value: Annotated[int, Field(ge=1)]
    source: Annotated[str, Field(min_length=3)]


class Curve(_Strict):
    """Efficiency against load fraction: ``points: [[load, efficiency], ...]``."""

    points: list[tuple[float, float]]
    source: Annotated[str, Field(min_length=3)]

    @field_validator("points")
    @classmethod
    def _check(cls, points):
        if len(points) < 2:
            raise ValueError("needs at least two [load, efficiency] points")
        loads = [p[0] for p in points]
        if loads != sorted(loads) or len(set(loads)) != len(loads):
            raise ValueError("load fractions must increase")
        if not all(0 < p[0] <= 2 and 0 < p[1] < 1 for p in points):
            raise ValueError("load in (0, 2], efficiency in (0, 1)")
        return points


class Claim(_Strict):
    """A vendor's statement recorded as a claim, not a figure: what is claimed, against what, on
    what basis (e.g. a workload-level vendor measurement), and where it was said."""

    statement: str
    metric: str  # e.g. "performance per watt", "energy efficiency", "compute"
    ratio: float | None = None  # the claimed factor, e.g. 4.0 for "4x"
    versus: str = ""  # the entry it is compared with
    basis: str  # e.g. "workload-level, vendor measurement"
    source: Annotated[str, Field(min_length=3)]


class Range(_Strict):
    """A sourced range of a quantity whose single value is not published (the entry's figure is
    the stated default inside it)."""

    low: str | float | int
    high: str | float | int
    source: Annotated[str, Field(min_length=3)]


class Entry(_Strict):
    description: str = Field(description="what the entry is, in one line")
    vendor: str = Field("", description="maker")
    status: Literal["shipping", "projected"] = Field(
        "shipping", description="'projected' for announced, unreleased hardware (figures are estimates)")
    claims: list[Claim] = Field([], description="vendor statements recorded as claims (what, against what, "
                                "on what basis), not as figures")


class Chip(Entry):
    """A device package: accelerator, CPU, NIC or switch ASIC.

    Power model (see :mod:`twin.power.device`): idle (no job holds the device) it draws
    ``p_idle`` at ``t_idle``, with a share ``idle_leak_fraction`` of its leakage following the
    die temperature; active (held by a job, or working) it draws::

        P = p_active_idle − L(1, t_idle) + L(f, T) + P_dyn · u · f**clock_exponent
        L(f, T) = p_leak_ref · f**(clock_exponent − 1) · exp(leak_beta · (T − t_ref))

    with P_dyn chosen so that P = tdp at u = 1, f = 1 and T = t_ref (the maximum operating
    temperature). A governor holds P at or under the power limit (``tdp`` unless the scenario
    caps it, no lower than ``p_limit_min``) by lowering the clock; within a step the part may
    exceed it by at most ``power_excursion`` (default 1: never). Thermal path: die (c_die)
    -r_jc-> cold plate or heat-sink base (c_plate) -r_conv-> coolant or air, with
    r_conv = r_conv_ref * (flow / flow_ref)**-0.8 (turbulent forced convection).

    Serving figures (accelerators): dense peak per number format (``flops``, keys from
    :data:`twin.catalog.formats.FORMATS`), HBM capacity and bandwidth, the compute and
    bandwidth utilisations a serving stack reaches (``mfu`` in prefill, ``mbu`` in decode), and
    the dynamic activity (utilisation) of streaming HBM at its full bandwidth (``u_hbm``) and of
    the tensor engines at their dense peak (``u_tensor``), from which serving power follows.
    """

    role: Literal["accelerator", "cpu", "nic", "switch"] = Field(
        description="what the device does; jobs place on accelerators and CPUs, NICs and switches follow their sled")
    cooling: Literal["liquid", "air"] = Field(description="where the package's heat goes: a cold plate on the "
                                              "sled's coolant, or a heat sink in the sled's air")
    tdp: Power = Field(description="thermal design power: P at u = 1, f = 1, T = t_ref; the default power limit")
    tdp_range: Range | None = Field(None, description="where the TDP is not published: the sourced range "
                                    "(tdp is the stated default inside it)")
    p_idle: Power = Field(description="measured whole-chip idle power (no job holds the device) at t_idle")
    t_idle: Temperature = Field(description="die temperature of the idle and active-idle measurements")
    idle_leak_fraction: Ratio = Field(description="share of full-voltage leakage left at idle (parked voltage, "
                                      "power gating), 0..1")
    p_active_idle: Power = Field(description="measured power when a job holds the device but runs no work "
                                 "(u = 0, clocks up) at t_idle")
    p_leak_ref: Power = Field(description="leakage (static) power at full voltage and t_ref")
    t_ref: Temperature = Field(description="maximum operating temperature, at which p_leak_ref and tdp hold")
    leak_beta: PerKelvin = Field(description="leakage growth with temperature: P_leak ∝ exp(leak_beta·(T − t_ref))")
    clock_exponent: Ratio = Field(description="α of dynamic power ∝ f^α under DVFS (leakage ∝ f^(α−1))")
    power_excursion: Ratio | None = Field(None, description="most the power may exceed its limit within a step, "
                                          "as a ratio (default 1: never)")
    p_limit_min: Power | None = Field(None, description="lowest settable power limit (a scenario cap below it "
                                      "is an error)")
    t_throttle: Temperature = Field(description="die temperature at which the governor lowers the clock")
    t_shutdown: Temperature = Field(description="die temperature at which the device trips (off until its die has cooled below t_throttle)")
    throttle_hysteresis: TemperatureDelta = Field(description="cooling below t_throttle needed before the clock rises again")
    r_jc: ThermalResistance = Field(description="die to cold plate / heat-sink base")
    r_conv_ref: ThermalResistance = Field(description="cold plate or heat sink to coolant or air at flow_ref; ∝ (flow/flow_ref)^-0.8")
    flow_ref: VolumeFlow = Field(description="coolant (liquid) or air flow through the plate or sink at which r_conv_ref holds; "
                                 "liquid chips also set the sled's share of its rack's manifold flow")
    c_die: HeatCapacity = Field(description="heat capacity of die and lid")
    c_plate: HeatCapacity = Field(description="heat capacity of the cold plate or heat sink")
    flops: dict[str, Flops] = Field({}, description="dense peak per number format (bf16, fp8, mxfp8, mxfp4, fp4, …)")
    hbm_capacity: Bytes | None = Field(None, description="HBM capacity")
    hbm_bandwidth: Bandwidth | None = Field(None, description="HBM bandwidth (decode roofline)")
    max_clock: Frequency | None = Field(None, description="highest core (GPU: SM) clock: the relative clock's 1")
    mfu: Ratio | None = Field(None, description="model FLOPs utilisation a serving stack reaches in prefill")
    mbu: Ratio | None = Field(None, description="bandwidth utilisation of the weight and KV reads in decode")
    u_hbm: Ratio | None = Field(None, description="utilisation (dynamic activity) of streaming HBM at full bandwidth")
    u_tensor: Ratio | None = Field(None, description="utilisation (dynamic activity) of the tensor engines at their dense peak")
    convection_exponent: Ratio | None = Field(
        None, description="n in G_conv ∝ flow^n of the plate or heat sink (laminar microchannel plates 0.3–0.5; "
                          "default 0.8, turbulent)")
    hbm_idle_power: Power | None = Field(None, description="HBM node: the stacks' floor (refresh, DRAM standby, base "
                                         "die and PHYs), part of p_idle")
    hbm_active_power: Power | None = Field(None, description="HBM node: the stacks' power above the floor at full "
                                           "bandwidth (energy per bit × 8 × hbm_bandwidth), reached at tdp")
    r_hbm: ThermalResistance | None = Field(None, description="HBM node: HBM stacks to cold plate")
    c_hbm: HeatCapacity | None = Field(None, description="HBM node: heat capacity of the HBM stacks")
    t_hbm_max: Temperature | None = Field(None, description="HBM node: temperature limit of the stacks")

    @model_validator(mode="after")
    def _consistent(self):
        from twin.catalog.formats import FORMATS

        # p_active_idle is normally above p_idle, but not required to be: a calibration's trial
        # values may cross while the fit moves one of them.
        if not (self.p_idle.si <= self.tdp.si and self.p_active_idle.si <= self.tdp.si):
            raise ValueError("p_idle and p_active_idle must not exceed tdp")
        if not self.t_idle.si < self.t_ref.si:
            raise ValueError("t_idle must be below t_ref (the maximum operating temperature)")
        leak_idle = self.p_leak_ref.si * math.exp(self.leak_beta.si * (self.t_idle.si - self.t_ref.si))
        if self.p_active_idle.si + self.p_leak_ref.si - leak_idle > self.tdp.si:
            raise ValueError("p_active_idle plus the leakage rise from t_idle to t_ref exceeds tdp")
        if not self.idle_leak_fraction.si <= 1:
            raise ValueError("idle_leak_fraction must not exceed 1")
        if self.power_excursion is not None and not self.power_excursion.si >= 1:
            raise ValueError("power_excursion must be at least 1")
        if self.p_limit_min is not None and not self.p_limit_min.si <= self.tdp.si:
            raise ValueError("p_limit_min must not exceed tdp")
        for name in ("mfu", "mbu"):
            v = getattr(self, name)
            if v is not None and not v.si <= 1:
                raise ValueError(f"{name} must not exceed 1")
        unknown = sorted(set(self.flops) - set(FORMATS))
        if unknown:
            raise ValueError(f"flops: unknown number format {unknown[0]!r} (known: {', '.join(FORMATS)})")
        if self.tdp_range is not None:
            try:
                lo, hi = (parse_quantity(v, "power") for v in (self.tdp_range.low, self.tdp_range.high))
            except QuantityError as exc:
                raise ValueError(f"tdp_range: {exc}") from None
            if not lo <= self.tdp.si <= hi:
                raise ValueError("tdp must lie inside tdp_range")
        if self.t_shutdown.si <= self.t_throttle.si:
            raise ValueError("t_shutdown must be above t_throttle")
        hbm_fields = ("hbm_idle_power", "hbm_active_power", "r_hbm", "c_hbm", "t_hbm_max")
        hbm = [f for f in hbm_fields if getattr(self, f) is not None]
        if hbm and len(hbm) < len(hbm_fields):
            raise ValueError(f"an HBM node needs {', '.join(hbm_fields[:-1])} and t_hbm_max together "
                             f"(given: {', '.join(hbm)})")
        if hbm and not self.hbm_idle_power.si <= self.p_idle.si:
            raise ValueError("hbm_idle_power must not exceed p_idle (the stacks' floor is part of the chip's idle)")
        if hbm and not self.hbm_active_power.si < self.tdp.si - self.p_idle.si:
            raise ValueError("hbm_active_power must be below tdp − p_idle (the dynamic power the chip has "
                             "at its TDP)")
        if self.flow_ref.si <= 0:
            raise ValueError("flow_ref must be positive")
        return self


class Sled(Entry):
    """A server sled / compute tray: devices plus board overhead, fans and local coolant."""

    devices: dict[str, Count] = Field(description="chip entry → how many on the sled (slot order)")
    overhead: Power = Field(description="board, DIMMs, VRs and drives, constant; heat to air")
    fan_power: Power = Field(description="fans at the design air flow")
    air_flow: VolumeFlow = Field(description="design air flow through the sled")
    coolant_volume: Volume = Field(description="coolant held in the sled's cold plates and hoses")
    c_chassis: HeatCapacity = Field(description="chassis and boards that the exhaust air node sees")
    fabric: dict[str, str] = Field({}, description="accelerator chip → the scale-up fabric joining those chips "
                                   "of the sled into one domain (an HGX board's NVLink); overrides the rack's")


class Coefficients(_Strict):
    """Polynomial coefficients (c₀, c₁, …) of a performance curve with their source."""

    values: list[float]
    source: Annotated[str, Field(min_length=3)]


class PropertyTable(_Strict):
    """Fluid properties against temperature: rows ``[T degC, ρ kg/m3, c_p J/kg/K, μ Pa s,
    k W/m/K]``, T increasing."""

    points: list[tuple[float, float, float, float, float]]
    source: Annotated[str, Field(min_length=3)]

    @field_validator("points")
    @classmethod
    def _check(cls, points):
        if len(points) < 2:
            raise ValueError("needs at least two rows [T, rho, cp, mu, k]")
        t = [p[0] for p in points]
        if t != sorted(t) or len(set(t)) != len(t):
            raise ValueError("temperatures must increase")
        if not all(min(p[1:]) > 0 for p in points):
            raise ValueError("rho, cp, mu and k must be positive")
        return points


class Coolant(Entry):
    """A heat-transfer liquid (water, glycol solution): properties against temperature."""

    properties: PropertyTable
    freezing_point: Temperature | None = None


class BatteryBackupUnit(Entry):
    """Battery backup shelf on a rack's DC busbar (OCP ORv3 BBU shelf)."""

    rating: Power  # highest DC output [W]
    energy: Energy  # usable stored energy when full [J]
    charge_power: Power  # recharge power drawn from the busbar [W]
    charge_efficiency: Ratio  # busbar → cells [1]
    discharge_efficiency: Ratio  # cells → busbar [1]


class RoomCooler(Entry):
    """Packaged DX cooling for electrical rooms, with an air-side economiser."""

    carnot_fraction: Ratio
    cop_max: Ratio
    evaporator_approach: TemperatureDelta
    condenser_approach: TemperatureDelta
    fan_power_per_watt: Ratio  # indoor + condenser fans per watt of heat [1]
    economiser_approach: TemperatureDelta
    room_temperature: Temperature  # supply-air set-point of the rooms [degC]


class PowerShelf(Entry):
    """A power shelf of identical PSUs sharing load on a DC busbar."""

    psus: Count = Field(description="PSUs installed in one shelf")
    psu_rating: Power = Field(description="rated DC output of one PSU")
    redundant: Count | None = Field(None, description="spare PSUs per shelf (N+1 → 1)")
    efficiency: Curve = Field(description="efficiency against load fraction of the healthy PSUs, [[load, η], ...]")
    overload: Literal["cap", "trip"] = Field("cap", description="what the shelf does beyond its healthy PSUs' rating")


class Rack(Entry):
    """A rack: sleds (in slot order), power shelves and its design coolant flow.

    All sleds hang on one busbar fed by the rack's power shelves and on one coolant manifold;
    the manifold's flow is shared among the sleds in proportion to the design flow of their
    liquid-cooled devices (Σ ``flow_ref`` of the sled's liquid chips).
    """

    sleds: dict[str, Count] = Field(description="sled entry → how many, in slot order; all on one busbar and one manifold")
    power_shelf: str = Field(description="the power_shelves entry feeding the busbar")
    shelves: Count = Field(description="power shelves in the rack")
    coolant_flow: VolumeFlow = Field(description="design manifold (secondary-loop) flow; 0 for an air-cooled rack")
    pressure_drop: Pressure | None = Field(None, description="pressure drop across the rack (manifolds, quick "
                                           "disconnects, sleds) at its design coolant_flow; default: the "
                                           "differential pressure its CDU holds (it then takes its design flow)")
    fabric: dict[str, str] = Field({}, description="accelerator chip → the scale-up fabric joining those chips "
                                   "of the rack into one domain")


class System(Entry):
    """Racks joined into one scale-up domain per accelerator kind (an UltraServer)."""

    racks: list[str] = Field(description="rack entries, in order (named -a, -b, … in a scenario)")
    fabric: dict[str, str] = Field(description="accelerator chip → the scale-up fabric joining those chips of "
                                   "all the racks into one domain")


class Fabric(Entry):
    """A network fabric: ``scale-up`` (the chips of one domain) or ``scale-out`` (between domains).

    Collective times (:mod:`twin.network.collectives`) use the per-chip ``bandwidth`` and the
    per-step ``latency`` (the α–β model: a step sending m bytes takes ``latency + m /
    bandwidth``). A scale-up fabric's switch chips are devices on sleds (``switch_chip``), so
    their power is simulated with the sleds. A scale-out fabric's NICs are devices on sleds
    (``nics``); its switches and switch-side optics stand outside the racks and are sized from
    the cluster's NIC ports as a non-blocking folded Clos (fat tree) by
    :func:`twin.network.cluster.size_network`.
    """

    scope: Literal["scale-up", "scale-out"] = Field(
        description="scale-up joins the chips of one domain; scale-out joins domains across the cluster")
    topology: Literal["torus", "switched", "fat-tree"] = Field(
        description="torus (all-to-all bytes cross the mean hop count of links), switched (one hop), "
                    "fat-tree (scale-out, non-blocking)")
    bandwidth: Bandwidth | None = Field(None, description="scale-up: per chip, one direction (vendors quote both "
                                        "directions summed)")
    latency: Time = Field(description="one step of a collective, end to end (α of the α–β model)")
    domain_size: Count | None = Field(None, description="scale-up: most chips in one domain")
    torus_dims: Count | None = Field(None, description="torus: number of dimensions (1 = ring)")
    switch_chip: str | None = Field(None, description="scale-up: the switch ASIC (a chips entry); its power is "
                                    "simulated on the sleds that hold it")
    nics: dict[str, Count] = Field({}, description="scale-out: NIC chip → switch ports each NIC occupies")
    port_speed: Bandwidth | None = Field(None, description="scale-out: one switch port, one direction")
    switch_radix: Count | None = Field(None, description="scale-out: ports per switch")
    switch_power: Power | None = Field(None, description="scale-out: one switch without optics")
    optics_power: Power | None = Field(None, description="scale-out: one pluggable transceiver")

    @model_validator(mode="after")
    def _scope(self):
        if self.scope == "scale-up":
            missing = [f for f in ("bandwidth", "domain_size") if getattr(self, f) is None]
            if self.topology == "fat-tree":
                raise ValueError("a scale-up fabric is 'torus' or 'switched'")
        else:
            missing = [f for f in ("port_speed", "switch_radix", "switch_power", "optics_power")
                       if getattr(self, f) is None] + ([] if self.nics else ["nics"])
            if self.topology != "fat-tree":
                raise ValueError("a scale-out fabric is a 'fat-tree'")
            if self.switch_radix is not None and self.switch_radix.value < 2:
                raise ValueError("switch_radix must be at least 2")
        if self.topology == "torus" and self.torus_dims is None:
            missing.append("torus_dims")
        if missing:
            raise ValueError(f"a {self.scope} {self.topology} fabric needs {', '.join(missing)}")
        return self


class CDU(Entry):
    """Coolant distribution unit: heat exchanger and secondary pumps.

    ``kind: liquid_to_liquid`` (the default) passes the heat to facility water; the optional
    figures feed the plant model (:mod:`twin.cooling.facility`); when absent it derives them:
    ``ua`` = capacity / approach (counterflow with equal heat-capacity rates, where the log-mean
    temperature difference equals the approach), ``primary_flow`` = ``design_flow``, one duty
    pump and one standby. ``kind: liquid_to_air`` passes it to the hall air through fan coils
    (:mod:`twin.cooling.liquid_to_air`): ``approach`` is then the supply above the entering air,
    and ``air_flow`` and ``fan_power`` are required.
    """

    kind: Literal["liquid_to_liquid", "liquid_to_air"] = "liquid_to_liquid"
    capacity: Power
    approach: TemperatureDelta  # secondary supply minus facility water (or entering air) at design [K]
    design_flow: VolumeFlow
    pump_power: Power  # at design flow [W]
    ua: ThermalConductance | None = None  # heat-exchanger UA at design flows [W/K]
    primary_flow: VolumeFlow | None = None  # facility-water flow at design (valve open) [m3/s]
    secondary_volume: Volume | None = None  # coolant in the CDU, reservoir and row piping [m3]
    supply_volume: Volume | None = None  # coolant between the CDU outlet and its racks' inlets [m3]
    pumps: Count | None = None  # duty pumps N that together give the design flow
    standby_pumps: Count | None = None  # standby pumps (N+1 → 1)
    pump: str | None = None  # pump template (curve) of each duty pump
    index_pressure: Pressure | None = None  # differential pressure held at the index rack [Pa]
    design_pressure: Pressure | None = None  # pump pressure rise at design flow [Pa]
    air_flow: VolumeFlow | None = None  # liquid-to-air: fan air flow at full speed [m3/s]
    fan_power: Power | None = None  # liquid-to-air: fan power at full speed [W]

    @model_validator(mode="after")
    def _air_side(self):
        if self.kind == "liquid_to_air" and (self.air_flow is None or self.fan_power is None):
            raise ValueError("a liquid_to_air CDU needs air_flow and fan_power")
        return self


class HeatRejection(Entry):
    """Outdoor heat rejection unit (one of a bank sharing the facility-water flow).

    Rated: ``capacity`` rejected at ``water_flow`` and full fan speed when the outdoor sink
    (dry-bulb for a dry cooler, wet-bulb for a tower) is ``design_sink`` and the leaving water
    is ``approach`` above it. The plant derives the unit's UA from this point (ε-NTU,
    counterflow) and scales it with air flow as UA ∝ (air flow)^``ua_exponent``.
    """

    capacity: Power
    approach: TemperatureDelta  # leaving water minus sink temperature at design [K]
    design_sink: Temperature  # dry-bulb (dry cooler) or wet-bulb (tower) at the rating [degC]
    water_flow: VolumeFlow  # at the rating [m3/s]
    air_flow: VolumeFlow  # at full fan speed [m3/s]
    fan_power: Power  # at full fan speed [W]
    ua_exponent: Ratio  # UA ∝ air flow^n (air-side film coefficient) [1]


class DryCooler(HeatRejection):
    """Closed-circuit air-cooled fluid cooler; with ``adiabatic_effectiveness`` a hybrid
    (adiabatic pre-cooling pads wetted when dry operation cannot hold the set-point)."""

    adiabatic_effectiveness: Ratio | None = None  # (T_db − T_air,in) / (T_db − T_wb) [1]
    cycles_of_concentration: Ratio | None = None  # pad water bleed [1], > 1

    @model_validator(mode="after")
    def _adiabatic(self):
        eff = self.adiabatic_effectiveness
        if eff is not None and not eff.si < 1:
            raise ValueError("adiabatic_effectiveness must be below 1")
        if (eff is None) != (self.cycles_of_concentration is None):
            raise ValueError("give adiabatic_effectiveness and cycles_of_concentration together")
        if self.cycles_of_concentration is not None and not self.cycles_of_concentration.si > 1:
            raise ValueError("cycles_of_concentration must be above 1")
        return self


class CoolingTower(HeatRejection):
    """Evaporative cooling tower (closed-circuit, or open with the economiser heat exchanger's
    approach folded into ``approach``)."""

    cycles_of_concentration: Ratio  # [1], > 1
    latent_fraction: Ratio  # share of the heat rejected by evaporation [1]

    @model_validator(mode="after")
    def _water(self):
        if not self.cycles_of_concentration.si > 1:
            raise ValueError("cycles_of_concentration must be above 1")
        if not self.latent_fraction.si <= 1:
            raise ValueError("latent_fraction must not exceed 1")
        return self


class Chiller(Entry):
    """Vapour-compression chiller: full-load COP = carnot_fraction · T_e / (T_c − T_e), capped,
    between the refrigerant temperatures (the approaches; none given: the water temperatures),
    with part load, minimum load and leaving-water envelope (:mod:`twin.cooling.chiller`)."""

    condenser: Literal["air", "water"]
    capacity: Power  # evaporator capacity [W]
    carnot_fraction: Ratio  # second-law efficiency [1]
    cop_max: Ratio | None = None  # cap at low lift [1]
    #: refrigerant-side model: rated COP at the rating point, approaches, part load, envelope
    cop_rated: Ratio | None = None
    rating_chw_leaving: Temperature | None = None
    rating_sink_leaving: Temperature | None = None  # condenser water leaving, or dry-bulb
    evaporator_approach: TemperatureDelta | None = None
    condenser_approach: TemperatureDelta | None = None
    part_load: Coefficients | None = None  # EIR-fPLR c0 + c1 PLR + c2 PLR²
    min_load: Ratio | None = None  # minimum unloading ratio [1]
    #: below min_load: cycles on and off ("cycle") or false-loads by hot-gas bypass ("false_load")
    below_min_load: Literal["cycle", "false_load"] = "false_load"
    max_leaving_water: Temperature | None = None  # envelope [degC]

    @model_validator(mode="after")
    def _fraction(self):
        if not self.carnot_fraction.si < 1:
            raise ValueError("carnot_fraction must be below 1")
        return self


class CRAH(Entry):
    """Computer-room air handler: chilled-water coil and speed-controlled fans."""

    capacity: Power  # sensible cooling at design [W]
    air_flow: VolumeFlow  # at full fan speed [m3/s]
    fan_power: Power  # at full fan speed [W]
    delta_t_air: TemperatureDelta  # air rise through the IT equipment (hot − cold aisle) [K]
    coil_approach: TemperatureDelta  # supply air minus chilled-water supply [K]
    delta_t_water: TemperatureDelta  # chilled-water rise through the coil [K]


class Pump(Entry):
    """A variable-speed water pump: design flow and electrical power at design head, and
    optionally its curve (shut-off and rated pressure, best efficiency, minimum speed) and, for a
    plant circuit's pumps (facility and chilled water), the circuit they are applied to: its
    pressure drop at its design flow and the differential pressure held at its index point."""

    design_flow: VolumeFlow
    power: Power
    shutoff_pressure: Pressure | None = None
    design_pressure: Pressure | None = None
    efficiency: Ratio | None = None  # pump (hydraulic) efficiency at the rated point [1]
    drive_efficiency: Ratio | None = None  # motor × VFD [1]
    min_speed: Ratio | None = None  # [1]
    circuit_pressure: Pressure | None = None  # the circuit's pressure drop at its design flow [Pa]
    index_pressure: Pressure | None = None  # differential pressure held at the index point [Pa]

    @model_validator(mode="after")
    def _curve(self):
        if (self.shutoff_pressure is None) != (self.design_pressure is None):
            raise ValueError("give shutoff_pressure and design_pressure together")
        if self.shutoff_pressure is not None and not self.design_pressure.si < self.shutoff_pressure.si:
            raise ValueError("design_pressure must be below shutoff_pressure")
        if (self.circuit_pressure is None) != (self.index_pressure is None):
            raise ValueError("give circuit_pressure and index_pressure together")
        if self.circuit_pressure is not None and not self.index_pressure.si < self.circuit_pressure.si:
            raise ValueError("index_pressure must be below circuit_pressure")
        return self


class UPS(Entry):
    """Uninterruptible power supply: rating, efficiency by mode, optional battery."""

    rating: Power  # real-power rating of one module [W]
    #: the module sizes a design chooses among (:func:`twin.power.selection.ups_entry`)
    family: str | None = None
    efficiency: Curve  # double conversion
    efficiency_eco: Curve
    battery_energy: Energy | None = None  # usable stored energy [J]
    battery_charge_power: Power | None = None  # recharge power one module draws [W]
    battery_charge_efficiency: Ratio | None = None  # utility → stored energy [1]
    power_factor: Ratio | None = None  # output power factor: kW rating / kVA rating [1]
    #: losses of a module parked by module management (rectifier and inverter not switching, DC
    #: link kept charged, output contactor closed), as a share of its rating [1]
    suspended_loss: Ratio | None = None

    @model_validator(mode="after")
    def _battery(self):
        if self.battery_energy is not None and (self.battery_charge_power is None
                                                or self.battery_charge_efficiency is None):
            raise ValueError("a UPS with a battery_energy needs its battery_charge_power and "
                             "battery_charge_efficiency (how the battery is recharged)")
        if self.battery_charge_efficiency is not None and not self.battery_charge_efficiency.si <= 1:
            raise ValueError("battery_charge_efficiency must be at most 1")
        return self


class Transformer(Entry):
    """Medium- to low-voltage transformer: rating, core (no-load) and copper (rated-load)
    losses; P_loss = no_load_loss + load_loss · (P / rating)² (IEC 60076 loss model, see
    :func:`twin.power.delivery.transformer_losses`)."""

    rating: Power
    #: the standard ratings a design chooses among (:func:`twin.power.selection.transformer_entry`)
    family: str | None = None
    no_load_loss: Power
    load_loss: Power  # copper loss at rated load [W]


class Catalog(CatalogMethods, _Strict):
    """The whole catalogue: named entries of each kind."""

    chips: dict[str, Chip] = {}
    sleds: dict[str, Sled] = {}
    power_shelves: dict[str, PowerShelf] = {}
    racks: dict[str, Rack] = {}
    systems: dict[str, System] = {}
    fabrics: dict[str, Fabric] = {}
    cdus: dict[str, CDU] = {}
    dry_coolers: dict[str, DryCooler] = {}
    cooling_towers: dict[str, CoolingTower] = {}
    chillers: dict[str, Chiller] = {}
    crahs: dict[str, CRAH] = {}
    pumps: dict[str, Pump] = {}
    ups: dict[str, UPS] = {}
    transformers: dict[str, Transformer] = {}
    coolants: dict[str, Coolant] = {}
    battery_backup_units: dict[str, BatteryBackupUnit] = {}
    room_coolers: dict[str, RoomCooler] = {}

    @model_validator(mode="after")
    def _references(self):
        problems = self.reference_errors()
        if problems:
            loc, message = problems[0]
            raise ValueError(f"{'.'.join(str(p) for p in loc)}: {message}")
        return self

    def merged(self, extra: dict | None) -> "Catalog":
        """A new catalogue with a scenario's ``catalog:`` entries merged in, field by field.

        An entry whose name is new is added whole and must be complete. An entry whose name
        exists is overridden field by field: mappings merge key by key (so one figure of a chip,
        or one device count of a sled, can change alone), while a figure (a mapping with
        ``source``), a curve and a list are replaced whole, so every new value comes with its
        source.

        Raises
        ------
        CatalogError
            With the full field path, e.g. ``("sleds", "trn4-tray", "description")``.
        """
        if not extra:
            return self
        base = self.model_dump(mode="python", exclude_none=True)
        touched = set()
        for kind, entries in extra.items():
            if kind not in KINDS:
                raise CatalogError((kind,), f"unknown catalogue kind (known: {', '.join(KINDS)})")
            if not isinstance(entries, dict):
                raise CatalogError((kind,), "expected a mapping of entry names to entries")
            model = ENTRY_MODELS[kind]
            for name, override in entries.items():
                if not isinstance(override, dict):
                    raise CatalogError((kind, name), "expected a mapping of fields")
                old = base.setdefault(kind, {}).get(name)
                data = override if old is None else merge_fields(old, override)
                try:
                    model.model_validate(data)
                except ValidationError as exc:
                    raise CatalogError.from_validation(exc, (kind, name), data) from None
                base[kind][name] = data
                touched.add((kind, name))
        problems = Catalog.model_construct(**{
            k: {n: ENTRY_MODELS[k].model_validate(e) for n, e in base.get(k, {}).items()} for k in KINDS
        }).reference_errors(only=touched)
        if problems:
            raise CatalogError(*problems[0])
        return Catalog.model_validate(base)

#: Entry model of each kind.
ENTRY_MODELS: dict[str, type[Entry]] = {
    kind: typing.get_args(Catalog.model_fields[kind].annotation)[1] for kind in KINDS
}


class CatalogError(ValueError):
    """A catalogue entry that does not validate, at a full field path inside ``catalog``."""

    def __init__(self, loc: tuple, message: str):
        self.loc = tuple(loc)
        self.message = message
        super().__init__(f"{'.'.join(str(p) for p in self.loc)}: {message}")

    @classmethod
    def from_validation(cls, exc: ValidationError, prefix: tuple, data) -> "CatalogError":
        """The first problem of a pydantic error, its location walked through ``data`` so that
        pydantic's internal tags (union members, validator names) never appear in the path."""
        errors = exc.errors()
        err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        loc, node = [], data
        parts = list(err["loc"])
        for i, part in enumerate(parts):
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                node = node[part]
            elif i < len(parts) - 1 or not isinstance(node, dict):
                continue  # a tag pydantic adds (e.g. 'str', 'function-after[...]')
            loc.append(part)
        kind = err["type"]
        if kind == "extra_forbidden":
            message = "unknown field"
            owner = _model_of(ENTRY_MODELS[prefix[0]], loc[:-1])
            if owner is not None:
                message += f" (allowed: {', '.join(owner.model_fields)})"
        elif kind == "missing":
            message = "required field is missing"
        else:
            message = err["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        return cls(prefix + tuple(loc), message)


def _model_of(model, loc) -> type[BaseModel] | None:
    """The pydantic model found at ``loc`` inside ``model`` (dict keys are skipped)."""
    tp = model
    for part in loc:
        tp = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and part in tp.model_fields:
            tp = tp.model_fields[part].annotation
        elif typing.get_origin(tp) in (dict, list):
            tp = typing.get_args(tp)[-1]
        else:
            return None
    tp = _unwrap(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _unwrap(tp):
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        else:
            return tp


def merge_fields(old: dict, new: dict) -> dict:
    """Merge ``new`` into ``old`` key by key (recursively); figures, curves and lists in ``new``
    replace the old ones whole (a mapping with ``source`` is a figure)."""
    out = dict(old)
    for key, value in new.items():
        prev = out.get(key)
        if isinstance(value, dict) and isinstance(prev, dict) and "source" not in value and "source" not in prev:
            out[key] = merge_fields(prev, value)
        else:
            out[key] = value
    return out


@functools.lru_cache(maxsize=1)
def load_catalog(path: str | Path = CATALOG_FILE) -> Catalog:
    """Load and validate the built-in catalogue (cached in memory, and on disk: see below).

    Parsing and validating the catalogue (building its models' validators first) costs ~0.15
    CPU-s of every command's start-up. The validated catalogue is kept in the on-disk cache
    (:mod:`twin.cache`) under a digest of the file's bytes, the package's source files (path,
    size, modification time), and the Python, pydantic and PyYAML versions, and read back from
    there (~0.01 CPU-s) while none of them changes.
    """
    import sys

    import pydantic

    from twin import cache

    raw = Path(path).read_bytes()
    digest = cache.key(raw, cache.source_signature(Path(__file__).parents[1]), sys.version, pydantic.VERSION,
                       yaml.__version__)
    shared = _shared_defaults()
    catalog = cache.load_object("catalog", digest, shared)
    if type(catalog) is Catalog:
        return catalog
    # libyaml's parser when PyYAML has it: the catalogue is ~600 lines, 0.03 s instead of 0.2 s
    data = yaml.load(raw.decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    catalog = Catalog.model_validate(data)
    cache.store_object("catalog", digest, catalog, shared)
    return catalog


def _shared_defaults() -> tuple:
    """The NaN defaults of the catalogue's models (``Figure.si`` until converted, ...): a NaN
    equals only itself, so the catalogue read back from the cache must hold these very objects
    for its models to compare and hash as freshly validated ones do."""
    out = []
    for obj in list(globals().values()):
        if isinstance(obj, type) and issubclass(obj, BaseModel) and obj.__module__ == __name__:
            for field in obj.model_fields.values():
                d = field.default
                if type(d) is float and d != d and all(d is not o for o in out):
                    out.append(d)
    return tuple(out)
