"""The sweep file (``SWEEP.yaml``): pydantic models, expansion into variants, file:line errors.

A sweep is a base scenario plus parameters, each a dotted path into the scenario's YAML with a
list of values, a grid or seeded random draws::

    base: quickstart.yaml              # relative to the sweep file
    duration: 30 min                   # optional: time.duration of every variant
    set: {record.device: "off"}        # optional: the same override in every variant
    combine: grid                      # grid (outer product, default) or zip
    parameters:
      - zip:                           # varied together (equal lengths), one axis of the grid
          - path: site.facility_water_supply
            values: [27 degC, 32 degC, 37 degC]
          - path: cdus.0.supply_temperature
            grid: {start: 31 degC, stop: 41 degC, step: 5 K}
      - path: seed
        random: {distribution: integers, low: 0, high: 999, n: 4, seed: 1}
      - name: climate                  # no path: a label only (a coordinate, no override)
        values: [Leesburg, Phoenix, Seattle]
    kpis: [pue, p_facility_peak_W]     # shown in the summary and plotted by `twin report`

Every problem raises one :class:`~twin.scenario.errors.ScenarioError` naming the sweep file, the
line and the field path, as the scenario loader does.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, model_validator

from twin.scenario.errors import OptionError, ScenarioError, format_path
from twin.scenario.files import content_digest, referenced_files
from twin.scenario.loader import _line_of, read_document
from twin.units import DIMENSIONS, QuantityError, parse_quantity, udunits, ureg

#: Dotted path into a scenario: keys and list indices, e.g. ``halls.0.rows.0.racks.0.count``.
PATH_PATTERN = r"^[A-Za-z_][A-Za-z0-9_\-]*(\.([A-Za-z_][A-Za-z0-9_\-]*|[0-9]+))*$"
#: Largest number of variants a sweep file may expand to.
MAX_VARIANTS = 100_000
#: Coordinate names the combined result uses itself.
RESERVED = {"scenario", "variant", "status", "error", "time"}
#: Dimension names tried, in order, to label a quantity parameter (temperature before its
#: difference, so ``32 degC`` is a temperature).
_COORD_DIMENSIONS = [d for d in DIMENSIONS if d not in ("temperature_difference", "bytes", "dimensionless")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Scalar = str | int | float


class Grid(_Strict):
    """Evenly spaced values from ``start`` to ``stop`` (inclusive when it falls on a step)."""

    start: Scalar
    stop: Scalar
    step: Scalar

    @model_validator(mode="after")
    def _check(self):
        grid_values(self)  # raises ValueError with the reason
        return self


class Random(_Strict):
    """Seeded random draws: ``n`` values from a distribution.

    ``uniform`` (low, high), ``normal`` (mean, std), ``lognormal`` (median, sigma: the standard
    deviation of the log), ``integers`` (low, high, both inclusive) or ``choice`` (values).
    Quantities keep the unit of ``low`` / ``mean`` / ``median``.
    """

    distribution: Literal["uniform", "normal", "lognormal", "integers", "choice"]
    n: Annotated[int, Field(ge=1, le=MAX_VARIANTS)]
    seed: Annotated[int, Field(ge=0)] = 0
    low: Scalar | None = None
    high: Scalar | None = None
    mean: Scalar | None = None
    std: Scalar | None = None
    median: Scalar | None = None
    sigma: Annotated[float, Field(gt=0)] | None = None
    values: list[Any] | None = None

    @model_validator(mode="after")
    def _check(self):
        needs = {"uniform": ("low", "high"), "normal": ("mean", "std"), "lognormal": ("median", "sigma"),
                 "integers": ("low", "high"), "choice": ("values",)}[self.distribution]
        given = {k for k in ("low", "high", "mean", "std", "median", "sigma", "values")
                 if getattr(self, k) is not None}
        missing = [k for k in needs if k not in given]
        if missing:
            raise ValueError(f"'{self.distribution}' needs {' and '.join(needs)} (missing: {', '.join(missing)})")
        extra = sorted(given - set(needs))
        if extra:
            raise ValueError(f"'{self.distribution}' takes {' and '.join(needs)}, not {', '.join(extra)}")
        random_values(self)  # raises ValueError with the reason
        return self


class Parameter(_Strict):
    """One varied quantity: a dotted ``path`` into the scenario (or only a ``name``: a label)
    and exactly one of ``values``, ``grid`` or ``random``."""

    path: Annotated[str, Field(pattern=PATH_PATTERN)] | None = None
    name: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=64)] | None = None
    values: Annotated[list[Any], Field(min_length=1)] | None = None
    grid: Grid | None = None
    random: Random | None = None

    @model_validator(mode="after")
    def _check(self):
        kinds = [k for k in ("values", "grid", "random") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("give exactly one of 'values', 'grid' or 'random'"
                             + (f" (got {', '.join(kinds)})" if kinds else ""))
        if self.path is None and self.name is None:
            raise ValueError("give a 'path' into the scenario (or a 'name' for a label-only parameter)")
        return self

    @property
    def label(self) -> str:
        """Coordinate name: ``name``, else the last key of the path."""
        if self.name:
            return self.name
        return next(p for p in reversed(self.path.split(".")) if not p.isdigit())

    def expand(self) -> list:
        """The values this parameter takes, as they are written into the scenario."""
        if self.values is not None:
            return list(self.values)
        if self.grid is not None:
            return grid_values(self.grid)
        return random_values(self.random)


class ZipGroup(_Strict):
    """Parameters varied together: the i-th values of each make one point."""

    zip: Annotated[list[Parameter], Field(min_length=2)]

    @model_validator(mode="after")
    def _lengths(self):
        lengths = [len(p.expand()) for p in self.zip]
        if len(set(lengths)) > 1:
            raise ValueError(f"zipped parameters need equal numbers of values (got {', '.join(map(str, lengths))})")
        return self


_TAGS = ("parameter", "zip")


def _entry_kind(value) -> str:
    return "zip" if isinstance(value, dict) and "zip" in value else "parameter"


Entry = Annotated[Annotated[Parameter, Tag("parameter")] | Annotated[ZipGroup, Tag("zip")],
                  Discriminator(_entry_kind)]


class SweepSpec(_Strict):
    """A sweep file."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.\-]+$", max_length=64)] | None = None
    description: str = ""
    base: Annotated[str, Field(min_length=1)]
    duration: str | None = None
    set: dict[Annotated[str, Field(pattern=PATH_PATTERN)], Any] = {}
    combine: Literal["grid", "zip"] = "grid"
    parameters: Annotated[list[Entry], Field(min_length=1)]
    kpis: list[str] | None = None
    solver: Literal["fast", "reference"] = "fast"

    @model_validator(mode="after")
    def _check(self):
        if self.duration is not None:
            try:
                if not parse_quantity(self.duration, "time") > 0:
                    raise ValueError(f"must be positive, got {self.duration!r}")
            except QuantityError as exc:
                raise ValueError(f"duration: {exc}") from None
        return self

    def flat(self) -> list[tuple[tuple, Parameter]]:
        """Every parameter with its location in the file: ``(("parameters", i[, "zip", j]), p)``."""
        out = []
        for i, entry in enumerate(self.parameters):
            if isinstance(entry, ZipGroup):
                out.extend((("parameters", i, "zip", j), p) for j, p in enumerate(entry.zip))
            else:
                out.append((("parameters", i), entry))
        return out


# -- value generation ------------------------------------------------------------------------
def _split(value) -> tuple[float, str | None]:
    """A number or a quantity string → (magnitude, unit text or None)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number or a quantity, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value), None
    try:
        q = ureg.Quantity(str(value).strip())
    except Exception:
        raise ValueError(f"cannot read {value!r} as a number or a quantity") from None
    if not isinstance(q, ureg.Quantity):
        return float(q), None
    if q.dimensionless and str(q.units) == "dimensionless":
        return float(q.magnitude), None
    m = re.match(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*(?P<unit>\S.*?)\s*$", str(value))
    unit = m.group("unit") if m else str(q.units)  # keep the unit as written ("degC", "kW")
    return float(q.magnitude), unit


def _in_unit(value, unit: str | None, *, delta: bool = False) -> float:
    """``value`` expressed in ``unit`` (a difference when ``delta``: '5 K' is 5 degC of step)."""
    mag, u = _split(value)
    if unit is None or u is None:
        if (unit is None) != (u is None):
            raise ValueError(f"{value!r}: mix of plain numbers and quantities")
        return mag
    q = ureg.Quantity(mag, u)
    target = ureg.Unit(unit)
    if delta:
        offsets = {ureg.degC: "delta_degC", ureg.degF: "delta_degF"}
        if q.units in offsets:
            q = ureg.Quantity(mag, offsets[q.units])
        if target in offsets:
            target = ureg.Unit(offsets[target])
    try:
        return float(q.to(target).magnitude)
    except Exception:
        raise ValueError(f"{value!r} cannot be expressed in '{unit}'") from None


def _format(magnitude: float, unit: str | None, integer: bool = False):
    if unit is None:
        return int(round(magnitude)) if integer else float(magnitude)
    return f"{magnitude:.10g} {unit}"


def grid_values(grid: Grid) -> list:
    """Values of a grid, in the unit of ``start`` (strings for quantities, numbers otherwise)."""
    start, unit = _split(grid.start)
    stop = _in_unit(grid.stop, unit)
    step = _in_unit(grid.step, unit, delta=True)
    if step == 0 or (stop - start) * step < 0:
        raise ValueError(f"step {grid.step!r} does not lead from {grid.start!r} to {grid.stop!r}")
    n = int(math.floor((stop - start) / step + 1e-9)) + 1
    if n > MAX_VARIANTS:
        raise ValueError(f"{n} values; at most {MAX_VARIANTS}")
    integer = all(isinstance(v, int) and not isinstance(v, bool) for v in (grid.start, grid.stop, grid.step))
    return [_format(round(start + i * step, 12), unit, integer) for i in range(n)]


def random_values(r: Random) -> list:
    """Seeded draws (numpy ``default_rng(seed)``): the same file gives the same values."""
    import numpy as np

    rng = np.random.default_rng(r.seed)
    if r.distribution == "choice":
        idx = rng.integers(0, len(r.values), size=r.n)
        return [r.values[i] for i in idx]
    if r.distribution in ("uniform", "integers"):
        low, unit = _split(r.low)
        high = _in_unit(r.high, unit)
        if high < low:
            raise ValueError(f"high {r.high!r} is below low {r.low!r}")
        if r.distribution == "uniform":
            return [_format(x, unit) for x in rng.uniform(low, high, size=r.n)]
        return [_format(x, unit, integer=True)
                for x in rng.integers(math.ceil(low), math.floor(high) + 1, size=r.n)]
    if r.distribution == "normal":
        mean, unit = _split(r.mean)
        std = _in_unit(r.std, unit, delta=True)
        if std < 0:
            raise ValueError(f"std must not be negative, got {r.std!r}")
        return [_format(x, unit) for x in rng.normal(mean, std, size=r.n)]
    median, unit = _split(r.median)
    if median <= 0:
        raise ValueError(f"median must be positive, got {r.median!r}")
    return [_format(x, unit) for x in rng.lognormal(math.log(median), r.sigma, size=r.n)]


def coordinate(values: list) -> tuple[list, dict]:
    """Values of one parameter as a coordinate: numbers; quantities as SI floats with ``units``
    (temperatures in degC); anything else as text."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return list(values), {}
    if all(isinstance(v, str) for v in values):
        for dim in _COORD_DIMENSIONS:
            try:
                return [parse_quantity(v, dim) for v in values], {"units": udunits(dim)}
            except (QuantityError, KeyError):
                continue
        return list(values), {}
    return [v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str) for v in values], {}


# -- applying overrides to YAML data -----------------------------------------------------------
class PathError(ValueError):
    """A dotted path that does not fit the scenario's YAML structure."""


def set_path(data: dict, path: str, value) -> None:
    """Set ``value`` at dotted ``path`` in nested YAML data (missing mapping keys are created).

    Raises
    ------
    PathError
        A list index out of range, or a key or index into a plain value.
    """
    parts = path.split(".")
    node = data
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = ".".join(parts[:depth]) or "the scenario"
        if isinstance(node, list):
            if not part.isdigit():
                raise PathError(f"'{where}' is a list: expected an index, got '{part}'")
            i = int(part)
            if i >= len(node):
                raise PathError(f"index {i} out of range: '{where}' has {len(node)} entries")
            if last:
                node[i] = value
            else:
                node = node[i]
        elif isinstance(node, dict):
            if part.isdigit():
                raise PathError(f"'{where}' is a mapping: expected a key, got index {part}")
            if last:
                node[part] = value
            else:
                if node.get(part) is None:
                    node[part] = {}
                node = node[part]
        else:
            raise PathError(f"'{where}' is a plain value ({node!r}); it has no '{part}'")


# -- the plan -----------------------------------------------------------------------------------
@dataclass
class Variant:
    """One point of a sweep."""

    index: int
    labels: dict[str, Any]  # coordinate name → value as written in the scenario
    overrides: dict[str, Any]  # dotted path → value (fixed `set`, duration and parameters)
    key: str = ""  # hash of the base scenario text and the overrides: the result's file name


@dataclass
class SweepPlan:
    """A parsed sweep file: the spec, the base scenario and every variant."""

    spec: SweepSpec
    path: Path
    text: str
    base: Path
    base_text: str
    base_data: dict
    variants: list[Variant]
    coords: dict[str, tuple[list, dict]] = field(default_factory=dict)  # name → (values, attrs)
    lines: dict[tuple, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name or self.path.stem

    def error(self, loc: tuple, message: str) -> ScenarioError:
        return ScenarioError(message, file=str(self.path), line=_line_of(self.lines, loc), path=format_path(loc))

    def variant_data(self, variant: Variant) -> dict:
        """The base scenario's YAML data with the variant's overrides applied."""
        data = json.loads(json.dumps(self.base_data, default=str))  # deep copy, datetimes as text
        for path, value in variant.overrides.items():
            set_path(data, path, value)
        return data


def _doc_loc(loc: tuple, data) -> tuple:
    """A pydantic error location reduced to the parts present in the document (drops union tags)."""
    out, node = [], data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if part in _TAGS and (not isinstance(node, dict) or part not in node
                              or (not last and loc[i + 1] == part)):
            continue  # the tag of the parameters' union member
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif isinstance(node, dict) and isinstance(part, str) and not last:
            continue  # a tag pydantic inserted (discriminated union member)
        else:
            node = None
        out.append(part)
    return tuple(out)


def _message(err: dict, loc: tuple) -> str:
    if err["type"] == "extra_forbidden":
        return f"unknown key '{loc[-1]}'"
    if err["type"] == "missing":
        return "required field is missing"
    msg = err["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
    return msg


def variant_key(base_text: str, overrides: dict, solver: str, files: str = "") -> str:
    """Stable hash of what decides a variant's result: the base text, the overrides, the solver,
    the contents of the files the variant names (``files``: a
    :func:`~twin.scenario.files.content_digest`) and the twin itself (its version and bundled
    catalogue, :func:`twin_fingerprint`)."""
    payload = json.dumps({"base": base_text, "overrides": overrides, "solver": solver,
                          "files": files, "twin": twin_fingerprint()}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def twin_fingerprint() -> str:
    """The twin's version and a hash of its bundled catalogue files (a changed catalogue figure
    changes results even without a new version)."""
    import twin
    from twin.catalog.model import CATALOG_FILE

    digest = hashlib.sha256(twin.__version__.encode())
    for path in sorted(CATALOG_FILE.parent.glob("*.yaml")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def load_sweep(path: str | Path, duration: str | None = None) -> SweepPlan:
    """Read and validate a sweep file and expand it into variants.

    Parameters
    ----------
    path : str or Path
        The sweep YAML file.
    duration : str, optional
        Overrides the file's ``duration`` (e.g. ``"2 h"``).

    Raises
    ------
    ScenarioError
        ``FILE:LINE: field.path: message`` for a bad sweep file, a missing base scenario or a
        path that does not fit the base scenario.
    """
    path = Path(path)
    name = str(path)
    text, lines, data = read_document(path, "sweep")

    def fail(loc, message):
        return ScenarioError(message, file=name, line=_line_of(lines, loc), path=format_path(loc))

    if "base" not in data and "halls" in data:
        raise ScenarioError("this is a scenario (it has 'halls'), not a sweep file (a sweep file has "
                            "'base' and 'parameters'); `twin run` runs it", file=name,
                            line=_line_of(lines, ("halls",)))

    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        loc = _doc_loc(tuple(err["loc"]), data)
        raise fail(loc, _message(err, loc)) from None
    if duration is not None:
        try:
            if not parse_quantity(duration, "time") > 0:
                raise QuantityError(f"must be positive, got {duration!r}")
        except QuantityError as exc:
            raise OptionError("--duration", str(exc)) from None

    base = (path.parent / spec.base)
    if not base.is_file():
        raise fail(("base",), f"base scenario not found: {base}")
    base_text, _, base_data = read_document(base, "scenario")  # depth, tags, digits checked

    params = spec.flat()
    labels = {}
    for loc, p in params:
        if p.label in labels:
            raise fail(loc + ("path",) if p.path else loc,
                       f"two parameters are named '{p.label}': give one a 'name'")
        if p.label in RESERVED:
            raise fail(loc, f"'{p.label}' is reserved; give the parameter another 'name'")
        labels[p.label] = loc
    paths = {}
    for loc, p in params:
        if p.path is None:
            continue
        if p.path in paths or p.path in spec.set:
            raise fail(loc + ("path",), f"'{p.path}' is varied twice (or also under 'set')")
        paths[p.path] = loc
    # Check that every path fits the base scenario's structure (list indices in range, …).
    probe = json.loads(json.dumps(base_data, default=str))
    for key, value in spec.set.items():
        try:
            set_path(probe, key, value)
        except PathError as exc:
            raise fail(("set", key), str(exc)) from None
    for loc, p in params:
        if p.path is not None:
            try:
                set_path(probe, p.path, p.expand()[0])
            except PathError as exc:
                raise fail(loc + ("path",), str(exc)) from None

    # Axes: one per plain parameter, one per zip group; each a list of {label: value}.
    axes = []
    for entry in spec.parameters:
        members = entry.zip if isinstance(entry, ZipGroup) else [entry]
        values = [m.expand() for m in members]
        axes.append([{m.label: v[i] for m, v in zip(members, values)} for i in range(len(values[0]))])
    if spec.combine == "zip":
        lengths = {len(a) for a in axes}
        if len(lengths) > 1:
            raise fail(("combine",), "combine: zip needs every parameter to have the same number of values "
                                     f"(got {', '.join(str(len(a)) for a in axes)})")
        points = [{k: v for d in ds for k, v in d.items()} for ds in zip(*axes)]
    else:
        n = math.prod(len(a) for a in axes)
        if n > MAX_VARIANTS:
            raise fail(("parameters",), f"{n:,} variants; at most {MAX_VARIANTS:,}")
        points = [{k: v for d in ds for k, v in d.items()} for ds in itertools.product(*axes)]

    by_label = {p.label: p for _, p in params}
    fixed = dict(spec.set)
    dur = duration or spec.duration
    if dur is not None:
        fixed["time.duration"] = dur
    variants = []
    for i, point in enumerate(points):
        overrides = dict(fixed)
        overrides.update({by_label[k].path: v for k, v in point.items() if by_label[k].path})
        variants.append(Variant(i, point, overrides))
    coords = {}
    for label in labels:
        try:
            coords[label] = coordinate([v.labels[label] for v in variants])
        except Exception:
            coords[label] = ([str(v.labels[label]) for v in variants], {})
    plan = SweepPlan(spec, path, text, base, base_text, base_data, variants, coords, lines)
    digests: dict[str, str] = {}  # file → content hash, each file read once
    for v in variants:
        files = content_digest(referenced_files(plan.variant_data(v), base.parent), digests)
        v.key = variant_key(base_text, v.overrides, spec.solver, files)
    return plan


def sweep_error_for(plan: SweepPlan, err: ScenarioError) -> ScenarioError | None:
    """A variant's error that is really a mistake in the sweep file (an unknown key on a
    parameter's path, so every variant would fail): the same error placed in the sweep file."""
    if "unknown key" not in err.message:
        return None
    for loc, p in plan.spec.flat():
        if p.path and _same_path(err.path, p.path):
            return plan.error(loc + ("path",), f"{p.path}: {err.message} in {plan.base.name}")
    for key in plan.spec.set:
        if _same_path(err.path, key):
            return plan.error(("set", key), f"{key}: {err.message} in {plan.base.name}")
    return None


def _same_path(formatted: str, dotted: str) -> bool:
    """``cdus[0].supply_temp`` (an error's path) lies on ``cdus.0.supply_temp`` (a sweep path)."""
    as_dots = re.sub(r"\[(\d+)\]", r".\1", formatted)
    return dotted == as_dots or dotted.startswith(as_dots + ".")
