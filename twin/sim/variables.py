"""The recorded variables: one name per quantity (DESIGN.md names table), units and meaning.

Every recorded value is the mean over its recording interval (powers and temperatures alike), so
interval energies are exact; ``pue`` is the ratio of the interval-mean powers; a job's ``state``
is the state at the end of the interval.
"""

from __future__ import annotations

#: group → variable → (UDUNITS units, long_name)
VARIABLES: dict[str, dict[str, tuple[str, str]]] = {
    "facility": {
        "p_it": ("W", "IT power (sum of rack AC input)"),
        "p_facility": ("W", "facility power (IT + cooling)"),
        "p_cooling": ("W", "cooling power (modelled components: CDU pumps)"),
        "p_loss": ("W", "power-delivery losses (power shelves)"),
        "p_network": ("W", "scale-out network switches and optics outside the racks (part of p_it)"),
        "pue": ("1", "power usage effectiveness p_facility / p_it"),
        "t_facility_supply": ("degC", "facility water supply temperature"),
        "t_cold_aisle": ("degC", "cold-aisle air temperature"),
        # With a plant (scenario `plant:`):
        "t_outdoor": ("degC", "outdoor dry-bulb temperature"),
        "t_wet_bulb": ("degC", "outdoor wet-bulb temperature"),
        "t_facility_return": ("degC", "facility water return temperature"),
        "p_cdu_pumps": ("W", "CDU secondary pump power"),
        "p_facility_pumps": ("W", "facility and chilled water pump power"),
        "p_heat_rejection_fans": ("W", "dry cooler / cooling tower fan power"),
        "p_chiller": ("W", "chiller compressor power"),
        "p_crah": ("W", "CRAH fan power"),
        "p_ups_loss": ("W", "busway and UPS losses"),
        "p_transformer_loss": ("W", "transformer losses"),
        "water": ("kg s-1", "make-up water (evaporation and blowdown)"),
        "economiser": ("1", "facility water: 0 chiller only, 1 partial, 2 full free cooling"),
        "chiller_on": ("1", "fraction of the interval a chiller ran"),
    },
    "cdu": {
        "t_supply": ("degC", "secondary-loop supply temperature"),
        "t_return": ("degC", "secondary-loop return temperature"),
        "flow": ("kg s-1", "secondary-loop mass flow"),
        "p_pump": ("W", "secondary pump power"),
        "q": ("W", "heat removed from the secondary loop"),
        "valve": ("1", "primary (facility water) valve position (with a plant)"),
    },
    "rack": {
        "p_ac": ("W", "rack AC input power"),
        "p_dc": ("W", "rack DC busbar power"),
        "t_coolant_supply": ("degC", "rack manifold coolant supply temperature"),
        "t_coolant_return": ("degC", "rack manifold coolant return temperature"),
        "t_air_in": ("degC", "rack air inlet temperature"),
        "t_air_out": ("degC", "rack air exhaust temperature"),
        "q_liquid": ("W", "heat to liquid"),
        "q_air": ("W", "heat to air (sled exhaust and power-shelf losses)"),
        "throttled": ("1", "fraction of the rack's devices throttled"),
        "capped": ("1", "fraction of the interval the rack's clocks were capped for a power limit"),
    },
    "sled": {
        "p_dc": ("W", "sled DC power (devices, overhead, fans)"),
        "t_coolant_out": ("degC", "sled coolant outlet temperature"),
        "t_air_out": ("degC", "sled exhaust air temperature"),
    },
    "device": {
        "u": ("1", "demanded utilisation"),
        "p": ("W", "device power"),
        "t_die": ("degC", "die temperature"),
        "clock": ("1", "relative clock"),
        "throttled": ("1", "fraction of the interval spent throttled"),
    },
    "job": {
        "progress": ("1", "work done: iterations (training), requests completed (inference), device-seconds at full clock (cpu)"),
        "throughput": ("s-1", "progress per second (inference: output tokens per second)"),
        "tokens": ("1", "tokens processed, cumulative"),
        "p": ("W", "device power attributed to the job"),
        "state": ("1", "state at the end of the interval: 0 queued, 1 running, 2 checkpoint, 3 restarting, 4 done, 5 unplaceable"),
    },
}


#: Facility variables read from the plant's state by name (only with a scenario ``plant:``).
PLANT_FACILITY_VARIABLES = (
    "t_outdoor", "t_wet_bulb", "t_facility_return", "p_cdu_pumps", "p_facility_pumps",
    "p_heat_rejection_fans", "p_chiller", "p_crah", "water", "economiser", "chiller_on",
)
#: Variables that exist only when the scenario has a plant.
PLANT_ONLY = {("facility", v) for v in PLANT_FACILITY_VARIABLES + ("p_ups_loss", "p_transformer_loss")} | {
    ("cdu", "valve")}
