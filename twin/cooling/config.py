"""Pydantic models of a scenario's ``plant:`` section (the facility cooling plant).

Quantities are strings with units, parsed once to SI floats (temperatures in degC) with the
scenario's own ``_quantity`` pattern. Every field has a default, so ``plant: {}`` gives a
dry-cooler plant with an air-cooled trim chiller, CRAHs for the air share, bundled Leesburg
weather and equipment counts sized from the IT design load with N+1 (see :mod:`twin.cooling.sizing`).

Example::

    plant:
      weather: {kind: epw, file: Phoenix}
      facility_water_supply: 32 degC
      heat_rejection: {kind: dry_cooler, template: dry-cooler-1mw, count: 2}
      chiller: {template: air-cooled-chiller-1mw, count: 1}
      economiser: {hysteresis: 1 K}
      crah: {template: crah-150kw, count: 2, cold_aisle: 25 degC}
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from twin.units import quantity as _quantity

OutdoorTemperature = _quantity("temperature", limit="outdoor")
FacilityWaterTemperature = _quantity("temperature", limit="facility_water")
ChilledWaterTemperature = _quantity("temperature", limit="chilled_water")
AirTemperature = _quantity("temperature", limit="cold_aisle")
TemperatureDelta = _quantity("temperature_difference", positive=True, limit="temperature_band")
TemperatureMargin = _quantity("temperature_difference", non_negative=True, limit="temperature_band")
Duration = _quantity("time", positive=True, limit="span")
Delay = _quantity("time", non_negative=True, limit="span")
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
Volume = _quantity("volume", positive=True, limit="volume")


class _Strict(BaseModel):
    # defer_build: a model's validator is built when first used, not when the module is
    # imported (the scenario's models are ~0.15 CPU-s of every command's start-up otherwise)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


# --------------------------------------------------------------------------------------------
# Weather
# --------------------------------------------------------------------------------------------
class ConstantWeather(_Strict):
    """Constant outdoor conditions: dry-bulb and either wet-bulb or relative humidity."""

    kind: Literal["constant"]
    t_dry_bulb: OutdoorTemperature = 20.0
    t_wet_bulb: OutdoorTemperature | None = None
    rh: Fraction | None = None

    @model_validator(mode="after")
    def _humidity(self):
        if self.t_wet_bulb is not None and self.rh is not None:
            raise ValueError("give t_wet_bulb or rh, not both")
        if self.t_wet_bulb is not None and self.t_wet_bulb > self.t_dry_bulb:
            raise ValueError("t_wet_bulb above t_dry_bulb")
        return self


class EpwWeather(_Strict):
    """Typical-year weather from an EPW file (a bundled name such as ``Leesburg``, or a path)."""

    kind: Literal["epw"]
    file: Annotated[str, Field(min_length=1)] = "Leesburg"
    start_day: Annotated[float, Field(ge=1.0, lt=366.0)] | None = None  # default: scenario start


class DesignDayWeather(_Strict):
    """An ASHRAE design day from an EPW file's header, repeating every 24 h."""

    kind: Literal["design_day"]
    file: Annotated[str, Field(min_length=1)] = "Leesburg"
    day: Annotated[str, Field(pattern=r"^(cooling|evaporation)_(0\.4|1|2)$")] = "cooling_0.4"


class CsvWeather(_Strict):
    """Weather from a CSV file (columns: time, t_dry_bulb, one of t_wet_bulb / rh / t_dew_point)."""

    kind: Literal["csv"]
    file: Annotated[str, Field(min_length=1)]


WeatherSpec = Annotated[
    ConstantWeather | EpwWeather | DesignDayWeather | CsvWeather, Field(discriminator="kind")
]


# --------------------------------------------------------------------------------------------
# Equipment
# --------------------------------------------------------------------------------------------
#: Default catalogue templates by heat-rejection kind (chiller: air-cooled beside dry coolers,
#: water-cooled beside towers; the plant picks the size among the catalogue's chillers of that
#: condenser unless the scenario names one, :func:`twin.cooling.chiller.chiller_entry`).
DEFAULT_TEMPLATES = {
    "dry_cooler": ("dry-cooler-1mw", "air-cooled-chiller-1mw"),
    "hybrid": ("adiabatic-dry-cooler-1mw", "air-cooled-chiller-1mw"),
    "cooling_tower": ("cooling-tower-1mw", "water-cooled-chiller-1mw"),
}

Count = Annotated[int, Field(ge=1, le=10_000)]


#: Redundant units of an equipment type (N + R; :func:`twin.cooling.sizing.units_for_load`).
Redundant = Annotated[int, Field(ge=0, le=100)]


class HeatRejectionSpec(_Strict):
    """Outdoor heat rejection: kind, catalogue template (default by kind) and unit count
    (default: N for the facility water's heat at the IT design load, plus ``redundant``; the
    chilled water's units N for its heat, :mod:`twin.cooling.sizing`)."""

    kind: Literal["dry_cooler", "cooling_tower", "hybrid"] = "dry_cooler"
    template: str | None = None
    count: Count | None = None
    redundant: Redundant = 1


class ChillerSpec(_Strict):
    """Trim chillers. ``template``: a catalogue model; default: the size for the heat of both
    circuits at the IT design load among the catalogue's chillers of the heat-rejection kind's
    condenser (air-cooled beside dry coolers, water-cooled beside towers;
    :func:`twin.cooling.sizing.unit_size`). ``count``: N for that heat, so the plant can run on
    chillers alone, plus ``redundant``."""

    template: str | None = None
    count: Annotated[int, Field(ge=0, le=10_000)] | None = None
    redundant: Redundant = 1


#: Cooling modes of the plant: ``auto`` (free cooling first, chillers trim, with the switching
#: below), ``free_only`` (chillers locked out), ``chiller_only`` (economiser bypassed: the
#: chillers carry the facility water whenever one is available).
COOLING_MODES = ("auto", "free_only", "chiller_only")


class EconomiserSpec(_Strict):
    """Economiser and chiller switching on the facility-water loop, with hysteresis.

    In ``mode: auto`` the chiller starts as soon as free cooling at full fan speed cannot hold
    the supply set-point and stops once free cooling could reach ``hysteresis`` below it. Free
    cooling (in series ahead of the chiller) stays on while it cools the return water by at
    least ``min_useful``, and comes back once it could cool it by ``min_useful + hysteresis``.
    ``free_only`` locks the chillers out (both water circuits); ``chiller_only`` bypasses free
    cooling on the facility-water loop while a chiller is available.

    ``fans``: while the chiller trims the facility water, ``optimal`` runs the free-cooling fans
    at the speed with the least fan + compressor power (:mod:`twin.cooling.economiser`);
    ``flat_out`` runs them at full speed (the classic series economiser). Without the chiller
    both run the fans at the lowest speed that holds the set-point.
    """

    hysteresis: TemperatureDelta = 1.0
    min_useful: TemperatureMargin = 0.5
    mode: Literal[COOLING_MODES] = "auto"  # type: ignore[valid-type]
    fans: Literal["optimal", "flat_out"] = "optimal"


class CRAHSpec(_Strict):
    """Air side: CRAH units on a chilled-water circuit, holding the cold aisle."""

    template: str = "crah-150kw"
    count: Count | None = None  # default: N for the air share of the IT design load, + redundant
    redundant: Redundant = 1
    cold_aisle: AirTemperature = 25.0
    chilled_water_supply: ChilledWaterTemperature = 20.0
    air_volume: Volume = 3000.0  # room air the cold aisle mixes with [m3]
    time_constant: Duration = 120.0  # closed-loop time constant of the cold-aisle control [s]


class CDUControlSpec(_Strict):
    """PI control of each CDU's secondary supply through its primary (facility-water) valve.

    ``kp`` is the proportional share of the model-based correction (0..1, dimensionless: the
    gain is scheduled on the heat exchanger's sensitivity), ``ti`` the integral time.
    """

    kp: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.3
    ti: Duration = 30.0
    valve_min: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.05


class PumpSpec(_Strict):
    """Facility-water (and chilled-water) pumps: catalogue template sized to the loop."""

    template: str = "facility-water-pump"


class ModuleManagementSpec(_Strict):
    """Module management in double conversion (Eaton VMMS, ABB Xtra VFI): only the modules the
    load needs at ``max_load`` each, plus the redundant ones, stay active; the rest are parked."""

    #: Highest load fraction of an active module before another is activated [1] (Eaton VMMS
    #: default: 80 % of the module rating).
    max_load: float = Field(0.8, gt=0, le=1)


class UPSSpec(_Strict):
    """Central UPS: module template, operating mode and redundant modules (N + redundant, N
    from the IT design load), optionally with module management in double conversion.
    ``template``: a catalogue module; default: the module size of the modular family whose
    N + R modules lose least at the design load in ``mode`` (:func:`twin.power.selection.ups_entry`)."""

    template: str | None = None
    mode: Literal["double_conversion", "eco"] = "double_conversion"
    redundant: int = Field(1, ge=0)
    module_management: ModuleManagementSpec | None = None

    @model_validator(mode="after")
    def _managed_in_double_conversion(self):
        if self.module_management is not None and self.mode != "double_conversion":
            raise ValueError("module_management works in double conversion only (mode: double_conversion)")
        return self


class TransformerSpec(_Strict):
    """Medium- to low-voltage transformers, counted from the design load in kVA. ``template``:
    a catalogue transformer; default: the smallest standard rating of the DOE 2016 family at or
    above 1.25 × the design load over ``power_factor`` (:func:`twin.power.selection.transformer_entry`)."""

    template: str | None = None
    #: Power factor of the facility load on the transformers [1] (estimate: server PSUs with
    #: active PFC 0.98–0.99 at load, VFD-driven pumps and fans 0.95; 0.95 for the mix).
    power_factor: float = Field(0.95, gt=0, le=1)


class ElectricalRoomSpec(_Strict):
    """Cooling of the UPS, battery and switchgear rooms (null template: not modelled)."""

    template: str | None = "dx-electrical-room"


class PlantSpec(_Strict):
    """The facility cooling plant and power chain of a scenario (``plant:``)."""

    weather: WeatherSpec = EpwWeather.model_construct(kind="epw")
    step: Delay | None = None  # plant update interval (a multiple of time.step); default: every step
    facility_water_supply: FacilityWaterTemperature = 30.0
    facility_water_volume: Volume | None = None  # default: sized from the design load
    heat_rejection: HeatRejectionSpec = HeatRejectionSpec.model_construct()
    chiller: ChillerSpec | None = ChillerSpec.model_construct()  # null: no chiller
    economiser: EconomiserSpec = EconomiserSpec.model_construct()
    crah: CRAHSpec = CRAHSpec.model_construct()
    cdu_control: CDUControlSpec = CDUControlSpec.model_construct()
    pumps: PumpSpec = PumpSpec.model_construct()
    ups: UPSSpec = UPSSpec.model_construct()
    transformer: TransformerSpec = TransformerSpec.model_construct()
    electrical_room: ElectricalRoomSpec = ElectricalRoomSpec.model_construct()
    #: Miscellaneous facility load as a share of the IT design load [1] (estimate: lighting at
    #: 5–10 W/m² of white space plus controls, security and offices; 0.5 % for a dense AI hall).
    misc_load: float = Field(0.005, ge=0, le=0.2)
    #: Further plant equipment by its key (``plant.equipment.<key>: {options}``): each registered
    #: piece of equipment (:mod:`twin.cooling.equipment`) validates its own options.
    equipment: dict[str, dict | None] = {}

    @model_validator(mode="after")
    def _chilled_water(self):
        if self.crah.chilled_water_supply >= self.crah.cold_aisle:
            raise ValueError("crah.chilled_water_supply must be below crah.cold_aisle")
        return self

    def templates(self) -> dict[str, str]:
        """Heat-rejection and chiller templates after defaults: ``{"heat_rejection", "chiller"}``."""
        hr, ch = DEFAULT_TEMPLATES[self.heat_rejection.kind]
        return {
            "heat_rejection": self.heat_rejection.template or hr,
            "chiller": (self.chiller.template or ch) if self.chiller is not None else None,
        }
