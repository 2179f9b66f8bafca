"""LLM inference: roofline service times and the continuous-batching replica pool."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from twin.workload.inference import (
    InferencePool,
    decode_step_time,
    decode_steps,
    decode_time,
    decode_tokens_per_second,
    kv_bytes_per_token,
    prefill_time,
)
from twin.workload.traces import poisson_arrivals, read_azure_trace

# A 70B model in FP8 (1 byte per weight) with Llama-2-70B's KV layout, on one chip with Trn3's
# dense MXFP8 throughput and HBM bandwidth (CATALOGUE-SOURCES.md).
PARAMS = 70e9
WEIGHT_BYTES = 70e9
KV = 327_680.0  # 2 · 80 layers · 8 KV heads · 128 · 2 B (BF16 cache)
FLOPS = 2.517e15
HBM = 4.9e12
MFU, MBU = 0.5, 0.7


def _pool(n=1, requests=None, **kw) -> InferencePool:
    args = dict(params=PARAMS, params_bytes=WEIGHT_BYTES, kv_bytes_per_token=KV, flops_peak=FLOPS,
                hbm_bandwidth=HBM, mfu=MFU, mbu=MBU)
    args.update(kw)
    return InferencePool(n, requests=requests, **args)


def _requests(arrival, prompt, output) -> pd.DataFrame:
    arrival = np.atleast_1d(np.asarray(arrival, dtype=float))
    return pd.DataFrame({"arrival": arrival,
                         "prompt_tokens": np.broadcast_to(prompt, arrival.shape),
                         "output_tokens": np.broadcast_to(output, arrival.shape)})


def _run(pool, seconds, dt=1.0, clock=1.0):
    steps = []
    for _ in range(int(round(seconds / dt))):
        steps.append(pool.advance(pool.t, dt, clock))
    return steps


def _service_time(prompt, output, mfu=MFU, mbu=MBU):
    """Prefill, then output − 1 decode steps of a batch of one over a growing context."""
    decode = sum(decode_step_time(1, WEIGHT_BYTES, KV, prompt + 1 + i, HBM, mbu)
                 for i in range(output - 1))
    return prefill_time(prompt, PARAMS, FLOPS, mfu), decode


# -- roofline --------------------------------------------------------------------------------------
def test_roofline_hand_numbers():
    """By hand (exact arithmetic, so rel 1e-12 is float rounding only):
    prefill 1,000 tokens: 2 · 70e9 · 1,000 FLOP / (2.517e15 · 0.5 FLOP/s) = 1.4e14 / 1.2585e15 s;
    decode step, batch 16 at 2,000 tokens of context: (70e9 + 16 · 2,000 · 327,680) B
    / (4.9e12 · 0.8 B/s) = 80.48576e9 / 3.92e12 s."""
    assert kv_bytes_per_token(80, 8, 128, 2) == 327_680
    assert prefill_time(1000, 70e9, 2.517e15, 0.5) == pytest.approx(0.111243543901470, rel=1e-12)
    t_step = decode_step_time(16, 70e9, 327_680, 2000, 4.9e12, 0.8)
    assert t_step == pytest.approx(0.0205320816326531, rel=1e-12)
    assert decode_tokens_per_second(16, 70e9, 327_680, 2000, 4.9e12, 0.8) == pytest.approx(
        16 / 0.0205320816326531, rel=1e-12)
    # Batch of one, weights only, at full bandwidth: 70e9 / 4.9e12 = 14.29 ms per token.
    assert decode_step_time(1, 70e9, 0.0, 0, 4.9e12, 1.0) == pytest.approx(70 / 4900, rel=1e-12)
    # Arrays broadcast.
    np.testing.assert_allclose(prefill_time(np.array([1000, 2000]), 70e9, 2.517e15, 0.5),
                               [0.111243543901470, 0.222487087802940], rtol=1e-12)


def test_decode_time_is_the_sum_of_steps_and_decode_steps_inverts_it():
    """decode_time(k) = Σ decode_step_time over contexts c, c+1, …, c+k−1 (exact for whole k);
    decode_steps(decode_time(k)) = k for fractional k too (float rounding: rel 1e-10)."""
    b, c = 12, 1500.0
    for k in (1, 2, 7, 300):
        direct = sum(decode_step_time(b, WEIGHT_BYTES, KV, c + i, HBM, MBU) for i in range(k))
        assert decode_time(k, b, WEIGHT_BYTES, KV, c, HBM, MBU) == pytest.approx(direct, rel=1e-12)
    k = np.array([0.0, 0.3, 1.0, 17.25, 4000.5])
    t = decode_time(k, b, WEIGHT_BYTES, KV, c, HBM, MBU)
    np.testing.assert_allclose(decode_steps(t, b, WEIGHT_BYTES, KV, c, HBM, MBU), k, rtol=1e-10,
                               atol=1e-12)


# -- one request, by hand --------------------------------------------------------------------------
def test_single_request_timeline_and_step_split():
    """A request at 0.3 s on an idle replica: admitted at once; first token after the prefill;
    done after 4 more decode steps of a batch of one. Step 0 splits into prefill time × 1 and
    decode time × 0.2 (the batch-of-one decode level) [rel 1e-9: float sums]."""
    pool = _pool(requests=_requests(0.3, 1000, 5))
    t_pf, t_dec = _service_time(1000, 5)
    step = pool.advance(0.0, 1.0, 1.0)
    table = pool.request_table()
    assert table["admitted"][0] == 0.3
    assert table["first_token"][0] == pytest.approx(0.3 + t_pf, rel=1e-12)
    assert table["done"][0] == pytest.approx(0.3 + t_pf + t_dec, rel=1e-12)
    assert pool.ttft == pytest.approx([t_pf], rel=1e-9)
    assert pool.e2e_latency == pytest.approx([t_pf + t_dec], rel=1e-9)
    assert pool.queue_wait == pytest.approx([0.0])
    assert step.u_prefill == pytest.approx([t_pf], rel=1e-9)
    assert step.u_decode == pytest.approx([0.2 * t_dec], rel=1e-9)
    assert step.prompt_tokens == pytest.approx([1000.0])
    assert step.output_tokens == pytest.approx([5.0])
    assert (step.arrived, step.completed, step.queue_length) == (1, 1, 0)
    assert pool.tokens_generated == pytest.approx(5.0) and pool.prompt_tokens_processed == 1000.0


def test_prefill_spanning_steps_and_faster_replica():
    """A 40,000-token prompt (4.45 s of prefill) keeps u_prefill = 1 for whole steps; a replica
    with twice the FLOP/s takes half the time (its TTFT is checked exactly)."""
    pool = _pool(2, requests=_requests([0.0, 0.0], 40_000, 2),
                 flops_peak=np.array([FLOPS, 2 * FLOPS]), max_prefill_tokens=40_000)
    steps = _run(pool, 6)
    t_pf = prefill_time(40_000, PARAMS, FLOPS, MFU)
    table = pool.request_table().set_index("replica")
    assert table.loc[0, "first_token"] == pytest.approx(t_pf, rel=1e-9)
    assert table.loc[1, "first_token"] == pytest.approx(t_pf / 2, rel=1e-9)
    assert [s.u_prefill[0] for s in steps[:4]] == pytest.approx([1.0] * 4)
    assert steps[4].u_prefill[0] == pytest.approx(t_pf - 4, rel=1e-9)
    assert sum(s.prompt_tokens[0] for s in steps) == pytest.approx(40_000, rel=1e-12)


def test_simultaneous_requests_spread_over_idle_replicas():
    """Four requests at the same instant on four idle replicas: one each, all with TTFT = the
    prefill time of one prompt (no batching, no queueing)."""
    pool = _pool(4, requests=_requests([0.5] * 4, 2000, 3))
    _run(pool, 2)
    table = pool.request_table()
    assert sorted(table["replica"]) == [0, 1, 2, 3]
    np.testing.assert_allclose(pool.ttft, prefill_time(2000, PARAMS, FLOPS, MFU), rtol=1e-9)


def test_prefill_batches_respect_max_prefill_tokens():
    """Five 3,000-token prompts queued at t = 0 on one replica, 8,192 tokens per prefill batch:
    batches of 2, 2 and 1, prefilled back to back (prefill has priority over decode), so the
    first tokens come at T(6,000), 2·T(6,000) and 2·T(6,000) + T(3,000)."""
    pool = _pool(requests=_requests([0.0] * 5, 3000, 100), max_prefill_tokens=8192)
    _run(pool, 3)
    t6, t3 = (prefill_time(n, PARAMS, FLOPS, MFU) for n in (6000, 3000))
    first = pool.request_table()["first_token"].to_numpy()
    np.testing.assert_allclose(first, [t6, t6, 2 * t6, 2 * t6, 2 * t6 + t3], rtol=1e-9)


def test_max_batch_size_holds_requests_back():
    """Batch of 2 slots, three requests at t = 0: the third is admitted when the first finishes."""
    pool = _pool(requests=_requests([0.0, 0.0, 0.0], 500, [10, 20, 10]), max_batch_size=2)
    _run(pool, 3)
    table = pool.request_table()
    assert table["admitted"][2] == pytest.approx(table["done"][0], rel=1e-12)
    assert table["admitted"][2] > 0


def test_long_decode_batch_keeps_exact_timing():
    """A decode batch that stays busy for 140,000 steps (its step counter is rebased at 65,536):
    with no KV reads a step costs W / (B·MBU) whatever the batch, so each finish time is its
    start plus the prefills that paused it plus 69,999 steps (rel 1e-9: 10⁵ float additions)."""
    small = dict(params=1e9, params_bytes=1e9, kv_bytes_per_token=0.0, max_batch_size=3)
    pool = _pool(requests=_requests([0.0, 1.0, 15.0], 1000, [70_000, 70_000, 10]), **small)
    _run(pool, 60)
    p = prefill_time(1000, 1e9, FLOPS, MFU)
    step = decode_step_time(1, 1e9, 0.0, 0, HBM, MBU)
    done = pool.request_table()["done"].to_numpy()
    # r0 is paused by the prefills of r1 (at 1 s) and r2 (at 15 s); r1 by r2's.
    np.testing.assert_allclose(done[:2], [3 * p + 69_999 * step, 1.0 + 2 * p + 69_999 * step],
                               rtol=1e-9)
    assert pool.tokens_generated == pytest.approx(140_010, rel=1e-12)


def test_decode_level_from_batch_size():
    """Whole steps of pure decode: u_decode = 0.2 with one sequence, 0.45 with a full batch of 4
    (the default range, linear in the batch size)."""
    one = _pool(requests=_requests(0.0, 100, 100_000), max_batch_size=4)
    full = _pool(requests=_requests([0.0] * 4, 100, 100_000), max_batch_size=4)
    for pool, level in ((one, 0.2), (full, 0.45)):
        steps = _run(pool, 3)
        assert steps[2].u_decode == pytest.approx([level], rel=1e-12)
        assert steps[2].u_prefill == pytest.approx([0.0])


# -- bookkeeping on a real trace -------------------------------------------------------------------
@pytest.fixture(scope="module")
def trace_run():
    """First 10 minutes of the Azure code trace on one replica of 8 slots (busy enough to queue)."""
    trace = read_azure_trace()
    pool = _pool(requests=trace, max_batch_size=8)
    records = []
    for i in range(600):
        step = pool.advance(float(i), 1.0, 1.0)
        records.append((step, pool.n_arrived, pool.n_completed, pool.n_in_flight,
                        pool.queue_length))
    return trace, pool, records


def test_conservation_of_requests(trace_run):
    """Every arrived request is completed, in flight or queued, at every step; the arrivals are
    the trace's own count up to that time, and the table agrees with the counters."""
    trace, pool, records = trace_run
    t = trace["arrival"].to_numpy()
    for i, (step, arrived, done, in_flight, queued) in enumerate(records):
        assert arrived == np.searchsorted(t, i + 1.0, side="left")  # steps own [t0, t0 + dt)
        assert arrived == done + in_flight + queued
        assert step.queue_length == queued
    assert max(r[4] for r in records) > 0 and records[-1][3] > 0  # the check is not vacuous
    table = pool.request_table()
    arrived = table["arrival"] < pool.t
    assert pool.n_completed == table["done"].notna().sum()
    assert pool.n_in_flight == (table["admitted"].notna() & table["done"].isna()).sum()
    assert pool.queue_length == (arrived & table["admitted"].isna()).sum()
    assert sum(r[0].arrived for r in records) == arrived.sum()
    assert sum(r[0].completed for r in records) == pool.n_completed


def test_conservation_of_tokens(trace_run):
    """Tokens reported per step add up to the tokens of the requests: all of a completed request's
    and the part done of one in flight (sums of ~10⁵ floats: rel 1e-9)."""
    trace, pool, records = trace_run
    table = pool.request_table()
    out = sum(r[0].output_tokens.sum() for r in records)
    prompt = sum(r[0].prompt_tokens.sum() for r in records)
    done = table["done"].notna()
    assert out == pytest.approx(pool.tokens_generated, rel=1e-12)
    assert out == pytest.approx(table["generated"].sum(), rel=1e-9)
    assert prompt == pytest.approx(table["prompt_done"].sum(), rel=1e-9)
    np.testing.assert_allclose(table.loc[done, "generated"], table.loc[done, "output_tokens"],
                               rtol=1e-9)
    np.testing.assert_array_equal(table.loc[done, "prompt_done"], table.loc[done, "prompt_tokens"])
    completed_tokens = table.loc[done, "output_tokens"].sum()
    in_flight = table["admitted"].notna() & ~done
    in_flight_tokens = table.loc[in_flight, "generated"].sum()
    assert out == pytest.approx(completed_tokens + in_flight_tokens, rel=1e-9)


def test_utilisation_bounds_and_latency_order(trace_run):
    """Utilisation is a time share: 0 ≤ u_prefill + u_decode ≤ 1; latencies are ordered
    0 ≤ wait ≤ TTFT ≤ end-to-end."""
    _, pool, records = trace_run
    u = np.array([r[0].u for r in records])
    assert u.min() >= 0 and u.max() <= 1 + 1e-12
    assert u.mean() > 0.3  # a busy replica
    assert np.all(pool.queue_wait >= 0)
    assert np.all(pool.ttft >= pool.queue_wait) and np.all(pool.e2e_latency >= pool.ttft)


@pytest.mark.parametrize("trial", range(6))
def test_fifo_and_invariants_under_random_load(trial):
    """Random pools, loads (light to overloaded), bursts of simultaneous arrivals, zero-token
    requests, step lengths and clocks with stalls: at every step arrived = completed + in flight
    + queued and 0 ≤ u ≤ 1; requests are admitted in arrival order, never before they arrive,
    and admission times never go backwards (one FIFO queue served in time order); every
    completed request generated exactly its output tokens."""
    rng = np.random.default_rng(trial)
    R, B = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    req = poisson_arrivals(float(rng.uniform(0.5, 15)), 100.0, seed=trial)
    if trial % 2:
        req["arrival"] = np.floor(req["arrival"] / 4) * 4  # bursts
    if trial % 3 == 0:
        req["prompt_tokens"] = rng.integers(0, 3, len(req))
        req["output_tokens"] = rng.integers(0, 3, len(req))
    pool = _pool(R, requests=req, max_batch_size=B, flops_peak=rng.uniform(0.1, 1, R) * FLOPS,
                 max_prefill_tokens=float(rng.uniform(500, 10_000)))
    out = 0.0
    while pool.t < 100.0:
        clock = rng.uniform(0.2, 1, R) * (rng.uniform(size=R) > 0.1)
        step = pool.advance(pool.t, float(rng.choice([0.1, 0.5, 1.0, 3.7])), clock)
        out += step.output_tokens.sum()
        assert pool.n_arrived == pool.n_completed + pool.n_in_flight + pool.queue_length
        assert np.all(step.u >= 0) and np.all(step.u <= 1 + 1e-12)
    table = pool.request_table()
    admitted = table["admitted"].dropna()
    assert admitted.index.equals(pd.RangeIndex(len(admitted)))  # a prefix: FIFO
    assert np.all(np.diff(admitted.to_numpy()) >= 0)
    assert np.all(admitted >= table["arrival"][admitted.index])
    done = table["done"].notna()
    np.testing.assert_allclose(table.loc[done, "generated"], table.loc[done, "output_tokens"],
                               rtol=1e-9)
    assert out == pytest.approx(table["generated"].sum(), rel=1e-9, abs=1e-9)


# -- queueing theory -------------------------------------------------------------------------------
def test_littles_law_and_pollaczek_khinchine_on_md1():
    """One replica with one slot and identical requests is an M/D/1 queue.

    * Service time = prefill + 19 decode steps, exactly (rel 1e-9: float sums).
    * Little's law: the time-mean queue length (sampled at the 2 s step ends) equals arrival rate
      × mean wait; both come from one sample path, so only the sampling of the queue at step ends
      separates them — ~1 % across seeds here; accept 3 %.
    * Pollaczek–Khinchine: mean wait = ρS / (2(1 − ρ)). Over ~14,000 customers at ρ = 0.6 the
      sample mean scatters by ~3 % (1σ, from runs with six seeds); accept 10 %.
    """
    prompt, output = 1000, 20
    t_pf, t_dec = _service_time(prompt, output)
    S = t_pf + t_dec
    rho, T, dt = 0.6, 12_000.0, 2.0
    req = poisson_arrivals(rho / S, T, seed=1)
    req["prompt_tokens"], req["output_tokens"] = prompt, output
    pool = _pool(requests=req, max_batch_size=1)
    queue = np.array([s.queue_length for s in _run(pool, T, dt)])
    wait = pool.queue_wait
    np.testing.assert_allclose(pool.e2e_latency - wait, S, rtol=1e-9)
    lam = pool.n_arrived / T
    assert queue.mean() == pytest.approx(lam * wait.mean(), rel=0.03)
    assert wait.mean() == pytest.approx(rho * S / (2 * (1 - rho)), rel=0.10)


# -- clocks ----------------------------------------------------------------------------------------
def test_half_clock_halves_throughput():
    """A backlog of identical requests (always queued): at clock 0.5 the pool does in 2t what it
    does in t at clock 1 — the same requests done and the same tokens (rel 1e-9: float paths
    differ), so throughput is exactly proportional to the clock."""
    def backlog():
        return _pool(2, requests=_requests(np.zeros(400), 2000, 50), max_batch_size=8)

    fast, slow = backlog(), backlog()
    f_steps = _run(fast, 60, clock=1.0)
    s_steps = _run(slow, 120, clock=np.array([0.5, 0.5]))
    assert slow.queue_length > 0 and fast.queue_length > 0
    assert slow.n_completed == fast.n_completed > 0
    assert slow.tokens_generated == pytest.approx(fast.tokens_generated, rel=1e-9)
    assert slow.prompt_tokens_processed == pytest.approx(fast.prompt_tokens_processed, rel=1e-9)
    rate_fast = fast.tokens_generated / 60
    rate_slow = slow.tokens_generated / 120
    assert rate_slow / rate_fast == pytest.approx(0.5, rel=1e-9)
    # Busy all the time in both cases: utilisation is demand, the clock acts in the power model.
    assert np.mean([s.u.mean() for s in f_steps[1:]]) == pytest.approx(
        np.mean([s.u.mean() for s in s_steps[1:]]), rel=0.05)


def test_stalled_replica_gets_no_work_and_resumes():
    """Clock 0 on replica 1: it produces nothing and takes no new requests; a sequence it holds
    resumes when the clock returns."""
    pool = _pool(2, requests=_requests([0.0, 0.0, 3.0, 3.2], 1000, 400))
    _run(pool, 2)  # one request per replica, both decoding
    mid = pool.request_table()
    assert sorted(mid["replica"][:2]) == [0, 1]
    stalled = _run(pool, 3, clock=np.array([1.0, 0.0]))
    assert all(s.output_tokens[1] == 0 and s.u[1] == 0 for s in stalled)
    table = pool.request_table()
    assert list(table["replica"][2:]) == [0, 0]
    before = table["generated"][table["replica"] == 1].sum()
    resumed = _run(pool, 1)
    assert resumed[0].output_tokens[1] > 0
    assert pool.request_table()["generated"][table["replica"] == 1].sum() > before


def test_deterministic():
    """Same inputs, same outputs, bit for bit."""
    req = poisson_arrivals(4.0, 120.0, seed=3)
    a, b = _pool(3, requests=req), _pool(3, requests=req)
    for sa, sb in zip(_run(a, 120), _run(b, 120), strict=True):
        np.testing.assert_array_equal(sa.u, sb.u)
        np.testing.assert_array_equal(sa.output_tokens, sb.output_tokens)
    np.testing.assert_array_equal(a.e2e_latency, b.e2e_latency)


def test_submit_later_requests():
    """Requests can be added while running (arrivals not before the last one)."""
    pool = _pool()
    _run(pool, 2)
    pool.submit([2.5], [100], [3])
    _run(pool, 2)
    assert pool.n_completed == 1 and pool.n_submitted == 1


# -- errors ----------------------------------------------------------------------------------------
def test_advance_errors():
    pool = _pool(2)
    with pytest.raises(ValueError, match=r"starts at t0=5.0 s but the pool is at 0.0 s"):
        pool.advance(5.0, 1.0)
    with pytest.raises(ValueError, match="dt must be > 0"):
        pool.advance(0.0, 0.0)
    with pytest.raises(ValueError, match="clock must be a number or 2 numbers"):
        pool.advance(0.0, 1.0, np.array([1.0, -0.1]))
    with pytest.raises(ValueError, match="clock must be a number or 2 numbers"):
        pool.advance(0.0, 1.0, np.ones(3))


def test_submit_errors():
    pool = _pool(requests=_requests([1.0, 2.0], 10, 10))
    with pytest.raises(ValueError, match="not before the last submitted arrival"):
        pool.submit([1.5], [10], [10])
    with pytest.raises(ValueError, match="non-decreasing"):
        pool.submit([3.0, 2.5], [10, 10], [10, 10])
    with pytest.raises(ValueError, match="token counts must be finite and >= 0"):
        pool.submit([3.0], [-1], [10])
    with pytest.raises(ValueError, match="differ in length"):
        pool.submit([3.0], [1, 2], [10])


@pytest.mark.parametrize("kw, match", [
    (dict(n=0), "n_replicas must be a whole number >= 1"),
    (dict(params=-1.0), "params must be finite and > 0"),
    (dict(hbm_bandwidth=np.array([1.0, 2.0, 3.0])), r"hbm_bandwidth must be a number or 2 numbers"),
    (dict(params=np.array([1.0, 2.0])), r"params must be a number, got shape \(2,\)"),
    (dict(max_batch_size=0), "max_batch_size must be a whole number >= 1"),
    (dict(u_decode=(0.2, 1.5)), "utilisations must be in 0..1"),
    (dict(kv_bytes_per_token=-1.0), "kv_bytes_per_token must be finite and >= 0"),
])
def test_constructor_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        _pool(**({"n": 2} | kw))
