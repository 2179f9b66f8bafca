"""Data shipped with twin: weather files, request traces and measured calibration data."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent
CALIBRATION_DIR = DATA_DIR / "calibration"


def calibration_file(relative: str) -> Path:
    """Path of a shipped calibration file, e.g. ``"splitwise/perf_model_subset.csv"``."""
    path = CALIBRATION_DIR / relative
    if not path.is_file():
        raise FileNotFoundError(f"no calibration file {relative!r} under {CALIBRATION_DIR}")
    return path
