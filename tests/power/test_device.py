"""Device power model: measured idle, active idle, TDP at the rating point, leakage with
temperature and voltage, the power-limit clock, and thermal-governor recovery."""

from __future__ import annotations

import numpy as np
import pytest

from twin.catalog import load_catalog
from twin.power.device import (
    active_power,
    clock_for_power,
    device_power,
    dynamic_power_full,
    idle_power,
    leakage_power,
)
from twin.power.governor import CLOCK_MIN, power_limit_governor, thermal_governor
from twin.sim.build import CHIP_FIELDS

ACCELERATORS = ["trn3", "trn2", "trn4", "h200", "h100-sxm", "h100-pcie", "a100-sxm", "b200", "gb200", "gb300"]
ALL = ACCELERATORS + ["graviton4", "efa", "neuronswitch", "grace", "nvswitch", "connectx8"]


def _chip(name):
    c = load_catalog().chips[name]
    p = {f: getattr(c, f).si for f in CHIP_FIELDS}
    p["p_dyn"] = dynamic_power_full(p["tdp"], p["p_active_idle"], p["p_leak_ref"], p["t_ref"], p["t_idle"],
                                    p["leak_beta"])
    return p


@pytest.mark.parametrize("chip", ALL)
def test_tdp_at_full_load_and_maximum_operating_temperature(chip):
    """The rating point: u = 1, f = 1, T = t_ref draws the TDP (exact by construction)."""
    p = _chip(chip)
    assert device_power(1.0, 1.0, p["t_ref"], True, p) == pytest.approx(p["tdp"], rel=1e-12)


@pytest.mark.parametrize("chip", ALL)
def test_whole_chip_idle_equals_measured_idle_at_the_idle_temperature(chip):
    """Idle is counted once: at t_idle the model returns the catalogue's measured p_idle, and
    the active floor its p_active_idle. Tolerance 5 % (the issue's bar); the model is exact."""
    p = _chip(chip)
    assert device_power(0.0, 1.0, p["t_idle"], False, p) == pytest.approx(p["p_idle"], rel=0.05)
    assert device_power(0.0, 1.0, p["t_idle"], False, p) == pytest.approx(p["p_idle"], rel=1e-12)
    assert device_power(0.0, 1.0, p["t_idle"], True, p) == pytest.approx(p["p_active_idle"], rel=1e-12)


def test_a100_idle_matches_fleet_telemetry():
    """AcmeTrace Seren (A100 SXM 80GB fleet): GPUs at 0 % utilisation draw a median 64 W at a
    mean 29 degC (shipped CDF, twin/data/calibration/acmetrace). The model at 29 degC is within
    5 % (the issue's tolerance); the leakage term moves it by well under 1 W per kelvin."""
    import pandas as pd

    from twin.data import calibration_file

    power = pd.read_csv(calibration_file("acmetrace/gpu_power_seren.csv"))
    util = pd.read_csv(calibration_file("acmetrace/util_gpu_seren.csv"))
    temp = pd.read_csv(calibration_file("acmetrace/gpu_temp_seren.csv"))
    idle = util["gpu_util_pct"].to_numpy() == 0
    measured = float(np.median(power["gpu_power_w"].to_numpy()[idle][5:]))  # drop the 0th percentile
    t = float(temp["gpu_temp_c"].to_numpy()[idle].mean())
    p = _chip("a100-sxm")
    assert device_power(0.0, 1.0, t, False, p) == pytest.approx(measured, rel=0.05)


def test_idle_leakage_follows_temperature_by_the_gated_share():
    """Idle at T_idle + 10 K exceeds p_idle by g·P_leak,ref·(e^{β(T−T_ref)} − e^{β(T_idle−T_ref)})."""
    p = _chip("trn3")
    t = p["t_idle"] + 10.0
    want = p["p_idle"] + p["idle_leak_fraction"] * p["p_leak_ref"] * (
        np.exp(p["leak_beta"] * (t - p["t_ref"])) - np.exp(p["leak_beta"] * (p["t_idle"] - p["t_ref"])))
    assert idle_power(t, p["p_idle"], p["t_idle"], p["p_leak_ref"], p["t_ref"], p["leak_beta"],
                      p["idle_leak_fraction"]) == pytest.approx(want, rel=1e-12)


def test_leakage_scales_with_voltage_squared_along_dvfs():
    """L(f) ∝ f^(α−1) (V² with V² ∝ f^(α−1)) and ∝ e^{βΔT}."""
    p = _chip("h100-sxm")
    args = (p["p_leak_ref"], p["t_ref"], p["leak_beta"], p["clock_exponent"])
    full = leakage_power(p["t_ref"], 1.0, *args)
    assert full == pytest.approx(p["p_leak_ref"], rel=1e-12)
    assert leakage_power(p["t_ref"], 0.6, *args) / full == pytest.approx(0.6 ** (p["clock_exponent"] - 1), rel=1e-12)
    assert leakage_power(p["t_ref"] - 20, 1.0, *args) / full == pytest.approx(np.exp(-20 * p["leak_beta"]), rel=1e-12)


def test_clock_scales_dynamic_power_as_f_alpha():
    p = _chip("trn3")
    full = device_power(1.0, 1.0, 60.0, True, p) - device_power(0.0, 1.0, 60.0, True, p)
    half = device_power(1.0, 0.5, 60.0, True, p) - device_power(0.0, 0.5, 60.0, True, p)
    assert half / full == pytest.approx(0.5 ** p["clock_exponent"], rel=1e-12)


@pytest.mark.parametrize("chip", ACCELERATORS)
@pytest.mark.parametrize("u", [0.3, 0.8, 1.0, 1.4])
@pytest.mark.parametrize("t", [40.0, 70.0, 95.0])
def test_power_limit_clock_puts_power_on_the_limit(chip, u, t):
    """The governor's clock gives P(u, f, T) = P_lim when the limit binds (to 1e-9 relative:
    Newton converged), and f = 1 with P ≤ P_lim when it does not."""
    p = _chip(chip)
    for frac in (1.0, 0.7):
        lim = frac * p["tdp"]
        f = power_limit_governor(lim, u, t, p, clock_min=0.0)
        power = active_power(u, f, t, p["p_active_idle"], p["t_idle"], p["p_dyn"], p["p_leak_ref"], p["t_ref"],
                             p["leak_beta"], p["clock_exponent"])
        if f < 1.0:
            assert power == pytest.approx(lim, rel=1e-9)
        else:
            assert power <= lim * (1 + 1e-12)


def test_power_limit_clock_by_hand_for_a_capped_a100():
    """Hand calculation (bisection on the same closed form) for an A100 held at 250 W at u = 1 and
    70 degC: a + b·f^1.5 + d·f^2.5 = 250 with a = p_ai − L(1, T_idle), b = L(1, 70 °C), d = P_dyn."""
    p = _chip("a100-sxm")
    a = p["p_active_idle"] - p["p_leak_ref"] * np.exp(p["leak_beta"] * (p["t_idle"] - p["t_ref"]))
    b = p["p_leak_ref"] * np.exp(p["leak_beta"] * (70.0 - p["t_ref"]))
    d = p["p_dyn"]
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if a + b * mid ** 1.5 + d * mid ** 2.5 < 250.0 else (lo, mid)
    assert clock_for_power(250.0, 1.0, 70.0, p) == pytest.approx(lo, abs=1e-9)


def test_power_limit_clock_floors_at_clock_min():
    """A limit below the active floor cannot be met: the clock stops at its minimum."""
    p = _chip("h100-sxm")
    assert power_limit_governor(50.0, 1.0, 60.0, p) == pytest.approx(CLOCK_MIN)


def test_governor_band_and_recovery_at_dvfs_speed():
    f = np.array([1.0, 0.8, 0.8, 0.8, 0.4])
    t = np.array([80.0, 95.0, 88.0, 80.0, 30.0])  # cool, hot, in band, below band, far below
    new = thermal_governor(f, t, t_throttle=90.0, hysteresis=3.0, dt=1.0)
    assert new[0] == 1.0           # never above 1
    assert new[1] == pytest.approx(0.8 - 0.02 * 5)   # falls at gain × excess
    assert new[2] == 0.8           # holds inside [87, 90]
    assert new[3] == pytest.approx(0.8 + 0.02 * 7)   # recovers in proportion to the margin
    assert new[4] == pytest.approx(1.0)              # 57 K below: back to full clock in one step
