"""Start-up stays light: the path from ``twin run`` to the first step of the quickstart imports
none of the heavy libraries it does not use (each costs 0.3-1 s of CPU at every start)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT, SCENARIOS

#: Imported only when needed: pandas (replay files, weather, the plant's calendar), scipy's ODE
#: solvers (the reference path), dask (sweeps), xarray/zarr (writing results), matplotlib (plots).
HEAVY = ("pandas", "scipy.integrate", "dask", "xarray", "zarr", "matplotlib")


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
