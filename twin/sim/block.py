"""Quiet blocks: k thermal steps with the feedback loop stepped per step and everything
downstream of it computed for the whole block at once.

Within a step the components form one feedback loop — demand (the rules and the jobs), chip
power, the sled networks' temperatures and the governors (each step's power depends on the last
step's temperatures and clocks) — and a downstream part that reads the loop but feeds nothing
back while nothing unusual happens: the power shelves' DC sums and AC input, the rack manifolds'
heat and temperatures, the CDUs' pumps and heat, the power chain's facility power, the energy
counters and the recorder. In a *quiet* block (no event due, no multi-rate component updating before its last step,
no power capping, every rack powered, the UPS not on battery, the CDUs' supply pipes steady) the loop runs per step and the downstream part runs once over the block's (k, …)
arrays (:meth:`step_block` of :class:`~twin.power.shelves.Shelves`,
:class:`~twin.thermal.racks.RackThermal`, :class:`~twin.cooling.cdu.SimpleCdu` and
:class:`~twin.power.chain.PowerChain`), with the same operations in the same order as their
per-step :meth:`step`, which stays the reference: the results are bit-identical
(tests/sim/test_blocks.py).

Jobs: their demand is part of the loop (a job reads its devices' clocks, trips and die
temperatures), and so is their accounting (:class:`~twin.workload.components.JobAccounting`,
which attributes each step's device power to the jobs that own the devices then: a job starting
or finishing within a block changes the owners from that step on). Inference pools serve inside
the jobs' demand, so they take the quiet path too.

A multi-rate component (the facility plant's equipment, every ``plant.step``) ends blocks: a
block ends on the step on which it updates (:meth:`~twin.sim.driver.Simulation.quiet_length`;
its new outputs are the next steps' boundaries, which no step of the block reads). In the
block's other steps its outputs are held, so only the sums of its inputs advance
(:meth:`~twin.sim.component.Schedule.accumulate`); on the last step it adds that step's inputs
and steps on their means (:meth:`~twin.sim.component.Schedule.step_multi`). The power chain,
the counters and the recorder then read its outputs per step — held, then the new values on
the last step — as in the per-step path (the plant reads nothing the chain or the governors
write, so it may step before the chain takes the block). A modelled power chain (UPS,
transformers) is scalar work per step; it runs per step over the block's arrays after the loop.

A step whose power shelves would trip on over-current ends the block before it (the trip feeds
back from the next step on); that step, and any configuration or moment that is not quiet,
takes the per-step path.

The loop runs compiled when the simulation's quiet-block kernel is numba
(:func:`twin.power.kernels.choose_block`) and the jobs' demand can be written ahead (training
and inference pools at full clock, CPU batch: :meth:`twin.workload.jobs.JobSet.ahead`;
otherwise the block takes the per-step loop, for one step when a queued job starts in it): :class:`twin.sim.fused.FusedLoop` takes the block's
steps in one call and writes each step's loop outputs (:data:`LOOP_KEYS`) into the block's
arrays, which the downstream part reads as it reads the per-step loop's; its results agree with
the reference to a few ulp per step (numba's ``exp``/``pow`` and row-order sums against numpy's
and BLAS's), not to the bit. A step it leaves (its shelves near their rating) ends its block,
and the next block takes the per-step loop.
"""

from __future__ import annotations

import math
from time import perf_counter

import numpy as np

from twin.sim.accounts import block_sums, sled_sums
from twin.sim.component import step_mean
from twin.workload.engine import BLOCK_VALUES

#: Keys the loop writes each step that the recorder, the counters or ``each`` may read.
LOOP_KEYS = ("device.u", "device.repair", "device.p", "device.p_step", "device.clock", "device.t_die",
             "device.throttled", "device.clock_limit", "device.tripped", "rack.psu_overload",
             "rack.throttled", "rack.capped", "sled.p_devices")
#: The components every quiet scenario has, in step order; a scenario with jobs has job
#: accounting after the chip power, and the cooling between the racks and the power chain is
#: either the CDU model or multi-rate equipment (the facility plant).
#: Upper bound on a block's steps × sleds: the downstream part holds a few (steps, sleds) arrays
#: at once (≈ 2 MB each), so a large system takes shorter blocks and memory stays flat.
BLOCK_SLED_VALUES = 250_000
HEAD = ("NetworkPower", "Demand", "ChipPower")
TAIL = ("PowerChain", "Governors")


class QuietBlocks:
    """The quiet-block path of one simulation (None from :meth:`build` where it does not apply).

    Parameters
    ----------
    sim : Simulation
    """

    def __init__(self, sim):
        self.sim = sim
        c = {type(x).__name__: x for x in sim.components}
        self.demand, self.chips, self.shelves = c["Demand"], c["ChipPower"], c["Shelves"]
        self.racks, self.chain, self.governors = c["RackThermal"], c["PowerChain"], c["Governors"]
        self.cdu = c.get("SimpleCdu")  # None with a plant
        self.accounting = c.get("JobAccounting")  # None without jobs
        self.loop_keys = LOOP_KEYS + tuple(v.key for v in self.accounting.outputs) if self.accounting else LOOP_KEYS
        if self.racks.hbm:  # (a new array each step: RackThermal._hbm_temperatures)
            self.loop_keys += ("device.t_hbm",)
        # what the downstream part reads of the loop's values: the shelves' sums, the energy
        # counters and the multi-rate components' inputs (the recorder's variables are added
        # when recording, all of them when ``each`` reads each step)
        used = {"sled.p_devices", *sim._counters,
                *(key for _, sums, _ in sim.schedule._multi.values() for key in sums)}
        self._used = tuple(key for key in self.loop_keys if key in used)
        recorded = {key for g in sim.recorder.groups.values() for key in g.keys}
        self._recorded = tuple(key for key in self.loop_keys if key in used or key in recorded)
        # the multi-rate components' outputs each step's values are kept of when they update on
        # a block's last step: those recorded or counted (and all recorded ones for ``each``)
        plant = [v for _, (c, _, _) in sim.schedule._multi.items() for v in c.outputs]
        self._plant_all = tuple(v.key for v in plant if v.record or v.counter)
        chain_in = set(self.chain.inputs)
        self._plant_keys = tuple(key for key in self._plant_all
                                 if key in recorded or key in sim._counters or key in chain_in)
        self.steps = 0  # steps taken in quiet blocks so far
        #: Steps of one block at most (its (k, sub-steps, devices) arrays stay within ~16 MB each).
        self.max_steps = max(64, BLOCK_VALUES // (sim.n_sub * sim.system.n_devices))
        #: The compiled loop (:mod:`twin.sim.fused`), or None for the per-step reference.
        self.fused = None
        self._compile = False  # build the compiled loop at the first block (numba loads then)
        self._no_bins = np.zeros(sim.system.n_devices, dtype=np.int64)  # (no jobs: every device in bin 0)
        starts = np.ascontiguousarray(sim.system.sled_device_start, dtype=np.int64)
        ok = starts.size and starts[0] == 0 and (np.diff(starts) > 0).all() and starts[-1] < sim.system.n_devices
        self._sled_starts = starts if ok else None  # (a sled without devices: numpy's reduceat)

    @classmethod
    def build(cls, sim):
        """The quiet-block path for ``sim``, or None when its components are not the ones it
        knows (another CDU model, equipment stepping every step besides them, the reference
        integrator)."""
        from twin.thermal.integrators import ExponentialIntegrator

        names = [type(c).__name__ for c in sim.components]
        head = HEAD + (("JobAccounting",) if sim.jobs is not None else ())
        middle = names[len(head) + 2: len(names) - len(TAIL)]
        if (tuple(names[: len(head) + 2]) != head + ("Shelves", "RackThermal")
                or tuple(names[len(names) - len(TAIL):]) != TAIL or not middle):
            return None
        cooling = sim.components[len(head) + 2: len(names) - len(TAIL)]
        if middle != ["SimpleCdu"] and any(c.every == 1 for c in cooling):
            return None  # (equipment of a plant stepping every step: per step)
        if any(c.every != 1 for c in sim.components if c not in cooling):
            return None
        late = {v.key for c in sim.components[len(names) - len(TAIL):] for v in c.outputs}
        if any(key in late for _, sums, _ in sim.schedule._multi.values() for key in sums):
            return None  # (a multi-rate component reading the chain or the governors: per step)
        q = cls(sim)
        if q.chips.sy is None or type(q.racks.integrator) is not ExponentialIntegrator:
            return None
        # the compiled loop (a block whose jobs' demand cannot be written ahead: per step); it
        # takes each device's governors with its sled, so every device must be in one sled
        in_sleds = np.bincount(np.concatenate([np.zeros(0, dtype=np.int64)]
                                              + [g.devices.ravel() for g in sim.system.groups]),
                               minlength=sim.system.n_devices)
        q._compile = getattr(sim, "block_kernel", "numpy") == "numba" and bool((in_sleds == 1).all())
        return q

    def compiled(self):
        """The compiled loop, built (numba imported, its code loaded or compiled) on first use:
        at the first quiet block, so a run reaches its first step without numba's import."""
        if self.fused is None and self._compile:
            from twin.sim.fused import FusedLoop

            self.fused = FusedLoop(self)
        return self.fused

    def ready(self) -> bool:
        """Nothing unusual now: the block's boundaries hold until an event or the end."""
        st, r, cdu, g = self.sim.state, self.racks, self.cdu, self.governors
        if g.capping or self.shelves.overloaded.any() or r._dark or st["rack.unpowered"].any():
            return False
        if bool(st["facility.battery_empty"][0]) or self.chain.on_battery:
            return False
        if cdu is not None and (cdu.supply_volume > 0).any():  # supply pipes: steady (pushing changes nothing)
            line = cdu.line
            out = cdu.t_outlet
            if (line is None or line.uniform is None or not np.array_equal(out, line.uniform)
                    or not np.array_equal(cdu.t_racks, out)):  # (the last push's outflow too)
                return False
        r.update(st)  # (as its step does first; nothing changes its boundaries within the block)
        return True

    def run(self, k: int, record: bool, each=None) -> int:
        """Up to ``k`` quiet steps; returns how many were taken (at least 1). A step whose
        shelves trip on over-current ends the block: it is finished per step. ``each(state)``
        is called with each step's values, in order, once the block's steps are taken."""
        sim = self.sim
        st, h = sim.state, sim.h
        if record:  # a streamed buffer flushes on the block's last step or not at all
            k = min(k, sim.recorder.steps_to_flush() or k)
        k = max(1, min(k, self.max_steps, BLOCK_SLED_VALUES // max(1, sim.system.sled_name.size)))
        if self.compiled() is not None and not self.governors.unpowered.any():
            taken = self._run_fused(k, record, each)
            if taken:
                return taken
            if sim.workload.jobs is not None and sim.workload.jobs.starting(sim.step_index * h, h):
                k = 1  # (a job starts at this step: the compiled loop can take the next ones)
        demand, chips, racks, governors = self.demand, self.chips, self.racks, self.governors
        accounting = self.accounting
        sy = sim.system
        fixed = sy.sled_overhead + st["sled.p_fan"]
        capacity = self.shelves.shelf_capacity
        i0 = sim.step_index
        keys = self.loop_keys if each is not None else self._recorded if record else self._used
        loop = {key: [] for key in keys}
        die = loop.get("device.t_die")
        t_cool, t_air = [], []
        now = perf_counter
        t_a = now()
        taken, tripping, stop = 0, False, None
        try:
            for j in range(k):
                t = (i0 + j) * h
                demand.step(t, h, st)
                chips.step(t, h, st)
                if accounting is not None:
                    accounting.step(t, h, st)
                # the shelves' over-current test of this step (as Shelves.step): a trip ends the block
                p_dc_sub = np.add.reduceat(st["sled.p_devices"] + fixed, sy.rack_sled_start, axis=1)
                if (p_dc_sub.max(axis=0) > capacity).any():
                    tripping = True
                    break
                tc, ta = racks.integrate(st)
                governors.step(t, h, st)
                for key, values in loop.items():
                    values.append(st[key])
                if die is not None:
                    die[-1] = racks.t_die.copy()  # (updated in place each step)
                t_cool.append(tc)
                t_air.append(ta)
                taken += 1
        except KeyboardInterrupt as exc:  # an interrupt: the steps taken are accounted and recorded
            stop, tripping = exc, False
            for values in (*loop.values(), t_cool, t_air):  # (caught between a step's appends)
                del values[taken:]
        sim.timing["power"] += now() - t_a
        self.steps += taken
        if taken:
            partial = {key: st[key] for c in (demand, chips, accounting) if c is not None
                       for key in (v.key for v in c.outputs)}
            block = {key: np.stack(v) for key, v in loop.items() if key != "device.repair"}
            self._downstream(taken, record, each, block, np.stack(t_cool), np.stack(t_air))
            if tripping:
                st.update(partial)
        if stop is not None:
            raise stop
        if tripping:  # finish the step per step from the shelves on
            sim.schedule.step(sim.step_index * h, st, sim.timing, start=sim.components.index(self.shelves))
            sim._account(record, each)
            taken += 1
        return taken

    def _downstream(self, n, record, each, block, t_cool, t_air) -> None:
        """The downstream components, the energy counters and the recorder over the ``n``
        steps the loop took (``block``: the loop's values kept, (n, …) each; the sleds' fluid
        means ``t_cool``, ``t_air``); the state ends as after the last of them."""
        sim = self.sim
        st, h, tot, timing = sim.state, sim.h, sim.totals, sim.timing
        now = perf_counter
        t_b = now()
        # (the loop's values it did not keep are the state's: those of its last step)
        block.update(self.shelves.step_block(n, h, block["sled.p_devices"], st))
        block.update(self.racks.step_block(n, h, t_cool, t_air, block["rack.p_loss"], st))
        st.update(self.racks.constant)  # (as RackThermal.step: the CDUs read the flows it sets)
        if self.cdu is not None:
            block.update(self.cdu.step_block(n, h, block["cdu.q_in"], st))
        view = _StepView(st, block)
        held = self._multi_rate(n, each, block, view)
        if not self.chain.blocks:
            block.update(self._chain_steps(n, view))
        else:
            p_cooling = block.get("facility.p_cooling")
            if p_cooling is None:  # (held by a multi-rate cooling model)
                p_cooling = np.broadcast_to(st["facility.p_cooling"], (n, 1))
            t_out = block.get("facility.t_outdoor") if held is not None else None
            block.update(self.chain.step_block(n, h, block["facility.p_it"], p_cooling, block["rack.p_loss"], st,
                                               None if t_out is None else t_out[:, 0]))
        t_c = now()
        # the block's last values are the state, as after its last step
        for key, v in block.items():
            st[key] = v[n - 1]
        if held is not None:  # (the plant's own arrays: it may compare them by identity)
            st.update(held)
        st["device.t_die"] = self.racks.t_die
        # energy counters and the recorder, step by step in the order of the per-step path
        energy = tot.energy
        for key in sim._counters:
            acc = energy[key]
            per_step = block.get(key)
            if per_step is not None and (per_step.ndim <= 2 or per_step.shape[1] == 1):
                # a step's mean is its value (no sums): the running sum in step order, in one call
                e = (per_step if per_step.ndim <= 2 else per_step[:, 0]) * h
                energy[key] = np.add.accumulate(e if acc is None else np.concatenate([acc[None], e]))[-1]
                continue
            for j in range(n):
                e = step_mean(view.at(key, j)) * h
                acc = e if acc is None else acc + e
            energy[key] = acc
        # the steps before the last are taken before the recorder sees them: a flush that fails on
        # the last step leaves the step count where the per-step path leaves it
        tot.steps += n - 1
        sim.step_index += n - 1
        if record:
            sim.recorder.add_block(n, block, st, view)
        else:
            sim.recorder.skip(n)
        tot.steps += 1
        sim.step_index += 1
        if each is not None:
            view = _StepView(st, block)
            for j in range(n):
                view.j = j
                each(view)
        timing["integration"] += t_c - t_b
        timing["recording"] += now() - t_c


    def _run_fused(self, k: int, record: bool, each) -> int:
        """Up to ``k`` steps of the compiled loop, then the downstream part over them; returns
        the steps taken (0: the first step is near a shelf rating, left to the per-step loop)."""
        sim = self.sim
        t_a = perf_counter()
        buf = self._buffers(k)
        cursor = sim.workload.cursor()
        U = sim.workload.rules_ahead(sim.step_index, k, buf["device.u"])
        jobs, watch, finish = sim.workload.jobs, None, None
        if jobs is not None:
            st = sim.state
            plan = jobs.ahead(sim.step_index, sim.h, k, sim.n_sub, st["device.clock_limit"], st["device.tripped"], U)
            if plan is None:  # (a job's demand reads the loop now: the block is stepped)
                sim.workload.restore(cursor)
                return 0
            steps, watch, finish = plan
            U = U[:steps]
        n = self._fused(U, sim.step_index, buf, watch, finish)
        if n < k:  # the workload as after the steps taken
            sim.workload.restore(cursor)
            sim.workload.rules_ahead(sim.step_index, n)
        sim.timing["power"] += perf_counter() - t_a
        if n:
            self.steps += n
            block = {key: v[:n] for key, v in buf.items() if key not in ("t_cool", "t_air")}
            self._downstream(n, record, each, block, buf["t_cool"][:n], buf["t_air"][:n])
        return n

    def _buffers(self, k: int) -> dict:
        """Fresh (k, …) arrays for the loop's per-step values (the block's record keeps views)."""
        sy, n_sub, n = self.sim.system, self.sim.n_sub, self.sim.system.n_devices
        shapes = {"device.u": (n_sub, n), "device.p": (n_sub, n), "sled.p_devices": (n_sub, sy.sled_name.size),
                  "rack.psu_overload": (sy.n_racks,), "rack.throttled": (sy.n_racks,), "rack.capped": (sy.n_racks,),
                  "t_cool": (sy.sled_name.size,), "t_air": (sy.sled_name.size,)}
        flags = ("device.throttled", "device.tripped", "rack.capped")
        jobs = tuple(v.key for v in self.accounting.outputs) if self.accounting else ()
        if jobs:
            shapes.update(dict.fromkeys(jobs, (len(self.accounting.jobs.jobs),)))
        shared = ("device.clock", "device.clock_limit") + (("device.p_step",) if n_sub == 1 else ())
        buf = {key: np.empty((k,) + shapes.get(key, (n,)), dtype=bool if key in flags else float)
               for key in (*LOOP_KEYS[:1], *LOOP_KEYS[2:], *jobs, "t_cool", "t_air") if key not in shared}
        # views the compiled loop writes once (twin.sim.fused): a step's clock is the clock limit
        # the last step's governors set, and with one sub-step its mean power is its power
        clock = np.empty((k + 1, n))
        buf["device.clock"], buf["device.clock_limit"] = clock[:k], clock[1:]
        if n_sub == 1:
            buf["device.p_step"] = buf["device.p"][:, 0]
        if self.racks.hbm:  # (NaN at the devices without an HBM node)
            buf["device.t_hbm"] = np.full((k, n), np.nan)
        return buf

    def _fused(self, U, i0: int, buf: dict, watch=None, finish=None) -> int:
        """The compiled loop over up to ``U.shape[0]`` steps, then what the components add per
        step (totals, first throttle and trip, the per-rack and per-sled sums, the jobs'
        progress and attributed power: ``finish`` of :meth:`twin.workload.jobs.JobSet.ahead`,
        with ``watch`` the devices whose clocks and trips the jobs' demand assumed); returns
        the steps taken."""
        sim, sy, st, h = self.sim, self.sim.system, self.sim.state, self.sim.h
        gov, tot = self.governors, sim.totals
        fixed = sy.sled_overhead + st["sled.p_fan"]
        capacity = np.minimum(st["rack.shelf_capacity"], self.shelves.shelf_capacity)
        off_before = np.array(st["device.tripped"], dtype=bool)  # (the trips each step starts with)
        n = self.fused.run(U, i0, h, capacity, sy.rack_sum(fixed), buf, watch)
        if n == 0:
            if finish is not None:
                finish(0, None, None)  # (the jobs as before: an inference pool served ahead)
            return 0
        P, thr, off = buf["device.p"][:n], buf["device.throttled"][:n], buf["device.tripped"][:n]
        clock = buf["device.clock"][:n]
        self.demand.mark_used(U[:n])
        if self._sled_starts is not None:  # (np.add.reduceat's sums, compiled)
            sled_sums(P, self._sled_starts, buf["sled.p_devices"][:n])
        else:
            buf["sled.p_devices"][:n] = np.add.reduceat(P.reshape(-1, P.shape[-1]), sy.sled_device_start,
                                                        axis=1).reshape(n, P.shape[1], -1)
        buf["rack.psu_overload"][:n] = 0.0
        buf["rack.capped"][:n] = gov.rack_cap < 1.0
        # what ChipPower, the governors and the job accounting add per step, in one compiled pass
        # (twin.sim.accounts: the same sums in the same order, but the work lost's)
        jobs = self.accounting.jobs if finish is not None else None
        bins = jobs.owner_bins if jobs is not None else self._no_bins
        sums = block_sums(U[:n], self.chips.compute, buf["device.p_step"][:n], buf["device.t_die"][:n], thr, off,
                          off_before, clock, bins, len(jobs.jobs) + 1 if jobs is not None else 1)
        # the totals, added step by step as the components add them (Python floats: the same
        # IEEE additions as numpy's scalars, without their overhead)
        e = float(tot.e_device)
        for p in sums["e_step"].tolist():
            e += p * h
        tot.e_device = type(tot.e_device)(e)
        tot.t_die_max = max(tot.t_die_max, sums["t_die_max"])
        n_thr = sums["n_throttled"]
        if n_thr.any():
            buf["rack.throttled"][:n] = (np.add.reduceat(np.add.reduceat(thr.astype(float), sy.sled_device_start,
                                                                         axis=1), sy.rack_sled_start, axis=1)
                                         / gov.rack_devices)
            for c in n_thr.tolist():
                tot.throttled_device_seconds += c * h
            gov.ever_throttled |= thr.any(axis=0)
            if gov.first_throttle == math.inf:
                gov.first_throttle = (i0 + int(np.argmax(n_thr > 0))) * h
        else:  # (the zeros the sums would give, as Governors.step)
            buf["rack.throttled"][:n] = gov._no_rack_throttled
        tripped = sums["tripped"]
        if tripped.any():
            gov.ever_tripped |= off.any(axis=0)
            if gov.first_trip == math.inf:
                gov.first_trip = (i0 + int(np.argmax(tripped))) * h + h
            for _ in range(int(np.count_nonzero(tripped))):
                tot.tripped_seconds += h
        # the compute work ChipPower counts each step (demanded, and lost to clocks below 1 and
        # devices off), added step by step
        demand, lost = float(tot.demand_device_seconds), float(tot.lost_work_device_seconds)
        for d, x in zip(sums["demand"].tolist(), sums["lost"].tolist()):
            demand += d * h
            lost += x * h
        tot.demand_device_seconds, tot.lost_work_device_seconds = demand, lost
        if finish is not None:  # the jobs as after the n steps; their per-step outputs, and accounting
            off_start = np.concatenate([off_before[None], off[:-1]])  # (each step's trips as it starts)
            progress, rate, tokens, state = finish(n, clock, off_start)
            buf["job.progress"][:n], buf["job.throughput"][:n], buf["job.tokens"][:n] = progress, rate, tokens
            buf["job.state"][:n] = state
            buf["job.p"][:n] = jobs.account_sums(sums["job_p"][:, 1:], h)
            if self.chips.smoothing:  # (no floor nor ramp: the smoothing is the identity)
                self.chips.p_prev = P[n - 1, -1].copy()
        st["device.u"] = U[n - 1]
        st["device.repair"] = None
        return n

    def _multi_rate(self, n, each, block, view):
        """The multi-rate components (the plant) over the block's ``n`` steps: their inputs'
        sums advance step by step; when one updates on the block's last step (the block ends
        there, :meth:`~twin.sim.driver.Simulation.quiet_length`) it adds that step's inputs and
        steps on their means, and each step's values of its outputs go into ``block`` — the
        held ones, then the new ones on the last step, which the power chain, the counters
        and the recorder read (the per-step path's values). Returns the new outputs (None
        without an update)."""
        sim = self.sim
        st, schedule = sim.state, sim.schedule
        if schedule.steps_before_update() != n - 1:  # (none updates)
            schedule.accumulate(n, view.at, block.get)
            return None
        schedule.accumulate(n - 1, view.at, block.get)
        keys = self._plant_keys if each is None else self._plant_all
        before = {key: np.array(st[key]) for key in keys}  # (copies: they may change in place)
        schedule.step_multi((sim.step_index + n - 1) * sim.h, lambda key: view.at(key, n - 1), st, sim.timing)
        held = {key: st[key] for key in keys}  # the plant's new outputs
        for key, v in held.items():
            new = np.asarray(v)
            series = np.empty((n,) + new.shape, dtype=new.dtype)
            series[: n - 1] = before[key]
            series[n - 1] = new
            block[key] = series
        return held

    def _chain_steps(self, n, view) -> dict:
        """The modelled power chain (scalar work: busway, UPS, transformers, the electrical
        rooms) stepped per step over the block's values; its outputs, stacked."""
        sim, chain = self.sim, self.chain
        h, i0 = sim.h, sim.step_index
        out = {}
        for j in range(n):
            view.j = j
            writes = _Writes(view)
            chain.step((i0 + j) * h, h, writes)
            for key, v in writes.items():
                out.setdefault(key, []).append(v)
        return {key: np.stack(v) for key, v in out.items()}


class _StepView(dict):
    """Step ``j`` of a block: the block's arrays at ``j``, everything else from the state."""

    def __init__(self, state, block):
        super().__init__()
        self.state, self.block, self.j = state, block, 0

    def __getitem__(self, key):
        v = self.block.get(key)
        return self.state[key] if v is None else v[self.j]

    __missing__ = __getitem__

    def at(self, key, j):
        """The value of ``key`` at step ``j``."""
        v = self.block.get(key)
        return self.state[key] if v is None else v[j]


class _Writes(dict):
    """One component's step over a :class:`_StepView`: what it writes is kept here, what it
    reads and has not written comes from the view."""

    def __init__(self, view):
        super().__init__()
        self.view = view

    def __missing__(self, key):
        return self.view[key]

