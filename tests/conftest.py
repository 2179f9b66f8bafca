"""Shared fixtures: tiny in-code scenarios and a runner."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import yaml

# No terminal size from the environment: the tests' output is piped, and the command line's output
# must not depend on a terminal's width. GNU readline, initialised in pytest's process without a
# terminal, exports COLUMNS=80 and LINES=24 to the C environment: pytest-xdist's workers and any
# command a test starts would inherit them, and rich would wrap the printed tables there and
# nowhere else. Tests that need a width set it themselves.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)
    os.unsetenv(_name)

from twin.scenario import load_scenario  # noqa: E402
from twin.sim.driver import Simulation  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"

#: A one-chip liquid-cooled test system: chip, sled and rack defined in the scenario itself.
ONE_CHIP_CATALOG = {
    "chips": {
        "testchip": {
            "description": "test chip", "role": "accelerator", "cooling": "liquid",
            "tdp": {"value": "1000 W", "source": "estimate"},
            "p_idle": {"value": "100 W", "source": "estimate"},
            "t_idle": {"value": "35 degC", "source": "estimate"},
            "idle_leak_fraction": {"value": 0.3, "source": "estimate"},
            "p_active_idle": {"value": "100 W", "source": "estimate"},
            "p_leak_ref": {"value": "0 W", "source": "estimate"},
            "t_ref": {"value": "60 degC", "source": "estimate"},
            "leak_beta": {"value": "0 1/K", "source": "estimate"},
            "clock_exponent": {"value": 2.5, "source": "estimate"},
            "t_throttle": {"value": "200 degC", "source": "estimate"},
            "t_shutdown": {"value": "250 degC", "source": "estimate"},
            "throttle_hysteresis": {"value": "3 K", "source": "estimate"},
            "r_jc": {"value": "0.015 K/W", "source": "estimate"},
            "r_conv_ref": {"value": "0.015 K/W", "source": "estimate"},
            "flow_ref": {"value": "1.5 L/min", "source": "estimate"},
            "c_die": {"value": "30 J/K", "source": "estimate"},
            "c_plate": {"value": "300 J/K", "source": "estimate"},
        }
    },
    "sleds": {
        "testsled": {
            "description": "one test chip",
            "devices": {"testchip": {"value": 1, "source": "estimate"}},
            "overhead": {"value": "0 W", "source": "estimate"},
            "fan_power": {"value": "0 W", "source": "estimate"},
            "air_flow": {"value": "0.01 m**3/s", "source": "estimate"},
            "coolant_volume": {"value": "0.1 L", "source": "estimate"},
            "c_chassis": {"value": "100 J/K", "source": "estimate"},
        }
    },
    # A CDU whose pumps follow the affinity law (no pump curve in the entry): the one-chip cases
    # compute their facility power by hand with a pump power that vanishes at their tiny flow.
    "cdus": {
        "testcdu": {
            "description": "test CDU, affinity-law pumps",
            "capacity": {"value": "1350 kW", "source": "estimate"},
            "approach": {"value": "3 K", "source": "estimate"},
            "design_flow": {"value": "2000 L/min", "source": "estimate"},
            "pump_power": {"value": "15 kW", "source": "estimate"},
            "ua": {"value": "450 kW/K", "source": "estimate"},
            "primary_flow": {"value": "2000 L/min", "source": "estimate"},
            "secondary_volume": {"value": "500 L", "source": "estimate"},
        }
    },
    "racks": {
        "testrack": {
            "description": "one test sled",
            "sleds": {"testsled": {"value": 1, "source": "estimate"}},
            "power_shelf": "orv3-hpr-33kw",
            "shelves": {"value": 1, "source": "estimate"},
            "coolant_flow": {"value": "1.5 L/min", "source": "estimate"},
        }
    },
}


def write_scenario(tmp_path: Path, data: dict | str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    path.write_text(textwrap.dedent(text) if isinstance(data, str) else text)
    return path


def one_chip_scenario(workload, duration="120 s", catalog=None, **extra) -> dict:
    data = {
        "name": "one-chip",
        "time": {"duration": duration, "step": "1 s"},
        "site": {"facility_water_supply": "20 degC", "cold_aisle": "25 degC"},
        "cdus": [{"name": "c", "template": "testcdu", "supply_temperature": "30 degC"}],
        "halls": [{"name": "h", "rows": [{"name": "r", "racks": [
            {"name": "k", "template": "testrack", "cdu": "c"}]}]}],
        "workload": workload,
        "record": {"facility": "1 s", "cdu": "1 s", "rack": "1 s", "sled": "1 s", "device": "1 s"},
        "catalog": catalog or ONE_CHIP_CATALOG,
    }
    data.update(extra)
    return data


@pytest.fixture
def run_scenario(tmp_path):
    """Load and run a scenario (dict or path); return the finished Simulation."""

    def run(data, overrides=None, solver="fast"):
        path = data if isinstance(data, Path) else write_scenario(tmp_path, data)
        sim = Simulation(load_scenario(path, overrides), solver=solver)
        sim.run()
        return sim

    return run


def _shared_fixture_groups(items) -> dict:
    """Which tests must run on one worker so the fixtures they share are computed once: a module's
    tests when one of them uses a module-scoped fixture of the tests, and every module whose tests
    use one session-scoped fixture of the tests (or carry one explicit ``xdist_group``), joined.
    Returns {item: group name} for the tests that share something."""
    parent: dict = {}

    def find(key):
        while parent.setdefault(key, key) != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:  # an explicit or session name represents the group, not a module's path
            ra, rb = (ra, rb) if not ra.endswith(".py") else (rb, ra)
            parent[rb] = ra

    shared = set()
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        names = [m.args[0] if m.args else m.kwargs.get("name", "default")
                 for m in item.iter_markers("xdist_group")]
        info = getattr(item, "_fixtureinfo", None)
        for defs in (info.name2fixturedefs.values() if info else ()):
            d = defs[-1]
            if d.scope == "function" or not d.baseid.startswith("tests"):  # not a plugin's (tmp_path_factory)
                continue
            names.append(module if d.scope in ("module", "class") else f"fixture-{d.argname}")
        for name in names:
            union(name, module)
            shared.add(module)
    return {item: find(item.nodeid.split("::", 1)[0]) for item in items
            if item.nodeid.split("::", 1)[0] in shared}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the marks
def pytest_collection_modifyitems(config, items):
    """When the suite runs on several processes (pytest-xdist, ``--dist loadgroup``), tests that share
    a module- or session-scoped fixture run on one worker, so the fixture is computed once; the
    other tests go to whichever worker is free. Without xdist this changes nothing. pytest-xdist
    3.8 reads the marks by renaming node ids, which pytest 9.2 no longer allows: there the marks
    are ignored (pytest-dev/pytest-xdist#1386) and ``--dist loadfile`` groups by file instead."""
    for item, group in _shared_fixture_groups(items).items():
        if not any(True for _ in item.iter_markers("xdist_group")):
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_sessionstart(session):
    """A path on the command line that does not exist is an error, as without workers: under
    pytest-xdist the controlling process collects nothing itself, and the workers' "not found"
    would otherwise end the run as "no tests ran" (exit 5) without saying why."""
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    if config.args_source is not pytest.Config.ArgsSource.ARGS:  # testpaths or the current folder
        return
    here = Path(config.invocation_params.dir)
    for arg in config.args:
        if not (here / arg.split("::", 1)[0]).exists():
            pytest.exit(f"file or directory not found: {arg}", returncode=4)
