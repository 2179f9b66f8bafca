"""Command line: one module per command; library modules never import this package.

``twin run | validate | schema | catalog | serve | bench | sweep | capacity | report | calibrate``.
"""

from __future__ import annotations

import typer

from twin.cli.bench import bench
from twin.cli.calibrate import calibrate_command
from twin.cli.capacity import capacity_command
from twin.cli.catalog import catalog
from twin.cli.report import report_command
from twin.cli.run import run
from twin.cli.schema import schema
from twin.cli.serve import serve
from twin.cli.sweep import sweep_command
from twin.cli.validate import validate

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="twin: power-thermal digital twin of AI datacenters.",
    pretty_exceptions_enable=False,
)
app.command(name="run")(run)
app.command(name="validate")(validate)
app.command(name="bench")(bench)
app.command(name="schema")(schema)
app.command(name="catalog")(catalog)
app.command(name="serve")(serve)
app.command(name="sweep")(sweep_command)
app.command(name="capacity")(capacity_command)
app.command(name="report")(report_command)
app.command(name="calibrate")(calibrate_command)


def main():
    app()


__all__ = ["app", "main"]
