"""Benchmark: /metrics under 50 concurrent scrapers while `twin serve` runs a hall at --speed 1.

Starts ``python -m twin serve`` on a copy of the quickstart with ``count: 8`` UltraServers
(16 racks, 2,320 devices — above the 2,000-device threshold, so device series are off unless
``--devices``), or on ``--scenario`` (e.g. ``scenarios/bench/cluster-100k.yaml``),
at 1× real time on 127.0.0.1, then runs ``--scrapers`` concurrent scrapers for
``--seconds`` (asyncio, one connection per scrape, asking for OpenMetrics with gzip as
Prometheus does). ``--interval 0`` (default) scrapes back to back — a closed-loop stress far
above what 50 Prometheus servers at 1 s would send; ``--interval 1`` paces each scraper to one
scrape a second (phases spread). A monitor reads ``twin_lag_seconds`` and the simulated time
every second. Reports errors, latency percentiles, throughput, the lag, whether the
simulation kept pace, the machine's load average and the CPU time (user + sys) of `twin serve`'s
two processes (the simulation's and the serving one). Usage::

    python benchmarks/scrape_load.py [--scrapers 50] [--seconds 30] [--interval 0] [--racks 8] [--devices]
    python benchmarks/scrape_load.py --scenario scenarios/bench/cluster-100k.yaml --scrapers 100 --interval 1
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
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


def cpu_seconds(pid: int) -> dict[int, float]:
    """User + sys CPU seconds of ``pid`` and its children (Linux /proc), by pid."""
    out, todo = {}, [pid]
    tick = os.sysconf("SC_CLK_TCK")
    while todo:
        p = todo.pop(0)
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            out[p] = (int(fields[11]) + int(fields[12])) / tick
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


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


class KeptAlive:
    """One scraper's connection, kept alive between scrapes as Prometheus keeps it."""

    def __init__(self, port: int):
        self.port, self.reader, self.writer = port, None, None

    async def __call__(self) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            self.writer.write((f"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nAccept: {ACCEPT}\r\n"
                               "Accept-Encoding: gzip\r\n\r\n").encode())
            await self.writer.drain()
            head = await self.reader.readuntil(b"\r\n\r\n")
            fields = dict(line.split(": ", 1) for line in head.decode().split("\r\n")[1:] if line)
            body = await self.reader.readexactly(int(fields["Content-Length"]))
        except BaseException:
            self.writer.close()
            self.writer = None
            raise
        return int(head.split(b" ", 2)[1]), body


async def scraper(port, deadline, interval, phase, latencies, errors, sizes, keep_alive=False):
    if interval:
        await asyncio.sleep(phase)
    get = KeptAlive(port) if keep_alive else (lambda: scrape(port))
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        try:
            status, body = await asyncio.wait_for(get(), timeout=10)
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


async def load(port, scrapers, seconds, interval, keep_alive=False):
    latencies, errors, sizes, lags, sim_times, series = [], [], [], [], [], []
    deadline = time.monotonic() + seconds
    tasks = [scraper(port, deadline, interval, i * (interval or 0) / scrapers, latencies, errors, sizes,
                     keep_alive)
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
    ap.add_argument("--scenario", type=Path, help="serve this scenario instead of the quickstart hall")
    ap.add_argument("--startup", type=float, default=900.0, help="seconds to wait for the first values")
    ap.add_argument("--keep-alive", action="store_true",
                    help="each scraper keeps its connection open between scrapes (as Prometheus does)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        scenario = args.scenario.resolve() if args.scenario else hall_scenario(Path(tmp), args.racks)
        port = free_port()
        cmd = [sys.executable, "-m", "twin", "serve", str(scenario), "--speed", "1", "--port", str(port)]
        if args.devices:
            cmd.append("--devices")
        log = open(Path(tmp) / "serve.log", "wb")  # noqa: SIM115 - the server's lifetime
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + args.startup
            while True:
                try:
                    # in the scrapers' format: its first scrape waits for its first rendering
                    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                                 headers={"Accept": ACCEPT, "Accept-Encoding": "gzip"})
                    with urllib.request.urlopen(req, timeout=120) as r:
                        if b"twin_it_power_watts" in gzip.decompress(r.read()):
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"twin serve did not come up:\n{(Path(tmp) / 'serve.log').read_text()}")
                time.sleep(0.2)
            cpu0 = cpu_seconds(proc.pid)
            load0 = os.getloadavg()[0]
            wall, lat, errors, sizes, lags, sim_times, series = asyncio.run(
                load(port, args.scrapers, args.seconds, args.interval, args.keep_alive))
            cpu1 = cpu_seconds(proc.pid)
            load1 = os.getloadavg()[0]
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
    shown = (args.scenario.name if args.scenario
             else f"quickstart × {args.racks} ({2 * args.racks} racks, {290 * args.racks:,} devices)")
    print(f"scenario: {shown}, --speed 1{' --devices' if args.devices else ''}; "
          f"{series:,} series per scrape (at the end)")
    print(f"machine load average (1 min) {load0:.1f} at the start, {load1:.1f} at the end")
    print("CPU seconds (user + sys) during the load: "
          + ", ".join(f"{name} {cpu1[pid] - cpu0.get(pid, 0.0):.1f}" for pid, name in
                      zip(cpu1, ("simulation process", "serving process"))))
    mode = "back to back" if not args.interval else f"every {args.interval:g} s each"
    mode += ", connections kept alive" if args.keep_alive else ", a new connection per scrape"
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
