"""twin — a power-thermal digital twin of AI datacenters.

Notebook entry points::

    import twin
    tree = twin.load("out/quickstart.nc")      # xarray.DataTree
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("twin")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"


def load(path):
    """Open a twin result (NetCDF or Zarr) as an :class:`xarray.DataTree`."""
    from twin.export.writers import open_result

    return open_result(path)


__all__ = ["__version__", "load"]
