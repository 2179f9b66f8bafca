"""What the commands print: words people use (durations, plurals), rows only where they mean
something, shares that add up."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from tests.conftest import SCENARIOS
from tests.test_cli import _summary_rows
from twin.cli import app
from twin.cli.common import duration_text


def test_durations_read_as_people_write_them():
    cases = {0.1: "0.1 s", 1: "1 s", 90: "90 s", 600: "10 min", 5400: "90 min", 7200: "2 h",
             9000: "2.5 h", 86400: "1 d", 90000: "25 h", 365 * 86400: "365 d"}
    assert {s: duration_text(s) for s in cases} == cases


def test_validate_says_days_and_singular_rack():
    runner = CliRunner()
    year = runner.invoke(app, ["validate", str(SCENARIOS / "annual-leesburg.yaml")])
    assert year.exit_code == 0 and year.stdout.endswith(", 365 d at 1 h steps\n"), year.stdout
    one = runner.invoke(app, ["validate", str(SCENARIOS / "gb300-rack.yaml")])
    assert one.exit_code == 0 and " ok — 1 rack, " in one.stdout, one.stdout


def test_short_run_summary_accounts_for_stored_heat_and_names_the_hottest(tmp_path):
    """11 minutes of the quickstart: the load steps up at 10 min and the chips, plates and
    coolant warm, so liquid + air fall short of IT energy by what the thermal mass stored; the
    summary says how much, and the three add to 100 % (to the 0.1 % they are printed with)."""
    result = CliRunner().invoke(app, ["run", str(SCENARIOS / "quickstart.yaml"), "--duration", "11 min",
                                      "-o", str(tmp_path / "q.nc")])
    assert result.exit_code == 0, result.output
    rows = _summary_rows(result.stdout)
    assert rows["simulated time"] == "11 min"
    m = re.fullmatch(r"([\d.]+)% / ([\d.]+)% \(\+([\d.]+)% stored in the thermal mass\)", rows["heat to liquid / air"])
    assert m, rows["heat to liquid / air"]
    assert abs(sum(float(x) for x in m.groups()) - 100.0) <= 0.15  # three values rounded to 0.1 %
    # the hottest die is named with its kind (after 11 min a NeuronSwitch and a Trainium3 are
    # within 0.1 K of each other, so which one is not the point) and is the hottest of the kinds
    hot = re.fullmatch(r"([\d.]+) °C \((\w+) us1-[ab]/s\d\d/\2-\d+\)", rows["max die temperature"])
    assert hot, rows["max die temperature"]
    assert rows["hottest of each kind"].startswith("trn3 ")
    per_kind = dict(re.findall(r"(\w+) ([\d.]+)", rows["hottest of each kind"]))
    assert per_kind[hot.group(2)] == hot.group(1) == max(per_kind.values(), key=float)


def test_ramp_only_where_the_record_interval_allows(tmp_path):
    """Facility power recorded hourly: the difference of two hourly means is no ramp, so the row
    is left out; recorded every second it is there."""
    hourly = CliRunner().invoke(app, ["run", str(SCENARIOS / "annual-leesburg.yaml"), "--duration", "3 d",
                                      "-o", str(tmp_path / "a.nc")])
    assert hourly.exit_code == 0, hourly.output
    rows = _summary_rows(hourly.stdout)
    assert "IT power peak/average (1 h)" in rows and "largest IT power ramp" not in rows
    assert rows["simulated time"] == "3 d"
