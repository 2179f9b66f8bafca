"""Benchmark: /metrics under 50 concurrent scrapers while `twin serve` runs a hall at --speed 1.

Starts ``python -m twin serve`` on a copy of the quickstart with ``count: 8`` UltraServers
(16 racks, 2,320 devices — above the 2,000-device threshold, so device series are off unless
``--devices``), at 1× real time on 127.0.0.1, then runs ``--scrapers`` concurrent scrapers for
``--seconds`` (asyncio, one connection per scrape, asking for OpenMetrics with gzip as
Prometheus does). ``--interval 0`` (default) scrapes back to back — a closed-loop stress far
above what 50 Prometheus servers at 1 s would send; ``--interval 1`` paces each scraper to one
scrape a second (phases spread). A monitor reads ``twin_lag_seconds`` and the simulated time
every second. Reports errors, latency percentiles, throughput, the lag and whether the
simulation kept pace. Usage::

    python benchmarks/scrape_load.py [--scrapers 50] [--seconds 30] [--interval 0] [--racks 8] [--devices]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
ACCEPT = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"


def hall_scenario(directory: Path, count: int) -> Path:
    data = yaml.safe_load((ROOT / "scenarios" / "quickstart.yaml").read_text())
    data["name"] = f"quickstart-x{count}"
    data["halls"][0]["rows"][0]["racks"][0]["count"] = count
    data.pop("output", None)
    path = directory / "hall.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def scrape(port: int, accept: str = ACCEPT, gzip: bool = True) -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        head = f"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAccept: {accept}\r\n"
        if gzip:
            head += "Accept-Encoding: gzip\r\n"
        writer.write((head + "\r\n").encode())
        await writer.drain()
        data = await reader.read()
    finally:
        writer.close()
        await writer.wait_closed()
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    return status, data.split(b"\r\n\r\n", 1)[-1]


async def scraper(port, deadline, interval, phase, latencies, errors, sizes):
    if interval:
        await asyncio.sleep(phase)
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        try:
            status, body = await asyncio.wait_for(scrape(port), timeout=10)
            if status != 200:
                errors.append(f"HTTP {status}")
            else:
                sizes.append(len(body))
        except (OSError, TimeoutError) as exc:
            errors.append(type(exc).__name__)
        latencies.append(time.monotonic() - t0)
        if interval:
            await asyncio.sleep(max(0.0, interval - (time.monotonic() - t0)))


async def monitor(port, deadline, lags, sim_times, series):
    while time.monotonic() < deadline:
        try:
            _, body = await scrape(port, accept="text/plain", gzip=False)
            text = body.decode()
            series[:] = [sum(1 for line in text.splitlines() if line and not line.startswith("#"))]
            lag = re.search(r"^twin_lag_seconds (\S+)$", text, re.MULTILINE)
            sim = re.search(r"^twin_simulated_time_seconds (\S+)$", text, re.MULTILINE)
            if lag and sim:
                lags.append(float(lag.group(1)))
                sim_times.append((time.monotonic(), float(sim.group(1))))
        except OSError:
            pass
        await asyncio.sleep(1.0)


async def load(port, scrapers, seconds, interval):
    latencies, errors, sizes, lags, sim_times, series = [], [], [], [], [], []
    deadline = time.monotonic() + seconds
    tasks = [scraper(port, deadline, interval, i * (interval or 0) / scrapers, latencies, errors, sizes)
             for i in range(scrapers)]
    t0 = time.monotonic()
    await asyncio.gather(monitor(port, deadline, lags, sim_times, series), *tasks)
    return time.monotonic() - t0, latencies, errors, sizes, lags, sim_times, series[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scrapers", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--interval", type=float, default=0.0, help="seconds between a scraper's scrapes (0: back to back)")
    ap.add_argument("--racks", type=int, default=8, help="UltraServers (2 racks, 290 devices each)")
    ap.add_argument("--devices", action="store_true", help="force device-level series on")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        scenario = hall_scenario(Path(tmp), args.racks)
        port = free_port()
        cmd = [sys.executable, "-m", "twin", "serve", str(scenario), "--speed", "1", "--port", str(port)]
        if args.devices:
            cmd.append("--devices")
        log = open(Path(tmp) / "serve.log", "wb")  # noqa: SIM115 - the server's lifetime
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                        if b"twin_it_power_watts" in r.read():
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"twin serve did not come up:\n{(Path(tmp) / 'serve.log').read_text()}")
                time.sleep(0.2)
            wall, lat, errors, sizes, lags, sim_times, series = asyncio.run(
                load(port, args.scrapers, args.seconds, args.interval))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
            log.close()

    ms = sorted(x * 1e3 for x in lat)

    def pct(p):
        return ms[min(len(ms) - 1, round(p / 100 * (len(ms) - 1)))] if ms else float("nan")

    (w0, s0), (w1, s1) = sim_times[0], sim_times[-1]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"scenario: quickstart × {args.racks} ({2 * args.racks} racks, {290 * args.racks:,} devices), "
          f"--speed 1{' --devices' if args.devices else ''}; {series:,} series per scrape (at the end)")
    mode = "back to back" if not args.interval else f"every {args.interval:g} s each"
    print(f"load: {args.scrapers} concurrent scrapers, {mode}, for {wall:.1f} s (OpenMetrics + gzip)")
    print(f"scrapes: {len(lat):,} ({len(lat) / wall:,.0f}/s), errors: {len(errors)}"
          + (f" ({', '.join(sorted(set(errors)))})" if errors else ""))
    print(f"latency ms: p50 {pct(50):.1f}  p90 {pct(90):.1f}  p99 {pct(99):.1f}  max {ms[-1]:.1f}  "
          f"(mean {statistics.fmean(ms):.1f}); body {statistics.fmean(sizes) / 1e3:,.1f} kB gzip")
    print(f"lag (twin_lag_seconds, {len(lags)} readings): max {max(lags):.3f} s, mean {statistics.fmean(lags):.4f} s; "
          f"simulated {s1 - s0:,.1f} s in {w1 - w0:,.1f} s of wall time ({(s1 - s0) / (w1 - w0):.3f}×)")
    print(f"twin serve exit code after SIGTERM: {rc}")


if __name__ == "__main__":
    main()
