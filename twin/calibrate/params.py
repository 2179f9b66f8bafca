"""Fitted parameters as named paths, with priors, bounds and units.

A parameter is a dotted path to one number the twin uses:

- a **catalogue figure**: ``chips.a100-sxm.p_idle``, ``chips.a100-sxm.r_conv_ref``,
  ``sleds.gpu-server.overhead`` — any figure of any entry (the prior is the figure's value after
  the scenario's own ``catalog:`` and overlays); a bare field name (``p_idle``) means that
  field of every chip (or sled) kind the telemetry covers;
- a **scenario boundary**: ``site.cold_aisle``, ``site.facility_water_supply``,
  ``cdus.0.supply_temperature`` (inlet and coolant offsets);
- the **utilisation mapping**: ``telemetry.utilisation.busy``, ``telemetry.utilisation.held``
  (see :class:`twin.calibrate.spec.UtilisationMap`).

So the layer works with whatever fields the catalogue has: nothing here lists a chip's fields.
Default bounds come from :data:`BOUNDS` by field name (a factor around the prior, or an offset
for temperatures), narrowed so that the figures stay physically consistent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twin.catalog.model import KINDS
from twin.scenario.errors import FieldError
from twin.units import DIMENSIONS, QuantityError, parse_quantity

#: Dimensions tried, in order, to tell a catalogue figure's dimension from its value's units.
FIGURE_DIMENSIONS = ("temperature", "power", "thermal_resistance", "heat_capacity", "per_kelvin",
                     "volume_flow", "volume", "thermal_conductance", "energy", "time", "bandwidth",
                     "dimensionless")
#: Default bounds by field name: ("factor", lo, hi) × prior, ("offset", lo, hi) K around it, or
#: ("absolute", lo, hi) in SI. Leakage and resistance ranges span what DVFS parts and heat sinks
#: show (estimate); temperatures ±20 K cover any plausible inlet or coolant offset.
BOUNDS: dict[str, tuple[str, float, float]] = {
    "p_idle": ("factor", 0.25, 3.0),
    "p_leak_ref": ("factor", 0.05, 4.0),
    "leak_beta": ("absolute", 0.0, 0.06),
    "tdp": ("factor", 0.6, 1.4),
    "clock_exponent": ("absolute", 1.0, 4.0),
    "r_jc": ("factor", 0.2, 5.0),
    "r_conv_ref": ("factor", 0.2, 5.0),
    "c_die": ("factor", 0.1, 10.0),
    "c_plate": ("factor", 0.1, 10.0),
    "overhead": ("factor", 0.0, 3.0),
    "fan_power": ("factor", 0.0, 3.0),
    "air_flow": ("factor", 0.3, 3.0),
    "cold_aisle": ("offset", -20.0, 20.0),
    "facility_water_supply": ("offset", -20.0, 20.0),
    "supply_temperature": ("offset", -20.0, 20.0),
    "p_active_idle": ("factor", 0.25, 3.0),
    "busy": ("absolute", 0.05, 1.0),
    "held": ("absolute", 0.0, 0.9),
}
#: Fallback by dimension when the field is not in :data:`BOUNDS`.
DIMENSION_BOUNDS = {"temperature": ("offset", -20.0, 20.0), "dimensionless": ("factor", 0.2, 5.0)}
#: Largest share of a chip's TDP that idle or reference leakage may take (the catalogue requires
#: p_idle + p_leak_ref ≤ tdp; each bound at 0.45 keeps any pair inside it).
MAX_SHARE_OF_TDP = 0.45
#: Fittable scenario boundaries: path pattern → dimension (``N`` is a list index).
SCENARIO_FIELDS = {
    "site.cold_aisle": "temperature",
    "site.facility_water_supply": "temperature",
    "cdus.N.supply_temperature": "temperature",
}
#: The utilisation mapping's fields.
MAPPING_FIELDS = ("busy", "held")
#: Default parameters: idle and active-idle power, the heat sink, the inlet (air-cooled) or
#: coolant (liquid-cooled) offset, and the activity while busy (the utilisation mapping's
#: ``busy``). All identifiable from interval means of power, temperature and utilisation; r_jc and
#: r_conv_ref in series are not (so one of them), nor is leakage apart from idle power without a
#: spread of temperatures at equal load (add chips.KIND.p_leak_ref with --fit when the data has
#: one). A default that the chips' catalogue entry does not have is left out.
DEFAULTS_AIR = ("p_idle", "p_active_idle", "r_conv_ref", "site.cold_aisle", "telemetry.utilisation.busy")
DEFAULTS_LIQUID = ("p_idle", "p_active_idle", "r_conv_ref", "cdus.0.supply_temperature",
                   "telemetry.utilisation.busy")


@dataclass(frozen=True)
class Parameter:
    """One fitted number (SI inside)."""

    path: str
    kind: str  # catalog | scenario | mapping
    dimension: str
    prior: float
    lower: float
    upper: float
    prior_sigma: float = math.nan  # the figure's catalogue uncertainty, if any

    @property
    def field(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def units(self) -> str:
        """The SI unit the value is written in ('' for dimensionless)."""
        return DIMENSIONS[self.dimension][1]

    @property
    def delta_units(self) -> str:
        """Unit of a spread of this parameter (K for temperatures)."""
        return "K" if self.dimension == "temperature" else self.units

    @property
    def scale(self) -> float:
        """Typical size of a change: the prior's magnitude, or 1 K for a temperature, or the range."""
        if self.dimension == "temperature":
            return 1.0
        if self.prior != 0:
            return abs(self.prior)
        return (self.upper - self.lower) / 10.0

    def format(self, value: float) -> str | float:
        """``value`` as a catalogue quantity string (a plain number when dimensionless)."""
        if not self.units:
            return float(f"{value:.6g}")
        return f"{value:.6g} {self.units}"

    def format_delta(self, value: float) -> str | float:
        if not self.delta_units:
            return float(f"{value:.3g}")
        return f"{value:.3g} {self.delta_units}"


def figure_dimension(value) -> str:
    """The dimension of a catalogue figure from its value (``"0.04 K/W"`` → thermal_resistance)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "dimensionless"
    for dim in FIGURE_DIMENSIONS:
        try:
            parse_quantity(value, dim)
            return dim
        except QuantityError:
            continue
    raise ValueError(f"cannot tell the dimension of {value!r}")


def _bounds(field: str, dimension: str, prior: float) -> tuple[float, float]:
    how, lo, hi = BOUNDS.get(field) or DIMENSION_BOUNDS.get(dimension) or ("factor", 0.2, 5.0)
    if how == "factor":
        a, b = sorted((prior * lo, prior * hi))
    elif how == "offset":
        a, b = prior + lo, prior + hi
    else:
        a, b = lo, hi
    return a, b


def _catalog_parameter(path: str, catalog, where: tuple) -> Parameter:
    parts = path.split(".")
    if len(parts) != 3:
        raise FieldError(where, f"'{path}': a catalogue parameter is KIND.ENTRY.FIELD, e.g. chips.a100-sxm.p_idle")
    kind, name, field_name = parts
    table = getattr(catalog, kind)
    if name not in table:
        known = ", ".join(sorted(table)[:10])
        raise FieldError(where, f"'{path}': no {kind} entry '{name}' (known: {known}{', …' if len(table) > 10 else ''})")
    entry = table[name]
    figure = getattr(entry, field_name, None)
    if figure is None or not hasattr(figure, "si"):
        figures = [f for f in type(entry).model_fields if hasattr(getattr(entry, f, None), "si")]
        raise FieldError(where, f"'{path}': not a figure of {kind}.{name} (figures: {', '.join(figures)})")
    dim = figure_dimension(figure.value)
    prior = float(figure.si)
    lo, hi = _bounds(field_name, dim, prior)
    if kind == "chips" and field_name in ("p_idle", "p_leak_ref", "p_active_idle"):
        hi = min(hi, MAX_SHARE_OF_TDP * entry.tdp.si)
    sigma = float(getattr(figure, "si_uncertainty", math.nan))
    return Parameter(path, "catalog", dim, prior, lo, hi, sigma)


def _scenario_parameter(path: str, scenario, where: tuple) -> Parameter:
    parts = path.split(".")
    pattern = ".".join("N" if p.isdigit() else p for p in parts)
    if pattern not in SCENARIO_FIELDS:
        raise FieldError(where, f"'{path}': not a fittable scenario field (fittable: {', '.join(SCENARIO_FIELDS)})")
    node = scenario
    for p in parts:
        if p.isdigit():
            items = node
            if int(p) >= len(items):
                raise FieldError(where, f"'{path}': index {p} out of range ({len(items)} entries)")
            node = items[int(p)]
        else:
            node = getattr(node, p)
    prior = float(node)
    dim = SCENARIO_FIELDS[pattern]
    lo, hi = _bounds(parts[-1], dim, prior)
    return Parameter(path, "scenario", dim, prior, lo, hi)


def _mapping_parameter(path: str, telemetry, where: tuple) -> Parameter:
    parts = path.split(".")
    if len(parts) != 3 or parts[1] != "utilisation" or parts[2] not in MAPPING_FIELDS:
        raise FieldError(where, f"'{path}': the utilisation mapping has telemetry.utilisation.busy and .held")
    prior = float(getattr(telemetry.utilisation, parts[2]))
    lo, hi = _bounds(parts[2], "dimensionless", prior)
    return Parameter(path, "mapping", "dimensionless", prior, lo, hi)


def resolve(names, loaded, kinds: list[str], where: tuple = ("telemetry", "parameters"),
            bounds: dict | None = None) -> list[Parameter]:
    """Parameters for ``names`` (paths or bare field names) in a loaded scenario.

    Parameters
    ----------
    names : list of str
        Paths; a bare name is a field of each chip kind in ``kinds`` (or of the sleds holding
        them, when it is a sled field).
    loaded : LoadedScenario
    kinds : list of str
        Chip kinds of the devices with telemetry.
    bounds : dict, optional
        Path → (lower, upper) as quantities or numbers, replacing the default bounds.

    Raises
    ------
    FieldError
        An unknown path or field, a parameter named twice, or bad bounds.
    """
    catalog = loaded.catalog
    sleds = sorted({s for s, sled in catalog.sleds.items() if any(k in sled.devices for k in kinds)})
    out: list[Parameter] = []
    for i, name in enumerate(names):
        at = where + (i,)
        if "." not in name:
            chip_fields = type(catalog.chips[kinds[0]]).model_fields if kinds else {}
            if name in chip_fields:
                paths = [f"chips.{k}.{name}" for k in kinds]
            elif sleds and name in type(catalog.sleds[sleds[0]]).model_fields:
                paths = [f"sleds.{s}.{name}" for s in sleds]
            else:
                raise FieldError(at, f"'{name}': not a field of the chips ({', '.join(kinds)}) or their sleds; "
                                     "give a path such as chips.KIND.FIELD or site.cold_aisle")
        else:
            paths = [name]
        for path in paths:
            head, _, rest = path.partition(".")
            if head == "telemetry":
                p = _mapping_parameter(path, loaded.scenario.telemetry, at)
            elif head == "site" or (head == "cdus" and rest.split(".")[0].isdigit()):
                p = _scenario_parameter(path, loaded.scenario, at)
            elif head in KINDS:
                p = _catalog_parameter(path, catalog, at)
            else:
                raise FieldError(at, f"'{path}': unknown parameter (catalogue KIND.ENTRY.FIELD, "
                                     f"{', '.join(SCENARIO_FIELDS)}, telemetry.utilisation.busy|held)")
            if any(q.path == p.path for q in out):
                raise FieldError(at, f"'{p.path}' is named twice")
            out.append(p)
    for path, (lo, hi) in (bounds or {}).items():
        k = next((j for j, p in enumerate(out) if p.path == path), None)
        if k is None:
            raise FieldError(("telemetry", "bounds", path), f"'{path}' is not a fitted parameter "
                                                             f"({', '.join(p.path for p in out)})")
        p = out[k]
        try:
            a = parse_quantity(lo, p.dimension)
            b = parse_quantity(hi, p.dimension)
        except QuantityError as exc:
            raise FieldError(("telemetry", "bounds", path), str(exc)) from None
        if not a < b:
            raise FieldError(("telemetry", "bounds", path), f"lower bound {lo!r} must be below upper {hi!r}")
        out[k] = Parameter(p.path, p.kind, p.dimension, p.prior, a, b, p.prior_sigma)
    for i, p in enumerate(out):
        if not p.lower <= p.prior <= p.upper:
            raise FieldError(where, f"'{p.path}': prior {p.format(p.prior)} is outside its bounds "
                                    f"[{p.format(p.lower)}, {p.format(p.upper)}]")
    return out


def default_names(loaded, kinds: list[str]) -> list[str]:
    """The default parameter set for the chip kinds with telemetry (see :data:`DEFAULTS_AIR`)."""
    liquid = any(loaded.catalog.chips[k].cooling == "liquid" for k in kinds)
    names = list(DEFAULTS_LIQUID if liquid else DEFAULTS_AIR)
    if liquid and not loaded.scenario.cdus:
        names.remove("cdus.0.supply_temperature")
    chips = [loaded.catalog.chips[k] for k in kinds]
    return [n for n in names if "." in n or all(getattr(c, n, None) is not None for c in chips)]
