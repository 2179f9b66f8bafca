"""Integrators of the sled thermal networks over one step.

Within a step, flows, powers and inlet temperatures are held (the driver's zero-order hold), so
each sled block obeys the linear ODE

    dT/dt = −A T + g,   A = C⁻¹ L,   g = C⁻¹ (P + b ⊙ T_in).

``fast`` (default): the exact solution of that ODE with matrix exponentials,

    T(h) = E T₀ + Φ g,   ∫₀ʰ T dt = Φ T₀ + Ψ g,
    E = e^{−Ah},  Φ = ∫₀ʰ e^{−As} ds,  Ψ = ∫₀ʰ (h − s) e^{−As} ds,

all three read off one exponential of a block matrix (Van Loan 1978). They depend only on the
flows, so they are computed once per distinct flow state and reused; sleds with identical
matrices are advanced with one matrix product for the whole batch (no per-device Python).

``reference``: ``scipy.integrate.solve_ivp`` (BDF, the sparse Jacobian −A, tight tolerances) on
the same piecewise-constant problem, with the integrals of the fluid nodes as extra states.

Both return the step-mean coolant and air node temperatures, from which the heat carried away
by the fluids follows exactly (energy closes to round-off in the fast path).

References
----------
C. Van Loan, "Computing integrals involving the matrix exponential", IEEE Trans. Automatic
Control 23(3), 1978.
"""

from __future__ import annotations

import functools
import platform

import numpy as np

from twin import cache
from twin.thermal.network import SledGroup, conductance_matrices


def van_loan(A: np.ndarray, h: float):
    """E = e^{−Ah}, Φ = ∫₀ʰ e^{−As} ds and Ψ = ∫₀ʰ (h−s) e^{−As} ds for a batch of matrices.

    Parameters
    ----------
    A : ndarray, shape (u, m, m)
        System matrices [1/s].
    h : float
        Step [s].

    Returns
    -------
    (E, Φ, Ψ) : ndarrays, shape (u, m, m); Φ in [s], Ψ in [s²].

    Notes
    -----
    expm([[−A h, I h, 0], [0, 0, I h], [0, 0, 0]]) has E, Φ, Ψ as its first block row.

    The block row is kept in the on-disk cache (:mod:`twin.cache`) under a digest of ``A``,
    ``h``, this function's code, the numpy and scipy versions and the machine: a run whose sled
    networks and step were met before reads it back (the same bits) without importing
    ``scipy.linalg`` (~0.35 CPU-s of start-up).
    """
    A = np.ascontiguousarray(A, dtype=float)
    u, m, _ = A.shape
    code = van_loan.__code__
    digest = cache.key(code.co_code, code.co_consts, A, float(h).hex(), np.__version__, _scipy_version(),
                       platform.machine())
    F = cache.load_array("van_loan", digest)
    if F is None or F.shape != (u, m, 3 * m) or F.dtype != np.float64:
        import scipy.linalg

        M = np.zeros((u, 3 * m, 3 * m))
        eye = np.eye(m) * h
        M[:, :m, :m] = -A * h
        M[:, :m, m:2 * m] = eye
        M[:, m:2 * m, 2 * m:] = eye
        F = np.ascontiguousarray(scipy.linalg.expm(M)[:, :m, :])
        cache.store_array("van_loan", digest, F)
    return F[:, :m, :m], F[:, :m, m:2 * m], F[:, :m, 2 * m:]


@functools.cache
def _scipy_version() -> str:
    """scipy's ``version.py`` (its version and git revision), read without importing scipy or
    the package metadata machinery (~0.05 CPU-s); scipy's ``__version__`` when that file is
    not there."""
    import importlib.util
    from pathlib import Path

    try:
        return (Path(importlib.util.find_spec("scipy").origin).parent / "version.py").read_text(encoding="utf-8")
    except Exception:  # an unusual install: import it after all
        import scipy

        return scipy.__version__


class _Block:
    """Precomputed propagators of one sled group at one flow state.

    Row-vector form, with the heat input's 1/C and the mean's 1/h folded in, so one product
    advances the nodes and gives the fluid means together::

        [T | q] @ W = [T(h) | T̄_fluid],   W = [[Eᵀ, Φ_fᵀ/h], [C⁻¹Φᵀ, C⁻¹Ψ_fᵀ/h]]

    Sleds with the same flows share one W; the sleds of each distinct flow state are advanced
    with one matrix product (a Python loop over flow states, never over sleds or devices).
    """

    def __init__(self, group: SledGroup, m_coolant, m_air, h):
        self.group = group
        keys = np.stack([m_coolant, m_air], axis=1)
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        self.inverse = inverse.ravel()
        self.shared = len(uniq) == 1
        L, b = conductance_matrices(group, uniq[:, 0], uniq[:, 1])
        self.cap = group.capacity
        self.A = L / self.cap[None, :, None]
        self.b = b[self.inverse]  # (n, m) [W/K]
        E, Phi, Psi = van_loan(self.A, h)
        fluid = [group.cool, group.air]
        u, m = E.shape[0], group.m
        W = np.empty((u, 2 * m, m + 2))
        W[:, :m, :m] = np.swapaxes(E, 1, 2)
        W[:, :m, m:] = np.swapaxes(Phi[:, fluid, :], 1, 2) / h
        W[:, m:, :m] = np.swapaxes(Phi, 1, 2) / self.cap[None, :, None]
        W[:, m:, m:] = np.swapaxes(Psi[:, fluid, :], 1, 2) / (self.cap[None, :, None] * h)
        if group.h:
            # Device power enters on the die rows of [T | q]; the HBM nodes take their share s·P
            # of it (SledGroup.heat_input), folded into those rows: W_p = S W_q with S the (k, m)
            # map from die power to node heat (no other input reaches the die nodes). An HBM
            # row of q is heat moved from the die to the stacks (the HBM floor's offset,
            # SledGroup.heat_offset): its row is the stacks' less the die's (SledGroup.split).
            S = group.heat_input(np.eye(group.k))
            raw = W[:, m:].copy()
            W[:, m: m + group.k] = S @ raw
            W[:, m + group.hbm] = raw[:, group.hbm] - raw[:, group.hbm_slot]
        self.W = W
        # Rows of each flow state (None: all sleds share state 0).
        self.rows = None if self.shared else [np.flatnonzero(self.inverse == j) for j in range(u)]
        self.X = np.empty((self.inverse.size, 2 * m))  # [T | q], filled each step


class ExponentialIntegrator:
    """Exact exponential integrator, batched over identical sled blocks (the ``fast`` path)."""

    name = "fast"

    def __init__(self, groups: list[SledGroup], h: float):
        self.groups = groups
        self.h = h
        self.blocks: list[_Block | None] = [None] * len(groups)

    def set_flows(self, i: int, m_coolant, m_air):
        """Coolant and air mass flow of every sled of group ``i`` [kg/s]; recomputes propagators."""
        self.blocks[i] = _Block(self.groups[i], np.asarray(m_coolant, float), np.asarray(m_air, float), self.h)

    def boundary(self, i: int) -> np.ndarray:
        return self.blocks[i].b

    def step(self, i: int, T: np.ndarray, q: np.ndarray, p: np.ndarray | None = None):
        """Advance group ``i`` by one step.

        Parameters
        ----------
        T : ndarray, shape (n, m)
            Node temperatures at the start of the step [degC].
        q : ndarray, shape (n, m)
            Heat into each node, P + b ⊙ T_in [W].
        p : ndarray, shape (n, k), optional
            The devices' power [W], added to the first k nodes (the dies), less the share of
            each HBM node, which it receives (:meth:`SledGroup.heat_input`).

        Returns
        -------
        T_new : ndarray, shape (n, m)
            Node temperatures at the end of the step [degC].
        fluid_mean : ndarray, shape (n, 2)
            Step-mean temperature of the coolant and air nodes [degC].
        """
        blk = self.blocks[i]
        m = T.shape[1]
        X = blk.X
        X[:, :m] = T
        X[:, m:] = q
        if p is not None:
            X[:, m: m + p.shape[1]] += p
        if blk.shared:
            out = X @ blk.W[0]
        else:
            out = np.empty((X.shape[0], m + 2))
            for j, rows in enumerate(blk.rows):
                out[rows] = X[rows] @ blk.W[j]
        return out[:, :m], out[:, m:]

    def steady_state(self, i: int, q: np.ndarray) -> np.ndarray:
        """Steady node temperatures for constant heat input ``q`` (n, m) [W], its die rows the
        power entering each package (split with the HBM nodes, :meth:`SledGroup.split`, as
        :meth:`step` does): L T = split(q)."""
        blk = self.blocks[i]
        q = blk.group.split(q)
        A = blk.A[blk.inverse] if not blk.shared else np.broadcast_to(blk.A, (q.shape[0],) + blk.A.shape[1:])
        # A node with no conductance at all (the coolant node of an air-only sled) is inert: pin
        # it at 0 so the system is regular; nothing reads it and it stores no changing heat.
        isolated = np.all(A == 0.0, axis=2)
        if isolated.any():
            A = A + isolated[..., None] * np.eye(A.shape[-1])
        g = q / blk.cap
        return np.linalg.solve(A, g[..., None])[..., 0]


@functools.cache
def _zeroed_bdf():
    """scipy's BDF with its difference array zeroed at the start: the rows above the first two
    are allocated uninitialised and can be read on the first step, which made the reference path
    depend on memory contents. (Built on first use: scipy.integrate takes ~0.3 s to import and
    only the reference path needs it.)"""
    from scipy.integrate import BDF

    class ZeroedBDF(BDF):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.D[2:] = 0.0

    return ZeroedBDF


class ReferenceIntegrator(ExponentialIntegrator):
    """``solve_ivp`` (BDF with a sparse Jacobian) on the same problem: the reference path."""

    name = "reference"
    rtol = 1e-10
    atol = 1e-8

    def set_flows(self, i, m_coolant, m_air):
        import scipy.sparse

        super().set_flows(i, m_coolant, m_air)
        blk = self.blocks[i]
        n, m = blk.b.shape
        A_full = blk.A[blk.inverse]
        fluid = np.array([blk.group.cool, blk.group.air])
        # States: all node temperatures, then ∫T of each sled's two fluid nodes.
        J = scipy.sparse.block_diag([-a for a in A_full], format="csr")
        rows = np.arange(2 * n)
        cols = (np.arange(n)[:, None] * m + fluid[None, :]).ravel()
        S = scipy.sparse.csr_matrix((np.ones(2 * n), (rows, cols)), shape=(2 * n, n * m))
        zeros = scipy.sparse.csr_matrix((n * m + 2 * n, 2 * n))
        top = scipy.sparse.vstack([J, S])
        blk.jac = scipy.sparse.hstack([top, zeros], format="csc")

    def step(self, i, T, q, p=None):
        from scipy.integrate import solve_ivp

        blk = self.blocks[i]
        if p is not None:
            q = q.copy()
            q[:, : p.shape[1]] += p
        q = blk.group.split(q)  # (the die rows: power entering the package, as step folds it)
        n, m = T.shape
        g = np.concatenate([(q / blk.cap).ravel(), np.zeros(2 * n)])
        jac = blk.jac
        y0 = np.concatenate([T.ravel(), np.zeros(2 * n)])
        sol = solve_ivp(lambda t, y: jac @ y + g, (0.0, self.h), y0, method=_zeroed_bdf(),
                        jac=jac, rtol=self.rtol, atol=self.atol)
        if not sol.success:
            raise RuntimeError(f"reference solver failed in sled group '{blk.group.template}': {sol.message}")
        y = sol.y[:, -1]
        return y[: n * m].reshape(n, m), y[n * m:].reshape(n, 2) / self.h


#: Integrators by name (``--solver``).
INTEGRATORS = {"fast": ExponentialIntegrator, "reference": ReferenceIntegrator}
