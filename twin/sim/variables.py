"""The registry of quantities: every variable any component can write, from their declarations.

:data:`COMPONENT_TYPES` lists the component classes (a new component of the thermal step is
registered here, one line; the plant's equipment registers itself with a ``plant_stage`` and is
found in its module: :func:`twin.cooling.equipment.plant_equipment`);
:data:`DECLARED` maps ``"group.name"`` to its :class:`~twin.sim.component.Var`;
:data:`VARIABLES` (group → name → (units, long_name)) holds the recorded ones for the dataset
attributes, the Prometheus help text, the scenario's ``record.variables`` check and the README
variable table (:func:`variable_table`). A variable has one definition: two classes that write
the same key must declare the same :class:`Var` (e.g. the two CDU implementations).

Every recorded value is the mean over its recording interval (powers and temperatures alike), so
interval energies are exact; ratios (``pue``) are ratios of the interval-mean powers; categorical
variables (``last``, e.g. a job's ``state``) hold the value at the end of the interval.
"""

from __future__ import annotations

from twin.cooling.equipment import cdu_models, plant_equipment
from twin.network.component import NetworkPower
from twin.power.chain import PowerChain
from twin.power.chips import ChipPower, Governors
from twin.power.shelves import Shelves
from twin.scenario.errors import FieldError
from twin.sim.component import GROUPS, Var
from twin.thermal.racks import RackThermal
from twin.workload.components import Demand, JobAccounting

#: The plant's equipment classes in step order (found in their modules).
PLANT_EQUIPMENT: tuple[type, ...] = plant_equipment()

#: CDU models without a plant, by the catalogue CDU ``kind`` they bring in (each declares its
#: ``cdu_kind`` and is found in its module); a scenario's CDUs use the model of their one kind
#: other than liquid_to_liquid (which every model handles too).
CDU_MODELS: dict[str, type] = cdu_models()

#: Component classes, in the order their variables are listed.
COMPONENT_TYPES: tuple[type, ...] = (
    NetworkPower, Shelves, PowerChain, CDU_MODELS["liquid_to_liquid"], *PLANT_EQUIPMENT,
    *(m for k, m in CDU_MODELS.items() if k != "liquid_to_liquid"), RackThermal, ChipPower, Governors,
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


#: Every declared variable, recorded or internal: "group.name" → Var.
DECLARED: dict[str, Var] = _declared(COMPONENT_TYPES)

#: Recorded variables: group → name → (UDUNITS units, long_name).
VARIABLES: dict[str, dict[str, tuple[str, str]]] = {
    g: {v.name: (v.units, v.long_name) for v in DECLARED.values() if v.group == g and v.record}
    for g in GROUPS
}


def writers(key: str) -> list[str]:
    """Names of the component classes that can write variable ``key``."""
    return [cls.__name__ for cls in COMPONENT_TYPES
            if any(v.key == key for v in (getattr(cls, "VARIABLES", None) or cls.outputs))]


def variable_table() -> str:
    """The README's variable table (Markdown), generated from the declarations."""
    lines = ["| group | variable | units | meaning | written by |", "| --- | --- | --- | --- | --- |"]
    for group, names in VARIABLES.items():
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
        known = VARIABLES[group]
        for k, var in enumerate(names):
            if var not in known:
                raise FieldError(("record", "variables", group, k),
                                 f"unknown variable '{var}' (known: {', '.join(known)})")
