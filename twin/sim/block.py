"""Quiet blocks: k thermal steps with the feedback loop stepped per step and everything
downstream of it computed for the whole block at once.

Within a step the components form one feedback loop — demand (the rules and the jobs), chip
power, the sled networks' temperatures and the governors (each step's power depends on the last
step's temperatures and clocks) — and a downstream part that reads the loop but feeds nothing
back while nothing unusual happens: the power shelves' DC sums and AC input, the rack manifolds'
heat and temperatures, the CDUs' pumps and heat, the power chain's facility power, the energy
counters and the recorder. In a *quiet* block (no event due, no multi-rate component updating,
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

A multi-rate component (the facility plant's equipment, every ``plant.step``) ends blocks: the
step on which it updates goes through every component (its new outputs are the next steps'
boundaries), and in the block's other steps its outputs are held, so only the sums of its
inputs advance (:meth:`~twin.sim.component.Schedule.accumulate`). A modelled power chain (UPS,
transformers) is scalar work per step; it runs per step over the block's arrays after the loop.

A step whose power shelves would trip on over-current ends the block before it (the trip feeds
back from the next step on); that step, and any configuration or moment that is not quiet,
takes the per-step path.
"""

from __future__ import annotations

from time import perf_counter

import numpy as np

from twin.sim.component import step_mean

#: Keys the loop writes each step that the recorder, the counters or ``each`` may read.
LOOP_KEYS = ("device.u", "device.repair", "device.p", "device.p_step", "device.clock", "device.t_die",
             "device.throttled", "device.clock_limit", "device.tripped", "rack.psu_overload",
             "rack.throttled", "rack.capped", "sled.p_devices")
#: The components every quiet scenario has, in step order; a scenario with jobs has job
#: accounting after the chip power, and the cooling between the racks and the power chain is
#: either the CDU model or multi-rate equipment (the facility plant).
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
        # what the downstream part reads of the loop's values: the shelves' sums, the energy
        # counters and the multi-rate components' inputs (the recorder's variables are added
        # when recording, all of them when ``each`` reads each step)
        used = {"sled.p_devices", *sim._counters,
                *(key for _, sums, _ in sim.schedule._multi.values() for key in sums)}
        self._used = tuple(key for key in self.loop_keys if key in used)
        recorded = {key for g in sim.recorder.groups.values() for key in g.keys}
        self._recorded = tuple(key for key in self.loop_keys if key in used or key in recorded)
        self.steps = 0  # steps taken in quiet blocks so far

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
        q = cls(sim)
        if q.chips.sy is None or type(q.racks.integrator) is not ExponentialIntegrator:
            return None
        return q

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
            self._downstream(taken, record, each, loop, t_cool, t_air)
            if tripping:
                st.update(partial)
        if stop is not None:
            raise stop
        if tripping:  # finish the step per step from the shelves on
            sim.schedule.step(sim.step_index * h, st, sim.timing, start=sim.components.index(self.shelves))
            sim._account(record, each)
            taken += 1
        return taken

    def _downstream(self, n, record, each, loop, t_cool, t_air) -> None:
        """The downstream components, the energy counters and the recorder over the ``n``
        steps the loop took; the state ends as after the last of them."""
        sim = self.sim
        st, h, tot, timing = sim.state, sim.h, sim.totals, sim.timing
        now = perf_counter
        t_b = now()
        # (the loop's values it did not keep are the state's: those of its last step)
        block = {key: np.stack(v) for key, v in loop.items() if key != "device.repair"}
        block.update(self.shelves.step_block(n, h, block["sled.p_devices"], st))
        block.update(self.racks.step_block(n, h, np.stack(t_cool), np.stack(t_air), block["rack.p_loss"], st))
        st.update(self.racks.constant)  # (as RackThermal.step: the CDUs read the flows it sets)
        if self.cdu is not None:
            block.update(self.cdu.step_block(n, h, block["cdu.q_in"], st))
        view = _StepView(st, block)
        if not self.chain.blocks:
            block.update(self._chain_steps(n, view))
        else:
            p_cooling = block.get("facility.p_cooling")
            if p_cooling is None:  # (held by a multi-rate cooling model)
                p_cooling = np.broadcast_to(st["facility.p_cooling"], (n, 1))
            block.update(self.chain.step_block(n, h, block["facility.p_it"], p_cooling, block["rack.p_loss"], st))
        # the multi-rate components' inputs: their sums advance, step by step (none updates)
        sim.schedule.accumulate(n, lambda key, j: view.at(key, j))
        t_c = now()
        # the block's last values are the state, as after its last step
        for key, v in block.items():
            st[key] = v[n - 1]
        st["device.t_die"] = self.racks.t_die
        # energy counters and the recorder, step by step in the order of the per-step path
        energy = tot.energy
        for key in sim._counters:
            acc = energy[key]
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

