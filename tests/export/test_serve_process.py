"""The serving process of `twin serve`: HTTP answered in a process of its own from bodies the
simulation's process renders once per step.

Checked against the one rendering (:func:`twin.export.server.render_body` over the same
registry): the bytes a scraper gets are those, in every format; the serving process has a
bounded number of threads and ends when the simulation's process stops publishing.
"""

from __future__ import annotations

import gzip
import http.client
from pathlib import Path

import pytest

from tests.conftest import SCENARIOS
from tests.export.helpers import wait_until
from twin.export.prometheus import make_registry
from twin.export.serve_process import Publisher
from twin.export.server import LiveRun, listen, render_body
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

OPENMETRICS = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
WORKERS = 3


def _get(port: int, path: str, **headers) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no thread count")


@pytest.fixture(scope="module")
def published():
    """A finished 30 s quickstart run (its state no longer changes) behind a serving process."""
    loaded = load_scenario(SCENARIOS / "quickstart.yaml", {"time": {"duration": "30 s"}})
    run = LiveRun(loaded, Simulation(loaded), speed=None, loop=False)
    run.start()
    run.join(240)
    assert run.finished.is_set() and run.error is None
    registry = make_registry(run)
    sock = listen("127.0.0.1", 0)
    port = sock.getsockname()[1]
    try:
        publisher = Publisher(run, registry, sock, workers=WORKERS, idle_timeout=30)
    finally:
        sock.close()
    publisher.start()
    try:
        yield publisher, registry, port
    finally:
        publisher.stop()


@pytest.mark.parametrize("accept", ["", "text/plain", OPENMETRICS])
@pytest.mark.parametrize("gzip_ok", [False, True], ids=["plain", "gzip"])
def test_a_scrape_gets_the_registry_rendering(published, accept, gzip_ok):
    publisher, registry, port = published
    headers = {"Accept": accept} if accept else {}
    if gzip_ok:
        headers["Accept-Encoding"] = "gzip"
    status, got_headers, body = _get(port, "/metrics", **headers)
    assert status == 200
    content_type, expected = render_body(registry, accept, False)
    assert got_headers["Content-Type"] == content_type
    if gzip_ok:
        assert got_headers["Content-Encoding"] == "gzip"
        body = gzip.decompress(body)
    assert body == expected  # byte for byte: one rendering, copied to the scraper
    assert b"twin_simulated_time_seconds 30.0" in body


def test_health_status_and_bounded_threads(published):
    publisher, _, port = published
    status, _, body = _get(port, "/healthz")
    assert status == 200 and body.startswith(b"ok finished quickstart: simulated 30 s")
    assert _get(port, "/nope")[0] == 404
    # The serving process is one thread (an event loop), whatever the connections.
    pid = publisher.process.pid
    wait_until(lambda: _get(port, "/metrics")[0] == 200, 60, "a scrape")
    assert _threads(pid) == 1
    assert publisher.alive()


def test_the_serving_process_ends_with_its_publisher():
    loaded = load_scenario(SCENARIOS / "quickstart.yaml", {"time": {"duration": "5 s"}})
    run = LiveRun(loaded, Simulation(loaded), speed=None, loop=False)
    sock = listen("127.0.0.1", 0)
    port = sock.getsockname()[1]
    try:
        publisher = Publisher(run, make_registry(run), sock, workers=2)
    finally:
        sock.close()
    publisher.start()
    run.start()
    run.join(240)
    try:
        wait_until(lambda: b"twin_simulated_time_seconds 5.0" in _get(port, "/metrics")[2], 120,
                   "the final step published")
    finally:
        publisher.stop()
    assert publisher.process.returncode == 0
    with pytest.raises(OSError):  # nobody listens any more
        _get(port, "/healthz")
