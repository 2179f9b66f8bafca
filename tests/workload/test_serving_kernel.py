"""The compiled event loop of the inference pool against the numpy reference.

:mod:`twin.workload.serving_kernel` runs the same events with the same equations in the same
order as ``InferencePool``'s numpy loop, so the comparison is exact (bit for bit), not within a
tolerance: same requests and clocks give the same admissions, first tokens, completions, tokens
and utilisations per step. The cases cover what the schedule branches on: a KV cache that fills,
stalled replicas (clock 0, as a tripped chip), a throttled clock, chunked prefill, several
requests per replica and instant, the Azure code trace, the Splitwise configurations served with
the fitted serving model, and a whole thermal step of sub-steps per call.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from twin.catalog import load_catalog
from twin.workload.inference import InferencePool, choose_kernel
from twin.workload.traces import poisson_arrivals, read_azure_trace

pytest.importorskip("numba")

# A 70B model in FP8 on 4-chip tensor-parallel replicas (Trn3-like figures, as in test_inference).
ARGS = dict(params=70e9, params_bytes=70e9, kv_bytes_per_token=327_680.0, flops_peak=4 * 2.517e15,
            hbm_bandwidth=4 * 4.9e12, mfu=0.5, mbu=0.7, tp=4, layers=80, d_model=8192,
            fabric_bandwidth=1e11, collective_latency=1e-5, t_layer=1.7e-4)


def _serve(kernel, requests, n_rep, steps, dt, clocks, **kw):
    pool = InferencePool(n_rep, requests=requests, kernel=kernel, **{**ARGS, **kw})
    out = [pool.advance(pool.t, dt, clocks(i)) for i in range(steps)]
    return pool, out


def _assert_same(a, b):
    pool_a, steps_a = a
    pool_b, steps_b = b
    pd.testing.assert_frame_equal(pool_a.request_table(), pool_b.request_table(), check_exact=True)
    for x, y in zip(steps_a, steps_b):
        for field in x._fields:
            np.testing.assert_array_equal(getattr(x, field), getattr(y, field), err_msg=field)
    assert pool_a.tokens_generated == pool_b.tokens_generated
    assert pool_a.prompt_tokens_processed == pool_b.prompt_tokens_processed
    assert (pool_a.n_completed, pool_a.queue_length, pool_a.n_in_flight) == (
        pool_b.n_completed, pool_b.queue_length, pool_b.n_in_flight)
    # Not vacuous: requests queued, were served and finished.
    assert pool_a.n_completed > 100


def _clocks(n_rep, seed, stall=0.05):
    """Per step, replica clocks in [0.6, 1] with some replicas stalled (0)."""
    rng = np.random.default_rng(seed)
    table = np.where(rng.random((4000, n_rep)) < stall, 0.0, 0.6 + 0.4 * rng.random((4000, n_rep)))
    return lambda i: table[i]


@pytest.mark.parametrize("kw", [
    dict(kv_capacity=2.0e10),  # the KV cache fills: requests wait for room
    dict(prefill_chunk=512.0, max_batch_size=16),  # chunked prefill beside decoding
    dict(max_batch_size=4, max_prefill_tokens=1e9),  # several admissions per replica and instant
], ids=["kv-limited", "chunked", "small-batches"])
def test_compiled_equals_reference_on_seeded_poisson_pool(kw):
    """12 replicas, 40 requests/s of Poisson arrivals (seeded), 100 ms steps with throttled and
    stalled replicas."""
    requests = poisson_arrivals(40.0, 120.0, np.random.default_rng(7))
    runs = [_serve(k, requests, 12, 1200, 0.1, _clocks(12, 1), **kw) for k in ("numba", "numpy")]
    _assert_same(*runs)


def test_compiled_equals_reference_on_the_azure_trace():
    """The Azure code trace replayed at 4× speed on 6 replicas of 8 slots, 1 s steps."""
    trace = read_azure_trace()
    trace = trace.assign(arrival=trace["arrival"] / 4.0)
    runs = [_serve(k, trace, 6, 300, 1.0, _clocks(6, 2, stall=0.02), max_batch_size=8)
            for k in ("numba", "numpy")]
    _assert_same(*runs)


def test_compiled_equals_reference_on_the_splitwise_configurations(monkeypatch):
    """Every Splitwise configuration served with the catalogue's chips and the fitted overheads
    (twin.workload.measured.serving_comparison): the same ratios to the measurements."""
    from twin.workload.measured import serving_comparison

    catalog = load_catalog()
    tables = []
    for kernel in ("numba", "numpy"):
        monkeypatch.setenv("TWIN_KERNEL", kernel)
        tables.append(serving_comparison(catalog))
    pd.testing.assert_frame_equal(*tables, check_exact=True)


def test_advance_steps_equals_one_step_at_a_time():
    """A thermal step of 10 sub-steps in one call gives the sub-steps of 10 calls, both kernels."""
    requests = poisson_arrivals(40.0, 60.0, np.random.default_rng(3))
    clocks = _clocks(12, 4)
    for kernel in ("numba", "numpy"):
        one, steps = _serve(kernel, requests, 12, 600, 0.1, lambda i: clocks(i // 10))
        block = InferencePool(12, requests=requests, kernel=kernel, **ARGS)
        for s in range(60):
            b = block.advance_steps(block.t, 0.1, 10, clocks(s))
            for k in range(10):
                ref = steps[10 * s + k]
                for field in ref._fields:
                    np.testing.assert_array_equal(getattr(b, field)[k], getattr(ref, field), err_msg=field)
        pd.testing.assert_frame_equal(one.request_table(), block.request_table(), check_exact=True)
        assert block.tokens_generated == one.tokens_generated and block.t == one.t


def test_served_ahead_and_rolled_back():
    """What the quiet blocks do with a pool at full clock (twin.workload.inference_job.Inference.ahead):
    a block of 30 thermal steps of 10 sub-steps served in one call gives the 30 steps' sub-steps
    of one call each; a checkpoint taken before it and rolled back after, then 12 of its steps
    served again, leaves the pool as if it had served only those 12 (request table, counters and
    totals equal to the bit to a pool that never went ahead, and the same steps after). The
    compiled loop only (the checkpoint is the pool's, whatever its loop; the numpy loop's
    ``advance_steps`` is its ``advance`` repeated: test above)."""
    requests = poisson_arrivals(40.0, 60.0, np.random.default_rng(5))
    clocks = _clocks(12, 6)
    for kernel in ("numba",):
        steady = InferencePool(12, requests=requests, kernel=kernel, **ARGS)
        ahead = InferencePool(12, requests=requests, kernel=kernel, **ARGS)
        for s in range(10):  # (requests in flight, some replicas throttled or stalled)
            for pool in (steady, ahead):
                pool.advance_steps(pool.t, 0.1, 10, clocks(s))
        saved = ahead.checkpoint(ahead.t + 31 * 10 * 0.1)
        block = ahead.advance_steps(ahead.t, 0.1, 300, 1.0)
        ref = [steady.advance_steps(steady.t, 0.1, 10, 1.0) for _ in range(30)]
        for field in ref[0]._fields:
            np.testing.assert_array_equal(getattr(block, field), np.concatenate([getattr(r, field) for r in ref]),
                                          err_msg=field)
        assert ahead.n_completed == steady.n_completed > 0
        ahead.rollback(saved)
        steady = InferencePool(12, requests=requests, kernel=kernel, **ARGS)
        for s in range(10):
            steady.advance_steps(steady.t, 0.1, 10, clocks(s))
        ahead.advance_steps(ahead.t, 0.1, 120, 1.0)
        for s in range(10, 22):
            steady.advance_steps(steady.t, 0.1, 10, 1.0)
        pd.testing.assert_frame_equal(ahead.request_table(), steady.request_table(), check_exact=True)
        for s in range(22, 60):  # and on, at other clocks
            a, b = (pool.advance_steps(pool.t, 0.1, 10, clocks(s)) for pool in (ahead, steady))
            for field in a._fields:
                np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
        pd.testing.assert_frame_equal(ahead.request_table(), steady.request_table(), check_exact=True)
        assert (ahead.t, ahead.tokens_generated, ahead.prompt_tokens_processed, ahead.n_completed,
                ahead.queue_length) == (steady.t, steady.tokens_generated, steady.prompt_tokens_processed,
                                        steady.n_completed, steady.queue_length)
        assert steady.n_completed > 1000


def test_kernel_choice(monkeypatch):
    """``auto`` picks the compiled loop when numba is installed; TWIN_KERNEL forces either; a
    wrong name is refused."""
    monkeypatch.delenv("TWIN_KERNEL", raising=False)
    assert choose_kernel() == "numba"
    monkeypatch.setenv("TWIN_KERNEL", "numpy")
    assert choose_kernel() == "numpy"
    assert choose_kernel("numba") == "numba"
    with pytest.raises(ValueError, match="unknown kernel 'cuda'"):
        choose_kernel("cuda")
