"""What the components add per step after the compiled quiet-block loop, in one compiled pass
over the block's (steps, devices) arrays (numba, the ``fast`` extra).

After :class:`twin.sim.fused.FusedLoop` has taken a block's steps, each step's totals are what
:class:`~twin.power.chips.ChipPower`, :class:`~twin.power.chips.Governors` and
:class:`~twin.workload.components.JobAccounting` add in the per-step path: the device energy
Σ p·h, the compute work demanded Σ w·ū·h and lost Σ w·ū·(1 − f·on)·h, the hottest die, the
throttled and tripped counts, and each job's power (device power summed by owner). In numpy
these are a dozen passes over the (steps, devices) arrays with as many temporaries (at 47,360
devices ~1 ms of CPU per step, a third of the compiled loop); :func:`block_sums` does them in
one pass with no temporary of that size.

Rounding: the sums over all devices (device power and demanded work) are numpy's pairwise
summation, element for element (:func:`pairwise_sum`, the algorithm of numpy's ``add.reduce``
on a contiguous float64 row: 8 accumulators over blocks of at most 128, halves split at a
multiple of 8), so they equal ``p.sum()`` to the bit (tests/sim/test_accounts.py); each job's
power is summed in device order, as ``bincount``. The work lost is summed pairwise too, where
the per-step path takes a BLAS dot product (a few ulp apart, within the compiled loop's
tolerance, tests/sim/test_blocks.py). The sleds' device power (:func:`sled_sums`) is summed as
``np.add.reduceat`` sums a segment: its first element plus the pairwise sum of the rest.
"""

from __future__ import annotations

import numpy as np

#: numpy's pairwise summation: blocks of at most this many elements are summed with 8
#: accumulators (numpy/_core/src/umath/loops_utils.h.src, PW_BLOCKSIZE).
PW_BLOCKSIZE = 128


#: Index conversion in the compiled functions: unsigned (``numba.uint64``, bound by
#: :func:`compiled`), so an index takes no negative-index wraparound test (:func:`_leaf`
#: twice as fast over 47,360 elements).
_u = int


def _leaf(a, lo, n):
    """numpy's pairwise sum of a block of at most :data:`PW_BLOCKSIZE` elements."""
    if n < 8:
        res = -0.0
        for i in range(lo, lo + n):
            res += a[_u(i)]
        return res
    r0, r1, r2, r3 = a[_u(lo)], a[_u(lo + 1)], a[_u(lo + 2)], a[_u(lo + 3)]
    r4, r5, r6, r7 = a[_u(lo + 4)], a[_u(lo + 5)], a[_u(lo + 6)], a[_u(lo + 7)]
    i = 8
    end = n - n % 8
    while i < end:
        r0 += a[_u(lo + i)]
        r1 += a[_u(lo + i + 1)]
        r2 += a[_u(lo + i + 2)]
        r3 += a[_u(lo + i + 3)]
        r4 += a[_u(lo + i + 4)]
        r5 += a[_u(lo + i + 5)]
        r6 += a[_u(lo + i + 6)]
        r7 += a[_u(lo + i + 7)]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[_u(lo + i)]
        i += 1
    return res


def pairwise_sum(a, lo, n):
    """Σ a[lo : lo + n] in numpy's pairwise order (``np.add.reduce`` of a contiguous float64
    array gives the same bits): a block of at most :data:`PW_BLOCKSIZE` by :func:`_leaf`, a
    longer run as the sum of its halves (the first a multiple of 8 long). The halves are
    walked with a stack (the compiled code is cached, which recursion does not allow)."""
    if n <= PW_BLOCKSIZE:
        return _leaf(a, lo, n)
    nodes = np.empty((128, 3), dtype=np.int64)  # (start, length, halves summed?) to visit
    values = np.empty(128)  # sums of the halves done, the right one on top
    top, nv = 0, 0
    nodes[0, 0], nodes[0, 1], nodes[0, 2] = lo, n, 0
    top = 1
    while top:
        top -= 1
        start, length, done = nodes[top, 0], nodes[top, 1], nodes[top, 2]
        if done:
            nv -= 1
            values[nv - 1] = values[nv - 1] + values[nv]
        elif length <= PW_BLOCKSIZE:
            values[nv] = _leaf(a, start, length)
            nv += 1
        else:
            n2 = length // 2
            n2 -= n2 % 8
            nodes[top, 0], nodes[top, 1], nodes[top, 2] = start, length, 1
            nodes[top + 1, 0], nodes[top + 1, 1], nodes[top + 1, 2] = start + n2, length - n2, 0
            nodes[top + 2, 0], nodes[top + 2, 1], nodes[top + 2, 2] = start, n2, 0
            top += 3
    return values[0]


def _sled_sums(P, starts, out):
    """Each sled's device power per step and sub-step, ``out[j, s, i]`` = Σ P[j, s, devices of
    sled i] (the devices of sled i from ``starts[i]`` to the next start), in the order of
    ``np.add.reduceat``: the first device, plus the pairwise sum of the others."""
    k, n_sub, n = P.shape
    m = starts.size
    for j in range(k):
        for s in range(n_sub):
            row = P[j, s]
            for i in range(m):
                a = starts[i]
                b = starts[i + 1] if i + 1 < m else n
                if b - a <= 8:  # (fewer than 8 after the first: pairwise's plain running sum, inline)
                    r = -0.0
                    for d in range(a + 1, b):
                        r += row[_u(d)]
                    out[j, s, i] = row[_u(a)] if b - a == 1 else row[_u(a)] + r
                else:
                    out[j, s, i] = row[_u(a)] + pairwise_sum(row, a + 1, b - a - 1)


def _block_sums(U, w, p_step, t_die, throttled, off, off_before, clock, bins, uw, lost, job_p,
                e_step, demand, lost_step, n_thr, tripped):
    """Per step ``j`` of the block: Σ p_step[j] (``e_step``), Σ w·ū (``demand``), Σ w·ū·(1 −
    f·on) (``lost_step``), the throttled count and whether some device is off after it, each
    job's power (``job_p[j]``, by ``bins``: job index + 1, 0 for none); returns the hottest
    die. ``uw`` and ``lost`` are scratch (devices,) arrays; ``off_before`` the trips the block
    starts with (a step's work counts the trips it starts with)."""
    k, n_sub, n = U.shape
    t_max = -np.inf
    for j in range(k):
        for d in range(n):
            u = U[j, 0, d]
            if n_sub > 1:
                for s in range(1, n_sub):
                    u += U[j, s, d]
                u = u / n_sub
            x = u * w[d]
            uw[d] = x
            start_off = off_before[d] if j == 0 else off[_u(j - 1), d]
            lost[d] = (1.0 - (0.0 if start_off else clock[j, d])) * x
        e_step[j] = pairwise_sum(p_step[j], 0, n)
        demand[j] = pairwise_sum(uw, 0, n)
        lost_step[j] = pairwise_sum(lost, 0, n)
        for b in range(job_p.shape[1]):
            job_p[j, b] = 0.0
        # each job's power in device order (bincount's additions), summed in a local variable
        # over each run of devices of one owner instead of through the array element (a chain
        # of stores and loads); the counts and the maximum ride along
        b = bins[0] if n else 0
        acc = 0.0
        c = 0
        any_off = False
        m = t_max
        for d in range(n):
            if bins[d] != b:
                job_p[j, _u(b)] = acc
                b = bins[d]
                acc = job_p[j, _u(b)]
            acc += p_step[j, d]
            c += throttled[j, d]
            any_off |= off[j, d]
            m = max(m, t_die[j, d])  # (a NaN is never the maximum, as with ``>``)
        job_p[j, _u(b)] = acc
        t_max = m
        n_thr[j] = c
        tripped[j] = any_off
    return t_max


_COMPILED = None


def compiled():
    """The compiled pass (compiled, or loaded from numba's cache, on first use)."""
    global _COMPILED, _SLEDS, _leaf, pairwise_sum, _u
    if _COMPILED is None:
        import numba

        _u = numba.uint64
        jit = numba.njit(cache=True, nogil=True)
        _leaf = jit(_leaf)
        pairwise_sum = jit(pairwise_sum)
        _SLEDS = jit(_sled_sums)
        _COMPILED = jit(_block_sums)
    return _COMPILED


_SLEDS = None


def sled_sums(P, starts, out) -> None:
    """``np.add.reduceat(P, starts, axis=-1)`` of the block's device power (k, sub-steps,
    devices) into ``out`` (k, sub-steps, sleds), to the bit, in one compiled pass (every sled
    has a device: ``starts`` strictly increasing)."""
    compiled()
    _SLEDS(P, starts, out)


def block_sums(U, w, p_step, t_die, throttled, off, off_before, clock, bins, n_bins):
    """The per-step totals of a compiled block's ``k`` steps (see :func:`_block_sums`).

    Returns
    -------
    dict
        ``e_step``, ``demand``, ``lost`` (k,) each [W, device]; ``n_throttled`` (k,) int;
        ``tripped`` (k,) bool; ``job_p`` (k, n_bins) [W] (bin 0: devices no job holds);
        ``t_die_max`` [degC].
    """
    k, n = p_step.shape
    out = {"e_step": np.empty(k), "demand": np.empty(k), "lost": np.empty(k),
           "n_throttled": np.empty(k, dtype=np.int64), "tripped": np.empty(k, dtype=np.bool_),
           "job_p": np.empty((k, n_bins))}
    out["t_die_max"] = compiled()(U, w, p_step, t_die, throttled, off, off_before, clock, bins, np.empty(n),
                                  np.empty(n), out["job_p"], out["e_step"], out["demand"], out["lost"],
                                  out["n_throttled"], out["tripped"])
    return out
