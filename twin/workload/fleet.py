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
    ``shuffled`` assigns them in a seeded random order (busy and idle GPUs side by side in every
    server).
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
              path: Path = SCENARIO, seed: int = 0, air_flow: float | None = None) -> pd.DataFrame:
    """Run the fleet scenario to steady state; per GPU: ``u``, ``p`` [W], ``t_die`` and ``t_hbm`` [degC].

    ``cold_aisle`` [degC] and ``air_flow`` (each HGX A100 server's, [m³/s]) replace the scenario's
    estimates when given.

    The default (GPU utilisation, packed, the scenario's inlet) replays the shipped table; other
    drivers and placements write their own table to a temporary folder.
    """
    from twin.scenario import load_scenario
    from twin.sim.driver import Simulation
    from twin.export.dataset import build_tree

    over: dict = {}
    if cold_aisle is not None:
        over["site"] = {"cold_aisle": f"{cold_aisle} degC"}
    if air_flow is not None:
        over["catalog"] = {"sleds": {"a100-hgx": {"air_flow": {"value": f"{air_flow} m**3/s",
                                                               "source": "estimate: sensitivity"}}}}
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
    return pd.DataFrame({"u": gpu["u"].values, "p": gpu["p"].values, "t_die": gpu["t_die"].values,
                         "t_hbm": gpu["t_hbm"].values},
                        index=pd.Index(gpu["device"].values, name="device"))


def compare(result: pd.DataFrame, quantiles=QUANTILES) -> pd.DataFrame:
    """Twin against Seren at each quantile and the mean: rows (quantity, ``p10``… or ``mean``) with measured,
    twin, ratio (twin / measured) and difference (twin − measured; kelvin for temperatures).
    Memory temperature (``t_memory``) is the A100's HBM node (catalogue figures, none fitted on
    Seren).
    """
    q = np.asarray(quantiles, dtype=float)
    rows = []
    for quantity, column in (("power", "p"), ("t_gpu", "t_die"), ("t_memory", "t_hbm")):
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


#: Server air flows [m³/s] of the thermal comparison's sensitivity: ±25 % about the catalogue's
#: ``a100-hgx`` estimate of 0.40 m³/s.
AIR_FLOWS = (0.3, 0.5)
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


def _signed(x: float, digits: int = 1) -> str:
    """A difference with its sign, the minus as U+2212 (as the README writes it)."""
    return f"{'+' if x >= 0 else '−'}{abs(x):.{digits}f}"


def fleet_fidelity_rows(runs: dict | None = None) -> list[str]:
    """The README Fidelity rows of the fleet comparison (markdown), from the twin's runs.

    ``runs`` maps (driver, inlet) → :func:`run_fleet` result for ("gpu_util", None),
    ("gpu_util", 18.0), ("gpu_util", 25.0) and ("ladder", None/18.0/25.0), and ("air", flow) → the
    ladder at each of :data:`AIR_FLOWS`; missing ones are run.
    """
    runs = dict(runs or {})
    for key in [(d, i) for d in ("gpu_util", "ladder") for i in (None, 18.0, 25.0)]:
        if key not in runs:
            runs[key] = run_fleet(driver=key[0], cold_aisle=key[1])
    for flow in AIR_FLOWS:
        if ("air", flow) not in runs:
            runs[("air", flow)] = run_fleet(driver="ladder", air_flow=flow)
    air = {flow: compare_thermal(runs[("air", flow)]).loc["slope", "ratio"] for flow in AIR_FLOWS}
    table = compare(runs[("gpu_util", None)])
    power, temp, memory = (table.loc[k] for k in ("power", "t_gpu", "t_memory"))
    thermal = {i: compare_thermal(runs[("ladder", i)]) for i in (None, 18.0, 25.0)}
    th = thermal[None]
    levels = th.drop(index="slope")["difference"]
    cold = {i: compare(runs[("gpu_util", i)]).loc[("t_gpu", "p10"), "twin"] for i in (18.0, 25.0)}
    q = [f"p{x:g}" for x in QUANTILES]
    tq = [f"p{x:g}" for x in THERMAL_QUANTILES]
    util_p50 = seren_quantiles("gpu_util", [50])[0]
    sm_p50 = seren_quantiles("sm_active", [50])[0]
    mapping = biohpc_mapping()

    def lv(i):
        d = thermal[i].drop(index="slope")["difference"]
        return f"{_signed(d.min())} to {_signed(d.max())} K"

    return [
        "| per-GPU power distribution of a Seren-like fleet: 256 A100 SXM 80GB in 32 air-cooled HGX A100 servers "
        "(`scenarios/seren-fleet.yaml`), each GPU at one value of Seren's measured GPU utilisation (a stratified "
        "draw of the CDF, idle GPUs included, servers filled in order of utilisation) through the BioHPC-fitted "
        "mapping below; nothing fitted on Seren, so all of it is held out | AcmeTrace Seren CDFs, NSDI 2024 "
        "(\"AcmeTrace, Shanghai AI Lab / InternLM\", CC-BY 4.0, shipped) | "
        f"p10 {power.loc['p10', 'ratio']:.2f}, p25 {power.loc['p25', 'ratio']:.2f} (idle GPUs), "
        + ", ".join(f"{k} {power.loc[k, 'ratio']:.2f}" for k in q[2:])
        + f"; mean {power.loc['mean', 'ratio']:.2f} ({power.loc['mean', 'twin']:.0f} W against "
        f"{power.loc['mean', 'measured']:.0f} W) | idle p10, p25 ±5 % (bookkeeping: `p_idle` is Seren's own idle "
        "median); p75 ±15 % (the held-out power bar); p50, p90, p99 and the mean are misses held to these figures "
        "±10 % (`tests/workload/test_fleet_fidelity.py`) | what a busy GPU draws: Seren's median GPU has kernels "
        f"resident (GPU utilisation {util_p50:.0f} %, SM activity {sm_p50:.0f} %) and draws "
        f"{power.loc['p50', 'measured']:.0f} W, near active idle (kernels resident but stalled, e.g. waiting on "
        "peers or the host: the CDFs cannot say which jobs), which utilisation cannot tell from a compute-bound "
        f"kernel; the BioHPC mapping puts every fully busy GPU at {mapping['activity']:.2f} of its dynamic power "
        f"(~{power.loc['p90', 'twin']:.0f} W), where Seren's heaviest jobs hold the 400 W limit (p90 "
        f"{power.loc['p90', 'measured']:.0f} W) and exceed it in excursions (p99 {power.loc['p99', 'measured']:.0f} "
        "W). Marginal quantiles only: the comparison assumes power and temperature monotone in utilisation across "
        "the GPUs (true in the twin, tested; assumed of the fleet) |",
        "| GPU (die) temperature distribution, same fleet; inlet 22 °C (estimate: Seren's coldest GPU reads 23 °C "
        "and a die is never below its inlet air), server air flow the catalogue's `a100-hgx` estimate (~850 CFM) "
        "| AcmeTrace Seren (CC-BY 4.0, shipped) | twin − measured: "
        + ", ".join(f"{k} {_signed(temp.loc[k, 'difference'])} K" for k in q)
        + f"; mean {_signed(temp.loc['mean', 'difference'])} K | p10, p25, p90 ±8 K (the inlet is an "
        "estimate: ±4.5 K spans ASHRAE's recommended 18–27 °C; and the air path below); p50, p75, p99 and the "
        "mean are misses held to these figures ±2 K (same; p99 follows the power miss: Seren's p99 GPU draws "
        f"{power.loc['p99', 'measured']:.0f} W, above the 400 W limit, the twin's {power.loc['p99', 'twin']:.0f} W) "
        "| the inlet and the server's air flow (estimates; at 18 °C inlet "
        f"the idle dies read {cold[18.0]:.1f} °C, at 25 °C {cold[25.0]:.1f} °C, measured p10 "
        f"{temp.loc['p10', 'measured']:.0f} and p25 {temp.loc['p25', 'measured']:.0f} °C); each GPU heat sink "
        "sees its server's mixed exhaust air, host and fan heat included (~5 K at idle), where an HGX A100's GPU "
        "tray has its own air path; the mid-range follows the power miss; p90 meets Seren only because the twin's "
        f"busiest GPUs draw {100 * (1 - power.loc['p90', 'ratio']):.0f} % less, while at equal power they run "
        f"{th.loc['p90', 'difference']:.1f} K warmer (next row) |",
        "| GPU die temperature at the measured power, the thermal path without the workload mapping: the same "
        "fleet with an eighth of its GPUs idle and the rest at loads spread evenly over 0..1, read at Seren's "
        "power quantiles p10–p90 and compared with its temperature quantiles (the monotone assumption pairs them) "
        "| AcmeTrace Seren (CC-BY 4.0, shipped) | rise per watt from p10 to p90 "
        f"({th.loc['p10', 'power']:.0f} → {th.loc['p90', 'power']:.0f} W): {th.loc['slope', 'ratio']:.2f} "
        f"({th.loc['slope', 'twin']:.3f} against {th.loc['slope', 'measured']:.3f} K/W; "
        f"{thermal[18.0].loc['slope', 'ratio']:.2f} and {thermal[25.0].loc['slope', 'ratio']:.2f} at 18 and 25 °C "
        f"inlet, {air[AIR_FLOWS[0]]:.2f} and {air[AIR_FLOWS[1]]:.2f} at {AIR_FLOWS[0]:g} and {AIR_FLOWS[1]:g} m³/s "
        "of server air flow instead of 0.4); twin − measured at "
        + ", ".join(f"{k} {_signed(levels[k])} K" for k in tq)
        + " | rise per watt ±15 % (inlet-free, but the heat sink and package resistances and the server's air "
        "flow behind it are estimates: ±15 % spans about ±20 % of air flow); each level "
        "±8 K (the inlet, as above) (`test_die_temperature_rise_per_watt`, "
        "`test_die_temperature_at_the_measured_power`) | the level, not the slope: at matched power the twin is "
        f"{lv(None)} off at 22 °C inlet ({lv(18.0)} at 18 °C, {lv(25.0)} at 25 °C), so the estimated inlet "
        f"or the mixed-exhaust air path holds the difference; Seren's p99 ({power.loc['p99', 'measured']:.0f} W) "
        "is an excursion above the 400 W limit, which a steady twin GPU does not hold |",
        "| GPU memory (HBM) temperature distribution, same fleet: the A100's HBM node (its five stacks lumped on "
        "the heat-sink base through 0.1 K/W, drawing a 7.4 W floor at idle plus 3.9 pJ per bit moved, the "
        "bandwidth used following the GPU's power above idle: 71 W at the 400 W TDP; catalogue estimates, "
        "nothing fitted on Seren) | AcmeTrace Seren (CC-BY 4.0, shipped): "
        + ", ".join(f"{k} {memory.loc[k, 'measured']:.0f}" for k in q)
        + " °C | twin − measured: "
        + ", ".join(f"{k} {_signed(memory.loc[k, 'difference'])} K" for k in q)
        + f"; mean {_signed(memory.loc['mean', 'difference'])} K | misses held to these figures ±2 K (the "
        "reading's 1 K resolution, twice) (`test_memory_temperature_misses_are_the_readme_figures`) | the "
        "structure, not a figure: in the twin the stacks hang off the heat sink beside the die, so they run "
        "below it on every GPU (idle "
        f"{memory.loc['p10', 'twin']:.1f} against a die at {temp.loc['p10', 'twin']:.1f} °C), where Seren's "
        f"memory reads {memory.loc['p10', 'measured'] - temp.loc['p10', 'measured']:.0f} K above its dies at "
        f"p10 and level with them at p99 ({memory.loc['p99', 'measured']:.0f} °C): the idle stacks' floor "
        "(refresh, standby, base die and PHYs, 7.4 W) lifts them 0.7 K over the heat-sink base; idle stacks "
        "that warm would need ~150 W through 0.1 K/W, so the memory is heated by something the twin does not couple "
        "to it (the GPU die through the interposer, the board under the package, the pre-heated air "
        "downstream on the tray) or its sensor reads the hot base die; p50 meets Seren only through the power "
        "miss (the twin's median GPU draws 3.4 times Seren's). Next: a die–HBM conductance through the "
        "interposer and a board path, each from a package thermal model or a measurement, not from this CDF |",
    ]


#: The variants of :func:`variant_table`: column label → :func:`run_fleet` arguments.
VARIANTS = {
    "SM activity as u": {"driver": "sm_active"},
    "shuffled placement": {"placement": "shuffled"},
    "inlet 18 °C": {"cold_aisle": 18.0},
    "inlet 25 °C": {"cold_aisle": 25.0},
}


def variant_table(runs: dict | None = None) -> list[str]:
    """The README's markdown table of the fleet under other choices, one at a time.

    ``runs`` maps ``"default"`` and each :data:`VARIANTS` label to a :func:`run_fleet` result;
    missing ones are run. Power columns: measured, the twin, SM activity as u, shuffled placement;
    die temperature columns: measured, the twin, inlet 18 and 25 °C, shuffled placement; then the
    HBM temperature, measured and the twin.
    """
    runs = dict(runs or {})
    if "default" not in runs:
        runs["default"] = run_fleet()
    for label, kw in VARIANTS.items():
        if label not in runs:
            runs[label] = run_fleet(**kw)
    t = {k: compare(v) for k, v in runs.items()}
    base = t["default"]
    power = [("measured", base.loc["power", "measured"]), ("twin", base.loc["power", "twin"])] + [
        (k, t[k].loc["power", "twin"]) for k in ("SM activity as u", "shuffled placement")]
    die = [("measured", base.loc["t_gpu", "measured"]), ("twin", base.loc["t_gpu", "twin"])] + [
        (k, t[k].loc["t_gpu", "twin"]) for k in ("inlet 18 °C", "inlet 25 °C", "shuffled placement")]
    header = (["quantile", "power measured (W)"] + [k for k, _ in power[1:]] + ["die measured (°C)"]
              + [k for k, _ in die[1:]] + ["HBM measured (°C)", "twin"])
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for q in base.loc["power"].index:
        cells = [q] + [f"{col[q]:.1f}" for _, col in power] + [f"{col[q]:.1f}" for _, col in die]
        cells += [f"{base.loc[('t_memory', q), x]:.1f}" for x in ("measured", "twin")]
        lines.append("| " + " | ".join(cells) + " |")
    return lines
