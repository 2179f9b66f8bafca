"""NetCDF (h5netcdf) and Zarr writers that never leave a half-written file.

The tree is written under a temporary name beside the target (``.NAME.tmp-PID``) and renamed into
place only when complete; a failed write removes the temporary file, and a later write to the same
target removes the temporary files of runs that died (their process is gone). SIGINT and SIGTERM
that arrive while a write runs are held and delivered when it ends
(:func:`~twin.export.interrupts.deferred_signals`), so a signal never cuts a write in half.

A streamed Zarr store (:class:`ZarrStream`) commits each appended block: the block is written,
then the group's committed length in the store's commit log (``twin-commit.json``, replaced
atomically) is advanced. Whatever happens in between — an exception, a block handed over twice —
the store's readable part is exactly its committed part.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from twin.export.interrupts import deferred_signals

if TYPE_CHECKING:  # xarray loads when results are read or written, not when a run starts
    import xarray as xr

FORMATS = {".nc": "netcdf", ".nc4": "netcdf", ".h5": "netcdf", ".zarr": "zarr"}
#: Commit log of a Zarr store being streamed: committed samples per group, flushes, state.
COMMIT_LOG = "twin-commit.json"


def output_format(path: str | Path) -> str:
    """'netcdf' or 'zarr' from the file suffix; ValueError for anything else."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"unknown output format '{suffix or path}' (use .nc or .zarr)")
    return FORMATS[suffix]


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def clean_stale_temporaries(path: str | Path) -> list[Path]:
    """Remove the temporary files of earlier writes to ``path`` whose process has died.

    Returns the removed paths. A temporary whose process still runs (another write to the same
    target going on) is left alone.
    """
    path = Path(path)
    removed = []
    for name in glob.glob(glob.escape(str(path.parent / f".{path.name}.tmp-")) + "*"):
        p = Path(name)
        pid_text = p.name.rsplit("-", 1)[-1]
        if not pid_text.isdigit() or int(pid_text) == os.getpid() or _alive(int(pid_text)):
            continue
        try:
            _remove(p)
            removed.append(p)
        except OSError:
            pass  # another cleaner got there first, or not ours to remove
    return removed


def write_tree(tree: xr.DataTree, path: str | Path) -> Path:
    """Write ``tree`` to ``path`` (.nc or .zarr) atomically; return the path.

    Signals are held while the file is written and renamed, and delivered afterwards.
    """
    path = Path(path)
    fmt = output_format(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_temporaries(path)
    tmp = _temporary(path)
    with deferred_signals():
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


def read_commit_log(store: str | Path) -> dict | None:
    """The commit log of a Zarr store being streamed (None for a finished store)."""
    try:
        return json.loads((Path(store) / COMMIT_LOG).read_text())
    except FileNotFoundError:
        return None


def open_result(path: str | Path) -> xr.DataTree:
    """Open a result written by :func:`write_tree` or :class:`ZarrStream` (loaded into memory).

    A Zarr store still being streamed (it has a commit log) is read up to its committed length
    in every group.
    """
    import xarray as xr

    path = Path(path)
    log = read_commit_log(path) if path.is_dir() else None
    if log is None:
        if output_format(path) == "netcdf":
            return xr.open_datatree(path, engine="h5netcdf").load()
        return xr.open_datatree(path, engine="zarr", consolidated=True).load()
    groups = {"/": xr.Dataset()}  # root attributes come with finish()
    for group, n in log["groups"].items():
        if n:
            groups[f"/{group}"] = _read_committed(path / group, n)
    return xr.DataTree.from_dict(groups)


def _read_committed(where: Path, n: int) -> xr.Dataset:
    """The first ``n`` samples of a streamed group, whatever lies beyond them."""
    import xarray as xr
    import zarr

    variables = {}
    for name, arr in zarr.open_group(str(where), mode="r", zarr_format=2).arrays():
        attrs = dict(arr.attrs)
        dims = attrs.pop("_ARRAY_DIMENSIONS")
        data = arr[:n] if dims and dims[0] == "time" else arr[...]
        if arr.fill_value is not None and data.dtype.kind in "fc":
            attrs["_FillValue"] = arr.fill_value
        variables[name] = xr.Variable(dims, data, attrs)
    return xr.decode_cf(xr.Dataset(variables))


class ZarrStream:
    """Streams a run into a Zarr store as it goes, so memory stays flat however long the run.

    Use as the recorder's sink: every full buffer of a group is appended along ``time`` and
    committed (see the module notes). The store is written under a temporary name; :meth:`finish`
    flushes the last buffers, adds the root attributes, consolidates the metadata and renames it
    into place (also after an interrupt, so what was recorded is kept). :meth:`abort` removes it.

    A block is identified by its offset: a block handed over again (a flush retried after an
    interrupt) is not appended twice, and a block that would leave a gap is refused.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if output_format(self.path) != "zarr":
            raise ValueError(f"streaming needs a .zarr output, got '{self.path.suffix}'")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        clean_stale_temporaries(self.path)
        self.tmp = _temporary(self.path)
        _remove(self.tmp)
        self.sim = None
        #: Committed samples per group (a group absent here has no committed data).
        self.committed: dict[str, int] = {}
        self.flushes = 0
        self.state = "running"
        self._dirty: set[str] = set()  # groups whose last write did not commit

    @staticmethod
    def prepare() -> None:
        """Do now the once-per-process work of the first flush — import xarray, zarr and pandas
        and write a one-value store into a temporary folder (xarray's Zarr backend and the
        codecs load on first use): ~1 CPU-s, which a caller timing the run (``twin bench``)
        counts as start-up. A run that does not call this pays it at its first flush."""
        import tempfile

        import numpy as np
        import xarray as xr

        import twin.export.dataset  # noqa: F401

        with tempfile.TemporaryDirectory() as tmp:
            data = xr.Variable(("time",), np.zeros(1), fastpath=True)
            xr.Dataset({"x": data}, coords=xr.Coordinates({}, indexes={})).to_zarr(
                Path(tmp) / "warm.zarr", group="g", mode="w", zarr_format=2, consolidated=False)

    # -- the commit log ---------------------------------------------------------------------
    def _write_log(self) -> None:
        log = {"groups": self.committed, "flushes": self.flushes, "state": self.state}
        part = self.tmp / (COMMIT_LOG + ".part")
        part.write_text(json.dumps(log))
        os.replace(part, self.tmp / COMMIT_LOG)

    def _rollback(self, group: str) -> None:
        """Bring ``group`` back to its committed length (after a write that did not commit)."""
        import zarr

        n = self.committed.get(group, 0)
        where = self.tmp / group
        if n == 0:
            _remove(where)
        elif where.exists():
            zg = zarr.open_group(str(where), mode="r+", zarr_format=2)
            for _, arr in zg.arrays():
                dims = arr.attrs.get("_ARRAY_DIMENSIONS") or []
                if dims and dims[0] == "time" and arr.shape[0] != n:
                    arr.resize((n,) + arr.shape[1:])
        self._dirty.discard(group)

    # -- the sink ---------------------------------------------------------------------------
    def __call__(self, group: str, arrays: dict, offset: int) -> None:
        from twin.export.dataset import group_dataset

        done = self.committed.get(group, 0)
        n = next(iter(arrays.values())).shape[0] if arrays else 0
        if offset + n <= done:
            return  # already committed (a flush handed over again)
        if offset > done:
            raise RuntimeError(f"{group}: block at sample {offset} would leave a gap after the "
                               f"committed {done} samples")
        if offset < done:
            arrays = {v: a[done - offset:] for v, a in arrays.items()}
        ds = group_dataset(self.sim, group, arrays, done, index=False)
        with deferred_signals():
            if not self.tmp.exists():
                self.tmp.mkdir()
                self._write_log()
            if group in self._dirty:
                self._rollback(group)
            self._dirty.add(group)
            if done:
                ds.to_zarr(self.tmp, group=group, append_dim="time", zarr_format=2, consolidated=False)
            else:
                ds.to_zarr(self.tmp, group=group, mode="w", zarr_format=2, consolidated=False)
            self.committed[group] = done + ds.sizes["time"]
            self.flushes += 1
            self._write_log()
            self._dirty.discard(group)

    def finish(self, interrupted: bool = False) -> Path:
        """Flush, commit and rename the store into place; return the path.

        Signals are held until the store is in place.
        """
        import zarr

        from twin.export.dataset import root_attrs

        sim = self.sim
        with deferred_signals():
            if not self.tmp.exists():
                self.tmp.mkdir()
            self.state = "finishing"
            self._write_log()
            attrs = root_attrs(sim, interrupted)  # KPIs need the facility series before its last flush
            sim.recorder.close()
            for group in list(self._dirty):
                self._rollback(group)
            (self.tmp / COMMIT_LOG).unlink()  # what is in the store now is all committed
            root = zarr.open_group(str(self.tmp), mode="a", zarr_format=2)
            root.attrs.update({k: (v.item() if hasattr(v, "item") else v)
                               for k, v in attrs.items()})
            zarr.consolidate_metadata(str(self.tmp))
            _remove(self.path)
            os.replace(self.tmp, self.path)
        return self.path

    def abort(self) -> None:
        _remove(self.tmp)
