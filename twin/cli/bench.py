"""``twin bench``: simulated seconds per CPU and wall second, peak memory and where the time goes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from twin.cli.common import err, fail, load

#: Where scenarios named without a path are looked for, relative to the working directory
#: (then to the source tree the package runs from, for an editable install).
SEARCH = ("scenarios/bench", "scenarios")

#: Columns of the breakdown table: shares of the loop's wall time by phase.
PHASES = ("workload", "power", "integration", "controllers", "recording")


def _roots() -> list[Path]:
    roots = [Path.cwd()]
    source = Path(__file__).resolve().parents[2]  # the checkout, when installed in place
    if (source / "scenarios").is_dir() and source not in roots:
        roots.append(source)
    return roots


def default_scenarios() -> list[Path]:
    """``scenarios/bench/*.yaml`` in the working directory, else in the source checkout."""
    for root in _roots():
        found = sorted((root / "scenarios" / "bench").glob("*.yaml"))
        if found:
            return found
    return []


def resolve(name: str) -> Path:
    """A scenario given by path, or by name (``hall-1k``, ``quickstart``, ``bench/hall-1k``)."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return path
    tried = []
    for root in _roots():
        for folder in SEARCH:
            candidate = root / folder / f"{name}.yaml"
            tried.append(candidate)
            if candidate.is_file():
                return candidate
    if path.suffix in (".yaml", ".yml"):
        fail(f"{name}: no such file")
    where = ", ".join(str(Path(f) / "NAME.yaml") for f in SEARCH)
    fail(f"--compare: no scenario '{name}' (looked for {where} in {Path.cwd()})")


def format_table(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    """A plain-text table: the first ``left`` columns left-aligned, the rest right-aligned;
    never wrapped or truncated, whatever the terminal (or pipe) width."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:g} s"
    if seconds < 7200:
        return f"{seconds / 60:g} min"
    return f"{seconds / 3600:,.4g} h"


def _run_one(path: Path, duration: str | None) -> dict:
    """Run ``python -m twin.sim.bench`` for one scenario in a fresh process and read its JSON.

    ``-P`` keeps the working directory off ``sys.path``, so a folder there that happens to be
    called ``twin`` is not imported in place of the package.
    """
    import json
    import os
    import subprocess

    cmd = [sys.executable, "-P", "-m", "twin.sim.bench", str(path.resolve())]
    if duration:
        cmd += ["--duration", duration]
    if err.is_terminal:  # progress for a person watching; piped stderr holds only errors
        err.print(f"running {path} …", highlight=False, markup=False, soft_wrap=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    last = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
    if proc.returncode == 2:
        fail(last)
    if proc.returncode != 0:
        fail(f"bench: {path} failed: {last}", 1)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench(
    scenarios: Annotated[Optional[list[Path]], typer.Argument(
        help="Scenarios to run (default: scenarios/bench/*.yaml in the working directory).")] = None,
    duration: Annotated[Optional[str], typer.Option(help="Override each run's length, e.g. '1 h'.")] = None,
    compare: Annotated[Optional[str], typer.Option(
        help="Comma-separated scenario names or files to run and compare in one table of speed and "
             "memory, e.g. 'quickstart,hall-1k,frontier' (names are looked up in scenarios/bench/ "
             "and scenarios/).")] = None,
):
    """Benchmark: simulated seconds per CPU and wall second, peak memory and where the time goes.

    Each scenario runs in its own process (streaming to a temporary Zarr store). The run loop
    uses one BLAS thread unless TWIN_BLAS_THREADS says otherwise.
    """
    if duration is not None:
        from twin.units import QuantityError, parse_quantity

        try:
            seconds = parse_quantity(duration, "time")
        except QuantityError as exc:
            fail(f"--duration: {exc}")
        if not seconds > 0:
            fail(f"--duration: must be positive, got '{duration}'")
    if compare is not None:
        if scenarios:
            fail("--compare: give scenarios either as arguments or in --compare, not both")
        names = [n.strip() for n in compare.split(",") if n.strip()]
        if not names:
            fail("--compare: expected scenario names separated by commas, e.g. 'quickstart,hall-1k'")
        paths = [resolve(n) for n in names]
    elif scenarios:
        paths = list(scenarios)
        for p in paths:
            if not p.is_file():
                fail(f"{p}: no such file")
    else:
        paths = default_scenarios()
        if not paths:
            fail(f"bench: no scenarios given and no scenarios/bench/*.yaml in {Path.cwd()}")
    for path in paths:
        load(path, duration)  # one clear error line for a bad file before anything runs
    results = [_run_one(path, duration) for path in paths]

    rows = []
    for r in results:
        row = [r["scenario"], f"{r['devices']:,}", _duration(r["simulated_s"]),
               f"{r['run_cpu_s']:,.1f} s", f"{r['speed_cpu']:,.0f}×", f"{r['run_s']:,.1f} s",
               f"{r['speed']:,.0f}×", f"{r['peak_rss_MiB']:,.0f} MiB", f"{r['startup_cpu_s']:,.1f} s"]
        if compare is None:
            row += [f"{r['shares'][k]:.0%}" for k in PHASES]
        rows.append(row)
    headers = ["scenario", "devices", "simulated", "CPU (loop)", "speed (CPU)", "wall (loop)",
               "speed (wall)", "peak RSS", "startup CPU"]
    if compare is None:
        headers += list(PHASES)
    title = ("twin bench: speed = simulated s per CPU s (user+sys) and per wall s of the step loop; "
             "startup = imports, load and build")
    sys.stdout.write(title + "\n" + format_table(headers, rows) + "\n")
