"""CPU time of ``twin run`` before its first step, and the heavy modules loaded by then.

Runs the command as a user would (``twin run SCENARIO -o OUT`` with any further options), with
``Simulation.run`` replaced by a probe that prints the process's user + system CPU time so far
(``getrusage``: interpreter start, imports, option parsing, scenario load and the simulation's
build) and which heavy libraries are loaded, then exits without stepping.

Usage: ``python -P benchmarks/run_startup.py scenarios/quickstart.yaml -o /tmp/q.zarr``
"""

from __future__ import annotations

import os
import resource
import sys

HEAVY = ("pandas", "xarray", "zarr", "dask", "distributed", "matplotlib", "prometheus_client", "numba",
         "scipy.integrate", "scipy.optimize", "scipy.linalg", "pint", "pydantic")


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    import twin.sim.driver as driver

    def first_step(self, *args, **kwargs):
        loaded = [m for m in HEAVY if sys.modules.get(m) is not None]
        print(f"CPU to the first step: {cpu_seconds():.3f} s; {len(sys.modules)} modules; loaded: "
              f"{', '.join(loaded) or 'none of ' + ', '.join(HEAVY)}", flush=True)
        os._exit(0)

    driver.Simulation.run = first_step
    from twin.cli import main as twin_main

    sys.argv = ["twin", "run", *sys.argv[1:]]
    twin_main()


if __name__ == "__main__":
    main()
