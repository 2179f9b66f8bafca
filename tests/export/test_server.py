"""`twin serve`: pacing, looping, the WSGI app, concurrency, signals, and its error paths."""

from __future__ import annotations

import gzip
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from wsgiref.util import setup_testing_defaults

import pytest
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as parse_openmetrics,
)
from typer.testing import CliRunner

from tests.conftest import SCENARIOS, write_scenario
from tests.export.helpers import (
    child,
    child_env,
    free_port,
    http_get,
    samples,
    twin_serve_args,
    wait_until,
)
from twin.cli import app
from twin.export.prometheus import make_registry
from twin.export.server import LiveRun, MetricsApp, make_http_server, parse_speed
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

QUICK = SCENARIOS / "quickstart.yaml"


def _live(duration="2 h", speed=None, loop=False, path=QUICK):
    loaded = load_scenario(path, {"time": {"duration": duration}})
    return LiveRun(loaded, Simulation(loaded), speed=speed, loop=loop)


def _call(wsgi, path="/metrics", method="GET", **headers):
    env = {"PATH_INFO": path, "REQUEST_METHOD": method}
    env.update({f"HTTP_{k.upper()}": v for k, v in headers.items()})
    setup_testing_defaults(env)
    got = {}

    def start_response(status, hdrs):
        got["status"], got["headers"] = status, dict(hdrs)

    body = b"".join(wsgi(env, start_response))
    return got["status"], got["headers"], body


# -- speed and pacing ---------------------------------------------------------------------------------
def test_parse_speed():
    assert parse_speed("max") is None and parse_speed("MAX") is None
    assert parse_speed("1") == 1.0 and parse_speed("2.5") == 2.5
    for bad in ("0", "-1", "fast", "inf", "nan"):
        with pytest.raises(ValueError, match=r"--speed: expected a positive number .* or 'max'"):
            parse_speed(bad)


def test_pacing_follows_wall_clock_times_speed():
    """Never ahead of wall clock × speed, and any shortfall is the lag the run reports (no
    wall-clock tolerance: on a loaded machine the run may fall behind, but it must say so)."""
    speed, step = 200.0, 1.0
    run = _live(speed=speed)
    run.start()
    base = run._schedule[1]  # the wall time at which simulated t = 0 was due
    checked = 0
    try:
        while checked < 20 or run.current[0].time < 100:
            now = time.monotonic()
            lag = run.lag_seconds()  # read before the simulated time: that time is then ≥ the one lag saw
            sim_time = run.current[0].time
            after = time.monotonic()
            assert sim_time <= speed * (after - base) + step, (sim_time, after - base)  # never ahead
            assert sim_time >= speed * (now - base - lag) - step, (sim_time, now - base, lag)
            checked += 1
            assert after - base < 240, "the run did not reach 100 simulated seconds in 4 minutes"
            wait_until(lambda: run.current[0].time > sim_time, 120, "the simulation to advance", interval=0.05)
    finally:
        run.stop()
        run.join(60)
    assert run.error is None


def test_lag_grows_when_the_simulation_cannot_keep_pace():
    run = _live(speed=1e6)  # a million times real time: impossible, so the run falls behind
    run.start()
    try:
        wait_until(lambda: run.lag_seconds() > 0.05, 120, "a positive lag")
    finally:
        run.stop()
        run.join(60)


def test_loop_restarts_and_counters_stay_monotonic():
    from prometheus_client import generate_latest

    run = _live(duration="30 s", speed=None, loop=True)
    registry = make_registry(run)
    run.start()
    seen = []
    try:
        t0 = time.monotonic()
        while run.loops < 3:  # a condition, with a generous bound for a loaded machine
            assert time.monotonic() - t0 < 240 and run.error is None, (run.loops, run.error)
            s = samples(generate_latest(registry).decode())
            seen.append((s["twin_it_energy_joules_total"][0][1],
                         sorted(v for _, v in s["twin_rack_energy_joules_total"])))
        s = samples(generate_latest(registry).decode())
        seen.append((s["twin_it_energy_joules_total"][0][1],
                     sorted(v for _, v in s["twin_rack_energy_joules_total"])))
    finally:
        run.stop()
        run.join(60)
    assert run.loops >= 3 and run.error is None
    for (it0, racks0), (it1, racks1) in pairwise(seen):
        assert it1 >= it0 and all(b >= a for a, b in zip(racks0, racks1))
    # Three finished loops of 30 s at ~40 kW idle power: more than one loop's worth of energy.
    assert seen[-1][0] > 3 * 30 * 35e3


def test_finished_run_keeps_serving_its_final_state():
    run = _live(duration="20 s", speed=None)
    run.start()
    run.join(240)
    assert run.finished.is_set() and run.error is None
    assert run.current[0].time == 20.0
    assert "finished" in run.status()
    status, _, body = _call(MetricsApp(run, make_registry(run)))
    assert status == "200 OK" and b"twin_simulated_time_seconds 20.0" in body


# -- the WSGI app ---------------------------------------------------------------------------------------
@pytest.fixture
def finished_app():
    run = _live(duration="30 s", speed=None)
    run.start()
    run.join(240)
    assert run.finished.is_set()
    return MetricsApp(run, make_registry(run))


def test_metrics_formats_gzip_and_cache(finished_app):
    status, headers, text = _call(finished_app)
    assert status == "200 OK" and headers["Content-Type"].startswith("text/plain")
    assert b"# TYPE twin_it_power_watts gauge" in text
    status, headers, om = _call(finished_app, accept="application/openmetrics-text;version=1.0.0")
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    assert {f.name for f in parse_openmetrics(om.decode())} >= {"twin_rack_energy_joules", "twin_pue_ratio"}
    status, headers, packed = _call(finished_app, accept_encoding="gzip")
    assert headers["Content-Encoding"] == "gzip" and gzip.decompress(packed) == text
    # Unchanged state: the same bytes from the cache, not a new rendering.
    assert _call(finished_app)[2] is text or _call(finished_app)[2] == text
    assert finished_app._cache[(headers["Content-Type"], True)][2] is packed


def test_healthz_index_head_404_405(finished_app):
    status, _, body = _call(finished_app, "/healthz")
    assert status == "200 OK" and body.startswith(b"ok finished quickstart: simulated 30 s")
    assert _call(finished_app, "/")[0] == "200 OK"
    status, headers, body = _call(finished_app, "/metrics", method="HEAD")
    assert status == "200 OK" and body == b"" and int(headers["Content-Length"]) > 1000
    assert _call(finished_app, "/nope")[0].startswith("404")
    assert _call(finished_app, "/metrics", method="POST")[0].startswith("405")


def test_healthz_reports_a_failed_simulation(finished_app):
    finished_app.run.error = RuntimeError("boom")
    status, _, body = _call(finished_app, "/healthz")
    assert status.startswith("503") and b"boom" in body


def test_fifty_concurrent_scrapes_all_succeed():
    """A running server (background thread) answers 50 simultaneous scrapes, none refused."""
    run = _live(speed=100.0)
    httpd = make_http_server("127.0.0.1", 0, MetricsApp(run, make_registry(run)))
    port = httpd.server_address[1]
    web = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    run.start()
    web.start()
    try:
        wait_until(lambda: run.current[0].step_index > 0, 120, "the first step")
        with ThreadPoolExecutor(50) as pool:
            results = list(pool.map(lambda _: http_get(f"http://127.0.0.1:{port}/metrics", timeout=10), range(200)))
    finally:
        run.stop()
        httpd.shutdown()
        httpd.server_close()
        run.join(60)
    assert [r[0] for r in results] == [200] * 200
    assert all(b"twin_it_power_watts" in r[2] for r in results)


# -- the command: error paths (in process) --------------------------------------------------------------
def test_bad_scenario_is_one_line_and_exit_2(tmp_path):
    bad = write_scenario(tmp_path, QUICK.read_text().replace("trn3-gen2-ultraserver", "trn3-gen9"), "bad.yaml")
    result = CliRunner().invoke(app, ["serve", str(bad), "--port", str(free_port())])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{bad}:") and "unknown" in lines[0], result.output


def test_missing_scenario_and_bad_speed_exit_2(tmp_path):
    result = CliRunner().invoke(app, ["serve", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    result = CliRunner().invoke(app, ["serve", str(QUICK), "--speed", "fast"])
    assert result.exit_code == 2
    assert result.output.strip() == "--speed: expected a positive number (1, 10, …) or 'max', got 'fast'"


# -- the command: a real process ---------------------------------------------------------------------
def test_port_in_use_is_one_line_and_exit_2(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with child(twin_serve_args(QUICK, port), tmp_path / "serve.log", env=child_env()) as proc:
            assert proc.wait(240) == 2
            out = proc.log().strip().splitlines()
    assert out == [(f"twin serve: cannot listen on 127.0.0.1:{port}: address already in use "
                    "(another twin serve or exporter? choose another --port)")]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_cleanly_with_exit_0(tmp_path, signum):
    port = free_port()
    with child(twin_serve_args(QUICK, port, "--speed", "50"), tmp_path / "serve.log", env=child_env()) as proc:
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: http_get(f"{url}/healthz", timeout=10)[0] == 200, 240, "twin serve /healthz", proc=proc)
        status, _, body = http_get(f"{url}/metrics")
        assert status == 200 and b"twin_simulated_time_seconds" in body
        proc.signal(signum)
        assert proc.wait(120) == 0, proc.log()
        log = proc.log()
    assert "Traceback" not in log
    assert f"on http://127.0.0.1:{port}/metrics" in log and "stopped at simulated" in log


def test_busy_port_is_reported_before_the_simulation_is_built(monkeypatch):
    """The port is bound right after the scenario is read, so a busy port is one line at once,
    not after the (possibly long) build of a large simulation."""
    import importlib

    serve_module = importlib.import_module("twin.cli.serve")  # the module, not the command function

    def never(loaded):
        raise AssertionError("the simulation was built before the port was checked")

    monkeypatch.setattr(serve_module, "live_simulation", never)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = CliRunner().invoke(app, ["serve", str(QUICK), "--port", str(port)])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"twin serve: cannot listen on 127.0.0.1:{port}: address already in use "
        "(another twin serve or exporter? choose another --port)"]
