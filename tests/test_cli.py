"""The command line end to end, and the README's examples kept true."""

from __future__ import annotations

import contextlib
import io
import json
import re
import signal
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import twin
from tests.conftest import ROOT, SCENARIOS
from twin.cli import app

README = (ROOT / "README.md").read_text()


def _summary_rows(text: str) -> dict[str, str]:
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) == 2 and cells[0]:
            rows[cells[0]] = cells[1]
    return rows


def test_quickstart_matches_readme(tmp_path, monkeypatch):
    """`twin run scenarios/quickstart.yaml` prints the summary shown in the README, and the
    README's xarray example prints what the README says it prints."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", str(SCENARIOS / "quickstart.yaml")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "quickstart.nc").is_file()
    shown = README.split("## Quickstart", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    got, want = _summary_rows(result.stdout), _summary_rows(shown)
    # The energy residual is round-off (~1e-14): its digits vary with the BLAS and numpy build,
    # so it is checked for size; every other row must match the README exactly.
    key = "energy balance residual"
    assert abs(float(got.pop(key))) < 1e-12 and abs(float(want.pop(key))) < 1e-12
    assert got == want

    block = README.split("## Opening the output", 1)[1]
    code = block.split("```python", 1)[1].split("```", 1)[0]
    expected = block.split("```text", 1)[1].split("```", 1)[0]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, "README.md", "exec"), {})
    assert buf.getvalue().strip() == expected.strip()


def test_training_swings_figures_match_readme(tmp_path):
    """The training-swings rows the README shows are what `twin run … --duration 20min` prints."""
    result = CliRunner().invoke(app, ["run", str(SCENARIOS / "training-swings.yaml"), "--duration", "20min",
                                      "-o", str(tmp_path / "ts.nc"), "--no-progress"])
    assert result.exit_code == 0, result.output
    block = README.split("`twin run scenarios/training-swings.yaml --duration 20min`", 1)[1]
    want = _summary_rows(block.split("```text", 1)[1].split("```", 1)[0])
    got = _summary_rows(result.stdout)
    assert len(want) == 4 and {k: got.get(k) for k in want} == want


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_run_writes_both_formats(tmp_path, suffix):
    out = tmp_path / f"gb300{suffix}"
    result = CliRunner().invoke(app, ["run", str(SCENARIOS / "gb300-rack.yaml"), "-o", str(out),
                                      "--duration", "10 min", "--step", "2 s"])
    assert result.exit_code == 0, result.output
    tree = twin.load(out)
    assert set(tree.children) == {"facility", "cdu", "rack", "device"}
    assert tree["rack"]["p_ac"].shape == (300, 1)  # 10 min / 2 s, one rack
    assert tree["device"]["t_die"].attrs["units"] == "degC"
    assert tree.attrs["scenario_name"] == "gb300-rack"
    assert "GB300" in tree.attrs["scenario"]
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # no temporary left


def test_interrupt_keeps_what_was_recorded(tmp_path):
    """SIGINT mid-run: exit 130 and a readable file holding the completed part. The signal is sent
    once the run reports progress (--progress prints plain lines when stderr is a pipe, the first
    after 2 s of wall time), not after a fixed sleep, so a slow start-up on a loaded machine cannot
    make it arrive too early; 30 simulated days, so that a fast machine (the quickstart runs a day
    in ~2 s when idle) is still running when the first line comes."""
    out = tmp_path / "long.nc"
    with subprocess.Popen(
            [sys.executable, "-m", "twin", "run", str(SCENARIOS / "quickstart.yaml"), "--duration", "30 d",
             "-o", str(out), "--progress"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:  # (closes the pipes)
        try:
            first = proc.stderr.readline()  # blocks until the first progress line (or the end)
            assert re.match(r"quickstart: [\d,]+ s of 2,592,000 s simulated \(\d+%\), [\d,]+× real time$",
                            first.strip()), first
            proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=600)
        finally:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "interrupted at" in stderr and "Traceback" not in stderr
    tree = twin.load(out)
    n = tree["facility"].sizes["time"]
    assert 0 < n < 30 * 86400
    assert tree.attrs["interrupted"] == 1
    assert "(interrupted)" in stdout


def test_schema_is_json_schema():
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["title"] == "twin scenario"
    assert {"name", "time", "halls"} <= set(schema["required"])


def test_catalog_listing_and_entry():
    runner = CliRunner()
    result = runner.invoke(app, ["catalog"], terminal_width=200)
    assert result.exit_code == 0
    assert "trn3" in result.stdout and "gb300-nvl72" in result.stdout
    result = runner.invoke(app, ["catalog", "trn3"], terminal_width=200)
    assert result.exit_code == 0
    assert re.search(r"flops\.mxfp8\s.*2\.517 PFLOP/s.*AWS Neuron docs", result.stdout)
    assert re.search(r"tdp_range\s.*690 W to 1000 W", result.stdout)
    result = runner.invoke(app, ["catalog", "trn9"])
    assert result.exit_code == 2 and "unknown entry 'trn9'" in result.stderr


def test_validate_ok():
    result = CliRunner().invoke(app, ["validate", str(SCENARIOS / "quickstart.yaml")])
    assert result.exit_code == 0
    assert "ok — 2 racks, 38 sleds, 290 devices" in result.stdout


def test_readme_names_every_bundled_scenario():
    """The README's table of bundled scenarios lists every file under scenarios/."""
    table = README.split("Bundled scenarios", 1)[1].split("\n\n")[1]
    named = set(re.findall(r"`([\w./-]+\.yaml)`", table))
    files = {str(p.relative_to(SCENARIOS)) for p in SCENARIOS.rglob("*.yaml")}
    assert files == named, (files - named, named - files)


def _readme_block(section: str, fence: str, after: str = "") -> str:
    """The first ``fence`` block of a README section (after the text ``after``, when given)."""
    text = README.split(section, 1)[1].split("\n## ", 1)[0]
    return text.split(after, 1)[1].split(fence, 1)[1].split("```", 1)[0] if after else \
        text.split(fence, 1)[1].split("```", 1)[0]


def test_readme_bad_input_examples(tmp_path, monkeypatch):
    """The README's unknown-template (Commands) and too-large (Limits) examples print what the
    README shows: the first from the quickstart with its template misspelt as the README's sed
    command does, the second from the README's own huge.yaml. The estimate's machine-dependent
    tail (75 % of this machine's memory) is left out of the comparison."""
    monkeypatch.chdir(tmp_path)
    shown = _readme_block("## Commands", "```text").strip().splitlines()
    assert shown[0] == "$ sed 's/trn3-gen2-ultraserver/gb301-nvl72/' scenarios/quickstart.yaml > bad.yaml"
    (tmp_path / "bad.yaml").write_text(
        (SCENARIOS / "quickstart.yaml").read_text().replace("trn3-gen2-ultraserver", "gb301-nvl72"))
    result = CliRunner().invoke(app, ["validate", "bad.yaml"])
    assert result.exit_code == 2 and result.stderr.strip() == shown[2]

    (tmp_path / "huge.yaml").write_text(_readme_block("## Limits", "```yaml", "--allow-large").lstrip("\n"))
    shown = _readme_block("## Limits", "```text", "--allow-large").strip().splitlines()
    result = CliRunner().invoke(app, ["validate", "huge.yaml"])
    assert result.exit_code == 2
    head = shown[1].split("; devices in one run", 1)[0]
    assert result.stderr.strip().startswith(head), (result.stderr, head)


def test_readme_fabrics_table_is_the_catalogue():
    """The README's fabrics table names every catalogue fabric, with its bandwidth and domain
    size (exact: both are the catalogue's figures, printed to their significant digits)."""
    from twin.catalog.model import load_catalog

    fabrics = load_catalog().fabrics
    table = [r for r in README.split("**Fabrics.**", 1)[1].split("\n\n", 2)[1].splitlines() if r.startswith("| `")]
    named = [re.match(r"\| `([\w-]+)`", r).group(1) for r in table]
    assert sorted(named) == sorted(fabrics)
    for name, row in zip(named, table):
        cells = [c.strip() for c in row.strip("|").split("|")]
        fab = fabrics[name]
        if fab.scope == "scale-up":
            bw = float(re.match(r"([\d.]+)", cells[3]).group(1)) * (1e12 if "TB/s" in cells[3] else 1e9)
            assert bw == pytest.approx(fab.bandwidth.si, rel=1e-9), row
            assert int(cells[5]) == fab.domain_size.value, row


def test_readme_scenario_format_is_the_quickstart():
    """The annotated scenario in the README's Scenario format section is scenarios/quickstart.yaml
    (the same YAML once comments are dropped), so the summary it is shown with is its own."""
    import yaml

    shown = yaml.safe_load(_readme_block("## Scenario format", "```yaml"))
    assert shown == yaml.safe_load((SCENARIOS / "quickstart.yaml").read_text())
