"""NetCDF (h5netcdf) and Zarr writers that never leave a half-written file.

The tree is written under a temporary name beside the target and renamed into place only when
complete; a failed or interrupted write removes the temporary file.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import xarray as xr

FORMATS = {".nc": "netcdf", ".nc4": "netcdf", ".h5": "netcdf", ".zarr": "zarr"}


def output_format(path: str | Path) -> str:
    """'netcdf' or 'zarr' from the file suffix; ValueError for anything else."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"unknown output format '{suffix or path}' (use .nc or .zarr)")
    return FORMATS[suffix]


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def write_tree(tree: xr.DataTree, path: str | Path) -> Path:
    """Write ``tree`` to ``path`` (.nc or .zarr) atomically; return the path."""
    path = Path(path)
    fmt = output_format(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    _remove(tmp)
    try:
        if fmt == "netcdf":
            tree.to_netcdf(tmp, engine="h5netcdf", invalid_netcdf=False)
        else:
            tree.to_zarr(tmp, mode="w", consolidated=True, zarr_format=2)
        _remove(path)
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise
    return path


def open_result(path: str | Path) -> xr.DataTree:
    """Open a result written by :func:`write_tree` (loaded into memory)."""
    path = Path(path)
    if output_format(path) == "netcdf":
        return xr.open_datatree(path, engine="h5netcdf").load()
    return xr.open_datatree(path, engine="zarr", consolidated=True).load()
