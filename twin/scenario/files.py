"""Checks of the files a scenario names, before anything reads them for real.

Every referenced file (the scenario itself, replay tables, request traces, weather files) must be
a regular file — not a directory, FIFO, device or socket, so nothing blocks or reads forever —
with data in it (``/proc`` files report a size of 0 and are refused), no larger than its kind's
limit, and of the expected format: text or Parquet, a header naming the expected columns, and at
least one data row. Messages name the file and what is wrong, never its content: a path pointing
at ``/proc/self/environ`` or a password file prints no byte of it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from twin.text import excerpt

#: Largest file read, by kind [bytes]. A typical-year EPW file is 1.6 MB; the Azure LLM
#: inference traces are 1–40 MB; a replay of 1,000 devices at 1 s for a day is ≈ 2 GB of CSV —
#: beyond that, use Parquet (≈ 10× smaller) or a coarser replay.
MAX_BYTES = {
    "scenario file": 5_000_000,
    "replay file": 2 * 2**30,
    "trace file": 1 * 2**30,
    "weather file": 200 * 2**20,
}
#: Bytes read to check a text file's header.
SNIFF_BYTES = 64 * 1024
PARQUET_MAGIC = b"PAR1"


class FileProblem(ValueError):
    """A referenced file that cannot be used; the message names the file, never its content.

    ``reason`` is the message without the file's kind and name (for a line that already names
    the file).
    """

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason or message


def _problem(what: str, path, reason: str) -> FileProblem:
    return FileProblem(f"{what} {shown(path)}: {reason}", reason)


def shown(path) -> str:
    """A path as an error line shows it (printable, at most 200 characters, no markup)."""
    return excerpt(str(path), 200)[1:-1]


def check_file(path, what: str, max_bytes: int | None = None) -> os.stat_result:
    """Refuse anything but a readable regular file with data, at most ``max_bytes`` long.

    Raises
    ------
    FileProblem
        Missing, a directory, a FIFO/device/socket, empty (or a special file that reports no
        size, such as those under /proc), too large, or not readable.
    """
    max_bytes = MAX_BYTES.get(what, 2**30) if max_bytes is None else max_bytes
    name = shown(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileProblem(f"{what} not found: {name}", "file not found") from None
    except PermissionError:
        raise _problem(what, path, "not readable (permission denied)") from None
    except OSError as exc:
        raise _problem(what, path, f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    if stat.S_ISDIR(st.st_mode):
        raise _problem(what, path, "is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise _problem(what, path, "not a regular file (a device, FIFO or socket)")
    if st.st_size == 0:
        raise _problem(what, path, "empty file (or a special file with no size, such as under /proc)")
    if st.st_size > max_bytes:
        raise _problem(what, path, f"{st.st_size:,} bytes, more than the {max_bytes:,} allowed")
    if not os.access(path, os.R_OK):
        raise _problem(what, path, "not readable (permission denied)")
    return st


def _read_bytes(path, what: str, n: int) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except OSError as exc:
        raise _problem(what, path, f"cannot be read ({exc.strerror or type(exc).__name__})") from None


def read_text_file(path, max_bytes: int | None = None, what: str = "file") -> str:
    """The UTF-8 text of a checked file (:func:`check_file`), read with a bound."""
    max_bytes = MAX_BYTES.get(what, 2**30) if max_bytes is None else max_bytes
    check_file(path, what, max_bytes)
    data = _read_bytes(path, what, max_bytes + 1)
    if len(data) > max_bytes:
        raise _problem(what, path, f"more than the {max_bytes:,} bytes allowed")
    if b"\x00" in data:
        raise _problem(what, path, "a binary file, not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _problem(what, path, f"not UTF-8 text (byte {exc.start:,})") from None


def _header_and_rows(path, what: str, encoding: str) -> tuple[list[str], bool]:
    """Column names of a CSV's first line and whether a data row follows."""
    head = _read_bytes(path, what, SNIFF_BYTES)
    if b"\x00" in head:
        raise FileProblem(f"{what} {shown(path)}: a binary file, not CSV text")
    try:
        text = head.decode(encoding)
    except UnicodeDecodeError:
        # A multi-byte character cut at the sniff boundary is fine; anything else is not text.
        try:
            text = head[: max(0, len(head) - 4)].decode(encoding)
        except UnicodeDecodeError:
            raise FileProblem(f"{what} {shown(path)}: not {encoding} text") from None
    lines = text.splitlines()
    if not lines:
        raise FileProblem(f"{what} {shown(path)}: no header line")
    header = [c.strip().strip('"').strip() for c in lines[0].split(",")]
    rows = any(line.strip().strip(",") for line in lines[1:])
    if len(lines) == 1 and len(head) == SNIFF_BYTES:
        raise FileProblem(f"{what} {shown(path)}: its first line is longer than {SNIFF_BYTES:,} bytes; "
                          f"not a CSV header")
    return header, rows


def _parquet_columns(path, what: str) -> tuple[list[str], bool]:
    st = check_file(path, what)
    if st.st_size < 12 or _read_bytes(path, what, 4) != PARQUET_MAGIC:
        raise FileProblem(f"{what} {shown(path)}: not a Parquet file")
    from twin.extras import MissingExtra, require

    try:
        pq = require("pyarrow.parquet", "parquet", f"{what} {shown(path)} (Parquet)")
    except MissingExtra as exc:
        raise FileProblem(str(exc)) from None
    try:
        meta = pq.read_metadata(path)
        return list(meta.schema.names), meta.num_rows > 0
    except Exception as exc:  # pyarrow raises its own error types for damaged files
        raise FileProblem(f"{what} {shown(path)}: not a readable Parquet file ({type(exc).__name__})") from None


def check_table(path, what: str, columns: tuple[str, ...], one_of: tuple[str, ...] = (),
                encoding: str = "utf-8") -> None:
    """Check a CSV (or Parquet, by suffix) table before it is read: a file as
    :func:`check_file` wants it, a header naming ``columns`` (and one of ``one_of``), and at
    least one data row.

    Raises
    ------
    FileProblem
        Naming the file and the missing columns; never quoting the file.
    """
    check_file(path, what)
    if Path(path).suffix.lower() in (".parquet", ".pq"):
        header, rows = _parquet_columns(path, what)
    else:
        header, rows = _header_and_rows(path, what, encoding)
    missing = [c for c in columns if c not in header]
    if missing:
        raise FileProblem(f"{what} {shown(path)}:1: missing column(s) {', '.join(missing)} "
                          f"(its first line must be a header naming {', '.join(columns)})")
    if one_of and not any(c in header for c in one_of):
        raise FileProblem(f"{what} {shown(path)}:1: needs one of the columns {', '.join(one_of)}")
    if not rows:
        raise FileProblem(f"{what} {shown(path)}:2: a header but no data rows")


def check_epw(path, what: str = "weather file", data: bool = True) -> None:
    """Check an EPW weather file: text whose first line is its ``LOCATION`` record, and (with
    ``data``) hourly records after the 8 header lines."""
    check_file(path, what)
    head = _read_bytes(path, what, SNIFF_BYTES)
    if b"\x00" in head or not head.lstrip(b"\xef\xbb\xbf").upper().startswith(b"LOCATION,"):
        raise FileProblem(f"{what} {shown(path)}: not an EPW file (its first line is not a "
                          f"LOCATION record)")
    if data:
        lines = head.splitlines()
        if len(lines) < 9 or not any(line.strip() for line in lines[8:]):
            if len(head) < SNIFF_BYTES:
                raise FileProblem(f"{what} {shown(path)}: an EPW header but no hourly records")


def referenced_files(data: dict, base: Path) -> list[Path]:
    """Files a scenario's YAML data names (not yet validated): overlays, replay tables, request
    traces and weather files, resolved from ``base`` (the scenario's folder). Bundled names
    (``azure-code``, ``Leesburg``) are part of the installed twin and not listed."""
    found: list[Path] = []

    def add(value) -> None:
        if isinstance(value, str) and value:
            found.append(Path(base) / value)

    if not isinstance(data, dict):
        return found
    for name in data.get("overlays") or []:
        add(name)
    for rule in data.get("workload") or []:
        if isinstance(rule, dict):
            add(rule.get("replay"))
    for job in data.get("jobs") or []:
        if isinstance(job, dict) and job.get("trace") != "azure-code":
            add(job.get("trace"))
    plant = data.get("plant")
    weather = plant.get("weather") if isinstance(plant, dict) else None
    if isinstance(weather, dict) and isinstance(weather.get("file"), str):
        file = Path(weather["file"])
        bundled = weather.get("kind") != "csv" and file.suffix.lower() != ".epw" and len(file.parts) == 1
        if not bundled:
            add(weather["file"])
    return found


def content_digest(paths, cache: dict | None = None) -> str:
    """SHA-256 over the contents of ``paths`` (in order; a missing or unreadable file counts as
    its path and the reason), for cache keys that change when a referenced file does."""
    import hashlib

    cache = {} if cache is None else cache
    total = hashlib.sha256()
    for path in paths:
        key = str(Path(path).resolve())
        if key not in cache:
            try:
                with open(path, "rb") as fh:
                    cache[key] = hashlib.file_digest(fh, "sha256").hexdigest()
            except OSError as exc:
                cache[key] = f"unreadable:{type(exc).__name__}"
        total.update(f"{key}\0{cache[key]}\n".encode())
    return total.hexdigest()
