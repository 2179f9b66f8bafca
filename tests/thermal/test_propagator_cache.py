"""The sled networks' propagators read back from the on-disk cache are the ones computed: the
same bits as scipy's ``expm`` of the Van Loan block matrix, and a cache that is missing,
unwritable, turned off or damaged changes nothing but the time taken."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from twin import cache
from twin.thermal.integrators import van_loan


def _system(seed=0, u=3, m=7):
    """A batch of system matrices shaped like a sled network's: positive diagonal, rows of
    conductances to the neighbours (A = C⁻¹ L)."""
    rng = np.random.default_rng(seed)
    G = rng.random((u, m, m)) * 0.2
    G = G + np.swapaxes(G, 1, 2)
    L = -G + np.eye(m) * (G.sum(axis=2)[..., None] + 0.05)
    return L / (1.0 + 50.0 * rng.random((u, m)))[..., None]


def _direct(A, h):
    """E, Φ, Ψ from scipy's expm of the block matrix, without the cache."""
    u, m, _ = A.shape
    M = np.zeros((u, 3 * m, 3 * m))
    M[:, :m, :m] = -A * h
    M[:, :m, m:2 * m] = np.eye(m) * h
    M[:, m:2 * m, 2 * m:] = np.eye(m) * h
    F = scipy.linalg.expm(M)
    return F[:, :m, :m], F[:, :m, m:2 * m], F[:, :m, 2 * m:]


def _files(folder):
    return sorted((folder / "van_loan").glob("*.npy")) if (folder / "van_loan").exists() else []


def test_computed_then_read_back_bit_for_bit(tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_CACHE_DIR", str(tmp_path))
    A, h = _system(), 1.0
    want = _direct(A, h)
    first = van_loan(A, h)
    assert len(_files(tmp_path)) == 1
    second = van_loan(A, h)  # from the file
    for w, a, b in zip(want, first, second):
        assert np.array_equal(w, a) and np.array_equal(w, b)  # exact: the cache stores the bits
    # Another step or another matrix is another entry, never the first one's values.
    other = van_loan(A, 0.5)
    assert len(_files(tmp_path)) == 2
    assert np.array_equal(other[0], _direct(A, 0.5)[0])
    B = A.copy()
    B[0, 0, 0] *= 1.0 + 1e-15
    van_loan(B, h)
    assert len(_files(tmp_path)) == 3


def test_damaged_or_foreign_files_are_recomputed(tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_CACHE_DIR", str(tmp_path))
    A, h = _system(1), 2.0
    want = _direct(A, h)
    van_loan(A, h)
    (path,) = _files(tmp_path)
    path.write_bytes(path.read_bytes()[:50])  # truncated
    assert all(np.array_equal(w, g) for w, g in zip(want, van_loan(A, h)))
    np.save(path, np.zeros((2, 2)))  # an array of another shape under the same name
    assert all(np.array_equal(w, g) for w, g in zip(want, van_loan(A, h)))
    assert np.array_equal(np.load(path), np.concatenate(want, axis=2))  # rewritten


@pytest.mark.parametrize("setting", ["off", "", "not-a-folder"])
def test_cache_off_or_unwritable_still_computes(tmp_path, monkeypatch, setting):
    if setting == "not-a-folder":
        blocker = tmp_path / "file"
        blocker.write_text("x")
        setting = str(blocker / "cache")  # below a regular file: cannot be created
    monkeypatch.setenv("TWIN_CACHE_DIR", setting)
    A, h = _system(2), 1.0
    want = _direct(A, h)
    for _ in range(2):
        assert all(np.array_equal(w, g) for w, g in zip(want, van_loan(A, h)))
    assert not any(p.suffix == ".npy" for p in tmp_path.rglob("*"))


def test_folder_keeps_at_most_max_files(tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "MAX_FILES", 3)
    A = _system(3, u=1, m=3)
    for k in range(6):
        van_loan(A, 1.0 + k)
    assert len(_files(tmp_path)) == 3
    assert not list((tmp_path / "van_loan").glob(".*.tmp"))  # no temporary file left behind
