"""Names the scenario format and the simulator share, without pydantic: the recording groups
and the event kinds (:mod:`twin.scenario.model` validates with them; a run started from the
start-up cache reads them here)."""

#: Recording groups, in dataset order.
GROUPS = ("facility", "cdu", "rack", "sled", "device", "job")

EVENT_KINDS = {
    # kind: what `target` names
    "cdu_pump_trip": "cdu",
    "cdu_failure": "cdu",
    "coolant_flow_loss": "rack",
    "rack_fan_failure": "rack",
    "psu_failure": "rack",
    "setpoint_change": "cdu",
    "chiller_trip": "plant",
    "dry_cooler_fan_failure": "plant",
    "utility_outage": "plant",
}
