"""The registry of quantities: every variable any component can write, from their declarations.

:data:`COMPONENT_TYPES` lists the component classes (a new component of the thermal step is
registered here, one line; the plant's equipment registers itself with a ``plant_stage`` and is
found in its module: :func:`twin.cooling.equipment.plant_equipment`);
:data:`DECLARED` maps ``"group.name"`` to its :class:`~twin.sim.component.Var`;
:data:`VARIABLES` (group → name → (units, long_name)) holds the recorded ones for the dataset
attributes, the Prometheus help text, the scenario's ``record.variables`` check and the README
variable table (:func:`variable_table`). A variable has one definition: two classes that write
the same key must declare the same :class:`Var` (e.g. the two CDU implementations). These names
are made on first use; the declarations come from the on-disk cache while no source file changes
(:func:`_registry`), so a run imports only the components it builds.

Every recorded value is the mean over its recording interval (powers and temperatures alike), so
interval energies are exact; ratios (``pue``) are ratios of the interval-mean powers; categorical
variables (``last``, e.g. a job's ``state``) hold the value at the end of the interval.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from twin.scenario.errors import FieldError
from twin.sim.component import GROUPS, Var

#: Names of this module computed on first use: the classes (which imports every module of the
#: plant's equipment, their pydantic option models among them), and the declarations, which a
#: run reads from the on-disk cache while no source file changes (:func:`_registry`).
_LAZY = ("PLANT_EQUIPMENT", "CDU_MODELS", "COMPONENT_TYPES", "DECLARED", "VARIABLES")


def _plant_equipment() -> tuple[type, ...]:
    """The plant's equipment classes in step order (found in their modules)."""
    from twin.cooling.equipment import plant_equipment

    return plant_equipment()


def _cdu_models() -> dict[str, type]:
    """CDU models without a plant, by the catalogue CDU ``kind`` they bring in (each declares its
    ``cdu_kind`` and is found in its module); a scenario's CDUs use the model of their one kind
    other than liquid_to_liquid (which every model handles too)."""
    from twin.cooling.equipment import cdu_models

    return cdu_models()


def _component_types() -> tuple[type, ...]:
    """Component classes, in the order their variables are listed."""
    from twin.network.component import NetworkPower
    from twin.power.chain import PowerChain
    from twin.power.chips import ChipPower, Governors
    from twin.power.shelves import Shelves
    from twin.thermal.racks import RackThermal
    from twin.workload.components import Demand, JobAccounting

    cdu = _cdu_models()
    return (
        NetworkPower, Shelves, PowerChain, cdu["liquid_to_liquid"], *_plant_equipment(),
        *(m for k, m in cdu.items() if k != "liquid_to_liquid"), RackThermal, ChipPower, Governors,
        Demand, JobAccounting,
    )


def _declared(types) -> dict[str, Var]:
    out: dict[str, Var] = {}
    for cls in types:
        for var in getattr(cls, "VARIABLES", None) or cls.outputs:
            if var.key in out and out[var.key] != var:
                raise ValueError(f"{var.key} is declared twice, differently: {out[var.key]} and {var}")
            out[var.key] = var
    return out


def _from_classes() -> dict:
    types = _component_types()
    plant = _plant_equipment()
    return {
        "declared": _declared(types),
        "writers": [(cls.__name__, [v.key for v in (getattr(cls, "VARIABLES", None) or cls.outputs)])
                    for cls in types],
        "plant": [cls.__name__ for cls in plant],
        "cdu_models": {k: f"{m.__module__}:{m.__qualname__}" for k, m in _cdu_models().items()},
    }


@functools.cache
def _registry() -> dict:
    """The declarations found in the component classes: ``declared`` ("group.name" → Var),
    ``writers`` ((class name, keys it writes), in class order), ``plant`` (names of the plant's
    equipment classes) and ``cdu_models`` (kind → ``module:class``).

    Finding them imports every component module, the plant's equipment among them (~0.1 CPU-s
    and pydantic); they are a function of the package's source alone, so they are kept in the
    on-disk cache (:mod:`twin.cache`) under a digest of its source files (path, size,
    modification time) and the Python version, and read back from there."""
    from twin import cache

    digest = cache.key("variables", cache.source_signature(Path(__file__).parents[1]), sys.version)
    found = cache.load_object("variables", digest)
    if isinstance(found, dict) and set(found) == {"declared", "writers", "plant", "cdu_models"}:
        return found
    found = _from_classes()
    cache.store_object("variables", digest, found)
    return found


def cdu_model(kind: str) -> type:
    """The CDU model without a plant for catalogue CDU ``kind`` (its module imported alone)."""
    import importlib

    module, _, name = _registry()["cdu_models"][kind].partition(":")
    return getattr(importlib.import_module(module), name)


def plant_classes() -> frozenset[str]:
    """Names of the plant's equipment classes (their variables are recorded only with a plant)."""
    return frozenset(_registry()["plant"])


def __getattr__(name: str):
    if name == "PLANT_EQUIPMENT":  # the plant's equipment classes in step order
        value = _plant_equipment()
    elif name == "CDU_MODELS":  # CDU models without a plant by kind (see _cdu_models)
        value = _cdu_models()
    elif name == "COMPONENT_TYPES":
        value = _component_types()
    elif name == "DECLARED":  # every declared variable, recorded or internal: "group.name" → Var
        value = _registry()["declared"]
    elif name == "VARIABLES":  # recorded variables: group → name → (UDUNITS units, long_name)
        declared = _registry()["declared"]
        value = {g: {v.name: (v.units, v.long_name) for v in declared.values() if v.group == g and v.record}
                 for g in GROUPS}
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def writers(key: str) -> list[str]:
    """Names of the component classes that can write variable ``key``."""
    return [name for name, keys in _registry()["writers"] if key in keys]


def variable_table() -> str:
    """The README's variable table (Markdown), generated from the declarations."""
    lines = ["| group | variable | units | meaning | written by |", "| --- | --- | --- | --- | --- |"]
    for group, names in __getattr__("VARIABLES").items():
        for name, (units, long_name) in names.items():
            by = ", ".join(writers(f"{group}.{name}"))
            lines.append(f"| {group} | `{name}` | {units} | {long_name} | {by} |")
    return "\n".join(lines)


def check_recorded(scenario) -> None:
    """The scenario's ``record.variables`` name recorded variables.

    Raises
    ------
    FieldError
        At ``record.variables.<group>[k]``, naming the known variables.
    """
    for group, names in scenario.record.variables.items():
        known = __getattr__("VARIABLES")[group]
        for k, var in enumerate(names):
            if var not in known:
                raise FieldError(("record", "variables", group, k),
                                 f"unknown variable '{var}' (known: {', '.join(known)})")
