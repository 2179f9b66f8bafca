"""Device power model."""

from __future__ import annotations

import numpy as np
import pytest

from twin.catalog import load_catalog
from twin.power.device import device_power
from twin.power.governor import thermal_governor


def _params(name):
    c = load_catalog().chips[name]
    return dict(p_idle=c.p_idle.si, p_dyn=c.tdp.si - c.p_idle.si - c.p_leak_ref.si,
                p_leak_ref=c.p_leak_ref.si, t_ref=c.t_ref.si, leak_beta=c.leak_beta.si,
                clock_exponent=c.clock_exponent.si), c


@pytest.mark.parametrize("chip", ["trn3", "trn2", "h200", "gb300", "graviton4"])
def test_tdp_at_full_load_reference_temperature(chip):
    p, c = _params(chip)
    assert device_power(1.0, 1.0, c.t_ref.si, **p) == pytest.approx(c.tdp.si, rel=1e-12)


def test_leakage_grows_by_beta_per_kelvin():
    """Idle power at T_ref + 10 K exceeds that at T_ref by P_leak,ref·(e^{10β} − 1)."""
    p, c = _params("trn3")
    d = device_power(0.0, 1.0, c.t_ref.si + 10, **p) - device_power(0.0, 1.0, c.t_ref.si, **p)
    assert d == pytest.approx(c.p_leak_ref.si * (np.exp(10 * c.leak_beta.si) - 1), rel=1e-12)


def test_clock_scales_dynamic_power_as_f_alpha():
    p, c = _params("trn3")
    full = device_power(1.0, 1.0, 60.0, **p) - device_power(0.0, 1.0, 60.0, **p)
    half = device_power(1.0, 0.5, 60.0, **p) - device_power(0.0, 0.5, 60.0, **p)
    assert half / full == pytest.approx(0.5 ** c.clock_exponent.si, rel=1e-12)


def test_governor_band():
    f = np.array([1.0, 0.8, 0.8, 0.8])
    t = np.array([80.0, 95.0, 88.0, 80.0])  # cool, hot, in band, below band
    new = thermal_governor(f, t, t_throttle=90.0, hysteresis=3.0, dt=1.0)
    assert new[0] == 1.0           # never above 1
    assert new[1] == pytest.approx(0.8 - 0.02 * 5)   # falls at gain × excess
    assert new[2] == 0.8           # holds inside [87, 90]
    assert new[3] == pytest.approx(0.82)             # recovers, capped at 0.02/s
