"""What every command shares: the consoles, exit codes, the one-line failure, scenario loading
with command-line overrides, and the progress bar."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from twin.scenario.errors import ScenarioError

#: Width of output that is not a terminal: lines and tables are never wrapped for a pipe or a
#: file (scripts grep them), whatever the checkout path or the table's width.
UNWRAPPED = 100_000


def duration_text(seconds: float) -> str:
    """A duration as people write it: ``90 s``, ``20 min``, ``25 h``, ``2.5 h``, ``365 d``: the
    largest unit that gives a whole number, or at least two of it."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        value = seconds / size
        whole = abs(value - round(value)) < 1e-9
        if value >= 1 and (whole or value >= 2):
            return f"{value:,.0f} {unit}" if whole else f"{value:,.2f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{seconds:g} s"


def _rich_console_class():
    from rich.console import Console, ConsoleDimensions

    class RichConsole(Console):
        """A rich console that wraps only on a terminal; plain text (no markup, no highlighting)."""

        def __init__(self, **kwargs):
            super().__init__(markup=False, highlight=False, emoji=False, **kwargs)

        def print(self, *objects, **kwargs):
            if all(isinstance(o, str) for o in objects):  # a line of text: never broken by rich
                kwargs.setdefault("soft_wrap", True)
            super().print(*objects, **kwargs)

        @property
        def size(self) -> ConsoleDimensions:
            if self._width is None and not self.is_terminal:
                return ConsoleDimensions(UNWRAPPED, super().size.height)
            return super().size

        @size.setter
        def size(self, new_size) -> None:
            Console.size.fset(self, new_size)

    return RichConsole


#: Environment variables with which rich may call a stream that is not a terminal one.
_TERMINAL_VARIABLES = ("FORCE_COLOR", "TTY_COMPATIBLE", "FORCE_TERMINAL")


class _Console:
    """Standard output or error as a rich console (wraps only on a terminal; plain text: no
    markup, no highlighting), made on first use: rich is imported when something is printed,
    not at start-up (a run prints nothing before its summary table)."""

    def __init__(self, stderr: bool = False):
        self._stderr = stderr
        self._console = None

    @property
    def console(self):
        """The rich console itself."""
        if self._console is None:
            self._console = _rich_console_class()(stderr=self._stderr)
        return self._console

    @property
    def is_terminal(self) -> bool:
        """Whether the stream is a terminal, as rich decides it; a stream that is not a tty,
        with none of rich's terminal environment variables set, is decided without rich."""
        if self._console is None and not any(v in os.environ for v in _TERMINAL_VARIABLES):
            stream = sys.stderr if self._stderr else sys.stdout
            isatty = getattr(stream, "isatty", None)
            try:
                if isatty is None or not isatty():
                    return False
            except ValueError:  # closed
                return False
        return self.console.is_terminal

    def __getattr__(self, name):
        return getattr(self.console, name)


out = _Console()
err = _Console(stderr=True)

#: Exit codes.
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def Exit(code: int = 0):  # noqa: N802 (it stands for the exception class)
    """``typer.Exit(code)``: ends the command with exit code ``code`` (typer imported here, so
    that a command that does not fail does not import it for this)."""
    import typer

    return typer.Exit(code)


def fail(message: str, code: int = EXIT_BAD_INPUT):
    err.print(message)
    raise Exit(code)


def positive_option(text: str | None, dimension: str, option: str) -> float | None:
    """A positive quantity given on the command line, in SI units (None when not given); a value
    that is not one is a one-line error naming ``option``."""
    if text is None:
        return None
    from twin.units import QuantityError, parse_quantity

    try:
        value = parse_quantity(text, dimension)
    except QuantityError as exc:
        fail(f"{option}: {exc}")
    if not value > 0:
        fail(f"{option}: must be positive")
    return value


def load(scenario: Path, duration=None, step=None, seed=None, record=None, *, output: Path | None = None,
         streamed: bool | None = None, allow_large: bool = False, plain: bool = False):
    """Load a scenario with the command-line overrides; a bad option is blamed on the option.

    ``output`` (the ``-o`` of ``twin run``) or ``streamed`` tell the resource estimate whether
    the result is kept in memory; ``allow_large`` confirms a run above its limits; ``plain``
    returns the scenario as stand-ins of its models, read without pydantic when the start-up
    cache holds it (``load_scenario(..., plain=True)``).
    """
    from twin.scenario import load_scenario
    from twin.scenario.names import GROUPS
    from twin.sim.resources import check_loaded

    overrides, options = {}, {}
    if record:
        rec = {}
        for item in record:
            group, sep, interval = item.partition("=")
            group, interval = group.strip(), interval.strip()
            if not sep or not group or not interval:
                fail(f"--record: expected GROUP=INTERVAL (e.g. device=off, rack=10s), got '{item}'")
            if group not in GROUPS:
                fail(f"--record: unknown group '{group}' in '{item}' (known: {', '.join(GROUPS)})")
            rec[group] = interval
            options[f"record.{group}"] = "--record"
        overrides["record"] = rec
    time_over = {k: v for k, v in (("duration", duration), ("step", step)) if v is not None}
    if time_over:
        overrides["time"] = time_over
        options.update({f"time.{k}": f"--{k}" for k in time_over})
    if seed is not None:
        overrides["seed"] = seed
        options["seed"] = "--seed"
    try:
        if streamed is None and output is not None:
            streamed = Path(output).suffix.lower() == ".zarr"
        loaded = load_scenario(scenario, overrides, options, plain=plain)
        try:
            check_loaded(loaded, streamed=streamed, allow_large=allow_large)  # before anything is built
        except ScenarioError as exc:  # say which options made it too large, as the loader does
            given = [f"--{k} {v}" for k, v in time_over.items()] + [f"--record {r}" for r in record or ()]
            if not given:
                raise
            raise ScenarioError(f"{exc.message} (with {', '.join(given)})", file=exc.file, line=exc.line,
                                path=exc.path) from None
        return loaded
    except ScenarioError as exc:
        fail(str(exc))


class Progress:
    """Progress of a run on stderr, once it has taken more than ``after`` seconds.

    On a terminal, a rich progress bar (``mode="bar"``); otherwise, with ``mode="lines"``, one
    plain line every ``every`` seconds of wall time (for logs of batch jobs); ``mode=None``
    shows nothing.
    """

    def __init__(self, label: str, simulated_step: float, after: float = 2.0, mode: str | None = "bar",
                 every: float = 10.0):
        self.label, self.h, self.after, self.mode, self.every = label, simulated_step, after, mode, every
        self.t0 = time.perf_counter()
        self.next_line = self.t0 + after
        self.bar = None
        self.task = None

    @classmethod
    def choose(cls, label: str, simulated_step: float, wanted: bool | None) -> Progress:
        """``wanted`` None: a bar on a terminal, nothing otherwise; True: a bar on a terminal,
        plain lines otherwise; False: nothing."""
        if wanted is False:
            return cls(label, simulated_step, mode=None)
        mode = "bar" if err.is_terminal else ("lines" if wanted else None)
        return cls(label, simulated_step, mode=mode)

    def __call__(self, done: int, total: int):
        if self.mode is None:
            return
        now = time.perf_counter()
        wall = now - self.t0
        speed = f"{done * self.h / wall:,.0f}× real time" if wall > 0 else ""
        if self.mode == "lines":
            if now >= self.next_line and done < total:
                self.next_line = now + self.every
                err.print(f"{self.label}: {done * self.h:,.0f} s of {total * self.h:,.0f} s simulated "
                          f"({done / total:.0%}), {speed}")
            return
        if self.bar is None:
            if wall < self.after or done >= total:
                return
            from rich.progress import (BarColumn, Progress, TaskProgressColumn, TextColumn,
                                       TimeRemainingColumn)

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                                TextColumn("{task.fields[speed]}"), TimeRemainingColumn(),
                                console=err.console, transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=total, speed="")
        self.bar.update(self.task, completed=done, speed=speed)

    def close(self):
        if self.bar is not None:
            self.bar.stop()
