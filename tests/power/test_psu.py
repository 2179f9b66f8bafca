"""Power-shelf efficiency against the catalogue's published curve."""

from __future__ import annotations

import numpy as np
import pytest

from twin.catalog import load_catalog
from twin.power.psu import psu_efficiency, shelf_input_power


def _curve(name):
    pts = load_catalog().power_shelves[name].efficiency.points
    return np.array([p[0] for p in pts]), np.array([p[1] for p in pts])


def test_titanium_points_reproduced():
    """80 PLUS Titanium (230 V redundant): 90/94/96/91 % at 10/20/50/100 % load, exactly."""
    loads, etas = _curve("titanium-shelf-33kw")
    got = psu_efficiency(np.array([0.1, 0.2, 0.5, 1.0]), loads, etas)
    np.testing.assert_allclose(got, [0.90, 0.94, 0.96, 0.91], rtol=0, atol=1e-12)


def test_light_load_keeps_fixed_losses():
    """Below 10 % load the loss stays at its 10 % value: P_in − P_out = 0.1·(1/0.9 − 1)·rating."""
    loads, etas = _curve("titanium-shelf-33kw")
    rating = 33_000.0
    for x in (0.01, 0.05, 0.09):
        p_out = x * rating
        p_in = shelf_input_power(np.array([p_out]), rating, loads, etas)[0]
        assert p_in - p_out == pytest.approx(0.1 * (1 / 0.9 - 1) * rating, rel=1e-12)
    assert shelf_input_power(np.array([0.0]), rating, loads, etas)[0] == 0.0


def test_interpolation_between_points():
    loads, etas = _curve("titanium-shelf-33kw")
    assert psu_efficiency(np.array([0.35]), loads, etas)[0] == pytest.approx(0.95, abs=1e-12)
