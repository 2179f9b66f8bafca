"""The reference cases the README compares controllers on.

- ``leesburg``: ``control-leesburg.yaml``, the annual Leesburg hall with the facility-water and
  CDU set-points as hourly actions (its own ``control:`` section).
- ``phoenix``: ``design-day-phoenix.yaml``, two Phoenix 0.4 % design days, offered to a
  controller as the Leesburg hall is (the same two set-points with the same bounds,
  :data:`PHOENIX_CONTROL`), every 5 minutes.

:func:`reference_case` gives a case's scenario file and the overrides that make it, so the
benchmark that prints the README's tables and the tests that check them run the same thing.
"""

from __future__ import annotations

import copy
from pathlib import Path

#: The Phoenix design days offered to a controller as control-leesburg.yaml offers the hall (the
#: facility-water and CDU set-points, with the same bounds), every 5 minutes.
PHOENIX_CONTROL = {
    "interval": "5 min",
    "actions": [{"control": "facility.t_facility_supply_set", "low": "20 degC", "high": "45 degC"},
                {"control": "cdu.t_supply_set", "low": "24 degC", "high": "49 degC", "shared": True}],
    "observations": ["facility.p_facility", "facility.p_it", "facility.p_cooling", "facility.p_chiller",
                     "facility.economiser", "facility.t_outdoor", "facility.t_wet_bulb", "device.t_die",
                     "device.throttled"],
    "reward": {"energy": "0.08 USD/kWh"},
}
#: Reference cases: scenario file (in the scenarios folder) and the overrides that make it.
CASES = {"leesburg": ("control-leesburg.yaml", {}),
         "phoenix": ("design-day-phoenix.yaml", {"control": PHOENIX_CONTROL})}


def reference_case(name: str, scenarios: Path, *, start: str | None = None,
                   duration: str | None = None) -> tuple[Path, dict]:
    """The scenario file and overrides of the reference case ``name`` (:data:`CASES`).

    Parameters
    ----------
    name : {"leesburg", "phoenix"}
    scenarios : Path
        The folder holding the repository's scenarios.
    start, duration : str, optional
        A window of the case (``"2026-07-08T00:00:00"``, ``"7 d"``); default the whole scenario.

    Returns
    -------
    (Path, dict)
        The file, and the top-level overrides to load it with (for
        :func:`twin.control.evaluate.episode` or :class:`~twin.control.env.FacilityEnv`).
    """
    if name not in CASES:
        raise KeyError(f"no reference case '{name}' (known: {', '.join(CASES)})")
    file, overrides = CASES[name]
    time = {k: v for k, v in (("start", start), ("duration", duration)) if v is not None}
    return Path(scenarios) / file, {**copy.deepcopy(overrides), **({"time": time} if time else {})}
