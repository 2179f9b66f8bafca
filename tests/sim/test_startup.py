"""Start-up stays light: the path from ``twin run`` to the first step of the quickstart imports
none of the heavy libraries it does not use (each costs 0.3-1 s of CPU at every start)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, SCENARIOS

#: Imported only when needed: pandas (replay files, weather, the plant's calendar), scipy's ODE
#: solvers (the reference path), dask (sweeps), xarray/zarr (writing results), matplotlib (plots).
HEAVY = ("pandas", "scipy.integrate", "dask", "xarray", "zarr", "matplotlib")


def loaded_at_first_step(tmp_path, modules, env, runs=1):
    """Run ``twin run`` of the quickstart ``runs`` times as a user does (options, output set-up,
    load and build) with ``Simulation.run`` replaced by a probe that exits at the first step;
    for each run, the ``modules`` then loaded (sorted)."""
    code = (
        "import json, os, sys\n"
        "import twin.sim.driver as driver\n"
        "def first_step(self, *args, **kwargs):\n"
        f"    print(json.dumps(sorted(m for m in {tuple(modules)!r} if sys.modules.get(m) is not None)), flush=True)\n"
        "    os._exit(0)\n"
        "driver.Simulation.run = first_step\n"
        "from twin.cli import main\n"
        f"sys.argv = ['twin', 'run', {str(SCENARIOS / 'quickstart.yaml')!r}, '--duration', '2 s', '-o', "
        f"{str(tmp_path / 'q.zarr')!r}]\n"
        "main()\n"
    )
    loaded = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                              timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr
        loaded.append(json.loads(proc.stdout.splitlines()[-1]))
    return loaded


def test_quickstart_reaches_first_step_without_heavy_imports():
    code = (
        "import json, sys\n"
        "import twin.cli\n"
        "from twin.scenario import load_scenario\n"
        "from twin.sim.driver import Simulation\n"
        f"sim = Simulation(load_scenario({str(SCENARIOS / 'quickstart.yaml')!r}, {{'time': {{'duration': '2 s'}}}}))\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if sys.modules.get(m) is not None)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == []


#: Also kept off the path of the ``twin run`` command itself (the quickstart runs the numpy chip
#: kernel and serves no inference, so numba is not needed either; the live metrics are
#: ``twin serve``'s; its quantities are all in units :data:`twin.units.FAST_UNITS` reads
#: without pint).
CLI_HEAVY = (*HEAVY, "numba", "prometheus_client", "pint")


def test_twin_run_command_reaches_first_step_without_heavy_imports(tmp_path):
    """The command as a user runs it — options, output set-up, load and build — up to the first
    step (``Simulation.run`` is replaced by a probe that lists the heavy modules then loaded and
    exits): xarray and pandas come only after the run, when the result is written."""
    env = {k: v for k, v in os.environ.items() if k != "TWIN_KERNEL"}
    assert loaded_at_first_step(tmp_path, CLI_HEAVY, env) == [[]]


def test_units_registry_is_the_same_with_and_without_pint_cache():
    """The registry built from pint's cached definitions converts as one parsed afresh."""
    code = ("import pint, twin.units as u\n"
            "a = u.registry()\n"
            "b = pint.UnitRegistry(autoconvert_offset_to_baseunit=True)\n"
            "for q, to in (('30 degC', 'K'), ('1350 kW', 'W'), ('2.5 L/min', 'm**3/s'), ('12 psi', 'Pa'),\n"
            "              ('1 kWh', 'J'), ('3 gallon/minute', 'm**3/s'), ('5 degF', 'K')):\n"
            "    x, y = a.Quantity(q).to(to).magnitude, b.Quantity(q).to(to).magnitude\n"
            "    assert x == y, (q, x, y)\n"
            "print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_units_without_dask_then_dask_imports():
    """pint is loaded without its dask hook; dask itself still imports normally afterwards."""
    code = ("import sys, twin.units\ntwin.units.registry()\nimport pint.compat\n"
            "assert 'dask' not in sys.modules and not pint.compat.HAS_DASK\n"
            "import dask\nprint(dask.__name__)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "dask"


def test_catalogue_read_with_libyaml_is_the_same():
    import yaml

    from twin.catalog.model import CATALOG_FILE, Catalog, load_catalog

    text = CATALOG_FILE.read_text(encoding="utf-8")
    assert load_catalog.__wrapped__(CATALOG_FILE) == Catalog.model_validate(yaml.load(text, Loader=yaml.SafeLoader))


def test_streamed_write_imports_neither_dask_array_nor_pint(tmp_path):
    """Writing a run's blocks to Zarr builds its xarray variables without xarray's dask and pint
    array checks (they would import dask.array, scipy.sparse and pint: ~0.7 CPU-s of the first
    write); the store reads back with its time coordinate as a proper index."""
    out = tmp_path / "q.zarr"
    code = (
        "import json, sys\n"
        "from twin.export.writers import ZarrStream, open_result\n"
        "from twin.scenario import load_scenario\n"
        "from twin.sim.driver import Simulation\n"
        f"stream = ZarrStream({str(out)!r})\n"
        f"sim = Simulation(load_scenario({str(SCENARIOS / 'quickstart.yaml')!r}, {{'time': {{'duration': '30 s'}}}}),"
        " sink=stream)\n"
        "sim.run()\n"
        "stream.finish()\n"
        "loaded = sorted(m for m in ('dask.array', 'pint', 'scipy.sparse') if sys.modules.get(m) is not None)\n"
        "rack = open_result(stream.path)['rack'].to_dataset()\n"
        "print(json.dumps([loaded, rack.sizes['time'], str(rack.indexes['time'][1])]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == [[], 30, "2026-07-01 00:00:01"]


def test_twin_run_reads_propagators_from_the_cache_without_scipy_linalg(tmp_path):
    """The sled networks' matrix exponentials are computed with scipy.linalg (~0.35 CPU-s to
    import) the first time and read back from the on-disk cache after: the second ``twin run``
    of the quickstart reaches its first step without importing scipy.linalg."""
    env = {k: v for k, v in os.environ.items() if k != "TWIN_KERNEL"}
    env["TWIN_CACHE_DIR"] = str(tmp_path / "cache")
    assert loaded_at_first_step(tmp_path, ["scipy.linalg"], env, runs=2) == [["scipy.linalg"], []]
    assert list((tmp_path / "cache" / "van_loan").glob("*.npy"))


#: Kept off the path of ``twin run`` to its first step: rich (imported when something is
#: printed: the summary table, a progress bar, an error) and the other commands' modules.
CLI_LAZY = ("rich", "rich.console", "twin.cli.bench", "twin.cli.calibrate", "twin.cli.capacity",
            "twin.cli.catalog", "twin.cli.report", "twin.cli.schema", "twin.cli.serve", "twin.cli.shadow",
            "twin.cli.sweep", "twin.cli.validate", "twin.cli.summary", "twin.sweep", "twin.report")


def test_twin_run_command_imports_neither_rich_nor_other_commands(tmp_path):
    """``twin run`` parses its options with a command group holding only ``run`` (the same
    parser, messages and exit codes) and prints nothing before its first step, so neither the
    other commands' modules nor rich are imported by then (output piped: no progress bar)."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "FORCE_TERMINAL")}
    assert loaded_at_first_step(tmp_path, CLI_LAZY, env) == [[]]


def test_twin_run_errors_and_help_are_those_of_the_whole_command_group(tmp_path):
    """The console script with only ``run`` in its group answers a bad option, ``--help`` and a
    bad scenario exactly as the whole group (``twin.cli.app``) does."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntime: {duration: 1 h}\nhalls: []\nbogus: 1\n", encoding="utf-8")
    cases = [["run", "--seed", "abc", str(bad)], ["run", "--help"], ["run", str(bad)], ["run"],
             ["--version"], ["runn"]]
    code = (
        "import contextlib, io, json, sys\n"
        "import twin.cli as cli\n"
        f"cases = {cases!r}\n"
        "res = []\n"
        "for case in cases:\n"
        "    row = []\n"
        "    for app in (cli.make_app(case[0] if case[0] in cli.COMMANDS else None), cli.make_app()):\n"
        "        o, e = io.StringIO(), io.StringIO()\n"
        "        with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):\n"
        "            try:\n"
        "                app(case, standalone_mode=True)\n"
        "                code = 0\n"
        "            except SystemExit as exc:\n"
        "                code = exc.code\n"
        "        row.append([code, o.getvalue(), e.getvalue()])\n"
        "    res.append(row)\n"
        "print(json.dumps(res))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout.splitlines()[-1])
    for case, (alone, whole) in zip(cases, results):
        assert alone == whole, case
    codes = [r[0][0] for r in results]
    assert codes == [2, 0, 2, 2, 0, 2]
    assert "bogus" in results[2][0][2] and f"{bad}:4:" in results[2][0][2]


#: Not imported by ``twin run`` once its scenario is in the start-up cache: the scenario and
#: catalogue are read as stand-ins of their models (twin.scenario.plain), the plain command line
#: is read without typer (twin.cli.fastparse, its options table from the cache), and the
#: variable registry is read from the cache without importing the plant's equipment.
WARM_LAZY = ("pydantic", "pydantic_core", "typer", "typer._adapters", "twin.scenario.model", "twin.catalog.model",
             "twin.cooling.config", "twin.cooling.condenser_pumps", "twin.calibrate.spec", "importlib.metadata")


def test_warm_twin_run_reaches_first_step_without_pydantic(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TWIN_KERNEL"}
    env["TWIN_CACHE_DIR"] = str(tmp_path / "cache")
    loaded = loaded_at_first_step(tmp_path, WARM_LAZY, env, runs=2)
    assert "pydantic" in loaded[0]  # validated the first time
    assert loaded[1] == []


def test_plain_command_lines_give_run_what_typer_gives(monkeypatch):
    """twin.cli.fastparse reads a plain ``twin run`` command line into the arguments typer's
    parser gives the command, and leaves every other line to typer; the function doing the work
    takes the command's parameters, in order, with the same defaults."""
    import functools
    import inspect

    import twin.cli.run as run_module
    from twin.cli import fastparse
    from twin.cli.group import make_app
    from twin.cli.scenario_run import run_scenario

    def shape(f):
        return [(n, p.default) for n, p in inspect.signature(f).parameters.items()]

    assert shape(run_module.run) == shape(run_scenario)
    table = fastparse.options_table("run")
    assert table is not None
    function = run_module.run
    got = {}

    @functools.wraps(function)
    def spy(**kwargs):
        got.update(kwargs)

    monkeypatch.setattr(run_module, "run", spy)
    plain_lines = [
        ["s.yaml"],
        ["s.yaml", "-o", "out/q.zarr", "--duration", "1 h", "--step=2 s", "--seed", "42"],
        ["--record", "rack=off", "s.yaml", "--record", "device=10 s", "--progress", "--allow-large"],
        ["s.yaml", "--no-progress", "--solver", "reference", "--openmetrics", "m.txt", "--output=q.nc"],
        ["s.yaml", "--ensemble", "4", "--workers", "0", "--keep-members"],
    ]
    other_lines = [[], ["--help"], ["s.yaml", "--help"], ["s.yaml", "--seed", "x"], ["s.yaml", "--seed", "-1"],
                   ["s.yaml", "t.yaml"], ["s.yaml", "--bogus"], ["s.yaml", "--duration"], ["s.yaml", "-o", ""],
                   ["s.yaml", "--", "x"], ["s.yaml", "--allow-large=1"], ["s.yaml", "-oq.nc"],
                   ["s.yaml", "--seed", "1", "--seed", "2"], ["-", "--seed", "1"]]
    for line in plain_lines:
        got.clear()
        with pytest.raises(SystemExit) as info:
            make_app("run")(["run", *line])
        assert info.value.code in (0, None), line
        assert fastparse.parse(table, line) == got, line
    for line in other_lines:
        assert fastparse.parse(table, line) is None, line
