"""``twin schema``: the JSON Schema of the scenario format."""

from __future__ import annotations

import sys


def schema():
    """Print the JSON Schema of the scenario format (for editor autocompletion)."""
    from twin.scenario import scenario_json_schema

    sys.stdout.write(scenario_json_schema() + "\n")
