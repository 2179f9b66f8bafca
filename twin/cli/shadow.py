"""``twin shadow``: run the twin alongside a live site, export predicted, measured and residuals."""

from __future__ import annotations

import errno
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated, Optional

import typer

from twin.cli.common import fail, load, positive_option

#: Default port of the shadow's /metrics (twin serve uses 9808).
DEFAULT_PORT = 9809


def shadow_command(
    scenario: Annotated[Path, typer.Argument(help="Scenario with a telemetry: section (device mapping).")],
    prometheus: Annotated[str, typer.Option("--prometheus", help="Base URL of the Prometheus holding the site's telemetry.")],
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port of /metrics and /healthz.")] = DEFAULT_PORT,
    interval: Annotated[Optional[str], typer.Option(help="Interval compared each step (default telemetry.interval, "
                                                         "else the scenario's step).")] = None,
    start: Annotated[Optional[str], typer.Option("--from", help="Replay the site's history from this time (UTC) "
                                                              "instead of following it live.")] = None,
    speed: Annotated[str, typer.Option(help="Replay: site seconds per wall second, or 'max'.")] = "max",
    steps: Annotated[Optional[int], typer.Option(help="Stop after this many intervals (keep serving the last state).")] = None,
    delay: Annotated[float, typer.Option(help="Live: seconds after an interval's end before it is read.")] = 30.0,
):
    """Follow a live site: the twin driven by its measured utilisation; residuals as metrics."""
    from twin.calibrate.shadow import ShadowRun, shadow_registry
    from twin.export.server import POLL_SECONDS, MetricsApp, make_http_server, parse_speed
    from twin.scenario.errors import ScenarioError

    iv = positive_option(interval, "time", "--interval")
    if steps is not None and steps < 1:
        fail("--steps: must be at least 1")
    try:
        pace = parse_speed(speed)
    except ValueError as exc:
        fail(str(exc))
    t0 = None
    if start is not None:
        import pandas as pd

        try:
            t0 = pd.Timestamp(start)
        except (ValueError, TypeError):
            fail(f"--from: cannot read {start!r} as a time")
        if t0.tzinfo is not None:
            t0 = t0.tz_convert("UTC").tz_localize(None)
    loaded = load(scenario)
    try:
        run = ShadowRun(loaded, prometheus, start=t0, speed=pace, steps=steps, delay=delay, interval=iv)
    except ScenarioError as exc:
        fail(str(exc))
    app = MetricsApp(run, shadow_registry(run))
    try:
        httpd = make_http_server(host, port, app)
    except OSError as exc:
        why = "address already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        fail(f"twin shadow: cannot listen on {host}:{port}: {why}")
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda signum, frame: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    web = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": POLL_SECONDS}, daemon=True)
    mode = f"replaying from {run.start}" if t0 is not None else "live"
    typer.echo(f"twin shadow: {loaded.scenario.name} against {prometheus} ({len(run.ids)} devices, "
               f"{run.interval:g} s intervals, {mode}) on http://{host}:{port}/metrics — Ctrl-C to stop", err=True)
    reported = False
    try:
        web.start()
        run.start_thread()
        while not stop.wait(POLL_SECONDS):
            if run.finished.is_set():
                if run.error is not None:
                    break
                if not reported:
                    typer.echo(f"twin shadow: {run.sim.step_index} intervals done; serving the last state", err=True)
                    reported = True
    finally:
        run.stop()
        httpd.shutdown()
        httpd.server_close()
        run.join(timeout=10)
        for s, handler in previous.items():
            signal.signal(s, handler)
    if run.error is not None:
        if isinstance(run.error, ScenarioError):
            fail(str(run.error))
        import traceback

        traceback.print_exception(run.error, file=sys.stderr)
        raise typer.Exit(1)
    typer.echo(f"twin shadow: stopped after {run.sim.step_index} intervals", err=True)
