"""Scenario files: pydantic models of the YAML, a loader that reports file:line errors, JSON Schema.

The names below are imported on first use (PEP 562), so that importing
:mod:`twin.scenario.errors` (which every part of the simulator does) does not import the loader,
pydantic and the models.
"""

from twin.scenario.errors import ScenarioError

_LAZY = {"LoadedScenario": "twin.scenario.loader", "load_scenario": "twin.scenario.loader",
         "scenario_json_schema": "twin.scenario.loader", "Scenario": "twin.scenario.model"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["LoadedScenario", "Scenario", "ScenarioError", "load_scenario", "scenario_json_schema"]
