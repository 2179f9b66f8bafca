"""The twin's per-GPU power and temperature distributions against the AcmeTrace Seren fleet's.

``scenarios/seren-fleet.yaml`` (256 A100 SXM 80GB in 32 air-cooled HGX A100 servers) gives each
GPU one value of Seren's measured GPU utilisation (a stratified draw of the CDF), mapped to the
twin's dynamic activity with the mapping fitted on the BioHPC A100 telemetry; nothing is fitted on
Seren (twin.workload.fleet). The run's last sample (steady state) gives each GPU's power and die
temperature; their p10/p25/p50/p75/p90/p99 and mean are compared with the measured CDFs
(AcmeTrace, Shanghai AI Lab / InternLM, CC-BY 4.0; NSDI 2024). Marginal quantiles only: the
comparison assumes power and temperature are monotone in utilisation across the GPUs.

Die temperature against power, the thermal path without the workload mapping: the fleet run with
an eighth of its GPUs idle and the rest at loads evenly spread over 0..1 (the ``ladder`` probe),
read at Seren's measured power quantiles and compared with its temperature quantiles (the
monotone assumption pairs them), at each inlet and at ±25 % of the servers' estimated air flow; and
the rise per watt between p10 and p90.

Then the same with what was estimated or chosen changed one at a time: SM activity instead of GPU
utilisation as the driver (no mapping), GPUs placed in random order instead of packed by
utilisation, and the inlet at 18 and 25 degC instead of 22 degC.

Usage: ``python benchmarks/fleet_fidelity.py [--write-replay]`` (``--write-replay`` rewrites the
scenario's replay table ``scenarios/seren-fleet-util.csv`` first). Prints the tables, the README's
Fidelity rows (``tests/workload/test_fleet_fidelity.py`` checks the README holds them as printed)
and the CPU time (user + sys, ``resource.getrusage``).
"""

from __future__ import annotations

import argparse
import resource

import pandas as pd

from twin.workload.fleet import (
    AIR_FLOWS,
    REPLAY,
    VARIANTS,
    compare,
    compare_thermal,
    fleet_fidelity_rows,
    run_fleet,
    variant_table,
    write_replay,
)



def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-replay", action="store_true", help=f"rewrite {REPLAY.name} first")
    args = parser.parse_args()
    if args.write_replay:
        write_replay()
        print(f"wrote {REPLAY}")
    pd.set_option("display.width", 200)
    base = compare(run_fleet())
    print("Seren-like fleet (GPU utilisation through the BioHPC mapping, packed, inlet 22 degC):")
    print(base.round(3).to_string())
    runs = {"default": run_fleet(), **{name: run_fleet(**kw) for name, kw in VARIANTS.items()}}
    print("\nTwin under other choices, one at a time (the README's table):")
    print("\n".join(variant_table(runs)))
    print("\nDie temperature at the measured power quantiles (the ladder probe; slope in K/W):")
    for inlet in (None, 18.0, 25.0):
        label = "inlet 22 degC (the scenario's)" if inlet is None else f"inlet {inlet:g} degC"
        print(f"{label}:")
        print(compare_thermal(run_fleet(driver="ladder", cold_aisle=inlet)).round(3).to_string())
    for flow in AIR_FLOWS:
        print(f"server air flow {flow:g} m3/s (catalogue estimate 0.4):")
        print(compare_thermal(run_fleet(driver="ladder", air_flow=flow)).round(3).to_string())
    print("\nREADME Fidelity rows:")
    print("\n".join(fleet_fidelity_rows()))
    print(f"\nCPU time {_cpu():.1f} s (user + sys, resource.getrusage)")


if __name__ == "__main__":
    main()
