"""Weather files are checked for span and units when the simulation is built: a one-year file
serves a year, a file too short for the run is one line before the run starts, a file in
kelvin or hPa is refused at its first bad row."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import SCENARIOS, write_scenario
from twin.cli import app
from twin.site.weather import SECONDS_PER_YEAR, Weather
from twin.scenario import ScenarioError, load_scenario
from twin.sim.driver import Simulation

ONE_US = [{"name": "h", "rows": [{"name": "r", "racks": [
    {"name": "us", "template": "trn3-gen2-ultraserver", "cdu": "cdu"}]}]}]


def _csv(path, hours, t_dry_bulb=None, extra=""):
    """An hourly weather CSV of ``hours`` rows (time in seconds from 0), a daily cycle by default."""
    t = np.arange(hours) * 3600.0
    t_db = 20.0 + 8.0 * np.sin(2 * np.pi * t / 86400.0) if t_dry_bulb is None else np.full(hours, t_dry_bulb)
    rows = [f"{a:.0f},{b:.3f},0.5{extra}" for a, b in zip(t, t_db)]
    path.write_text("time,t_dry_bulb,rh" + (",pressure" if extra else "") + "\n" + "\n".join(rows) + "\n")
    return path


def _scenario(tmp_path, weather_file, duration, step="1 h"):
    data = load_scenario(SCENARIOS / "annual-leesburg.yaml").text
    import yaml

    d = yaml.safe_load(data)
    d.update(halls=ONE_US, time=dict(d["time"], duration=duration, step=step),
             record={"rack": "off", "cdu": "off", "device": "off", "facility": step})
    d["plant"] = dict(d["plant"], weather={"kind": "csv", "file": weather_file.name})
    d.pop("output", None)
    return write_scenario(tmp_path, d)


def test_a_one_year_hourly_file_wraps_round_like_a_typical_year(tmp_path):
    """8,760 hourly rows from time 0: a typical year with period 365 d; the half hour after the
    last row interpolates back towards the first row (as an EPW year does)."""
    w = Weather.from_csv(_csv(tmp_path / "year.csv", 8760))
    assert w.period == SECONDS_PER_YEAR and w.span_error(10 * SECONDS_PER_YEAR) is None
    last, first = w._t_dry_bulb[-1], w._t_dry_bulb[0]
    assert w.t_dry_bulb([8759.5 * 3600])[0] == pytest.approx(0.5 * (last + first), abs=1e-12)


def test_a_one_year_file_serves_a_365_day_run(tmp_path):
    """Daily steps keep it fast; the plant samples weather at mid-step, so the last step asks
    for 364.5 d and every step's block of samples ahead runs past the file's last row."""
    path = _scenario(tmp_path, _csv(tmp_path / "year.csv", 8760), "365 d", step="1 d")
    sim = Simulation(load_scenario(path))
    sim.run()
    assert sim.time == SECONDS_PER_YEAR


def test_a_short_file_is_one_line_before_the_run(tmp_path):
    """A 30-day file and a 365-day run: refused when the simulation is built (no step runs),
    in one line naming the field, what the file covers and what the run needs."""
    path = _scenario(tmp_path, _csv(tmp_path / "month.csv", 720), "365 d")
    with pytest.raises(ScenarioError) as info:
        Simulation(load_scenario(path))
    line = str(info.value)
    assert line.startswith(f"{path}:") and "plant.weather.file: " in line
    assert "covers 30 d (720 samples every 1 h; the last one holds for one step); the run needs 365 d" in line
    for command in (["validate", str(path)], ["run", str(path), "-o", str(tmp_path / "r.nc")]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2 and result.stderr.splitlines() == [line], result.output
    assert not (tmp_path / "r.nc").exists()


def test_the_last_row_holds_for_one_step(tmp_path):
    """48 hourly rows cover 48 h: a 48 h run at 1 h steps is served to its last step (which
    samples the weather at 47.5 h, past the last row), a 49 h run is refused."""
    w = Weather.from_csv(_csv(tmp_path / "two-days.csv", 48))
    assert w.span_error(48 * 3600.0) is None and w.span_error(49 * 3600.0) is not None
    assert w.t_dry_bulb([47.9 * 3600])[0] == w._t_dry_bulb[-1]  # held, not extrapolated
    sim = Simulation(load_scenario(_scenario(tmp_path, tmp_path / "two-days.csv", "48 h")))
    sim.run()
    assert sim.time == 48 * 3600.0


@pytest.mark.parametrize("kwargs, message", [
    ({"t_dry_bulb": 295.0}, "t_dry_bulb 295 is outside -90..60 degC: the column is in degC, not kelvin or °F"),
    ({"extra": ",1013.25"}, "pressure 1013.25 is outside 30000..110000 Pa: the column is in Pa, not hPa"),
])
def test_units_that_cannot_be_degc_or_pa_are_refused_at_the_first_row(tmp_path, kwargs, message):
    path = _csv(tmp_path / "w.csv", 24, **kwargs)
    with pytest.raises(ValueError, match=f"^{path}:2: ") as info:
        Weather.from_csv(path)
    assert message in str(info.value)
