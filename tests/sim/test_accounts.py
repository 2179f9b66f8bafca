"""The compiled block accounting (twin.sim.accounts) against numpy's own operations.

The sums over devices must be numpy's to the bit (the per-step path sums with ``ndarray.sum``
and ``bincount``), so they are compared with tolerance 0 on random values over the lengths
where numpy's pairwise summation changes form (below 8, one block of ≤ 128, split halves, past
its 8,192-element buffer) and the bench systems' device counts. The work lost is a dot product
in the per-step path (BLAS), summed pairwise here: a few ulp apart, 1e-13 relative.
"""

from __future__ import annotations

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from twin.sim.accounts import block_sums, compiled, pairwise_sum  # noqa: E402

LENGTHS = [1, 7, 8, 9, 127, 128, 129, 255, 1000, 8192, 8193, 3352, 47360, 201550]


def test_pairwise_sum_is_numpys():
    compiled()
    from twin.sim import accounts

    rng = np.random.default_rng(7)
    for n in LENGTHS:
        a = rng.standard_normal(n) * rng.uniform(1.0, 1e4, n)
        assert accounts.pairwise_sum(a, 0, n) == a.sum(), n
        if n <= 8193:  # (the Python source gives the same)
            assert accounts.pairwise_sum(a, 0, n) == pairwise_sum(a, 0, n), n


@pytest.mark.parametrize("n_sub", [1, 3])
def test_block_sums_are_the_per_step_sums(n_sub):
    rng = np.random.default_rng(11)
    k, n, jobs = 4, 3352, 3
    U = rng.uniform(0.0, 1.0, (k, n_sub, n))
    w = (rng.uniform(size=n) > 0.1).astype(float)
    p = rng.uniform(50.0, 900.0, (k, n))
    t_die = rng.uniform(30.0, 90.0, (k, n))
    thr = rng.uniform(size=(k, n)) > 0.99
    off = rng.uniform(size=(k, n)) > 0.995
    off_before = rng.uniform(size=n) > 0.995
    clock = rng.uniform(0.5, 1.0, (k, n))
    bins = rng.integers(0, jobs + 1, n)
    s = block_sums(U, w, p, t_die, thr, off, off_before, clock, bins, jobs + 1)
    uw = (U[:, 0] if n_sub == 1 else U.mean(axis=1)) * w
    np.testing.assert_array_equal(s["e_step"], p.sum(axis=1))
    np.testing.assert_array_equal(s["demand"], uw.sum(axis=1))
    start = np.concatenate([off_before[None], off[:-1]])
    lost = [(1.0 - clock[j] * ~start[j]) @ uw[j] for j in range(k)]
    np.testing.assert_allclose(s["lost"], lost, rtol=1e-13)
    for j in range(k):
        np.testing.assert_array_equal(s["job_p"][j], np.bincount(bins, weights=p[j], minlength=jobs + 1))
    np.testing.assert_array_equal(s["n_throttled"], np.count_nonzero(thr, axis=1))
    np.testing.assert_array_equal(s["tripped"], off.any(axis=1))
    assert s["t_die_max"] == t_die.max()


def test_sled_sums_are_reduceat():
    """Each sled's device power as ``np.add.reduceat`` gives it (its first device plus the
    pairwise sum of the others), to the bit, for sleds of 1 to 300 devices."""
    from twin.sim.accounts import sled_sums

    rng = np.random.default_rng(5)
    sizes = rng.choice([1, 2, 3, 5, 8, 9, 18, 36, 129, 300], size=400)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    P = rng.uniform(0.0, 1000.0, (3, 2, int(sizes.sum())))
    out = np.empty((3, 2, starts.size))
    sled_sums(P, starts, out)
    np.testing.assert_array_equal(out, np.add.reduceat(P.reshape(6, -1), starts, axis=1).reshape(3, 2, -1))
