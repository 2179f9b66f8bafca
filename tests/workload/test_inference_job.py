"""LLM inference jobs in the twin: trace replay, power following requests, decode power band."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.conftest import SCENARIOS
from twin.catalog import load_catalog
from twin.cli import app
from twin.export.dataset import build_tree
from twin.scenario import load_scenario
from twin.sim.driver import Simulation
from twin.workload.traces import AZURE_CODE_TRACE, read_azure_trace

TRACE = SCENARIOS / "inference-azure-trace.yaml"


def _run(path, over):
    sim = Simulation(load_scenario(path, over))
    sim.run()
    return sim, build_tree(sim)


def test_replay_generates_every_output_token():
    """With capacity to spare every request of the trace completes: tokens generated equal the
    trace's total output tokens (within 1 %; fractional decode steps at the run's end)."""
    sim, tree = _run(TRACE, {"time": {"duration": "7 min"}})
    total = read_azure_trace(AZURE_CODE_TRACE)["output_tokens"].sum()
    job = sim.jobs.jobs[0]
    assert job.tokens == pytest.approx(total, rel=0.01)
    assert job.kind_state.pool.n_completed == 8819


def test_it_power_follows_request_rate():
    """Replayed at its own pace, IT power per minute correlates with requests per minute
    (Pearson ≥ 0.8 on 1-minute bins, as the issue asks)."""
    over = {"time": {"duration": "57 min"}, "workload_step": "1 s", "record": {"device": "off", "rack": "off"},
            "jobs": [{"kind": "inference", "name": "c", "devices": {"kind": "trn3", "count": 32},
                      "replica_size": 16, "model": {"params": 70e9}, "trace": "azure-code"}]}
    sim, tree = _run(TRACE, over)
    p = tree["facility"]["p_it"].to_series()
    p_min = p.groupby(np.arange(p.size) // 60).mean().iloc[:57]
    arrivals = read_azure_trace(AZURE_CODE_TRACE)["arrival"]
    per_min = np.bincount((arrivals // 60).astype(int), minlength=57)[:57]
    r = np.corrcoef(p_min.values, per_min)[0, 1]
    assert r >= 0.8, r


def test_decode_heavy_power_band(tmp_path):
    """Short prompts, long outputs on 2-chip replicas: decode streams the weights and KV caches
    from HBM, so the serving chips draw well above active idle and below the compute-bound
    prefill level. By hand from the device model: P ≈ active idle + P_dyn · u_hbm · (byte rate /
    bandwidth), with the byte rate at most MBU; the band [active idle + 25 % of P_dyn, 75 % of
    TDP] holds every second of the burst (decode-only power measured at 20-43 % of TDP on H200
    in CATALOGUE-SOURCES is for a different chip and stack)."""
    rng = np.random.default_rng(0)
    n = 600
    t0 = pd.Timestamp("2023-11-16 18:00:00")
    times = t0 + pd.to_timedelta(np.sort(rng.uniform(0, 300, n)), unit="s")
    trace = tmp_path / "decode.csv"
    pd.DataFrame({"TIMESTAMP": times.strftime("%Y-%m-%d %H:%M:%S.%f"), "ContextTokens": 64,
                  "GeneratedTokens": 600}).to_csv(trace, index=False)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TRACE.read_text())
    over = {"time": {"duration": "5 min"}, "record": {"device": "1 s"},
            "jobs": [{"kind": "inference", "name": "d", "devices": {"kind": "trn3", "count": 16},
                      "replica_size": 2, "model": {"params": 70e9}, "trace": str(trace)}]}
    sim, tree = _run(scenario, over)
    dev = tree["device"].to_dataset()
    serving = dev.isel(device=sim.jobs.jobs[0].devices)
    busy = serving["p"].isel(time=slice(60, 280))  # well inside the burst of requests
    chip = load_catalog().chips["trn3"]
    p_dyn = sim.system.chip["p_dyn"][sim.jobs.jobs[0].devices[0]]
    assert float(busy.min()) >= chip.p_active_idle.si + 0.25 * p_dyn
    assert float(busy.max()) <= 0.75 * chip.tdp.si


def test_seeded_poisson_arrivals():
    def run(seed):
        over = {"time": {"duration": "3 min"}, "seed": seed, "record": {"device": "1 s"},
                "jobs": [{"kind": "inference", "name": "p", "devices": {"kind": "trn3", "count": 32},
                          "replica_size": 16, "model": {"params": 8e9},
                          "arrivals": {"rate": "5 1/s"}}]}
        return _run(TRACE, over)[1]["device"]["u"].values
    a, b, c = run(1), run(1), run(2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("rows, line, message", [
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:01,10,5\n2023-11-16 18:00:00,10,5\n",
     3, "earlier"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:01,10,-5\n", 2, "negative"),
    ("TIMESTAMP,ContextTokens\n2023-11-16 18:00:01,10\n", 1, "GeneratedTokens"),
])
def test_bad_trace_is_one_line_exit_2(tmp_path, rows, line, message):
    trace = tmp_path / "bad.csv"
    trace.write_text(rows)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TRACE.read_text().replace("trace: azure-code", f"trace: {trace.name}"))
    result = CliRunner().invoke(app, ["run", str(scenario), "-o", str(tmp_path / "x.nc")])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"{scenario}:29: jobs[0].trace: ")
    assert f"bad.csv:{line}:" in lines[0] and message in lines[0]
    assert not (tmp_path / "x.nc").exists()


def test_trace_that_ends_before_the_run_is_a_warning(tmp_path):
    """A trace whose last request arrives at 20 s of a 60 s run says so (no requests after)."""
    trace = tmp_path / "short.csv"
    pd.DataFrame({"TIMESTAMP": [0.0, 10.0, 20.0], "ContextTokens": 64, "GeneratedTokens": 8}).to_csv(trace, index=False)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TRACE.read_text())
    over = {"time": {"duration": "1 min"}, "record": {"device": "off"},
            "jobs": [{"kind": "inference", "name": "d", "devices": {"kind": "trn3", "count": 16},
                      "replica_size": 2, "model": {"params": 70e9}, "trace": str(trace)}]}
    _, tree = _run(scenario, over)
    assert "job d: its trace's last request arrives at 20 s of a 60 s run (no requests after)" in tree.attrs["warnings"]


def test_serving_ahead_is_undone_when_the_block_is_not_taken():
    """A pool serves a quiet block's steps ahead of the compiled loop (``JobSet.ahead``); when the
    loop takes none of them (``finish(0, …)``), a job after the pool has no demand ahead (here
    the training gang, one chip slowed) or the block is left unfinished (an interrupt), the pool
    is put back exactly: the run then equals one that never served ahead (tokens, progress and
    every request's times, to the bit)."""
    from tests.sim.test_blocks import _mixed

    over = _mixed("34 degC", "40 1/s", "0 s")
    over["time"]["duration"] = "40 s"
    over["jobs"] = [over["jobs"][1], over["jobs"][0], over["jobs"][2]]  # the pool before the gang
    plain, tried = (Simulation(load_scenario(SCENARIOS / "mixed-hall.yaml", over), kernel="numpy") for _ in range(2))
    for sim in (plain, tried):
        sim.advance(5)
    jobs, st = tried.jobs, tried.state
    pool = jobs.jobs[0].kind_state.pool
    t, done = pool.t, pool.n_completed  # (5 s as fifty 100 ms sub-steps added)
    args = (tried.step_index, tried.h, 20, tried.n_sub)
    u = np.zeros((20, tried.n_sub, tried.system.n_devices))
    steps, watch, finish = jobs.ahead(*args, st["device.clock_limit"], st["device.tripped"], u)
    assert steps == 20 and pool.t == pytest.approx(25.0) and pool.n_completed > done and u.any()
    assert finish(0, None, None) is None and (pool.t, pool.n_completed) == (t, done)
    slowed = st["device.clock_limit"].copy()
    slowed[jobs.jobs[1].devices[0]] = 0.9
    assert jobs.ahead(*args, slowed, st["device.tripped"], u) is None and (pool.t, pool.n_completed) == (t, done)
    assert jobs.ahead(*args, st["device.clock_limit"], st["device.tripped"], u) is not None  # left unfinished, as
    assert pool.t > t  # by an interrupt: the pool is put back before it serves the next step
    plain.run()
    tried.run()
    for a, b in zip(plain.jobs.jobs, tried.jobs.jobs):
        assert (a.tokens, a.progress, a.energy) == (b.tokens, b.progress, b.energy), a.spec.name
    pd.testing.assert_frame_equal(plain.jobs.jobs[0].kind_state.pool.request_table(), pool.request_table(),
                                  check_exact=True)
    assert pool.n_completed > 100
