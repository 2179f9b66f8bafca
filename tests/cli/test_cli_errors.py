"""Every command-line error of every command: exit code 2, nothing on stdout, exactly one line on
stderr, and that line names what the user typed — the option as an option, the scenario field in
its file, the sweep field in the sweep file."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from tests.conftest import SCENARIOS
from twin.cli import app

Q = str(SCENARIOS / "quickstart.yaml")
SWEEP = str(SCENARIOS / "sweep-facility-water.yaml")
CAL = str(SCENARIOS / "calibrate-a100.yaml")
CAP = ["capacity", Q, "--budget-power", "20MW"]

#: (argv, the start of the one line, or a compiled regular expression it must match). ``{tmp}`` is the
#: test's temporary folder.
CASES = [
    # the command line itself
    (["frobnicate"], "twin: no such command 'frobnicate'"),
    (["--bogus"], "twin: no such option: --bogus"),
    # run
    (["run"], "twin run: missing argument"),
    (["run", Q, "--bogus"], "twin run: no such option: --bogus"),
    (["run", Q, "--no-progress=yes"], re.compile(r"twin( run)?: option '--no-progress' does not take a value")),
    (["run", "{tmp}/missing.yaml"], "{tmp}/missing.yaml:1: <document>: file not found"),
    (["run", SWEEP], f"{SWEEP}:14: <document>: this is a sweep file"),
    (["run", Q, "--duration", "-5s"], "--duration: must be positive, got '-5s'"),
    (["run", Q, "--duration", "5 kg"], "--duration: '5 kg' is not a time"),
    (["run", Q, "--duration", "1 blorp"], "--duration: cannot read '1 blorp'"),
    (["run", Q, "--duration", "0.5 s"], re.compile(re.escape(f"{Q}:7: time: ") + ".*"
                                                   + re.escape("(with --duration 0.5 s)") + "$")),
    (["run", Q, "--step", "0 s"], "--step: must be positive"),
    (["run", Q, "--step", "7 s"], f"{Q}:50: record.device: interval 10 s is not a whole multiple"),
    (["run", Q, "--seed", "abc"], "twin run: --seed: "),
    (["run", Q, "--seed", "-1"], "--seed: "),
    (["run", Q, "--record", "device"], "--record: expected GROUP=INTERVAL"),
    (["run", Q, "--record", "foo=1s"], "--record: unknown group 'foo'"),
    (["run", Q, "--record", "device=5 kg"], "--record: '5 kg' is not a time"),
    (["run", Q, "--solver", "euler"], "--solver: unknown 'euler' (known: fast, reference)"),
    (["run", Q, "-o", "{tmp}/out.txt"], "--output: {tmp}/out.txt: unknown output format '.txt'"),
    # validate, schema, catalog
    (["validate", SWEEP], f"{SWEEP}:14: <document>: this is a sweep file (it has 'base' and 'parameters')"),
    (["validate", "{tmp}/missing.yaml"], "{tmp}/missing.yaml:1: <document>: file not found"),
    (["validate", Q, "extra"], "twin validate: got unexpected extra argument"),
    (["schema", "extra"], "twin schema: got unexpected extra argument"),
    (["catalog", "trn9"], "catalog: unknown entry 'trn9'"),
    # serve (no port is bound: each error comes before that)
    (["serve", Q, "--speed", "fast"], "--speed: expected a positive number"),
    (["serve", Q, "--port", "70000"], "twin serve: --port: "),
    (["serve", Q, "--port", "0"], "twin serve: --port: "),
    (["serve", Q, "--port", "http"], "twin serve: --port: "),
    (["serve", "{tmp}/missing.yaml"], "{tmp}/missing.yaml:1: <document>: file not found"),
    (["serve", SWEEP], f"{SWEEP}:14: <document>: this is a sweep file"),
    # sweep
    (["sweep", Q], f"{Q}:21: <document>: this is a scenario (it has 'halls'), not a sweep file"),
    (["sweep", SWEEP, "--workers", "-1"], "--workers: must be 0 or more"),
    (["sweep", SWEEP, "--workers", "two"], "twin sweep: --workers: "),
    (["sweep", SWEEP, "--duration", "5 kg"], "--duration: '5 kg' is not a time"),
    (["sweep", SWEEP, "--duration", "0 s"], "--duration: must be positive"),
    (["sweep", SWEEP, "-o", "{tmp}/out.csv"], "--output: {tmp}/out.csv: unknown output format"),
    (["sweep", SWEEP, "--workers", "1", "--scheduler", "no-port-here", "-o", "{tmp}/s.zarr"],
     "--scheduler: cannot connect to 'no-port-here'"),
    # capacity
    (["capacity", Q, "--budget-power", "20MW"], "twin capacity: missing option '--rack'"),
    (CAP + ["--rack", "gb301"], "--rack: unknown template 'gb301'"),
    (["capacity", Q, "--rack", "gb300-nvl72", "--budget-power", "20 degC"], "--budget-power: '20 degC' is not a power"),
    (["capacity", Q, "--rack", "gb300-nvl72", "--budget-power", "-1 MW"], "--budget-power: must be positive"),
    (CAP + ["--rack", "gb300-nvl72", "--budget-cooling", "lots"], "--budget-cooling: cannot read 'lots'"),
    (CAP + ["--rack", "gb300-nvl72", "--tolerance-throttle", "lots"], "--tolerance-throttle: expected a share"),
    (CAP + ["--rack", "gb300-nvl72", "--tolerance-throttle", "150%"], "--tolerance-throttle: must be between"),
    (CAP + ["--rack", "gb300-nvl72", "--row", "nope"], "--row: unknown row 'nope' (known: row-a)"),
    (CAP + ["--rack", "gb300-nvl72", "--cdu", "nope"], "--cdu: unknown CDU 'nope'"),
    (CAP + ["--rack", "gb300-nvl72", "--duration", "5 kg"], "--duration: '5 kg' is not a time"),
    (CAP + ["--rack", "gb300-nvl72", "--workers", "0"], "--workers: must be 1 or more"),
    (CAP + ["--rack", "gb300-nvl72", "--max-units", "0"], "--max-units: must be 1 or more"),
    (["capacity", SWEEP, "--rack", "gb300-nvl72", "--budget-power", "20MW"], f"{SWEEP}:14: <document>: this is a sweep file"),
    # report
    (["report", "{tmp}/missing.nc"], "{tmp}/missing.nc: file not found"),
    (["report", Q], f"{Q}: not a twin result"),
    (["report", "{tmp}/garbage.nc"], "{tmp}/garbage.nc: not a twin result"),
    # calibrate, shadow and ensembles
    (["calibrate", Q], "twin calibrate: missing option '-o' / '--output'"),
    (["calibrate", Q, "-o", "{tmp}/o.yaml"], f"{Q}:4: <document>: no 'telemetry:' section"),
    (["calibrate", "{tmp}/missing.yaml", "-o", "{tmp}/o.yaml"], "{tmp}/missing.yaml:1: <document>: file not found"),
    (["calibrate", CAL, "-o", "{tmp}/o.yaml", "--fit", "chips.nope.p_idle"],
     "--fit: 'chips.nope.p_idle': no chips entry 'nope'"),
    (["calibrate", CAL, "-o", "{tmp}/o.txt"], "{tmp}/o.txt: the overlay is YAML (.yaml or .yml)"),
    (["calibrate", CAL, "-o", "{tmp}/o.yaml", "--bootstrap", "-1"], "--bootstrap: must not be negative"),
    (["shadow", Q], "twin shadow: missing option '--prometheus'"),
    (["shadow", Q, "--prometheus", "http://127.0.0.1:1"], f"{Q}:4: telemetry: twin shadow needs telemetry.devices"),
    (["run", Q, "--ensemble", "1"], "--ensemble: needs at least 2 members"),
]


@pytest.mark.parametrize("argv, expected", CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_every_cli_error_is_one_line_and_exit_2(tmp_path, monkeypatch, argv, expected):
    monkeypatch.chdir(tmp_path)  # nothing a mistake here might run can write into the checkout
    (tmp_path / "garbage.nc").write_bytes(b"this is not NetCDF")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    if isinstance(expected, re.Pattern):
        assert expected.match(lines[0]), lines[0]
    else:
        assert lines[0].startswith(expected.replace("{tmp}", str(tmp_path))), lines[0]
    assert not any(p.name.startswith(("out", "s.zarr")) for p in tmp_path.iterdir())  # no partial output


def test_an_unreachable_scheduler_leaves_no_default_client(tmp_path, monkeypatch):
    """`--scheduler` that cannot be reached is one line, and leaves the process as it was: no
    default Dask client and no `scheduler` setting that later dask work would try to reach (a
    failed distributed.Client made as the default stays the default)."""
    pytest.importorskip("distributed")
    import dask
    from distributed import default_client

    monkeypatch.chdir(tmp_path)
    before = dask.config.get("scheduler", None)
    result = CliRunner().invoke(app, ["sweep", SWEEP, "--workers", "1", "--scheduler", "no-port-here",
                                      "-o", "s.zarr"])
    assert result.exit_code == 2, (result.output, result.exception)
    assert dask.config.get("scheduler", None) == before
    with pytest.raises(ValueError, match="No clients found"):
        default_client()


def test_version():
    import twin

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout == f"twin {twin.__version__}\n"


def test_a_missing_extra_is_one_line_naming_it(tmp_path, monkeypatch):
    """Dask, matplotlib and pyarrow are extras (twin[sweep], twin[report], twin[parquet]): used
    without them, a command says which extra to install, in one line, exit code 2.

    Each command runs in a fresh interpreter whose imports of the extras fail as if they were
    not installed (``sys.modules[name] = None`` before twin is imported): in this process an
    earlier test may already have imported them, or twin modules holding them."""
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", Q, "--duration", "2 min", "-o", "q.nc"])
    assert result.exit_code == 0, result.output
    without = ("import sys\n"
               "for name in ('matplotlib', 'matplotlib.pyplot', 'distributed'):\n"
               "    sys.modules[name] = None\n"
               "sys.argv = ['twin', *sys.argv[1:]]\n"
               "from twin.cli import main\n"
               "main()\n")
    cases = [(["report", "q.nc", "-o", "r"], "twin report needs matplotlib, which is not installed: "
                                             "pip install 'twin[report]'"),
             (["sweep", SWEEP, "--workers", "1", "--duration", "1 h", "-o", "s.zarr"],
              "running on Dask (twin sweep, twin capacity --workers/--scheduler) needs distributed, "
              "which is not installed: pip install 'twin[sweep]'")]
    for argv, line in cases:
        done = subprocess.run([sys.executable, "-c", without, *argv], capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 2 and done.stderr.splitlines()[-1:] == [line], (done.stdout, done.stderr)
        assert len(done.stderr.splitlines()) == 1, done.stderr


@pytest.mark.parametrize("command", [["run", Q, "--duration", "10 s", "-o", "out.nc"], ["bench", Q, "--duration", "10 s"]])
def test_a_bad_kernel_in_the_environment_is_one_line(tmp_path, monkeypatch, command):
    """TWIN_KERNEL names the chip kernel: a value that is none of them is one line naming the
    variable and the allowed values, exit code 2, nothing written."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TWIN_KERNEL", "cuda")
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.stdout == ""
    assert result.stderr.splitlines() == ["<environment>:1: TWIN_KERNEL: unknown kernel 'cuda' "
                                          "(allowed: auto, numpy, numba)"]
    assert list(tmp_path.iterdir()) == []
