"""Sleds, racks and their power shelves as a component: DC sums and AC input per sub-step.

Sled DC power = Σ devices + board overhead + fans; rack DC = Σ sleds (``np.add.reduceat`` over
the contiguous entity order); rack AC = DC / η_shelf(load) from each shelf type's efficiency
curve (:func:`twin.power.psu.shelf_input_power`) over the healthy PSUs. IT power is Σ rack AC
+ the scale-out network outside the racks (``facility.p_network``).
``psu_failure`` events take PSUs out of a rack's shelves (the rest share the load). When a
step's peak demand exceeds what the healthy PSUs can carry they trip on over-current: the
step is carried at full-load efficiency, and from the next step the rack is dark — no DC at all
(devices off, board and fans off) until PSUs are restored, when its devices come back on. Every rack is dark while the UPS
battery is empty during a utility outage (:class:`~twin.power.chain.PowerChain`).
"""

from __future__ import annotations

import numpy as np

from twin.power.psu import shelf_input_power
from twin.sim.component import Component, Var, step_mean
from twin.sim.events import rack_targets

SLED_P_DC = Var("sled", "p_dc", "W", "sled DC power (devices, overhead, fans)")
RACK_P_DC = Var("rack", "p_dc", "W", "rack DC busbar power", per_substep=True)
RACK_P_AC = Var("rack", "p_ac", "W", "rack AC input power", per_substep=True, counter="twin_rack_energy_joules")
RACK_P_LOSS = Var("rack", "p_loss", "W", "power-shelf loss, step mean (heats the rack's exhaust air)",
                  record=False)
SHELF_CAPACITY = Var("rack", "shelf_capacity", "W", "rated DC output of the rack's healthy PSUs",
                     record=False)
RACK_UNPOWERED = Var("rack", "unpowered", "1",
                     "rack without input power this step (PSUs tripped on overload, or the UPS battery empty)",
                     record=False)
RACK_PSU_TRIPPED = Var("rack", "psu_tripped", "1", "the rack's PSUs tripped on over-current (dark from the next step)",
                       record=False)
P_IT = Var("facility", "p_it", "W", "IT power (sum of rack AC input)", per_substep=True,
           counter="twin_it_energy_joules")


class Shelves(Component):
    """Sled and rack DC power and the power shelves' AC input.

    Parameters
    ----------
    system : System
    totals : Totals
        Running totals (DC energy, rack AC peak).
    """

    inputs = ("sled.p_devices", "sled.p_fan", "facility.p_network", "facility.battery_empty")
    outputs = (SLED_P_DC, RACK_P_DC, RACK_P_AC, RACK_P_LOSS, RACK_UNPOWERED, RACK_PSU_TRIPPED, P_IT,
               SHELF_CAPACITY)
    events = ("psu_failure",)
    phase = "power"

    def __init__(self, system, totals):
        self.sy = system
        self.totals = totals
        self.failed_psus = np.zeros(system.n_racks, dtype=np.int64)
        self.overloaded = np.zeros(system.n_racks, dtype=bool)  # PSUs tripped on over-current
        self.state = None
        # The shelf kinds present (racks, efficiency curve); racks None: every rack, in order.
        self._shelves = []
        for sel, (loads, etas) in zip(system.shelf_members, system.shelf_curves):
            if sel.size:
                every = sel.size == system.n_racks and np.array_equal(sel, np.arange(system.n_racks))
                self._shelves.append((None if every else sel, loads, etas))
        self._capacity()

    def initialise(self, state) -> None:
        self.state = state
        state["rack.shelf_capacity"] = self.shelf_capacity
        state["rack.unpowered"] = np.zeros(self.sy.n_racks, dtype=bool)
        state["rack.psu_tripped"] = self.overloaded

    def _capacity(self) -> None:
        sy = self.sy
        healthy = np.maximum(sy.rack_psus - self.failed_psus, 0)
        self.shelf_capacity = healthy * sy.rack_psu_rating
        if self.state is not None:  # chip power of this very step already sees the new capacity
            self.state["rack.shelf_capacity"] = self.shelf_capacity

    def step(self, t: float, dt: float, state) -> None:
        sy, tot = self.sy, self.totals
        dark = self.overloaded | bool(state["facility.battery_empty"][0])
        state["rack.unpowered"] = dark
        # Σ devices per sled (ChipPower's sums of device.p) + board overhead + fans
        p_sled_sub = state["sled.p_devices"] + (sy.sled_overhead + state["sled.p_fan"])
        if dark.any():
            p_sled_sub = p_sled_sub * ~dark[sy.sled_rack]  # no input: nothing on the rack draws
        p_dc_sub = np.add.reduceat(p_sled_sub, sy.rack_sled_start, axis=1)
        # Over-current: carried this step at the full-load efficiency, dark from the next one.
        self.overloaded |= p_dc_sub.max(axis=0) > self.shelf_capacity
        state["rack.psu_tripped"] = self.overloaded
        carried = np.maximum(self.shelf_capacity, p_dc_sub.max(axis=0))
        carried[carried <= 0] = 1.0  # a dark rack without PSUs: 0 W of 1 W draws nothing (no 0/0)
        p_ac_sub = np.empty_like(p_dc_sub)
        for sel, loads, etas in self._shelves:
            if sel is None:  # one kind of shelf in every rack
                p_ac_sub = shelf_input_power(p_dc_sub, carried, loads, etas)
            else:
                p_ac_sub[:, sel] = shelf_input_power(p_dc_sub[:, sel], carried[sel], loads, etas)
        p_dc = step_mean(p_dc_sub)
        state["sled.p_dc"] = step_mean(p_sled_sub)
        state["rack.p_dc"] = p_dc_sub
        state["rack.p_ac"] = p_ac_sub
        state["rack.p_loss"] = step_mean(p_ac_sub) - p_dc
        # The scale-out network outside the racks is IT load too (air-cooled, heat to the room).
        state["facility.p_it"] = p_ac_sub.sum(axis=1)[:, None] + state["facility.p_network"]
        tot.e_dc += p_dc.sum() * dt
        tot.p_rack_peak = max(tot.p_rack_peak, float(p_ac_sub.max()))

    def step_block(self, k: int, dt: float, p_devices, state) -> dict:
        """:meth:`step` for ``k`` steps at once, no shelf tripping (a quiet block,
        :mod:`twin.sim.block`): ``p_devices`` (k, sub-steps, sleds) is each step's
        ``sled.p_devices``; returns each output with a leading axis of k (same operations,
        same order as :meth:`step`, so the same bits)."""
        sy, tot = self.sy, self.totals
        p_sled_sub = p_devices + (sy.sled_overhead + state["sled.p_fan"])
        p_dc_sub = np.add.reduceat(p_sled_sub, sy.rack_sled_start, axis=2)
        peak = p_dc_sub.max(axis=1)
        carried = np.maximum(self.shelf_capacity, peak)
        carried[carried <= 0] = 1.0
        p_ac_sub = np.empty_like(p_dc_sub)
        for sel, loads, etas in self._shelves:
            if sel is None:
                p_ac_sub = shelf_input_power(p_dc_sub, carried[:, None, :], loads, etas)
            else:
                p_ac_sub[:, :, sel] = shelf_input_power(p_dc_sub[:, :, sel], carried[:, None, sel], loads, etas)
        p_dc = _step_means(p_dc_sub)
        p_loss = _step_means(p_ac_sub) - p_dc
        p_it = p_ac_sub.sum(axis=2)[:, :, None] + state["facility.p_network"]
        for e in p_dc.sum(axis=1) * dt:
            tot.e_dc += e
        tot.p_rack_peak = max(tot.p_rack_peak, float(p_ac_sub.max()))
        return {"sled.p_dc": _step_means(p_sled_sub), "rack.p_dc": p_dc_sub, "rack.p_ac": p_ac_sub,
                "rack.p_loss": p_loss, "facility.p_it": p_it}

    def apply(self, action) -> bool:
        ev = action.event
        idx = rack_targets(ev.target, self.sy.rack_name)
        self.failed_psus[idx] += ev.count if action.what == "start" else -ev.count
        self._capacity()
        if action.what != "start":
            self.overloaded[idx] = False  # PSUs back: the shelf is re-energised, its devices come back
        return True


def _step_means(values: np.ndarray) -> np.ndarray:
    """:func:`~twin.sim.component.step_mean` of each step of a (k, sub-steps, entities) block."""
    return values[:, 0] if values.shape[1] == 1 else values.mean(axis=1)
