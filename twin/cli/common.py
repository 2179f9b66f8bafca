"""What every command shares: the consoles, exit codes, the one-line failure, scenario loading
with command-line overrides, and the progress bar."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.console import Console

from twin.scenario.errors import ScenarioError

out = Console()
err = Console(stderr=True)

#: Exit codes.
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def fail(message: str, code: int = EXIT_BAD_INPUT):
    err.print(message, markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def load(scenario: Path, duration=None, step=None, seed=None, record=None):
    from twin.scenario import load_scenario

    overrides = {}
    if record:
        rec = {}
        for item in record:
            group, sep, interval = item.partition("=")
            if not sep or not group.strip() or not interval.strip():
                fail(f"--record: expected GROUP=INTERVAL (e.g. device=off, rack=10s), got '{item}'")
            rec[group.strip()] = interval.strip()
        overrides["record"] = rec
    time_over = {k: v for k, v in (("duration", duration), ("step", step)) if v is not None}
    if time_over:
        overrides["time"] = time_over
    if seed is not None:
        overrides["seed"] = seed
    try:
        return load_scenario(scenario, overrides)
    except ScenarioError as exc:
        fail(str(exc))


class Progress:
    """A rich progress bar that appears only once a run has taken more than ``after`` seconds."""

    def __init__(self, label: str, simulated_step: float, after: float = 2.0, enabled: bool = True):
        self.label, self.h, self.after, self.enabled = label, simulated_step, after, enabled
        self.t0 = time.perf_counter()
        self.bar = None
        self.task = None

    def __call__(self, done: int, total: int):
        if not self.enabled:
            return
        if self.bar is None:
            if time.perf_counter() - self.t0 < self.after or done >= total:
                return
            from rich.progress import (BarColumn, Progress, TaskProgressColumn, TextColumn,
                                       TimeRemainingColumn)

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                                TextColumn("{task.fields[speed]}"), TimeRemainingColumn(),
                                console=err, transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=total, speed="")
        wall = time.perf_counter() - self.t0
        speed = f"{done * self.h / wall:,.0f}× real time" if wall > 0 else ""
        self.bar.update(self.task, completed=done, speed=speed)

    def close(self):
        if self.bar is not None:
            self.bar.stop()
