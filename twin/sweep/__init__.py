"""Sweeps and capacity search on Dask distributed.

- :func:`load_sweep` reads a sweep file (base scenario + parameters) into variants;
- :func:`run_sweep` runs them on a LocalCluster or a scheduler and combines the results along a
  ``scenario`` dimension;
- :func:`capacity_search` finds how many racks of a template fit a power and cooling budget.

Names are imported lazily so that ``twin --help`` stays fast.
"""

from __future__ import annotations

_EXPORTS = {
    "load_sweep": "twin.sweep.spec",
    "SweepSpec": "twin.sweep.spec",
    "run_sweep": "twin.sweep.run",
    "capacity_search": "twin.sweep.capacity",
}


def __getattr__(name):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'twin.sweep' has no attribute {name!r}")


__all__ = list(_EXPORTS)
