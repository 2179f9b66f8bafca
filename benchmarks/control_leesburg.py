"""The reference controllers on ``scenarios/control-leesburg.yaml`` against its fixed set-points.

Runs :class:`~twin.control.controllers.Fixed` (the scenario's 32 degC facility water and 36 degC
CDU supply, held), :class:`~twin.control.controllers.RuleBased` and, unless ``--no-mpc``,
:class:`~twin.control.controllers.ModelPredictive` over the whole scenario (a year of hourly
intervals) or ``--duration``, and prints facility energy, PUE, throttled device-seconds, goodput,
the hottest die, chiller hours, the reward's cost and the CPU time of each episode (user +
system, ``resource.getrusage``). The figures in the README's "Control API" section come from
``python benchmarks/control_leesburg.py``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from twin.control.controllers import Fixed, ModelPredictive, RuleBased
from twin.control.evaluate import evaluate

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "control-leesburg.yaml"
COLUMNS = ["controller", "facility MWh", "pue", "throttled_device_seconds", "goodput", "t_die_max_degC",
           "chiller_hours", "cost", "cpu_seconds"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", help="e.g. '30 d' (default: the scenario's year)")
    ap.add_argument("--start", help="e.g. 2026-07-01T00:00:00")
    ap.add_argument("--no-mpc", action="store_true", help="skip the model-predictive controller")
    args = ap.parse_args()
    time = {k: v for k, v in (("duration", args.duration), ("start", args.start)) if v}
    controllers = [Fixed(), RuleBased()] + ([] if args.no_mpc else [ModelPredictive()])
    df = evaluate([SCENARIO], controllers, overrides={"time": time} if time else None)
    df["facility MWh"] = df.energy_facility_J / 3.6e9
    fixed = df.energy_facility_J.iloc[0]
    df["vs fixed"] = [f"{100 * (e / fixed - 1):+.2f} %" for e in df.energy_facility_J]
    print(df[COLUMNS + ["vs fixed"]].round(4).to_string(index=False))


if __name__ == "__main__":
    main()
