"""``twin bench``: runs from any working directory with the installed package, one line and exit
code 2 for bad options and bad scenarios, a table that is never cut when piped; and the run
loop's BLAS thread limit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import SCENARIOS
from twin.cli import app
from twin.scenario import ScenarioError, load_scenario
from twin.sim.driver import Simulation
from twin.sim.threads import ENV, blas_threads, limited_blas

#: Generous: each bench run is a fresh interpreter (imports ~1-3 CPU-s) plus a short run, on a
#: loaded 2-core machine.
TIMEOUT = 240


def _twin_script() -> list[str]:
    """The installed ``twin`` console script (as a user runs it after ``pip install .``)."""
    script = Path(sys.executable).with_name("twin")
    if script.is_file():
        return [str(script)]
    found = shutil.which("twin")
    if found:
        return [found]
    pytest.skip("no installed 'twin' console script next to this interpreter or on PATH")


def _tiny(folder: Path, name: str = "tiny", **changes) -> Path:
    """The quickstart renamed, as a bench scenario in ``folder``."""
    data = yaml.safe_load((SCENARIOS / "quickstart.yaml").read_text())
    data.update(name=name, **changes)
    data.pop("output", None)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture
def decoy_cwd(tmp_path, monkeypatch):
    """A working directory holding a folder named ``twin`` that is not the package (importing
    it fails loudly) and its own ``scenarios/bench/``."""
    decoy = tmp_path / "twin"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise ImportError('the decoy ./twin was imported, not the package')\n")
    _tiny(tmp_path / "scenarios" / "bench", "tiny-bench")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_bench_from_other_dir_with_decoy_twin_folder(decoy_cwd):
    """The installed script finds ``scenarios/bench/`` in the working directory and is not
    fooled by the ``twin`` folder there (the child run uses ``python -P``)."""
    env = {**os.environ, "COLUMNS": "40"}  # a narrow "terminal": the table must still be whole
    proc = subprocess.run(_twin_script() + ["bench", "--duration", "20 s"], cwd=decoy_cwd, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    header = next(line for line in lines if line.startswith("scenario"))
    row = next(line for line in lines if line.startswith("tiny-bench"))
    assert "…" not in proc.stdout
    assert len(row.split()) >= len(header.split()) - 1  # every column present ("CPU (loop)" is two words)
    assert " 20 s " in row  # simulated
    assert "hall-1k" not in proc.stdout  # the working directory's scenarios, not the checkout's


def test_compare_table_piped(decoy_cwd):
    """``--compare`` runs the named scenarios and prints speed and memory in one table."""
    _tiny(decoy_cwd / "scenarios", "other")
    proc = subprocess.run(_twin_script() + ["bench", "--compare", "tiny-bench,other", "--duration", "10 s"],
                          cwd=decoy_cwd, env={**os.environ, "COLUMNS": "30"}, capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.split()}
    assert {"tiny-bench", "other"} <= set(rows)
    for name in ("tiny-bench", "other"):
        cells = rows[name].split()
        assert "MiB" in cells and cells[1] == "290"  # devices, then speed and memory columns
        assert sum(c.endswith("×") for c in cells) == 2  # speed per CPU second and per wall second


@pytest.mark.parametrize("args, message", [
    (["--duration", "xyz"], "--duration: "),
    (["--duration", "-5 s"], "--duration: must be positive"),
    (["--compare", "no-such-scenario"], "--compare: no scenario 'no-such-scenario'"),
    (["--compare", " , "], "--compare: expected scenario names"),
    (["missing.yaml"], "missing.yaml: no such file"),
])
def test_bad_options_one_line_exit_2(decoy_cwd, args, message):
    result = CliRunner().invoke(app, ["bench", *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(message), result.output


def test_bad_scenario_file_one_line_exit_2(decoy_cwd):
    bad = _tiny(decoy_cwd, "bad", time={"duration": "2 h", "step": "banana"})
    result = CliRunner().invoke(app, ["bench", str(bad)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"{bad}:") and "time.step" in lines[0], result.output


def test_scenario_error_found_when_the_system_is_built_is_one_line(decoy_cwd):
    """A missing weather file passes the schema but fails when the plant is built (in the
    child process): still one line naming the file and field (not a traceback or an
    exception's repr), exit code 2."""
    plant = {"weather": {"kind": "epw", "file": "no-such-weather.epw"}}
    bad = _tiny(decoy_cwd, "no-weather", plant=plant)
    proc = subprocess.run(_twin_script() + ["bench", str(bad), "--duration", "10 s"], cwd=decoy_cwd,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{bad}:") and "plant.weather" in lines[0] and "no-such-weather" in lines[0]
    assert "ScenarioError" not in proc.stderr and "Traceback" not in proc.stderr


def test_worker_numbers_are_consistent(tmp_path):
    """The child's JSON: speeds are simulated time over the loop's CPU and wall seconds."""
    path = _tiny(tmp_path, "w")
    proc = subprocess.run([sys.executable, "-P", "-m", "twin.sim.bench", str(path), "--duration", "30 s"],
                          capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout.splitlines()[-1])
    assert r["simulated_s"] == 30.0 and r["devices"] == 290
    assert r["speed_cpu"] == pytest.approx(r["simulated_s"] / r["run_cpu_s"], rel=1e-12)
    assert r["speed"] == pytest.approx(r["simulated_s"] / r["run_s"], rel=1e-12)
    assert r["peak_rss_MiB"] > 10 and r["startup_cpu_s"] > 0 and r["blas_threads"] == 1


# -- BLAS threads -------------------------------------------------------------------------------
def _blas_threads_now() -> list[int]:
    from threadpoolctl import threadpool_info

    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_blas_limit_env(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert blas_threads() == 1
    monkeypatch.setenv(ENV, "3")
    assert blas_threads() == 3
    monkeypatch.setenv(ENV, "0")
    assert blas_threads() is None
    monkeypatch.setenv(ENV, "two")
    with pytest.raises(ScenarioError, match=r"^<environment>:1: TWIN_BLAS_THREADS: expected a whole number"):
        blas_threads()


def test_run_loop_holds_blas_to_one_thread(monkeypatch):
    """Inside the step loop every BLAS library runs one thread; afterwards the defaults are back."""
    monkeypatch.delenv(ENV, raising=False)
    before = _blas_threads_now()
    if not before:
        pytest.skip("no BLAS library that threadpoolctl can see")
    sim = Simulation(load_scenario(SCENARIOS / "quickstart.yaml", {"time": {"duration": "3 s"}}))
    seen = []
    sim.run(pace=lambda t: seen.append(_blas_threads_now()))
    assert seen and all(s == [1] * len(before) for s in seen)
    assert _blas_threads_now() == before
    with limited_blas(None):  # TWIN_BLAS_THREADS=0: untouched
        assert _blas_threads_now() == before
    assert np.isfinite(sim.t_die).all()
