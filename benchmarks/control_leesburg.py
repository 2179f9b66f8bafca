"""The reference controllers against the fixed set-points, on the Leesburg hall or the Phoenix
design days.

Runs :class:`~twin.control.controllers.Fixed` (the scenario's set-points held: 32 degC facility
water and 36 degC CDU supply on ``scenarios/control-leesburg.yaml``),
:class:`~twin.control.controllers.RuleBased` and, unless ``--no-mpc``,
:class:`~twin.control.controllers.ModelPredictive` (one episode per ``--horizon``; ``--mpc-only``
runs these alone) over the whole
scenario (a year of hourly intervals) or ``--start``/``--duration``, and prints facility energy,
the change against fixed, PUE, throttled device-seconds, goodput, the hottest die, chiller hours,
the reward's cost and the CPU time of each episode (user + system, ``resource.getrusage``).
``--scenario phoenix`` runs ``scenarios/design-day-phoenix.yaml`` (two design days, 10 s steps)
with the same two set-points offered every 5 minutes
(:data:`twin.control.reference.PHOENIX_CONTROL`); ``--blind-rule`` adds the rule blind to the
plant's free-cooling boundary (``RuleBased(boundary=False)``). The figures in
the README's "Control API" section come from this script, with the options shown there.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from twin.control.controllers import Fixed, ModelPredictive, RuleBased
from twin.control.evaluate import evaluate
from twin.control.reference import CASES, reference_case

ROOT = Path(__file__).resolve().parents[1] / "scenarios"
COLUMNS = ["controller", "facility MWh", "pue", "throttled_device_seconds", "goodput", "t_die_max_degC",
           "chiller_hours", "cost", "cpu_seconds"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", help="e.g. '30 d' (default: the scenario's year)")
    ap.add_argument("--start", help="e.g. 2026-07-01T00:00:00")
    ap.add_argument("--no-mpc", action="store_true", help="skip the model-predictive controller")
    ap.add_argument("--horizon", type=int, action="append", help="model-predictive horizons [intervals] (default 6)")
    ap.add_argument("--scenario", choices=list(CASES), default="leesburg")
    ap.add_argument("--mpc-only", action="store_true",
                    help="only the model-predictive episodes (their change against fixed is then not printed)")
    ap.add_argument("--blind-rule", action="store_true",
                    help="add the rule-based controller blind to the free-cooling boundary (RuleBased(boundary=False))")
    args = ap.parse_args()
    path, overrides = reference_case(args.scenario, ROOT, start=args.start, duration=args.duration)
    mpc = [] if args.no_mpc else [ModelPredictive(horizon=h) for h in (args.horizon or [6])]
    for c in mpc:
        c.name = f"model-predictive h={c.horizon}"
    blind = [RuleBased(boundary=False)] if args.blind_rule else []
    first = [] if args.mpc_only else [Fixed(), RuleBased(), *blind]
    df = evaluate([path], [*first, *mpc], overrides=overrides or None)
    df["facility MWh"] = df.energy_facility_J / 3.6e9
    fixed = df.energy_facility_J.iloc[0] if first else float("nan")
    df["vs fixed"] = [f"{100 * (e / fixed - 1):+.2f} %" for e in df.energy_facility_J]
    print(df[COLUMNS + ["vs fixed"]].round(4).to_string(index=False))


if __name__ == "__main__":
    main()
