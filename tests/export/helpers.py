"""Helpers for the live-view tests: free ports, HTTP polling, child processes that always die,
scrape parsing. Imported by the tests as ``tests.export.helpers``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import ROOT
from twin.export.prometheus import make_registry


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, timeout: float = 5.0, headers: dict | None = None) -> tuple[int, dict, bytes]:
    """(status, headers, body) of a GET; HTTP errors are returned, not raised."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, dict(exc.headers), exc.read()


def wait_until(check, timeout: float, what: str, interval: float = 0.2, proc=None):
    """Poll ``check()`` until it returns a truthy value; fail with ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"{what}: process exited with {proc.returncode}:\n{proc.log()}")
        try:
            value = check()
        except (OSError, ValueError) as exc:  # not up yet
            value, last = None, exc
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout} s waiting for {what} (last error: {last!r})"
                + (f"\n{proc.log()}" if proc is not None else ""))


class Child:
    """A child process with its output in a file; :meth:`stop` always reaps it."""

    def __init__(self, args: list[str], log: Path, cwd: Path = ROOT, env: dict | None = None):
        self.args = args
        self.log_path = log
        self._log = open(log, "wb")  # noqa: SIM115 - open for the child's lifetime; closed in stop()
        self.proc = subprocess.Popen(args, cwd=cwd, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env)

    @property
    def returncode(self):
        return self.proc.returncode

    def poll(self):
        return self.proc.poll()

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-4000:]

    def signal(self, signum) -> None:
        self.proc.send_signal(signum)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def stop(self) -> None:
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(10)
        finally:
            self._log.close()


@contextlib.contextmanager
def child(args, log: Path, **kw):
    c = Child(args, log, **kw)
    try:
        yield c
    finally:
        c.stop()


def twin_serve_args(scenario, port: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "twin", "serve", str(scenario), "--port", str(port), *extra]


def child_env() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONWARNINGS", None)
    return env


def scrape_text(source, **options) -> str:
    """Prometheus text exposition of a collector over ``source``."""
    from prometheus_client import generate_latest

    return generate_latest(make_registry(source, **options)).decode()


def samples(text: str) -> dict[str, list[tuple[dict, float]]]:
    """sample name → [(labels, value)] from a text exposition."""
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def families(text: str) -> dict:
    """family name → family (type, documentation, samples)."""
    return {f.name: f for f in text_string_to_metric_families(text)}


def prom_query(base: str, path: str, **params) -> dict:
    """Call Prometheus' HTTP API; returns ``data`` of a successful answer."""
    url = f"{base}{path}?{urllib.parse.urlencode(params, doseq=True)}"
    status, _, body = http_get(url, timeout=10)
    answer = json.loads(body)
    assert status == 200 and answer["status"] == "success", f"{url}: {status} {answer}"
    return answer["data"]
