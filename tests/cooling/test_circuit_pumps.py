"""Pumps of the plant's water circuits: parallel pumps selected for the circuit's design flow,
on their curve under differential-pressure control, against hand calculations."""

from __future__ import annotations

import numpy as np
import pytest

from twin.catalog.model import load_catalog
from twin.cooling.circuit_pumps import CircuitPumps
from twin.scenario.errors import FieldError

PUMP = load_catalog().pumps["facility-water-pump"]


def _hand(q, q_d, n):
    """P = Q Δp / (η η_drive) with Δp = Δp_i + (Δp_c − Δp_i)(Q/Q_d)², each of n pumps rated Q_d/n."""
    p0, pd = PUMP.shutoff_pressure.si, PUMP.design_pressure.si
    qp = q_d / n
    a = (p0 - pd) / qp ** 2
    dp = PUMP.index_pressure.si + (PUMP.circuit_pressure.si - PUMP.index_pressure.si) * (q / q_d) ** 2
    speed = max(np.sqrt((dp + a * (q / n) ** 2) / p0), PUMP.min_speed.si)
    r = q / (n * speed * qp)
    return q * dp / (PUMP.efficiency.si * (2 * r - r * r) * PUMP.drive_efficiency.si), speed


def test_two_cdus_get_two_pumps_in_parallel_by_hand():
    """Two 1.35 MW CDUs at 2,000 L/min each: 4,000 L/min needs two 3,000 L/min-class pumps, each
    selected for 2,000 L/min. At design flow they run at √((180 + 150) / 400) = 90.8 % speed,
    r = 1 / 0.908, η = 0.76 (2r − r²) = 0.753: P = 0.0667 × 180 kPa / (0.753 × 0.92) = 17.3 kW;
    at a fifth of the flow the held 70 kPa keeps the power near the flow's share, not its cube."""
    q_d = 4000 / 6e4
    pumps = CircuitPumps(PUMP, q_d)
    assert pumps.n == 2
    for frac in (1.0, 0.5, 0.2, 0.05):
        hand, speed = _hand(frac * q_d, q_d, 2)
        assert pumps.power(frac * q_d) == pytest.approx(hand, rel=1e-9)
    hand, speed = _hand(q_d, q_d, 2)
    assert speed == pytest.approx(np.sqrt(330 / 400), rel=1e-9)
    assert hand == pytest.approx(17.3e3, rel=0.01)
    # however little the flow, the speed stays where the curve gives the held index pressure,
    # √(Δp_index / Δp₀) = √(70 / 400) = 41.8 %, above the drive's 30 % minimum
    assert _hand(0.05 * q_d, q_d, 2)[1] == pytest.approx(np.sqrt(70 / 400), rel=0.01)
    p20 = pumps.power(0.2 * q_d)
    assert 0.2 * 0.3 * hand < p20 < 0.2 * 1.2 * hand  # ~flow-proportional, far above the cube law's 0.8 %
    assert pumps.power(0.0) == 0.0
    np.testing.assert_allclose(pumps.power(np.array([0.2, 1.0]) * q_d), [p20, pumps.power(q_d)], rtol=1e-12)


def test_a_circuit_the_pumps_cannot_serve_is_a_field_error():
    # one pump at full speed gives 400 − 150 = 250 kPa at its rated flow: not a 300 kPa circuit
    steep = PUMP.model_copy(update={"circuit_pressure": PUMP.circuit_pressure.model_copy(
        update={"value": "300 kPa", "si": 300e3})})
    with pytest.raises(FieldError, match="circuit_pressure 300 kPa"):
        CircuitPumps(steep, 2000 / 6e4)
