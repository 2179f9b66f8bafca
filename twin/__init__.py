"""twin — a power-thermal digital twin of AI datacenters.

Notebook entry points::

    import twin
    tree = twin.load("out/quickstart.nc")      # xarray.DataTree
    twin.kpis(tree)                            # pandas DataFrame of KPIs (a row per sweep variant)
"""

import functools


@functools.cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("twin")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0.0.0+unknown"


def __getattr__(name: str):
    """``twin.__version__``, read from the installed package's metadata on first access (PEP
    562): looking it up scans the installed distributions, ~0.1 CPU-s that a run pays only
    when it writes its result."""
    if name == "__version__":
        return _version()
    raise AttributeError(f"module 'twin' has no attribute {name!r}")


def load(path):
    """Open a twin result (NetCDF or Zarr) as an :class:`xarray.DataTree`."""
    from twin.export.writers import open_result

    return open_result(path)


def kpis(tree):
    """KPIs as a pandas DataFrame: one row per result, or per variant of a sweep.

    ``tree`` is a result of ``twin run`` or ``twin sweep`` (a DataTree from :func:`load`, or a
    path), or a list of them. Columns are the KPIs (``pue``, ``energy_it_J``,
    ``p_facility_peak_W``, …; units in the name) and, for a sweep, the parameters, ``status``
    and ``error`` of each variant.
    """
    from twin.report.plots import kpi_frame

    return kpi_frame(tree)


__all__ = ["__version__", "kpis", "load"]
