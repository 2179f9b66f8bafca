"""``twin bench``: simulated seconds per wall second, peak memory and where the time goes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from twin.cli.common import err, fail, load, out


def bench(
    scenarios: Annotated[Optional[list[Path]], typer.Argument(
        help="Scenarios to run (default: the bundled scenarios/bench/*.yaml).")] = None,
    duration: Annotated[Optional[str], typer.Option(help="Override each run's length, e.g. '1 h'.")] = None,
):
    """Benchmark: simulated seconds per wall second, peak memory and where the time goes."""
    import json
    import os
    import subprocess

    if not scenarios:
        folder = Path(__file__).resolve().parents[2] / "scenarios" / "bench"
        scenarios = sorted(folder.glob("*.yaml"))
        if not scenarios:
            fail("bench: no scenarios given and no scenarios/bench/*.yaml next to the package")
    table = Table(title="twin bench")
    for col in ("scenario", "devices", "simulated", "wall (run)", "speed", "peak RSS",
                "workload", "power", "integration", "controllers", "recording"):
        table.add_column(col, justify="right")
    for path in scenarios:
        loaded = load(path)  # one clear error line for a bad file before anything runs
        del loaded
        cmd = [sys.executable, "-m", "twin.sim.bench", str(path)] + (["--duration", duration] if duration else [])
        err.print(f"running {path} …")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
        if proc.returncode != 0:
            fail(f"bench: {path} failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr else proc.returncode}", 1)
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        sh = r["shares"]
        table.add_row(r["scenario"], f"{r['devices']:,}", f"{r['simulated_s'] / 3600:,.2f} h",
                      f"{r['run_s']:,.1f} s", f"{r['speed']:,.0f}×", f"{r['peak_rss_MiB']:,.0f} MiB",
                      *(f"{sh[k]:.0%}" for k in ("workload", "power", "integration", "controllers", "recording")))
    Console(width=max(out.width, 150)).print(table)
