"""A measured fleet's utilisation distribution as a workload, and the twin's power and
temperature distributions against the measured ones.

AcmeTrace (Q. Hu et al., "Characterization of Large Language Model Development in the
Datacenter", NSDI 2024; "AcmeTrace, Shanghai AI Lab / InternLM", CC-BY 4.0;
twin/data/calibration/acmetrace) publishes cluster-wide CDFs of the Seren cluster's A100 SXM 80GB
(400 W) GPUs — per-GPU power, GPU and memory temperature, and utilisation (nvidia-smi GPU
utilisation and DCGM SM activity) — over LLM development jobs, idle GPUs included. They are
marginal distributions: nothing says which power went with which utilisation on one GPU.

``scenarios/seren-fleet.yaml`` is a Seren-like fleet (HGX A100 servers, air-cooled) whose GPUs
each hold one value of the measured utilisation distribution (a stratified draw: the value at
every (i + ½)/n quantile, so n GPUs carry the CDF exactly at their resolution). The utilisation
is mapped to the twin's dynamic activity with the mapping fitted on the BioHPC A100 telemetry
(:func:`twin.workload.measured.kernel_activity`; nothing is fitted on Seren, so the whole
comparison is held out). The twin's per-GPU power and die temperature at steady state are then
compared quantile by quantile with the measured CDFs. Comparing marginal quantiles assumes that
power and temperature are monotone in utilisation across the GPUs (the k-th busiest GPU is the
k-th hungriest and the k-th hottest), which holds in the twin and is an assumption about the fleet.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from twin.data import calibration_file

#: Quantiles of the comparison [%].
QUANTILES = (10, 25, 50, 75, 90, 99)
#: The shipped Seren CDFs: quantity → (file, column).
SEREN = {
    "power": ("acmetrace/gpu_power_seren.csv", "gpu_power_w"),
    "t_gpu": ("acmetrace/gpu_temp_seren.csv", "gpu_temp_c"),
    "t_memory": ("acmetrace/gpu_temp_seren.csv", "gpu_mem_temp_c"),
    "gpu_util": ("acmetrace/util_gpu_seren.csv", "gpu_util_pct"),
    "sm_active": ("acmetrace/util_gpu_seren.csv", "sm_active_pct"),
}
#: Demanded utilisation of a GPU that holds a job but whose reading maps to no dynamic activity:
#: it marks the device active (active idle, a job holds it) at 1e-4 of its dynamic power (~0.03 W).
HELD = 1e-4
#: The fleet scenario and its shipped replay table (``write_replay`` writes it).
SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "seren-fleet.yaml"
REPLAY = SCENARIO.with_name("seren-fleet-util.csv")


def seren_cdf(quantity: str) -> tuple[np.ndarray, np.ndarray]:
    """A Seren CDF: (cumulative share [%], value) in the file's units (W, degC, %)."""
    file, column = SEREN[quantity]
    table = pd.read_csv(calibration_file(file))
    return table["cdf_percent"].to_numpy(dtype=float), table[column].to_numpy(dtype=float)


def seren_mean(quantity: str) -> float:
    """Mean of a Seren distribution: the integral of its quantile function (trapezoids)."""
    cdf, value = seren_cdf(quantity)
    return float(np.sum(0.5 * (value[1:] + value[:-1]) * np.diff(cdf)) / (cdf[-1] - cdf[0]))


def seren_quantiles(quantity: str, quantiles=QUANTILES) -> np.ndarray:
    """Measured quantiles of a Seren CDF, linear between its 1,001 points."""
    cdf, value = seren_cdf(quantity)
    return np.interp(np.asarray(quantiles, dtype=float), cdf, value)


def stratified_draw(quantity: str, n: int) -> np.ndarray:
    """The measured distribution on ``n`` devices: its value at every (i + ½)/n quantile, ascending."""
    return seren_quantiles(quantity, (np.arange(n) + 0.5) / n * 100.0)


def demanded_utilisation(n: int, driver: str = "gpu_util", mapping: dict | None = None) -> np.ndarray:
    """The twin's demanded utilisation ``u`` of ``n`` GPUs drawn from Seren's utilisation [1], ascending.

    Parameters
    ----------
    n : int
        Number of GPUs.
    driver : {"gpu_util", "sm_active", "ladder"}
        ``gpu_util``: nvidia-smi GPU utilisation through the BioHPC-fitted mapping
        (:func:`twin.workload.measured.kernel_activity` with ``mapping``, default the fit of
        :func:`twin.workload.measured.utilisation_bins`), the twin's calibrated reading of that
        counter. ``sm_active``: DCGM SM activity taken as the share of dynamic power, with no
        fitted number (a comparison of the two readings, not a calibrated path). ``ladder``: an
        eighth of the GPUs idle and the rest at u evenly spread over 0..1, not a measurement: a
        probe of die temperature against power (:func:`compare_thermal`).
    mapping : dict, optional
        ``activity`` and ``latency_share`` for ``gpu_util``.

    Returns
    -------
    ndarray
        u [1] (n,); a GPU whose reading is above 0 is at least :data:`HELD` (active: a job holds it).
    """
    if driver == "ladder":
        idle = n // 8
        return np.concatenate([np.zeros(idle), (np.arange(n - idle) + 0.5) / (n - idle)])
    reading = stratified_draw(driver, n) / 100.0
    if driver == "sm_active":
        u = reading
    elif driver == "gpu_util":
        from twin.workload.measured import kernel_activity

        if mapping is None:
            mapping = biohpc_mapping()
        u = kernel_activity(reading, mapping["activity"], mapping["latency_share"])
    else:
        raise ValueError(f"driver must be 'gpu_util', 'sm_active' or 'ladder', got {driver!r}")
    return np.where(reading > 0, np.clip(u, HELD, 1.0), 0.0)


def biohpc_mapping() -> dict:
    """The utilisation mapping fitted on the BioHPC A100 PCIe telemetry (README, Fidelity)."""
    from twin.catalog import load_catalog
    from twin.workload.measured import utilisation_bins

    return utilisation_bins(load_catalog())[1]


def replay_table(devices, u, placement: str = "packed", seed: int = 0) -> pd.DataFrame:
    """A replay table (time 0, device, u) giving each GPU one value of ``u``.

    ``packed`` assigns the values in ascending order along the devices (so a server's eight GPUs
    hold neighbouring values: multi-GPU jobs fill whole servers, and much of Seren's GPU time is in
    them — cluster_summary.csv: a mean 5.7 GPUs per job against a median of 1, the largest 1,024);
    ``shuffled`` assigns them in a seeded
    random order (busy and idle GPUs side by side in every server).
    """
    u = np.sort(np.asarray(u, dtype=float))
    if placement == "shuffled":
        u = np.random.default_rng(seed).permutation(u)
    elif placement != "packed":
        raise ValueError(f"placement must be 'packed' or 'shuffled', got {placement!r}")
    return pd.DataFrame({"time": 0.0, "device": list(devices), "u": np.round(u, 6)})


def fleet_devices(path: Path = SCENARIO) -> list[str]:
    """Names of the scenario's A100 SXM GPUs, in system order."""
    from twin.scenario import load_scenario
    from twin.sim.build import build_system

    # The scenario's own workload replays the table this names the devices for.
    loaded = load_scenario(path, {"workload": [{"select": {"kind": ["a100-sxm"]}, "u": 0.0}]})
    system = build_system(loaded.scenario, loaded.catalog)
    return [n for n, k in zip(system.device_name, system.device_kind) if k == "a100-sxm"]


def write_replay(path: Path = REPLAY, scenario: Path = SCENARIO) -> pd.DataFrame:
    """Write the scenario's replay table (GPU utilisation, BioHPC mapping, packed)."""
    devices = fleet_devices(scenario)
    table = replay_table(devices, demanded_utilisation(len(devices)))
    table.to_csv(path, index=False)
    return table


def run_fleet(driver: str = "gpu_util", placement: str = "packed", cold_aisle: float | None = None,
              path: Path = SCENARIO, seed: int = 0) -> pd.DataFrame:
    """Run the fleet scenario to steady state; per GPU: ``u``, ``p`` [W] and ``t_die`` [degC].

    The default (GPU utilisation, packed, the scenario's inlet) replays the shipped table; other
    drivers and placements write their own table to a temporary folder.
    """
    from twin.scenario import load_scenario
    from twin.sim.driver import Simulation
    from twin.export.dataset import build_tree

    over: dict = {}
    if cold_aisle is not None:
        over["site"] = {"cold_aisle": f"{cold_aisle} degC"}
    with tempfile.TemporaryDirectory() as tmp:
        if (driver, placement) != ("gpu_util", "packed"):
            devices = fleet_devices(path)
            table = replay_table(devices, demanded_utilisation(len(devices), driver), placement, seed)
            replay = Path(tmp) / "util.csv"
            table.to_csv(replay, index=False)
            over["workload"] = [{"select": {"kind": ["a100-sxm"]}, "replay": str(replay)}]
        sim = Simulation(load_scenario(path, over))
        sim.run()
    dev = build_tree(sim)["device"].to_dataset()
    gpu = dev.where(dev["kind"] == "a100-sxm", drop=True).isel(time=-1)
    return pd.DataFrame({"u": gpu["u"].values, "p": gpu["p"].values, "t_die": gpu["t_die"].values},
                        index=pd.Index(gpu["device"].values, name="device"))


def compare(result: pd.DataFrame, quantiles=QUANTILES) -> pd.DataFrame:
    """Twin against Seren at each quantile and the mean: rows (quantity, ``p10``… or ``mean``) with measured,
    twin, ratio (twin / measured) and difference (twin − measured; kelvin for temperatures).

    The twin has no HBM temperature node for the A100 (memory temperature is not modelled): its
    row carries the measured quantiles and no twin value.
    """
    q = np.asarray(quantiles, dtype=float)
    rows = []
    for quantity, column in (("power", "p"), ("t_gpu", "t_die"), ("t_memory", None)):
        measured = seren_quantiles(quantity, q)
        twin = np.percentile(result[column].to_numpy(), q) if column else np.full(q.size, np.nan)
        for qi, m, t in zip(quantiles, measured, twin):
            rows.append({"quantity": quantity, "quantile": f"p{qi:g}", "measured": m, "twin": t})
        m = seren_mean(quantity)
        t = float(result[column].mean()) if column else np.nan
        rows.append({"quantity": quantity, "quantile": "mean", "measured": m, "twin": t})
    out = pd.DataFrame(rows)
    out["ratio"] = out["twin"] / out["measured"]
    out["difference"] = out["twin"] - out["measured"]
    return out.set_index(["quantity", "quantile"])


#: Quantiles of the thermal comparison [%]: Seren's p99 power (437 W) is above the 400 W limit,
#: an excursion the twin's steady GPU does not hold, so it has no twin temperature to compare.
THERMAL_QUANTILES = (10, 25, 50, 75, 90)


def compare_thermal(curve: pd.DataFrame, quantiles=THERMAL_QUANTILES) -> pd.DataFrame:
    """Die temperature at the measured power: the thermal path alone, without the workload mapping.

    Under the monotone assumption Seren's power and temperature quantiles pair up (the GPU at the
    q-th power quantile is at the q-th temperature quantile), which makes them a measured curve of
    die temperature against power. ``curve`` is the twin's (:func:`run_fleet` with the ``ladder``
    driver: each server's GPUs at neighbouring loads); it is read at each measured power quantile.
    Rows ``p10``… with ``power`` [W], ``measured`` and ``twin`` [degC] and ``difference`` [K], and a
    row ``slope`` [K/W]: the rise of die temperature per watt between the lowest and highest
    quantile, measured and twin, with their ``ratio`` — independent of the inlet temperature.
    """
    q = np.asarray(quantiles, dtype=float)
    power = seren_quantiles("power", q)
    measured = seren_quantiles("t_gpu", q)
    ordered = curve.sort_values("p", kind="stable")
    twin = np.interp(power, ordered["p"].to_numpy(), ordered["t_die"].to_numpy())
    out = pd.DataFrame({"power": power, "measured": measured, "twin": twin},
                       index=pd.Index([f"p{x:g}" for x in quantiles], name="quantile"))
    out["difference"] = out["twin"] - out["measured"]
    dp = power[-1] - power[0]
    slope = pd.DataFrame({"power": dp, "measured": (measured[-1] - measured[0]) / dp,
                          "twin": (twin[-1] - twin[0]) / dp}, index=pd.Index(["slope"], name="quantile"))
    slope["ratio"] = slope["twin"] / slope["measured"]
    return pd.concat([out, slope])
