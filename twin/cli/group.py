"""The ``twin`` command group (typer), with one-line errors; see :mod:`twin.cli`."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from twin.cli import COMMANDS
from twin.cli.common import EXIT_BAD_INPUT, err, out

try:  # typer ≥ 0.20 carries its own copy of click
    from typer._click import exceptions as _click_exceptions
    from typer._click.utils import PacifyFlushWrapper  # noqa: F401 (for twin.cli.fastparse)
except ImportError:  # pragma: no cover - older typer on click
    from click import exceptions as _click_exceptions
    from click.utils import PacifyFlushWrapper  # noqa: F401


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
