"""The README's annual Leesburg controller table: the fixed and rule-based rows are these runs.

A year of ``control-leesburg.yaml`` (8,760 hourly intervals) under the scenario's fixed
set-points and under the rule-based controller, the README's command
``python benchmarks/control_leesburg.py --no-mpc``. The rows are compared cell by cell at the
digits the README prints (facility energy to 0.1 MWh, the change to 0.01 %, PUE to 4 decimals,
throttled device-seconds and chiller hours to the unit, goodput to 3 decimals, the hottest die
to 0.1 K, cost to the dollar); CPU time is the machine's, not the model's, and is not compared.
The issue's claim is asserted as well: the rule lowers the year's facility energy with no more
throttled device-seconds and no less goodput.
"""

from __future__ import annotations

import pytest

pytest.importorskip("gymnasium")

from tests.conftest import SCENARIOS  # noqa: E402
from twin.control.controllers import Fixed, RuleBased  # noqa: E402
from twin.control.evaluate import episode  # noqa: E402
from twin.control.reference import reference_case  # noqa: E402

#: The first cell of the annual table's header row.
ANNUAL_HEADER = "| controller | facility energy | vs fixed | PUE | throttled device-s | goodput | hottest die | chiller hours |"


def _rows(header: str) -> dict[str, list[str]]:
    """The README table under ``header``: first cell (up to a parenthesis) → the other cells."""
    text = (SCENARIOS.parent / "README.md").read_text(encoding="utf-8")
    table = header + text.split(header, 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0].split(" (", 1)[0]] = cells[1:]
    return rows


def _cells(row: dict, fixed_energy: float) -> list[str]:
    """A benchmark row as the README prints it (all but the CPU time)."""
    change = row["energy_facility_J"] / fixed_energy - 1.0
    return [f"{row['energy_facility_J'] / 3.6e9:,.1f} MWh",
            "—" if row["controller"] == "fixed" else f"{100 * change:+.2f} %".replace("-", "−"),
            f"{row['pue']:.4f}", f"{row['throttled_device_seconds']:,.0f}", f"{row['goodput']:.3f}",
            f"{row['t_die_max_degC']:.1f} °C", f"{row['chiller_hours']:,.0f}", f"{row['cost']:,.0f} USD"]


@pytest.mark.slow
@pytest.mark.timeout(1800)  # two annual episodes: about 70 s of CPU idle, 134 s at a load of 18 (23 min of wall)
def test_readme_annual_leesburg_rule_based_row_is_this_run():
    path, overrides = reference_case("leesburg", SCENARIOS)
    fixed, rule = (episode(path, c, overrides=overrides or None) for c in (Fixed(), RuleBased()))
    assert fixed["intervals"] == rule["intervals"] == 8760
    # the claim: less facility energy over the year, no more throttling, no less work done
    assert rule["energy_facility_J"] < fixed["energy_facility_J"]
    assert rule["throttled_device_seconds"] <= fixed["throttled_device_seconds"]
    assert rule["goodput"] >= fixed["goodput"] - 1e-12
    readme = _rows(ANNUAL_HEADER)
    for name, row in (("fixed", fixed), ("rule-based", rule)):
        assert readme[name][:8] == _cells(row, fixed["energy_facility_J"]), name
