"""Bad input: one line ``FILE:LINE: field.path: message`` on stderr, exit code 2, no output file."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from twin.cli import app

GOOD = """\
name: t
time:
  duration: 10 s
  step: 1 s
cdus:
  - name: c1
halls:
  - name: h
    rows:
      - name: r
        racks:
          - name: k
            template: gb300-nvl72
            cdu: c1
workload:
  - select: {kind: [gb300]}
    u: 0.5
"""

BOMB = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
name: bomb
"""

# (id, scenario text or None for a missing file, expected line, expected path, message regex)
CASES = [
    ("unknown-template", GOOD.replace("gb300-nvl72", "gb301-nvl72"), 13,
     "halls[0].rows[0].racks[0].template", r"unknown template 'gb301-nvl72' \(known: .*gb300-nvl72"),
    ("mass-for-temperature", GOOD + "site:\n  cold_aisle: 5 kg\n", 19, "site.cold_aisle",
     r"'5 kg' is not a temperature"),
    ("mass-for-power", GOOD + "catalog:\n  chips:\n    x:\n      description: x\n      role: cpu\n"
     "      cooling: air\n      tdp: {value: 5 kg, source: estimate}\n", 24,
     "catalog.chips.x.tdp", r"'5 kg' is not a power"),
    ("negative-flow", GOOD.replace("cdu: c1\n", "cdu: c1\n            coolant_flow: -5 L/min\n"), 15,
     "halls[0].rows[0].racks[0].coolant_flow", r"must be positive"),
    ("missing-field", GOOD.replace("            template: gb300-nvl72\n", ""), 12,
     "halls[0].rows[0].racks[0].template", r"required field is missing"),
    ("misspelled-key", GOOD.replace("  duration: 10 s", "  duraton: 10 s"), 3, "time.duraton",
     r"unknown key 'duraton' \(allowed: start, duration, step\)"),
    ("duplicate-rack", GOOD.replace("            cdu: c1\n", "            cdu: c1\n          - name: k\n"
                                    "            template: gb300-nvl72\n"), 15,
     "halls[0].rows[0].racks[1].name", r"duplicate rack name 'k'"),
    ("duplicate-key", GOOD.replace("  step: 1 s\n", "  step: 1 s\n  step: 2 s\n"), 5, "time.step",
     r"duplicate key"),
    ("missing-file", None, 1, "<document>", r"file not found"),
    ("not-yaml", "name: [unclosed\ntime: {\n", 2, "<document>", r"not valid YAML"),
    ("empty-file", "", 1, "<document>", r"empty file"),
    ("alias-bomb", BOMB, 1, "<document>", r"anchors and aliases are not allowed"),
    ("step-longer-than-run", GOOD.replace("step: 1 s", "step: 1 min"), 2, "time",
     r"step \(60 s\) is longer than the run \(10 s\)"),
    ("unknown-kind", GOOD.replace("kind: [gb300]", "kind: [gb3000]"), 16, "workload[0].select.kind[0]",
     r"unknown device kind 'gb3000'"),
    ("u-out-of-range", GOOD.replace("u: 0.5", "u: 1.5"), 17, "workload[0].u", r"less than or equal to 1"),
    ("unknown-cdu", GOOD.replace("cdu: c1\n", "cdu: c9\n"), 14, "halls[0].rows[0].racks[0].cdu",
     r"unknown CDU 'c9' \(known: c1\)"),
    ("interval-not-multiple", GOOD + "record:\n  rack: 1500 ms\n", 19, "record.rack",
     r"not a whole multiple of the step"),
    ("not-a-mapping", "- name: a\n- name: b\n", 1, "<document>", r"must be a YAML mapping"),
    ("bad-unit", GOOD.replace("duration: 10 s", "duration: 10 parsecs"), 3, "time.duration",
     r"is not a time"),
    ("unitless-quantity", GOOD.replace("duration: 10 s", "duration: 10"), 3, "time.duration",
     r"has no unit"),
    ("replay-missing", GOOD.replace("    u: 0.5", "    replay: nowhere.csv"), 17, "workload[0].replay",
     r"replay file not found"),
    ("profile-out-of-order", GOOD.replace("    u: 0.5", "    profile:\n      - {at: 5 s, u: 0.1}\n"
                                          "      - {at: 1 s, u: 0.2}"), 16, "workload[0]",
     r"profile segments must be in time order"),
    ("wrong-type", GOOD.replace("name: t\n", "name: [t]\n"), 1, "name", r"valid string"),
    ("unknown-event-kind", GOOD + "events:\n  - {at: 5 s, kind: meteor_strike, target: k}\n", 19,
     "events[0].kind", r"Input should be 'cdu_pump_trip'"),
    ("unknown-event-target", GOOD + "events:\n  - {at: 5 s, kind: coolant_flow_loss, target: zz}\n", 19,
     "events[0].target", r"'zz' matches no rack \(known: k\)"),
    ("event-outside-run", GOOD + "events:\n  - {at: 1 h, kind: cdu_pump_trip, target: c1}\n", 19,
     "events[0].at", r"3600 s is outside the run \(0 to 10 s\)"),
    ("event-without-target", GOOD + "events:\n  - {at: 5 s, kind: psu_failure}\n", 19,
     "events[0]", r"'psu_failure' needs a target \(rack name\)"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("command", ["run", "validate"])
def test_bad_scenario_one_line_exit_2(tmp_path, monkeypatch, case, command):
    name, text, line, path, pattern = case
    monkeypatch.chdir(tmp_path)
    scenario = tmp_path / "bad.yaml"
    if text is not None:
        scenario.write_text(text)
    out = tmp_path / "result.nc"
    args = [command, str(scenario)] + (["-o", str(out)] if command == "run" else [])
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    m = re.fullmatch(r"(.+):(\d+): (\S+): (.+)", lines[0])
    assert m, lines[0]
    assert m.group(1) == str(scenario)
    assert (int(m.group(2)), m.group(3)) == (line, path)
    assert re.search(pattern, m.group(4)), m.group(4)
    assert "Traceback" not in result.output
    assert not out.exists()
    assert list(tmp_path.iterdir()) == ([scenario] if text is not None else [])


def test_bad_output_suffix(tmp_path):
    scenario = tmp_path / "ok.yaml"
    scenario.write_text(GOOD)
    result = CliRunner().invoke(app, ["run", str(scenario), "-o", str(tmp_path / "x.csv")])
    assert result.exit_code == 2
    assert "unknown output format '.csv'" in result.stderr
    assert not (tmp_path / "x.csv").exists()


def test_real_process_prints_no_traceback(tmp_path):
    """The installed entry point (not just the in-process runner) exits 2 with one line."""
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(GOOD.replace("gb300-nvl72", "nope"))
    proc = subprocess.run([sys.executable, "-m", "twin", "validate", str(scenario)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"{scenario}:13: halls[0].rows[0].racks[0].template: unknown template 'nope'")
