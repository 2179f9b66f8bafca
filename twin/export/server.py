"""``twin serve``: run a scenario live, paced to the wall clock, and serve ``/metrics``.

The simulation runs in a background thread; after every step the driver calls
:meth:`LiveRun._pace`, which waits until the wall clock catches up with simulated time ÷ speed
(or, at ``--speed max``, only checks for a stop). The HTTP side is a threading WSGI server
(wsgiref) with one route per purpose:

- ``/metrics`` — the :class:`~twin.export.prometheus.TwinCollector` output, in the format the
  scraper asks for (Prometheus text or OpenMetrics, gzip when accepted). A rendering is cached
  until the simulation advances, so fifty scrapers cost one rendering per step, not fifty, and
  none waits for another's rendering (:meth:`MetricsApp.render`).
- ``/healthz`` — ``200 ok …`` while the run is healthy (running or finished), ``503`` if the
  simulation thread failed.

SIGINT and SIGTERM stop the run at the end of its current step and the server after its current
requests (exit 0). A port already in use or a bad scenario is one line on stderr and exit 2.
Heavy modules are imported inside :func:`serve`, so ``twin --help`` stays fast.
"""

from __future__ import annotations

import socket
import sys
import threading
import time

#: Default port of the exporter.
DEFAULT_PORT = 9808
#: Exit code when the simulation thread fails (a bug, not bad input).
EXIT_RUN_FAILED = 1
#: Pending connections the listening socket holds (socketserver's default of 5 drops bursts).
LISTEN_BACKLOG = 256
#: Seconds the main thread sleeps between checks of the stop flag and the run's health.
POLL_SECONDS = 0.2
#: Lag is quantised to this many seconds in the rendering cache key.
LAG_RESOLUTION = 0.01


def parse_speed(text: str) -> float | None:
    """``"max"`` → None (as fast as possible); a positive number → simulated s per wall s."""
    if text.strip().lower() == "max":
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ValueError(f"--speed: expected a positive number (1, 10, …) or 'max', got '{text}'")
    return value


class DiscardSink:
    """Recorder sink of a live run: samples are exported as they come and not kept, so memory
    stays bounded (the recorder's buffer) however long the run or how often it loops."""

    sim = None

    def __call__(self, group, arrays, offset) -> None:
        pass


def live_simulation(loaded):
    """A :class:`~twin.sim.driver.Simulation` of ``loaded`` that keeps no history beyond a buffer."""
    from twin.sim.driver import Simulation

    return Simulation(loaded, solver="fast", sink=DiscardSink())


class _Stopped(Exception):
    """Raised from the pace callback to end a run at a step boundary."""


class LiveRun:
    """A scenario running in a background thread, paced to wall clock × ``speed``.

    What the collector reads: :attr:`current` = ``(sim, carried)`` (published together, so a
    scrape never sees a new simulation with old carried-over counters) and :meth:`lag_seconds`.

    Parameters
    ----------
    loaded : LoadedScenario
    sim : Simulation
        The first run, already built from ``loaded``.
    speed : float or None
        Simulated seconds per wall-clock second; None runs as fast as possible.
    loop : bool
        Start the scenario again when it ends; energy counters carry on from where they were.
    """

    def __init__(self, loaded, sim, *, speed: float | None, loop: bool):
        self.loaded = loaded
        self.speed = speed
        self.loop = loop
        self.loops = 0
        self.error: BaseException | None = None
        self.finished = threading.Event()
        self._stop = threading.Event()
        self.current = (sim, {})
        self._schedule = (sim, time.monotonic())  # the run and the wall time its t = 0 is due
        self._late = 0.0  # how late the last step finished against its schedule [s]
        self._thread = threading.Thread(target=self._main, name="twin-simulation", daemon=True)

    # -- control ---------------------------------------------------------------------------
    def start(self) -> None:
        self._schedule = (self.current[0], time.monotonic())
        self._thread.start()

    def stop(self) -> None:
        """Ask the run to stop at the end of its current step."""
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    # -- what the collector reads ---------------------------------------------------------------
    def lag_seconds(self) -> float:
        """Wall-clock seconds the run is behind its schedule (0 at speed max or when finished).

        The larger of how late the last step finished and how overdue the next one is, so a
        stalled simulation shows a growing lag.
        """
        if self.speed is None or self.finished.is_set():
            return 0.0
        sim, base = self._schedule
        next_due = base + (sim.time + sim.h) / self.speed
        return max(self._late, time.monotonic() - next_due, 0.0)

    def version(self) -> tuple:
        """Changes whenever the exported values can have changed (rendering cache key)."""
        sim = self.current[0]
        return self.loops, sim.step_index, round(self.lag_seconds() / LAG_RESOLUTION)

    def status(self) -> str:
        sim = self.current[0]
        state = "failed" if self.error else "finished" if self.finished.is_set() else "running"
        return (f"{state} {self.loaded.scenario.name}: simulated {sim.time:,.0f} s of "
                f"{sim.n_steps * sim.h:,.0f} s, loop {self.loops}, lag {self.lag_seconds():.3f} s")

    # -- the simulation thread ----------------------------------------------------------------------
    def _pace(self, sim_time: float) -> None:
        if self._stop.is_set():
            raise _Stopped
        if self.speed is None:
            return
        due = self._schedule[1] + sim_time / self.speed
        now = time.monotonic()
        self._late = max(0.0, now - due)
        if due > now and self._stop.wait(due - now):
            raise _Stopped

    def _main(self) -> None:
        import numpy as np

        from twin.export.prometheus import COUNTERS

        try:
            while True:
                sim, carried = self.current
                try:
                    sim.run(pace=self._pace)
                except _Stopped:
                    return
                if not self.loop or self._stop.is_set():
                    return
                carried = {c.name: np.asarray(c.live(sim), dtype=float) + carried.get(c.name, 0.0)
                           for c in COUNTERS}
                new = live_simulation(self.loaded)
                base = self._schedule[1]
                if self.speed is not None:  # the next loop starts where this one was due to end
                    base = max(base + sim.n_steps * sim.h / self.speed, time.monotonic() - self._late)
                self.loops += 1
                self._late = 0.0
                self._schedule = (new, base)
                self.current = (new, carried)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread, which exits 1
            self.error = exc
        finally:
            self.finished.set()


class MetricsApp:
    """WSGI application: ``/metrics`` (cached per simulation step), ``/healthz`` and ``/``."""

    def __init__(self, run: LiveRun, registry):
        self.run = run
        self.registry = registry
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, bool], tuple[tuple, str, bytes]] = {}
        self._rendering: set[tuple[str, bool]] = set()  # formats being rendered right now

    def render(self, accept: str, gzip_ok: bool) -> tuple[str, bytes]:
        """(content type, body) of a scrape.

        One rendering per simulation state and format: while the state is unchanged every scrape
        gets the cached bytes; when it has changed, one scraper renders the new state while the
        others keep getting the previous one (at most one rendering old, ~0.1 s on a hall with
        device series), so a burst of scrapers never queues behind a rendering.
        """
        import gzip

        from prometheus_client.exposition import choose_encoder

        encoder, content_type = choose_encoder(accept)
        key = (content_type, gzip_ok)
        with self._lock:
            version = self.run.version()
            hit = self._cache.get(key)
            if hit is not None and (hit[0] == version or key in self._rendering):
                return hit[1], hit[2]
            self._rendering.add(key)
        try:
            body = encoder(self.registry)
            if gzip_ok:
                body = gzip.compress(body, compresslevel=1)
            with self._lock:
                self._cache[key] = (version, content_type, body)
        finally:
            with self._lock:
                self._rendering.discard(key)
        return content_type, body

    def __call__(self, environ, start_response):
        method = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO", "/")
        if method not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Content-Type", "text/plain"), ("Allow", "GET, HEAD")])
            return [b"method not allowed\n"]
        headers = [("Cache-Control", "no-store")]
        if path == "/metrics":
            gzip_ok = "gzip" in environ.get("HTTP_ACCEPT_ENCODING", "")
            content_type, body = self.render(environ.get("HTTP_ACCEPT", ""), gzip_ok)
            headers += [("Content-Type", content_type), ("Content-Length", str(len(body)))]
            if gzip_ok:
                headers.append(("Content-Encoding", "gzip"))
            status = "200 OK"
        elif path == "/healthz":
            status = "503 Service Unavailable" if self.run.error else "200 OK"
            body = (("failed: " + repr(self.run.error)) if self.run.error else "ok " + self.run.status())
            body = (body + "\n").encode()
            headers += [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]
        elif path == "/":
            status = "200 OK"
            body = (f"twin exporter — {self.run.status()}\n/metrics  Prometheus metrics\n"
                    f"/healthz  health\n").encode()
            headers += [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]
        else:
            status, body = "404 Not Found", b"not found (try /metrics)\n"
            headers += [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]
        start_response(status, headers)
        return [b""] if method == "HEAD" else [body]


def make_http_server(host: str, port: int, app):
    """A threading wsgiref server on ``host:port`` with a deep backlog and quiet request logs."""
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True
        request_queue_size = LISTEN_BACKLOG
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

        def handle_error(self, request, client_address):
            if not isinstance(sys.exc_info()[1], ConnectionError):  # a scraper hanging up is normal
                super().handle_error(request, client_address)

    class Handler(WSGIRequestHandler):
        def log_message(self, format, *args):  # no line per scrape on stderr
            pass

    return make_server(host, port, app, server_class=Server, handler_class=Handler)
