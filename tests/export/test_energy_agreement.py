"""One definition per quantity: at the end of a run the live /metrics energy counters, the
OpenMetrics backfill and the dataset KPIs are the same numbers (design-day-phoenix: a plant with
UPS and transformer losses, where the live counter and the KPI used to be 10 % apart)."""

from __future__ import annotations

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics

from tests.conftest import SCENARIOS
from tests.export.helpers import families, scrape_text
from twin.export.dataset import build_tree, summary
from twin.export.openmetrics import write_openmetrics
from twin.export.prometheus import COUNTERS, METRICS, metric_scale
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

#: counter → KPI that integrates the same variable
KPI_OF = {
    "twin_it_energy_joules": "energy_it_J",
    "twin_facility_energy_joules": "energy_facility_J",
    "twin_power_delivery_loss_energy_joules": "energy_loss_J",
}
#: 1e-9 relative: the three are sums of the same step values in different orders (the backfill
#: from 60 s interval means × 60 s), so they differ by rounding only.
RTOL = 1e-9


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    sim = Simulation(load_scenario(SCENARIOS / "design-day-phoenix.yaml", {"time": {"duration": "10 min"}}))
    sim.run()
    tree = build_tree(sim)
    om = write_openmetrics(tree, tmp_path_factory.mktemp("om") / "phoenix.om").read_text()
    return sim, summary(sim), families(scrape_text(sim)), {f.name: f for f in parse_openmetrics(om)}


@pytest.mark.parametrize("counter", sorted(KPI_OF))
def test_live_backfill_and_kpi_agree(phoenix, counter):
    sim, kpi, live, backfill = phoenix
    (live_sample,) = [s for s in live[counter].samples if s.name == f"{counter}_total"]
    last = max((s for s in backfill[counter].samples), key=lambda s: s.timestamp)
    assert live_sample.value == pytest.approx(kpi[KPI_OF[counter]], rel=RTOL)
    assert last.value == pytest.approx(kpi[KPI_OF[counter]], rel=RTOL)


def test_facility_energy_includes_cooling_and_every_loss(phoenix):
    """Facility energy = IT + cooling + busway, UPS and transformer losses + the miscellaneous load
    + the electrical rooms' cooling (the chain's terms are not zero here, so a counter that left
    one out would fail the test above)."""
    sim, kpi, live, _ = phoenix
    tree = build_tree(sim)
    fac = tree["facility"].to_dataset()
    seconds = 60.0  # recording interval of the facility group in this scenario
    terms = ("p_it", "p_cooling", "p_busway_loss", "p_ups_loss", "p_transformer_loss", "p_misc",
             "p_electrical_room_cooling")
    parts = sum(float(fac[v].sum()) * seconds for v in terms)
    assert all(float(fac[v].mean()) > 0 for v in terms)
    assert kpi["energy_facility_J"] == pytest.approx(parts, rel=RTOL)


def test_every_counter_is_a_declared_integral():
    assert {c.name for c in COUNTERS} >= set(KPI_OF) | {"twin_rack_energy_joules", "twin_cooling_energy_joules"}


def test_every_recorded_facility_variable_is_a_live_metric(phoenix):
    """Each facility variable of the dataset (the UPS battery's energy and recharge power, the
    electrical losses, the plant's powers) is published live with the dataset's last sample
    (the collector reads the recorder's latest complete interval mean: the same number)."""
    sim, _, live, _ = phoenix
    fac = build_tree(sim)["facility"].to_dataset()
    assert {"e_ups_battery", "p_ups_battery_charge", "p_ups_loss"} <= set(fac.data_vars)
    for variable in fac.data_vars:
        name = METRICS[("facility", variable)]
        (value,) = [s.value for s in live[name].samples]
        expected = float(fac[variable][-1]) * metric_scale("facility", variable)
        assert value == pytest.approx(expected, rel=1e-12), name
