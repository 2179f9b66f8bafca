"""``twin serve``: run a scenario live, paced to the wall clock, and serve Prometheus metrics."""

from __future__ import annotations

import errno
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated

import typer

from twin.cli.common import fail, load
from twin.export.server import (DEFAULT_PORT, EXIT_RUN_FAILED, IDLE_TIMEOUT, POLL_SECONDS, WORKERS, LiveRun,
                                listen, live_simulation, parse_speed)


def serve(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML file.")],
    speed: Annotated[str, typer.Option(help="Simulated seconds per wall-clock second: 1, 10, … or 'max'.")] = "1",
    host: Annotated[str, typer.Option(help="Address to listen on (0.0.0.0 to expose it beyond this machine).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port of /metrics and /healthz.")] = DEFAULT_PORT,
    loop: Annotated[bool, typer.Option("--loop", help="Start the scenario again when it ends.")] = False,
    devices: Annotated[bool | None, typer.Option(
        "--devices/--no-devices",
        help="Device- and sled-level series (default: only below 2,000 devices).")] = None,
    dcgm: Annotated[bool, typer.Option("--dcgm", help="Also DCGM-compatible series for NVIDIA GPUs.")] = False,
    workers: Annotated[int, typer.Option(help="Most answers being written at once (the serving process is one event-loop thread).")] = WORKERS,
    idle_timeout: Annotated[float, typer.Option(
        help="Seconds a connection may stay open without sending a request.")] = IDLE_TIMEOUT,
):
    """Run a scenario live and serve Prometheus metrics on /metrics (Ctrl-C to stop)."""
    from twin.export.prometheus import make_registry
    from twin.export.serve_process import Publisher
    from twin.scenario.errors import ScenarioError

    try:
        pace = parse_speed(speed)
    except ValueError as exc:
        fail(str(exc))
    if not 1 <= workers <= 256:
        fail(f"--workers: expected 1 to 256, got {workers}")
    if not 0 < idle_timeout <= 86400:
        fail(f"--idle-timeout: expected more than 0 and at most 86400 seconds, got {idle_timeout:g}")
    loaded = load(scenario, streamed=True)
    try:  # the port before the simulation is built: a busy port is reported at once
        sock = listen(host, port)
    except OSError as exc:
        why = "address already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        hint = " (another twin serve or exporter? choose another --port)" if exc.errno == errno.EADDRINUSE else ""
        fail(f"twin serve: cannot listen on {host}:{port}: {why}{hint}")
    try:
        sim = live_simulation(loaded)
    except ScenarioError as exc:
        sock.close()
        fail(str(exc))
    except KeyboardInterrupt:
        sock.close()
        raise typer.Exit(0) from None
    run = LiveRun(loaded, sim, speed=pace, loop=loop)
    # HTTP is answered by a process of its own, fed the bodies this one renders once per step.
    try:
        publisher = Publisher(run, make_registry(run, devices=devices, dcgm=dcgm), sock,
                              workers=workers, idle_timeout=idle_timeout)
    finally:
        sock.close()  # the serving process holds its own copy

    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    sy = sim.system
    shown = f"[{host}]" if ":" in host else host
    typer.echo(f"twin serve: {loaded.scenario.name} ({sy.n_devices:,} devices, {sy.n_racks:,} racks) at "
               f"{'max speed' if pace is None else f'{pace:g}× real time'}{', looping' if loop else ''} "
               f"on http://{shown}:{port}/metrics — Ctrl-C to stop", err=True)
    reported_end = False
    try:
        run.start()
        publisher.start()
        while not stop.wait(POLL_SECONDS):
            if not publisher.alive():
                break
            if run.finished.is_set():
                if run.error is not None:
                    break
                if not reported_end:
                    typer.echo(f"twin serve: scenario finished at {run.current[0].time:,.0f} s; "
                               f"serving its final state", err=True)
                    reported_end = True
    finally:
        run.stop()
        run.join(timeout=10)
        served = publisher.alive() or stop.is_set() or run.error is not None
        code = publisher.process.poll()
        publisher.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    if not served:
        why = f"exit code {code}" if code is not None else repr(publisher.error)
        typer.echo(f"twin serve: the HTTP serving process failed ({why})", err=True)
        raise typer.Exit(EXIT_RUN_FAILED)
    if run.error is not None:
        import traceback

        traceback.print_exception(run.error, file=sys.stderr)
        typer.echo(f"twin serve: the simulation failed at {run.current[0].time:,.0f} s: {run.error!r}", err=True)
        raise typer.Exit(EXIT_RUN_FAILED)
    typer.echo(f"twin serve: stopped at simulated {run.current[0].time:,.0f} s", err=True)
