"""Interrupts never lose or corrupt a result.

SIGINT and SIGTERM sent to ``twin run`` at random moments — during start-up, between and inside
Zarr flushes, during the final write, and twice (once to stop the run, once while its result is
written) — must each leave either nothing at the target or a file that opens, whose every group
has strictly increasing (so unique) timestamps, whose samples are whole (no NaN from a block
written in part) and which says ``interrupted=1``. The one exception is a signal that arrives
while the result of a run that already reached its end is being written: the write completes,
the file holds the whole run and says ``interrupted=0`` (which is true), and the command exits
130 (0 when the signal comes as the interpreter shuts down after the command).

The scenario is small but flush-heavy: every group recorded every second into 1 kB buffers, so
a Zarr run appends a block of 16 samples of each group every 16 s of simulated time and spends
most of its time in appends. Moments are chosen by waiting on conditions of the child process
(committed flushes in the store's commit log, the temporary file appearing, CPU time used), never
by sleeping a fixed time. The default suite runs a few trials; ``TWIN_INTERRUPT_TRIALS=50`` runs
the full set.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import twin
from tests.export.helpers import wait_until
from twin.export.writers import COMMIT_LOG

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

SCENARIO = """\
name: flush-heavy
time: {duration: 2 min, step: 1 s}
cdus: [{name: cdu-1, template: in-row-1350kw, supply_temperature: 34 degC}]
halls:
  - name: hall-1
    rows:
      - name: row-a
        racks: [{name: us1, template: trn3-gen2-ultraserver, cdu: cdu-1}]
workload:
  - select: {kind: [trn3]}
    profile:
      - {at: 0 min, swing: {high: 0.95, low: 0.25, period: 10 s, duty: 0.7}}
record: {facility: 1 s, cdu: 1 s, rack: 1 s, sled: 1 s, device: 1 s, buffer: 1 kB}
"""
#: A .nc run has no appends and steps fast, so it runs an hour (sleds and devices recorded
#: every minute) to give the random moments room; a .zarr run runs the scenario's 2 min.
ARGS = {".zarr": [], ".nc": ["--duration", "1 h", "--record", "sled=60 s", "--record", "device=60 s"]}
#: Samples per group of a whole run.
SAMPLES = {".zarr": dict.fromkeys(("facility", "cdu", "rack", "sled", "device"), 120),
           ".nc": {"facility": 3600, "cdu": 3600, "rack": 3600, "sled": 60, "device": 60}}
GROUPS = ("facility", "cdu", "rack", "sled", "device")
#: Appends during the run: 7 full blocks of 16 samples for each of the 5 groups.
RUN_FLUSHES = 5 * (120 // 16)
#: Generous bound on every wait: a loaded 2-core machine can be slow, but never this slow.
WAIT = 240.0
TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def _wait(proc, condition) -> bool:
    """Poll until ``condition()`` or the process ends; True if the condition was met."""
    def state():
        if proc.poll() is not None:
            return "ended"
        return "met" if condition() else None

    try:
        return wait_until(state, WAIT, "the condition", interval=0.002) == "met"
    except BaseException:
        proc.kill()
        raise


def _log(tmp: Path) -> dict:
    try:
        return json.loads((tmp / COMMIT_LOG).read_text())
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError):
        return {"flushes": 0, "state": ""}


def _final_write_started(out: Path, pid: int):
    tmp = out.with_name(f".{out.name}.tmp-{pid}")
    if out.suffix == ".zarr":
        return lambda: _log(tmp).get("state") == "finishing"
    return tmp.exists


def _signal(proc, signum) -> bool:
    if proc.poll() is not None:
        return False
    proc.send_signal(signum)
    return True


def _run_trial(scenario: Path, out: Path, moment: str, signums, rng, cpu: dict) -> str:
    """One interrupted run; returns the outcome ('nothing', 'partial', 'complete', 'no-signal').

    ``cpu`` holds what earlier trials measured: 'startup' (CPU seconds a child uses before its
    first append) and '.nc' (CPU seconds a .nc run uses before its final write starts); this
    trial adds to it.
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", "twin", "run", str(scenario), "-o", str(out), "--no-progress",
         *ARGS[out.suffix]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = proc.pid
    tmp = out.with_name(f".{out.name}.tmp-{pid}")
    sent, final_sent = [], False
    try:
        if moment == "early":  # start-up, loading, building
            threshold = rng.uniform(0.0, cpu["startup"])
            _wait(proc, lambda: _cpu(pid) >= threshold)
            sent.append(_signal(proc, signums[0]))
        elif moment in ("mid", "double"):
            if out.suffix == ".zarr":  # after the k-th committed append, plus a little more CPU
                k = rng.randint(1, RUN_FLUSHES)
                if _wait(proc, lambda: _log(tmp).get("flushes", 0) >= 1):
                    cpu["startup"] = min(cpu.get("startup", np.inf), _cpu(pid))
                _wait(proc, lambda: _log(tmp).get("flushes", 0) >= k)
                extra = _cpu(pid) + rng.uniform(0.0, 0.3)
                _wait(proc, lambda: _cpu(pid) >= extra)
            else:  # somewhere between start-up and the end of the run, by CPU time used
                threshold = rng.uniform(cpu["startup"], cpu[".nc"])
                _wait(proc, lambda: _cpu(pid) >= threshold)
            sent.append(_signal(proc, signums[0]))
            if moment == "double":
                final_sent = _wait(proc, _final_write_started(out, pid)) and _signal(proc, signums[1])
        elif moment == "final":
            final_sent = _wait(proc, _final_write_started(out, pid))
            if final_sent and out.suffix == ".nc":
                cpu[".nc"] = _cpu(pid)
            final_sent = final_sent and _signal(proc, signums[0])
        stdout, stderr = proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    code = proc.returncode
    where = f"{moment} {[signal.Signals(s).name for s in signums]} → exit {code}: {stderr[-600:]}"
    assert not tmp.exists(), f"temporary left behind ({where})"
    if not out.exists():
        # Nothing written is fine only when the run was stopped before it could write.
        assert code != 0, where
        assert "the completed part is in" not in stderr, where
        return "nothing"
    tree = twin.load(out)
    assert "Traceback" not in stderr, where
    lengths = {}
    for group in GROUPS:
        if group not in tree.children:
            lengths[group] = 0
            continue
        ds = tree[group].to_dataset()
        t = ds["time"].values
        assert np.all(np.diff(t) > np.timedelta64(0, "ns")), f"{group}: times not increasing ({where})"
        lengths[group] = t.size
        for name in ("p_it", "t_die", "p_ac", "t_supply"):
            if name in ds:
                assert np.isfinite(ds[name].values).all(), f"{group}.{name} has holes ({where})"
    complete = lengths == SAMPLES[out.suffix]
    if tree.attrs["interrupted"] == 1:
        assert code == 130 and "the completed part is in" in stderr, where
        assert not complete, f"interrupted=1 but every sample is there ({where})"
        return "partial"
    assert complete, f"interrupted=0 but the data stops early: {lengths} ({where})"
    if any(sent) or final_sent:
        if code == 0:
            # The signal came once the command had finished (the interpreter shutting down):
            # the result was complete and in place already; nothing was left to stop.
            assert "completed part" not in stderr, where
            return "complete (signal after the command)"
        # The stop came while the finished run was being written: honoured after the write.
        assert code == 130 and "the run was complete" in stderr, where
        return "complete"
    assert code == 0, where
    return "no-signal"


#: The default trials, in an order that measures what later ones need: a .zarr run cut in the
#: middle (start-up CPU), a .nc run stopped in its final write (CPU before a .nc final write),
#: a .zarr run stopped twice (mid-run, then in its final write).
FIRST = ((".zarr", "mid"), (".nc", "final"), (".zarr", "double"))
MOMENTS = ("mid", "mid", "mid", "double", "final", "early")


def test_interrupts_leave_nothing_or_a_readable_file(tmp_path):
    n_trials = int(os.environ.get("TWIN_INTERRUPT_TRIALS", str(len(FIRST))))
    rng = random.Random(int(os.environ.get("TWIN_INTERRUPT_SEED", "17")))
    scenario = tmp_path / "flush-heavy.yaml"
    scenario.write_text(SCENARIO)
    cpu: dict[str, float] = {}
    outcomes: dict[str, int] = {}
    for i in range(n_trials):
        if i < len(FIRST):
            suffix, moment = FIRST[i]
        else:
            suffix, moment = rng.choice((".zarr", ".nc")), rng.choice(MOMENTS)
        signums = [rng.choice((signal.SIGINT, signal.SIGTERM)) for _ in range(2)]
        out = tmp_path / f"t{i:02d}{suffix}"
        outcome = _run_trial(scenario, out, moment, signums, rng, cpu)
        key = f"{suffix} {moment} {outcome}"
        outcomes[key] = outcomes.get(key, 0) + 1
        assert set(os.listdir(tmp_path)) <= {scenario.name} | {f"t{j:02d}{x}" for j in range(i + 1)
                                                                 for x in (".zarr", ".nc")}
    print(f"{n_trials} interrupt trials:", json.dumps(dict(sorted(outcomes.items())), indent=1))
    # The trials must have cut runs short, not only stopped finished ones.
    assert sum(v for k, v in outcomes.items() if k.endswith("partial")) >= n_trials // 3
