"""The Seren-like fleet against AcmeTrace's measured distributions (README, Fidelity).

AcmeTrace, Shanghai AI Lab / InternLM (CC-BY 4.0; NSDI 2024; twin/data/calibration/acmetrace):
cluster-wide CDFs of per-GPU power and GPU temperature of the Seren cluster (A100 SXM 80GB, 400 W,
LLM development, idle GPUs included). ``scenarios/seren-fleet.yaml`` gives its 256 GPUs Seren's
GPU-utilisation distribution through the mapping fitted on BioHPC (nothing is fitted on Seren: all
of it is held out), and the twin's quantiles are compared with the measured ones. Marginal
quantiles only: the comparison assumes power and temperature are monotone in utilisation across
the GPUs (checked in the twin below; an assumption about the fleet).

The thermal path is also checked on its own: the twin's die temperature read at Seren's power
quantiles (the fleet at evenly spread loads), against Seren's temperature quantiles.

Two kinds of check, each quantile in one:

- bars the twin is expected to meet, with the reason for each tolerance;
- known misses, held to the README's figures so that a change of the model that moves them
  updates the row: the twin draws far more than Seren at the median (Seren's median GPU has
  kernels resident — GPU utilisation 99 % — and draws 96 W, near active idle: utilisation does
  not say what a kernel draws), and less in the top decile (the BioHPC mapping puts a fully busy
  GPU at 0.83 of its dynamic power, ~330 W, where Seren's heaviest jobs run at the 400 W limit
  and above it in excursions).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from twin.workload.fleet import (
    REPLAY,
    THERMAL_QUANTILES,
    VARIANTS,
    compare,
    compare_thermal,
    demanded_utilisation,
    fleet_devices,
    fleet_fidelity_rows,
    replay_table,
    run_fleet,
    seren_cdf,
    variant_table,
)

#: Power quantiles of idle GPUs: the catalogue's ``p_idle`` is Seren's own median idle power, so
#: this checks the idle model's bookkeeping (leakage at the twin's idle die temperature), ±5 %.
IDLE_POWER = ("p10", "p25")
#: The busy GPUs' p75: the project's bar for power held out on another period (BioHPC, ±15 %).
BUSY_POWER = ("p75",)
#: Die temperature [K]: the inlet is an estimate (22 degC; ASHRAE's recommended 18-27 degC is
#: ±4.5 K around its centre) and the GPU heat sinks see the server's mixed exhaust, host heat
#: included (~5 K at idle, not modelled): ±8 K where the twin's power is within its bars or the
#: temperature does not follow the power miss (p90: Seren's busiest GPUs draw more than the
#: twin's, and at equal power read cooler by the level of the thermal check below). p99 follows
#: it: Seren's p99 GPU draws 437 W, an excursion above the 400 W limit, the twin's 329 W (108 W
#: at ~0.1 K/W is ~11 K), so it is a known miss below.
DIE_TEMPERATURE = {"p10": 8.0, "p25": 8.0, "p90": 8.0}
#: Die temperature at the measured power (the thermal path alone): the rise per watt between the
#: p10 and p90 power quantiles, ±15 % — it does not depend on the inlet, and the heat sink's and
#: package's resistances and the server's air flow behind it are estimates (±15 % spans about
#: ±20 % of air flow) (the BioHPC PCIe card's fitted heat sink is 4.4×
#: its estimate, so this is a real check of the SXM one); Seren reads whole kelvins, 3 % of its 33 K
#: rise. The level at each quantile: ±8 K, the inlet and air path as for DIE_TEMPERATURE.
SLOPE = 0.15
LEVEL = 8.0
#: Known misses as the README states them: power ratio twin / measured (±10 % of it) and die
#: temperature difference twin − measured [K] (±2 K: the reading's 1 K resolution, twice).
KNOWN_POWER = {"p50": 3.38, "p90": 0.83, "p99": 0.75, "mean": 1.42}
KNOWN_TEMPERATURE = {"p50": 20.5, "p75": 6.6, "p99": -9.2, "mean": 8.6}
#: Memory (HBM) temperature, twin − measured [K] (±2 K, as the die's): the A100's HBM node from
#: catalogue estimates, nothing fitted on Seren. The twin's stacks run below their die on every
#: GPU; Seren's memory reads 15 K above its dies at p10 and level with them at p99 (README).
KNOWN_MEMORY = {"p10": -10.9, "p25": -13.9, "p50": 3.5, "p75": -4.5, "p90": -9.3, "p99": -14.3, "mean": -5.0}


@pytest.fixture(scope="module")
def result():
    return run_fleet()


@pytest.fixture(scope="module")
def table(result):
    return compare(result)


def test_replay_is_the_measured_distribution():
    """The shipped replay table is what twin.workload.fleet draws, and its idle share is Seren's."""
    shipped = pd.read_csv(REPLAY)
    devices = fleet_devices()
    drawn = replay_table(devices, demanded_utilisation(len(devices)))
    assert list(shipped["device"]) == list(drawn["device"]) and len(devices) == 256
    np.testing.assert_allclose(shipped["u"], drawn["u"], atol=1e-6)
    cdf, util = seren_cdf("gpu_util")
    idle_share = cdf[util > 0][0] / 100.0  # the first cumulative share with a kernel running
    assert abs((shipped["u"] == 0).mean() - idle_share) <= 1.0 / len(devices) + 1e-3


def test_power_and_temperature_are_monotone_in_utilisation(result):
    """The assumption behind comparing marginal quantiles holds in the twin."""
    ordered = result.sort_values("u", kind="stable")
    assert (np.diff(ordered["p"]) >= -1e-6).all()
    assert (np.diff(ordered["t_die"]) >= -0.05).all()  # neighbours in one server share its air


@pytest.mark.parametrize("q", IDLE_POWER)
def test_idle_power_quantiles(table, q):
    assert abs(table.loc[("power", q), "ratio"] - 1) <= 0.05, table.loc["power"]


@pytest.mark.parametrize("q", BUSY_POWER)
def test_busy_power_quantile(table, q):
    assert abs(table.loc[("power", q), "ratio"] - 1) <= 0.15, table.loc["power"]


@pytest.mark.parametrize("q", list(DIE_TEMPERATURE))
def test_die_temperature_quantiles(table, q):
    assert abs(table.loc[("t_gpu", q), "difference"]) <= DIE_TEMPERATURE[q], table.loc["t_gpu"]


@pytest.mark.parametrize("q", list(KNOWN_POWER))
def test_known_power_misses_are_the_readme_figures(table, q):
    assert table.loc[("power", q), "ratio"] == pytest.approx(KNOWN_POWER[q], rel=0.10), table.loc["power"]


@pytest.mark.parametrize("q", list(KNOWN_TEMPERATURE))
def test_known_temperature_misses_are_the_readme_figures(table, q):
    assert table.loc[("t_gpu", q), "difference"] == pytest.approx(KNOWN_TEMPERATURE[q], abs=2.0)


@pytest.mark.parametrize("q", list(KNOWN_MEMORY))
def test_memory_temperature_misses_are_the_readme_figures(table, q):
    assert table.loc[("t_memory", q), "difference"] == pytest.approx(KNOWN_MEMORY[q], abs=2.0), table.loc["t_memory"]


def test_memory_runs_below_its_die_in_the_twin_and_above_it_in_seren(result, table):
    """The structural miss the README states: each twin GPU's stacks are cooler than its die
    (they share the heat sink and carry a 7.4 W floor plus the bits they move, 57 W of the
    busiest GPUs' 328 W, through a comparable resistance),
    while Seren's memory quantiles are at or above its die quantiles everywhere."""
    assert (result["t_hbm"] < result["t_die"]).all()
    measured = table.loc["t_memory", "measured"] - table.loc["t_gpu", "measured"]
    assert (measured.drop("mean") >= 0).all() and measured["p10"] >= 10


@pytest.fixture(scope="module")
def ladder():
    return {inlet: run_fleet(driver="ladder", cold_aisle=inlet) for inlet in (None, 18.0, 25.0)}


@pytest.fixture(scope="module")
def thermal(ladder):
    return {inlet: compare_thermal(run) for inlet, run in ladder.items()}


def test_die_temperature_rise_per_watt(thermal):
    slope = thermal[None].loc["slope"]
    assert abs(slope["ratio"] - 1) <= SLOPE, slope.to_dict()


def test_rise_per_watt_does_not_depend_on_the_inlet(thermal):
    """What makes the slope the inlet-free check: 7 K of inlet moves it by less than 3 %."""
    slopes = [thermal[k].loc["slope", "twin"] for k in thermal]
    assert max(slopes) / min(slopes) - 1 < 0.03, slopes


@pytest.mark.parametrize("q", [f"p{x:g}" for x in THERMAL_QUANTILES])
def test_die_temperature_at_the_measured_power(thermal, q):
    assert abs(thermal[None].loc[q, "difference"]) <= LEVEL, thermal[None]


@pytest.fixture(scope="module")
def variants(result):
    return {"default": result, **{label: run_fleet(**kw) for label, kw in VARIANTS.items()}}


def test_readme_rows_and_table_are_what_the_twin_gives(result, ladder, variants):
    """The README's four fleet rows and its table of the fleet under other choices are what
    fleet_fidelity_rows and variant_table print (regenerate them with
    ``python benchmarks/fleet_fidelity.py``)."""
    runs = {("gpu_util", None): result, ("gpu_util", 18.0): variants["inlet 18 °C"],
            ("gpu_util", 25.0): variants["inlet 25 °C"], **{("ladder", k): v for k, v in ladder.items()}}
    # the air-flow sensitivity runs (two more ladders) are made by fleet_fidelity_rows itself
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    for row in fleet_fidelity_rows(runs) + variant_table(variants):
        assert row in readme, row[:120]


def test_power_excursion_is_the_measured_99th_percentile():
    """The A100 SXM's catalogue excursion above its limit is Seren's p99 power over the 400 W TDP
    (to the catalogue's two decimals)."""
    from twin.catalog import load_catalog
    from twin.workload.fleet import seren_quantiles

    chip = load_catalog().chips["a100-sxm"]
    assert chip.power_excursion.si == pytest.approx(seren_quantiles("power", [99])[0] / chip.tdp.si, abs=0.005)
