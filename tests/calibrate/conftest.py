"""The recovery case, shared by the calibration and ensemble tests (computed once)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.calibrate.helpers import calibration_scenario, make_telemetry
from twin.cli import app

FIT = ["chips.a100-pcie.p_idle", "chips.a100-pcie.r_jc", "chips.a100-pcie.p_leak_ref"]


@pytest.fixture(scope="session")
def recovery(tmp_path_factory):
    """Telemetry from the truth (3 days at 10 min), calibrated on the first 2 days."""
    folder = tmp_path_factory.mktemp("recovery")
    tel = make_telemetry(folder)
    scenario = calibration_scenario(folder)
    args = ["calibrate", str(scenario), "-o", str(folder / "fitted.yaml"), "--report", str(folder / "report.json"),
            "--from", "2025-01-01", "--to", "2025-01-03", "--holdout-from", "2025-01-03", "--holdout-to", "2025-01-04"]
    for p in FIT:
        args += ["--fit", p]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads((folder / "report.json").read_text())
    return {"folder": folder, "report": report, "output": result.output, "stderr": result.stderr, "telemetry": tel,
            "overlay": folder / "fitted.yaml", "scenario": scenario}


