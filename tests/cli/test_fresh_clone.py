"""A fresh copy of the source tree in a deep path, run as a script would run it (output piped)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.conftest import ROOT


def test_validate_in_a_deep_path_prints_one_line(tmp_path):
    """`twin validate` in a 300-character checkout path, stdout a pipe: exactly one line (the
    success line is never wrapped at 80 columns, whatever the path's length)."""
    deep = tmp_path.joinpath(*(["a-rather-long-folder-name-for-a-checkout"] * 8))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("twin", "scenarios"):
        shutil.copytree(ROOT / part, deep / part, ignore=ignore)
    scenario = deep / "scenarios" / "quickstart.yaml"
    assert len(str(scenario)) > 300
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(deep)  # the copy, not the installed package
    proc = subprocess.run([sys.executable, "-m", "twin", "validate", str(scenario)], cwd=deep, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    assert lines[0] == (f"{scenario}: ok — 2 racks, 38 sleds, 290 devices, 2 h at 1 s steps")
