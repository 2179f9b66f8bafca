"""Power delivery: N+1 shelves with a failed PSU and transformer losses, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from twin.power.delivery import shelf_load_sharing, transformer_losses
from twin.power.psu import shelf_input_power

TITANIUM = (np.array([0.1, 0.2, 0.5, 1.0]), np.array([0.90, 0.94, 0.96, 0.91]))


def test_n_plus_1_shelf_with_one_psu_failed():
    """6 × 5.5 kW PSUs carrying 16.5 kW: 50 % load each (η 96 %). With one failed the other five
    carry 60 % each; η interpolates 96 % → 91 % over 50–100 %: 96 − 5·(0.1/0.5) = 95 %."""
    p_dc = 16_500.0
    x6, over6 = shelf_load_sharing(p_dc, 6, 0, 5_500.0)
    x5, over5 = shelf_load_sharing(p_dc, 6, 1, 5_500.0)
    assert x6 == pytest.approx(0.5) and x5 == pytest.approx(0.6)
    assert not over6 and not over5
    loss6 = shelf_input_power(np.array([p_dc]), 6 * 5_500.0, *TITANIUM)[0] - p_dc
    loss5 = shelf_input_power(np.array([p_dc]), 5 * 5_500.0, *TITANIUM)[0] - p_dc
    assert loss6 == pytest.approx(p_dc / 0.96 - p_dc, rel=1e-12)   # 687.5 W
    assert loss5 == pytest.approx(p_dc / 0.95 - p_dc, rel=1e-12)   # 868.4 W
    # Five failed: one PSU cannot carry 16.5 kW.
    assert shelf_load_sharing(p_dc, 6, 5, 5_500.0)[1]


def test_transformer_no_load_plus_copper():
    """2.5 MVA with 2.5 kW core and 20 kW copper loss at rating: at 1.25 MW, 2.5 + 20/4 = 7.5 kW."""
    assert transformer_losses(1.25e6, 2.5e6, 2_500.0, 20_000.0) == pytest.approx(7_500.0)
