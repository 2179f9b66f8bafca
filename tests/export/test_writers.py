"""Writers: commits of streamed blocks, held signals, stale temporaries, honest messages."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr
from typer.testing import CliRunner

import twin
from tests.conftest import one_chip_scenario, write_scenario
from twin.cli import app
from twin.export.interrupts import StopRequests, deferred_signals
from twin.export.writers import (COMMIT_LOG, ZarrStream, clean_stale_temporaries, open_result,
                                 read_commit_log)
from twin.scenario import load_scenario
from twin.sim.driver import Simulation


def _stream(tmp_path, duration="100 s"):
    """A one-chip run streamed into 1 kB buffers (16 samples a block)."""
    data = one_chip_scenario({"u": 0.5} and [{"u": 0.5}], duration=duration)
    data["record"]["buffer"] = "1 kB"
    stream = ZarrStream(tmp_path / "r.zarr")
    sim = Simulation(load_scenario(write_scenario(tmp_path, data)), sink=stream)
    return sim, stream


def _times_ok(tree) -> dict[str, int]:
    sizes = {}
    for name, node in tree.children.items():
        t = node["time"].values
        assert np.all(np.diff(t) > np.timedelta64(0, "ns")), name
        sizes[name] = t.size
    return sizes


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)


def test_deferred_signals_hold_then_deliver():
    # Python's own SIGINT handler, whatever the runner inherited: a test run started as a
    # background job of a non-interactive shell begins with SIGINT ignored.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    done = []
    try:
        with pytest.raises(KeyboardInterrupt):
            with deferred_signals() as received:
                os.kill(os.getpid(), signal.SIGINT)
                done.append("block finished")  # not cut short by the signal
                assert received == [signal.SIGINT]
        assert done == ["block finished"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_stop_requests_raise_while_armed_and_count_after():
    with StopRequests() as stop:
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0)  # let the handler run here
        stop.disarm()
        os.kill(os.getpid(), signal.SIGTERM)  # only counted now
        assert stop.received == [signal.SIGTERM, signal.SIGTERM]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_block_handed_over_twice_is_committed_once(tmp_path):
    """A flush retried after an interrupt (the recorder had not yet noted it) appends nothing."""
    sim, stream = _stream(tmp_path)
    sim.run()
    g = sim.recorder.groups["device"]
    block = {v: g.out[v][: g.filled].copy() for v in g.out}
    sim.recorder.flush(g)
    stream("device", block, g.flushed - block["t_die"].shape[0])  # the same block again
    assert stream.committed["device"] == 100
    with pytest.raises(RuntimeError, match="would leave a gap"):
        stream("device", block, 200)
    stream.finish()
    tree = twin.load(tmp_path / "r.zarr")
    assert _times_ok(tree)["device"] == 100


def test_failed_append_rolls_back_to_committed(tmp_path, monkeypatch):
    """An append that dies after writing some variables (today: mismatched lengths, an
    unreadable store) leaves the committed part; finish() still writes a readable result."""
    sim, stream = _stream(tmp_path)
    real = xr.Dataset.to_zarr
    calls = {"n": 0}

    def half_write(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 12:  # write the first variable only, then fail
            real(self[[next(iter(self.data_vars))]], *args, **kwargs)
            raise OSError("disk full")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(xr.Dataset, "to_zarr", half_write)
    with pytest.raises(OSError, match="disk full"):
        sim.run()
    failed = next(g for g in stream._dirty)
    committed = stream.committed.get(failed, 0)
    # A reader of the store being written sees only committed data.
    partial = open_result(stream.tmp)
    if committed:
        assert partial[failed].sizes["time"] == committed
    assert read_commit_log(stream.tmp)["groups"] == stream.committed
    stream.finish(interrupted=True)
    tree = twin.load(tmp_path / "r.zarr")
    sizes = _times_ok(tree)
    assert tree.attrs["interrupted"] == 1
    # Whole samples only; the step that failed may be recorded in the groups before the failed one.
    assert set(sizes.values()) <= {sim.step_index, sim.step_index + 1}
    for name, node in tree.children.items():
        for var in node.data_vars:
            assert np.isfinite(node[var].values).all() or var == "pue", (name, var)
    assert not (tmp_path / "r.zarr" / COMMIT_LOG).exists()


def test_signal_during_the_final_write_is_honoured_after_it(tmp_path, monkeypatch):
    """The run is complete; SIGTERM while its result is written does not throw it away."""
    import zarr

    sim, stream = _stream(tmp_path)
    sim.run()
    real = zarr.consolidate_metadata

    def consolidate_then_signal(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        return real(*args, **kwargs)

    monkeypatch.setattr(zarr, "consolidate_metadata", consolidate_then_signal)
    with StopRequests() as stop:
        stop.disarm()
        stream.finish()
    assert stop.requested
    tree = twin.load(tmp_path / "r.zarr")
    assert tree.attrs["interrupted"] == 0 and _times_ok(tree)["device"] == 100


def test_stale_temporaries_of_dead_runs_are_removed(tmp_path):
    target = tmp_path / "r.zarr"
    dead = tmp_path / f".r.zarr.tmp-{_dead_pid()}"
    live = tmp_path / f".r.zarr.tmp-{os.getppid()}"  # a live process writing the same target
    other = tmp_path / f".q.zarr.tmp-{_dead_pid()}"
    for p in (dead, live, other):
        (p / "device").mkdir(parents=True)
    assert clean_stale_temporaries(target) == [dead]
    assert live.exists() and other.exists() and not dead.exists()
    nc_dead = tmp_path / f".r.nc.tmp-{_dead_pid()}"
    nc_dead.write_bytes(b"\x89HDF")
    sim, stream = _stream(tmp_path)
    sim.run()
    twin.export.writers.write_tree(twin.export.dataset.build_tree(sim), tmp_path / "r.nc")
    assert not nc_dead.exists()


def test_write_failure_says_nothing_written(tmp_path, monkeypatch):
    """'the completed part is in …' only when it is: a failed final write says nothing was kept."""
    data = one_chip_scenario([{"u": 0.5}], duration="30 s")
    path = write_scenario(tmp_path, data)

    def fail(*args, **kwargs):
        raise OSError("no space left on device")

    monkeypatch.setattr(xr.DataTree, "to_netcdf", fail)
    out = tmp_path / "r.nc"
    result = CliRunner().invoke(app, ["run", str(path), "-o", str(out)])
    assert result.exit_code == 1
    assert "could not write the result (OSError: no space left on device); nothing written" in result.stderr
    assert "completed part" not in result.stderr
    assert not out.exists() and not any(p.name.startswith(".r.nc") for p in tmp_path.iterdir())
