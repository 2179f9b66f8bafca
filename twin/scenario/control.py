"""The scenario's ``control:`` section: what :mod:`twin.control` offers a controller.

Example::

    control:
      interval: 5 min                 # one environment step (default: 5 min in whole steps)
      out_of_range: clip              # or reject
      actions:                        # default: every control the system's components declare
        - {control: facility.t_facility_supply_set, low: 24 degC, high: 40 degC}
        - {control: cdu.t_supply_set, shared: true}
        - {control: facility.cooling_mode}
      observations: [facility.p_facility, facility.pue, device.t_die]   # default: operator telemetry
      reward:                         # reward = −(energy E + throttled S + lost_work W + violation V)
        energy: 0.08 USD/kWh
        throttled: 0.5 USD/h          # per throttled device-hour
        lost_work: 2 USD/h            # per device-hour of work lost to clocks below 1 or trips
        violation: 10 USD/s           # per second per constraint broken
      p_facility_limit: 1.5 MW        # a constraint: facility power above it is a violation

Bounds are written in the control's own units (``twin.control`` lists them); they narrow the
range the equipment accepts, never widen it. Nothing here changes a plain ``twin run``.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from twin.units import quantity

Duration = quantity("time", positive=True, limit="span")
Power = quantity("power", positive=True, limit="facility_power")
Price = quantity("price", non_negative=True, limit="price")
Rate = quantity("rate", non_negative=True)  # a penalty per second: finite, no physical range
Key = Annotated[str, Field(pattern=r"^[a-z_]+\.[a-z_0-9]+$")]


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} is not a finite number")
    return value


#: An action bound in the control's own units ("24 degC" or a number), parsed by twin.control.
Bound = Annotated[str | float | None, BeforeValidator(_finite)]

#: Default value of a lost device-hour of work [1/s] (estimate: 2 USD per accelerator-hour, between
#: on-demand cloud prices per chip of ~1.3 USD/h (trn1.32xlarge, 16 Trainium at 21.50 USD/h) and
#: ~12 USD/h (p5.48xlarge, 8 H100 at ~98 USD/h), AWS EC2 on-demand price list, us-east-1, 2024).
LOST_WORK_PRICE = 2.0 / 3600.0
#: Default penalty for a throttled device-hour [1/s] (estimate: a quarter of the lost-work price
#: for running outside the thermal design envelope; 0 counts only the work lost).
THROTTLED_PRICE = 0.5 / 3600.0
#: Default penalty per second per broken constraint [1/s] (estimate: large against the energy
#: cost of a hall, so that a controller never trades a trip for energy).
VIOLATION_PRICE = 10.0
#: Default energy price when the scenario gives no ``electricity_price`` [1/J] (US industrial
#: average 2024 ≈ 0.08 USD/kWh: EIA Electric Power Monthly, Table 5.6.A).
ENERGY_PRICE = 0.08 / 3.6e6
#: Default control interval [s] (rounded up to whole thermal steps).
INTERVAL = 300.0


class _Strict(BaseModel):
    # defer_build: a model's validator is built when first used, not when the module is
    # imported (the scenario's models are ~0.15 CPU-s of every command's start-up otherwise)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


class ActionSpec(_Strict):
    """One control offered as an action: its key, narrower bounds, one value for all entities."""

    control: Key
    low: Bound = None  # in the control's units, e.g. "24 degC"
    high: Bound = None
    shared: bool = False  # one value for every entity of the group (e.g. all CDUs)


class RewardSpec(_Strict):
    """Weights of the reward, each a price per unit of its term (see the module docstring)."""

    energy: Price | None = None  # per facility energy; default the scenario's electricity_price
    throttled: Rate = THROTTLED_PRICE  # per throttled device-second
    lost_work: Rate = LOST_WORK_PRICE  # per device-second of work lost
    violation: Rate = VIOLATION_PRICE  # per second per broken constraint


class ControlSpec(_Strict):
    """How :mod:`twin.control` exposes the scenario to a controller."""

    interval: Duration | None = None  # default: 5 min, rounded up to whole thermal steps
    out_of_range: Literal["clip", "reject"] = "clip"
    actions: list[ActionSpec] | None = None  # default: every declared control
    observations: list[Key] | None = None  # default: operator telemetry
    reward: RewardSpec = RewardSpec.model_construct()
    p_facility_limit: Power | None = None
