"""Command line: one module per command; library modules never import this package.

``twin run | validate | schema | catalog | serve | bench | sweep | capacity | report | calibrate | shadow``,
and
``twin --version``. Every mistake on the command line — an unknown command or option, a value
of the wrong type, a bad scenario or sweep file — is one line on stderr and exit code 2
(:func:`twin.cli.common.fail`, and :class:`OneLineErrors` for what the argument parser finds).
"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from twin.cli.common import EXIT_BAD_INPUT, err, out

#: The commands, in the order ``twin --help`` lists them: name → (module, function). A module is
#: imported only when its command is run (or the whole list is needed, for ``twin --help``).
COMMANDS = {
    "run": ("twin.cli.run", "run"),
    "validate": ("twin.cli.validate", "validate"),
    "bench": ("twin.cli.bench", "bench"),
    "schema": ("twin.cli.schema", "schema"),
    "catalog": ("twin.cli.catalog", "catalog"),
    "serve": ("twin.cli.serve", "serve"),
    "sweep": ("twin.cli.sweep", "sweep_command"),
    "capacity": ("twin.cli.capacity", "capacity_command"),
    "report": ("twin.cli.report", "report_command"),
    "calibrate": ("twin.cli.calibrate", "calibrate_command"),
    "shadow": ("twin.cli.shadow", "shadow_command"),
}

try:  # typer ≥ 0.20 carries its own copy of click
    from typer._click import exceptions as _click_exceptions
except ImportError:  # pragma: no cover - older typer on click
    from click import exceptions as _click_exceptions


def usage_line(exc) -> str:
    """One line for an argument-parser error: ``twin run: --seed: …`` (the command, then the
    option as typed when there is one, then the problem)."""
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "twin"
    param = getattr(exc, "param", None)
    opts = [o for o in getattr(param, "opts", None) or [] if o.startswith("--")] or getattr(param, "opts", None)
    if isinstance(exc, _click_exceptions.BadParameter) and param is not None and opts \
            and not isinstance(exc, _click_exceptions.MissingParameter):
        text = f"{opts[0]}: {exc.message}"
    else:
        text = exc.format_message()
    text = " ".join(text.split())  # click's messages may span lines
    text = text[:1].lower() + text[1:].rstrip(".")
    return f"{where}: {text} (see '{where} --help')"


class OneLineErrors(TyperGroup):
    """The command group, with argument-parser errors as one line on stderr (exit code 2)
    instead of a usage block in a box."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:  # the program is "twin" however it was started (python -m twin, a test runner)
            code = super().main(args=args, prog_name="twin", complete_var=complete_var,
                                standalone_mode=False, **extra)
        except _click_exceptions.NoArgsIsHelpError as exc:
            out.print(exc.ctx.get_help())
            code = 0
        except _click_exceptions.ClickException as exc:
            err.print(usage_line(exc))
            code = EXIT_BAD_INPUT
        except (typer.Abort, getattr(_click_exceptions, "Abort", typer.Abort)):
            err.print("aborted")
            code = 130
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


def _version(value: bool):
    if value:
        import twin

        out.print(f"twin {twin.__version__}")
        raise typer.Exit(0)


def _root(version: Annotated[Optional[bool], typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")] = None):
    """twin: power-thermal digital twin of AI datacenters."""


def make_app(only: str | None = None) -> typer.Typer:
    """The command group: every command, or only the command ``only`` (what ``twin ONLY …``
    parses: the same options, messages and exit codes, without importing the other commands'
    modules and building their parsers)."""
    import importlib

    app = typer.Typer(
        cls=OneLineErrors,
        add_completion=False,
        no_args_is_help=True,
        help="twin: power-thermal digital twin of AI datacenters.",
        pretty_exceptions_enable=False,
    )
    app.callback()(_root)
    for name, (module, function) in COMMANDS.items():
        if only is None or name == only:
            app.command(name=name)(getattr(importlib.import_module(module), function))
    return app


def __getattr__(name: str):
    if name == "app":  # the whole command group, built on first use
        value = globals()["app"] = make_app()
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Commands whose plain command lines are converted without typer's pydantic adapters
#: (:mod:`twin.cli.fastparse`): those where start-up time matters.
FAST_COMMANDS = ("run",)


def _run_fast(app: typer.Typer, name: str, args: list[str]) -> None:
    """Run command ``name`` with ``args`` converted by :mod:`twin.cli.fastparse` and exit, or
    return (the command line is not plain: typer parses it)."""
    import importlib

    import typer.main

    from twin.cli import fastparse

    module, function = COMMANDS[name]
    function = getattr(importlib.import_module(module), function)
    kwargs = fastparse.parse(typer.main.get_command(app).commands[name], function, args)
    if kwargs is not None:
        fastparse.invoke(function, kwargs)


def main():
    """The ``twin`` console script: parses ``sys.argv`` with the group of the one command named
    there (or the whole group when none is, or for ``--help``/``--version``)."""
    args = sys.argv[1:]
    only = args[0] if args and args[0] in COMMANDS else None
    try:
        app = make_app(only)
        if only in FAST_COMMANDS:
            _run_fast(app, only, args[1:])  # exits when the command line is plain
        app()
    finally:
        # The command is over: a SIGINT or SIGTERM now (while the interpreter shuts down) has
        # nothing left to stop, and must not turn a finished command into a death by signal.
        import signal

        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)


__all__ = ["app", "main"]
