"""Selection: views of index sets read and write exactly what fancy indexing does."""

from __future__ import annotations

import numpy as np
import pytest

from twin.sim.selection import Selection


def _cases():
    n = 60
    yield np.arange(10, 30), "slice", n
    yield (np.arange(8)[:, None] * 5 + np.arange(4)).ravel(), "strided", n  # 4 of 5 per node
    yield (np.arange(8)[:, None] * 5 + np.arange(4)).ravel() + 20, "strided", 60  # last stride to the end
    yield np.arange(12) * 5 + 4, "strided", n  # a host after each node's 4: the last stride past the end
    yield (np.arange(12)[:, None] * 5 + np.arange(3, 5)).ravel(), "strided", n  # runs of 2, past the end
    yield np.array([1, 2, 5, 6, 7]), "index", n  # uneven runs
    yield np.array([3, 9, 12]), "index", n
    yield np.array([7]), "slice", n
    yield np.zeros(0, dtype=np.int64), "empty", n
    yield np.array([5, 6, 0, 1]), "index", n  # not ascending


@pytest.mark.parametrize("index,layout,n", list(_cases()))
def test_take_and_put_match_fancy_indexing(index, layout, n):
    """take and put agree with a[..., index] exactly (tolerance 0: they move the same values)
    for 1-D, (sub-steps, entities) and (steps, sub-steps, entities) arrays, with row, column
    and scalar values."""
    sel = Selection(index)
    assert sel.layout == layout
    rng = np.random.default_rng(1)
    for shape in ((n,), (3, n), (2, 3, n)):
        a = rng.random(shape)
        np.testing.assert_array_equal(sel.take(a), a[..., index].reshape(sel.take(a).shape))
        if index.size:
            assert sel.take(a).min() == a[..., index].min()
        for value in (0.25, rng.random(shape[:-1] + (index.size,)), rng.random(shape[:-1] + (1,))):
            b, c = a.copy(), a.copy()
            sel.put(b, value)
            c[..., index] = value
            np.testing.assert_array_equal(b, c)


def test_strided_take_is_a_view():
    a = np.zeros((2, 50))
    for index in ((np.arange(10)[:, None] * 5 + np.arange(4)).ravel(), np.arange(10) * 5 + 4):
        assert np.shares_memory(Selection(index).take(a), a)
