"""Pydantic models of the scenario YAML.

Quantities are strings with units (``"1.2 kW"``, ``"32 degC"``, ``"1.5 L/min"``, ``"500 ms"``);
they are parsed with pint once, checked for dimension and stored as SI floats (temperatures in
degC). Unknown keys are rejected everywhere.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from twin.calibrate.spec import CalibrationRecord, TelemetrySpec
from twin.catalog.formats import FORMATS
from twin.catalog.model import KINDS
from twin.units import quantity

_quantity = quantity  # the field factory (twin.units.quantity)


Duration = _quantity("time", positive=True, limit="span")
Instant = _quantity("time", non_negative=True, limit="span")
CoolantTemperature = _quantity("temperature", limit="coolant_supply")
FacilityWaterTemperature = _quantity("temperature", limit="facility_water")
AirTemperature = _quantity("temperature", limit="cold_aisle")
VolumeFlow = _quantity("volume_flow", positive=True, limit="rack_flow")
Power = _quantity("power", positive=True, limit="rack_power")
RowPower = _quantity("power", positive=True, limit="row_power")
DevicePower = _quantity("power", positive=True, limit="device_power")
Price = _quantity("price", non_negative=True, limit="price")
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
Name = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.\-]+$")]
#: Whole numbers of things (racks, devices, PSUs, batch slots): at most ten million.
MAX_COUNT = 10_000_000


class _Strict(BaseModel):
    # defer_build: a model's validator is built when first used, not when the module is
    # imported (the scenario's models are ~0.15 CPU-s of every command's start-up otherwise).
    # For the same reason a default that is a model instance is made with model_construct()
    # (its defaults, unvalidated, equal to the validated X(): tests/scenario/test_scenario_cache.py),
    # since X() at import would build X's validator.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


class TimeSpec(_Strict):
    """Simulated time: start instant, duration and the thermal step."""

    start: dt.datetime = dt.datetime(2026, 7, 1)
    duration: Duration
    step: Duration = 1.0

    @model_validator(mode="after")
    def _step_fits(self):
        if self.step > self.duration:
            raise ValueError(f"step ({self.step:g} s) is longer than the run ({self.duration:g} s)")
        return self


class Site(_Strict):
    """Boundary conditions of the site (the cooling plant issue replaces them with models)."""

    facility_water_supply: FacilityWaterTemperature = 30.0
    cold_aisle: AirTemperature = 25.0


class CDUSpec(_Strict):
    """Coolant distribution units feeding racks on their secondary loops.

    With ``count`` > 1 the CDUs are named ``name-01 …``; a rack entry whose ``cdu`` is the
    family name spreads its racks over the family in contiguous blocks.
    """

    name: Name
    template: str = "in-row-1350kw"
    supply_temperature: CoolantTemperature = 32.0
    count: Annotated[int, Field(ge=1, le=100_000)] = 1
    #: Secondary-loop coolant (a catalogue ``coolants`` entry: water, pg25); one per scenario.
    coolant: Name = "water"


class RackSpec(_Strict):
    """Racks built from a catalogue template (a rack or a multi-rack system)."""

    name: Name
    template: str
    count: Annotated[int, Field(ge=1, le=100_000)] = 1
    cdu: str | None = None
    coolant_flow: VolumeFlow | None = None  # per rack; default from the template (a loss of flow is an event)
    power_limit: Power | None = None  # per rack AC input; the cap governor lowers clocks to hold it


class Row(_Strict):
    name: Name
    racks: Annotated[list[RackSpec], Field(min_length=1)]
    power_limit: RowPower | None = None  # sum of the row's rack AC input


class Hall(_Strict):
    name: Name
    rows: Annotated[list[Row], Field(min_length=1)]


class Select(_Strict):
    """Which devices a workload rule applies to; all given criteria must match."""

    kind: list[str] | None = None
    rack: list[str] | None = None  # rack names or shell patterns ("us1-*")
    row: list[str] | None = None
    hall: list[str] | None = None


class Swing(_Strict):
    """A square wave between ``high`` and ``low`` utilisation (training compute/communication)."""

    high: Fraction
    low: Fraction
    period: Duration
    duty: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.7


class Segment(_Strict):
    """From time ``at`` on: a constant ``u`` or a ``swing``."""

    at: Instant
    u: Fraction | None = None
    swing: Swing | None = None

    @model_validator(mode="after")
    def _one(self):
        if (self.u is None) == (self.swing is None):
            raise ValueError("give exactly one of 'u' or 'swing'")
        return self


class WorkloadRule(_Strict):
    """Demanded utilisation for the selected devices: constant, a profile, or a replay file.

    Rules apply in order; a later rule overrides an earlier one for the devices both select.
    Devices that no rule selects idle (u = 0).
    """

    select: Select = Select.model_construct()
    u: Fraction | None = None
    profile: Annotated[list[Segment], Field(min_length=1)] | None = None
    replay: str | None = None  # CSV or Parquet, long format: time [s], device, u

    @model_validator(mode="after")
    def _one(self):
        given = [k for k in ("u", "profile", "replay") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of 'u', 'profile' or 'replay'")
        if self.profile is not None:
            ats = [s.at for s in self.profile]
            if ats != sorted(ats):
                raise ValueError("profile segments must be in time order")
        return self


class PowerLimit(_Strict):
    """A device power limit (cap) for the selected devices, below their TDP: the governor holds
    each device at or under it by lowering its clock. Give ``limit`` (per device) or
    ``fraction`` (of each device's TDP). Later rules override earlier ones."""

    select: Select = Select.model_construct()
    limit: DevicePower | None = None
    fraction: Annotated[float, Field(gt=0.0, le=1.0)] | None = None

    @model_validator(mode="after")
    def _one(self):
        if (self.limit is None) == (self.fraction is None):
            raise ValueError("give exactly one of 'limit' or 'fraction'")
        return self


class DeviceRequest(_Strict):
    """Devices a job asks for: a chip kind, how many (default: all that match), and where.

    Gangs go to one scale-up domain when one has room, else to as few domains as possible;
    ``within: domain`` refuses to span domains (the job waits, or is unplaceable if no domain
    is large enough).
    """

    kind: str
    count: Annotated[int, Field(ge=1, le=MAX_COUNT)] | None = None
    select: Select = Select.model_construct()
    within: Literal["any", "domain"] = "any"


class Checkpoint(_Strict):
    """Periodic checkpoints: every ``interval`` of job time the job pauses for ``duration``."""

    interval: Duration
    duration: Duration
    u: Fraction = 0.05  # accelerator utilisation while writing the checkpoint
    #: network devices' load while the checkpoint is written to remote storage (estimate: the
    #: write of a few GB per device is spread over the pause, well below the collectives' load)
    network_load: Fraction = 0.3


class Smoothing(_Strict):
    """Power smoothing for synchronous training (software fill / power floors, ramp limits)."""

    floor: Fraction | None = None  # minimum device power as a fraction of TDP
    ramp: _quantity("power_rate", positive=True, limit="power_rate") | None = None  # per device [W/s]


class TrainingJob(_Strict):
    """Synchronous data/tensor-parallel training: the whole gang swings between phases together.

    Each iteration: ``compute_share`` of it at ``u_compute``, the rest in collectives at
    ``u_collective`` with the network devices at ``network_load``. ``moe_training`` adds an
    all-to-all phase (``all_to_all_share`` of the iteration) that loads EFA and NeuronSwitch.
    """

    kind: Literal["training", "moe_training"]
    name: Name
    devices: DeviceRequest
    start: Instant = 0.0
    iterations: Annotated[float, Field(gt=0, le=1e15)] | None = None  # stop after this many (default: run on)
    iteration_time: Duration  # at full clock
    compute_share: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.7
    u_compute: Fraction = 0.95
    u_collective: Fraction = 0.2
    network_load: Fraction = 0.8
    #: network devices' load during the compute phase (estimate: data loading and overlapped
    #: gradient traffic keep the links lightly busy between collectives)
    compute_network_load: Fraction = 0.1
    all_to_all_share: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.0
    u_all_to_all: Fraction = 0.3
    all_to_all_network_load: Fraction = 1.0  # EFA / NeuronSwitch during the all-to-all phase
    host_load: Fraction = 0.3
    tokens_per_iteration: Annotated[float, Field(ge=0, le=1e15)] = 0.0
    checkpoint: Checkpoint | None = None
    mtbf: Duration | None = None  # job-level mean time between failures
    restart_time: Duration = 600.0
    smoothing: Smoothing | None = None
    # From the fabric instead of the rest of iteration_time (see twin.network.collectives):
    collective_bytes: _quantity("bytes", positive=True) | None = None  # all-reduced per chip per iteration
    all_to_all_bytes: _quantity("bytes", positive=True) | None = None  # sent per chip per iteration (MoE)
    collective_algorithm: Literal["ring", "tree"] = "ring"

    @model_validator(mode="after")
    def _phases(self):
        if self.compute_share + self.all_to_all_share >= 1.0:
            raise ValueError("compute_share + all_to_all_share must leave time for collectives (< 1)")
        if self.kind == "training" and (self.all_to_all_share > 0 or self.all_to_all_bytes is not None):
            raise ValueError("all_to_all_share and all_to_all_bytes are for kind 'moe_training'")
        return self


class ModelSpec(_Strict):
    """The served model: size, weight format and KV cache per token."""

    params: Annotated[float, Field(gt=0, le=1e15)]  # parameters, e.g. 70e9
    format: Literal[tuple(FORMATS)] = "fp8"  # type: ignore[valid-type]  # weights and matmuls
    kv_bytes_per_token: Annotated[float, Field(ge=0, le=1e9)] = 163840.0  # e.g. 80 layers × 8 KV heads × 128 × 2 × FP8
    layers: Annotated[int, Field(ge=1, le=100_000)] | None = None  # default from params (twin.workload.inference.model_shape)
    d_model: Annotated[int, Field(ge=1, le=10_000_000)] | None = None


class Arrivals(_Strict):
    """Poisson request arrivals: a constant rate, or 24 hourly multipliers of ``rate``."""

    rate: _quantity("rate", positive=True, limit="rate")
    daily_profile: Annotated[list[Annotated[float, Field(ge=0, le=1e3)]], Field(min_length=24, max_length=24)] | None = None


class InferenceJob(_Strict):
    """LLM serving: requests from a trace (Azure LLM trace format) or Poisson arrivals, served by
    replicas of ``replica_size`` chips with continuous batching; prefill is compute-bound and
    decode memory-bound (roofline on the chips' catalogue FLOPS and HBM bandwidth)."""

    kind: Literal["inference"]
    name: Name
    devices: DeviceRequest
    start: Instant = 0.0
    replica_size: Annotated[int, Field(ge=1, le=MAX_COUNT)] = 1
    model: ModelSpec
    trace: str | None = None  # CSV path (relative to the scenario) or "azure-code" (bundled)
    arrivals: Arrivals | None = None
    time_scale: Annotated[float, Field(gt=0, le=1e6)] = 1.0  # >1 replays the trace faster
    mfu: Annotated[float, Field(gt=0, le=1)] | None = None  # default: the chip's catalogue figure
    mbu: Annotated[float, Field(gt=0, le=1)] | None = None  # default: the chip's catalogue figure
    max_batch_size: Annotated[int, Field(ge=1, le=1_000_000)] = 64
    max_prefill_tokens: Annotated[float, Field(gt=0, le=1e9)] = 8192.0
    prefill_chunk: Annotated[float, Field(gt=0, le=1e9)] | None = None  # chunked prefill [tokens per pass]
    layer_overhead: Duration | None = None  # per layer and pass; default the Splitwise fit
    collective_overhead: Duration | None = None  # per all-reduce step on top of the fabric latency
    network_load: Fraction = 0.2
    host_load: Fraction = 0.2

    @model_validator(mode="after")
    def _source(self):
        if (self.trace is None) == (self.arrivals is None):
            raise ValueError("give exactly one of 'trace' or 'arrivals'")
        if self.devices.count is not None and self.devices.count % self.replica_size:
            raise ValueError(f"devices.count ({self.devices.count}) must be a multiple of "
                             f"replica_size ({self.replica_size})")
        return self


class CpuJob(_Strict):
    """Batch work on CPUs (data preparation, preprocessing) following a utilisation profile."""

    kind: Literal["cpu"]
    name: Name
    devices: DeviceRequest
    start: Instant = 0.0
    profile: Annotated[list[Segment], Field(min_length=1)]


from twin.scenario.names import EVENT_KINDS, GROUPS  # noqa: E402,F401


class Record(_Strict):
    """Recording interval per group (``off`` to skip a group) and optional variable lists.

    An interval must be a whole multiple of the step; one shorter than the step records every
    step (so ``--step`` can be raised without editing the file). ``device`` defaults to 10 s,
    and to ``off`` for systems of more than 10,000 devices (give it to record them).
    """

    facility: Duration | Literal["off"] = 1.0
    cdu: Duration | Literal["off"] = 1.0
    rack: Duration | Literal["off"] = 1.0
    sled: Duration | Literal["off"] = "off"
    device: Duration | Literal["off"] = 10.0
    job: Duration | Literal["off"] = 1.0
    variables: dict[Literal["facility", "cdu", "rack", "sled", "device", "job"], list[str]] = {}
    #: Memory per group held before a streamed run (``.zarr``) appends it to the store; smaller
    #: means more, smaller appends (each group keeps at least 16 samples).
    buffer: _quantity("bytes", positive=True, limit="buffer") = 8 * 2**20


from twin.cooling.config import PlantSpec  # noqa: E402
from twin.scenario.control import ControlSpec  # noqa: E402


class Event(_Strict):
    """A fault or an operator action at a time, optionally cleared after ``duration``.

    Targets: a CDU name for ``cdu_pump_trip``, ``cdu_failure`` and ``setpoint_change``; a rack
    name (or shell pattern) for ``coolant_flow_loss``, ``rack_fan_failure`` and ``psu_failure``;
    nothing for the plant-wide kinds.
    """

    at: Instant
    kind: Literal[tuple(EVENT_KINDS)]  # type: ignore[valid-type]
    target: str | None = None
    duration: Duration | None = None  # cleared after this long; default: lasts to the end
    failover: bool = False  # CDU events: a standby takes over after failover_delay
    failover_delay: Duration = 10.0
    fraction: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0  # share of flow / fans / capacity lost
    count: Annotated[int, Field(ge=1, le=1000)] = 1  # PSUs failed per rack; pumps tripped for cdu_pump_trip
    value: CoolantTemperature | None = None  # new setpoint for setpoint_change

    @model_validator(mode="after")
    def _target(self):
        wants = EVENT_KINDS[self.kind]
        if wants != "plant" and not self.target:
            raise ValueError(f"'{self.kind}' needs a target ({wants} name)")
        if self.kind == "setpoint_change" and self.value is None:
            raise ValueError("setpoint_change needs a 'value', e.g. '40 degC'")
        return self


class NetworkSpec(_Strict):
    """The scale-out network between scale-up domains: its fabric carries collectives that span
    domains, and its switches and optics (sized from the cluster's NIC ports) add to IT power."""

    scale_out: str = "efa-ultracluster"  # a scale-out `fabrics` entry


class Scenario(_Strict):
    """A twin scenario: time, site, hardware layout, workload, recording and output."""

    name: Name
    description: str = ""
    seed: Annotated[int, Field(ge=0, le=2**63 - 1)] = 0  # stored as a 64-bit integer
    time: TimeSpec
    site: Site = Site.model_construct()
    cdus: list[CDUSpec] = []
    halls: Annotated[list[Hall], Field(min_length=1)]
    workload: list[WorkloadRule] = []
    power_limits: list[PowerLimit] = []  # device caps below TDP (DVFS holds them)
    workload_step: Duration | None = None  # finer than time.step for sub-second power (default: the step)
    jobs: list[Annotated[TrainingJob | InferenceJob | CpuJob, Field(discriminator="kind")]] = []
    events: list[Event] = []
    plant: PlantSpec | None = None  # the facility cooling plant, weather and power chain
    network: NetworkSpec | None = None  # scale-out network power; without it collectives still cross EFA
    record: Record = Record.model_construct()
    output: str | None = None
    catalog: dict[Literal[KINDS], dict[str, dict]] | None = None  # type: ignore[valid-type]
    electricity_price: Price | None = None
    overlays: list[Annotated[str, Field(min_length=1)]] = []  # merged over this file (later wins)
    telemetry: TelemetrySpec | None = None  # measured data for twin calibrate / twin shadow
    calibration: CalibrationRecord | None = None  # what twin calibrate fitted (from an overlay)
    control: ControlSpec | None = None  # actions, observations and reward for twin.control
