"""The power chain upstream of the racks as a component: busway/PDU → UPS (modules + battery) →
transformers → utility, with its sizing. Facility power and energy are defined here, once.

``facility.p_facility`` = facility input (the utility, or the UPS battery during an outage) = IT
power (rack AC input) + cooling + busway, UPS and transformer losses. Its exact time integral is the KPI ``energy_facility_J``, the live counter
``twin_facility_energy_joules_total`` and the OpenMetrics backfill alike (all read this one
variable). Cooling equipment is fed from the transformers, not through the UPS. Without a
scenario ``plant:`` there is no chain to model: utility input = IT + cooling, no upstream losses.

During a ``utility_outage`` the IT load rides on the UPS battery (cooling stops drawing from the
utility too: the chillers trip, see the plant); when the battery is empty every rack goes dark
(no IT power at all) until the utility returns, and its devices stay tripped.
"""

from __future__ import annotations

import math

import numpy as np

from twin.power.delivery import BUSWAY_LOSS_FRACTION, busway_input_power, transformer_losses, ups_input_power
from twin.sim.component import Component, Var, step_mean

#: Transformers are sized for the design IT load with this margin (cooling and growth) [1]
#: (estimate: a 25 % margin over the design load is the common sizing rule).
TRANSFORMER_MARGIN = 1.25

P_FACILITY = Var("facility", "p_facility", "W",
                 "facility power from the utility (IT, cooling and power-delivery losses)",
                 per_substep=True, counter="twin_facility_energy_joules")
P_LOSS = Var("facility", "p_loss", "W",
             "power-delivery losses (power shelves; with a plant also busway, UPS and transformers)",
             counter="twin_power_delivery_loss_energy_joules")
PUE = Var("facility", "pue", "1", "power usage effectiveness p_facility / p_it", ratio=("p_facility", "p_it"))
P_UPS_LOSS = Var("facility", "p_ups_loss", "W", "busway and UPS losses")
P_TRANSFORMER_LOSS = Var("facility", "p_transformer_loss", "W", "transformer losses")
BATTERY_EMPTY = Var("facility", "battery_empty", "1", "the UPS battery ran out during an outage",
                    record=False)


class PowerChain(Component):
    """Busway, UPS and transformers between the racks and the utility.

    Parameters
    ----------
    design_it_power : float
        Design IT load the chain is sized for [W].
    ups : UPSEntry, optional
        Catalogue entry of one UPS module (None: no chain, lossless).
    mode : {"double_conversion", "eco"}
    transformer : TransformerEntry, optional
    totals : Totals
        Running totals of the run (this component keeps the facility power peak).

    Notes
    -----
    Sizing: N+1 UPS modules, N = ⌈P_design (1 + busway loss) / rating⌉; the battery scales with
    the modules; transformers ⌈1.25 P_design (1 + busway loss) / rating⌉, sharing the load.
    Per step: P_bus = P_IT (1 + f_busway); P_UPS,in from the UPS efficiency curve at the
    modules' load; P_util = P_UPS,in + P_cooling (on battery: P_cooling alone, the battery
    supplies P_UPS,in); P_facility = P_util + transformer losses at the transformers' load, plus
    the battery's discharge P_UPS,in while on battery: facility power counts every source that
    feeds the facility (The Green Grid, WP 49: total facility energy includes on-site sources),
    so PUE stays ≥ 1 through an outage. When the battery is empty every rack is dark
    (:class:`~twin.power.shelves.Shelves`) until the utility returns.
    """

    inputs = ("facility.p_it", "facility.p_cooling", "rack.p_loss")
    VARIABLES = (P_FACILITY, P_LOSS, PUE, P_UPS_LOSS, P_TRANSFORMER_LOSS, BATTERY_EMPTY)
    events = ("utility_outage",)
    phase = "integration"

    def __init__(self, design_it_power: float, ups=None, mode: str = "double_conversion",
                 transformer=None, totals=None):
        self.totals = totals
        self.modelled = ups is not None
        self.outputs = self.VARIABLES if self.modelled else (P_FACILITY, P_LOSS, PUE, BATTERY_EMPTY)
        self.on_battery = False
        self.outage_start = math.inf
        self.ride_through = math.inf  # s of battery from the outage's start until empty (inf: never)
        self.battery_energy = self.battery_left = 0.0
        if not self.modelled:
            return
        curve = ups.efficiency if mode == "double_conversion" else ups.efficiency_eco
        design = design_it_power * (1 + BUSWAY_LOSS_FRACTION)
        self.ups_rating = (np.ceil(design / ups.rating.si) + 1) * ups.rating.si
        self.ups_curve = (np.array([p[0] for p in curve.points]), np.array([p[1] for p in curve.points]))
        self.battery_energy = (ups.battery_energy.si if ups.battery_energy else 0.0) * self.ups_rating / ups.rating.si
        self.battery_left = self.battery_energy
        self.n_transformers = max(1.0, np.ceil(TRANSFORMER_MARGIN * design / transformer.rating.si))
        self.transformer = transformer

    def initialise(self, state) -> None:
        state["facility.battery_empty"] = np.array([False])

    def delivery(self, p_it: float, p_cooling: float, dt: float):
        """Utility input and losses upstream of the racks [W]: busway → UPS → transformer.

        Returns (p_facility, busway + UPS loss, transformer loss). Draws the battery for ``dt``
        [s] while on battery.
        """
        if not self.modelled:
            return p_it + p_cooling, 0.0, 0.0
        p_bus = busway_input_power(p_it)
        p_ups_in = float(ups_input_power(np.array([p_bus]), self.ups_rating, *self.ups_curve)[0])
        p_battery = 0.0
        if self.on_battery:  # the battery feeds the UPS; it never goes below empty
            self.battery_left = max(0.0, self.battery_left - p_ups_in * dt)
            p_util, p_battery = p_cooling, p_ups_in
        else:
            p_util = p_ups_in + p_cooling
        n, tr = self.n_transformers, self.transformer
        loss_tr = float(n * transformer_losses(p_util / n, tr.rating.si, tr.no_load_loss.si, tr.load_loss.si))
        return p_util + loss_tr + p_battery, p_ups_in - p_it, loss_tr

    def step(self, t: float, dt: float, state) -> None:
        p_it_sub = state["facility.p_it"]
        p_it = float(step_mean(p_it_sub)[0])
        p_facility, loss_ups, loss_tr = self.delivery(p_it, float(state["facility.p_cooling"][0]), dt)
        over_it = p_facility - p_it  # the facility's draw beyond the racks (cooling, losses)
        state["facility.p_facility"] = p_it_sub + over_it
        state["facility.p_loss"] = np.array([float(state["rack.p_loss"].sum()) + loss_ups + loss_tr])
        if self.modelled:
            state["facility.p_ups_loss"] = np.array([loss_ups])
            state["facility.p_transformer_loss"] = np.array([loss_tr])
            empty = self.on_battery and self.battery_left <= 0  # every rack dark from the next step
            if empty and not math.isfinite(self.ride_through):
                self.ride_through = t + dt - self.outage_start
            state["facility.battery_empty"] = np.array([empty])
        tot = self.totals
        tot.p_facility_peak = max(tot.p_facility_peak, float(p_it_sub.max()) + over_it)

    def apply(self, action) -> bool:
        start = action.what == "start"
        self.on_battery = start
        if start:
            self.outage_start = min(self.outage_start, action.time)
        return True
