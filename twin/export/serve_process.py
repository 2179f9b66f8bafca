"""The serving process of ``twin serve``: HTTP in a process of its own, fed pre-rendered bodies.

Python runs one thread of a process at a time, so a scrape answered in the simulation's process
waits for the simulation to let go of the interpreter (seconds on a 200,000-device hall on a
busy machine). Here the simulation's process renders ``/metrics`` once per step and format
(:class:`Publisher`, with :func:`twin.export.server.render_body` — the one rendering) and writes
the bytes down a pipe; a child process, which runs nothing but an HTTP server on an event loop
in one thread (:class:`AsyncServer`), keeps the latest bytes of each format
(:class:`PublishedApp`) and hands them to every scraper. A scrape costs a copy of bytes; the
simulation never waits for a scraper, and a scraper never waits for the simulation.

The pipes carry:

- parent → child, *frames*: an 8-byte header (``!II``: JSON length, body bytes), a JSON object
  ``{"failed": str | null, "status": str, "bodies": [[content type, gzip, accept, length], …]}``
  and the bodies back to back. A frame without bodies updates only the status.
- child → parent, *wants*: one JSON line ``[accept, gzip]`` the first time a scraper asks for a
  format the child does not have; from then on the publisher renders it at every step.

The child ignores SIGINT (the terminal's Ctrl-C goes to the parent, which stops the run and then
the child) and ends when the frames pipe closes: the parent stopped or died. The parent gives it
the listening socket, bound before the simulation is built, so a busy port is reported at once
and connections made while the child starts wait in the socket's backlog.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import threading

from twin.export.server import (IDLE_TIMEOUT, MAX_CONNECTIONS, MAX_HEADER_BYTES, POLL_SECONDS,
                                REQUEST_TIMEOUT, WORKERS, Routes, _max_connections, content_type_for,
                                parse_request, render_body, respond, status_response)

_HEADER = struct.Struct("!II")
#: Seconds a scrape of a format not rendered yet waits for its first rendering (503 after).
FIRST_RENDER_TIMEOUT = 60.0
#: Most formats (content type × gzip) rendered at each step: the exposition formats
#: prometheus_client negotiates (text and OpenMetrics, in their versions), plain or gzip.
MAX_FORMATS = 8


# -- the serving process ---------------------------------------------------------------------------
class PublishedApp(Routes):
    """The routes in the serving process: the latest bodies and status the publisher sent.

    Lives on the serving process's event loop: :meth:`update` is called with each frame,
    :meth:`wait_for` lets a scrape of a format not rendered yet wait for its first rendering.
    """

    def __init__(self, wants_fd: int):
        self._bodies: dict[tuple[str, bool], bytes] = {}
        self._asked: set[tuple[str, bool]] = set()
        self._status = "starting"
        self._failed: str | None = None
        self._wants_fd = wants_fd
        self._frame = None  # a future done when the next frame with bodies arrives
        self.closed = False

    # what the routes read
    def render(self, accept: str, gzip_ok: bool) -> tuple[str, bytes] | None:
        content_type = content_type_for(accept)
        body = self._bodies.get((content_type, gzip_ok))
        return None if body is None else (content_type, body)

    def failure(self) -> str | None:
        return self._failed

    def status(self) -> str:
        return self._status

    async def wait_for(self, accept: str, gzip_ok: bool) -> None:
        """Ask the publisher for a format the first time, and wait (at most
        :data:`FIRST_RENDER_TIMEOUT`) until it has been rendered."""
        import asyncio

        key = (content_type_for(accept), gzip_ok)
        if key in self._bodies or self.closed:
            return
        if key not in self._asked:
            if len(self._asked) >= MAX_FORMATS:
                return
            self._asked.add(key)
            try:
                os.write(self._wants_fd, (json.dumps([accept, gzip_ok]) + "\n").encode())
            except OSError:
                return  # the simulation's process is gone; the server is about to stop
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FIRST_RENDER_TIMEOUT
        while key not in self._bodies and not self.closed and loop.time() < deadline:
            if self._frame is None or self._frame.done():
                self._frame = loop.create_future()
            try:
                await asyncio.wait_for(asyncio.shield(self._frame), deadline - loop.time())
            except TimeoutError:
                return

    # what the frame reader writes
    def update(self, header: dict, payload: bytes) -> None:
        at = 0
        for content_type, gzip_ok, _accept, length in header["bodies"]:
            self._bodies[(content_type, bool(gzip_ok))] = payload[at:at + length]
            at += length
        self._status = header["status"]
        self._failed = header["failed"]
        if self._frame is not None and not self._frame.done():
            self._frame.set_result(None)

    def close(self) -> None:
        self.closed = True
        if self._frame is not None and not self._frame.done():
            self._frame.set_result(None)


class FrameReader:
    """Reads frames from the publisher's pipe on the event loop (non-blocking) into ``app``;
    calls ``on_end`` when the pipe closes."""

    def __init__(self, fd: int, app: PublishedApp, on_end):
        self.fd, self.app, self.on_end = fd, app, on_end
        self.buffer = bytearray()
        os.set_blocking(fd, False)

    def on_readable(self) -> None:
        try:
            data = os.read(self.fd, 1 << 20)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.app.close()
            self.on_end()
            return
        buf = self.buffer
        buf += data
        while len(buf) >= _HEADER.size:
            n_json, n_body = _HEADER.unpack_from(buf)
            end = _HEADER.size + n_json + n_body
            if len(buf) < end:
                break
            header = json.loads(bytes(buf[_HEADER.size:_HEADER.size + n_json]))
            self.app.update(header, bytes(buf[_HEADER.size + n_json:end]))
            del buf[:end]


class AsyncServer:
    """HTTP/1.1 on an event loop, in one thread: every connection is a coroutine, so thousands
    of idle connections cost file descriptors and a little memory, never a thread, and a scrape
    is answered without handing it between threads (each hand-over waits for the scheduler on
    a busy machine).

    Requests as :func:`twin.export.server.make_http_server` takes them: at most
    :data:`~twin.export.server.MAX_HEADER_BYTES` of head (``431``), a malformed one ``400``;
    a connection silent for ``idle_timeout`` is closed (``408`` if it had started a request);
    beyond ``max_connections`` waiting ones the oldest is closed; at most ``workers`` answers are
    being written at once.
    """

    def __init__(self, app: PublishedApp, *, workers: int = WORKERS, idle_timeout: float = IDLE_TIMEOUT,
                 max_connections: int = MAX_CONNECTIONS):
        import asyncio

        self.app = app
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self.answering = asyncio.Semaphore(workers)
        self.idle: dict = {}  # writer → None, in the order they started waiting
        self.writers: set = set()

    async def handle(self, reader, writer) -> None:
        import asyncio

        self.writers.add(writer)
        try:
            while True:
                self.idle[writer] = None
                while len(self.idle) > self.max_connections:
                    next(iter(self.idle)).close()
                    self.idle.pop(next(iter(self.idle)))
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.idle_timeout)
                except asyncio.LimitOverrunError:
                    writer.write(status_response(431))
                    break
                except TimeoutError:
                    if reader._buffer:  # noqa: SLF001 - a request begun and not finished
                        writer.write(status_response(408))
                    break
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                finally:
                    self.idle.pop(writer, None)
                parsed = parse_request(head)
                if isinstance(parsed, int):
                    writer.write(status_response(parsed))
                    break
                environ, keep = parsed
                if environ["PATH_INFO"] == "/metrics":
                    await self.app.wait_for(environ.get("HTTP_ACCEPT", ""),
                                            "gzip" in environ.get("HTTP_ACCEPT_ENCODING", ""))
                async with self.answering:
                    writer.write(respond(self.app, environ, keep))
                    await asyncio.wait_for(writer.drain(), REQUEST_TIMEOUT)
                if not keep:
                    break
        except (ConnectionError, TimeoutError, OSError):
            pass  # a client hanging up is normal
        finally:
            self.idle.pop(writer, None)
            self.writers.discard(writer)
            writer.close()

    async def serve(self, sock, frames_fd: int) -> None:
        """Serve on ``sock`` until the frames pipe closes."""
        import asyncio

        loop = asyncio.get_running_loop()
        ended = loop.create_future()
        frames = FrameReader(frames_fd, self.app, lambda: ended.done() or ended.set_result(None))
        loop.add_reader(frames_fd, frames.on_readable)
        server = await asyncio.start_server(self.handle, sock=sock, limit=MAX_HEADER_BYTES)
        try:
            await ended
        finally:
            loop.remove_reader(frames_fd)
            server.close()
            for writer in list(self.writers):
                writer.close()
            try:
                await asyncio.wait_for(server.wait_closed(), REQUEST_TIMEOUT)
            except TimeoutError:
                pass


def main(argv: list[str] | None = None) -> int:
    """Entry point of the serving process (``python -m twin.export.serve_process``)."""
    import argparse
    import asyncio
    import signal
    import socket

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ap = argparse.ArgumentParser(prog="twin-serve-http")
    ap.add_argument("--listen-fd", type=int, required=True)
    ap.add_argument("--frames-fd", type=int, required=True)
    ap.add_argument("--wants-fd", type=int, required=True)
    ap.add_argument("--workers", type=int, default=WORKERS)
    ap.add_argument("--idle-timeout", type=float, default=IDLE_TIMEOUT)
    ap.add_argument("--max-connections", type=int, default=MAX_CONNECTIONS)
    args = ap.parse_args(argv)
    sock = socket.socket(fileno=args.listen_fd)
    sock.setblocking(False)
    server = AsyncServer(PublishedApp(args.wants_fd), workers=args.workers, idle_timeout=args.idle_timeout,
                         max_connections=_max_connections(args.max_connections))
    asyncio.run(server.serve(sock, args.frames_fd))
    return 0


# -- the simulation's process ----------------------------------------------------------------------
class Publisher:
    """Renders the run's ``/metrics`` bodies once per step and sends them to the serving process.

    Parameters
    ----------
    run : LiveRun
        The run (its ``version()``, ``status()``, ``error``; its ``on_step`` is set to wake this).
    registry : CollectorRegistry
        The registry every body is rendered from.
    sock : socket.socket
        The listening socket the serving process answers on.
    workers, idle_timeout
        Of the serving process's HTTP server.
    """

    def __init__(self, run, registry, sock, *, workers: int = WORKERS, idle_timeout: float = IDLE_TIMEOUT):
        import subprocess

        self.run = run
        self.registry = registry
        self.wanted: dict[tuple[str, bool], str] = {}  # (content type, gzip) → an Accept asking for it
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        frames_r, self._frames_w = os.pipe()
        self._wants_r, wants_w = os.pipe()
        fds = (sock.fileno(), frames_r, wants_w)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "twin.export.serve_process", "--listen-fd", str(fds[0]),
                 "--frames-fd", str(frames_r), "--wants-fd", str(wants_w), "--workers", str(workers),
                 "--idle-timeout", repr(float(idle_timeout))],
                pass_fds=fds, stdin=subprocess.DEVNULL)
        finally:
            os.close(frames_r)
            os.close(wants_w)
        self._frames = os.fdopen(self._frames_w, "wb")
        self._thread = threading.Thread(target=self._main, name="twin-publisher", daemon=True)

    def start(self) -> None:
        self.run.on_step = self.wake
        self._thread.start()

    def wake(self) -> None:
        """The run advanced (called from the simulation thread): render when next possible."""
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass  # already woken (the pipe is full), or stopping

    def stop(self, timeout: float = 10.0) -> None:
        """Stop publishing, close the frames pipe (the serving process ends) and reap it."""
        import subprocess

        self._stop.set()
        self.wake()
        self._thread.join(timeout)
        try:
            self._frames.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout)
        for fd in (self._wants_r, self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass

    def alive(self) -> bool:
        """The serving process runs and the publisher has not failed."""
        return self.error is None and self.process.poll() is None

    def _main(self) -> None:
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        sel.register(self._wants_r, selectors.EVENT_READ, "wants")
        sent_version, sent_status = None, None
        pending = b""  # a want line not complete yet
        try:
            while not self._stop.is_set():
                new = False
                for key, _ in sel.select(POLL_SECONDS):
                    if key.data == "wake":
                        os.read(self._wake_r, 4096)
                    else:
                        data = os.read(self._wants_r, 65536)
                        if not data:  # the serving process is gone
                            return
                        *lines, pending = (pending + data).split(b"\n")
                        for line in lines:
                            accept, gzip_ok = json.loads(line)
                            fmt = (content_type_for(accept), bool(gzip_ok))
                            if fmt not in self.wanted and len(self.wanted) < MAX_FORMATS:
                                self.wanted[fmt] = accept
                                new = True
                if self._stop.is_set():
                    return
                version = self.run.version()
                status = (self._failure(), self.run.status())
                if self.wanted and (new or version != sent_version):
                    self._send(status, self._render())
                    sent_version, sent_status = version, status
                elif status != sent_status:
                    self._send(status, [])
                    sent_status = status
        except (BrokenPipeError, ConnectionError, OSError, ValueError) as exc:
            if not self._stop.is_set():
                self.error = exc
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            self.error = exc
        finally:
            sel.close()

    def _failure(self) -> str | None:
        return repr(self.run.error) if self.run.error is not None else None

    def _render(self) -> list[tuple[str, bool, str, bytes]]:
        out = []
        plain: dict[str, bytes] = {}
        for (content_type, gzip_ok), accept in self.wanted.items():
            if gzip_ok:
                continue
            plain[content_type] = render_body(self.registry, accept, False)[1]
            out.append((content_type, False, accept, plain[content_type]))
        for (content_type, gzip_ok), accept in self.wanted.items():
            if gzip_ok:
                if content_type in plain:  # one rendering, compressed
                    import gzip

                    body = gzip.compress(plain[content_type], compresslevel=1)
                else:
                    body = render_body(self.registry, accept, True)[1]
                out.append((content_type, True, accept, body))
        return out

    def _send(self, status, bodies) -> None:
        failed, text = status
        header = json.dumps({"failed": failed, "status": text,
                             "bodies": [[c, g, a, len(b)] for c, g, a, b in bodies]}).encode()
        payload = b"".join(b for *_, b in bodies)
        self._frames.write(_HEADER.pack(len(header), len(payload)) + header)
        self._frames.write(payload)
        self._frames.flush()


if __name__ == "__main__":
    sys.exit(main())
