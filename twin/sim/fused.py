"""The quiet block's feedback loop compiled into one pass over k steps (numba, the ``fast`` extra).

In a quiet block (:mod:`twin.sim.block`) each step's feedback loop is: the demand of the step
(the workload rules, evaluated ahead), chip power with leakage and the power limit
(:class:`~twin.power.chips.ChipPower`), the power shelves' over-current test, the sled networks'
exponential-integrator update (:class:`~twin.thermal.racks.RackThermal`, one product
``[T | q] @ W`` per sled) and the governors (:class:`~twin.power.chips.Governors`: thermal
throttle, power-limit clock, shutdown trip). The numpy path runs those components per step
(~30 array calls each); :func:`run_loop` does the k steps in one compiled call, with the same
equations in the same order, writing each step's loop outputs into preallocated (k, …) arrays
that the downstream part (shelves, manifolds, CDUs, chain, counters, recorder) reads as before.

Rounding: ``exp`` and ``pow`` are numba's (libm) where the reference uses numpy's, and the
product ``[T | q] @ W`` is summed in row order where the reference calls BLAS; each differs by
a few ulp per step (fastmath off), so die temperatures agree with the reference to ~1e-12
relative over a block and KPIs to ~1e-10 over a run (tests/sim/test_blocks.py states the
tolerances and why).

A step whose shelves come within 1e-9 of their rating is not taken: the kernel returns the
number of steps it took and the caller takes that step on the numpy path, which makes the exact
over-current decision (:meth:`twin.sim.block.QuietBlocks.run`).

Jobs. A job's demand reads the loop back (a synchronous training gang advances at the pace of
its slowest device's clock; a tripped device fails the job; a restarting job waits for its
dies to cool), so the loop cannot simply take the demand of the block from outside. Two forms
were open: carry each job's iteration state machine into the kernel, or write the demand
ahead in numpy for as long as it does not depend on the loop and stop the kernel where that
ends. The second is taken (:meth:`twin.workload.jobs.JobSet.ahead`), since in the benchmark
scenarios the gangs run at full clock almost all the time (hall-1k, Frontier and cluster-100k:
no throttled device-second in their first minutes) and it keeps the kernel free of job kinds:

- a training job at full clock: its progress at each step's start is the sum of the steps'
  gains before it, so the whole block's phases and loads are one elementwise evaluation of the
  per-step equations (:meth:`twin.workload.training_job.Training.ahead`: the same operations,
  so progress and tokens equal the per-step path's to the bit); the kernel watches the gang's
  devices and stops before a step that starts with one of them below full clock or tripped,
  and the per-step path takes the job while it is slowed. The block also ends before the step
  on which the job fails (its MTBF clock), takes its last iteration, or a queued job is due;
- a CPU batch job: its profile is open-loop; the work it counts reads each step's clocks and
  trips, which the kernel records, so it is summed after the loop in the per-step order;
- job accounting (each step's device power by owner, :meth:`twin.workload.jobs.JobSet.account_block`):
  one weighted bincount over the block's (steps, devices) powers, each step's sums in device
  order as the per-step ``bincount``;
- an inference pool while every chip of it runs at full clock and none is tripped (its
  replicas' clocks are then 1 whatever the loop does; it reads nothing else of the loop): it
  serves the block's k × n_sub workload sub-steps in one call of its compiled event loop
  (:meth:`twin.workload.inference_job.Inference.ahead`), with its state kept before
  (:meth:`~twin.workload.inference.InferencePool.checkpoint`); where the kernel stops early the
  pool is put back and serves the steps taken again (the same results), so tokens, request
  times and per-step demand equal the per-step path's to the bit;
- power floors and ramp limits (chip power smoothing) are the identity while no job sets them;
  a job that does keeps its blocks per step.

The facility plant's update step (every ``plant.step``) is the last step of a quiet block
(:mod:`twin.sim.block`): the loop takes it like any other, and the plant steps after the loop
on the sums of its inputs.
"""

from __future__ import annotations

import numpy as np

from twin.power.device import CLOCK_NEWTON_STEPS
from twin.power.governor import CLOCK_MIN, THROTTLE_DOWN_RATE, THROTTLE_GAIN, THROTTLE_UP_RATE
from twin.power.kernels import chip_arrays

#: Relative margin below the shelves' rating at which the compiled loop hands a step to the
#: numpy path (its rack sums are added in another order than numpy's: ~1e-13 relative).
SHELF_MARGIN = 1e-9
#: Sleds whose products ``[T | q] @ W`` the compiled loop forms together (consecutive sleds of
#: one group with the same W): their inputs and sums, node by node, fill ~20 KB (L1 cache).
SLED_CHUNK = 64
#: Devices of a tile of the compiled loop (temporal blocking, :func:`_loop`): whole racks with
#: the sled chunks that hold their devices, at least this many devices unless the system has
#: fewer; a tile's state and per-step inputs stay in the L2 cache (~300 B per device) over the
#: block's steps.
TILE_DEVICES = 1024
#: Systems of fewer devices take the loop as one tile: their state fits the last-level cache
#: already (measured, ``benchmarks/loop_ab.py``: Frontier's 47,360 devices 4-8 % slower in
#: 1,024-device tiles, cluster-100k's 201,550 9 % faster).
TILE_ABOVE = 100_000


class FusedLoop:
    """The compiled feedback loop of one simulation's quiet blocks.

    Parameters
    ----------
    quiet : QuietBlocks
        The quiet-block path it serves (its components and system).
    """

    def __init__(self, quiet):
        sim = quiet.sim
        sy = self.sy = sim.system
        self.quiet = quiet
        c = sy.chip
        k = NumbaChip(c)
        self.chip = k
        # each rack's devices, from rack_dev[r] to rack_dev[r + 1] (devices are numbered sled by
        # sled and sleds rack by rack, as the shelves' sums read them)
        self.rack_dev = np.ascontiguousarray(np.searchsorted(sy.device_rack, np.arange(sy.n_racks + 1)), dtype=np.int64)
        assert np.array_equal(np.repeat(np.arange(sy.n_racks), np.diff(self.rack_dev)), sy.device_rack)
        self.n_racks = sy.n_racks
        groups = sy.groups
        self.g_kd = np.array([g.k for g in groups], dtype=np.int64)
        self.g_m = np.array([g.m for g in groups], dtype=np.int64)
        self.g_ns = np.array([g.sleds.size for g in groups], dtype=np.int64)
        self.g_sled = np.concatenate([np.cumsum(self.g_ns) - self.g_ns, [self.g_ns.sum()]]).astype(np.int64)
        self.g_t = np.concatenate([[0], np.cumsum(self.g_ns * self.g_m)]).astype(np.int64)
        self.g_dev = np.concatenate([[0], np.cumsum(self.g_ns * self.g_kd)]).astype(np.int64)
        self.sleds = np.ascontiguousarray(np.concatenate([g.sleds for g in groups]), dtype=np.int64)
        self.devices = np.ascontiguousarray(np.concatenate([g.devices.ravel() for g in groups]), dtype=np.int64)
        # HBM nodes: each group's from g_hbm[g] to g_hbm[g + 1] in hbm_node (their node in the
        # sled) and hbm_slot (the slot of the device they belong to)
        self.g_hbm = np.concatenate([[0], np.cumsum([g.h for g in groups])]).astype(np.int64)
        self.hbm_node = np.ascontiguousarray(np.concatenate([[0]] + [g.hbm for g in groups])[1:], dtype=np.int64)
        self.hbm_slot = np.ascontiguousarray(np.concatenate([[0]] + [g.hbm_slot for g in groups])[1:], dtype=np.int64)
        self.hbm = bool(self.g_hbm[-1])
        # every chunk's [T | p | q_hbm | q_cool, q_air] node by node (x, built by _propagators), and one
        # chunk's product with W (y)
        self.x = np.empty(0)
        self.y = np.empty((int(self.g_m.max()) + 2) * SLED_CHUNK)
        self.rack_p = np.empty(0)  # each rack's DC demand per sub-step (sub-steps × racks)
        self.e = np.empty(sy.n_devices)  # each device's leakage factor at its die temperature,
        self.t_e = np.full(sy.n_devices, np.nan)  # the die temperature it is for (NaN: none yet)
        self.T = None  # the sleds' node temperatures end to end (racks.T are views of it)
        self._q = ((), np.empty(0))  # (the boundary heat arrays, end to end)
        self._w = (None, None)  # (the integrator blocks the flat propagators were built from, arrays)
        self.tiles = None  # (racks, their offsets, chunks, their offsets, each device's tile: _tiles)
        self.back = np.zeros(sy.n_devices, dtype=np.uint8)  # (each device's mate, _mates)
        self.save_f = np.empty((8, sy.n_devices))  # each tile's state at the block's start (_keep)
        self.save_b = np.empty((2, sy.n_devices), dtype=np.bool_)
        self.save_x = np.empty(0)
        _warm()  # compile (or load from numba's cache) now, while the simulation is built

    def _propagators(self, integrator):
        """Every group's propagators W flattened, and the chunks of sleds formed together:
        consecutive sleds of a group with the same W, at most :data:`SLED_CHUNK`, each with its
        group, first sled, number of sleds, offset into W and into the inputs ``x``. Of each
        W, the rows of the node temperatures, of the die nodes' heat input (device power), of
        the HBM nodes' (the HBM floor's offset, moved from the die) and of the coolant and air
        nodes' (the boundaries): the rows the heat input is not zero on (:func:`_sleds`)."""
        blocks = integrator.blocks
        if self._w[0] is not None and all(a is b for a, b in zip(self._w[0], blocks)):
            return self._w[1]
        w, offsets, start = [], [], 0
        for blk in blocks:
            g = blk.group
            m = g.m
            W = blk.W[:, np.r_[0: m + g.k, m + g.hbm, m + g.cool, m + g.air], :]
            size = W.shape[1] * W.shape[2]
            w.append(W.ravel())
            offsets.append(start + blk.inverse * size)
            start += W.size
        w_off = np.concatenate(offsets)
        chunks, x0 = [], 0
        for g in range(len(blocks)):
            first, end = int(self.g_sled[g]), int(self.g_sled[g + 1])
            rows = int(self.g_m[g] + self.g_kd[g] + self.g_hbm[g + 1] - self.g_hbm[g] + 2)
            cuts = np.flatnonzero(np.diff(w_off[first:end])) + 1 + first
            for a, b in zip(np.r_[first, cuts], np.r_[cuts, end]):
                for i0 in range(a, b, SLED_CHUNK):
                    chunks.append((g, i0, min(SLED_CHUNK, b - i0), w_off[i0], x0))
                    x0 += rows * SLED_CHUNK
        table = np.array(chunks, dtype=np.int64).reshape(-1, 5).T
        arrays = (np.ascontiguousarray(np.concatenate(w)), *(np.ascontiguousarray(c) for c in table))
        if self.x.size != x0:
            self.x = np.empty(x0)
            self.save_x = np.empty(x0)
        self._w = (list(blocks), arrays)
        self.tiles = self._tiles(table)
        self.back = self._mates(self.tiles[-1])
        return arrays

    def _mates(self, dev_tile):
        """Each device's *mate*, ``back[d]`` devices before it (0: none): the device of the
        same slot in the sled before its sled in its group, in the same tile (the loop takes
        it before ``d`` in each step). Where a mate has the same kind of device and the same
        die temperature, ``d``'s leakage factor is the mate's, already computed (the same
        ``exp`` of the same numbers: the same bits); identical sleds under identical load and
        boundaries (Frontier's 47,360 devices had 19-24 distinct die temperatures) take one
        ``exp`` per distinct temperature instead of one per device."""
        back = np.zeros(self.sy.n_devices, dtype=np.uint8)
        for g in self.sy.groups:
            if g.devices.shape[0] < 2:
                continue
            cur, prev = g.devices[1:].ravel(), g.devices[:-1].ravel()
            ok = (prev < cur) & (cur - prev <= np.iinfo(np.uint8).max) & (dev_tile[prev] == dev_tile[cur])
            back[cur[ok]] = (cur - prev)[ok]
        return back

    def _tiles(self, table):
        """The loop's tiles (:func:`_loop`): the racks joined by the sled chunks that hold
        devices or sleds of more than one of them (``table``: the chunks' group, first sled
        and number of sleds, rows of :meth:`_propagators`' table), such sets joined in the
        order of their first chunk until each holds :data:`TILE_DEVICES` devices. Returns each
        tile's racks and chunks (end to end, with offsets) and each device's tile."""
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        sy = self.sy
        nr, nc = self.n_racks, table.shape[1]
        chunk_racks = []
        for ci in range(nc):
            g, i0, ns = (int(v) for v in table[:3, ci])
            d0 = self.g_dev[g] + (i0 - self.g_sled[g]) * self.g_kd[g]
            devs = self.devices[d0: d0 + ns * self.g_kd[g]]
            chunk_racks.append(np.unique(np.concatenate([sy.sled_rack[self.sleds[i0: i0 + ns]], sy.device_rack[devs]])))
        a = np.concatenate([np.full(r.size, r[0]) for r in chunk_racks]) if nc else np.zeros(0, dtype=np.int64)
        b = np.concatenate(chunk_racks) if nc else np.zeros(0, dtype=np.int64)
        _, comp = connected_components(coo_matrix((np.ones(a.size), (a, b)), shape=(nr, nr)), directed=False)
        chunk_comp = np.array([comp[r[0]] for r in chunk_racks], dtype=np.int64)
        # the sets in the order of their first chunk (sets without a chunk after them)
        first = np.full(comp.max() + 1 if nr else 0, nc, dtype=np.int64)
        np.minimum.at(first, chunk_comp, np.arange(nc))
        order = np.argsort(first, kind="stable")
        n_dev = np.bincount(comp, weights=np.diff(self.rack_dev), minlength=first.size)
        tile_of_comp = np.empty(first.size, dtype=np.int64)
        t, size = 0, 0
        for c in order:
            if size >= TILE_DEVICES:
                t, size = t + 1, 0
            tile_of_comp[c] = t
            size += n_dev[c]
        rack_tile, chunk_tile = tile_of_comp[comp], tile_of_comp[chunk_comp]
        if sy.n_devices <= TILE_ABOVE:
            tile_of_comp[:] = 0
            t = 0
        n_tiles = t + 1 if nr else 0
        racks = np.argsort(rack_tile, kind="stable")
        chunks = np.argsort(chunk_tile, kind="stable")
        r_off = np.concatenate([[0], np.cumsum(np.bincount(rack_tile, minlength=n_tiles))])
        c_off = np.concatenate([[0], np.cumsum(np.bincount(chunk_tile, minlength=n_tiles))])
        dev_tile = rack_tile[sy.device_rack]
        return tuple(np.ascontiguousarray(v, dtype=np.int64) for v in (racks, r_off, chunks, c_off, dev_tile))

    def run(self, U, i0: int, h: float, capacity, fixed_rack, out, watch=None) -> int:
        """Take up to ``U.shape[0]`` steps of the loop from the present state; returns how many.

        Parameters
        ----------
        U : ndarray, shape (k, n_sub, devices)
            Each step's demanded utilisation [1].
        i0 : int
            Index of the first step.
        h : float
            Thermal step [s].
        capacity : ndarray, shape (racks,)
            The shelves' rating [W] (the lower of the chips' and the shelves' view).
        fixed_rack : ndarray, shape (racks,)
            Each rack's sled overhead and fans [W].
        out : dict
            Preallocated (k, …) arrays of :data:`twin.sim.block.LOOP_KEYS` (and ``t_cool``,
            ``t_air``) the steps are written into.
        watch : ndarray of int, optional
            Devices whose demand was computed ahead at full clock (the synchronous jobs'
            gangs): the loop stops before a step that would start with one of them below full
            clock or tripped (:meth:`twin.workload.jobs.JobSet.ahead`).
        """
        q = self.quiet
        st, racks, gov = q.sim.state, q.racks, q.governors
        ch = self.chip
        W, c_g, c_i0, c_ns, c_w0, c_x0 = self._propagators(racks.integrator)
        T = self.T  # (the last call's, unless a step outside the loop replaced some group's)
        if T is None or not all(t.base is T for t in racks.T):
            T = self.T = np.concatenate([t.ravel() for t in racks.T])
        if len(self._q[0]) != len(racks.q_base) or not all(a is b for a, b in zip(self._q[0], racks.q_base)):
            self._q = (tuple(racks.q_base), np.concatenate([b.ravel() for b in racks.q_base]))
        Q = self._q[1]
        clock_lim = np.array(st["device.clock_limit"], dtype=float)
        off = np.array(st["device.tripped"], dtype=np.bool_)
        gov_trip = np.array(gov.tripped, dtype=np.bool_)
        thermal = np.array(gov.clock_thermal, dtype=float)
        power = np.array(gov.clock_power, dtype=float)
        kind, table = ch.rows(gov.p_limit, st["device.held"])
        rack_limit = np.ascontiguousarray(capacity * (1.0 - SHELF_MARGIN), dtype=float)
        tile_rack, tile_r, tile_chunk, tile_c, dev_tile = self.tiles
        watch, tile_w = _watched(watch, tile_r, dev_tile)
        t_hbm = out["device.t_hbm"] if self.hbm else _NO_HBM
        hbm_peak = np.array(racks.t_hbm_peak, dtype=float) if self.hbm else _NONE_F  # (a copy: the loop keeps it)
        if self.rack_p.size != U.shape[1] * self.n_racks:
            self.rack_p = np.empty(U.shape[1] * self.n_racks)
        P, p_step, clock, clock_limit = (out[f"device.{key}"] for key in ("p", "p_step", "clock", "clock_limit"))
        # written once where they are views of one array (QuietBlocks._buffers): each step's mean
        # power its power with one sub-step, each step's clock the last step's clock limit
        p_alias = P.shape[1] == 1 and _is_view(p_step, P[:, 0])
        clock_alias = clock.shape[0] > 1 and _is_view(clock[1:], clock_limit[:-1])
        n = _compiled()(
            U, watch, kind, table, THROTTLE_GAIN, THROTTLE_DOWN_RATE, THROTTLE_UP_RATE, CLOCK_MIN,
            CLOCK_NEWTON_STEPS, float(h), self.rack_dev, np.ascontiguousarray(fixed_rack, dtype=float),
            rack_limit, self.g_kd, self.g_m, self.g_sled, self.g_t, self.g_dev, self.sleds, self.devices,
            self.g_hbm, self.hbm_node, self.hbm_slot, W, c_g, c_i0, c_ns, c_w0, c_x0, Q, T, clock_lim, off, gov_trip, thermal, power, racks.t_die, racks.t_die_peak,
            self.x, self.y, self.e, self.t_e, self.rack_p, P, p_step, p_alias, clock, clock_alias, out["device.t_die"],
            out["device.throttled"], out["device.clock_limit"], out["device.tripped"], out["t_cool"], out["t_air"], t_hbm,
            hbm_peak, tile_rack, tile_r, tile_chunk, tile_c, watch, tile_w, self.save_f, self.save_b, self.save_x,
            self.back)
        # the state as after the last step taken
        start = 0
        for i, t in enumerate(racks.T):
            racks.T[i] = T[start: start + t.size].reshape(t.shape)
            start += t.size
        gov.clock_thermal, gov.clock_power, gov.tripped = thermal, power, gov_trip
        gov.clock = clock_lim
        st["device.clock_limit"] = clock_lim
        st["device.tripped"] = off
        if self.hbm and n:  # (as RackThermal.integrate: each step's a new array, the peak its running fmax)
            racks.t_hbm = t_hbm[n - 1]
            racks.t_hbm_peak = hbm_peak
            st["device.t_hbm"] = racks.t_hbm
        return int(n)


def _watched(watch, tile_r, dev_tile):
    """The watched devices tile by tile and each tile's offsets into them (:func:`_loop`'s
    ``tile_watch``, ``tile_w``); with one tile, as they are (no sort: ~0.4 ms a block at
    Frontier size)."""
    if watch is None or not len(watch):
        return _NONE, np.zeros(tile_r.size, dtype=np.int64)
    if tile_r.size == 2:
        watch = np.ascontiguousarray(watch, dtype=np.int64)
        return watch, np.array([0, watch.size], dtype=np.int64)
    watch = np.asarray(watch, dtype=np.int64)
    wt = dev_tile[watch]
    tile_w = np.concatenate([[0], np.cumsum(np.bincount(wt, minlength=tile_r.size - 1))]).astype(np.int64)
    return np.ascontiguousarray(watch[np.argsort(wt, kind="stable")]), tile_w


def _is_view(a, b) -> bool:
    """Whether arrays ``a`` and ``b`` are the same elements of memory (the same start, shape and
    strides)."""
    return (a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


class NumbaChip:
    """The chip figures the compiled loop reads, as a table per kind of device: the distinct
    rows of the per-device constants of :func:`twin.power.kernels.chip_arrays` with each
    device's power limit [W] and whether it is held active (1 or 0), columns ``A``, ``E_IDLE``,
    … ``LIMIT``, ``HELD`` below, and each device's row. A few kinds (Frontier: 2; hall-1k: 8)
    instead of 15 per-device arrays: the loop reads one small integer per device for them, and
    the rows stay in cache. The values are the same numbers, so the equations give the same
    bits. The power limits and holds (constant within a block) are the last call's until they
    change."""

    def __init__(self, c: dict):
        self.columns = np.stack(chip_arrays(c), axis=1)
        self._key = (None, None)
        self._rows = None

    def rows(self, limit, held):
        """Each device's row (int32, (devices,)) and the table ((kinds, 15)) at power limits
        ``limit`` [W] and holds ``held``."""
        if not (np.array_equal(self._key[0], limit) and np.array_equal(self._key[1], held)):
            full = np.concatenate([self.columns, np.stack([limit, held], axis=1).astype(float)], axis=1)
            table, kind = distinct_rows(full)
            self._rows = (np.ascontiguousarray(kind.ravel(), dtype=np.int32), np.ascontiguousarray(table, dtype=float))
            self._key = (np.array(limit, dtype=float), np.array(held, dtype=bool))
        return self._rows


def distinct_rows(full):
    """The distinct rows of a float array ``full`` (n, m), bit for bit, and each row's index
    into them: ``table[kind]`` is ``full``. Rows are told apart by a 64-bit hash of their bits
    (a multiply-add per column, a sort of n integers) and checked against ``full`` afterwards;
    should two distinct rows share a hash, ``np.unique(axis=0)`` sorts the rows themselves
    (~0.4 CPU-s at 47,360 × 15, against a few ms). The table's order is the hashes' order, not
    the rows': the compiled loop only looks rows up."""
    bits = np.ascontiguousarray(full, dtype=float).view(np.uint64)
    h = bits[:, 0].copy()
    for j in range(1, bits.shape[1]):
        h *= np.uint64(0x9E3779B97F4A7C15)  # (wraps modulo 2**64)
        h ^= bits[:, j]
    _, first, kind = np.unique(h, return_index=True, return_inverse=True)
    if not np.array_equal(bits[first][kind], bits):  # a collision
        table, kind = np.unique(full, axis=0, return_inverse=True)
        return table, kind.ravel()
    return full[first], kind


#: Columns of the table of :meth:`NumbaChip.rows` (:func:`twin.power.kernels.chip_arrays`' order, then the
#: power limit and the hold; the compiled functions write the numbers).
(A, E_IDLE, P_LEAK_REF, T_REF, BETA, ALPHA, P_DYN, P_IDLE, ILF, EXCURSION, T_THROTTLE, HYSTERESIS, T_SHUTDOWN, LIMIT,
 HELD) = range(15)

_COMPILED = None
_NONE = np.zeros(0, dtype=np.int64)
_NO_HBM = np.zeros((0, 0))
_NONE_F = np.zeros(0)


def _compiled():
    """The compiled loop (compiled, or loaded from numba's cache, on first use); the parts it
    calls (and the per-device equations of :mod:`twin.power.compiled`) are compiled first and
    bound to the module's globals, where they find them."""
    global _COMPILED, _power_jit, _chunks_jit, _sleds_jit, _govern_jit, _tile, _keep, _alike, _dev, _u
    if _COMPILED is None:
        import numba

        from twin.power import compiled as _dev

        # indices read from arrays (device kinds, rack ranges, device, sled and HBM numbers) are
        # made unsigned where they index: numba tests a signed index for a negative value to
        # wrap around at every access, which cost the loop ~9 % at Frontier's size
        _u = numba.uint64

        jit = numba.njit(cache=True, nogil=True)
        _power_jit, _chunks_jit, _sleds_jit, _govern_jit = jit(_power), jit(_chunks), jit(_sleds), jit(_govern)
        _tile, _keep, _alike = jit(_tile), jit(_keep), jit(_alike)
        _COMPILED = jit(_loop)
    return _COMPILED


def _warm() -> None:
    """One call of the compiled loop on a one-device system, for zero steps: numba compiles it
    (or loads it from its cache) for the argument types of :meth:`FusedLoop.run`."""
    f, i, b = np.zeros(1), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.bool_)
    f2, f3, b2 = np.zeros((0, 1)), np.zeros((0, 1, 1)), np.zeros((0, 1), dtype=np.bool_)
    _compiled()(f3, i, np.zeros(1, dtype=np.int32), np.zeros((1, 15)), 0.0, 0.0, 0.0, 0.0, 1, 1.0, np.zeros(2, dtype=np.int64), f, f,
                *(i,) * 10, f, *(i,) * 5, f, f, f, b, b, f, f, f, f, f, f, f, f, f, f3, f2, False, f2, False, f2, b2, f2,
                b2, f2, f2, f2, f, i, np.zeros(1, dtype=np.int64), i, np.zeros(1, dtype=np.int64), i,
                np.zeros(1, dtype=np.int64), np.zeros((8, 1)), np.zeros((2, 1), dtype=np.bool_), f,
                np.zeros(1, dtype=np.uint8))


def _loop(U, watch, kind, tab, gain, down_rate, up_rate, clock_min, newton, dt, rack_dev, fixed_rack, rack_limit, g_kd, g_m, g_sled, g_t, g_dev, sleds, devices, g_hbm, hbm_node,
          hbm_slot, W, c_g, c_i0, c_ns, c_w0, c_x0, Q, T, clock_lim, off, gov_trip, thermal, power, t_die, t_die_peak,
          x, y, e, t_e, rack_p, P, p_step, p_alias, clock_out, clock_alias, t_die_out, throttled_out, clock_limit_out,
          tripped_out, t_cool, t_air, t_hbm, t_hbm_peak, tile_rack, tile_r, tile_chunk, tile_c, tile_watch, tile_w,
          save_f, save_b, save_x, back):
    """``U.shape[0]`` steps of the feedback loop; returns the number taken (a step whose
    shelves come within the margin of ``rack_limit`` is not taken, nor one that starts with a
    device of ``watch`` below full clock or tripped), tile by tile (temporal blocking): within a
    block nothing couples racks (the sled networks are per sled, the shelves' test per rack,
    the boundaries held), so each tile (racks ``tile_rack[tile_r[t]:tile_r[t + 1]]``, the sled
    chunks ``tile_chunk[tile_c[t]:tile_c[t + 1]]`` that hold their devices and the devices of
    ``watch`` among them, ``tile_watch[tile_w[t]:tile_w[t + 1]]``) takes the block's steps
    while its state stays in cache (:func:`_tile`), up to its own first stop or the fewest
    steps a tile before it took. The block takes the fewest of all; a tile that took more is
    put back to its state at the block's start (kept in ``save_f``, ``save_b``, ``save_x``)
    and takes that many again. Each device, sled and rack does the same arithmetic in the same
    order as step by step over all devices: the same bits. ``back``: each device's mate
    (:meth:`FusedLoop._mates`), whose leakage factor it takes where their kinds and die
    temperatures are equal."""
    n = U.shape[0]
    nt = tile_r.size - 1
    taken = np.empty(nt, dtype=np.int64)
    for t in range(nt):
        _chunks_jit(True, g_kd, g_m, g_sled, g_t, g_hbm, hbm_node, c_g, c_i0, c_ns, c_x0, tile_chunk, tile_c[t],
                    tile_c[t + 1], Q, T, x, y.size // (g_m.max() + 2))
        if nt > 1:  # (one tile takes the block's n steps: nothing to put back)
            _keep(True, t, rack_dev, tile_rack, tile_r, tile_chunk, tile_c, g_m, c_g, c_x0, y.size // (g_m.max() + 2),
                  e, t_e, clock_lim, thermal, power, t_die, t_die_peak, t_hbm_peak, off, gov_trip, x, save_f, save_b,
                  save_x)
        taken[t] = _tile(t, n, U, kind, tab, gain, down_rate, up_rate, clock_min, newton, dt, rack_dev, fixed_rack,
                         rack_limit, g_kd, g_m, g_sled, g_t, g_dev, sleds, devices, g_hbm, hbm_node, hbm_slot, W, c_g,
                         c_i0, c_ns, c_w0, c_x0, Q, T, clock_lim, off, gov_trip, thermal, power, t_die, t_die_peak, x,
                         y, e, t_e, rack_p, P, p_step, p_alias, clock_out, clock_alias, t_die_out, throttled_out,
                         clock_limit_out, tripped_out, t_cool, t_air, t_hbm, t_hbm_peak, tile_rack, tile_r, tile_chunk,
                         tile_c, tile_watch, tile_w, back)
        if taken[t] < n:
            n = taken[t]
    for t in range(nt):
        if taken[t] > n:  # (rare: a block that stops early) back to the block's start, and n steps again
            _keep(False, t, rack_dev, tile_rack, tile_r, tile_chunk, tile_c, g_m, c_g, c_x0, y.size // (g_m.max() + 2),
                  e, t_e, clock_lim, thermal, power, t_die, t_die_peak, t_hbm_peak, off, gov_trip, x, save_f, save_b,
                  save_x)
            _tile(t, n, U, kind, tab, gain, down_rate, up_rate, clock_min, newton, dt, rack_dev, fixed_rack,
                  rack_limit, g_kd, g_m, g_sled, g_t, g_dev, sleds, devices, g_hbm, hbm_node, hbm_slot, W, c_g,
                  c_i0, c_ns, c_w0, c_x0, Q, T, clock_lim, off, gov_trip, thermal, power, t_die, t_die_peak, x,
                  y, e, t_e, rack_p, P, p_step, p_alias, clock_out, clock_alias, t_die_out, throttled_out,
                  clock_limit_out, tripped_out, t_cool, t_air, t_hbm, t_hbm_peak, tile_rack, tile_r, tile_chunk,
                  tile_c, tile_watch, tile_w, back)
    return n


def _tile(t, k, U, kind, tab, gain, down_rate, up_rate, clock_min, newton, dt, rack_dev, fixed_rack, rack_limit, g_kd,
          g_m, g_sled, g_t, g_dev, sleds, devices, g_hbm, hbm_node, hbm_slot, W, c_g, c_i0, c_ns, c_w0, c_x0, Q, T,
          clock_lim, off, gov_trip, thermal, power, t_die, t_die_peak, x, y, e, t_e, rack_p, P, p_step, p_alias,
          clock_out, clock_alias, t_die_out, throttled_out, clock_limit_out, tripped_out, t_cool, t_air, t_hbm,
          t_hbm_peak, tile_rack, tile_r, tile_chunk, tile_c, tile_watch, tile_w, back):
    """Up to ``k`` steps of tile ``t`` (:func:`_loop`); returns the number taken: chip power with
    the shelves' test (:func:`_power`), the sled networks (:func:`_sleds`) and the governors
    (:func:`_govern`), each step, over the tile's racks, chunks and devices. The node
    temperatures are held node by node in the chunks' inputs ``x`` over the steps (put
    there by :func:`_loop`, back into ``T`` here: :func:`_chunks`). ``e`` holds each device's
    leakage factor at its die temperature (:func:`twin.power.compiled.leak_factor`): computed
    here for the first step where the die temperature is not ``t_e``'s (the one the factor
    was last computed for: a block after a block keeps the factors, the same numbers), then
    by the governors for the next. Chip figures: row ``kind[d]`` of ``tab`` (:class:`NumbaChip`)."""
    r_a, r_b, c_a, c_b = tile_r[t], tile_r[t + 1], tile_c[t], tile_c[t + 1]
    chunk = y.size // (g_m.max() + 2)
    for ri in range(r_a, r_b):
        r = _u(tile_rack[ri])
        for dd in range(rack_dev[r], rack_dev[r + 1]):
            d = _u(dd)
            if t_die[d] != t_e[d]:  # (else e[d] holds the factor at t_die[d] already: the last call's)
                kd = _u(kind[d])
                m = d - _u(back[d])  # (its mate: taken before it, e[m] the factor at t_die[m])
                if m != d and kind[m] == kind[d] and t_die[m] == t_die[d]:
                    e[d] = e[m]
                else:
                    e[d] = _dev.leak_factor(t_die[d], tab[kd, 3], tab[kd, 4])
    n = k
    for j in range(k):
        if j > 0:
            stop = False
            for i in range(tile_w[t], tile_w[t + 1]):
                w = _u(tile_watch[i])
                if clock_lim[w] != 1.0 or off[w]:
                    stop = True
            if stop:
                n = j
                break
        if _power_jit(j, U, kind, tab, clock_lim, off, e, rack_dev, fixed_rack, rack_limit, tile_rack, r_a, r_b,
                      rack_p, P, p_step, not p_alias, clock_out, j == 0 or not clock_alias):
            n = j
            break
        _sleds_jit(j, g_kd, g_m, g_sled, g_dev, sleds, devices, g_hbm, hbm_node, hbm_slot, W, c_g, c_i0, c_ns, c_w0,
                   c_x0, tile_chunk, c_a, c_b, p_step, x, y, t_cool, t_air, t_hbm, t_hbm_peak, t_die_out)
        _govern_jit(j, U, kind, tab, gain, down_rate, up_rate, clock_min, newton, dt, rack_dev, tile_rack, r_a, r_b,
                    clock_lim, off, gov_trip, thermal, power, t_die, t_die_peak, e, t_die_out, throttled_out,
                    clock_limit_out, tripped_out, back)
    _chunks_jit(False, g_kd, g_m, g_sled, g_t, g_hbm, hbm_node, c_g, c_i0, c_ns, c_x0, tile_chunk, c_a, c_b, Q, T, x,
                chunk)
    for ri in range(r_a, r_b):  # (the governors left e at the die temperatures)
        r = _u(tile_rack[ri])
        for dd in range(rack_dev[r], rack_dev[r + 1]):
            t_e[_u(dd)] = t_die[_u(dd)]
    return n


def _keep(save, t, rack_dev, tile_rack, tile_r, tile_chunk, tile_c, g_m, c_g, c_x0, chunk, e, t_e, clock_lim, thermal,
          power, t_die, t_die_peak, t_hbm_peak, off, gov_trip, x, save_f, save_b, save_x):
    """Tile ``t``'s state (its devices' leakage factors, governors, clocks, trips, die
    temperatures and peaks, its chunks' node temperatures in ``x``) into ``save_f`` (8 ×
    devices), ``save_b`` (2 × devices) and ``save_x`` (as ``x``) (``save``), or back from them."""
    hbm = t_hbm_peak.size > 0
    for ri in range(tile_r[t], tile_r[t + 1]):
        r = _u(tile_rack[ri])
        for dd in range(rack_dev[r], rack_dev[r + 1]):
            d = _u(dd)
            if save:
                save_f[0, d], save_f[1, d], save_f[2, d], save_f[3, d] = e[d], t_e[d], clock_lim[d], thermal[d]
                save_f[4, d], save_f[5, d], save_f[6, d] = power[d], t_die[d], t_die_peak[d]
                if hbm:
                    save_f[7, d] = t_hbm_peak[d]
                save_b[0, d], save_b[1, d] = off[d], gov_trip[d]
            else:
                e[d], t_e[d], clock_lim[d], thermal[d] = save_f[0, d], save_f[1, d], save_f[2, d], save_f[3, d]
                power[d], t_die[d], t_die_peak[d] = save_f[4, d], save_f[5, d], save_f[6, d]
                if hbm:
                    t_hbm_peak[d] = save_f[7, d]
                off[d], gov_trip[d] = save_b[0, d], save_b[1, d]
    for cc in range(tile_c[t], tile_c[t + 1]):
        ci = _u(tile_chunk[cc])
        x0 = c_x0[ci]
        for i in range(x0, x0 + g_m[c_g[ci]] * chunk):  # (the node temperatures: the rest is rewritten or held)
            if save:
                save_x[_u(i)] = x[_u(i)]
            else:
                x[_u(i)] = save_x[_u(i)]


def _chunks(into, g_kd, g_m, g_sled, g_t, g_hbm, hbm_node, c_g, c_i0, c_ns, c_x0, tile_chunk, c_a, c_b, Q, T, x,
            chunk):
    """The node temperatures ``T`` (sled by sled) into the chunks' inputs ``x`` (node by node,
    ``chunk`` apart) with the HBM nodes' heat (the floor's offset) and the coolant and air
    nodes' boundary heat ``Q``, which hold over the block (``into``); or back from them. Over the
    chunks ``tile_chunk[c_a:c_b]``."""
    for cc in range(c_a, c_b):
        ci = tile_chunk[cc]
        g = c_g[ci]
        m, kd, x0 = g_m[g], g_kd[g], c_x0[ci]
        for s in range(c_ns[ci]):
            base = g_t[g] + (c_i0[ci] - g_sled[g] + s) * m
            if into:
                nh = g_hbm[g + 1] - g_hbm[g]
                for c in range(m):
                    x[x0 + c * chunk + s] = T[base + c]
                for c in range(nh):
                    x[x0 + (m + kd + c) * chunk + s] = Q[base + hbm_node[g_hbm[g] + c]]
                x[x0 + (m + kd + nh) * chunk + s] = Q[base + m - 2]
                x[x0 + (m + kd + nh + 1) * chunk + s] = Q[base + m - 1]
            else:
                for c in range(m):
                    T[base + c] = x[x0 + c * chunk + s]


def _power(j, U, kind, tab, clock_lim, off, e, rack_dev, fixed_rack, rack_limit, tile_rack, r_a, r_b, rack_p, P,
           p_step, write_mean, clock_out, write_clock):
    """Step ``j``'s device power per sub-step into ``P[j]``, its mean into ``p_step[j]`` (if
    ``write_mean``: else ``p_step`` is ``P[:, 0]``) and the clock it ran at into
    ``clock_out[j]`` (if ``write_clock``: else the last step's governors wrote it): :func:`twin.power.compiled.device_power` (as
    ``ChipPower.step``) with the leakage factors ``e`` at the die temperatures, then numpy's
    mean over the sub-steps (summed in order, divided). Returns whether some rack's DC demand
    in a sub-step (devices + overhead + fans, ``fixed_rack``; summed in device order into
    ``rack_p``, (sub-steps × racks)) exceeds ``rack_limit`` (the shelves' rating less the
    margin). Over the racks ``tile_rack[r_a:r_b]`` (a tile's, :func:`_tile`)."""
    n_sub = U.shape[1]
    nr = fixed_rack.size
    if n_sub == 1:  # (one sub-step, the usual case: each rack's running sum in a register)
        for ri in range(r_a, r_b):
            r = _u(tile_rack[ri])
            tot = fixed_rack[r]
            for dd in range(rack_dev[r], rack_dev[r + 1]):
                d = _u(dd)  # (unsigned: no wraparound test where it indexes)
                if write_clock:
                    clock_out[j, d] = clock_lim[d]
                p = 0.0
                if not off[d]:
                    k = _u(kind[d])
                    floor, fa, idle = _dev.power_terms(clock_lim[d], e[d], tab[k, 0], tab[k, 1], tab[k, 2], tab[k, 5],
                                                       tab[k, 7], tab[k, 8])
                    p = _dev.device_power(U[j, 0, d], tab[k, 14] != 0.0, floor, fa, tab[k, 6], idle,
                                          tab[k, 9] * tab[k, 13])
                P[j, 0, d] = p
                if write_mean:
                    p_step[j, d] = p
                tot += p
            rack_p[r] = tot
        for ri in range(r_a, r_b):
            r = _u(tile_rack[ri])
            if rack_p[r] > rack_limit[r]:
                return True
        return False
    for ri in range(r_a, r_b):
        r = _u(tile_rack[ri])
        for s in range(n_sub):
            rack_p[s * nr + r] = fixed_rack[r]
    for ri in range(r_a, r_b):
        r = _u(tile_rack[ri])
        for dd in range(rack_dev[r], rack_dev[r + 1]):
            d = _u(dd)  # (unsigned: no wraparound test where it indexes)
            if write_clock:
                clock_out[j, d] = clock_lim[d]
            if off[d]:
                for s in range(n_sub):
                    P[j, s, d] = 0.0
                    rack_p[s * nr + r] += 0.0
                if write_mean:
                    p_step[j, d] = 0.0
                continue
            k = _u(kind[d])
            floor, fa, idle = _dev.power_terms(clock_lim[d], e[d], tab[k, 0], tab[k, 1], tab[k, 2], tab[k, 5],
                                               tab[k, 7], tab[k, 8])
            cap = tab[k, 9] * tab[k, 13]
            p_dyn = tab[k, 6]
            hd = tab[k, 14] != 0.0
            acc = 0.0
            for s in range(n_sub):
                p = _dev.device_power(U[j, s, d], hd, floor, fa, p_dyn, idle, cap)
                P[j, s, d] = p
                rack_p[s * nr + r] += p
                acc = p if s == 0 else acc + p
            if write_mean:
                p_step[j, d] = acc if n_sub == 1 else acc / n_sub
    for ri in range(r_a, r_b):
        r = _u(tile_rack[ri])
        for s in range(n_sub):
            if rack_p[s * nr + r] > rack_limit[r]:
                return True
    return False


def _sleds(j, g_kd, g_m, g_sled, g_dev, sleds, devices, g_hbm, hbm_node, hbm_slot, W, c_g, c_i0, c_ns, c_w0, c_x0,
           tile_chunk, c_a, c_b, p_step, x, y, t_cool, t_air, t_hbm, t_hbm_peak, t_die_out):
    """Every sled network over step ``j``: ``[T | q + p] @ W`` per sled (each column summed
    over the rows in order), as ``ExponentialIntegrator.step``; new node temperatures into
    the chunks' inputs ``x``, the new die temperatures into ``t_die_out[j]`` (the governors
    take them from there), step-mean coolant and air temperatures into ``t_cool[j]``,
    ``t_air[j]``, the HBM nodes' temperatures into ``t_hbm[j]`` at their devices and their
    running peak into ``t_hbm_peak`` (``np.fmax``'s: the larger, or the one that is not NaN;
    the same as the block's ``np.fmax.reduce`` after it, since a maximum does not round) (the
    device power enters on the die rows, the HBM nodes' share of it folded into those rows of
    W; the HBM floor's offset enters on the HBM rows, with the boundaries).

    Of the heat input ``q`` only the die rows (device power), the HBM rows (the floor's offset,
    ``Q``) and the coolant and air nodes (boundaries, ``Q``) are not zero: the product runs over
    the node temperatures and those ``k + h + 2`` rows (W's rows of the other nodes are left out of ``W`` by
    :meth:`FusedLoop._propagators`). A left-out term is ``0 · w``, whose sum with the running
    total is that total: the same bits.

    The sleds of a chunk (consecutive sleds of a group with the same W) are formed together,
    node by node: their inputs stay in ``x`` from step to step (the node temperatures and the
    boundaries; only the device power is written each step), the innermost loop runs over the
    sleds, reading ``x`` and ``y`` linearly, which the compiler turns into vector instructions;
    each sled's sums keep the row order; a chunk whose sleds all have the first one's inputs
    forms the first sled's product and copies it (:func:`_alike`). Over the chunks
    ``tile_chunk[c_a:c_b]`` (a tile's)."""
    chunk = y.size // (g_m.max() + 2)
    t_new = t_die_out[j]
    for cc in range(c_a, c_b):
        ci = _u(tile_chunk[cc])
        g = c_g[ci]
        m, kd, x0, ns = g_m[g], g_kd[g], c_x0[ci], c_ns[ci]
        cols = m + 2
        rows = m + kd + g_hbm[g + 1] - g_hbm[g] + 2
        dev0 = g_dev[g] + (c_i0[ci] - g_sled[g]) * kd
        for s in range(ns):  # the device power node by node (unsigned indices: see chunk_product)
            for c in range(kd):
                x[_u(x0 + (m + c) * chunk + s)] = p_step[j, _u(devices[_u(dev0 + s * kd + c)])]
        xc = x[x0: x0 + rows * chunk]
        if _alike(xc, rows, ns, chunk):  # (every sled's inputs the first's: its product is theirs)
            _dev.chunk_product(xc, y, W, c_w0[ci], rows, cols, 1, chunk)
            for c in range(cols):
                v = y[_u(c * chunk)]
                for s in range(1, ns):
                    y[_u(c * chunk + s)] = v
        else:
            _dev.chunk_product(xc, y, W, c_w0[ci], rows, cols, ns, chunk)
        for c in range(m):  # the new node temperatures: the next step's inputs
            for s in range(ns):
                xc[_u(c * chunk + s)] = y[_u(c * chunk + s)]
        for s in range(ns):
            sl = _u(sleds[_u(c_i0[ci] + s)])
            t_cool[j, sl] = y[_u(m * chunk + s)]
            t_air[j, sl] = y[_u((m + 1) * chunk + s)]
            d0 = dev0 + s * kd
            for c in range(g_hbm[g], g_hbm[g + 1]):
                dh = _u(devices[_u(d0 + hbm_slot[_u(c)])])
                th = y[_u(hbm_node[_u(c)] * chunk + s)]
                t_hbm[j, dh] = th
                peak = t_hbm_peak[dh]
                if th > peak or peak != peak:  # (np.fmax: the larger, or the one that is not NaN)
                    t_hbm_peak[dh] = th
            for c in range(kd):
                t_new[_u(devices[_u(d0 + c)])] = y[_u(c * chunk + s)]


def _alike(xc, rows, ns, chunk):
    """Whether each of a chunk's ``ns`` sleds has the first sled's inputs (``xc``: rows ×
    ``chunk``, node by node), compared with ``==``: the products of equal inputs with one W are
    equal, bit for bit (a product's sum starts from +0.0, so inputs that differ only in the
    sign of a zero add up the same; a NaN is unequal to all). Identical sleds under identical
    load and boundaries (every chunk of the Frontier benchmark) take one sled's product."""
    if ns < 2:
        return False
    for r in range(rows):
        v = xc[_u(r * chunk)]
        for s in range(1, ns):
            if xc[_u(r * chunk + s)] != v:
                return False
    return True


def _govern(j, U, kind, tab, gain, down_rate, up_rate, clock_min, newton, dt, rack_dev, tile_rack, r_a, r_b,
            clock_lim, off, gov_trip, thermal, power, t_die, t_die_peak, e, t_die_out, throttled_out, clock_limit_out,
            tripped_out, back):
    """The governors after step ``j``, per device at its new die temperature ``t_die_out[j]``
    (from the sled networks; ``t_die`` holds the step's start and gets the new): thermal
    throttle, shutdown trip and its restart, the power-limit clock (Newton at the step's
    highest demand, only where the power at full clock exceeds the limit) and their minimum,
    as ``Governors.step`` (no caps, every rack powered), with the equations of
    :mod:`twin.power.compiled`; the leakage factor at the new die temperature into ``e`` (the
    next step's power reads it: one ``exp`` per device and step, none where the die
    temperature did not change — the factor is then the one ``e`` holds — and none where the
    device's mate ``back[d]`` devices before it, taken before it, has the same kind and the same
    new die temperature: its factor is the same ``exp`` of the same numbers). Over the devices
    of the racks ``tile_rack[r_a:r_b]``."""
    Uj = U[j]
    for ri in range(r_a, r_b):
        r = _u(tile_rack[ri])
        for dd in range(rack_dev[r], rack_dev[r + 1]):
            d = _u(dd)
            td = t_die_out[j, d]
            k = _u(kind[d])
            t_throttle = tab[k, 10]
            if td != t_die[d]:
                m = d - _u(back[d])  # (its mate, taken before it in this step: e[m] the factor at t_die[m])
                if m != d and kind[m] == kind[d] and t_die[m] == td:
                    e[d] = e[m]
                else:
                    e[d] = _dev.leak_factor(td, tab[k, 3], tab[k, 4])
            t_die[d] = td
            if td > t_die_peak[d]:  # (max: the first unless the second is larger)
                t_die_peak[d] = td
            th = thermal[d]
            throttled_out[j, d] = th < 1.0
            cc = _dev.thermal_clock(th, td, t_throttle, tab[k, 11], gain, down_rate, up_rate, clock_min, dt)
            was = gov_trip[d]
            tripped = (was or td > tab[k, 12]) and not (td < t_throttle)
            pw = _dev.power_clock(_dev.peak(Uj, d), e[d], tab[k, 13], tab[k, 0], tab[k, 2], tab[k, 5], tab[k, 6],
                                  clock_min, newton)
            cl = min(cc, pw)
            # the state written only where it changes (most devices hold full clock step after step:
            # their cache lines stay clean and are not written back)
            if cc != th:
                thermal[d] = cc
            if pw != power[d]:
                power[d] = pw
            if cl != clock_lim[d]:
                clock_lim[d] = cl
            if tripped != was:
                gov_trip[d] = tripped
            if tripped != off[d]:
                off[d] = tripped
            clock_limit_out[j, d] = cl
            tripped_out[j, d] = tripped


_power_jit, _chunks_jit, _sleds_jit, _govern_jit = _power, _chunks, _sleds, _govern
