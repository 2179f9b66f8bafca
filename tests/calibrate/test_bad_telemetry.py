"""Bad telemetry: one clear line and exit code 2 with nothing written, or reported and skipped.

Each error case is a small long-form (or wide) table next to a one-GPU scenario; the command
must fail before fitting anything, print exactly one line naming the file (and line or field
where there is one) and leave no overlay or report behind. The skipped cases read the table and
check the note and what was left out.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tests.calibrate.helpers import DEVICE, base_data, dump
from twin.calibrate.spec import TelemetrySpec
from twin.calibrate.telemetry import read_telemetry
from twin.cli import app

N = 48


def table(power=None, temperature=None, util=None, host="node7", gpu=0, start="2025-01-01", freq="1h"):
    """Long-form dcgm telemetry: N hourly samples of a GPU."""
    t = pd.date_range(start, periods=N, freq=freq)
    rng = np.random.default_rng(0)
    u = rng.uniform(0, 100, N) if util is None else util
    p = 60 + 3.0 * u if power is None else power
    temp = 35 + 0.4 * u if temperature is None else temperature
    rows = []
    for name, v in (("DCGM_FI_DEV_POWER_USAGE", p), ("DCGM_FI_DEV_GPU_TEMP", temp), ("DCGM_FI_DEV_GPU_UTIL", u)):
        rows.append(pd.DataFrame({"time": t.strftime("%Y-%m-%d %H:%M:%S"), "Hostname": host, "gpu": gpu,
                                  "metric": name, "value": v}))
    return pd.concat(rows, ignore_index=True)


def scenario(folder, csv="tel.csv", **telemetry) -> str:
    data = base_data()
    tel = {"source": csv, "columns": {"id": ["Hostname", "gpu"]}, "devices": {"node7/0": DEVICE},
           "fit": {"from": "2025-01-01", "to": "2025-01-02"}}
    tel.update(telemetry)
    data["telemetry"] = tel
    return str(dump(data, folder / "s.yaml"))


def write(folder, text_or_frame, name="tel.csv"):
    path = folder / name
    if isinstance(text_or_frame, str):
        path.write_text(text_or_frame)
    elif isinstance(text_or_frame, bytes):
        path.write_bytes(text_or_frame)
    else:
        text_or_frame.to_csv(path, index=False)
    return path


def _good():
    return table()


def _bad_time():
    df = table()
    df.loc[5, "time"] = "2025-13-45 99:00"
    return df


def _bad_value():
    df = table()
    df["value"] = df["value"].astype(object)
    df.loc[7, "value"] = "n/a-ish"
    return df


def _mw():
    df = table()
    sel = df.metric == "DCGM_FI_DEV_POWER_USAGE"
    df.loc[sel, "value"] *= 1000.0
    return df


def _kelvin():
    df = table()
    sel = df.metric == "DCGM_FI_DEV_GPU_TEMP"
    df.loc[sel, "value"] += 273.15
    return df


def _fraction_as_percent():
    df = table(util=np.random.default_rng(1).uniform(0, 1, N))
    return df


def _negative_power():
    df = table()
    sel = df.metric == "DCGM_FI_DEV_POWER_USAGE"
    df.loc[df.index[sel][3], "value"] = -20.0
    return df


# (id, table (frame, text or bytes), scenario telemetry overrides, expected stderr regex)
CASES = [
    ("missing-file", None, {"source": "nowhere.csv"}, r"nowhere\.csv:1: <telemetry>: telemetry file not found"),
    ("empty-file", "", {}, r"tel\.csv:1: <telemetry>: empty telemetry file"),
    ("binary-file", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", {}, r"tel\.csv:1: <telemetry>: not a text table"),
    ("no-metric-column", "time,Hostname,gpu,value\n2025-01-01,node7,0,5\n", {},
     r"tel\.csv:1: <telemetry>: no metric column \(tried metric"),
    ("bad-time", _bad_time(), {}, r"tel\.csv:7: time: cannot read '2025-13-45 99:00' as a time"),
    ("bad-value", _bad_value(), {}, r"tel\.csv:9: value: cannot read 'n/a-ish' as a number"),
    ("ragged-row", "time,Hostname,gpu,metric,value\n2025-01-01,node7,0,DCGM_FI_DEV_GPU_TEMP,40\n"
                   "2025-01-01,node7,0,DCGM_FI_DEV_GPU_TEMP\n2025-01-01 01:00,node7,0,DCGM_FI_DEV_GPU_TEMP,41\n", {},
     r"tel\.csv:3: <telemetry>: 4 fields where the header has 5"),
    ("power-in-milliwatts", _mw(), {}, r"power up to [\d,.]+ W is more than 3× the chip's TDP \(300 W\): wrong "
                                       r"units\? \(set telemetry\.units\.power, e\.g\. mW\)"),
    ("temperature-in-kelvin", _kelvin(), {}, r"temperature [\d.]+ degC is outside -20\.\.150 degC: kelvin or "
                                             r"Fahrenheit\?"),
    ("fraction-declared-percent", _fraction_as_percent(), {},
     r"utilisation declared in percent never exceeds 1 %; is it a fraction\?"),
    ("negative-power", _negative_power(), {}, r"negative power \(-20 W\); wrong sign or units\?"),
    ("mapped-id-absent", _good(), {"devices": {"node9/0": DEVICE}},
     r"telemetry\.devices: id 'node9/0' has no rows \(ids found: node7/0\)"),
    ("device-not-in-scenario", _good(), {"devices": {"node7/0": "nowhere/s00/a100-pcie-0"}},
     r"s\.yaml:\d+: telemetry\.devices\.node7/0: no device 'nowhere/s00/a100-pcie-0' in the scenario"),
    ("empty-fit-window", _good(), {"fit": {"from": "2026-01-01", "to": "2026-01-02"}},
     r"no samples of the mapped devices between 2026-01-01"),
    ("unknown-unit", _good().assign(metric="power"), {"units": {"power": "horsepower"}},
     r"telemetry\.units\.power: unknown unit 'horsepower' \(known: W, mW, kW\)"),
    ("unknown-parameter", _good(), {"parameters": ["chips.a100-pcie.p_idel"]},
     r"telemetry\.parameters\[0\]: 'chips\.a100-pcie\.p_idel': not a figure of chips\.a100-pcie"),
    ("no-devices-mapping", _good(), {"devices": {}},
     r"telemetry: telemetry\.devices: map at least one telemetry id"),
    ("prometheus-unreachable", None, {"source": "http://127.0.0.1:9", "interval": "1 h"},
     r"http://127\.0\.0\.1:9:1: <telemetry>: cannot reach Prometheus"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_telemetry_one_line_exit_2_nothing_written(tmp_path, monkeypatch, case):
    name, content, overrides, pattern = case
    monkeypatch.chdir(tmp_path)
    if content is not None:
        write(tmp_path, content)
    path = scenario(tmp_path, **overrides)
    out, rep = tmp_path / "fitted.yaml", tmp_path / "report.json"
    result = CliRunner().invoke(app, ["calibrate", path, "-o", str(out), "--report", str(rep)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert re.search(pattern, lines[0]), lines[0]
    assert "Traceback" not in result.output
    assert not out.exists() and not rep.exists()


def _spec(**kw) -> TelemetrySpec:
    base = {"columns": {"id": ["Hostname", "gpu"]}, "devices": {"node7/0": DEVICE}}
    base.update(kw)
    return TelemetrySpec.model_validate(base)


def test_unknown_ids_and_metrics_are_reported_and_skipped(tmp_path):
    df = pd.concat([table(), table(host="node8"), table().assign(metric="DCGM_FI_DEV_FAN_SPEED")])
    write(tmp_path, df)
    tele = read_telemetry(_spec(), "tel.csv", base=tmp_path, devices=[DEVICE], tdp={DEVICE: 300.0})
    notes = "\n".join(tele.notes)
    assert "ids not in telemetry.devices, skipped: node8/0" in notes
    assert "metrics the twin does not use, skipped: DCGM_FI_DEV_FAN_SPEED" in notes
    assert tele.devices == [DEVICE] and len(tele.data) == N
    assert tele.data["power"].tolist() == pytest.approx(table().query("metric == 'DCGM_FI_DEV_POWER_USAGE'")["value"].tolist())


def test_stuck_sensor_is_reported_and_left_out(tmp_path):
    u = np.tile([0.0, 100.0], N // 2)
    temp = 35 + 0.4 * u
    temp[10:40] = 50.0  # frozen for 30 samples while utilisation swings 0-100 %
    write(tmp_path, table(util=u, temperature=temp))
    tele = read_telemetry(_spec(), "tel.csv", base=tmp_path, devices=[DEVICE], tdp={DEVICE: 300.0})
    assert any("temperature stuck at 50 for 30 samples" in n for n in tele.notes), tele.notes
    t = tele.data["temperature"].to_numpy()
    assert np.isnan(t[10:40]).all() and not np.isnan(t[:10]).any() and not np.isnan(t[40:]).any()
    assert not np.isnan(tele.data["power"].to_numpy()).any()  # power still used


def test_gap_and_blank_values_are_reported(tmp_path):
    df = table()
    df = df[~pd.to_datetime(df.time).between("2025-01-01 10:00", "2025-01-01 17:00")]
    df = df.copy()
    df["value"] = df["value"].astype(object)
    df.loc[df.index[0], "value"] = ""
    write(tmp_path, df)
    tele = read_telemetry(_spec(), "tel.csv", base=tmp_path, devices=[DEVICE], tdp={DEVICE: 300.0})
    notes = "\n".join(tele.notes)
    assert "1 blank or NaN values skipped" in notes
    assert "1 gap(s) longer than 3 h (longest 9 h from 2025-01-01 09:00:00 to 2025-01-01 18:00:00)" in notes


def test_biohpc_file_is_read_as_shipped():
    """BOM, tab-separated, newest row first, SQL footer: every row read, in time order, as in the file."""
    from tests.conftest import ROOT, SCENARIOS
    from twin.scenario import load_scenario

    loaded = load_scenario(SCENARIOS / "calibrate-a100.yaml")
    spec = loaded.scenario.telemetry
    tele = read_telemetry(spec, spec.source, base=loaded.base, devices=[DEVICE], tdp={DEVICE: 300.0})
    path = ROOT / "twin" / "data" / "calibration" / "biohpc" / "cbsugpu07_a100_usage_stats.tsv"
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # the file is shipped unchanged
    lines = raw.decode("utf-8-sig").splitlines()
    rows = [ln.split("\t") for ln in lines[1:] if ln.count("\t") == 13]
    assert len(rows) == 15493 and "(15493 rows affected)" in raw.decode("utf-8-sig")
    assert len(tele.data) == len(rows)
    assert tele.interval == 3600.0
    t = tele.data.index.get_level_values("time")
    assert t.is_monotonic_increasing
    assert str(t[0]) == "2024-01-20 10:00:00" and str(t[-1]) == "2025-10-31 09:00:00"
    newest = rows[0]  # first data row of the file is the newest
    assert tele.data["power"].iloc[-1] == float(newest[2])
    assert tele.data["temperature"].iloc[-1] == float(newest[5])
    assert tele.data["utilisation"].iloc[-1] == pytest.approx(float(newest[8]) / 100.0)


def test_wide_tsv_with_mapping_matches_long_csv(tmp_path):
    """The same samples as a wide TSV (column mapping, percent units) and as long-form DCGM CSV."""
    long = table()
    write(tmp_path, long)
    wide = long.pivot_table(index="time", columns="metric", values="value").reset_index()
    wide.insert(1, "name", "srv")
    wide = wide.iloc[::-1]  # newest first
    (tmp_path / "w.tsv").write_text("\ufeff" + wide.to_csv(sep="\t", index=False) + "\n(48 rows affected)\n")
    a = read_telemetry(_spec(), "tel.csv", base=tmp_path, devices=[DEVICE])
    b = read_telemetry(TelemetrySpec.model_validate({
        "layout": "wide", "devices": {"srv": DEVICE}, "units": {"utilisation": "percent"},
        "columns": {"time": "time", "id": "name", "power": "DCGM_FI_DEV_POWER_USAGE",
                    "temperature": "DCGM_FI_DEV_GPU_TEMP", "utilisation": "DCGM_FI_DEV_GPU_UTIL"}}),
        "w.tsv", base=tmp_path, devices=[DEVICE])
    pd.testing.assert_frame_equal(a.data, b.data)


def test_spec_rejects_mixed_layouts():
    with pytest.raises(ValueError, match="need layout: wide"):
        TelemetrySpec.model_validate({"columns": {"power": "p"}, "devices": {"a": "b"}})
    with pytest.raises(ValueError, match="a wide table needs columns for its quantities"):
        TelemetrySpec.model_validate({"layout": "wide", "devices": {"a": "b"}})
    assert yaml  # used by helpers
