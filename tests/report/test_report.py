"""`twin report`: real PNGs and an HTML page for a run and a sweep; absent data skips plots."""

from __future__ import annotations

import re

import numpy as np
import pytest
import yaml
from matplotlib import image as mpimg
from typer.testing import CliRunner

import twin
from tests.conftest import SCENARIOS
from twin.cli import app
from twin.report.plots import power_spectrum, write_report

RUN_PLOTS = ["power_stack", "pue", "rack_power", "device_temperature", "cdu_temperature", "spectrum"]


def assert_real_png(path, min_size=(400, 300)):
    """A PNG that decodes, is at least ``min_size`` (width, height) and is not blank."""
    img = mpimg.imread(path)
    h, w = img.shape[:2]
    assert w >= min_size[0] and h >= min_size[1], (path.name, w, h)
    rgb = img[..., :3]
    assert rgb.std() > 0.02, f"{path.name} looks blank"
    # More than background and one colour: at least a few hundred distinct colours.
    assert len(np.unique(rgb.reshape(-1, 3).round(3), axis=0)) > 50, path.name


@pytest.fixture(scope="module")
def quickstart_result(tmp_path_factory):
    """The quickstart for 15 minutes (idle, then the training swing from minute 10)."""
    out = tmp_path_factory.mktemp("run") / "quickstart.nc"
    result = CliRunner().invoke(app, ["run", str(SCENARIOS / "quickstart.yaml"), "--duration", "15 min",
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_report_on_quickstart_writes_pngs_and_html(quickstart_result, tmp_path):
    folder = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(quickstart_result), "-o", str(folder)])
    assert result.exit_code == 0, result.output
    for stem in RUN_PLOTS:
        assert_real_png(folder / f"{stem}.png")
    assert not (folder / "jobs.png").exists()  # no job group in the quickstart: skipped
    page = (folder / "index.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert sorted(re.findall(r"<img src='([^']+)'", page)) == sorted(f"{s}.png" for s in RUN_PLOTS)
    # The KPI table, with values formatted in their units.
    assert "<th>pue</th>" in page and "<th>p_facility_peak</th>" in page and " kW</td>" in page
    assert "Not shown (no data in this result): Job throughput" in page


def test_report_skips_absent_groups(tmp_path):
    """A run that records only the facility group still gets a report (no failure)."""
    out = tmp_path / "facility-only.nc"
    result = CliRunner().invoke(app, ["run", str(SCENARIOS / "quickstart.yaml"), "--duration", "2 min", "-o", str(out),
                                      "--record", "device=off", "--record", "rack=off", "--record", "cdu=off"])
    assert result.exit_code == 0, result.output
    page = write_report(out, tmp_path / "r")
    written = sorted(p.stem for p in (tmp_path / "r").glob("*.png"))
    assert written == ["power_stack", "pue", "spectrum"]
    assert "Die temperature heatmap" in page.read_text()  # listed as not shown


def test_report_on_training_job_draws_jobs(tmp_path):
    out = tmp_path / "train.nc"
    result = CliRunner().invoke(app, ["run", str(SCENARIOS / "training-swings.yaml"), "--duration", "2 min",
                                      "-o", str(out), "--record", "device=off"])
    assert result.exit_code == 0, result.output
    write_report(out, tmp_path / "r")
    assert_real_png(tmp_path / "r" / "jobs.png")
    assert_real_png(tmp_path / "r" / "spectrum.png")


def test_report_on_sweep_plots_kpis_against_parameters(tmp_path):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(yaml.safe_dump({
        "base": str(SCENARIOS / "quickstart.yaml"), "duration": "2 min",
        "set": {"record.device": "off"},
        "parameters": [{"path": "site.facility_water_supply", "values": ["27 degC", "37 degC", "45 degC"]},
                       {"name": "climate", "values": ["Leesburg", "Phoenix"]}],
        "kpis": ["pue", "t_die_max_degC"],
    }))
    out = tmp_path / "s.zarr"
    assert CliRunner().invoke(app, ["sweep", str(sweep), "-o", str(out), "--workers", "0"]).exit_code == 0
    result = CliRunner().invoke(app, ["report", str(out), "-o", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    for stem in ("kpi_pue", "kpi_t_die_max_degC", "sweep_facility_power"):
        assert_real_png(tmp_path / "r" / f"{stem}.png")
    page = (tmp_path / "r" / "index.html").read_text()
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    assert body.count("<tr>") == 6  # one table row per variant
    assert "45.0 °C" in page


def test_kpis_dataframe_for_runs(quickstart_result):
    tree = twin.load(quickstart_result)
    df = twin.kpis(tree)
    assert list(df.index) == ["quickstart"]
    assert df.loc["quickstart", "pue"] == tree.attrs["kpi_pue"]
    assert df.loc["quickstart", "n_devices"] == 290
    both = twin.kpis([tree, quickstart_result])
    assert len(both) == 2


def test_spectrum_finds_the_swing_amplitude():
    """A 0.5 Hz sinusoid of 1 kW amplitude on 100 kW, sampled at 10 Hz: the spectrum peaks at
    0.5 Hz with 1 kW (Hann window, amplitude-corrected)."""
    t = np.arange(0, 200, 0.1)
    freqs, amp = power_spectrum(100e3 + 1e3 * np.sin(2 * np.pi * 0.5 * t), 0.1)
    k = np.argmax(amp)
    assert freqs[k] == pytest.approx(0.5)
    assert amp[k] == pytest.approx(1e3, rel=0.01)


@pytest.mark.parametrize("name, message", [
    ("missing.nc", "missing.nc: file not found"),
    ("result.txt", "result.txt: not a twin result (expected the .nc or .zarr"),
])
def test_report_bad_input_is_one_line_exit_2(tmp_path, name, message):
    path = tmp_path / name
    if name.endswith(".txt"):
        path.write_text("not a result")
    result = CliRunner().invoke(app, ["report", str(path), "-o", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1 and message in result.output, result.output


def _captured(monkeypatch):
    """Figures the plot functions would save, kept for inspection instead."""
    from twin.report import plots

    figs = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figs.append(fig) or path)
    return figs


def test_kpi_table_labels_carry_no_unit_the_value_does_not_show(quickstart_result, tmp_path):
    """Energies are shown in kWh/MWh, so their label drops the `_J` suffix; a per-joule KPI is
    not mistaken for an energy."""
    import re

    from twin.report.plots import format_value

    page = write_report(quickstart_result, tmp_path / "r").read_text()
    rows = re.findall(r"<tr><th>([^<]+)</th><td>([^<]+)</td></tr>", page)
    assert rows
    energy = [(k, v) for k, v in rows if v.endswith("Wh")]
    assert energy and all(not k.endswith("_J") for k, _ in energy), energy
    assert any(k == "energy_it" for k, _ in energy)
    assert format_value("job_llm_tokens_per_J", 2.5) == "2.5 J-1"
    assert format_value("energy_it_J", 7.2e6) == "2.00 kWh"


def test_jobs_plot_never_puts_different_units_on_one_axis(monkeypatch, tmp_path):
    import numpy as np
    import xarray as xr

    from twin.report.plots import plot_jobs

    t = np.arange(5.0)
    job = xr.Dataset(
        {"throughput": (("time", "job"), np.ones((5, 3))), "progress": (("time", "job"), np.ones((5, 3)))},
        coords={"time": t, "job": ["train", "serve", "batch"],
                "job_kind": ("job", ["training", "inference", "cpu"])})
    tree = xr.DataTree.from_dict({"/job": job})
    figs = _captured(monkeypatch)
    assert plot_jobs(tree, tmp_path / "jobs.png") is not None
    (fig,) = figs
    by_label = {ax.get_ylabel(): [ln.get_label() for ln in ax.lines] for ax in fig.axes}
    assert by_label == {
        "throughput [iterations/s]": ["train"], "progress [iterations]": ["train"],
        "throughput [output tokens/s]": ["serve"], "progress [requests completed]": ["serve"],
        "throughput [device-s at full clock per s]": ["batch"], "progress [device-s at full clock]": ["batch"],
    }


def test_sweep_power_plot_title_says_envelope_when_it_draws_one(monkeypatch, tmp_path):
    import numpy as np
    import xarray as xr

    from twin.report.plots import MAX_LINES, plot_sweep_facility

    for n, expected in ((3, "Facility power of each variant"),
                        (MAX_LINES + 1, f"Facility power across {MAX_LINES + 1} variants (min–max and mean)")):
        fac = xr.Dataset({"p_facility": (("scenario", "time"), np.full((n, 4), 1e5))},
                         coords={"scenario": np.arange(n), "time": np.arange(4.0)})
        figs = _captured(monkeypatch)
        plot_sweep_facility(xr.DataTree.from_dict({"/facility": fac}), tmp_path / "s.png")
        assert figs[0].get_suptitle().startswith(expected)
