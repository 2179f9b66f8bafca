"""LLM inference: roofline service rates and a vectorised pool of model replicas.

Service rates follow from the hardware by roofline reasoning: prefill (the prompt, all tokens at
once) is compute-bound, decode (one token per sequence per step) is bound by reading the weights
and the KV cache from HBM, a read shared by every sequence in the batch. So a chip with more
FLOP/s prefills faster and a chip with more HBM bandwidth decodes faster, for the right reason.

:class:`InferencePool` serves a request table (see :mod:`twin.workload.traces`) on N replicas —
each a group of chips holding one copy of the model, e.g. a tensor-parallel group — with a
central FIFO queue and continuous batching, and reports per time step how much of the step each
replica spent prefilling and decoding (its demanded utilisation) and how many tokens it produced.

Units: seconds, bytes, bytes/s, FLOP/s, tokens; utilisation and clocks are fractions [1].
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

#: FLOPs per parameter per token of a forward pass (one multiply and one add per weight).
FLOPS_PER_PARAM_PER_TOKEN = 2.0
#: Keys and values: two cached vectors per layer and KV head.
KV_TENSORS = 2
#: Slot phases.
EMPTY, PREFILL, DECODE = 0, 1, 2
#: Output tokens left below which a sequence counts as finished [tokens] (decode is tracked in
#: fractional steps; this absorbs rounding only).
_DONE_TOKENS = 1e-9
#: Decode-step counter above which a replica's counters are shifted back to 0, so that fractional
#: steps keep their precision [1].
_K_REBASE = 65536.0
#: Guard against a scheduling bug looping for ever within one step.
_MAX_EVENTS_PER_STEP = 1_000_000


# -- roofline service rates -----------------------------------------------------------------------
def kv_bytes_per_token(layers, kv_heads, head_dim, bytes_per_value):
    """KV-cache size of one token of context.

    Parameters
    ----------
    layers : int or ndarray
        Transformer layers [1].
    kv_heads : int or ndarray
        Key/value heads per layer (fewer than query heads with grouped-query attention) [1].
    head_dim : int or ndarray
        Dimension of one head [1].
    bytes_per_value : float or ndarray
        Bytes per cached number, e.g. 2 for BF16, 1 for FP8 [B].

    Returns
    -------
    float or ndarray
        KV cache per token [B].

    Notes
    -----
    kv = 2 · layers · kv_heads · head_dim · bytes (a key and a value vector per layer and head).
    Llama-2-70B (80 layers, 8 KV heads of 128, BF16): 327,680 B per token.

    References
    ----------
    .. [1] R. Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023
       (arXiv:2211.05102, 2022), section 2.
    """
    return KV_TENSORS * np.asarray(layers) * kv_heads * head_dim * bytes_per_value


def prefill_time(prompt_tokens, params, flops_peak, mfu):
    """Time to prefill a prompt (compute-bound).

    Parameters
    ----------
    prompt_tokens : float or ndarray
        Prompt tokens processed [tokens] (the sum over a prefill batch for a batch).
    params : float or ndarray
        Model parameters [1].
    flops_peak : float or ndarray
        Peak dense throughput of the chips serving the model, at the model's number format
        [FLOP/s].
    mfu : float or ndarray
        Model FLOPs utilisation reached in prefill, 0..1 [1].

    Returns
    -------
    float or ndarray
        Prefill time [s].

    Notes
    -----
    t_prefill = 2 · N · n_prompt / (F_peak · MFU).

    A forward pass costs about 2 FLOPs per parameter per token [2]_; the attention-score FLOPs
    (2 · layers · context · d_model per token) are left out — about 1.5 % for a 70B model at
    1,500 tokens. Prefill runs many tokens through each weight it reads, so it sits right of the
    roofline ridge point and is compute-bound [1]_, [3]_.

    References
    ----------
    .. [1] R. Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023
       (arXiv:2211.05102, 2022).
    .. [2] J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361, 2020,
       section 2.1.
    .. [3] P. Patel et al., "Splitwise: Efficient Generative LLM Inference Using Phase
       Splitting", ISCA 2024.
    """
    return FLOPS_PER_PARAM_PER_TOKEN * params * np.asarray(prompt_tokens, dtype=float) / (
        flops_peak * mfu)


def decode_step_time(batch_size, params_bytes, kv_bytes_per_token, context_tokens, hbm_bandwidth,
                     mbu):
    """Time of one decode step of a batch (memory-bound); every sequence gains one token.

    Parameters
    ----------
    batch_size : float or ndarray
        Sequences decoding together [1].
    params_bytes : float or ndarray
        Bytes of model weights read per step (parameters × bytes per parameter) [B].
    kv_bytes_per_token : float or ndarray
        KV cache per token of context [B] (see :func:`kv_bytes_per_token`).
    context_tokens : float or ndarray
        Mean context length of the sequences in the batch (prompt + generated so far) [tokens].
    hbm_bandwidth : float or ndarray
        HBM bandwidth of the chips serving the model [B/s].
    mbu : float or ndarray
        Model bandwidth utilisation reached in decode, 0..1 [1].

    Returns
    -------
    float or ndarray
        Step time [s], shared by all sequences of the batch.

    Notes
    -----
    t_step = (W + b · c̄ · kv) / (B_HBM · MBU),

    with W the weight bytes, b the batch size, c̄ the mean context and kv the KV bytes per token.
    Each step reads every weight once for the whole batch and each sequence's KV cache once.
    Valid while the step's 2 · N · b FLOPs take less time than this read, i.e. for b below the
    ridge point (F_peak · MFU · W) / (2 · N · B_HBM · MBU) — about 180 sequences for an FP8
    model on a 2.517 PFLOP/s, 4.9 TB/s chip at MFU 0.5 and MBU 0.7 [1]_, [2]_.

    References
    ----------
    .. [1] R. Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023
       (arXiv:2211.05102, 2022).
    .. [2] S. Williams, A. Waterman and D. Patterson, "Roofline: an insightful visual performance
       model for multicore architectures", Communications of the ACM 52(4), 2009.
    .. [3] Databricks, "LLM Inference Performance Engineering: Best Practices", 2023 (defines MBU).
    """
    b = np.asarray(batch_size, dtype=float)
    return (params_bytes + b * context_tokens * kv_bytes_per_token) / (hbm_bandwidth * mbu)


def decode_tokens_per_second(batch_size, params_bytes, kv_bytes_per_token, context_tokens,
                             hbm_bandwidth, mbu):
    """Decode throughput of a batch, over all its sequences.

    Parameters
    ----------
    batch_size, params_bytes, kv_bytes_per_token, context_tokens, hbm_bandwidth, mbu
        As for :func:`decode_step_time` [1], [B], [B], [tokens], [B/s], [1].

    Returns
    -------
    float or ndarray
        Generated tokens per second, summed over the batch [tokens/s]; one sequence sees
        1 / t_step.

    Notes
    -----
    r = b / t_step: a larger batch shares the weight read and raises throughput until the KV
    reads (or the compute ridge, see :func:`decode_step_time`) dominate.
    """
    return np.asarray(batch_size, dtype=float) / decode_step_time(
        batch_size, params_bytes, kv_bytes_per_token, context_tokens, hbm_bandwidth, mbu)


def decode_time(steps, batch_size, params_bytes, kv_bytes_per_token, context_tokens,
                hbm_bandwidth, mbu):
    """Time of consecutive decode steps of a fixed batch whose context grows by one per step.

    Parameters
    ----------
    steps : float or ndarray
        Decode steps k (tokens generated per sequence); fractional steps interpolate [1].
    batch_size, params_bytes, kv_bytes_per_token, hbm_bandwidth, mbu
        As for :func:`decode_step_time` [1], [B], [B], [B/s], [1].
    context_tokens : float or ndarray
        Mean context length at the first step [tokens].

    Returns
    -------
    float or ndarray
        Time [s].

    Notes
    -----
    The sum of :func:`decode_step_time` over contexts c̄, c̄ + 1, …, c̄ + k − 1:

    T(k) = (k · W + kv · b · (k · c̄ + k (k − 1) / 2)) / (B_HBM · MBU),

    exact for whole k and a smooth, increasing interpolation between them (W > 0).
    :func:`decode_steps` inverts it.
    """
    k = np.asarray(steps, dtype=float)
    b = np.asarray(batch_size, dtype=float)
    return (k * params_bytes + kv_bytes_per_token * b * (k * context_tokens + 0.5 * k * (k - 1.0))
            ) / (hbm_bandwidth * mbu)


def decode_steps(duration, batch_size, params_bytes, kv_bytes_per_token, context_tokens,
                 hbm_bandwidth, mbu):
    """Decode steps of a fixed batch completed in a given time (inverse of :func:`decode_time`).

    Parameters
    ----------
    duration : float or ndarray
        Time spent decoding [s].
    batch_size, params_bytes, kv_bytes_per_token, context_tokens, hbm_bandwidth, mbu
        As for :func:`decode_time` [1], [B], [B], [tokens], [B/s], [1].

    Returns
    -------
    float or ndarray
        Steps k (fractional) [1].

    Notes
    -----
    The positive root of a·k² + β·k − R·T = 0 with a = kv·b/2, β = W + kv·b·(c̄ − 1/2)
    and R = B_HBM·MBU, in the cancellation-free form k = 2RT / (β + √(β² + 4aRT)).
    """
    b = np.asarray(batch_size, dtype=float)
    rt = np.asarray(duration, dtype=float) * hbm_bandwidth * mbu
    a = 0.5 * kv_bytes_per_token * b
    beta = params_bytes + kv_bytes_per_token * b * (context_tokens - 0.5)
    return 2.0 * rt / (beta + np.sqrt(beta * beta + 4.0 * a * rt))


# -- the pool -------------------------------------------------------------------------------------
class PoolStep(NamedTuple):
    """What an :class:`InferencePool` did in one time step.

    Attributes
    ----------
    u_prefill : ndarray, shape (replicas,)
        Step-mean utilisation from prefill: share of the step spent prefilling × ``u_prefill`` [1].
    u_decode : ndarray, shape (replicas,)
        Step-mean utilisation from decode: share of the step spent decoding × the decode level
        for the batch size [1].
    prompt_tokens : ndarray, shape (replicas,)
        Prompt tokens prefilled in the step [tokens].
    output_tokens : ndarray, shape (replicas,)
        Tokens generated in the step [tokens] (fractional: decode is tracked in fractional steps).
    arrived : int
        Requests that arrived in the step.
    completed : int
        Requests that finished in the step.
    queue_length : int
        Requests waiting in the queue at the end of the step.
    """

    u_prefill: np.ndarray
    u_decode: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    arrived: int
    completed: int
    queue_length: int

    @property
    def u(self) -> np.ndarray:
        """Total step-mean utilisation per replica [1]."""
        return self.u_prefill + self.u_decode


def _positive(name, value, shape=()):
    """``value`` as a float (or an array of ``shape``), checked finite and > 0."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim and arr.shape != shape:
        numbers = f" or {shape[0]} numbers" if shape else ""
        raise ValueError(f"InferencePool: {name} must be a number{numbers}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"InferencePool: {name} must be finite and > 0, got {value}")
    return np.broadcast_to(arr, shape).copy() if shape else float(arr)


class InferencePool:
    """Replicas of one model serving a FIFO request queue with continuous batching.

    Parameters
    ----------
    n_replicas : int
        Replicas (model copies) [1]; each is a group of chips of one type, e.g. a
        tensor-parallel group.
    params : float
        Model parameters [1].
    params_bytes : float
        Bytes of weights per replica (parameters × bytes per parameter) [B].
    kv_bytes_per_token : float
        KV cache per token of context [B] (see :func:`kv_bytes_per_token`).
    flops_peak : float or ndarray, shape (n_replicas,)
        Peak dense throughput of one replica (all its chips) at the model's number format
        [FLOP/s].
    hbm_bandwidth : float or ndarray, shape (n_replicas,)
        HBM bandwidth of one replica (all its chips) [B/s].
    mfu : float, optional
        Model FLOPs utilisation in prefill [1]. Default 0.5 (estimate).
    mbu : float, optional
        Model bandwidth utilisation in decode [1]. Default 0.7 (estimate).
    max_batch_size : int, optional
        Sequences a replica holds at once (prefilling or decoding) [1]. Default 64.
    max_prefill_tokens : float, optional
        Prompt tokens a replica admits into one prefill batch [tokens]; the first request of a
        batch is always admitted. Default 8,192.
    u_prefill : float, optional
        Utilisation while prefilling [1]. Default 1 (compute-bound, near TDP).
    u_decode : (float, float), optional
        Utilisation while decoding with a batch of one and with a full batch [1], linear in
        between. Default (0.2, 0.45), from decode drawing 20–43 % of TDP on H200 (see
        CATALOGUE-SOURCES.md). The device model maps u to power as P_idle + (P_max − P_idle)·u,
        so for a chip idling at a fraction i of TDP, a decode draw of a fraction p of TDP is
        u = (p − i) / (1 − i); pass that to match a measured draw exactly.
    requests : pandas.DataFrame, optional
        Request table to serve (``arrival`` [s], ``prompt_tokens``, ``output_tokens``), as from
        :func:`~twin.workload.traces.read_azure_trace` or
        :func:`~twin.workload.traces.poisson_arrivals`. More can be added with :meth:`submit`.
    t_start : float, optional
        Simulation time at which the pool starts [s]; arrivals are on the same clock. Default 0.

    Notes
    -----
    *Schedule* (continuous batching as in Orca [3]_ and vLLM [4]_, prefill first). Arriving
    requests join one FIFO queue and leave it in order, each to the replica that can start it
    earliest (ties: the least loaded). A replica with free slots that is not prefilling admits
    what has arrived — up to its free slots and ``max_prefill_tokens`` per batch; replicas free
    at the same instant take turns — and prefills the batch, which pauses its decoding. The
    prefill yields each request's first token (time to first token). Otherwise the replica
    decodes all its sequences together, one token each per step, until one finishes, a request
    arrives for a free slot, or the time step ends.

    *Service* (roofline; see :func:`prefill_time` and :func:`decode_step_time`). At relative
    clock f a replica prefills at f · F_peak · MFU / (2N) tokens/s and decodes with step time
    t_step / f: service slows in proportion to the clock. k decode steps take
    :func:`decode_time`; steps are tracked as fractions within a time step.

    *Time*. Within :meth:`advance` each replica runs its own event clock through the step (events:
    prefill done, a sequence done, an arrival); replicas wait for each other only where they
    compete for queued requests, so admissions happen in time order. The loop is over events,
    vectorised over replicas and their sequences, never over requests. Utilisation is the
    time-weighted mean over the step. Arrivals in [t0, t0 + dt) belong to the step.

    Not modelled: KV-cache capacity limits on the batch, chunked prefill, the compute floor of
    decode at very large batches, speculative decoding, prefix caching.

    References
    ----------
    .. [1] R. Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023
       (arXiv:2211.05102, 2022).
    .. [2] P. Patel et al., "Splitwise: Efficient Generative LLM Inference Using Phase
       Splitting", ISCA 2024.
    .. [3] G.-I. Yu et al., "Orca: A Distributed Serving System for Transformer-Based Generative
       Models", OSDI 2022.
    .. [4] W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with
       PagedAttention", SOSP 2023.
    """

    def __init__(self, n_replicas: int, *, params: float, params_bytes: float,
                 kv_bytes_per_token: float, flops_peak, hbm_bandwidth, mfu: float = 0.5,
                 mbu: float = 0.7, max_batch_size: int = 64, max_prefill_tokens: float = 8192,
                 u_prefill: float = 1.0, u_decode: tuple[float, float] = (0.2, 0.45),
                 requests: pd.DataFrame | None = None, t_start: float = 0.0):
        if int(n_replicas) != n_replicas or n_replicas < 1:
            raise ValueError("InferencePool: n_replicas must be a whole number >= 1, "
                             f"got {n_replicas}")
        if int(max_batch_size) != max_batch_size or max_batch_size < 1:
            raise ValueError("InferencePool: max_batch_size must be a whole number >= 1, "
                             f"got {max_batch_size}")
        R = self.n_replicas = int(n_replicas)
        B = self.max_batch_size = int(max_batch_size)
        self.params = _positive("params", params)
        self.params_bytes = _positive("params_bytes", params_bytes)
        kv = float(kv_bytes_per_token)
        if not np.isfinite(kv) or kv < 0:
            raise ValueError("InferencePool: kv_bytes_per_token must be finite and >= 0, "
                             f"got {kv_bytes_per_token}")
        self.kv_bytes_per_token = kv
        self.flops_peak = _positive("flops_peak", flops_peak, (R,))
        self.hbm_bandwidth = _positive("hbm_bandwidth", hbm_bandwidth, (R,))
        self.mfu = _positive("mfu", mfu)
        self.mbu = _positive("mbu", mbu)
        self.max_prefill_tokens = _positive("max_prefill_tokens", max_prefill_tokens)
        self.u_prefill = float(u_prefill)
        lo, hi = (float(x) for x in u_decode)
        if not (0 <= self.u_prefill <= 1 and 0 <= lo <= 1 and 0 <= hi <= 1):
            raise ValueError("InferencePool: utilisations must be in 0..1, "
                             f"got u_prefill={u_prefill}, u_decode={u_decode}")
        self.u_decode = (lo, hi)
        # Full-clock service rates per replica.
        self._prefill_rate = self.flops_peak * self.mfu / (FLOPS_PER_PARAM_PER_TOKEN * self.params)
        self._read_rate = self.hbm_bandwidth * self.mbu  # [B/s]
        # Slots (replica × sequence). A decoding slot finishes when its replica's decode-step
        # counter K reaches the slot's k_end; it has generated output − (k_end − K) tokens and
        # holds ctx0 + (K − k0) tokens of context. Decode steps thus touch one number per replica.
        self._req = np.full((R, B), -1, dtype=np.int64)
        self._phase = np.zeros((R, B), dtype=np.int8)
        self._kend = np.zeros((R, B))
        self._k0 = np.zeros((R, B))
        self._ctx0 = np.zeros((R, B))
        # Per replica.
        self._K = np.zeros(R)  # decode steps done (reset when the replica's decode batch empties)
        self._n_occ = np.zeros(R, dtype=np.int64)  # slots held
        self._n_dec = np.zeros(R, dtype=np.int64)  # slots decoding
        self._ctx_sum = np.zeros(R)  # context tokens of the decoding slots
        self._kend_min = np.full(R, np.inf)  # K at which the next sequence finishes
        self._prefill_left = np.zeros(R)  # prompt tokens left in the current prefill batch
        self._prefill_batch = np.zeros(R)  # prompt tokens of the current prefill batch
        self._prefilling = np.zeros(R, dtype=bool)
        # Requests (grown by submit).
        self._n = 0
        self._head = 0  # first request not yet admitted (the queue is [head, arrived))
        self._n_done = 0
        self._cols: dict[str, np.ndarray] = {}
        self._alloc(0)
        self.t = float(t_start)
        self.tokens_generated = 0.0
        self.prompt_tokens_processed = 0.0
        if requests is not None:
            self.submit(requests["arrival"], requests["prompt_tokens"], requests["output_tokens"])

    # -- requests ------------------------------------------------------------------------------
    _REQUEST_FIELDS = {"arrival": np.nan, "prompt": 0.0, "output": 0.0, "admitted": np.nan,
                       "first_token": np.nan, "done": np.nan, "replica": -1}

    def _alloc(self, capacity: int) -> None:
        old = self._cols
        new = {}
        for name, fill in self._REQUEST_FIELDS.items():
            dtype = np.int64 if name == "replica" else float
            arr = np.full(capacity, fill, dtype=dtype)
            if name in old:
                arr[: self._n] = old[name][: self._n]
            new[name] = arr
        self._cols = new

    def submit(self, arrival, prompt_tokens, output_tokens) -> None:
        """Add requests to serve.

        Parameters
        ----------
        arrival : array_like
            Arrival times [s], non-decreasing and not before the last submitted arrival.
        prompt_tokens, output_tokens : array_like
            Prompt and output lengths [tokens], ≥ 0.

        Raises
        ------
        ValueError
            Arrays of different lengths, unsorted or non-finite arrivals, negative tokens.
        """
        a = np.asarray(arrival, dtype=float).ravel()
        p = np.asarray(prompt_tokens, dtype=float).ravel()
        o = np.asarray(output_tokens, dtype=float).ravel()
        if not a.size == p.size == o.size:
            raise ValueError("InferencePool.submit: arrival, prompt_tokens, output_tokens differ "
                             f"in length ({a.size}, {p.size}, {o.size})")
        if a.size == 0:
            return
        last = self._cols["arrival"][self._n - 1] if self._n else -np.inf
        if not (np.all(np.isfinite(a)) and np.all(np.diff(a) >= 0) and a[0] >= last):
            raise ValueError("InferencePool.submit: arrivals must be finite, non-decreasing and "
                             f"not before the last submitted arrival ({last} s)")
        if not (np.isfinite(p).all() and np.isfinite(o).all() and p.min() >= 0 and o.min() >= 0):
            raise ValueError("InferencePool.submit: token counts must be finite and >= 0")
        need = self._n + a.size
        if need > self._cols["arrival"].size:
            self._alloc(max(need, 2 * self._cols["arrival"].size, 1024))
        s = slice(self._n, need)
        self._cols["arrival"][s] = a
        self._cols["prompt"][s] = p
        self._cols["output"][s] = o
        self._n = need

    # -- stepping ------------------------------------------------------------------------------
    def advance(self, t0: float, dt: float, clock=1.0) -> PoolStep:
        """Serve requests over one time step [t0, t0 + dt).

        Parameters
        ----------
        t0 : float
            Start of the step [s]; must be the end of the previous step (the pool's ``t``).
        dt : float
            Step length [s], > 0.
        clock : float or ndarray, shape (n_replicas,)
            Relative clock of each replica over the step, normally in (0, 1] [1]: service rates
            scale with it. 0 stalls the replica (a tripped chip) and keeps new requests away.

        Returns
        -------
        PoolStep
            Per-replica utilisation split into prefill and decode, tokens prefilled and
            generated, and the step's arrivals, completions and final queue length.

        Raises
        ------
        ValueError
            ``t0`` is not the pool's time, ``dt`` ≤ 0, or a clock is negative or not finite.
        """
        R, B = self.n_replicas, self.max_batch_size
        if abs(t0 - self.t) > 1e-9 * max(1.0, abs(self.t)):
            raise ValueError(f"InferencePool.advance: step starts at t0={t0} s but the pool is at "
                             f"{self.t} s (steps must follow each other)")
        if not dt > 0:
            raise ValueError(f"InferencePool.advance: dt must be > 0 s, got {dt}")
        c = np.asarray(clock, dtype=float)
        c = np.full(R, float(c)) if c.ndim == 0 else c
        if c.shape != (R,) or not (np.isfinite(c).all() and c.min() >= 0):
            raise ValueError(f"InferencePool.advance: clock must be a number or {R} numbers, "
                             "finite and >= 0")
        t0 = self.t
        t_end = t0 + dt
        arrival = self._cols["arrival"]
        # A step owns the arrivals in [t0, t0 + dt).
        n_arrived_before = int(arrival[: self._n].searchsorted(t0, side="left"))
        n_arr_end = int(arrival[: self._n].searchsorted(t_end, side="left"))
        done_before = self._n_done

        prefill_rate = c * self._prefill_rate  # [tokens/s]
        read_rate = c * self._read_rate  # [B/s]
        tau = np.full(R, t0)
        t_prefill = np.zeros(R)  # time spent prefilling [s]
        u_dec_time = np.zeros(R)  # ∫ decode level dt [s]
        tok_p = np.zeros(R)
        tok_o = np.zeros(R)
        lo, hi = self.u_decode
        level_slope = (hi - lo) / (B - 1) if B > 1 else 0.0
        W, kv = self.params_bytes, self.kv_bytes_per_token
        K = self._K

        A = np.arange(R)
        for _ in range(_MAX_EVENTS_PER_STEP):
            tA = tau[A]
            queued = self._head < n_arr_end  # a request arrives (or waits) within the step
            if queued and arrival[self._head] <= tA.max():
                self._admit(A, tau, c, n_arr_end)
                queued = self._head < n_arr_end
            rem = t_end - tA
            seg = rem.copy()
            pf = self._prefilling[A]
            pf_any = np.count_nonzero(pf)
            b = self._n_dec[A]
            # Prefill: time to finish the current batch.
            if pf_any:
                rows = A[pf]
                pr = prefill_rate[rows]
                pl = self._prefill_left[rows]
                T_pf = np.divide(pl, pr, out=np.full(rows.size, np.inf), where=pr > 0)
                seg[pf] = np.minimum(rem[pf], T_pf)
            # Decode: time until the first sequence finishes.
            dec = (b > 0) & ~pf
            dec_any = np.count_nonzero(dec)
            if dec_any:
                drows = A[dec]
                bd = b[dec]
                kstar = self._kend_min[drows] - K[drows]
                rr = read_rate[drows]
                T_dec = np.full(drows.size, np.inf)
                md = rr > 0
                T_dec[md] = decode_time(kstar[md], bd[md], W, kv, self._ctx_sum[drows[md]] / bd[md],
                                        rr[md], 1.0)
                seg[dec] = np.minimum(seg[dec], T_dec)
            # Arrivals: replicas with a free slot stop at an arrival (at once if a request already
            # waits). The best placed (earliest, then least loaded) watches the queue head, the
            # next one the request after it, and so on for the arrivals left in the step.
            new_tau = tA + seg
            if queued:
                idx = ((self._n_occ[A] < B) & ~pf & (c[A] > 0)).nonzero()[0]
                if idx.size:
                    n_next = n_arr_end - self._head
                    if idx.size > 1:
                        key = np.maximum(tA[idx], arrival[self._head])
                        idx = idx[np.lexsort((self._n_occ[A[idx]], key))[:n_next]]
                    a_next = arrival[self._head: self._head + idx.size]
                    idx = idx[: a_next.size]
                    T_arr = np.maximum(a_next - tA[idx], 0.0)
                    hit = T_arr <= seg[idx]
                    idx = idx[hit]
                    seg[idx] = T_arr[hit]
                    new_tau[idx] = np.maximum(tA[idx] + T_arr[hit], a_next[hit])  # exactly then
            end = seg >= rem
            new_tau[end] = t_end
            tau[A] = new_tau

            # Prefill progress.
            if pf_any:
                sp = seg[pf]
                fin = sp >= T_pf
                done_tokens = np.where(fin, pl, np.minimum(sp * pr, pl))
                self._prefill_left[rows] = pl - done_tokens
                tok_p[rows] += done_tokens
                t_prefill[rows] += sp
                if np.count_nonzero(fin):
                    done_pf = rows[fin]
                    tok_o += self._first_tokens(done_pf, tau)
            # Decode progress: k steps for every decoding sequence of the replica.
            if dec_any:
                sd = seg[dec]
                fin = sd >= T_dec
                k = kstar.copy()
                part = ~fin
                if np.count_nonzero(part):
                    rp = drows[part]
                    k[part] = np.minimum(kstar[part], decode_steps(
                        sd[part], bd[part], W, kv, self._ctx_sum[rp] / bd[part], read_rate[rp],
                        1.0))
                K[drows] += k
                self._ctx_sum[drows] += k * bd
                tok_o[drows] += k * bd
                u_dec_time[drows] += sd * (lo + level_slope * (bd - 1))
                if np.count_nonzero(fin):
                    done_dec = drows[fin]
                    K[done_dec] = self._kend_min[done_dec]  # exact, so the finished slot hits 0
                    self._finish(done_dec, tau)
            A = A[~end]
            if A.size == 0:
                break
        else:  # pragma: no cover - a scheduling bug, not an input error
            raise RuntimeError(f"InferencePool.advance: more than {_MAX_EVENTS_PER_STEP} events in "
                               f"the step at t={t0} s")

        self.t = t_end
        self.tokens_generated += float(tok_o.sum())
        self.prompt_tokens_processed += float(tok_p.sum())
        running = c > 0  # a stalled replica does no work
        return PoolStep(
            u_prefill=np.where(running, t_prefill * (self.u_prefill / dt), 0.0),
            u_decode=np.where(running, u_dec_time / dt, 0.0),
            prompt_tokens=tok_p,
            output_tokens=tok_o,
            arrived=n_arr_end - n_arrived_before,
            completed=self._n_done - done_before,
            queue_length=n_arr_end - self._head,
        )

    def _admit(self, A, tau, c, n_arrived) -> None:
        """Move queued requests into free slots of ready replicas, in time order (vectorised).

        Requests leave the queue in FIFO order, each to the earliest free slot: replica r, at its
        own time τ_r, takes request j if j has arrived (a_j ≤ τ_r) and no replica could start it
        earlier — either j arrives just then (τ_r = a_j; a replica that reaches the arrival
        first gets it) or r is the furthest behind of the running replicas (τ_r = min τ), so
        none of them can free a slot sooner. Replicas at one instant share the queue round by
        round (least loaded first), each up to its free slots and ``max_prefill_tokens``. What
        cannot be admitted now waits for a later event.
        """
        B = self.max_batch_size
        cols = self._cols
        arrival = cols["arrival"]
        occ = self._n_occ[A]
        running = c[A] > 0
        ok = (occ < B) & ~self._prefilling[A] & running
        if not ok.any():
            return
        el, occ = A[ok], occ[ok]
        t_el = tau[el]
        head = self._head
        hi = min(n_arrived, int(arrival[:n_arrived].searchsorted(t_el.max(), "right")))
        m = hi - head
        if m <= 0:
            return
        t_min = tau[A[running]].min()
        if el.size > 1:
            order = np.lexsort((occ, t_el))
            el, t_el, occ = el[order], t_el[order], occ[order]
        # Slots in time order: per instant, round by round (each replica's first, then second...).
        rounds = min(int((B - occ).max()), m)
        if rounds == 1:
            i = np.arange(el.size)
            k = np.zeros(el.size, dtype=np.int64)
        else:
            k, i = np.nonzero(np.arange(rounds)[:, None] < (B - occ)[None, :])
            if t_el[-1] > t_el[0]:
                instant = np.r_[0, np.cumsum(t_el[1:] != t_el[:-1])]
                s = np.lexsort((i, k, instant[i]))
                k, i = k[s], i[s]
        t_slot = t_el[i]
        # Request n takes the first slot after request n − 1's whose time is ≥ its arrival (q_n):
        # p_n = max(p_(n−1) + 1, q_n), i.e. p_n = n + max over n' ≤ n of (q_n' − n').
        a_j = arrival[head:hi]
        n = np.arange(m)
        p = n + np.maximum.accumulate(t_slot.searchsorted(a_j, "left") - n)
        take = int(np.count_nonzero(p < t_slot.size))
        if take == 0:
            return
        p, a_j = p[:take], a_j[:take]
        j = head + n[:take]
        k, i, t_i = k[p], i[p], t_slot[p]
        fits = (t_i == a_j) | (t_i == t_min)
        if k.max() > 0:  # several requests per replica: keep each batch's prompt tokens in bounds
            tokens = cols["prompt"][j]
            s = np.argsort(i, kind="stable")
            g = i[s]
            csum = np.cumsum(tokens[s])
            first = np.r_[True, g[1:] != g[:-1]]
            before = (csum - tokens[s])[first]
            batch = np.empty(take)
            batch[s] = csum - before[np.cumsum(first) - 1]
            fits &= (k == 0) | (batch <= self.max_prefill_tokens)
        cut = take if fits.all() else int(np.argmin(fits))
        if cut == 0:
            return
        k, reps, j = k[:cut], el[i[:cut]], j[:cut]
        # The k-th empty slot of each chosen replica.
        empty = self._req[reps] < 0
        if k.max() > 0:
            empty &= np.cumsum(empty, axis=1) - 1 == k[:, None]
        slot = np.argmax(empty, axis=1)
        self._req[reps, slot] = j
        self._phase[reps, slot] = PREFILL
        prompt = cols["prompt"][j]
        if cut == 1:
            self._prefill_left[reps] += prompt
            self._prefill_batch[reps] += prompt
            self._n_occ[reps] += 1
        else:
            R = self.n_replicas
            added = np.bincount(reps, weights=prompt, minlength=R)
            self._prefill_left += added
            self._prefill_batch += added
            self._n_occ += np.bincount(reps, minlength=R)
        self._prefilling[reps] = True
        cols["admitted"][j] = tau[reps]
        cols["replica"][j] = reps
        self._head = head + cut

    def _first_tokens(self, rows, tau) -> np.ndarray:
        """Finish the prefill batches of ``rows``: each sequence gets its first token.

        Returns the tokens generated per replica.
        """
        r, s = np.nonzero(self._phase[rows] == PREFILL)
        reps = rows[r]
        req = self._req[reps, s]
        cols = self._cols
        cols["first_token"][req] = tau[reps]
        out = cols["output"][req]
        gen = np.minimum(out, 1.0)  # none for a request with no output
        K = self._K[reps]
        ctx0 = cols["prompt"][req] + gen
        kend = K + (out - gen)
        self._k0[reps, s] = K
        self._ctx0[reps, s] = ctx0
        self._kend[reps, s] = kend
        self._phase[reps, s] = DECODE
        self._prefilling[rows] = False
        self._prefill_left[rows] = 0.0
        self._prefill_batch[rows] = 0.0
        n = self.n_replicas
        self._n_dec += np.bincount(reps, minlength=n)
        self._ctx_sum += np.bincount(reps, weights=ctx0, minlength=n)
        np.minimum.at(self._kend_min, reps, kend)
        if np.count_nonzero(out == gen):  # a single output token: finished already
            self._finish(np.unique(reps[out == gen]), tau)
        return np.bincount(reps, weights=gen, minlength=n)

    def _finish(self, rows, tau) -> None:
        """Free the slots of the finished sequences of ``rows`` (each has at least one)."""
        K = self._K[rows]
        r, s = np.nonzero((self._phase[rows] == DECODE)
                          & (self._kend[rows] - K[:, None] <= _DONE_TOKENS))
        reps = rows[r]
        self._cols["done"][self._req[reps, s]] = tau[reps]
        self._req[reps, s] = -1
        self._phase[reps, s] = EMPTY
        self._n_done += r.size
        count = np.bincount(r, minlength=rows.size)
        self._n_occ[rows] -= count
        n_dec = self._n_dec[rows] - count
        self._n_dec[rows] = n_dec
        ctx = self._ctx0[reps, s] + (self._K[reps] - self._k0[reps, s])
        self._ctx_sum[rows] -= np.bincount(r, weights=ctx, minlength=rows.size)
        self._kend_min[rows] = np.where(self._phase[rows] == DECODE, self._kend[rows],
                                        np.inf).min(axis=1)
        empty = rows[n_dec == 0]  # an empty decode batch restarts its step counter
        self._K[empty] = 0.0
        self._ctx_sum[empty] = 0.0
        big = rows[self._K[rows] > _K_REBASE]  # a batch that never empties: keep K small
        if big.size:
            shift = self._K[big][:, None]
            self._kend[big] -= shift
            self._k0[big] -= shift
            self._kend_min[big] -= shift[:, 0]
            self._K[big] = 0.0

    # -- counters ------------------------------------------------------------------------------
    @property
    def n_submitted(self) -> int:
        """Requests submitted so far, arrived or not."""
        return self._n

    @property
    def n_arrived(self) -> int:
        """Requests arrived before the pool's time ``t`` (the steps so far own [t_start, t))."""
        return int(self._cols["arrival"][: self._n].searchsorted(self.t, side="left"))

    @property
    def n_completed(self) -> int:
        """Requests finished (last token generated)."""
        return self._n_done

    @property
    def n_in_flight(self) -> int:
        """Requests holding a slot (prefilling or decoding)."""
        return int((self._req >= 0).sum())

    @property
    def queue_length(self) -> int:
        """Requests arrived but not yet admitted to a replica."""
        return self.n_arrived - self._head

    def _completed(self) -> np.ndarray:
        return np.isfinite(self._cols["done"][: self._n])

    @property
    def ttft(self) -> np.ndarray:
        """Time to first token of each completed request, in arrival order [s]."""
        m = self._completed()
        return self._cols["first_token"][: self._n][m] - self._cols["arrival"][: self._n][m]

    @property
    def e2e_latency(self) -> np.ndarray:
        """End-to-end latency (arrival to last token) of each completed request [s]."""
        m = self._completed()
        return self._cols["done"][: self._n][m] - self._cols["arrival"][: self._n][m]

    @property
    def queue_wait(self) -> np.ndarray:
        """Time in the queue (arrival to admission) of each completed request [s]."""
        m = self._completed()
        return self._cols["admitted"][: self._n][m] - self._cols["arrival"][: self._n][m]

    def request_table(self) -> pd.DataFrame:
        """Every submitted request with its progress (for analysis, not for the step loop).

        Returns
        -------
        pandas.DataFrame
            ``arrival``, ``admitted``, ``first_token``, ``done`` [s] (NaN until they happen),
            ``replica`` (−1 until admitted), ``prompt_tokens``, ``output_tokens`` [tokens],
            ``prompt_done`` (prompt tokens prefilled; a batch in progress is shared in proportion
            to prompt length) and ``generated`` [tokens] (tokens produced so far).
        """
        n = self._n
        cols = {k: v[:n] for k, v in self._cols.items()}
        started = np.isfinite(cols["first_token"])
        generated = np.where(started, cols["output"], 0.0)
        prompt_done = np.where(started, cols["prompt"], 0.0)
        r, s = np.nonzero(self._req >= 0)
        req = self._req[r, s]
        dec = self._phase[r, s] == DECODE
        left = self._kend[r[dec], s[dec]] - self._K[r[dec]]
        generated[req[dec]] = cols["output"][req[dec]] - left
        pre = ~dec
        batch = self._prefill_batch[r[pre]]
        share = np.divide(batch - self._prefill_left[r[pre]], batch, out=np.zeros(batch.size),
                          where=batch > 0)
        prompt_done[req[pre]] = cols["prompt"][req[pre]] * share
        return pd.DataFrame({
            "arrival": cols["arrival"], "admitted": cols["admitted"],
            "first_token": cols["first_token"], "done": cols["done"], "replica": cols["replica"],
            "prompt_tokens": cols["prompt"], "output_tokens": cols["output"],
            "prompt_done": prompt_done, "generated": generated,
        })
