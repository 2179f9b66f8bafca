"""Coolant property tables against reference values and the figures quoted for PG25."""

import numpy as np
import pytest

from twin.catalog.model import load_catalog
from twin.cooling.coolant import coolant_properties, convection_factor, flow_for_same_heat

CAT = load_catalog()
WATER = CAT.coolants["water"].properties.points
PG25 = CAT.coolants["pg25"].properties.points


def test_water_at_20_degC_matches_reference_values():
    w = coolant_properties(WATER, 20.0)
    # CRC Handbook / ISO TR 3666 at 20 °C: 998.2 kg/m³, 4182 J/kg/K, 1.0016 mPa s, 0.598 W/m/K;
    # 0.2 % covers the rounding of those references
    assert w.rho == pytest.approx(998.2, rel=2e-3)
    assert w.cp == pytest.approx(4182.0, rel=2e-3)
    assert w.mu == pytest.approx(1.0016e-3, rel=2e-3)
    assert w.k == pytest.approx(0.598, rel=2e-3)


def test_pg25_differs_from_water_by_the_quoted_amounts():
    w, g = coolant_properties(WATER, 35.0), coolant_properties(PG25, 35.0)
    # quoted for 25 % propylene glycol: c_p about 5–8 % lower, viscosity about 2×,
    # cold-plate heat transfer 15–20 % lower (laminar plates, n = 0.4), more flow for the heat
    assert 0.92 < g.cp / w.cp < 0.95
    assert 1.8 < g.mu / w.mu < 2.5
    factor = convection_factor(g, w, 0.4)
    assert 0.75 < factor < 0.85
    # by hand from the rows: k 0.7716, (ρ/μ) ratio^0.4, Pr ratio^(1/3)
    pr = (g.cp * g.mu / g.k) / (w.cp * w.mu / w.k)
    assert factor == pytest.approx((g.k / w.k) * ((g.rho / g.mu) / (w.rho / w.mu)) ** 0.4
                                   * pr ** (1 / 3), rel=1e-12)
    assert 1.03 < flow_for_same_heat(g, w) < 1.05


def test_viscosity_interpolation_between_rows():
    # log-linear in μ between 30 and 40 °C: the geometric mean at 35 °C
    g = coolant_properties(PG25, 35.0)
    assert g.mu == pytest.approx(np.sqrt(1.7761e-3 * 1.3530e-3), rel=1e-12)


@pytest.mark.parametrize("name, fluid", [("water", "Water"), ("pg25", "INCOMP::MPG[0.25]")])
def test_tables_agree_with_coolprop_between_rows(name, fluid):
    cp_ = pytest.importorskip("CoolProp.CoolProp")
    for t in (15.0, 25.0, 35.0, 45.0, 55.0):
        p = coolant_properties(CAT.coolants[name].properties.points, t)
        ref = [cp_.PropsSI(q, "T", t + 273.15, "P", 3e5, fluid) for q in ("D", "C", "V", "L")]
        # 10 K rows: linear (log-linear for μ) interpolation within 1 %
        assert [p.rho, p.cp, p.mu, p.k] == pytest.approx(ref, rel=1e-2)


def test_readme_pg25_factors_are_the_model():
    """The README's Physics section quotes three PG25 factors at 34 degC (heat per litre,
    loop resistance, pump pressure); each is what ``loop_coolant_factors`` gives, to half of
    the last printed digit (they are printed to three decimals)."""
    import re

    from tests.conftest import ROOT
    from twin.cooling.coolant import loop_coolant_factors

    physics = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## Physics", 1)[1].split("\n## ", 1)[0]
    quoted = [float(x) for x in re.findall(r"PG25 at 34\s+°C: ([\d.]+)", physics)]
    f = loop_coolant_factors(PG25, WATER, 34.0, [0.4])
    assert quoted == pytest.approx([f["heat"], f["resistance"], f["density"]], abs=5e-4)
