"""A small on-disk cache of computed arrays, for work that start-up would otherwise repeat.

What is kept here is a pure function of its key (the inputs' bytes, the versions of the
libraries that computed it and the machine), so a value read back is the value that would be
computed, bit for bit. The cache is an optimisation only: a folder that is missing, read-only
or full of damaged files is the same as an empty one (the value is computed and, where the
folder can be written, stored), and nothing here raises.

The folder is ``$TWIN_CACHE_DIR`` if set (an empty value or ``off`` turns the cache off), else
``$XDG_CACHE_HOME/twin`` or ``~/.cache/twin``. Each kind of value keeps at most
:data:`MAX_FILES` files; the oldest are removed when a new one is written.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
from pathlib import Path

import numpy as np

#: Files kept per kind of value (each a few kB to a few MB).
MAX_FILES = 256


def cache_dir() -> Path | None:
    """The cache folder, or None when the cache is turned off."""
    env = os.environ.get("TWIN_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in ("", "off") else Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "twin"


def key(*parts) -> str:
    """A hex digest of ``parts``: arrays by dtype, shape and bytes, bytes as they are, anything
    else by ``repr``."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            a = np.ascontiguousarray(part)
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())
        elif isinstance(part, bytes):
            h.update(part)
        else:
            h.update(repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()


@functools.cache
def source_signature(folder: Path) -> tuple:
    """(path, size, modification time) of every Python file under ``folder``: part of the key of
    a value that the code there computed, so that an edited module is never answered from the
    cache (~1 ms for the twin package; taken once per process)."""
    root = str(folder)
    out, todo = [], [root]
    while todo:
        with os.scandir(todo.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        todo.append(entry.path)
                elif entry.name.endswith(".py"):
                    st = entry.stat()
                    out.append((entry.path[len(root):], st.st_size, st.st_mtime_ns))
    return tuple(sorted(out))


def load_array(kind: str, digest: str) -> np.ndarray | None:
    """The array stored under ``kind``/``digest``, or None (absent, unreadable or damaged)."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        return np.load(folder / kind / f"{digest}.npy", allow_pickle=False)
    except Exception:  # missing, unreadable, truncated or not an array file: compute instead
        return None


def store_array(kind: str, digest: str, value: np.ndarray) -> None:
    """Store ``value`` under ``kind``/``digest`` if the folder can be written (atomically: a
    reader sees the whole file or none); keeps at most :data:`MAX_FILES` files of ``kind``."""
    _store(kind, f"{digest}.npy", lambda fh: np.save(fh, value, allow_pickle=False))


def _store(kind: str, name: str, write) -> None:
    """``write(file)`` into a temporary file, then renamed to ``kind``/``name`` (a reader sees the
    whole file or none); the oldest files of the same suffix beyond :data:`MAX_FILES` removed.
    Nothing happens when the folder is off or cannot be written: the cache is only an optimisation."""
    folder = cache_dir()
    if folder is None:
        return
    target = folder / kind
    tmp = target / f".{name}.{os.getpid()}.tmp"
    try:
        target.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            write(fh)
        os.replace(tmp, target / name)
        _prune(target, "*" + Path(name).suffix)
    except Exception:  # read-only, full, removed meanwhile or not storable
        try:
            tmp.unlink(missing_ok=True)
        except Exception:
            pass


def _prune(folder: Path, pattern: str) -> None:
    """Remove the oldest files matching ``pattern`` beyond :data:`MAX_FILES`."""
    files = list(folder.glob(pattern))
    if len(files) > MAX_FILES:
        files.sort(key=lambda p: p.stat().st_mtime)
        for old in files[: len(files) - MAX_FILES]:
            old.unlink(missing_ok=True)


class _Pickler(pickle.Pickler):
    def __init__(self, fh, shared):
        super().__init__(fh, protocol=pickle.HIGHEST_PROTOCOL)
        self._shared = {id(obj): i for i, obj in enumerate(shared)}

    def persistent_id(self, obj):
        return self._shared.get(id(obj))


class _Unpickler(pickle.Unpickler):
    def __init__(self, fh, shared):
        super().__init__(fh)
        self._shared = shared

    def persistent_load(self, pid):
        return self._shared[pid]


def load_object(kind: str, digest: str, shared: tuple = ()):
    """The object stored under ``kind``/``digest`` by :func:`store_object` with the same
    ``shared``, or None (absent, unreadable, damaged or from another version of a class).

    The file is a pickle written by this user into their own cache folder; only objects of the
    project's own data classes are stored."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        with open(folder / kind / f"{digest}.pickle", "rb") as fh:
            return _Unpickler(fh, shared).load()
    except Exception:  # missing, unreadable, truncated or stale: compute instead
        return None


def store_object(kind: str, digest: str, value, shared: tuple = ()) -> None:
    """Store ``value`` under ``kind``/``digest`` if the folder can be written (atomically).

    ``shared`` are objects stored by reference rather than by value: the object read back holds
    these very objects where ``value`` did (a model field's default NaN, say, which equals
    nothing but itself, so a copy would make equal models compare unequal)."""
    _store(kind, f"{digest}.pickle", lambda fh: _Pickler(fh, shared).dump(value))


def load_bytes(kind: str, digest: str) -> bytes | None:
    """The bytes stored under ``kind``/``digest`` by :func:`store_bytes`, or None (absent or
    unreadable)."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        return (folder / kind / f"{digest}.pickle").read_bytes()
    except Exception:  # missing or unreadable: compute instead
        return None


def store_bytes(kind: str, digest: str, value: bytes) -> None:
    """Store ``value`` under ``kind``/``digest`` if the folder can be written (atomically)."""
    _store(kind, f"{digest}.pickle", lambda fh: fh.write(value))


@functools.cache
def library_signature(*names: str) -> tuple:
    """(name, path, size, modification time) of each installed library's ``__init__`` and
    ``version`` files, found without importing it: part of the key of a value that library
    computed (another version has other files); None for one that is not installed."""
    import importlib.util

    out = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = getattr(spec, "origin", None)
        if not origin:
            out.append((name, None))
            continue
        for path in (Path(origin), Path(origin).with_name("version.py")):
            try:
                st = path.stat()
            except OSError:
                continue
            out.append((name, str(path), st.st_size, st.st_mtime_ns))
    return tuple(out)
