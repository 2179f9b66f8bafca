"""Command line: one module per command; library modules never import this package.

``twin run | validate | schema | catalog | serve | bench | sweep | capacity | report | calibrate | shadow``,
and
``twin --version``. Every mistake on the command line — an unknown command or option, a value
of the wrong type, a bad scenario or sweep file — is one line on stderr and exit code 2
(:func:`twin.cli.common.fail`, and :class:`OneLineErrors` for what the argument parser finds).
"""

from __future__ import annotations

import sys

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

#: Commands whose plain command lines are run without typer (:mod:`twin.cli.fastparse`): those
#: where start-up time matters. name → (module, function doing the work, without typer).
FAST_COMMANDS = {"run": ("twin.cli.scenario_run", "run_scenario")}

#: Names from :mod:`twin.cli.group` (typer), imported on first use.
_GROUP = ("app", "make_app", "OneLineErrors", "usage_line")


def __getattr__(name: str):
    if name not in _GROUP:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from twin.cli import group

    value = group.make_app() if name == "app" else getattr(group, name)
    globals()[name] = value  # the whole command group is built once
    return value


def main():
    """The ``twin`` console script: parses ``sys.argv`` with the group of the one command named
    there (or the whole group when none is, or for ``--help``/``--version``)."""
    args = sys.argv[1:]
    only = args[0] if args and args[0] in COMMANDS else None
    try:
        if only in FAST_COMMANDS:
            from twin.cli import fastparse

            fastparse.run_fast(only, args[1:])  # exits when the command line is plain
        from twin.cli.group import make_app

        make_app(only)()
    finally:
        # The command is over: a SIGINT or SIGTERM now (while the interpreter shuts down) has
        # nothing left to stop, and must not turn a finished command into a death by signal.
        import signal

        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)


__all__ = ["app", "main"]
