"""Optional parts of twin and the pip extras that bring them (see pyproject.toml):

- ``twin[sweep]``: Dask distributed, for ``twin sweep`` on workers and ``twin capacity --workers``;
- ``twin[report]``: matplotlib, for ``twin report``;
- ``twin[parquet]``: pyarrow, for replay and telemetry tables in Parquet;
- ``twin[fast]``: numba, for the compiled chip kernel (:mod:`twin.power.kernels`; without it the
  numpy reference runs, nothing else changes).

They are imported where they are used, through :func:`require`, so a missing one is one line
saying which extra to install, never a traceback.
"""

from __future__ import annotations

import importlib


class MissingExtra(ImportError):
    """An optional dependency is not installed: ``str(err)`` says what needs it and how to get it."""


def require(module: str, extra: str, purpose: str):
    """Import ``module``, or raise :class:`MissingExtra` naming ``purpose`` and the extra."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(f"{purpose} needs {module.split('.')[0]}, which is not installed: "
                           f"pip install 'twin[{extra}]'") from None
