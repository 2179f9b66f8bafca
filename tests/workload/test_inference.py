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
    """Prefill, then output − 1 decode steps of a batch of one over a growing context (each
    step reads the weights and KV cache and does the sequence's 2N FLOPs)."""
    decode = sum(decode_step_time(1, WEIGHT_BYTES, KV, prompt + 1 + i, HBM, mbu, params=PARAMS,
                                  flops_peak=FLOPS, mfu=mfu) for i in range(output - 1))
    return _prefill(prompt, mfu, mbu), decode


def _prefill(prompt, mfu=MFU, mbu=MBU):
    return prefill_time(prompt, PARAMS, FLOPS, mfu, params_bytes=WEIGHT_BYTES, hbm_bandwidth=HBM, mbu=mbu)


def _activity(flops, bytes_read):
    """∫u dt of work at full clock with the pool's default u_tensor = u_hbm = 1 [s]."""
    return flops / FLOPS + bytes_read / HBM


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
    done after 4 more decode steps of a batch of one. Step 0's utilisation is the work done as a
    share of the peaks: prefill 2N·1000 FLOPs and one weight read, decode 4 × (2N FLOPs + the
    weights + the KV cache at contexts 1001…1004) [rel 1e-9: float sums]."""
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
    assert step.u_prefill == pytest.approx([_activity(2 * PARAMS * 1000, WEIGHT_BYTES)], rel=1e-9)
    kv_read = KV * sum(1001 + i for i in range(4))
    assert step.u_decode == pytest.approx([_activity(4 * 2 * PARAMS, 4 * WEIGHT_BYTES + kv_read)], rel=1e-9)
    assert step.prompt_tokens == pytest.approx([1000.0])
    assert step.output_tokens == pytest.approx([5.0])
    assert (step.arrived, step.completed, step.queue_length) == (1, 1, 0)
    assert pool.tokens_generated == pytest.approx(5.0) and pool.prompt_tokens_processed == 1000.0


def test_prefill_spanning_steps_and_faster_replica():
    """A 40,000-token prompt (4.45 s of prefill) keeps u_prefill at its compute-bound level for
    whole steps (MFU of the peak plus the one weight read spread over the batch); a replica with
    twice the FLOP/s takes half the time (its TTFT is checked exactly)."""
    pool = _pool(2, requests=_requests([0.0, 0.0], 40_000, 2),
                 flops_peak=np.array([FLOPS, 2 * FLOPS]), max_prefill_tokens=40_000)
    steps = _run(pool, 6)
    t_pf = _prefill(40_000)
    table = pool.request_table().set_index("replica")
    assert table.loc[0, "first_token"] == pytest.approx(t_pf, rel=1e-9)
    assert table.loc[1, "first_token"] == pytest.approx(t_pf / 2, rel=1e-9)
    level = _activity(2 * PARAMS * 40_000, WEIGHT_BYTES) / t_pf
    assert level == pytest.approx(MFU, rel=0.01)  # compute-bound
    assert [s.u_prefill[0] for s in steps[:4]] == pytest.approx([level] * 4, rel=1e-9)
    assert steps[4].u_prefill[0] == pytest.approx(level * (t_pf - 4), rel=1e-9)
    assert sum(s.prompt_tokens[0] for s in steps) == pytest.approx(40_000, rel=1e-12)


def test_simultaneous_requests_spread_over_idle_replicas():
    """Four requests at the same instant on four idle replicas: one each, all with TTFT = the
    prefill time of one prompt (no batching, no queueing)."""
    pool = _pool(4, requests=_requests([0.5] * 4, 2000, 3))
    _run(pool, 2)
    table = pool.request_table()
    assert sorted(table["replica"]) == [0, 1, 2, 3]
    np.testing.assert_allclose(pool.ttft, _prefill(2000), rtol=1e-9)


def test_prefill_batches_respect_max_prefill_tokens():
    """Five 3,000-token prompts queued at t = 0 on one replica, 8,192 tokens per prefill batch:
    batches of 2, 2 and 1, prefilled back to back (prefill has priority over decode), so the
    first tokens come at T(6,000), 2·T(6,000) and 2·T(6,000) + T(3,000)."""
    pool = _pool(requests=_requests([0.0] * 5, 3000, 100), max_prefill_tokens=8192)
    _run(pool, 3)
    t6, t3 = (_prefill(n) for n in (6000, 3000))
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
    with no KV reads and no compute cost (a huge FLOP rate) a step costs W / (B·MBU) whatever the
    batch, so each finish time is its start plus the prefills that paused it plus 69,999 steps
    (rel 1e-9: 10⁵ float additions)."""
    small = dict(params=1e9, params_bytes=1e9, kv_bytes_per_token=0.0, max_batch_size=3, flops_peak=FLOPS * 1e9)
    pool = _pool(requests=_requests([0.0, 1.0, 15.0], 1000, [70_000, 70_000, 10]), **small)
    _run(pool, 60)
    p = prefill_time(1000, 1e9, FLOPS * 1e9, MFU, params_bytes=1e9, hbm_bandwidth=HBM, mbu=MBU)
    step = decode_step_time(1, 1e9, 0.0, 0, HBM, MBU)
    done = pool.request_table()["done"].to_numpy()
    # r0 is paused by the prefills of r1 (at 1 s) and r2 (at 15 s); r1 by r2's.
    np.testing.assert_allclose(done[:2], [3 * p + 69_999 * step, 1.0 + 2 * p + 69_999 * step],
                               rtol=1e-9)
    assert pool.tokens_generated == pytest.approx(140_010, rel=1e-12)


@pytest.mark.parametrize("batch", [1, 4, 256])
def test_decode_utilisation_from_bytes_and_flops(batch):
    """Whole steps of pure decode (no KV reads, so every step is alike): by hand,
    u = (u_hbm·W/B + u_tensor·2N·b/F) / (W/(B·MBU) + 2N·b/(F·MFU)) with u_hbm = 1.13 and
    u_tensor = 1.42 (the A100 fit): HBM-bound at a small batch, rising towards the tensor
    term at a large one (rel 1e-9: float sums)."""
    kw = dict(kv_bytes_per_token=0.0, max_batch_size=batch, u_hbm=1.13, u_tensor=1.42, max_prefill_tokens=1e6)
    pool = _pool(requests=_requests([0.0] * batch, 100, 10_000_000), **kw)
    steps = _run(pool, 5)
    t_step = WEIGHT_BYTES / (HBM * MBU) + 2 * PARAMS * batch / (FLOPS * MFU)
    u = (1.13 * WEIGHT_BYTES / HBM + 1.42 * 2 * PARAMS * batch / FLOPS) / t_step
    assert steps[4].u_decode == pytest.approx([u], rel=1e-9)
    assert steps[4].u_prefill == pytest.approx([0.0])
    assert steps[4].output_tokens == pytest.approx([batch / t_step], rel=1e-9)


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
    """Utilisation is bounded by what a phase reaches, 0 ≤ u ≤ MBU + MFU; latencies are ordered
    0 ≤ wait ≤ TTFT ≤ end-to-end."""
    _, pool, records = trace_run
    u = np.array([r[0].u for r in records])
    assert u.min() >= 0 and u.max() <= MBU + MFU + 1e-12
    assert u.mean() > 0.3  # a busy replica
    assert np.all(pool.queue_wait >= 0)
    assert np.all(pool.ttft >= pool.queue_wait) and np.all(pool.e2e_latency >= pool.ttft)


@pytest.mark.parametrize("trial", range(6))
def test_fifo_and_invariants_under_random_load(trial):
    """Random pools, loads (light to overloaded), bursts of simultaneous arrivals, zero-token
    requests, step lengths and clocks with stalls: at every step arrived = completed + in flight
    + queued and 0 ≤ u ≤ MBU + MFU (the most a phase reaches with unit activities); requests are admitted in arrival order, never before they arrive,
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
        assert np.all(step.u >= 0) and np.all(step.u <= MBU + MFU + 1e-12)
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
def test_half_clock_halves_compute_bound_throughput():
    """A backlog of identical requests on chips whose HBM is effectively unlimited (all time is
    compute and per-pass overhead, which follow the core clock): at clock 0.5 the pool does in 2t
    what it does in t at clock 1 — the same requests and tokens (rel 1e-8: the two runs take
    different float paths through ~10⁴ events)."""
    def backlog():
        return _pool(2, requests=_requests(np.zeros(400), 2000, 500), max_batch_size=8,
                     hbm_bandwidth=HBM * 1e9, t_layer=1e-4, layers=80, d_model=8192)

    fast, slow = backlog(), backlog()
    f_steps = _run(fast, 30, clock=1.0)
    s_steps = _run(slow, 60, clock=np.array([0.5, 0.5]))
    assert slow.queue_length > 0 and fast.queue_length > 0
    assert slow.n_completed == fast.n_completed > 0
    assert slow.tokens_generated == pytest.approx(fast.tokens_generated, rel=1e-8)
    assert slow.prompt_tokens_processed == pytest.approx(fast.prompt_tokens_processed, rel=1e-8)
    assert (slow.tokens_generated / 60) / (fast.tokens_generated / 30) == pytest.approx(0.5, rel=1e-8)
    # Busy all the time in both: utilisation is demand (activity at full clock), the same; the
    # device model's P_dyn·u·f^α over twice the time gives energy per token ∝ f^(α−1).
    assert np.mean([s.u.mean() for s in s_steps[1:]]) == pytest.approx(
        np.mean([s.u.mean() for s in f_steps[1:]]), rel=0.05)


def test_memory_bound_decode_barely_slows_at_half_clock():
    """Decode of a batch of one reads the weights at the HBM's pace, which does not follow the
    core clock: at clock 0.5 only the step's matrix work doubles. By hand, the step time goes
    from W/(B·MBU) + 2N/(F·MFU) to W/(B·MBU) + 2·2N/(F·MFU): under 2 % slower here, as decode
    under a power cap barely slows (Splitwise, ISCA 2024: token phases tolerate capping)."""
    def one():
        return _pool(requests=_requests(0.0, 10, 10_000_000), kv_bytes_per_token=0.0)

    full, half = one(), one()
    _run(full, 1)
    _run(half, 1)  # the prefill, at full clock in both
    n_full = sum(s.output_tokens[0] for s in _run(full, 2))
    n_half = sum(s.output_tokens[0] for s in _run(half, 2, clock=0.5))
    base = WEIGHT_BYTES / (HBM * MBU)
    work = 2 * PARAMS / (FLOPS * MFU)
    slow = n_half / n_full
    assert slow == pytest.approx((base + work) / (base + 2 * work), rel=1e-6)
    assert slow > 0.98


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
    (dict(mfu=1.5), "mfu and mbu must be in"),
    (dict(tp=0), "tp must be a whole number >= 1"),
    (dict(kv_capacity=0.0), "kv_capacity must be > 0"),
    (dict(kv_bytes_per_token=-1.0), "kv_bytes_per_token must be finite and >= 0"),
])
def test_constructor_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        _pool(**({"n": 2} | kw))


# -- KV-cache capacity and chunked prefill ---------------------------------------------------------
def test_kv_cache_overfill_queues_requests():
    """A replica with room for the KV caches of three requests (each reserves prompt + output
    tokens × KV bytes) and slots for sixteen: of twenty requests arriving together, three run at
    a time and the rest wait in the queue (not served beyond HBM); every one completes in the end,
    and the reserved KV cache never exceeds the capacity (exact: byte counts)."""
    need = (1000 + 200) * KV
    pool = _pool(requests=_requests(np.zeros(20), 1000, 200), max_batch_size=16,
                 kv_capacity=3.5 * need)
    peak_in_flight, queued = 0, []
    while pool.n_completed < 20:
        step = pool.advance(pool.t, 0.5)
        peak_in_flight = max(peak_in_flight, pool.n_in_flight)
        queued.append(step.queue_length)
        assert pool._kv_used.max() <= 3.5 * need * (1 + 1e-12)
    assert peak_in_flight == 3
    assert max(queued) == 17 and queued[-1] == 0
    wait = pool.queue_wait
    assert np.count_nonzero(wait > 0) == 17  # all but the first three waited for memory
    with pytest.raises(ValueError, match="needs .* GB of KV cache; a replica holds"):
        pool.submit([pool.t + 1], [10_000], [0])


def test_chunked_prefill_keeps_decoding():
    """A long prompt arrives while a sequence decodes. Whole prefill: decoding pauses for the
    prefill. Chunked (512 tokens a pass): decoding continues, interleaved with the chunks, so
    tokens keep coming and the prompt's first token comes later by the decode steps taken in
    between — by hand, the prefill work (with one pass overhead per chunk) divided by its time
    share t_c / (t_c + t_d) of a chunk pass and a decode step (0.5 %: the context, and so t_d,
    grows by a few hundred tokens of 70 GB of weights read per step)."""
    req = _requests([0.0, 2.0], [100, 30_000], [100_000, 1])
    kw = dict(max_prefill_tokens=1e6, layers=80, d_model=8192, t_layer=1e-4)
    whole, chunked = _pool(requests=req, **kw), _pool(requests=req, prefill_chunk=512, **kw)
    w_steps, c_steps = _run(whole, 12), _run(chunked, 12)
    t_pf = whole.request_table()["first_token"][1] - 2.0
    assert t_pf > 3  # the prefill spans step 4
    assert w_steps[4].output_tokens[0] == 0  # paused
    assert c_steps[4].output_tokens[0] > 0  # still decoding
    p = chunked
    passes = np.ceil(30_000 / 512)
    work = 30_000 * p._tau_tok[0] + 30_000 ** 2 * p._tau_sq[0] + passes * p._t_pass
    ttft = chunked.request_table()["first_token"][1] - 2.0
    t_c = 512 * p._tau_tok[0] + p._t_pass
    ctx = 100 + sum(s.output_tokens[0] for s in c_steps[:2])  # context when the prompt arrives
    t_d = (WEIGHT_BYTES + ctx * KV) / (HBM * MBU) + p._t_pass + p._tau_tok[0]
    assert ttft == pytest.approx(work * (t_c + t_d) / t_c, rel=0.005)
    assert ttft > t_pf
