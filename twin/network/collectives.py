"""Time of collective operations on a fabric: the α–β (latency–bandwidth) model.

A step that sends m bytes over a link takes α + m/β, with α the fabric's ``latency`` [s] and β
the per-chip bandwidth in one direction [B/s]. The collective algorithms below are the standard
ones of MPI and NCCL; their costs are those of Thakur, Rabenseifner and Gropp (2005) and of
Patarasuk and Yuan (2009). ``message`` is the size of the buffer each participant holds [bytes]
(for all-to-all: the bytes each participant sends in total, ``message / p`` to each peer).

All functions are pure and take numbers or numpy arrays.

References
----------
R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of collective communication operations in
MPICH", Int. J. High Performance Computing Applications 19(1), 2005.
P. Patarasuk, X. Yuan, "Bandwidth optimal all-reduce algorithms for clusters of workstations",
J. Parallel Distrib. Comput. 69(2), 2009.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def ring_allreduce_time(message, participants, bandwidth, latency):
    """All-reduce by a ring (reduce-scatter then all-gather) [s].

    Parameters
    ----------
    message : float or ndarray
        Bytes each participant holds and receives reduced [bytes].
    participants : int or ndarray
        Chips in the ring, p [1].
    bandwidth : float
        Per-chip bandwidth, one direction, β [B/s].
    latency : float
        Time of one step, α [s].

    Notes
    -----
    .. math:: T = 2 (p - 1) α + 2 \\frac{p - 1}{p} \\frac{n}{β}

    Bandwidth-optimal (Patarasuk and Yuan 2009); the latency term grows with p. T = 0 for p = 1.
    """
    p = np.asarray(participants, dtype=float)
    return 2.0 * (p - 1.0) * latency + 2.0 * (p - 1.0) / p * message / bandwidth


def tree_allreduce_time(message, participants, bandwidth, latency):
    """All-reduce by recursive halving and doubling (Rabenseifner's algorithm) [s].

    Parameters as :func:`ring_allreduce_time`.

    Notes
    -----
    .. math:: T = 2 \\lceil \\log_2 p \\rceil α + 2 \\frac{p - 1}{p} \\frac{n}{β}

    The same bandwidth term as the ring with a latency term logarithmic in p (Thakur et al. 2005,
    for p a power of two), so it wins for small messages on large groups.
    """
    p = np.asarray(participants, dtype=float)
    return 2.0 * np.ceil(np.log2(p)) * latency + 2.0 * (p - 1.0) / p * message / bandwidth


def ring_reduce_scatter_time(message, participants, bandwidth, latency):
    """Reduce-scatter (or all-gather) by a ring: half of a ring all-reduce [s].

    Notes
    -----
    .. math:: T = (p - 1) α + \\frac{p - 1}{p} \\frac{n}{β}
    """
    p = np.asarray(participants, dtype=float)
    return (p - 1.0) * latency + (p - 1.0) / p * message / bandwidth


def all_to_all_time(message, participants, bandwidth, latency, hops=1.0):
    """All-to-all by pairwise exchange [s].

    Parameters
    ----------
    message : float or ndarray
        Bytes each participant sends in total, ``message / p`` to each peer [bytes].
    participants, bandwidth, latency
        As :func:`ring_allreduce_time`.
    hops : float
        Mean link traversals per byte (1 on a non-blocking switch; the mean hop distance on a
        torus, :func:`torus_mean_hops`, where each byte loads every link it crosses) [1].

    Notes
    -----
    .. math:: T = (p - 1) α + h \\frac{p - 1}{p} \\frac{n}{β}

    p − 1 steps, each sending n/p bytes (Thakur et al. 2005). On a torus under uniform traffic
    every byte takes h link hops and a chip's links together carry β, so the bandwidth term is
    h times the switched one.
    """
    p = np.asarray(participants, dtype=float)
    return (p - 1.0) * latency + hops * (p - 1.0) / p * message / bandwidth


def torus_mean_hops(participants, dims):
    """Mean shortest-path hop count between distinct chips of a d-dimensional torus [1].

    Parameters
    ----------
    participants : int
        Chips, N = k^d (k per dimension; a non-integer root is rounded up) [1].
    dims : int
        Dimensions d (1 = a ring) [1].

    Notes
    -----
    In a ring of k nodes the distance to the node j steps away is min(j, k − j); its mean over
    all k nodes (self included) is S/k with S = Σ_{j=0}^{k−1} min(j, k − j) = ⌊k²/4⌋. Distances
    add over dimensions, and excluding the node itself rescales by N/(N − 1):

    .. math:: \\bar h = d \\frac{\\lfloor k^2/4 \\rfloor}{k} \\frac{N}{N - 1}
    """
    n = int(participants)
    if n <= 1:
        return 1.0
    k = int(np.ceil(round(n ** (1.0 / dims), 9)))
    n_torus = k ** dims
    return dims * (k * k // 4) / k * n_torus / (n_torus - 1)


ALLREDUCE = {"ring": ring_allreduce_time, "tree": tree_allreduce_time}


@dataclass(frozen=True)
class Link:
    """One fabric as a collective sees it: per-chip bandwidth [B/s], step latency [s] and the
    mean hops of an all-to-all [1]; ``name`` is the catalogue fabric."""

    name: str
    bandwidth: float
    latency: float
    hops: float = 1.0


@dataclass(frozen=True)
class CollectivePath:
    """Where a gang's collectives run: ``per_domain`` chips in each of ``domains`` scale-up
    domains (the largest share when uneven), on the ``up`` fabric inside a domain and the
    ``out`` fabric between domains (None when the gang sits in one domain)."""

    participants: int
    per_domain: int
    domains: int
    up: Link
    out: Link | None = None

    @property
    def fabric(self) -> str:
        """The fabric that carries the cross-gang traffic: the scale-out one when it spans domains."""
        return self.out.name if self.out is not None and self.domains > 1 else self.up.name


def allreduce_time(path: CollectivePath, message, algorithm: str = "ring"):
    """All-reduce of ``message`` bytes per chip over a gang's path [s].

    Inside one domain: :func:`ring_allreduce_time` (or ``tree``) on the scale-up fabric. Across
    D domains of P chips each, hierarchically (as NCCL and the Neuron runtime do): a
    reduce-scatter inside each domain, an all-reduce of the n/P shard among the D chips that
    hold it over the scale-out fabric (all P shards in parallel, each chip on its own NIC share),
    and an all-gather inside each domain:

    .. math:: T = 2 T_{rs}(n, P; up) + T_{ar}(n/P, D; out)
    """
    ar = ALLREDUCE[algorithm]
    up = path.up
    if path.domains <= 1 or path.out is None:
        return ar(message, path.participants, up.bandwidth, up.latency)
    p_l = path.per_domain
    inner = 2.0 * ring_reduce_scatter_time(message, p_l, up.bandwidth, up.latency) if p_l > 1 else 0.0
    return inner + ar(message / p_l, path.domains, path.out.bandwidth, path.out.latency)


def path_all_to_all_time(path: CollectivePath, message):
    """All-to-all of ``message`` bytes sent per chip over a gang's path [s].

    Peers in the chip's own domain are reached over the scale-up fabric, the others over the
    scale-out fabric; the two exchanges are counted one after the other (pairwise exchange):

    .. math:: T = (P - 1) α_u + h \\frac{P - 1}{p} \\frac{n}{β_u}
                  + (p - P) α_o + \\frac{p - P}{p} \\frac{n}{β_o}
    """
    p, p_l, up = path.participants, path.per_domain, path.up
    if path.domains <= 1 or path.out is None:
        return all_to_all_time(message, p, up.bandwidth, up.latency, up.hops)
    t_up = (p_l - 1) * up.latency + up.hops * (p_l - 1) / p * message / up.bandwidth
    remote = p - p_l
    return t_up + remote * path.out.latency + remote / p * message / path.out.bandwidth
