"""A command's plain command line run without typer, for a fast start.

typer (with click) is ~0.1 CPU-s to import, and converts every parameter through a pydantic
``TypeAdapter`` (pydantic imported, one adapter built per option: ~0.25 CPU-s more) before
``twin run`` can start. :func:`run_fast` reads a *plain* command line of a command of
:data:`twin.cli.FAST_COMMANDS` itself and calls the function doing the work: each option the
command declares given at most once (a repeatable one any number of times) as ``--name value``,
``--name=value`` or ``-o value`` (flags alone), values that are not empty and do not start with
``-`` (integers written in digits), and the command's positional arguments. For anything else —
``--help``, an unknown option, ``--``, a missing value, an extra argument, a value needing
typer's conversion rules — it returns, and the command line goes to typer, which parses it and
reports any mistake as always.

The command's options (names, flags, repeatable ones, their types and defaults) are read from
the click command typer builds of it, and kept in the on-disk cache (:mod:`twin.cache`) under
the package's source files and the installed typer's, so a later start does not import typer
at all. :func:`invoke` runs the function as the command group runs a command (the same exit codes
for ``typer.Exit``, an interrupt, an abort and a broken pipe); tests/sim/test_startup.py checks
that typer's parser and this one give the command the same arguments.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_DIGITS = re.compile(r"[0-9]+")
_CONVERT = {"str": str, "path": Path, "int": int}


def _kinds(function) -> dict | None:
    """Parameter name → (kind, repeatable) from the function's annotations (kind: ``str``,
    ``path``, ``int`` or ``bool``), or None when one is of another type."""
    import inspect
    import types
    import typing

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
        kind = {str: "str", Path: "path", int: "int", bool: "bool"}.get(base)
        if kind is None:
            return None
        out[name] = (kind, multiple)
    return out


def options_table(name: str) -> dict | None:
    """The options of command ``name`` as typer declares them: ``{"options": {flag: (param,
    kind or True/False for a flag, repeatable)}, "arguments": [(param, kind)], "defaults":
    {param: default}}``, or None when the command uses something :func:`parse` does not
    reproduce (a callback, an environment variable, a prompt, a count, several values per
    option). Imports typer."""
    import importlib
    import inspect

    import typer.main

    from twin.cli import COMMANDS
    from twin.cli.group import make_app

    module, attr = COMMANDS[name]
    function = getattr(importlib.import_module(module), attr)
    kinds = _kinds(function)
    if kinds is None:
        return None
    command = typer.main.get_command(make_app(name)).commands[name]
    options, arguments = {}, []
    for p in command.params:
        if p.name not in kinds or p.callback is not None or p.is_eager or p.envvar or p.nargs != 1 \
                or getattr(p, "prompt", None) or getattr(p, "count", False):
            return None
        kind, multiple = kinds[p.name]
        if p.param_type_name == "argument":
            if multiple or kind == "bool" or not p.required:
                return None
            arguments.append((p.name, kind))
            continue
        if (kind == "bool") != bool(getattr(p, "is_flag", False)) or (kind == "bool" and multiple):
            return None
        for flag in p.opts:
            options[flag] = (p.name, True if kind == "bool" else kind, multiple)
        for flag in p.secondary_opts:
            options[flag] = (p.name, False, multiple)
    defaults = {n: q.default for n, q in inspect.signature(function).parameters.items()
                if q.default is not inspect.Parameter.empty}
    return {"options": options, "arguments": arguments, "defaults": defaults}


def _table(name: str) -> dict | None:
    """:func:`options_table`, read from the on-disk cache while the package's sources and the
    installed typer are unchanged."""
    from twin import cache

    digest = cache.key("cli", name, cache.source_signature(Path(__file__).parents[1]), sys.version,
                       cache.library_signature("typer", "click"))
    table = cache.load_object("cli", digest)
    if isinstance(table, dict) and set(table) == {"options", "arguments", "defaults"}:
        return table
    table = options_table(name)
    if table is not None:
        cache.store_object("cli", digest, table)
    return table


def parse(table: dict, args: list[str]) -> dict | None:
    """The command function's keyword arguments from ``args``, or None (see the module's notes)."""
    options = table["options"]
    given: dict = {}
    positional: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if not token.startswith("-"):
            positional.append(token)
            continue
        if token.startswith("--"):
            flag, eq, value = token.partition("=")
        else:
            flag, eq, value = token, "", ""  # a short option alone ("-oVALUE", "-o=V": typer's)
        if flag not in options:
            return None  # --help, --, an unknown option: typer's to answer
        name, kind, multiple = options[flag]
        if name in given and not multiple:
            return None
        if isinstance(kind, bool):
            if eq:
                return None
            given[name] = kind
            continue
        if not eq:
            if i >= len(args):
                return None
            value = args[i]
            i += 1
        if not value or value.startswith("-") or (kind == "int" and not _DIGITS.fullmatch(value)):
            return None
        value = _CONVERT[kind](value)
        if multiple:
            given.setdefault(name, []).append(value)
        else:
            given[name] = value
    arguments = table["arguments"]
    if len(positional) != len(arguments):
        return None
    for (name, kind), value in zip(arguments, positional):
        if not value:
            return None
        given[name] = _CONVERT[kind](value)
    return {**table["defaults"], **given}


def run_fast(name: str, args: list[str]) -> None:
    """Run command ``name`` with ``args`` and exit, or return when the command line is not plain
    (typer then parses it)."""
    import importlib

    from twin.cli import FAST_COMMANDS

    table = _table(name)
    kwargs = parse(table, args) if table is not None else None
    if kwargs is None:
        return
    module, attr = FAST_COMMANDS[name]
    invoke(getattr(importlib.import_module(module), attr), kwargs)


def invoke(function, kwargs: dict):
    """Run the command ``function(**kwargs)`` and exit as the command group
    (:class:`twin.cli.group.OneLineErrors`) would: 0 when it returns, the code of a
    ``typer.Exit``, 130 on an interrupt or an abort, 1 on a broken pipe, 2 with one line for a
    usage error. typer is imported only when the command raises."""
    import errno

    try:
        function(**kwargs)
        code = 0
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:
        import typer

        from twin.cli.common import EXIT_BAD_INPUT, err
        from twin.cli.group import _click_exceptions, usage_line

        if isinstance(exc, typer.Exit):
            code = exc.exit_code
        elif isinstance(exc, (EOFError, typer.Abort, _click_exceptions.Abort)):
            if isinstance(exc, EOFError):
                print(file=sys.stderr)
            err.print("aborted")
            code = 130
        elif isinstance(exc, _click_exceptions.ClickException):
            err.print(usage_line(exc))
            code = EXIT_BAD_INPUT
        elif isinstance(exc, OSError) and exc.errno == errno.EPIPE:
            from twin.cli.group import PacifyFlushWrapper

            sys.stdout, sys.stderr = PacifyFlushWrapper(sys.stdout), PacifyFlushWrapper(sys.stderr)
            code = 1
        else:
            raise
    sys.exit(code)
