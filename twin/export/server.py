"""``twin serve``: run a scenario live, paced to the wall clock, and serve ``/metrics``.

The simulation runs in a background thread; after every step the driver calls
:meth:`LiveRun._pace`, which waits until the wall clock catches up with simulated time ÷ speed
(or, at ``--speed max``, only checks for a stop). The HTTP side has one route per purpose:

- ``/metrics`` — the :class:`~twin.export.prometheus.TwinCollector` output, in the format the
  scraper asks for (Prometheus text or OpenMetrics, gzip when accepted), rendered by
  :func:`render_body` once per simulation step and format, however many scrapers ask.
- ``/healthz`` — ``200 ok …`` while the run is healthy (running or finished), ``503`` if the
  simulation thread failed.

``twin serve`` answers HTTP in a separate process (:mod:`twin.export.serve_process`), so a
scrape never competes with the simulation for the interpreter lock: the simulation's process
renders each step's bodies (:class:`Publisher`) and writes them down a pipe, and the serving
process, which holds nothing else, hands every scraper the latest bytes
(:class:`PublishedApp`). In one process, :class:`MetricsApp` does the same from a renderer
thread (used by tests and embedders).

SIGINT and SIGTERM stop the run at the end of its current step and the server after its current
requests (exit 0). A port already in use or a bad scenario is one line on stderr and exit 2.
Heavy modules are imported inside :func:`serve`, so ``twin --help`` stays fast.
"""

from __future__ import annotations

import socket
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
#: Worker threads answering requests (a scrape is served from a cached rendering, so a few
#: threads serve hundreds of scrapers).
WORKERS = 8
#: Seconds a connection may stay open without sending a request before it is closed.
IDLE_TIMEOUT = 30.0
#: Seconds a worker waits for the rest of a request's head, and for a client to take the answer.
REQUEST_TIMEOUT = 10.0
#: Most bytes of request line and headers accepted (Prometheus sends about 300).
MAX_HEADER_BYTES = 16 * 1024
#: Most connections held open waiting for their request (each costs a file descriptor; fewer
#: when the process may open fewer files).
MAX_CONNECTIONS = 4096


def _max_connections(wanted: int) -> int:
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, ValueError, OSError):
        return wanted
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(16, min(wanted, soft - 64))


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
        #: Called (from the simulation thread) after every step and when the run ends.
        self.on_step = None
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
            if self.on_step is not None:
                self.on_step()
            return
        due = self._schedule[1] + sim_time / self.speed
        now = time.monotonic()
        self._late = max(0.0, now - due)
        if self.on_step is not None:
            self.on_step()
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
            if self.on_step is not None:
                self.on_step()


def render_body(registry, accept: str, gzip_ok: bool) -> tuple[str, bytes]:
    """(content type, body) of ``/metrics`` for a scraper's ``Accept`` header: the registry in
    the format it asks for (prometheus_client's negotiation), gzip-compressed (level 1) when it
    accepts that. The one rendering of a scrape, in or out of process."""
    import gzip

    from prometheus_client.exposition import choose_encoder

    encoder, content_type = choose_encoder(accept)
    body = encoder(registry)
    return content_type, gzip.compress(body, compresslevel=1) if gzip_ok else body


def content_type_for(accept: str) -> str:
    """The content type :func:`render_body` answers ``accept`` with."""
    from prometheus_client.exposition import choose_encoder

    return choose_encoder(accept)[1]


class Routes:
    """WSGI application: ``/metrics``, ``/healthz`` and ``/``; subclasses say where the bodies
    and the run's status come from (:meth:`render`, :meth:`failure`, :meth:`status`)."""

    def render(self, accept: str, gzip_ok: bool) -> tuple[str, bytes] | None:
        """(content type, body) of a scrape, or None when none can be had yet (503)."""
        raise NotImplementedError

    def failure(self) -> str | None:
        """Why the simulation failed, or None while it is healthy."""
        raise NotImplementedError

    def status(self) -> str:
        """One line on the run: state, scenario, simulated time, loops, lag."""
        raise NotImplementedError

    def __call__(self, environ, start_response):
        method = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO", "/")
        if method not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Content-Type", "text/plain"), ("Allow", "GET, HEAD")])
            return [b"method not allowed\n"]
        text, extra = "text/plain; charset=utf-8", []
        if path == "/metrics":
            gzip_ok = "gzip" in environ.get("HTTP_ACCEPT_ENCODING", "")
            got = self.render(environ.get("HTTP_ACCEPT", ""), gzip_ok)
            if got is None:
                status, body = "503 Service Unavailable", b"metrics not rendered yet, try again\n"
                content_type, extra = "text/plain", [("Retry-After", "1")]
            else:
                status, (content_type, body) = "200 OK", got
                extra = [("Content-Encoding", "gzip")] if gzip_ok else []
        elif path == "/healthz":
            failed = self.failure()
            status = "503 Service Unavailable" if failed else "200 OK"
            content_type, body = text, ((("failed: " + failed) if failed else "ok " + self.status()) + "\n").encode()
        elif path == "/":
            status, content_type = "200 OK", text
            body = (f"twin exporter — {self.status()}\n/metrics  Prometheus metrics\n"
                    f"/healthz  health\n").encode()
        else:
            status, content_type, body = "404 Not Found", "text/plain", b"not found (try /metrics)\n"
        # one set of headers for every answer: no caching, its type and length, then its own
        start_response(status, [("Cache-Control", "no-store"), ("Content-Type", content_type),
                                ("Content-Length", str(len(body))), *extra])
        return [b""] if method == "HEAD" else [body]


class MetricsApp(Routes):
    """The routes in the simulation's own process: ``/metrics`` rendered by a renderer thread
    and cached per simulation step."""

    def __init__(self, run: LiveRun, registry):
        from concurrent.futures import ThreadPoolExecutor

        self.run = run
        self.registry = registry
        self._lock = threading.Condition()
        self._cache: dict[tuple[str, bool], tuple[tuple, str, bytes]] = {}
        self._rendering: set[tuple[str, bool]] = set()  # formats being rendered right now
        self._renderer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="twin-render")

    def render(self, accept: str, gzip_ok: bool) -> tuple[str, bytes]:
        """(content type, body) of a scrape.

        One rendering per simulation state and format, made in the background: while the state
        is unchanged every scrape gets the cached bytes; once it has changed, the next scrape
        starts a new rendering in the renderer thread and every scrape keeps getting the
        previous bytes until it is done (at most one rendering old, ~0.1–0.3 s). Only the first
        scrape of a format waits for a rendering, so no scrape queues behind one.
        """
        key = (content_type_for(accept), gzip_ok)
        with self._lock:
            version = self.run.version()
            while key not in self._cache and key in self._rendering:  # the first rendering
                self._lock.wait()
            hit = self._cache.get(key)
            if hit is not None:
                if hit[0] != version and key not in self._rendering:
                    self._rendering.add(key)
                    self._renderer.submit(self._render, key, accept, version)
                return hit[1], hit[2]
            self._rendering.add(key)
        return self._render(key, accept, version)[1:]

    def _render(self, key, accept, version) -> tuple[tuple, str, bytes]:
        try:
            entry = (version, *render_body(self.registry, accept, key[1]))
            with self._lock:
                self._cache[key] = entry
            return entry
        finally:
            with self._lock:
                self._rendering.discard(key)
                self._lock.notify_all()

    def close(self) -> None:
        """Stop the renderer thread (after the server has stopped)."""
        self._renderer.shutdown(wait=False, cancel_futures=True)

    def failure(self) -> str | None:
        return repr(self.run.error) if self.run.error else None

    def status(self) -> str:
        return self.run.status()


class _Connections:
    """The server loop: accepts connections and holds those that have not sent anything yet,
    without a thread each.

    One selector watches the listening socket and every idle connection; a connection whose
    request has started to arrive is handed to the worker pool, one idle for longer than
    ``idle_timeout`` is closed, and beyond ``max_connections`` the oldest idle connection is
    closed to make room. So thousands of idle or half-open connections cost file descriptors,
    not threads.
    """

    def __init__(self, server, workers: int, idle_timeout: float, max_connections: int):
        import selectors
        from concurrent.futures import ThreadPoolExecutor

        self.server = server
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="twin-http-worker")
        self.selector = selectors.DefaultSelector()
        self._stopping = False
        self.stopped = threading.Event()
        self.stopped.set()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self.selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        server.socket.setblocking(False)
        self.selector.register(server.socket, selectors.EVENT_READ, "listen")
        self._idle: dict = {}  # connection → (address, deadline); insertion order = age
        self._returned: list = []  # kept-alive connections handed back by workers
        self._lock = threading.Lock()

    def stop(self) -> None:
        self._stopping = True
        self._wake()

    def keep(self, conn, address) -> None:
        """Take back a connection kept alive after its answer (from a worker thread)."""
        with self._lock:
            self._returned.append((conn, address))
        self._wake()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass  # already woken, or closed

    def run(self) -> None:
        import selectors

        self._stopping = False
        self.stopped.clear()
        try:
            while not self._stopping:
                now = time.monotonic()
                first = next(iter(self._idle.values()), None)
                wait = POLL_SECONDS if first is None else min(POLL_SECONDS, max(0.0, first[1] - now))
                for key, _ in self.selector.select(timeout=wait):
                    if key.data == "wake":
                        try:
                            self._wake_r.recv(4096)
                        except OSError:
                            pass
                    elif key.data == "listen":
                        self._accept(selectors)
                    else:
                        conn = key.fileobj
                        self.selector.unregister(conn)
                        address, _ = self._idle.pop(conn)
                        self.pool.submit(self.server.serve_connection, conn, address)
                with self._lock:
                    returned, self._returned = self._returned, []
                for conn, address in returned:
                    self._hold(conn, address, selectors)
                now = time.monotonic()
                while self._idle:
                    conn, (_, deadline) = next(iter(self._idle.items()))
                    if deadline > now:
                        break
                    self._close(conn)
        finally:
            for conn in list(self._idle):
                self._close(conn)
            with self._lock:
                returned, self._returned = self._returned, []
            for conn, _ in returned:
                self.server.shutdown_request(conn)
            self.stopped.set()

    def _accept(self, selectors) -> None:
        for _ in range(64):  # a burst of connections, without starving the idle ones
            try:
                conn, address = self.server.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of file descriptors, or the socket closed: try again later
                return
            self._hold(conn, address, selectors)

    def _hold(self, conn, address, selectors) -> None:
        while len(self._idle) >= self.max_connections:
            self._close(next(iter(self._idle)))
        try:
            conn.setblocking(False)
            self.selector.register(conn, selectors.EVENT_READ, "idle")
        except (OSError, ValueError):  # closed meanwhile
            self.server.shutdown_request(conn)
            return
        self._idle[conn] = (address, time.monotonic() + self.idle_timeout)

    def _close(self, conn) -> None:
        self._idle.pop(conn, None)
        try:
            self.selector.unregister(conn)
        except (KeyError, ValueError):
            pass
        self.server.shutdown_request(conn)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.selector.close()
        self._wake_r.close()
        self._wake_w.close()


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` and listening (backlog :data:`LISTEN_BACKLOG`).

    Raises
    ------
    ValueError
        A port outside 0–65535.
    OSError
        The address cannot be bound (in use, not local).
    """
    if not 0 <= port <= 65535:
        raise ValueError(f"port {port} is outside 0-65535")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


def make_http_server(host: str | None, port: int | None, app, *, workers: int = WORKERS,
                     idle_timeout: float = IDLE_TIMEOUT, max_connections: int = MAX_CONNECTIONS,
                     sock: socket.socket | None = None):
    """An HTTP/1.1 server for the WSGI ``app`` (or one given later with ``set_app``) on
    ``host:port`` (or on ``sock``, a listening socket from :func:`listen`) with a bounded pool
    of workers.

    Accepted connections wait in one selector (no thread each) until a request starts to
    arrive; then one of ``workers`` threads reads it — at most :data:`MAX_HEADER_BYTES` of
    request line and headers within :data:`REQUEST_TIMEOUT` seconds (``431``/``408``/``400``
    otherwise) — answers, and hands a kept-alive connection back to the selector. A connection
    silent for ``idle_timeout`` seconds is closed; beyond ``max_connections`` waiting ones, the
    oldest is closed. Requests carry no body (``GET``/``HEAD``); a request with one is answered
    and its connection closed. The app is called with a minimal WSGI environ (method, path,
    query, protocol and the request headers as ``HTTP_*``).

    Raises
    ------
    ValueError
        A port outside 0–65535.
    OSError
        The address cannot be bound (in use, not local).
    """
    from socketserver import TCPServer

    listening = sock if sock is not None else listen(host, port)

    class Server(TCPServer):
        request_queue_size = LISTEN_BACKLOG
        address_family = listening.family

        def __init__(self):
            super().__init__(listening.getsockname(), None, bind_and_activate=False)
            self.socket.close()
            self.socket = listening
            self.server_address = listening.getsockname()
            self.application = app
            self.connections = _Connections(self, workers, idle_timeout,
                                            _max_connections(max_connections))

        def set_app(self, application):
            """The WSGI app to answer with (may be set after binding, before serving)."""
            self.application = application

        def get_app(self):
            return self.application

        def serve_forever(self, poll_interval=POLL_SECONDS):
            """Serve until :meth:`shutdown` (the loop of :class:`_Connections`)."""
            self.connections.run()

        def shutdown(self):
            self.connections.stop()
            self.connections.stopped.wait()

        def serve_connection(self, conn, client_address):
            keep = False
            try:
                conn.setblocking(True)
                keep = _answer(conn, self.application)
            except (ConnectionError, TimeoutError, OSError):
                pass  # a client hanging up is normal
            except Exception:  # noqa: BLE001 - a bug in the app: reported, the server goes on
                self.handle_error(conn, client_address)
            if keep and not self.connections._stopping:
                self.connections.keep(conn, client_address)
            else:
                self.shutdown_request(conn)

        def server_close(self):
            connections = getattr(self, "connections", None)  # None when binding failed
            if connections is not None:
                connections.stop()
                connections.stopped.wait(10)
                connections.close()
            super().server_close()

    return Server()


_REASONS = {400: "Bad Request", 408: "Request Timeout", 431: "Request Header Fields Too Large",
            500: "Internal Server Error", 505: "HTTP Version Not Supported"}


def _send_status(conn, code: int) -> None:
    conn.sendall(status_response(code))


def _answer(conn, app) -> bool:
    """Read one request from ``conn``, answer it with ``app``; True to keep the connection."""
    got = _read_head(conn)
    if isinstance(got, int):
        _send_status(conn, got)
        return False
    parsed = parse_request(*got)
    if isinstance(parsed, int):
        _send_status(conn, parsed)
        return False
    environ, keep = parsed
    try:
        data = respond(app, environ, keep)
    except Exception:
        _send_status(conn, 500)
        raise
    conn.settimeout(REQUEST_TIMEOUT)
    conn.sendall(data)
    return keep


def status_response(code: int) -> bytes:
    """A complete HTTP answer refusing a request with ``code`` (the connection closes)."""
    body = f"{code} {_REASONS[code]}\n".encode()
    return (f"HTTP/1.1 {code} {_REASONS[code]}\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


def parse_request(head: bytes, extra: bytes = b"") -> tuple[dict, bool] | int:
    """(WSGI environ, keep the connection) of a request's head, or the HTTP status to refuse it
    with. ``extra``: bytes received after the head (a body: answered, then the connection closes)."""
    lines = head.decode("latin-1").splitlines()
    parts = lines[0].split(" ") if lines else []
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return 400
    method, target, version = parts
    if version not in ("HTTP/1.0", "HTTP/1.1"):
        return 505
    environ = {"REQUEST_METHOD": method, "SERVER_PROTOCOL": version, "wsgi.url_scheme": "http"}
    path, _, query = target.partition("?")
    environ["PATH_INFO"], environ["QUERY_STRING"] = path, query
    for line in lines[1:]:
        if not line:
            continue  # the blank line ending the head
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            return 400
        environ["HTTP_" + name.upper().replace("-", "_")] = value.strip()
    connection = environ.get("HTTP_CONNECTION", "").lower()
    keep = (version == "HTTP/1.1" and "close" not in connection) or "keep-alive" in connection
    keep = keep and not extra and "HTTP_CONTENT_LENGTH" not in environ \
        and "HTTP_TRANSFER_ENCODING" not in environ
    return environ, keep


def respond(app, environ: dict, keep: bool) -> bytes:
    """The complete HTTP/1.1 answer of the WSGI ``app`` to ``environ``."""
    answer: dict = {}

    def start_response(status, headers, exc_info=None):
        answer["status"], answer["headers"] = status, headers

    body = b"".join(app(environ, start_response))
    method = environ["REQUEST_METHOD"]
    headers = [(k, v) for k, v in answer["headers"] if k.lower() not in ("connection", "content-length")]
    given = [v for k, v in answer["headers"] if k.lower() == "content-length"]
    length = given[0] if method == "HEAD" and given else str(len(body))
    out = [f"HTTP/1.1 {answer['status']}"] + [f"{k}: {v}" for k, v in headers]
    out += [f"Content-Length: {length}", f"Connection: {'keep-alive' if keep else 'close'}", "", ""]
    return "\r\n".join(out).encode("latin-1") + (b"" if method == "HEAD" else body)


def _read_head(conn) -> tuple[bytes, bytes] | int:
    """(request line and headers, bytes received after them) of one request, or an HTTP status
    code to refuse it with.

    Reads straight from the socket with one deadline for the whole head (a client sending a byte
    at a time cannot hold a worker longer than :data:`REQUEST_TIMEOUT`) and at most
    :data:`MAX_HEADER_BYTES`.
    """
    deadline = time.monotonic() + REQUEST_TIMEOUT
    data = b""
    while True:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            end += 4
            break
        end = data.find(b"\n\n")
        if end >= 0:
            end += 2
            break
        if len(data) > MAX_HEADER_BYTES:
            return 431
        left = deadline - time.monotonic()
        if left <= 0:
            return 408
        conn.settimeout(left)
        try:
            chunk = conn.recv(16384)
        except TimeoutError:
            return 408
        if not chunk:
            raise ConnectionResetError("closed before a request")
        data += chunk
    if end > MAX_HEADER_BYTES:
        return 431
    return data[:end], data[end:]
