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


class ZarrStream:
    """Streams a run into a Zarr store as it goes, so memory stays flat however long the run.

    Use as the recorder's sink: every full buffer of a group is appended along ``time``. The
    store is written under a temporary name; :meth:`finish` flushes the last buffers, adds the root
    attributes, consolidates the metadata and renames it into place (also after an interrupt, so
    what was recorded is kept). :meth:`abort` removes it.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if output_format(self.path) != "zarr":
            raise ValueError(f"streaming needs a .zarr output, got '{self.path.suffix}'")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        _remove(self.tmp)
        self.sim = None
        self.created: set[str] = set()

    def __call__(self, group: str, arrays: dict, offset: int) -> None:
        from twin.export.dataset import group_dataset

        ds = group_dataset(self.sim, group, arrays, offset)
        if group in self.created:
            ds.to_zarr(self.tmp, group=group, append_dim="time", zarr_format=2, consolidated=False)
        else:
            ds.to_zarr(self.tmp, group=group, mode="w-", zarr_format=2, consolidated=False)
            self.created.add(group)

    def finish(self, interrupted: bool = False) -> Path:
        import zarr

        from twin.export.dataset import root_attrs

        sim = self.sim
        attrs = root_attrs(sim, interrupted)  # KPIs need the facility series before its last flush
        sim.recorder.close()
        root = zarr.open_group(str(self.tmp), mode="a", zarr_format=2)
        root.attrs.update({k: (v.item() if hasattr(v, "item") else v)
                           for k, v in attrs.items()})
        zarr.consolidate_metadata(str(self.tmp))
        _remove(self.path)
        os.replace(self.tmp, self.path)
        return self.path

    def abort(self) -> None:
        _remove(self.tmp)
