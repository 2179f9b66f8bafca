"""Impossible numbers, hostile YAML and unsafe file references are refused at load.

Each case is a defect found by attacking the twin (it ran, crashed late, or printed a traceback
or a file's content); each must now be one line ``FILE:LINE: field.path: message``, exit 2, no
output file, before anything is computed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from tests.scenario.test_bad_input import GOOD
from twin.cli import app
from twin.scenario import ScenarioError, load_scenario
from tests.conftest import SCENARIOS as SCENARIOS_DIR
from twin.limits import LIMITS

CDU = "  - name: c1\n"
RACK = "            cdu: c1\n"
JOB = "  - {kind: cpu, name: %s, devices: {kind: gb300}, profile: [{at: 0 s, u: 0.5}]}\n"

# (id, scenario text, expected line, expected field path, message regex)
CASES = [
    # Non-finite and out-of-range quantities (they ran to NaN/inf outputs, or overflowed late).
    ("nan-cdu-supply", GOOD.replace(CDU, CDU + "    supply_temperature: nan degC\n"), 7,
     "cdus[0].supply_temperature", r"'nan degC' is not a finite number"),
    ("nan-facility-water", GOOD + "site: {facility_water_supply: nan degC}\n", 18,
     "site.facility_water_supply", r"not a finite number"),
    ("nan-cold-aisle", GOOD + "site: {cold_aisle: NaN degC}\n", 18, "site.cold_aisle", r"not a finite number"),
    ("hot-supply", GOOD.replace(CDU, CDU + "    supply_temperature: 150 degC\n"), 7,
     "cdus[0].supply_temperature", r"'150 degC' is outside 5 degC to 70 degC \(ASHRAE"),
    ("below-absolute-zero", GOOD + "site: {facility_water_supply: -300 degC}\n", 18,
     "site.facility_water_supply", r"below absolute zero"),
    ("cold-site", GOOD + "site: {cold_aisle: -40 degC}\n", 18, "site.cold_aisle",
     r"outside 0 degC to 50 degC \(ASHRAE A1-A4"),
    ("inf-flow", GOOD.replace(RACK, RACK + "            coolant_flow: inf L/min\n"), 15,
     "halls[0].rows[0].racks[0].coolant_flow", r"not a finite number"),
    ("zero-flow", GOOD.replace(RACK, RACK + "            coolant_flow: 0 L/min\n"), 15,
     "halls[0].rows[0].racks[0].coolant_flow", r"must be positive"),
    ("river-flow", GOOD.replace(RACK, RACK + "            coolant_flow: 5 m**3/s\n"), 15,
     "halls[0].rows[0].racks[0].coolant_flow", r"outside 0 L/min to 2000 L/min"),
    ("inf-price", GOOD + "electricity_price: inf USD/kWh\n", 18, "electricity_price", r"not a finite number"),
    ("price-too-high", GOOD + "electricity_price: 1e6 USD/kWh\n", 18, "electricity_price",
     r"outside 0 USD/kWh to 100 USD/kWh"),
    ("5000-digit-price", GOOD + "electricity_price: " + "9" * 5000 + " USD/kWh\n", 18, "<document>",
     r"a number with more than 100 digits"),
    ("1e400-power", GOOD.replace(RACK, RACK + "            power_limit: 1e400 W\n"), 15,
     "halls[0].rows[0].racks[0].power_limit", r"not a finite number"),
    ("huge-record-interval", GOOD + "record: {cdu: 1e308 s}\n", 18, "record.cdu",
     r"outside 0 s to 3\.15576e\+09 s"),
    ("26-digit-seed", GOOD + "seed: 12345678901234567890123456\n", 18, "seed",
     r"less than or equal to 9223372036854775807"),
    ("inf-time-scale", GOOD + "jobs:\n  - {kind: inference, name: i, devices: {kind: gb300}, "
     "model: {params: 7e9}, arrivals: {rate: 1 1/s}, time_scale: .inf}\n", 19, "jobs[0].time_scale",
     r"finite number"),
    ("nan-fraction", GOOD.replace("u: 0.5", "u: .nan"), 17, "workload[0].u", r"finite number"),
    ("nan-setpoint-event", GOOD + "events:\n  - {at: 1 s, kind: setpoint_change, target: c1, value: nan degC}\n",
     19, "events[0].value", r"not a finite number"),
    ("nan-weather", GOOD + "plant: {weather: {kind: constant, t_dry_bulb: nan degC}}\n", 18,
     "plant.weather.t_dry_bulb", r"not a finite number"),
    # Where a quantity goes: a list, a mapping, a set (unhashable type), a boolean.
    ("list-for-quantity", GOOD + "electricity_price: [1, 2]\n", 18, "electricity_price", r"got a list"),
    ("map-for-quantity", GOOD + "site: {cold_aisle: {a: 1}}\n", 18, "site.cold_aisle", r"got a mapping"),
    ("set-for-quantity", GOOD + "electricity_price: !!set {a, b}\n", 18, "<document>",
     r"YAML tags are not allowed"),
    ("bool-for-quantity", GOOD + "electricity_price: yes\n", 18, "electricity_price",
     r"expected a price"),
    # YAML that broke the loader (RecursionError, ConstructorError).
    ("deep-nesting", GOOD + "catalog: " + "[" * 500 + "]" * 500 + "\n", 18, "<document>",
     r"nested more than 32 levels deep"),
    ("python-tag", GOOD + "description: !!python/object/apply:os.system ['echo pwned']\n", 18,
     "<document>", r"YAML tags are not allowed in scenarios \(found '!!python/object/apply:os.system'\)"),
    ("unknown-tag", GOOD + "description: !foo bar\n", 18, "<document>", r"tags are not allowed.*'!foo'"),
    ("million-digit-seed", GOOD + "seed: " + "1" * 1_000_000 + "\n", 18, "<document>",
     r"more than 100 digits"),
    # Names that must be unique.
    ("duplicate-job", GOOD + "jobs:\n" + JOB % "j" + JOB % "j", 20, "jobs[1].name",
     r"duplicate job name 'j' \(also jobs\[0\]\)"),
    ("duplicate-cdu", GOOD.replace(CDU, CDU + CDU), 7, "cdus[1].name", r"duplicate CDU name 'c1'"),
    ("duplicate-hall", GOOD.replace("halls:\n", "halls:\n  - name: h\n    rows: [{name: r0, racks: "
                                    "[{name: k0, template: gb300-nvl72}]}]\n"), 10, "halls[1].name",
     r"duplicate hall name 'h'"),
    # Device power limits and the control section (their own quantities).
    ("device-power-limit", GOOD + "power_limits:\n  - {limit: 1e9 W}\n", 19, "power_limits[0].limit",
     r"'1e9 W' is outside 0 W to 100000 W \(a device's power limit\)"),
    ("control-interval", GOOD + "control: {interval: 1e308 s}\n", 18, "control.interval",
     r"is outside 0 s to .* \(a simulated span"),
    ("control-facility-limit", GOOD + "control: {p_facility_limit: inf W}\n", 18, "control.p_facility_limit",
     r"not a finite number"),
    ("control-action-bound", GOOD + "control: {actions: [{control: cdu.t_supply_set, low: .nan}]}\n", 18,
     "control.actions[0].low", r"finite"),
    # Markup and long values from the file are quoted as short, inert excerpts.
    ("emoji-in-template", GOOD.replace("gb300-nvl72", "':x: [bold]red'"), 13,
     "halls[0].rows[0].racks[0].template", r"unknown template '\\x3ax: \\\[bold\]red'"),
    ("long-template", GOOD.replace("gb300-nvl72", "t" * 100_000), 13, "halls[0].rows[0].racks[0].template",
     r"unknown template 't{40}'… \(100,000 characters\)"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_refused_with_one_line(tmp_path, monkeypatch, case):
    name, text, line, path, pattern = case
    monkeypatch.chdir(tmp_path)
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(text)
    out = tmp_path / "result.nc"
    result = CliRunner().invoke(app, ["run", str(scenario), "-o", str(out)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[:2000]
    assert len(lines[0]) < 600
    m = re.fullmatch(r"(.+?):(\d+): (\S+): (.+)", lines[0])
    assert m, lines[0]
    assert (int(m.group(2)), m.group(3)) == (line, path), lines[0]
    assert re.search(pattern, m.group(4)), m.group(4)
    assert "❌" not in result.stderr and "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == [scenario]


def test_limits_are_documented_in_the_readme():
    from tests.conftest import ROOT

    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Limits", 1)[1].split("\n## ", 1)[0]
    for key, (low, high, unit, why) in LIMITS.items():
        assert f"`{key}`" in section, key


# --------------------------------------------------------------------------------------------
# Files a scenario names
# --------------------------------------------------------------------------------------------
SECRET = "root:$6$SECRETHASH:19000:0:99999:7:::\nHOME=/root\nAWS_SECRET_ACCESS_KEY=SECRETKEY\n"


def _with(kind: str, target: str) -> str:
    if kind == "replay":
        return GOOD.replace("    u: 0.5", f"    replay: {target}")
    if kind == "trace":
        return GOOD + ("jobs:\n  - {kind: inference, name: i, devices: {kind: gb300}, "
                       f"model: {{params: 7e9}}, trace: '{target}'}}\n")
    if kind == "weather-csv":
        return GOOD + f"plant: {{weather: {{kind: csv, file: '{target}'}}}}\n"
    return GOOD + f"plant: {{weather: {{kind: epw, file: '{target}'}}}}\n"


WHERE = {"replay": (17, "workload[0].replay"), "trace": (19, "jobs[0].trace"),
         "weather-csv": (18, "plant.weather.file"), "weather-epw": (18, "plant.weather.file")}


def _targets(tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text(SECRET)
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    (tmp_path / "header-replay.csv").write_text("time,device,u\n")
    (tmp_path / "header-trace.csv").write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    (tmp_path / "header-weather.csv").write_text("time,t_dry_bulb,rh\n\n")
    (tmp_path / "fake.parquet").write_bytes(b"PAR1 this is not parquet SECRETKEY PAR1")
    (tmp_path / "header.epw").write_text("LOCATION,x,y,z,w,1,2,3,4,5\n" + "X\n" * 7)
    (tmp_path / "folder.csv").mkdir()
    return {
        "/proc/self/environ": r"empty file \(or a special file with no size",
        "/dev/zero": r"not a regular file",
        str(secret): r"missing column\(s\)|not an EPW file",
        str(fifo): r"not a regular file \(a device, FIFO or socket\)",
        str(tmp_path / "folder.csv"): r"is a directory",
        str(tmp_path / "nowhere.csv"): r"not found",
    }


@pytest.mark.parametrize("kind", ["replay", "trace", "weather-csv", "weather-epw"])
def test_unsafe_file_references_print_no_content(tmp_path, monkeypatch, kind):
    """/proc/self/environ, /dev/zero, a FIFO (it blocked forever), a password file: refused
    at validate (before anything is read for real), without a byte of their content."""
    monkeypatch.chdir(tmp_path)
    os.environ["TWIN_TEST_SECRET"] = "SECRETKEY"  # so /proc/self/environ holds it too
    try:
        targets = _targets(tmp_path)
        if kind == "replay":
            targets[str(tmp_path / "header-replay.csv")] = r"a header but no data rows"
            targets[str(tmp_path / "fake.parquet")] = r"not a readable Parquet file"
        elif kind == "trace":
            targets[str(tmp_path / "header-trace.csv")] = r"a header but no data rows"
        elif kind == "weather-csv":
            targets[str(tmp_path / "header-weather.csv")] = r"a header but no data rows"
        else:
            targets[str(tmp_path / "header.epw")] = r"an EPW header but no hourly records"
        line, path = WHERE[kind]
        for target, pattern in targets.items():
            scenario = tmp_path / "s.yaml"
            scenario.write_text(_with(kind, target))
            result = CliRunner().invoke(app, ["validate", str(scenario)])
            assert result.exit_code == 2, (target, result.output)
            assert "SECRET" not in result.output and "HOME=" not in result.output, target
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"{scenario}:{line}: {path}: "), lines
            assert re.search(pattern, lines[0]), (target, lines[0])
    finally:
        del os.environ["TWIN_TEST_SECRET"]


def test_scenario_file_itself_checked(tmp_path):
    """The scenario path: a FIFO or a device is refused without blocking; /proc prints nothing."""
    fifo = tmp_path / "s.yaml"
    os.mkfifo(fifo)
    for path, pattern in ((fifo, r"not a regular file"), ("/dev/zero", r"not a regular file"),
                          ("/proc/self/environ", r"empty")):
        with pytest.raises(ScenarioError, match=pattern):
            load_scenario(path)


def test_validate_in_a_real_process_refuses_a_fifo_trace(tmp_path):
    fifo = tmp_path / "trace.csv"
    os.mkfifo(fifo)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(_with("trace", str(fifo)))
    proc = subprocess.run([sys.executable, "-m", "twin", "validate", str(scenario)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "not a regular file" in proc.stderr


# --------------------------------------------------------------------------------------------
# Resources
# --------------------------------------------------------------------------------------------
HUGE = """\
name: huge
time: {duration: 1 h, step: 1 s}
halls:
  - name: h
    rows:
      - name: r
        racks: [{name: us, template: trn3-gen2-ultraserver, count: 34483}]
"""
MICRO = """\
name: micro
time: {duration: 1 d, step: 1 us}
halls:
  - name: h
    rows:
      - name: r
        racks: [{name: us, template: trn3-gen2-ultraserver}]
"""


CENTURY = MICRO.replace("{duration: 1 d, step: 1 us}", "{duration: 100 years, step: 10 s}")
MILLION = HUGE.replace("count: 34483", "count: 3449").replace("1 h", "2 h")


@pytest.mark.parametrize("text, line, path, pattern", [
    (HUGE, 3, "halls", r"10,000,070 devices × 3,600 steps = 3\.6e\+10 device-steps; memory ≈ \d"),
    (MICRO, 2, "time", r"290 devices × 86,400,000,000 steps = 2\.5e\+13 device-steps; .*steps above 5e\+08"),
    (CENTURY, 1, "record", r"290 devices × 315,576,000 steps .* recorded in memory\); memory above"),
    (MILLION, 1, "record", r"1,000,210 devices × 7,200 steps .* recorded in memory\); memory above"),
], ids=["10M-devices", "1us-step-for-a-day", "100-years-at-10s", "1M-devices"])
def test_too_large_is_refused_quickly_with_the_estimate(tmp_path, text, line, path, pattern):
    """Validating 10 M devices never finished (5 GB and growing); a 1 µs step for a day ran out
    of memory. Both are now refused by the estimate, in a real process, in under 5 s of CPU."""
    import resource

    scenario = tmp_path / "s.yaml"
    scenario.write_text(text)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-m", "twin", "validate", str(scenario)],
                          capture_output=True, text=True, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # CPU time, not wall time: the machine may be loaded; start-up (imports) is most of it.
    assert cpu < 5.0, cpu
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"{scenario}:{line}: {path}: too large for this machine: ")
    assert re.search(pattern, proc.stderr), proc.stderr
    assert "--allow-large" in proc.stderr


def test_estimate_counts_and_allow_large(tmp_path, monkeypatch):
    """The estimate's device count matches the built system; above a limit only --allow-large runs."""
    from tests.conftest import SCENARIOS
    from twin.sim import resources
    from twin.sim.build import build_system

    loaded = load_scenario(SCENARIOS / "quickstart.yaml")
    system = build_system(loaded.scenario, loaded.catalog)
    est = resources.check_loaded(loaded)
    assert loaded.estimate is est
    assert (est.devices, est.sleds, est.racks, est.steps) == (
        system.n_devices, system.sled_name.size, system.n_racks, 7200)
    # In memory: facility, cdu and rack every second, devices every 10 s, 8 bytes, twice.
    assert est.samples == 3 * 7200 + 720
    monkeypatch.setitem(resources.LIMITS, "devices", (100, "devices in one run"))
    with pytest.raises(ScenarioError, match=r"devices in one run above 100\b"):
        resources.check_loaded(load_scenario(SCENARIOS / "quickstart.yaml"))
    assert resources.check_loaded(load_scenario(SCENARIOS / "quickstart.yaml"), allow_large=True).devices == 290
    out = tmp_path / "q.nc"
    result = CliRunner().invoke(app, ["run", str(SCENARIOS / "quickstart.yaml"), "-o", str(out),
                                      "--duration", "1 min"])
    assert result.exit_code == 2 and "too large" in result.stderr and not out.exists()
    result = CliRunner().invoke(app, ["run", str(SCENARIOS / "quickstart.yaml"), "-o", str(out),
                                      "--duration", "1 min", "--allow-large"])
    assert result.exit_code == 0, result.output


def test_too_large_by_the_options_names_them(tmp_path):
    """A run made too large by --duration/--step names those options, as other option errors do."""
    from tests.conftest import SCENARIOS

    out = tmp_path / "q.nc"
    result = CliRunner().invoke(app, ["run", str(SCENARIOS / "quickstart.yaml"), "-o", str(out),
                                      "--duration", "30 d", "--step", "1 ms"])
    assert result.exit_code == 2 and not out.exists()
    line = result.stderr.strip()
    assert "\n" not in line and "too large for this machine" in line, line
    assert line.endswith("(with --duration 30 d, --step 1 ms)"), line


def test_catalogue_counts_beyond_any_equipment(tmp_path):
    """Found by the fuzzer: 356,337 power shelves in a rack ran, heating its air to 2.2e6 degC."""
    text = (SCENARIOS_DIR / "gb300-rack.yaml").read_text() + (
        "catalog:\n  racks:\n    big:\n      description: x\n      sleds: {gb300-compute-tray: {value: 18, source: estimate}}\n"
        "      power_shelf: orv3-hpr-33kw\n      shelves: {value: 356337, source: estimate}\n"
        "      coolant_flow: {value: 80 L/min, source: estimate}\n")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(text)
    with pytest.raises(ScenarioError, match=r"catalog\.racks\.big\.shelves\.value: 356,337 is more than the 64 "):
        load_scenario(scenario)
