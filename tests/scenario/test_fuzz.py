"""Property-based fuzzing of scenario input (hypothesis).

Two generators: scenarios built from the schema's parts with hostile values, and mutations of
every bundled scenario (a value replaced by an extreme, NaN, a wrong unit, a list or a mapping, a
key dropped or misspelled, a list item duplicated). The property, for every input:

- it is refused — ``twin run`` exits 2 with one line ``FILE:LINE: field.path: message`` and
  writes nothing; or
- it loads, builds and runs a few steps, and every recorded value is finite and physical
  (temperatures above absolute zero and below 1,000 degC, powers and flows not negative).

Examples are bounded and derandomized, so the suite stays fast and reproducible; set
``TWIN_FUZZ_EXAMPLES`` for a longer campaign.
"""

from __future__ import annotations

import copy
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.conftest import SCENARIOS
from twin.cli import app
from twin.scenario import ScenarioError, load_scenario
from twin.sim.driver import Simulation
from twin.sim.resources import check_loaded
from twin.units import parse_quantity

#: Examples per generator (per bundled scenario for the mutations); TWIN_FUZZ_EXAMPLES=200 for a
#: campaign. Derandomized and without shrinking: a failure prints its first example.
EXAMPLES = int(os.environ.get("TWIN_FUZZ_EXAMPLES", "3"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                phases=(Phase.explicit, Phase.generate),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
BUNDLED = sorted(p for p in SCENARIOS.glob("*.yaml") if not p.name.startswith("sweep"))
ONE_LINE = re.compile(r"(.+?):(\d+): (\S+): (.+)")
#: Devices above which a valid input is only loaded, not run (keeps each example short).
RUN_DEVICES = 6000
STATS: dict[str, int] = {}

# -- values ------------------------------------------------------------------------------------
NUMBERS = st.one_of(
    st.sampled_from([0, -1, 1, 0.5, 1e-12, 1e12, 1e308, -1e308, 2**63, 2**64, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-10**6, max_value=10**6),
)
UNITS = st.sampled_from(["", " W", " kW", " MW", " degC", " K", " degF", " s", " ms", " h", " min",
                         " us", " L/min", " m**3/s", " USD/kWh", " kg", " parsecs", " 1/s", " %",
                         " MB", " W/s"])
QUANTITY = st.builds(lambda n, u: f"{n}{u}", NUMBERS, UNITS)
HOSTILE = st.one_of(
    st.sampled_from([None, True, False, "", " ", "nan", ".inf", "nan degC", "inf L/min", "-300 degC",
                     "150 degC", "0 L/min", "1e400 W", "1e308 s", "9" * 120, "1" * 60 + " W",
                     ":x: [bold]", "../../../../etc/passwd", "/proc/self/environ", "/dev/zero",
                     [1, 2], {"a": 1}, [], {}, [[[[]]]], "a" * 300]),
    QUANTITY, NUMBERS, st.text(max_size=20),
)


# -- the property -----------------------------------------------------------------------------------
def _check_refused(path: Path, tmp: Path) -> None:
    out = tmp / "fuzz-result.nc"
    result = CliRunner().invoke(app, ["run", str(path), "-o", str(out)])
    assert result.exit_code == 2, (result.exit_code, result.output[-3000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[-3000:]
    assert ONE_LINE.fullmatch(lines[0]), lines[0]
    assert len(lines[0]) < 2000
    assert "Traceback" not in result.output
    assert not out.exists() and not any(p.name.startswith(".fuzz-result") for p in tmp.iterdir())


def _check_runs(loaded) -> None:
    sim = Simulation(loaded)
    sim.n_steps = min(sim.n_steps, 3)  # a few steps of whatever the scenario asks
    with np.errstate(all="raise"):
        sim.run()
    snapshot = sim.recorder.snapshot()
    # Coolant temperatures of what carries no coolant (air-cooled racks, an idle CDU) are NaN:
    # not applicable, by design. Everything else must be a finite number.
    no_liquid = {"rack": sim.system.rack_m_coolant == 0}
    if "cdu" in snapshot and "flow" in snapshot["cdu"]:
        no_liquid["cdu"] = np.asarray(snapshot["cdu"]["flow"]) == 0
    for group, variables in snapshot.items():
        for name, values in variables.items():
            values = np.array(values, dtype=float)
            if group in no_liquid and name in ("t_coolant_supply", "t_coolant_return", "t_return", "t_supply"):
                values = np.where(np.broadcast_to(no_liquid[group], values.shape), 0.0, values)
            if name == "pue":
                values = values[~np.isnan(values)]  # undefined while no IT power is drawn
            if (group, name) == ("device", "t_hbm"):  # NaN for devices without an HBM node
                values = values[..., np.isfinite(sim.racks.t_hbm_peak)]
            assert np.isfinite(values).all(), (group, name, values)
            if name.startswith("t_"):
                assert (values > -273.15).all() and (values < 1000.0).all(), (group, name, values)
            if name.startswith(("p_", "flow", "q")) or name == "p":
                assert (values >= -1e-6).all(), (group, name, values)
    assert np.isfinite(sim.t_die).all()


def _property(data: dict, tmp: Path, name: str = "fuzz.yaml") -> None:
    path = tmp / name
    try:
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, RecursionError):
        return
    path.write_text(text)
    try:
        try:
            loaded = load_scenario(path)
            check_loaded(loaded)  # the resource estimate, as `twin run` checks it after loading
        except ScenarioError as exc:
            STATS["refused"] = STATS.get("refused", 0) + 1
            # What `twin run` prints (one line, exit 2, before anything is written; the CLI
            # path itself is checked for refusals found when the system is built, below).
            line = str(exc)
            assert "\n" not in line and len(line) < 2000 and ONE_LINE.fullmatch(line), line
            assert line.startswith(f"{path}:"), line
            return
        if loaded.estimate.devices > RUN_DEVICES:
            STATS["validated only (large)"] = STATS.get("validated only (large)", 0) + 1
            return
        try:
            _check_runs(loaded)
        except ScenarioError:  # found when the system is built (weather spans, placement)
            STATS["refused at build"] = STATS.get("refused at build", 0) + 1
            _check_refused(path, tmp)
            return
        STATS["ran"] = STATS.get("ran", 0) + 1
    finally:
        path.unlink(missing_ok=True)


# -- generator 1: the schema's parts with hostile values ------------------------------------------
def _scenario(duration, step, supply, water, aisle, flow, count, u, seed, price, interval, extra):
    rack = {"name": "k", "template": "gb300-nvl72", "cdu": "c1", "count": count}
    if flow is not None:
        rack["coolant_flow"] = flow
    data = {
        "name": "fuzz",
        "time": {"duration": duration, "step": step},
        "site": {"facility_water_supply": water, "cold_aisle": aisle},
        "cdus": [{"name": "c1", "supply_temperature": supply}],
        "halls": [{"name": "h", "rows": [{"name": "r", "racks": [rack]}]}],
        "workload": [{"select": {"kind": ["gb300"]}, "u": u}],
        "record": {"facility": interval, "rack": interval, "device": interval},
        "seed": seed,
    }
    if price is not None:
        data["electricity_price"] = price
    data.update(extra)
    return data


GOODISH_TIME = st.sampled_from(["30 s", "2 min", "1 h", "10 s"])
SCHEMA = st.builds(
    _scenario,
    duration=st.one_of(GOODISH_TIME, HOSTILE),
    step=st.one_of(st.sampled_from(["1 s", "2 s", "500 ms"]), HOSTILE),
    supply=st.one_of(st.sampled_from(["30 degC", "40 degC", "60 degC"]), HOSTILE),
    water=st.one_of(st.sampled_from(["25 degC", "32 degC"]), HOSTILE),
    aisle=st.one_of(st.sampled_from(["22 degC", "27 degC"]), HOSTILE),
    flow=st.one_of(st.none(), st.sampled_from(["80 L/min", "5 L/min"]), HOSTILE),
    count=st.one_of(st.integers(min_value=1, max_value=3), HOSTILE),
    u=st.one_of(st.floats(0, 1), HOSTILE),
    seed=st.one_of(st.integers(min_value=0, max_value=2**63 - 1), HOSTILE),
    price=st.one_of(st.none(), st.sampled_from(["0.08 USD/kWh"]), HOSTILE),
    interval=st.one_of(st.sampled_from(["1 s", "10 s", "off"]), HOSTILE),
    extra=st.dictionaries(st.sampled_from(["events", "jobs", "plant", "workload_step", "description",
                                           "typo_key", "catalog"]), HOSTILE, max_size=2),
)


@FUZZ
@given(data=SCHEMA)
def test_schema_fuzz(tmp_path_factory, data):
    _property(data, tmp_path_factory.mktemp("fuzz"))


# -- generator 2: mutations of every bundled scenario -------------------------------------------------
def _paths(node, path=()):
    """Every place in the YAML data: (path, value)."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, path + (i,))


def _mutate(data, path, how, value):
    data = copy.deepcopy(data)
    if not path:
        return value if how == "replace" else data
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if how == "replace":
        parent[last] = value
    elif how == "delete":
        del parent[last]
    elif how == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[last]))
    elif how == "misspell" and isinstance(parent, dict):
        parent[f"{last}x" if isinstance(last, str) else last] = parent.pop(last)
    elif how == "scale" and isinstance(parent[last], (int, float)) and not isinstance(parent[last], bool):
        parent[last] = parent[last] * value if isinstance(value, (int, float)) else parent[last]
    return data


def _loaded_data(path: Path) -> dict:
    """A bundled scenario's data, with the files it names made absolute (mutants live elsewhere)."""
    data = yaml.safe_load(path.read_text())

    def absolute(value):
        return str(path.parent / value) if isinstance(value, str) and (path.parent / value).is_file() else value

    data["overlays"] = [absolute(v) for v in data.get("overlays") or []] or data.pop("overlays", None)
    if data.get("overlays") is None:
        data.pop("overlays", None)
    for rule in data.get("workload") or []:
        if "replay" in rule:
            rule["replay"] = absolute(rule["replay"])
    for job in data.get("jobs") or []:
        if "trace" in job:
            job["trace"] = absolute(job["trace"])
    weather = (data.get("plant") or {}).get("weather") or {}
    if "file" in weather:
        weather["file"] = absolute(weather["file"])
    return data


@pytest.mark.parametrize("scenario", BUNDLED, ids=[p.name for p in BUNDLED])
def test_mutations_of_bundled_scenarios(scenario, tmp_path_factory):
    base = _loaded_data(scenario)
    places = [p for p, _ in _paths(base) if p]
    # A short run of each: the scenario's own step, cut to two minutes (or three steps).
    step = parse_quantity(base["time"].get("step", "1 s"), "time")
    base["time"]["duration"] = f"{max(120.0, 3 * step):g} s"
    base.pop("events", None)  # event times beyond two minutes would only be refused

    @FUZZ
    @given(where=st.sampled_from(places),
           how=st.sampled_from(["replace", "replace", "replace", "delete", "duplicate", "misspell", "scale"]),
           value=st.one_of(HOSTILE, st.sampled_from([0, -1, 1000, 1e6, 0.001])))
    def check(where, how, value):
        try:
            mutant = _mutate(base, where, how, value)
        except (KeyError, IndexError, TypeError):
            return  # the place went away with the events or the time cut
        _property(mutant, tmp_path_factory.mktemp("mut"), name=f"mut-{scenario.name}")

    check()


def test_zz_report_stats():
    """Summary of what the fuzzers saw (printed with -s); each outcome must have happened."""
    print("fuzz outcomes:", dict(sorted(STATS.items())))
    assert STATS.get("refused", 0) > 0 and STATS.get("ran", 0) > 0, STATS
    assert math.fsum(STATS.values()) >= EXAMPLES
