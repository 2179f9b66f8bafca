"""A command's plain command line converted without pydantic, for a fast start.

typer converts every parameter through a pydantic ``TypeAdapter`` (importing pydantic and
building one adapter per option: ~0.25 CPU-s before ``twin run`` can start). :func:`parse`
reads the command line with the command's own click parser (the one typer builds from the
command function: the same option names, the same grammar), then converts the values itself
when each is plain: a string or a path that is not empty, an integer written in digits, a flag,
repeated values of a repeatable option. For anything else — ``--help``, an unknown option, a
missing value, an extra argument, a value needing typer's conversion rules — it returns None, and
the command line goes to typer, which parses it and reports any mistake as always.
:func:`invoke` then runs the function as the command group runs a command: the same exit codes
for ``typer.Exit``, an interrupt and a broken pipe. tests/sim/test_startup.py checks that both
give the command the same arguments.
"""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path

_DIGITS = re.compile(r"[0-9]+")
_CONVERT = {str: str, Path: Path, int: int, bool: bool}


def _types(function) -> dict | None:
    """Parameter name → (converter, repeatable) from the function's annotations, or None when
    one is of a type converted here."""
    import inspect

    hints = typing.get_type_hints(function, include_extras=True)
    out = {}
    for name in inspect.signature(function).parameters:
        base = hints.get(name)
        if typing.get_origin(base) is typing.Annotated:
            base = typing.get_args(base)[0]
        if typing.get_origin(base) in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(base) if a is not type(None)]
            if len(args) != 1:
                return None
            base = args[0]
        multiple = typing.get_origin(base) is list
        if multiple:
            base = typing.get_args(base)[0]
        if base not in _CONVERT:
            return None
        out[name] = (_CONVERT[base], multiple)
    return out


def _convert(value, convert, multiple):
    """The converted value, or raise ValueError when it is not plain."""
    if multiple:
        if not isinstance(value, (list, tuple)):
            raise ValueError(value)
        return [_convert(v, convert, False) for v in value]
    if convert is bool:
        if not isinstance(value, bool):
            raise ValueError(value)
        return value
    if not isinstance(value, str) or not value or (convert is int and not _DIGITS.fullmatch(value)):
        raise ValueError(value)
    return convert(value)


def parse(command, function, args: list[str]) -> dict | None:
    """``function``'s keyword arguments from ``args`` parsed by the click ``command`` typer
    made of it, or None (see the module's notes)."""
    import inspect

    kinds = _types(function)
    if kinds is None:
        return None
    for param in command.params:  # what typer itself would call or read
        if param.name not in kinds or param.callback is not None or param.is_eager or param.envvar \
                or getattr(param, "prompt", None):
            return None
    try:
        ctx = command.context_class(command, info_name=command.name)
        opts, extra, _ = command.make_parser(ctx).parse_args(args=list(args))
    except Exception:  # click's usage errors: typer's to report
        return None
    if extra or set(opts) - set(kinds):
        return None  # an extra argument, or --help
    out = {}
    for name, default in ((n, p.default) for n, p in inspect.signature(function).parameters.items()):
        value = opts.get(name)
        if value is None or (isinstance(value, (list, tuple)) and not value and kinds[name][1]):
            if default is inspect.Parameter.empty:
                return None  # a required argument missing
            out[name] = default
            continue
        try:
            out[name] = _convert(value, *kinds[name])
        except ValueError:
            return None
    return out


def invoke(function, kwargs: dict):
    """Run the command ``function(**kwargs)`` and exit as the command group
    (:class:`twin.cli.OneLineErrors`) would: 0 when it returns, the code of a ``typer.Exit``,
    130 on an interrupt or an abort, 1 on a broken pipe, 2 with one line for a usage error."""
    import errno
    import sys

    import typer

    from twin.cli import _click_exceptions, usage_line
    from twin.cli.common import EXIT_BAD_INPUT, err

    try:
        function(**kwargs)
        code = 0
    except typer.Exit as exc:
        code = exc.exit_code
    except KeyboardInterrupt:
        code = 130
    except (EOFError, typer.Abort, _click_exceptions.Abort) as exc:
        if isinstance(exc, EOFError):
            print(file=sys.stderr)
        err.print("aborted")
        code = 130
    except _click_exceptions.ClickException as exc:
        err.print(usage_line(exc))
        code = EXIT_BAD_INPUT
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        code = 1
    sys.exit(code)
