"""Scenario files: pydantic models of the YAML, a loader that reports file:line errors, JSON Schema."""

from twin.scenario.errors import ScenarioError
from twin.scenario.loader import LoadedScenario, load_scenario, scenario_json_schema
from twin.scenario.model import Scenario

__all__ = ["LoadedScenario", "Scenario", "ScenarioError", "load_scenario", "scenario_json_schema"]
