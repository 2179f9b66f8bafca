"""Gang placement that respects scale-up domains.

A synchronous job's collectives run on the scale-up fabric (NVLink, NeuronSwitch, NeuronLink)
while the gang sits in one domain, and cross the much slower scale-out fabric (EFA) as soon as it
spans two. So a gang goes to one domain whenever one has room (the smallest that fits, keeping
large domains free for large gangs), and otherwise to as few domains as possible (the fullest
free domains first). Ties go to layout order, so placement is deterministic.
"""

from __future__ import annotations

import numpy as np


def choose_gang(domain: np.ndarray, need: int, one_domain: bool = False) -> np.ndarray | None:
    """Pick ``need`` free devices, domain by domain.

    Parameters
    ----------
    domain : ndarray of int
        Domain index of each free candidate device, in layout order.
    need : int
        Devices the gang needs.
    one_domain : bool
        The gang must sit in a single domain.

    Returns
    -------
    ndarray of int or None
        Positions into ``domain`` of the chosen devices (layout order within each domain), or
        None when the gang does not fit.
    """
    if need <= 0 or domain.size < need:
        return None
    ids, first, counts = np.unique(domain, return_index=True, return_counts=True)
    fits = counts >= need
    if fits.any():
        # Best fit: the smallest domain that holds the gang; ties in layout order.
        pick = np.lexsort((first, np.where(fits, counts, np.iinfo(np.int64).max)))[0]
        return np.flatnonzero(domain == ids[pick])[:need]
    if one_domain:
        return None
    # Fewest domains: the fullest first; ties in layout order.
    order = np.lexsort((first, -counts))
    taken = np.cumsum(counts[order])
    k = int(np.searchsorted(taken, need)) + 1
    chosen = []
    left = need
    for o in order[:k]:
        idx = np.flatnonzero(domain == ids[o])[:left]
        chosen.append(idx)
        left -= idx.size
    return np.sort(np.concatenate(chosen))


def largest_domain(domain: np.ndarray) -> int:
    """Devices in the largest domain [1] (0 when there are none)."""
    if domain.size == 0:
        return 0
    return int(np.unique(domain, return_counts=True)[1].max())
