"""`twin serve` under load, on loopback, bounded in time: many scrapers, many idle connections,
oversized and malformed requests.

Before: one thread per connection with no idle timeout or limit (1,500 half-open connections →
1,506 threads), 5.9 MB of headers accepted, p99 520 ms with 100 scrapers on cluster-100k; then,
with HTTP answered in the simulation's process, p99 1.8–3.5 s on a busy machine (every scrape
waited for the simulation to let go of the interpreter). `twin serve` is two processes now: the
simulation's and the serving one (:mod:`twin.export.serve_process`); threads are counted over both.
"""

from __future__ import annotations

import asyncio
import gzip
import http.client
import os
import socket
import time
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from tests.export.helpers import child, child_env, free_port, http_get, twin_serve_args, wait_until

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")

WORKERS = 8
SCRAPERS = 100
SCRAPES_EACH = 5
IDLE = 1000


def _processes(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").iterdir():
            todo += [int(c) for c in (task / "children").read_text().split()]
    return out


def _threads(pid: int) -> int:
    """Threads of ``pid`` and its descendants."""
    total = 0
    for p in _processes(pid):
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                total += int(line.split()[1])
    return total


def _open_fds(pid: int) -> int:
    """Open file descriptors of ``pid`` and its descendants."""
    return sum(len(os.listdir(f"/proc/{p}/fd")) for p in _processes(pid))


def _scrape(port: int, timeout: float = 30.0) -> tuple[int, float, int]:
    """(status, seconds, body bytes) of one gzip scrape on a new connection, as Prometheus does."""
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", "/metrics", headers={
            "Accept": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
            "Accept-Encoding": "gzip", "User-Agent": "Prometheus/2.53"})
        resp = conn.getresponse()
        body = resp.read()
        status = resp.status
    finally:
        conn.close()
    seconds = time.perf_counter() - t0
    if status == 200:
        assert b"twin_it_power_watts" in gzip.decompress(body)
    return status, seconds, len(body)


def _has_power(port: int) -> bool:
    """The latest scrape in the scrapers' format has the recorded values. (The first scrape of a
    format waits for its first rendering; from then on it is rendered at every step.)"""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        conn.request("GET", "/metrics", headers={
            "Accept": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
            "Accept-Encoding": "gzip"})
        resp = conn.getresponse()
        body = resp.read()
    finally:
        conn.close()
    return resp.status == 200 and b"twin_it_power_watts" in gzip.decompress(body)


REQUEST = (b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Prometheus/2.53\r\n"
           b"Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n"
           b"Accept-Encoding: gzip\r\n\r\n")
#: Seconds between two scrapes of one scraper (Prometheus' scrape_interval, set low).
INTERVAL = 1.0


async def _scrapers(port: int):
    """100 scrapers as Prometheus runs them: each keeps one connection alive and scrapes every
    INTERVAL seconds, starting at a random phase. (asyncio tasks in one thread, so the client
    side adds no lock contention.) Returns ([(status, seconds, body size, body)], [errors])."""
    results, errors = [], []
    rng = np.random.default_rng(17)
    t0 = time.monotonic() + 0.5

    async def scraper(phase):
        reader = writer = None
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 60)
            for i in range(SCRAPES_EACH):
                await asyncio.sleep(max(0.0, t0 + phase + i * INTERVAL - time.monotonic()))
                start = time.perf_counter()
                writer.write(REQUEST)
                await writer.drain()
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 60)
                fields = dict(line.split(": ", 1) for line in head.decode().split("\r\n")[1:] if line)
                body = await asyncio.wait_for(reader.readexactly(int(fields["Content-Length"])), 60)
                seconds = time.perf_counter() - start
                status = int(head.split(b" ", 2)[1])
                results.append((status, seconds, len(body), body))
                assert status == 200 and fields.get("Connection") == "keep-alive", head
        except Exception as exc:  # noqa: BLE001 - counted as a failed scrape
            errors.append(exc)
        finally:
            if writer is not None:
                writer.close()

    await asyncio.gather(*(scraper(phase) for phase in rng.uniform(0, INTERVAL, SCRAPERS)))
    return results, errors


def test_cluster_100k_scrapers_idle_connections_and_limits(tmp_path):
    port = free_port()
    args = twin_serve_args(SCENARIOS / "bench" / "cluster-100k.yaml", port, "--speed", "1",
                           "--workers", str(WORKERS), "--idle-timeout", "60")
    with child(args, tmp_path / "serve.log", env=child_env()) as proc:
        pid = proc.proc.pid
        # Building 201,550 devices takes a while on a loaded machine: wait on the health check.
        wait_until(lambda: http_get(f"http://127.0.0.1:{port}/healthz", timeout=5)[0] == 200,
                   600, "twin serve /healthz on cluster-100k", interval=1.0, proc=proc)
        # The first step's values: until it is recorded a scrape has only the build information.
        wait_until(lambda: _has_power(port), 600, "the first recorded step in a scrape",
                   interval=1.0, proc=proc)
        baseline = _threads(pid)
        assert len(_processes(pid)) == 2  # the simulation's process and the serving one

        # 100 scrapers, 5 scrapes each.
        results, errors = asyncio.run(_scrapers(port))
        seconds = np.array([r[1] for r in results])
        p50, p99 = np.percentile(seconds, [50, 99])
        print(f"{SCRAPERS} scrapers × {SCRAPES_EACH}: {len(results)} answers, {len(errors)} errors, "
              f"p50 {p50 * 1e3:.0f} ms, p99 {p99 * 1e3:.0f} ms, max {seconds.max() * 1e3:.0f} ms, "
              f"{np.mean([r[2] for r in results]) / 1e3:.0f} kB gzip; load average {os.getloadavg()[0]:.1f}")
        assert not errors, errors[:3]
        assert [r[0] for r in results] == [200] * SCRAPERS * SCRAPES_EACH
        # The bodies are checked after the timing (decompressing 500 × 2 MB in the scrapers' own
        # event loop would time the client, not the server); one check per distinct body.
        for body in {r[3] for r in results}:
            assert b"twin_it_power_watts" in gzip.decompress(body)
        # Latency is printed, not asserted: on a shared 2-core machine it measures the other
        # processes as much as the server (benchmarks/scrape_load.py and the README's serve
        # section give measured figures).
        busy = _threads(pid)
        assert busy <= baseline + WORKERS, (baseline, busy)
        assert len(_processes(pid)) == 2

        # 1,000 idle connections: no thread each, and scrapes still answered.
        idle = []
        try:
            for _ in range(IDLE):
                s = socket.create_connection(("127.0.0.1", port), timeout=30)
                idle.append(s)
            wait_until(lambda: _open_fds(pid) >= IDLE, 120, "the server to accept 1,000 connections")
            assert _threads(pid) <= baseline + WORKERS, (baseline, _threads(pid))
            status, took, _ = _scrape(port)
            assert status == 200
            # Oversized headers are refused (they were read up to 5.9 MB).
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 20_000 + b"\r\n\r\n")
                answer = s.recv(200)
            assert answer.startswith(b"HTTP/1.1 431 "), answer
            # A malformed request line gets an HTTP error, not a dropped server.
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                s.sendall(b"\x16\x03\x01 garbage\r\n\r\n")
                answer = s.recv(200)
            assert answer.startswith(b"HTTP/1.1 400 "), answer
            assert _threads(pid) <= baseline + WORKERS
            assert len(_processes(pid)) == 2
        finally:
            for s in idle:
                s.close()
        assert _scrape(port)[0] == 200
        assert proc.poll() is None


def test_idle_connections_are_closed(tmp_path):
    """A connection that never sends a request is closed after --idle-timeout."""
    port = free_port()
    args = twin_serve_args(SCENARIOS / "quickstart.yaml", port, "--speed", "10", "--idle-timeout", "1")
    with child(args, tmp_path / "serve.log", env=child_env()) as proc:
        wait_until(lambda: http_get(f"http://127.0.0.1:{port}/healthz", timeout=5)[0] == 200,
                   300, "twin serve /healthz", proc=proc)
        socks = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(20)]
        try:
            # The server closes them: recv returns b"" (end of stream) well before 60 s.
            assert all(s.recv(10) == b"" for s in socks)
        finally:
            for s in socks:
                s.close()
        assert _scrape(port)[0] == 200
