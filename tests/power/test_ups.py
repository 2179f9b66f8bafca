"""UPS module sizing and losses against hand calculations and vendor figures."""

import numpy as np
import pytest

from twin.catalog.model import load_catalog
from twin.power.ups import UPS_MODES, ups_efficiency, ups_loss_coefficients, ups_losses, ups_modules

CAT = load_catalog()


def curve(name, mode="double_conversion"):
    c = getattr(CAT.ups[name], UPS_MODES[mode])
    return np.array([p[0] for p in c.points]), np.array([p[1] for p in c.points])


def test_modules_n_plus_one_from_design_load():
    # 2.0 MW on 500 kW modules: N = 4 exactly (not 5 from rounding), + 1 redundant.
    assert ups_modules(2.0e6, 500e3) == 5
    assert ups_modules(2.01e6, 500e3) == 6
    assert ups_modules(2.0e6, 500e3, redundant=0) == 4
    # headroom: at most 80 % per module → 2.0 / 0.4 = 5, + 1
    assert ups_modules(2.0e6, 500e3, max_load=0.8) == 6
    assert ups_modules(1.0, 500e3) == 2  # never fewer than 1 + R
    with pytest.raises(ValueError, match="max_load"):
        ups_modules(1e6, 500e3, max_load=0)


@pytest.mark.parametrize("name", ["ups-500kw-modern", "ups-1250kw"])
@pytest.mark.parametrize("mode", list(UPS_MODES))
def test_loss_model_reproduces_catalogue_curve(name, mode):
    x, eta = curve(name, mode)
    a = ups_loss_coefficients(x, eta)
    assert np.all(a >= 0)
    # Three physical terms fitted to 4–5 points: within 0.4 percentage points of each point
    # (the catalogue figures themselves are given to 0.1–0.5 points).
    assert np.max(np.abs(ups_efficiency(x, a) - eta)) < 4e-3


def test_modern_double_conversion_and_eco_match_vendor_figures():
    x = np.linspace(0.25, 1.0, 16)
    a_dc = ups_loss_coefficients(*curve("ups-500kw-modern"))
    a_eco = ups_loss_coefficients(*curve("ups-500kw-modern", "eco"))
    eta = ups_efficiency(x, a_dc)
    # Vendor documentation: 96.5–97.5 % from 25 to 100 % load in double conversion.
    assert eta.min() >= 0.965 and eta.max() <= 0.975
    # the README's account of this curve, to its one decimal: 96.8–97.2 %, above the Galaxy
    # VS/VX "up to 97 %" from 30 to 77 % load (the band's estimate, not a product figure)
    assert (round(100 * eta.min(), 1), round(100 * eta.max(), 1)) == (96.8, 97.2)
    fine = np.linspace(0.25, 1.0, 751)
    above = fine[ups_efficiency(fine, a_dc) > 0.97]
    assert (round(above.min(), 2), round(above.max(), 2)) == (0.30, 0.77)
    # eco (eConversion) ~99 %, "losses reduced by a factor of three": between 2× and 4× fewer.
    assert ups_efficiency(0.5, a_eco) >= 0.985
    ratio = (1 / ups_efficiency(0.5, a_dc) - 1) / (1 / ups_efficiency(0.5, a_eco) - 1)
    assert 2.0 < ratio < 4.5


def test_system_losses_by_hand():
    a = ups_loss_coefficients(*curve("ups-500kw-modern"))
    n = ups_modules(2.0e6, 500e3)  # 5 modules
    p = 1.6e6  # 80 % of the design load
    x = p / (n * 500e3)  # 0.64 per module
    hand = n * 500e3 * (a[0] + a[1] * x + a[2] * x * x)
    assert ups_losses(p, n, 500e3, a) == pytest.approx(hand, rel=1e-12)
    # and it agrees with the catalogue curve read at 64 % load to within 0.1 % of the load
    # (straight lines between curve points against the smooth loss model: up to 0.1 points)
    x_c, eta_c = curve("ups-500kw-modern")
    by_curve = p * (1 / np.interp(x, x_c, eta_c) - 1)
    assert abs(ups_losses(p, n, 500e3, a) - by_curve) < 1e-3 * p
    # no-load losses stay with the modules in service: an idle UPS still loses a₀ n P_r
    assert ups_losses(0.0, n, 500e3, a) == pytest.approx(n * 500e3 * a[0])


def test_module_management_keeps_the_modules_the_load_needs_plus_the_redundant():
    """Eaton VMMS / ABB Xtra VFI: n_active = min(n, max(⌈P / (0.8 P_r)⌉, 1) + R), by hand."""
    from twin.power.ups import ups_active_modules

    p = np.array([0.0, 0.39e6, 0.5e6, 1.2e6, 2.0e6])
    # 0.4 MW per active 500 kW module at the 80 % limit: 1, 1, 2, 3, 5 needed, + 1, at most 4
    assert ups_active_modules(p, 4, 500e3).tolist() == [2, 2, 3, 4, 4]
    assert ups_active_modules(p, 4, 500e3, redundant=0, max_load=1.0).tolist() == [1, 1, 1, 3, 4]
    with pytest.raises(ValueError, match="max_load"):
        ups_active_modules(p, 4, 500e3, max_load=1.5)


def test_module_management_in_the_chain_by_hand():
    """The power chain with module management, from the catalogue: the active modules share the
    load on the same double-conversion loss model and each parked one loses its
    ``suspended_loss``. A 1.47 MW hall (4 × 500 kW, N+1) at 0.5 MW keeps 3 active: by hand to
    1e-12 (same arithmetic), and 0.14 % of the load less than with all 4 active (the flat curve
    gains little). The Phoenix hall's 0.31 MW design needs 1 + 1 modules of 500 kW, or 2 + 1 of
    250 kW (the size it is given, :func:`twin.power.selection.ups_entry`): all stay active at the
    day's load (above 0.2 MW two 250 kW modules are needed at 80 %), so module management
    cannot lower its UPS losses (the chain's 4.2 % of IT stays)."""
    from twin.power.chain import PowerChain

    ups, tr = CAT.ups["ups-500kw-modern"], CAT.transformers["mv-transformer-1000kva"]
    x, eta = curve("ups-500kw-modern")
    a = ups_loss_coefficients(x, eta)
    plain = PowerChain(1.47e6, ups, "double_conversion", tr)
    managed = PowerChain(1.47e6, ups, "double_conversion", tr, module_management=0.8)
    assert plain.n_modules == managed.n_modules == 4
    p = 0.5e6
    assert managed.active_modules(p) == 3
    by_hand = 3 * 500e3 * (a[0] + a[1] * p / 1.5e6 + a[2] * (p / 1.5e6) ** 2) + 1 * 500e3 * 0.001
    assert managed.ups_loss(p) == pytest.approx(by_hand, rel=1e-12)
    assert plain.ups_loss(p) == pytest.approx(float(ups_losses(p, 4, 500e3, a)), rel=1e-12)
    # the saving: one module's no-load loss, less the parked module's and the extra I²R of
    # three modules carrying what four did: 0.14 % of the load
    saving = 500e3 * (a[0] - 0.001) - a[2] * p * p * (1 / 1.5e6 - 1 / 2e6)
    assert plain.ups_loss(p) - managed.ups_loss(p) == pytest.approx(saving, rel=1e-9)
    assert saving / p == pytest.approx(0.0014, abs=5e-5)
    # at 1.2 MW all 4 are needed at the 80 % limit: identical
    assert managed.ups_loss(1.2e6) == plain.ups_loss(1.2e6)
    # a mains failure makes every module active again (Xtra VFI is deactivated on battery)
    managed.on_battery = True
    assert managed.active_modules(p) == 4 and managed.ups_loss(p) == plain.ups_loss(p)
    managed.on_battery = False
    phoenix = PowerChain(0.3129e6, ups, "double_conversion", tr, module_management=0.8)
    assert phoenix.n_modules == 2
    for p in (0.1e6, 0.28e6, 0.3129e6):
        assert phoenix.active_modules(p) == 2
        assert phoenix.ups_loss(p) == PowerChain(0.3129e6, ups, "double_conversion", tr).ups_loss(p)
    small = CAT.ups["ups-250kw-modern"]
    phoenix = PowerChain(0.3129e6, small, "double_conversion", tr, module_management=0.8)
    assert phoenix.n_modules == 3
    for p in (0.21e6, 0.28e6, 0.3129e6):
        assert phoenix.active_modules(p) == 3
        assert phoenix.ups_loss(p) == PowerChain(0.3129e6, small, "double_conversion", tr).ups_loss(p)
    assert phoenix.active_modules(0.19e6) == 2  # one 250 kW module at 76 %, + 1


def test_module_management_needs_double_conversion_and_a_parked_module_loss(tmp_path):
    """Scenario checks: module management with eco mode, or on a UPS entry without
    ``suspended_loss``, is one clear error naming the field."""
    from tests.conftest import SCENARIOS
    from twin.scenario import load_scenario
    from twin.scenario.errors import ScenarioError
    from twin.sim.driver import Simulation

    with pytest.raises(ScenarioError, match=r"plant\.ups.*double conversion only"):
        load_scenario(SCENARIOS / "design-day-phoenix.yaml",
                      {"plant": {"ups": {"mode": "eco", "module_management": {"max_load": 0.8}}}})
    loaded = load_scenario(SCENARIOS / "design-day-phoenix.yaml",
                           {"time": {"duration": "1 min"},
                            "plant": {"ups": {"template": "ups-1250kw", "module_management": {}}}})
    with pytest.raises(ScenarioError, match=r"plant\.ups\.module_management.*suspended_loss"):
        Simulation(loaded)
