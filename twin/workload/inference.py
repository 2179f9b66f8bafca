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

import os
from typing import NamedTuple

import numpy as np
import pandas as pd

# Slot phases and the decode counters' thresholds (shared with the compiled event loop).
from twin.workload.pool_slots import DECODE, EMPTY, PREFILL
from twin.workload.pool_slots import DONE_TOKENS as _DONE_TOKENS
from twin.workload.pool_slots import K_REBASE as _K_REBASE

#: FLOPs per parameter per token of a forward pass (one multiply and one add per weight).
FLOPS_PER_PARAM_PER_TOKEN = 2.0
#: Keys and values: two cached vectors per layer and KV head.
KV_TENSORS = 2
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


#: Megatron-style tensor parallelism all-reduces the activations twice per layer (after the
#: attention block and after the MLP) [1].
ALLREDUCES_PER_LAYER = 2
#: Bytes per activation value exchanged in tensor-parallel all-reduces (BF16) [B].
ACTIVATION_BYTES = 2.0
#: Serving-stack overheads fitted to the Splitwise measurements (A100-80GB and H100-80GB serving
#: Llama-2-70B and BLOOM-176B at TP 2-8, vLLM-era software; MIT; twin/data/calibration/splitwise)
#: by ``benchmarks/fit_serving_model.py``: per layer and forward pass, kernel launches and the
#: small (normalisation, rotary, sampling) operations [s] ...
LAYER_OVERHEAD = 1.70e-4
#: ... and per step of a tensor-parallel all-reduce, the collective library's synchronisation
#: and launch cost on top of the fabric's latency [s].
COLLECTIVE_OVERHEAD = 1.79e-5


def model_shape(params):
    """Layers and model width of a dense transformer of ``params`` parameters, when not given.

    Parameters
    ----------
    params : float
        Parameters N [1].

    Returns
    -------
    (int, int)
        Layers L and model dimension d [1].

    Notes
    -----
    N ≈ 12 · L · d² (attention 4d² and MLP 8d² per layer) with the aspect ratio d ≈ 128 · L of
    the Llama and GPT-3 families (Llama-2-70B: 80 layers of 8,192; GPT-3 175B: 96 of 12,288), so
    L = (N / (12 · 128²))^(1/3). Llama-2-70B gives 71 layers of 9,060 (actual 80 of 8,192).

    References
    ----------
    .. [1] J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361, 2020,
       section 2.1 (N ≈ 12 · n_layer · d_model²).
    """
    layers = max(1, int(round((params / (12.0 * 128.0 ** 2)) ** (1.0 / 3.0))))
    return layers, int(round(128 * layers))


def tp_allreduce_time(message, tp, bandwidth, latency):
    """Tensor-parallel all-reduce of ``message`` bytes per chip over ``tp`` chips [s].

    Parameters
    ----------
    message : float or ndarray
        Activation bytes each chip holds [B].
    tp : int or ndarray
        Chips in the tensor-parallel group, p [1].
    bandwidth : float or ndarray
        Per-chip fabric bandwidth, one direction, β [B/s].
    latency : float or ndarray
        Time of one collective step, α [s] (fabric latency plus the collective library's).

    Returns
    -------
    float or ndarray
        Time [s]; 0 for p = 1.

    Notes
    -----
    Recursive halving and doubling (the latency-optimal algorithm NCCL and the Neuron runtime
    pick for the small messages of inference):
    T = 2 ⌈log₂ p⌉ α + 2 (p − 1)/p · n/β (Thakur, Rabenseifner and Gropp 2005). The Splitwise
    decode times favour this log₂ p growth over a ring's 2 (p − 1) (see README Fidelity).

    References
    ----------
    .. [1] R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of collective communication
       operations in MPICH", IJHPCA 19(1), 2005.
    """
    p = np.asarray(tp, dtype=float)
    steps = 2.0 * np.ceil(np.log2(np.maximum(p, 1.0)))
    return steps * latency + 2.0 * (p - 1.0) / p * np.asarray(message, dtype=float) / bandwidth


def forward_overhead(layers, tp, latency, t_layer):
    """Fixed time of one forward pass: per-layer software overhead and all-reduce latencies [s].

    Parameters
    ----------
    layers : int or ndarray
        Transformer layers L [1].
    tp : int or ndarray
        Tensor-parallel chips p [1].
    latency : float or ndarray
        Collective step latency α [s] (fabric + library).
    t_layer : float or ndarray
        Software overhead per layer [s].

    Returns
    -------
    float or ndarray
        L · t_layer + 2 L · 2 ⌈log₂ p⌉ · α [s].
    """
    return layers * t_layer + ALLREDUCES_PER_LAYER * layers * tp_allreduce_time(0.0, tp, 1.0, latency)


def prefill_time(prompt_tokens, params, flops_peak, mfu, *, square_tokens=None, params_bytes=0.0,
                 hbm_bandwidth=np.inf, mbu=1.0, layers=0, d_model=0, tp=1, bandwidth=np.inf, latency=0.0,
                 t_layer=0.0):
    """Time to prefill prompts in one forward pass (compute-bound).

    Parameters
    ----------
    prompt_tokens : float or ndarray
        Prompt tokens processed, n [tokens] (the sum over a prefill batch for a batch).
    params : float or ndarray
        Model parameters N [1].
    flops_peak : float or ndarray
        Peak dense throughput of the chips serving the model, at the model's number format
        [FLOP/s].
    mfu : float or ndarray
        Model FLOPs utilisation reached in prefill, 0..1 [1].
    square_tokens : float or ndarray, optional
        Σ s² over the batch's prompts of length s [tokens²], for the attention FLOPs; default n²
        (one prompt).
    params_bytes, hbm_bandwidth, mbu : float, optional
        Weight bytes W [B], HBM bandwidth [B/s] and its utilisation [1]: a pass cannot take less
        than reading the weights once (default: no floor).
    layers, d_model : int, optional
        Layers L and model dimension d [1]; 0 leaves out attention and collectives.
    tp : int, optional
        Tensor-parallel chips p [1].
    bandwidth, latency : float, optional
        Fabric bandwidth β [B/s] and collective step latency α [s].
    t_layer : float, optional
        Software overhead per layer and forward pass [s].

    Returns
    -------
    float or ndarray
        Prefill time [s].

    Notes
    -----
    t = max((2 N n + 2 L d Σ s²) / (F_peak · MFU), W / (B_HBM · MBU)) + L · t_layer
    + 2 L · T_ar(n · d · 2 B, p).

    A forward pass costs about 2 FLOPs per parameter per token [2]_, plus the causal attention
    scores and their weighted sum, 2 L d s² for a prompt of s tokens. Prefill runs many tokens
    through each weight it reads, so it sits right of the roofline ridge point and is
    compute-bound [1]_, [3]_. Tensor parallelism all-reduces the n × d activations twice per
    layer (:func:`tp_allreduce_time`).

    References
    ----------
    .. [1] R. Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023
       (arXiv:2211.05102, 2022).
    .. [2] J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361, 2020,
       section 2.1.
    .. [3] P. Patel et al., "Splitwise: Efficient Generative LLM Inference Using Phase
       Splitting", ISCA 2024.
    """
    n = np.asarray(prompt_tokens, dtype=float)
    sq = n * n if square_tokens is None else np.asarray(square_tokens, dtype=float)
    flops = FLOPS_PER_PARAM_PER_TOKEN * params * n + 2.0 * layers * d_model * sq
    coll = ALLREDUCES_PER_LAYER * layers * (tp_allreduce_time(n * d_model * ACTIVATION_BYTES, tp, bandwidth, 0.0))
    compute = np.maximum(flops / (flops_peak * mfu), params_bytes / (hbm_bandwidth * mbu))
    return compute + forward_overhead(layers, tp, latency, t_layer) + coll


def decode_step_time(batch_size, params_bytes, kv_bytes_per_token, context_tokens, hbm_bandwidth,
                     mbu, *, params=0.0, flops_peak=np.inf, mfu=1.0, layers=0, d_model=0, tp=1,
                     bandwidth=np.inf, latency=0.0, t_layer=0.0):
    """Time of one decode step of a batch (memory-bound); every sequence gains one token.

    Parameters
    ----------
    batch_size : float or ndarray
        Sequences decoding together, b [1].
    params_bytes : float or ndarray
        Bytes of model weights read per step, W [B].
    kv_bytes_per_token : float or ndarray
        KV cache per token of context [B] (see :func:`kv_bytes_per_token`).
    context_tokens : float or ndarray
        Mean context length of the sequences in the batch (prompt + generated so far) [tokens].
    hbm_bandwidth : float or ndarray
        HBM bandwidth of the chips serving the model [B/s].
    mbu : float or ndarray
        Model bandwidth utilisation reached in decode, 0..1 [1].
    params, flops_peak, mfu : float, optional
        Parameters N, peak dense throughput [FLOP/s] and its utilisation [1], for the step's
        2 N b FLOPs (default: none).
    layers, d_model, tp, bandwidth, latency, t_layer : optional
        As for :func:`prefill_time` (default: no overhead, no collectives).

    Returns
    -------
    float or ndarray
        Step time [s], shared by all sequences of the batch.

    Notes
    -----
    t_step = (W + b · c̄ · kv) / (B_HBM · MBU) + 2 N b / (F_peak · MFU) + L · t_layer
    + 2 L · T_ar(b · d · 2 B, p),

    with W the weight bytes, b the batch size, c̄ the mean context and kv the KV bytes per token.
    Each step reads every weight once for the whole batch and each sequence's KV cache once; the
    matrix work of the batch adds to it (a sum, not a max: the fitted utilisations absorb the
    overlap) and so do the fixed per-pass overheads, which dominate at high tensor parallelism
    (they are why the measured MBU falls from ~0.6 at TP 2 to ~0.2 at TP 8) [1]_, [2]_.

    References
    ----------
    .. [1] R. Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023
       (arXiv:2211.05102, 2022).
    .. [2] S. Williams, A. Waterman and D. Patterson, "Roofline: an insightful visual performance
       model for multicore architectures", Communications of the ACM 52(4), 2009.
    .. [3] Databricks, "LLM Inference Performance Engineering: Best Practices", 2023 (defines MBU).
    """
    b = np.asarray(batch_size, dtype=float)
    coll = ALLREDUCES_PER_LAYER * layers * tp_allreduce_time(b * d_model * ACTIVATION_BYTES, tp, bandwidth, 0.0)
    return ((params_bytes + b * context_tokens * kv_bytes_per_token) / (hbm_bandwidth * mbu)
            + FLOPS_PER_PARAM_PER_TOKEN * params * b / (flops_peak * mfu)
            + forward_overhead(layers, tp, latency, t_layer) + coll)


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


#: Share of a replica's HBM a serving stack gives to weights and KV cache (vLLM's default
#: ``gpu_memory_utilization``; the rest holds activations and the runtime) [1].
HBM_USABLE = 0.9


def pool_arguments(chip, tp, *, params, fmt, kv_bytes_per_token, layers=None, d_model=None,
                   link=(np.inf, 0.0), mfu=None, mbu=None, layer_overhead=None, collective_overhead=None,
                   max_batch_size=64, max_prefill_tokens=8192.0, prefill_chunk=None) -> dict:
    """Keyword arguments of :class:`InferencePool` for a model served on ``tp``-chip replicas.

    Parameters
    ----------
    chip : twin.catalog.Chip
        The catalogue entry of the chips (``flops`` per format, HBM, ``mfu``, ``mbu``,
        ``u_hbm``, ``u_tensor``).
    tp : int
        Chips per replica [1].
    params : float
        Model parameters [1].
    fmt : str
        Number format of weights and matrix work (:data:`twin.catalog.formats.FORMATS`).
    kv_bytes_per_token : float
        KV cache per token [B].
    layers, d_model : int, optional
        Model shape; default from ``params`` (:func:`model_shape`).
    link : (float, float)
        Scale-up fabric per-chip bandwidth [B/s] and step latency [s].
    mfu, mbu, layer_overhead, collective_overhead : optional
        Overrides of the catalogue's utilisations and of the fitted serving-stack overheads
        (:data:`LAYER_OVERHEAD`, :data:`COLLECTIVE_OVERHEAD`) [1], [1], [s], [s].

    Raises
    ------
    ValueError
        The chip has no peak for the format or no HBM figures, or the weights do not fit.
    """
    from twin.catalog.formats import bytes_per_param, compute_format

    cf = compute_format(fmt, chip.flops)
    if cf is None or chip.hbm_bandwidth is None:
        raise ValueError(f"no FLOPS or HBM figures to serve a {fmt} model")
    weights = params * bytes_per_param(fmt)
    hbm = chip.hbm_capacity.si * tp * HBM_USABLE if chip.hbm_capacity is not None else np.inf
    if weights >= hbm:
        raise ValueError(f"the {weights / 1e9:.0f} GB of weights do not fit in {tp} chips "
                         f"({hbm / 1e9:.0f} GB usable HBM); use more chips per replica or a narrower format")
    shape = model_shape(params)

    def pick(value, fig, default):
        return float(value) if value is not None else (fig.si if fig is not None else default)

    bandwidth, latency = link
    return dict(
        params=params, params_bytes=weights, kv_bytes_per_token=kv_bytes_per_token,
        flops_peak=chip.flops[cf].si * tp, hbm_bandwidth=chip.hbm_bandwidth.si * tp,
        mfu=pick(mfu, chip.mfu, 0.5), mbu=pick(mbu, chip.mbu, 0.94), max_batch_size=max_batch_size,
        max_prefill_tokens=max_prefill_tokens, tp=tp, layers=layers or shape[0], d_model=d_model or shape[1],
        fabric_bandwidth=bandwidth, collective_latency=latency + pick(collective_overhead, None, COLLECTIVE_OVERHEAD),
        t_layer=pick(layer_overhead, None, LAYER_OVERHEAD), kv_capacity=hbm - weights, prefill_chunk=prefill_chunk,
        u_hbm=pick(None, chip.u_hbm, 1.0), u_tensor=pick(None, chip.u_tensor, 1.0))


# -- the pool -------------------------------------------------------------------------------------
def choose_kernel(name: str | None = None) -> str:
    """The pool's event loop: ``name``, else ``TWIN_KERNEL``, else (``auto``) ``numba`` when it is
    installed, ``numpy`` otherwise.

    A pool advances every workload sub-step and its compiled loop saves ~1 ms of CPU per call on a
    few dozen replicas, so unlike the chip kernel (:func:`twin.power.kernels.choose`) any pool
    uses it when numba is there: numba's import (~0.5 s of CPU) pays for itself within a few
    hundred sub-steps.

    Raises
    ------
    ScenarioError
        ``TWIN_KERNEL`` names no kernel, or numba when it is not installed (one line naming the
        allowed values).
    ValueError
        The same for ``name``.
    """
    from twin.power.kernels import ENV, choose, numba_available

    picked = choose(0, name)  # checks the name (or TWIN_KERNEL); auto gives numpy for 0 devices
    if (name or os.environ.get(ENV, "") or "auto").strip().lower() == "auto":
        return "numba" if numba_available() else "numpy"
    return picked


class PoolStep(NamedTuple):
    """What an :class:`InferencePool` did in one time step.

    Attributes
    ----------
    u_prefill : ndarray, shape (replicas,)
        Step-mean utilisation (dynamic activity of each chip) from prefill [1].
    u_decode : ndarray, shape (replicas,)
        Step-mean utilisation from decode [1]. Both are ``u_tensor`` × the share of the dense
        peak and ``u_hbm`` × the share of the HBM bandwidth the phase reached, over the step.
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


def _increments(counts: np.ndarray, before: int) -> np.ndarray:
    """Step-by-step increments of cumulative integer ``counts`` that stood at ``before`` ahead of
    the first step: ``np.diff(counts, prepend=before)`` without its broadcasting and copies."""
    out = np.empty_like(counts)
    out[0] = counts[0] - before
    np.subtract(counts[1:], counts[:-1], out=out[1:])
    return out


def _pool_step(clock, dt, act, act_dec, tok_p, tok_o, arrived, completed, queue_length) -> PoolStep:
    """A :class:`PoolStep` from a step's accumulated activity ``act``/``act_dec`` [s] over ``dt``
    [s]: utilisation = activity / dt, zero on a stalled replica (``clock`` 0 does no work)."""
    running = clock > 0
    return PoolStep(
        u_prefill=np.where(running, act / dt, 0.0),
        u_decode=np.where(running, act_dec / dt, 0.0),
        prompt_tokens=tok_p,
        output_tokens=tok_o,
        arrived=arrived,
        completed=completed,
        queue_length=queue_length,
    )


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
        Model FLOPs utilisation in prefill (and of the decode step's matrix work) [1]. Default
        0.5 (the Splitwise fit; chips carry it in the catalogue).
    mbu : float, optional
        Bandwidth utilisation of the weight and KV reads in decode [1]. Default 0.94 (the
        Splitwise fit).
    max_batch_size : int, optional
        Sequences a replica holds at once (prefilling or decoding) [1]. Default 64.
    max_prefill_tokens : float, optional
        Prompt tokens a replica admits into one prefill batch [tokens]; the first request of a
        batch is always admitted. Default 8,192.
    tp : int, optional
        Chips per replica joined by tensor parallelism, p [1]. Default 1.
    layers, d_model : int, optional
        The model's layers and width [1], for attention FLOPs and tensor-parallel all-reduces.
        Default 0: left out.
    fabric_bandwidth : float, optional
        Per-chip bandwidth of the fabric joining a replica's chips, one direction [B/s].
    collective_latency : float, optional
        Time of one all-reduce step: the fabric's latency plus the collective library's [s].
    t_layer : float, optional
        Software overhead per layer and forward pass [s] (:data:`LAYER_OVERHEAD` is the fit).
    kv_capacity : float, optional
        HBM left for the KV cache in one replica [B]; a request is admitted only when its whole
        KV cache (prompt + output tokens) fits beside those in flight, otherwise it waits in the
        queue. Default: unlimited.
    prefill_chunk : float, optional
        Chunked prefill: prompts are processed in passes of this many tokens, interleaved with
        decode steps of the sequences already running, so decoding continues during a prefill.
        Default None: a prefill batch runs whole and pauses decoding.
    u_hbm, u_tensor : float, optional
        Utilisation (dynamic activity, :mod:`twin.power.device`) of a chip streaming HBM at its
        full bandwidth and of its tensor engines at their dense peak [1] (catalogue figures).
        Default 1.
    requests : pandas.DataFrame, optional
        Request table to serve (``arrival`` [s], ``prompt_tokens``, ``output_tokens``), as from
        :func:`~twin.workload.traces.read_azure_trace` or
        :func:`~twin.workload.traces.poisson_arrivals`. More can be added with :meth:`submit`.
    t_start : float, optional
        Simulation time at which the pool starts [s]; arrivals are on the same clock. Default 0.
    kernel : {"auto", "numpy", "numba"}, optional
        Implementation of the event loop (:func:`choose_kernel`): the numpy reference or the
        compiled loop of :mod:`twin.workload.serving_kernel`, which gives the same results bit
        for bit. Default: ``TWIN_KERNEL``, else numba when it is installed.

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

    *Service* (roofline with overheads; see :func:`prefill_time` and :func:`decode_step_time`).
    A prefill batch costs its FLOPs at F_peak · MFU plus one forward pass's fixed overhead and
    all-reduces; at relative clock f it takes 1/f as long. A decode step reads the weights and
    the KV caches at B_HBM · MBU (the memory clock does not follow the core clock) and adds
    the batch's matrix work and the fixed per-pass overheads, which do slow as 1/f. k decode
    steps take :func:`decode_time`; steps are tracked as fractions within a time step.

    *Power*. Each phase's utilisation is u_tensor × (FLOP rate / peak) + u_hbm × (byte rate /
    HBM bandwidth), per chip: decode at a small batch streams HBM (u ≈ u_hbm · MBU share), a
    large batch or a prefill adds tensor work, and the device's power limit binds when the sum
    passes 1. The fit to Splitwise A100 power is in README Fidelity.

    *Memory*. Each request reserves KV cache for its prompt and output tokens when admitted and
    frees it when done; with ``kv_capacity`` set, requests queue while HBM is full.

    *Time*. Within :meth:`advance` each replica runs its own event clock through the step (events:
    prefill done, a sequence done, an arrival); replicas wait for each other only where they
    compete for queued requests, so admissions happen in time order. The loop is over events,
    vectorised over replicas and their sequences, never over requests. Utilisation is the
    time-weighted mean over the step. Arrivals in [t0, t0 + dt) belong to the step.

    Not modelled: pre-emption and swapping of KV caches (requests wait instead), speculative
    decoding, prefix caching, the lower power of HBM traffic under a core-clock cap (activity
    is scaled with the core clock).

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
                 mbu: float = 0.94, max_batch_size: int = 64, max_prefill_tokens: float = 8192,
                 tp: int = 1, layers: int = 0, d_model: int = 0, fabric_bandwidth: float = np.inf,
                 collective_latency: float = 0.0, t_layer: float = 0.0, kv_capacity: float = np.inf,
                 prefill_chunk: float | None = None, u_hbm: float = 1.0, u_tensor: float = 1.0,
                 requests: pd.DataFrame | None = None, t_start: float = 0.0, kernel: str | None = None):
        self.kernel = choose_kernel(kernel)
        if int(n_replicas) != n_replicas or n_replicas < 1:
            raise ValueError("InferencePool: n_replicas must be a whole number >= 1, "
                             f"got {n_replicas}")
        if int(max_batch_size) != max_batch_size or max_batch_size < 1:
            raise ValueError("InferencePool: max_batch_size must be a whole number >= 1, "
                             f"got {max_batch_size}")
        if int(tp) != tp or tp < 1:
            raise ValueError(f"InferencePool: tp must be a whole number >= 1, got {tp}")
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
        if self.mfu > 1 or self.mbu > 1:
            raise ValueError(f"InferencePool: mfu and mbu must be in (0, 1], got {mfu}, {mbu}")
        self.max_prefill_tokens = _positive("max_prefill_tokens", max_prefill_tokens)
        self.tp = int(tp)
        self.layers, self.d_model = float(layers), float(d_model)
        self.kv_capacity = float(kv_capacity)
        if not self.kv_capacity > 0:
            raise ValueError(f"InferencePool: kv_capacity must be > 0, got {kv_capacity}")
        self.prefill_chunk = None if prefill_chunk is None else _positive("prefill_chunk", prefill_chunk)
        self.u_hbm, self.u_tensor = float(u_hbm), float(u_tensor)
        if not (self.u_hbm >= 0 and self.u_tensor >= 0):
            raise ValueError(f"InferencePool: u_hbm and u_tensor must be >= 0, got {u_hbm}, {u_tensor}")
        # Full-clock service costs per replica (see prefill_time and decode_step_time).
        F = self.flops_peak * self.mfu
        coll_tok = (ALLREDUCES_PER_LAYER * self.layers
                    * tp_allreduce_time(self.d_model * ACTIVATION_BYTES, self.tp, fabric_bandwidth, 0.0))
        self._tau_flop = FLOPS_PER_PARAM_PER_TOKEN * self.params / F  # matrix work [s/token]
        self._tau_coll = np.full(R, float(coll_tok))  # all-reduce transfer [s/token]
        self._tau_tok = self._tau_flop + coll_tok  # [s/token]
        self._tau_sq = 2.0 * self.layers * self.d_model / F  # attention [s/token²]
        self._t_pass = float(forward_overhead(self.layers, self.tp, collective_latency, t_layer))  # [s]
        self._read_rate = self.hbm_bandwidth * self.mbu  # [B/s], not clock-scaled
        # Decode activity per byte read and per sequence-step (full clock) [s/B], [s].
        self._a_byte = self.u_hbm / self.hbm_bandwidth
        self._a_seq = self.u_tensor * FLOPS_PER_PARAM_PER_TOKEN * self.params / self.flops_peak
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
        self._prefill_left = np.zeros(R)  # work left in the current prefill batch [full-clock s]
        self._prefill_batch = np.zeros(R)  # work of the current prefill batch [full-clock s]
        self._prefill_tokens = np.zeros(R)  # prompt tokens of the current prefill batch
        self._prefill_act = np.zeros(R)  # ∫u dt of the whole batch at full clock [s]
        self._kv_used = np.zeros(R)  # KV cache reserved by the requests in flight [B]
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
            Arrays of different lengths, unsorted or non-finite arrivals, negative tokens, or a
            request whose KV cache can never fit in a replica.
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
        kv_need = (p + o) * self.kv_bytes_per_token
        if np.isfinite(self.kv_capacity) and kv_need.max() > self.kv_capacity:
            i = int(np.argmax(kv_need > self.kv_capacity))
            raise ValueError(f"InferencePool.submit: request {self._n + i} ({p[i]:.0f} prompt + {o[i]:.0f} "
                             f"output tokens) needs {kv_need[i] / 1e9:.3g} GB of KV cache; a replica holds "
                             f"{self.kv_capacity / 1e9:.3g} GB beside the weights")
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
        R = self.n_replicas
        c = self._check_step(t0, dt, clock)
        t0 = self.t
        t_end = t0 + dt
        arrival = self._cols["arrival"]
        # A step owns the arrivals in [t0, t0 + dt).
        n_arrived_before = int(arrival[: self._n].searchsorted(t0, side="left"))
        n_arr_end = int(arrival[: self._n].searchsorted(t_end, side="left"))
        done_before = self._n_done

        act = np.zeros(R)  # ∫ u dt [s], prefill ...
        act_dec = np.zeros(R)  # ... and decode
        tok_p = np.zeros(R)
        tok_o = np.zeros(R)
        if self.kernel == "numba":
            self._advance_compiled(t0, t_end, c, n_arr_end, act, act_dec, tok_p, tok_o)
        else:
            self._advance_reference(t0, t_end, c, n_arr_end, act, act_dec, tok_p, tok_o)

        self.t = t_end
        self.tokens_generated += float(tok_o.sum())
        self.prompt_tokens_processed += float(tok_p.sum())
        return _pool_step(c, dt, act, act_dec, tok_p, tok_o, n_arr_end - n_arrived_before,
                          self._n_done - done_before, n_arr_end - self._head)

    def advance_steps(self, t0: float, dt: float, n: int, clock=1.0) -> PoolStep:
        """Serve ``n`` consecutive steps of ``dt`` from ``t0`` at one clock, in one call (the
        workload sub-steps of a thermal step): the same as ``n`` calls of :meth:`advance`, with
        the compiled kernel without returning to Python in between.

        Returns
        -------
        PoolStep
            Its fields with a leading axis of ``n`` steps: (n, replicas) and (n,).

        Raises
        ------
        ValueError
            As :meth:`advance`, or ``n`` < 1.
        """
        c = self._check_step(t0, dt, clock)
        if int(n) != n or n < 1:
            raise ValueError(f"InferencePool.advance_steps: n must be a whole number >= 1, got {n}")
        n = int(n)
        if self.kernel != "numba":
            steps = [self.advance(self.t, dt, c) for _ in range(n)]
            return PoolStep(*(np.array([getattr(s, f) for s in steps]) for f in PoolStep._fields))
        from twin.workload import serving_kernel

        R = self.n_replicas
        act, act_dec, tok_p, tok_o = (np.zeros((n, R)) for _ in range(4))
        n_arr, heads, n_done = (np.zeros(n, dtype=np.int64) for _ in range(3))
        arrived_before = int(self._cols["arrival"][: self._n].searchsorted(self.t, side="left"))
        done_before = self._n_done
        ctr = np.array([self._head, self._n_done], dtype=np.int64)
        done = serving_kernel.advance_steps(float(self.t), float(dt), n, *self._kernel_args(c), ctr,
                                            act, act_dec, tok_p, tok_o, n_arr, heads, n_done)
        self._head, self._n_done = int(ctr[0]), int(ctr[1])
        # The pool's time and totals, accumulated step by step as advance accumulates them (a
        # row sum is the sum of that row alone, the same pairwise sum).
        out_sums, prompt_sums = tok_o.sum(axis=1).tolist(), tok_p.sum(axis=1).tolist()
        t, generated, prompted = self.t, self.tokens_generated, self.prompt_tokens_processed
        for k in range(done):
            t += dt
            generated += out_sums[k]
            prompted += prompt_sums[k]
        self.t, self.tokens_generated, self.prompt_tokens_processed = t, generated, prompted
        if done < n:  # pragma: no cover - a scheduling bug, not an input error
            raise RuntimeError(f"InferencePool.advance: more than {_MAX_EVENTS_PER_STEP} events in "
                               f"the step at t={self.t} s")
        return _pool_step(c, dt, act, act_dec, tok_p, tok_o, _increments(n_arr, arrived_before),
                          _increments(n_done, done_before), n_arr - heads)

    #: The pool's state arrays the event loops update in place (what :meth:`checkpoint` keeps).
    _STATE = ("_req", "_phase", "_kend", "_k0", "_ctx0", "_K", "_n_occ", "_n_dec", "_ctx_sum", "_kend_min",
              "_prefill_left", "_prefill_batch", "_prefill_tokens", "_prefill_act", "_kv_used", "_prefilling")
    #: The request columns the event loops write.
    _WRITTEN = ("admitted", "first_token", "done", "replica")

    def checkpoint(self, t_end: float) -> tuple:
        """What serving up to ``t_end`` [s] can change, kept for :meth:`rollback`: the state
        arrays, counters, time and totals, and the written request columns of the requests
        in flight or arriving before ``t_end`` (the only ones a step touches: those it admits
        have arrived, those it finishes hold a slot)."""
        held = self._req[self._req >= 0]
        lo = min(self._head, int(held.min())) if held.size else self._head
        hi = max(lo, int(self._cols["arrival"][: self._n].searchsorted(t_end, side="right")))
        return (lo, tuple(getattr(self, name).copy() for name in self._STATE),
                {name: self._cols[name][lo:hi].copy() for name in self._WRITTEN},
                (self._head, self._n_done, self.t, self.tokens_generated, self.prompt_tokens_processed))

    def rollback(self, saved: tuple) -> None:
        """Put the pool back as it was at :meth:`checkpoint` ``saved`` (steps taken since up
        to its ``t_end`` are undone exactly: serving them again gives the same results)."""
        lo, arrays, cols, scalars = saved
        for name, values in zip(self._STATE, arrays):
            np.copyto(getattr(self, name), values)
        for name, values in cols.items():
            self._cols[name][lo: lo + values.size] = values
        self._head, self._n_done, self.t, self.tokens_generated, self.prompt_tokens_processed = scalars

    def _check_step(self, t0, dt, clock) -> np.ndarray:
        """The replicas' clocks (n_replicas,), after checking that a step at ``t0`` of ``dt``
        follows the last one."""
        R = self.n_replicas
        if abs(t0 - self.t) > 1e-9 * max(1.0, abs(self.t)):
            raise ValueError(f"InferencePool.advance: step starts at t0={t0} s but the pool is at "
                             f"{self.t} s (steps must follow each other)")
        if not dt > 0:
            raise ValueError(f"InferencePool.advance: dt must be > 0 s, got {dt}")
        c = np.asarray(clock, dtype=float)
        c = np.full(R, float(c)) if c.ndim == 0 else np.ascontiguousarray(c)
        if c.shape != (R,) or not (np.isfinite(c).all() and c.min() >= 0):
            raise ValueError(f"InferencePool.advance: clock must be a number or {R} numbers, "
                             "finite and >= 0")
        return c

    def _kernel_args(self, c) -> tuple:
        """The compiled loop's arguments from ``n`` (requests submitted) to ``replica``: the
        pool's constants, its state arrays and request columns (updated in place)."""
        cols = self._cols
        chunk = np.nan if self.prefill_chunk is None else float(self.prefill_chunk)
        return (int(self._n), c, _MAX_EVENTS_PER_STEP, self.max_batch_size, self.params_bytes,
                self.kv_bytes_per_token, chunk, self._t_pass, self.kv_capacity, self.max_prefill_tokens,
                self.params, self.layers, self.d_model, self.u_tensor, self.u_hbm, self._read_rate,
                self._tau_tok, self._tau_flop, self._tau_sq, self._tau_coll, self.flops_peak,
                self.hbm_bandwidth, self._a_byte, self._a_seq, self._req, self._phase, self._kend, self._k0,
                self._ctx0, self._K, self._n_occ, self._n_dec, self._ctx_sum, self._kend_min,
                self._prefill_left, self._prefill_batch, self._prefill_tokens, self._prefill_act,
                self._kv_used, self._prefilling, cols["arrival"], cols["prompt"], cols["output"],
                cols["admitted"], cols["first_token"], cols["done"], cols["replica"])

    def _advance_compiled(self, t0, t_end, c, n_arr_end, act, act_dec, tok_p, tok_o) -> None:
        """The step's events by the compiled loop (:func:`twin.workload.serving_kernel.advance`)."""
        from twin.workload import serving_kernel

        ctr = np.array([self._head, self._n_done], dtype=np.int64)
        ok = serving_kernel.advance(float(t0), float(t_end), int(n_arr_end), *self._kernel_args(c), ctr,
                                    act, act_dec, tok_p, tok_o)
        self._head, self._n_done = int(ctr[0]), int(ctr[1])
        if not ok:  # pragma: no cover - a scheduling bug, not an input error
            raise RuntimeError(f"InferencePool.advance: more than {_MAX_EVENTS_PER_STEP} events in "
                               f"the step at t={t0} s")

    def _advance_reference(self, t0, t_end, c, n_arr_end, act, act_dec, tok_p, tok_o) -> None:
        """The step's events, vectorised over replicas with numpy (the reference)."""
        R = self.n_replicas
        arrival = self._cols["arrival"]
        tau = np.full(R, t0)
        W, kv = self.params_bytes, self.kv_bytes_per_token
        K = self._K
        Rr = self._read_rate
        chunk = self.prefill_chunk
        inv_c = np.divide(1.0, c, out=np.full(R, np.inf), where=c > 0)
        inv_c0 = np.where(c > 0, inv_c, 0.0)  # for activity: a stalled replica does none
        a_byte, a_seq = self._a_byte, self._a_seq

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
            # Decoding replicas: not prefilling, or prefilling in chunks (then sharing time).
            dec = (b > 0) & (~pf if chunk is None else True)
            dec_any = np.count_nonzero(dec)
            share = np.ones(A.size)  # share of the replica's time that goes to prefill
            if dec_any:
                drows = A[dec]
                bd = b[dec]
                ctx = self._ctx_sum[drows] / bd
                # Fixed per-step time (overheads and matrix work) folded into the bytes: W_eff.
                w_eff = W + Rr[drows] * (self._t_pass + bd * self._tau_tok[drows]) * inv_c[drows]
                if chunk is not None and pf_any:
                    both = pf[dec]
                    t_d = (W + bd[both] * ctx[both] * kv) / Rr[drows[both]] + (
                        self._t_pass + bd[both] * self._tau_tok[drows[both]]) * inv_c[drows[both]]
                    t_c = (chunk * self._tau_tok[drows[both]] + self._t_pass) * inv_c[drows[both]]
                    sh = share[dec]
                    # (a stalled replica keeps share 1: it does neither, and inf / inf is no share)
                    sh[both] = np.divide(t_c, t_c + t_d, out=np.ones(t_c.size), where=c[drows[both]] > 0)
                    share[dec] = sh
                rr = Rr[drows] * (1.0 - np.where(pf[dec], share[dec], 0.0))
                kstar = self._kend_min[drows] - K[drows]
                T_dec = np.full(drows.size, np.inf)
                md = (c[drows] > 0) & (rr > 0)
                T_dec[md] = decode_time(kstar[md], bd[md], w_eff[md], kv, ctx[md], rr[md], 1.0)
                seg[dec] = np.minimum(seg[dec], T_dec)
            # Prefill: time to finish the current batch (its work in full-clock seconds).
            if pf_any:
                rows = A[pf]
                pr = c[rows] * share[pf]
                pl = self._prefill_left[rows]
                T_pf = np.divide(pl, pr, out=np.full(rows.size, np.inf), where=pr > 0)
                seg[pf] = np.minimum(seg[pf], T_pf)
            # Arrivals: replicas with room (a slot and KV cache for the queue head) stop at an
            # arrival (at once if a request already waits). The best placed (earliest, then least
            # loaded) watches the queue head, the next one the request after it, and so on.
            new_tau = tA + seg
            if queued:
                idx = (self._room(A) & ~pf & (c[A] > 0)).nonzero()[0]
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

            # Prefill progress (work, then tokens and activity in proportion).
            if pf_any:
                sp = seg[pf]
                fin = sp >= T_pf
                done = np.where(fin, pl, np.minimum(sp * pr, pl))
                self._prefill_left[rows] = pl - done
                frac = np.divide(done, self._prefill_batch[rows], out=np.zeros(rows.size),
                                 where=self._prefill_batch[rows] > 0)
                tok_p[rows] += frac * self._prefill_tokens[rows]
                act[rows] += frac * self._prefill_act[rows] * inv_c0[rows]
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
                    k[part] = np.minimum(kstar[part], decode_steps(sd[part], bd[part], w_eff[part], kv,
                                                                   ctx[part], rr[part], 1.0))
                k = np.where(md, k, 0.0)
                # Bytes read and sequence-steps in the k steps, as activity.
                read = k * W + kv * bd * (k * ctx + 0.5 * k * (k - 1.0))
                # HBM traffic keeps its pace at a lower core clock; the matrix work is spread over the
                # longer time it takes (activity at full clock × time, as the device model expects).
                act_dec[drows] += a_byte[drows] * read * (c[drows] > 0) + a_seq[drows] * k * bd * inv_c0[drows]
                K[drows] += k
                self._ctx_sum[drows] += k * bd
                tok_o[drows] += k * bd
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

    def _kv_need(self, j) -> np.ndarray:
        """KV cache reserved by requests ``j``: their prompt and output tokens [B]."""
        cols = self._cols
        return (cols["prompt"][j] + cols["output"][j]) * self.kv_bytes_per_token

    def _room(self, A) -> np.ndarray:
        """Replicas of ``A`` with a free slot and KV cache for the request at the queue head."""
        room = self._n_occ[A] < self.max_batch_size
        if np.isfinite(self.kv_capacity) and self._head < self._n:
            room &= self._kv_used[A] + self._kv_need(self._head) <= self.kv_capacity
        return room

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
        ok = self._room(A) & ~self._prefilling[A] & running
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
                instant = np.concatenate(([0], np.cumsum(t_el[1:] != t_el[:-1])))
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
        kv_limited = np.isfinite(self.kv_capacity)
        if k.max() > 0 or kv_limited:
            s = np.argsort(i, kind="stable")
            g = i[s]
            first = np.concatenate(([True], g[1:] != g[:-1]))
            group = np.cumsum(first) - 1

            def running_sum(values):  # per replica, in admission order
                csum = np.cumsum(values[s])
                out = np.empty(take)
                out[s] = csum - (csum - values[s])[first][group]
                return out

            if k.max() > 0:  # several requests per replica: keep each batch's prompt tokens in bounds
                fits &= (k == 0) | (running_sum(cols["prompt"][j]) <= self.max_prefill_tokens)
            if kv_limited:  # and their KV caches inside the replica's HBM
                fits &= self._kv_used[el[i]] + running_sum(self._kv_need(j)) <= self.kv_capacity
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
        R = self.n_replicas
        self._n_occ += np.bincount(reps, minlength=R)
        self._kv_used += np.bincount(reps, weights=self._kv_need(j), minlength=R)
        # The batch's work [full-clock s]: its FLOPs and one pass's overheads (a pass per chunk).
        tokens = np.bincount(reps, weights=prompt, minlength=R)
        square = np.bincount(reps, weights=prompt * prompt, minlength=R)
        new = np.flatnonzero(np.bincount(reps, minlength=R))  # the replicas admitting, sorted
        n_tok, n_sq = tokens[new], square[new]
        passes = 1.0 if self.prefill_chunk is None else np.maximum(1.0, np.ceil(n_tok / self.prefill_chunk))
        compute = np.maximum(n_tok * self._tau_flop[new] + n_sq * self._tau_sq[new],
                             passes * self.params_bytes / self._read_rate[new])  # weights read per pass
        work = compute + n_tok * self._tau_coll[new] + passes * self._t_pass
        flops = FLOPS_PER_PARAM_PER_TOKEN * self.params * n_tok + 2.0 * self.layers * self.d_model * n_sq
        self._prefill_left[new] = work
        self._prefill_batch[new] = work
        self._prefill_tokens[new] = n_tok
        self._prefill_act[new] = (self.u_tensor * flops / self.flops_peak[new]
                                  + self.u_hbm * passes * self.params_bytes / self.hbm_bandwidth[new])
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
        self._prefill_tokens[rows] = 0.0
        self._prefill_act[rows] = 0.0
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
        req = self._req[reps, s]
        self._cols["done"][req] = tau[reps]
        self._kv_used -= np.bincount(reps, weights=self._kv_need(req), minlength=self.n_replicas)
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
