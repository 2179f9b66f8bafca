"""The scenario's ``telemetry:`` section and the ``calibration:`` record an overlay carries.

``telemetry:`` says where measured data comes from and how it maps onto the scenario::

    telemetry:
      source: data/gpu-telemetry.csv     # CSV/TSV/Parquet (relative to the scenario) or a
                                         # Prometheus base URL (http://host:9090)
      layout: long                       # long: time, id, metric, value rows; wide: a column
                                         # per quantity (then `columns` names them)
      columns: {time: timestamp, id: name, power: powerave, temperature: tempave,
                utilisation: utilave}
      units: {power: W, temperature: degC, utilisation: percent}
      devices: {cbsugpu07: gpu-server/s00/a100-sxm-0}   # telemetry id → scenario device
      utilisation: {busy: 1.0, held: 0.0}  # nvidia-smi utilisation → the twin's u
      fit: {from: 2024-03-01, to: 2024-03-22}
      holdout: {from: 2024-03-22, to: 2024-04-12}
      parameters: [p_idle, p_leak_ref, r_conv_ref, site.cold_aisle]

Everything here is plain data validated by pydantic; reading and checking the measurements is
:mod:`twin.calibrate.telemetry`.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator

from twin.units import QuantityError, parse_quantity

#: Quantities a telemetry source can carry (the twin's names for them).
QUANTITIES = ("power", "temperature", "utilisation", "clock", "memory_temperature")
#: Column roles of a table besides the quantities.
ROLES = ("time", "id", "metric", "value")


def _quantity(dimension: str, example: str):
    def parse(value):
        try:
            si = parse_quantity(value, dimension)
        except QuantityError as exc:
            raise ValueError(str(exc)) from None
        if not si > 0:
            raise ValueError(f"must be positive, got {value!r}")
        return si

    schema = {"type": "string", "description": f"{dimension} with units, e.g. '{example}'", "examples": [example]}
    return Annotated[float, BeforeValidator(parse), WithJsonSchema(schema)]


Duration = _quantity("time", "1 h")
Frequency = _quantity("rate", "1410 MHz")


class _Strict(BaseModel):
    # defer_build: a model's validator is built when first used, not when the module is
    # imported (the scenario's models are ~0.15 CPU-s of every command's start-up otherwise)
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)


class Window(_Strict):
    """A time window ``[from, to)`` of the telemetry (times as in the source, no time zone)."""

    start: dt.datetime = Field(alias="from")
    end: dt.datetime = Field(alias="to")

    @model_validator(mode="after")
    def _order(self):
        if self.end <= self.start:
            raise ValueError(f"'to' ({self.end}) must be after 'from' ({self.start})")
        return self


class UtilisationMap(_Strict):
    """How a measured utilisation becomes the twin's demanded utilisation ``u``.

    NVIDIA's "GPU utilisation" (nvidia-smi, ``DCGM_FI_DEV_GPU_UTIL``) is the fraction of time in
    which any kernel runs, not the fraction of the chip's arithmetic in use. The twin's ``u``
    scales dynamic power (``P = p_idle + p_dyn·u·f^α + leakage``), so::

        u = held + (busy − held) · g      for g > 0,     u = 0 for g = 0

    with ``g`` the measured fraction of time busy: ``busy`` is the share of full dynamic power
    drawn while kernels run (their activity; < 1 for memory-bound work) and ``held`` the level a
    device that runs any work in the interval sits at even between kernels (clocks up, memory
    active: "active idle"). Both can be fitted (``telemetry.utilisation.busy``, ``…held``).
    """

    busy: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0
    held: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.0

    @model_validator(mode="after")
    def _order(self):
        if self.held > self.busy:
            raise ValueError(f"held ({self.held}) must not exceed busy ({self.busy})")
        return self


Name = Annotated[str, Field(min_length=1, max_length=200)]


class TelemetrySpec(_Strict):
    """Measured telemetry of some of the scenario's devices (see the module docstring)."""

    source: Name | None = None
    layout: Literal["long", "wide"] = "long"
    separator: Annotated[str, Field(min_length=1, max_length=2)] | None = None
    columns: dict[Literal[ROLES + QUANTITIES], Name | Annotated[list[Name], Field(min_length=1)]] = {}  # type: ignore[valid-type]
    units: dict[Literal[QUANTITIES], Annotated[str, Field(min_length=1, max_length=40)]] = {}  # type: ignore[valid-type]
    devices: dict[Name, Name] = {}  # telemetry id → scenario device (required to calibrate or shadow)
    interval: Duration | None = None
    stamp: Literal["start", "end"] = "start"
    max_gap: Duration | None = None
    stuck_samples: Annotated[int, Field(ge=3)] = 24
    utilisation: UtilisationMap = UtilisationMap.model_construct()
    clock_max: Frequency | None = None
    selector: Annotated[str, Field(max_length=500)] | None = None
    fit: Window | None = None
    holdout: Window | None = None
    parameters: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = None
    bounds: dict[str, tuple[str | float, str | float]] = {}

    @model_validator(mode="after")
    def _columns(self):
        if self.layout == "wide":
            given = [q for q in QUANTITIES if q in self.columns]
            if not given:
                raise ValueError("a wide table needs columns for its quantities, e.g. "
                                 "columns: {time: timestamp, id: name, power: powerave, temperature: tempave, "
                                 "utilisation: utilave}")
            if "metric" in self.columns or "value" in self.columns:
                raise ValueError("'metric' and 'value' columns belong to the long layout")
        else:
            extra = [q for q in QUANTITIES if q in self.columns]
            if extra:
                raise ValueError(f"columns for quantities ({', '.join(extra)}) need layout: wide")
        return self


class ParameterEstimate(_Strict):
    """One fitted parameter as recorded in an overlay: SI value and standard deviation."""

    path: Name
    value: float
    sigma: Annotated[float, Field(ge=0.0)]
    units: str = ""


class ResidualBand(_Strict):
    """The residual of one quantity per activity class (``idle``, ``active``): the scale of a
    measurement around the twin (SI) and its degrees of freedom (see twin.calibrate.residual)."""

    scale: dict[Literal["idle", "active"], Annotated[float, Field(ge=0.0)]]
    dof: dict[Literal["idle", "active"], Annotated[float, Field(gt=0.0)]]

    @model_validator(mode="after")
    def _both(self):
        for name in ("scale", "dof"):
            missing = {"idle", "active"} - set(getattr(self, name))
            if missing:
                raise ValueError(f"{name}: give both 'idle' and 'active' (missing {', '.join(sorted(missing))})")
        return self


class ResidualRecord(_Strict):
    """What the calibrated twin does not explain: the fit window's residual RMS (SI) and, per
    quantity, the band model a measurement falls in."""

    power: Annotated[float, Field(ge=0.0)]  # [W]
    temperature: Annotated[float, Field(ge=0.0)]  # [K]
    kinds: list[str] = []  # chip kinds of the measured devices
    bands: dict[Literal["power", "temperature"], ResidualBand] = {}


class CalibrationRecord(_Strict):
    """What ``twin calibrate`` fitted (written into the overlay; read by ``--ensemble``).

    ``correlation`` is the parameters' correlation matrix (row order of ``parameters``), so an
    ensemble samples them jointly; ``residual`` widens an ensemble's band of the measured
    devices' power and temperature into the band a measurement falls in.
    """

    source: str = ""
    window: str = ""
    parameters: list[ParameterEstimate] = []
    correlation: list[list[float]] | None = None
    residual: ResidualRecord | None = None

    @model_validator(mode="after")
    def _shape(self):
        n = len(self.parameters)
        if self.correlation is not None and (len(self.correlation) != n or any(len(r) != n for r in self.correlation)):
            raise ValueError(f"correlation must be {n} x {n} (one row and column per parameter)")
        return self
