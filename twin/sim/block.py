"""Quiet blocks: k thermal steps with the feedback loop stepped per step and everything
downstream of it computed for the whole block at once.

Within a step the components form one feedback loop — demand, chip power, the sled networks'
temperatures and the governors (each step's power depends on the last step's temperatures and
clocks) — and a downstream part that reads the loop but feeds nothing back while nothing
unusual happens: the power shelves' DC sums and AC input, the rack manifolds' heat and
temperatures, the CDUs' pumps and heat, the power chain's facility power, the energy counters
and the recorder. In a *quiet* block (no event due, no plant or other multi-rate component, no
jobs, no power capping, every rack powered and every flow on, the CDUs' supply pipes steady) the
loop runs per step and the downstream part runs once over the block's (k, …) arrays
(:meth:`step_block` of :class:`~twin.power.shelves.Shelves`,
:class:`~twin.thermal.racks.RackThermal`, :class:`~twin.cooling.cdu.SimpleCdu` and
:class:`~twin.power.chain.PowerChain`), with the same operations in the same order as their
per-step :meth:`step`, which stays the reference: the results are bit-identical
(tests/sim/test_blocks.py).

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
        self.racks, self.cdu, self.chain, self.governors = c["RackThermal"], c["SimpleCdu"], c["PowerChain"], c["Governors"]

    @classmethod
    def build(cls, sim):
        """The quiet-block path for ``sim``, or None when its components are not the ones it
        knows (a plant, jobs, another CDU model, the reference integrator, a modelled power chain)."""
        from twin.thermal.integrators import ExponentialIntegrator

        names = [type(c).__name__ for c in sim.components]
        if names != ["NetworkPower", "Demand", "ChipPower", "Shelves", "RackThermal", "SimpleCdu",
                     "PowerChain", "Governors"]:
            return None
        if any(c.every != 1 for c in sim.components) or sim.jobs is not None:
            return None
        q = cls(sim)
        if (q.chips.smoothing or q.chips.sy is None or q.chain.modelled
                or type(q.racks.integrator) is not ExponentialIntegrator):
            return None
        return q

    def ready(self) -> bool:
        """Nothing unusual now: the block's boundaries hold until an event or the end."""
        st, r, cdu, g = self.sim.state, self.racks, self.cdu, self.governors
        if g.capping or self.shelves.overloaded.any() or r._dark or st["rack.unpowered"].any():
            return False
        if bool(st["facility.battery_empty"][0]):
            return False
        if (cdu.supply_volume > 0).any():  # supply pipes: steady (pushing changes nothing)
            line = cdu.line
            out = cdu.t_outlet
            if (line is None or line.uniform is None or not np.array_equal(out, line.uniform)
                    or not np.array_equal(cdu.t_racks, out)):  # (the last push's outflow too)
                return False
        r.update(st)  # (as its step does first; nothing changes its boundaries within the block)
        return r.all_flowing and not r.still_air

    def run(self, k: int, record: bool, each=None) -> int:
        """Up to ``k`` quiet steps; returns how many were taken (at least 1). A step whose
        shelves trip on over-current ends the block: it is finished per step. ``each(state)``
        is called with each step's values, in order, once the block's steps are taken."""
        sim = self.sim
        st, h = sim.state, sim.h
        if record:  # a streamed buffer flushes on the block's last step or not at all
            k = min(k, sim.recorder.steps_to_flush() or k)
        demand, chips, racks, governors = self.demand, self.chips, self.racks, self.governors
        sy = sim.system
        fixed = sy.sled_overhead + st["sled.p_fan"]
        capacity = self.shelves.shelf_capacity
        i0 = sim.step_index
        loop = {key: [] for key in LOOP_KEYS}
        t_cool, t_air = [], []
        now = perf_counter
        t_a = now()
        taken, tripping, stop = 0, False, None
        try:
            for j in range(k):
                t = (i0 + j) * h
                demand.step(t, h, st)
                chips.step(t, h, st)
                # the shelves' over-current test of this step (as Shelves.step): a trip ends the block
                p_dc_sub = np.add.reduceat(st["sled.p_devices"] + fixed, sy.rack_sled_start, axis=1)
                if (p_dc_sub.max(axis=0) > capacity).any():
                    tripping = True
                    break
                tc, ta = racks.integrate(st)
                governors.step(t, h, st)
                for key, values in loop.items():
                    values.append(st[key])
                loop["device.t_die"][-1] = racks.t_die.copy()  # (updated in place each step)
                t_cool.append(tc)
                t_air.append(ta)
                taken += 1
        except KeyboardInterrupt as exc:  # an interrupt: the steps taken are accounted and recorded
            stop, tripping = exc, False
            for values in (*loop.values(), t_cool, t_air):  # (caught between a step's appends)
                del values[taken:]
        sim.timing["power"] += now() - t_a
        if taken:
            partial = {key: st[key] for c in (demand, chips) for key in (v.key for v in c.outputs)}
            self._downstream(taken, record, each, loop, t_cool, t_air)
            if tripping:
                st.update(partial)
        if stop is not None:
            raise stop
        if tripping:  # finish the step per step from the shelves on
            t = sim.step_index * h
            for c in sim.components[sim.components.index(self.shelves):]:
                t0 = now()
                c.step(t, h, st)
                sim.timing[c.phase] += now() - t0
            sim.schedule._count += 1
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
        block = {key: np.stack(v) for key, v in loop.items() if key != "device.repair"}
        block.update(self.shelves.step_block(n, h, block["sled.p_devices"], st))
        block.update(self.racks.step_block(n, h, np.stack(t_cool), np.stack(t_air), block["rack.p_loss"], st))
        st.update(self.racks.constant)  # (as RackThermal.step: the CDUs read the flows it sets)
        block.update(self.cdu.step_block(n, h, block["cdu.q_in"], st))
        block.update(self.chain.step_block(n, h, block["facility.p_it"], block["facility.p_cooling"],
                                           block["rack.p_loss"], st))
        t_c = now()
        # the block's last values are the state, as after its last step
        for key, v in block.items():
            st[key] = v[n - 1]
        st["device.repair"] = loop["device.repair"][-1]
        st["device.t_die"] = self.racks.t_die
        # energy counters and the recorder, step by step in the order of the per-step path
        energy = tot.energy
        for key in sim._counters:
            per_step = block[key]
            acc = energy[key]
            for j in range(n):
                e = step_mean(per_step[j]) * h
                acc = e if acc is None else acc + e
            energy[key] = acc
        # the steps before the last are taken before the recorder sees them: a flush that fails on
        # the last step leaves the step count where the per-step path leaves it
        tot.steps += n - 1
        sim.step_index += n - 1
        if record:
            sim.recorder.add_block(n, block, st, _StepView(st, block))
        else:
            sim.recorder.skip(n)
        tot.steps += 1
        sim.step_index += 1
        if each is not None:
            view = _StepView(st, block)
            for j in range(n):
                view.j = j
                each(view)
        sim.schedule._count += n
        timing["integration"] += t_c - t_b
        timing["recording"] += now() - t_c


class _StepView(dict):
    """Step ``j`` of a block: the block's arrays at ``j``, everything else from the state."""

    def __init__(self, state, block):
        super().__init__()
        self.state, self.block, self.j = state, block, 0

    def __getitem__(self, key):
        v = self.block.get(key)
        return self.state[key] if v is None else v[self.j]

    __missing__ = __getitem__

