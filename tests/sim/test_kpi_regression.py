"""Every bundled scenario (and event variants of two of them) gives the KPIs recorded in
tests/data/kpi_baseline.json, to 1e-9 relative.

The baseline was written by ``python -m tests.sim.test_kpi_regression --write`` before the
driver was split into components. A KPI whose definition changes on purpose is updated in the
file deliberately, with the reason in ``CHANGED`` below, so a change of meaning is never silent.

Besides the KPIs, the mean of every recorded variable of every group is compared, so the
dataset's values are covered as well as the totals.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from twin.export.dataset import build_tree, summary
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

BASELINE = Path(__file__).resolve().parents[1] / "data" / "kpi_baseline.json"

#: 1e-9 relative: the refactor reorders no floating-point sums on the hot path, so the numbers
#: agree to rounding; a looser tolerance would let a real change of physics through.
RTOL = 1e-9
#: Absolute floor for quantities that are zero in the baseline (sums of ~1e6 W terms that cancel).
ATOL = 1e-6
#: Energy residuals (relative, ~1e-15) are rounding noise; any real leak would be far above this.
RESIDUAL_ATOL = 1e-12

_QUICK_EVENTS = [
    {"at": "60 s", "kind": "coolant_flow_loss", "target": "us1-b", "fraction": 0.5, "duration": "2 min"},
    {"at": "90 s", "kind": "rack_fan_failure", "target": "us1-a", "fraction": 0.5, "duration": "2 min"},
    {"at": "120 s", "kind": "psu_failure", "target": "us1-a", "count": 2, "duration": "3 min"},
    {"at": "150 s", "kind": "setpoint_change", "target": "cdu-1", "value": "38 degC", "duration": "2 min"},
    {"at": "300 s", "kind": "cdu_pump_trip", "target": "cdu-1", "failover": True, "failover_delay": "10 s"},
    {"at": "420 s", "kind": "cdu_failure", "target": "cdu-1", "duration": "20 s"},
]
_PLANT_EVENTS = [
    {"at": "10 min", "kind": "chiller_trip", "duration": "20 min"},
    {"at": "15 min", "kind": "dry_cooler_fan_failure", "fraction": 0.5, "duration": "30 min"},
    {"at": "20 min", "kind": "setpoint_change", "target": "cdu-1", "value": "44 degC", "duration": "10 min"},
    {"at": "40 min", "kind": "cdu_failure", "target": "cdu-1", "failover": True, "failover_delay": "30 s"},
    {"at": "50 min", "kind": "utility_outage", "duration": "2 min"},
]
_FULL = [{"select": {"kind": ["trn3"]}, "u": 1.0}, {"select": {"kind": ["graviton4"]}, "u": 0.3}]

#: case → (scenario file, overrides). Durations keep the whole module near 60 s on a loaded
#: 2-core machine while each case still runs its scenario's features (plant, events, jobs,
#: inference, sub-second workload steps).
CASES: dict[str, tuple[str, dict]] = {
    "quickstart": ("quickstart.yaml", {"time": {"duration": "15 min"}}),
    "gb300-rack": ("gb300-rack.yaml", {"time": {"duration": "5 min"}}),
    "trn2-training": ("trn2-training.yaml", {"time": {"duration": "3 min"}}),
    "trn3-training": ("trn3-training.yaml", {"time": {"duration": "3 min"}}),
    "training-swings": ("training-swings.yaml", {"time": {"duration": "3 min"}}),
    "mixed-hall": ("mixed-hall.yaml", {"time": {"duration": "3 min"}}),
    "inference-azure-trace": ("inference-azure-trace.yaml", {"time": {"duration": "3 min"}}),
    "design-day-phoenix": ("design-day-phoenix.yaml", {"time": {"duration": "3 h"}}),
    "annual-leesburg": ("annual-leesburg.yaml", {"time": {"duration": "10 d"}}),
    "cdu-pump-trip": ("cdu-pump-trip.yaml", {"time": {"duration": "12 min"}}),
    "cdu-pump-trip-failover": ("cdu-pump-trip-failover.yaml", {"time": {"duration": "11 min"}}),
    "hall-1k": ("bench/hall-1k.yaml", {"time": {"duration": "2 min"}}),
    "cluster-100k": ("bench/cluster-100k.yaml", {"time": {"duration": "20 s"}}),
    "quickstart-events": ("quickstart.yaml", {"time": {"duration": "8 min"}, "workload": _FULL,
                                              "events": _QUICK_EVENTS}),
    "phoenix-events": ("design-day-phoenix.yaml", {"time": {"duration": "1 h", "step": "5 s"},
                                                   "events": _PLANT_EVENTS}),
}

#: KPIs (and recorded means) whose definition changed on purpose since the baseline was
#: recorded: key (or a whole case) → reason. The baseline file holds the new values for these.
CHANGED: dict[str, str] = {
    "kpi.energy_loss_J": "all power-delivery losses, the integral of facility.p_loss (busway, UPS and "
                         "transformers too, not the power shelves alone): changes with a plant",
    "rack.t_coolant_supply": "the supply the rack received during the step (it was the next step's "
                             "boundary with a plant): changes when a plant's CDU supply moves",
    "rack.t_air_in": "the cold aisle the rack drew from during the step (it was the next step's with "
                     "a plant)",
    "gb300-rack": "kpi.band_0p1_20Hz_share: a steady facility load (RMS fluctuation at most 1e-9 of the "
                  "mean) has share 0; it was a ratio of round-off (the rack's load is constant here)",
    "hall-1k": "multi-rate components step at the start of each block on the means of the latest "
               "plant.step of inputs including this step (the plant used the block before, without this "
               "step; with plant.step = time.step both are that step's own inputs)",
    "phoenix-events": "facility power is the utility's (and standby generators') draw: the UPS battery's "
                      "discharge during the utility outage is an internal transfer, not facility input (it "
                      "was counted as a source, and its recharge again): p_facility, energy_facility_J and "
                      "pue fall over the outage",
}


#: Facility physics (power chain, plate flows, shelf overload): every case moved on purpose.
_PLATES = ("each sled's flow now reaches its plates (and air its heat sinks) in proportion to their "
           "design flows instead of in equal shares, and liquid cold plates use the catalogue's "
           "laminar convection exponent (0.4): die temperatures, leakage and so device and IT power "
           "move; rack.psu_overload is new (power-shelf overload policy)")
_CHAIN = ("with a plant, the power chain is N+1 modern UPS modules counted from the AC design load with "
          "a fitted loss model, busway I²R on a 125 % rating, transformers counted in kVA, a "
          "miscellaneous load and electrical-room cooling (new p_busway_loss, p_misc, "
          "p_electrical_room_cooling; p_ups_loss is the UPS alone): p_facility, p_loss and pue fall; "
          "CDU pumps follow their curve under differential-pressure control at the index rack "
          "(cdu.p_pump, facility.p_cdu_pumps, p_cooling move)")
_PUMPS = ("the in-row CDU has two duty pumps in parallel (1,000 L/min each) and one standby: a trip "
          "of one leaves the flow the survivor gives on the loop's curve (69 %), a standby alone gives "
          "the same; without a plant the CDU pumps follow their curve under differential-pressure "
          "control too, instead of the affinity law (cdu.p_pump, p_cooling, p_facility and pue rise "
          "at part flow)")
for _case, (_file, _over) in CASES.items():
    _plant = _case in ("design-day-phoenix", "annual-leesburg", "cdu-pump-trip", "cdu-pump-trip-failover",
                       "hall-1k", "phoenix-events")
    CHANGED[_case] = "; ".join(filter(None, [CHANGED.get(_case), _PLATES, _CHAIN if _plant else None,
                                             _PUMPS]))
_PIPE = ("with a plant too, the plant's supply reaches the racks through the CDU's supply pipe (150 L, plug "
         "flow, τ = V/Q) and the plant's return is the racks' supply + their rise (the pipe's old water comes "
         "back to the CDU)")
for _case in ("annual-leesburg", "cdu-pump-trip", "cdu-pump-trip-failover", "hall-1k", "phoenix-events"):
    CHANGED[_case] += "; " + _PIPE
CHANGED["cdu-pump-trip"] += ("; training collectives take the same time at any compute clock (only compute "
                             "stretches by 1/f): the throttled job does more iterations, and its throttle "
                             "loss counts compute time only")
for _case in ("trn2-training", "trn3-training"):
    CHANGED[_case] += ("; the job's collectives come from the fabric (a ~160B model's ZeRO-3 all-gathers and "
                       "reduce-scatter, 477 GB per chip per iteration, on the UltraServer's scale-up fabric) "
                       "instead of a fixed 25 % of the iteration")
_RECHARGE = ("the UPS battery recharges after an outage at the catalogue's battery_charge_power, drawn "
             "from the utility (new facility.p_ups_battery_charge and facility.e_ups_battery; after "
             "an outage p_facility, p_ups_loss and pue rise while it recharges)")
for _case in ("design-day-phoenix", "annual-leesburg", "cdu-pump-trip", "cdu-pump-trip-failover", "hall-1k",
              "phoenix-events"):
    CHANGED[_case] += "; " + _RECHARGE
CHANGED["phoenix-events"] += ("; the devices that trip at their shutdown point after the set-point "
                              "change restart once their dies have cooled below the throttle point (they "
                              "stayed off for the rest of the run): IT energy, device power and PUE rise")
_CHILLER = ("the chillers run the refrigerant-approach model (evaporator 2 K below the leaving water, "
            "air-cooled condenser 15 K above the dry-bulb; catalogue Carnot fractions re-derived from the rated "
            "COPs through them), the leaving water held within the envelope (20 degC: the W40 trim makes 20 degC "
            "water), staged for both circuits with the part-load curve, cycling below the screw chiller's 25 % "
            "minimum load, instead of a fraction of Carnot on the water temperatures: p_chiller, p_cooling, "
            "p_facility, p_transformer_loss, p_loss and pue rise")
for _case in ("design-day-phoenix", "cdu-pump-trip", "cdu-pump-trip-failover", "hall-1k", "phoenix-events"):
    CHANGED[_case] += "; " + _CHILLER
_SIZING = ("the plant is counted from the IT design load with N+1 (twin.cooling.sizing: CRAHs for the air "
           "share net of their fans, the chilled water's and the facility water's heat-rejection units and the "
           "chillers for their circuits' heat) instead of from the CDUs' nameplate: CRAH, heat-rejection fan "
           "and chilled-water pump power, the facility-water volume (so its temperatures) and p_cooling, "
           "p_facility and pue move")
_CIRCUIT_PUMPS = ("the facility- and chilled-water pumps run on their curve under differential-pressure control "
                  "(70 kPa held at the farthest CDU primary or CRAH coil, 180 kPa circuits at design flow, pumps "
                  "selected for the circuit's design flow) instead of the affinity law from a 3,000 L/min template: "
                  "p_facility_pumps rises from ~0.05 % to ~0.5 % of IT, and with it p_cooling, the chillers' trim "
                  "(the pumps' heat), p_transformer_loss, p_facility and pue")
for _case in ("design-day-phoenix", "annual-leesburg", "cdu-pump-trip", "cdu-pump-trip-failover", "hall-1k",
              "phoenix-events"):
    CHANGED[_case] += "; " + _SIZING + "; " + _CIRCUIT_PUMPS
CHANGED["quickstart-events"] += ("; the set-point change reaches the racks through the in-row CDU's supply "
                                 "pipe (150 L, plug flow), τ = V/Q after it leaves the CDU")
CHANGED["quickstart-events"] += ("; without a plant a set-point change enters the supply pipe over the step it "
                                 "applies from (as with a plant), not one step later: the racks' supply, and "
                                 "so their heat, device power and IT energy, move by that one step at 150 s "
                                 "and 270 s")

_HBM = ("GB300, Trainium2 and Trainium3 have HBM nodes (catalogue hbm_idle_power, hbm_active_power, r_hbm, "
        "c_hbm, t_hbm_max): the stacks' share of each device's power (161 W of a Trainium3's 1,000 W at TDP) "
        "heats them beside the die, so the dies run 2-3 K cooler at full load, leak less, and device and IT "
        "power fall (0.2-0.6 % of IT energy); device.t_hbm and the t_hbm KPIs are new")
for _case in CASES:
    CHANGED[_case] += "; " + _HBM
_CHILLER_SIZE = ("the chillers' unit size is chosen for the design load of both circuits (twin.cooling.sizing."
                 "unit_size): 1 + 1 air-cooled chillers of 400 kW instead of 1 MW for the 0.31-0.37 MW plants, "
                 "whose trim then runs at a higher part-load ratio: p_chiller and pue move")
for _case in ("design-day-phoenix", "cdu-pump-trip", "cdu-pump-trip-failover", "phoenix-events"):
    CHANGED[_case] += "; " + _CHILLER_SIZE
_CHW_FANS = ("the chilled water's free-cooling fans run at the speed with the least fan + compressor power "
             "while the chillers trim it (twin.cooling.economiser.economiser_speed, the facility water's "
             "search) instead of flat out: p_heat_rejection_fans falls, p_chiller rises a little, and "
             "p_cooling, p_transformer_loss, p_facility and pue fall (the supply leaves at its set-point "
             "either way)")
for _case in ("cdu-pump-trip", "cdu-pump-trip-failover", "hall-1k"):
    CHANGED[_case] += "; " + _CHW_FANS
_CHAIN_SIZES = ("without a template the UPS module size is the one of the catalogue's modular family whose "
                "N+1 modules lose least at the design load (twin.cooling.sizing.least_loss_size: 2 + 1 of "
                "250 kW instead of 1 + 1 of 500 kW for the 0.31-0.37 MW plants) and the transformer the "
                "smallest DOE 2016 standard rating at or above 1.25 x the design load in kVA "
                "(twin.cooling.sizing.standard_rating: 500 kVA instead of 1,000 kVA): p_ups_loss and the "
                "electrical-room cooling fall, p_transformer_loss rises, the battery (5 minutes per module) "
                "holds 63 instead of 84 kWh; p_loss, p_facility and pue move")
for _case in ("design-day-phoenix", "cdu-pump-trip", "cdu-pump-trip-failover", "phoenix-events"):
    CHANGED[_case] += "; " + _CHAIN_SIZES


def run_case(name: str) -> dict[str, float | str]:
    """KPIs and recorded-variable means of one case."""
    path, over = CASES[name]
    sim = Simulation(load_scenario(SCENARIOS / path, over))
    sim.run()
    out: dict[str, float | str] = {}
    for k, v in summary(sim).items():
        out[f"kpi.{k}"] = v if isinstance(v, str) else float(v)
    tree = build_tree(sim)
    for group in sorted(tree.children):
        ds = tree[group].to_dataset()
        for v in sorted(ds.data_vars):
            values = np.asarray(ds[v].values, dtype=float)
            out[f"{group}.{v}"] = float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
    return out


def _same(a, b, key: str = "") -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    if "residual" in key:  # energy residuals are rounding noise (~1e-15): compare absolutely
        return abs(a - b) <= RESIDUAL_ATOL
    return abs(a - b) <= max(RTOL * max(abs(a), abs(b)), ATOL)


@pytest.mark.parametrize("name", list(CASES))
def test_kpis_match_baseline(name):
    expected = json.loads(BASELINE.read_text())[name]
    got = run_case(name)
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing, f"{name}: no longer produced: {missing}"
    assert not extra, f"{name}: new and not in the baseline (add deliberately): {extra}"
    diff = {k: (expected[k], got[k]) for k in expected if not _same(expected[k], got[k], k)}
    assert not diff, f"{name}: differs from the baseline (expected, got): {diff}"


def test_changed_keys_exist():
    """Every key listed as deliberately changed is in the baseline (no stale entries)."""
    data = json.loads(BASELINE.read_text())
    keys = {k for case in data.values() for k in case} | set(data)
    assert set(CHANGED) <= keys


def _write(names) -> None:
    data = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    for name in names:
        data[name] = run_case(name)
        print(name, len(data[name]), "values", flush=True)
    BASELINE.write_text(json.dumps(data, indent=1, sort_keys=True, allow_nan=True) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] != ["--write"]:
        sys.exit("usage: python -m tests.sim.test_kpi_regression --write [case ...]")
    _write(sys.argv[2:] or list(CASES))
