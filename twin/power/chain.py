"""The power chain upstream of the racks as a component: busway/PDU → UPS (modules + battery) →
transformers → utility, with its sizing, the miscellaneous load and the electrical rooms' own
cooling. Facility power and energy are defined here, once.

``facility.p_facility`` = what the site draws from the utility (and, during an outage, from the
standby generators that carry the loads outside the UPS) = IT power (rack AC input) + cooling +
busway, UPS and transformer losses + miscellaneous load + electrical-room cooling + the power
stored in the UPS battery − the power the battery gives the UPS. The battery is an internal
transfer: its discharge during an outage is not facility input, its recharge afterwards is (with
the charger's loss), so over an outage and the recharge the facility energy is IT + all losses +
the battery's net change in stored energy (The Green Grid, WP 49: PUE's total facility energy is
what the utility meter and on-site generation deliver; storage only moves it in time). Its exact
time integral is the KPI ``energy_facility_J``, the live counter
``twin_facility_energy_joules_total`` and the OpenMetrics backfill alike (all read this one
variable), and PUE (KPI and ``facility.pue``) is its ratio to IT: during an outage, while the
battery carries the IT load, the step's ``facility.pue`` is below 1. Cooling equipment is fed from the transformers, not through the UPS. Without a
scenario ``plant:`` there is no chain to model: utility input = IT + cooling, no upstream losses.

During a ``utility_outage`` the IT load rides on the UPS battery and the chillers trip (see the
plant); the loads outside the UPS (pumps and fans, miscellaneous load, electrical-room cooling)
stay on through the transformers as if standby generators had taken them over at once
(generators and their start delay are not modelled). When the battery is empty every rack goes
dark (no IT power at all) until the utility returns. Once the utility is back the UPS recharges the
battery at its catalogue charge power (``battery_charge_power`` per module), drawn from the
utility and so counted in facility power (the energy the outage took, over the charge efficiency).
"""

from __future__ import annotations

import math

import numpy as np

from twin.cooling.electrical_room import electrical_room_cooling
from twin.power.delivery import apparent_power, busway_losses, misc_power, transformer_count, transformer_losses
from twin.power.ups import (
    UPS_MODES,
    ups_active_modules,
    ups_battery_step,
    ups_loss_coefficients,
    ups_losses,
    ups_modules,
)
from twin.sim.component import Component, Var, step_mean

#: Transformers are sized for the design IT load with this margin (cooling and growth) [1]
#: (estimate: a 25 % margin over the design load is the common sizing rule).
TRANSFORMER_MARGIN = 1.25
#: Busway losses at its rating, as a share of the rating [1]: a 22–30 m run of copper busway at
#: its rated current, 480 V, PF 0.95 (Eaton Pow-R-Way III, Technical Data TD01701001E, 2017,
#: Table 8: 2.30 mΩ per 100 ft line-to-neutral at 600 A … 0.27 mΩ at 5,000 A, i.e. 0.017–0.023 %
#: per metre at rating, :func:`~twin.power.delivery.busway_loss_share`). The run length, from
#: the UPS switchboard along the rows of a hall fed from its own electrical room, is the estimate.
#: The part of the run over the rows heats the hall's air; the chain counts all of the busway's
#: heat with the electrical room's (a simplification: 0.4 % of IT on the Phoenix design day).
BUSWAY_LOSS_AT_RATING = 0.005
#: Busway rating over the continuous design load [1]: feeders are rated for 125 % of their
#: continuous load (NFPA 70, National Electrical Code, 215.2(A)(1)).
BUSWAY_RATING_FACTOR = 1.25
#: Outdoor temperature for the electrical-room cooling where no plant gives one [degC].
T_OUTDOOR_DEFAULT = 25.0

P_FACILITY = Var("facility", "p_facility", "W",
                 "facility power from the utility (IT, cooling, electrical losses and their cooling, "
                 "miscellaneous loads, UPS battery recharge; not the battery's discharge)", per_substep=True, counter="twin_facility_energy_joules")
P_LOSS = Var("facility", "p_loss", "W",
             "power-delivery losses (power shelves; with a plant also busway, UPS and transformers)",
             counter="twin_power_delivery_loss_energy_joules")
PUE = Var("facility", "pue", "1", "power usage effectiveness p_facility / p_it", ratio=("p_facility", "p_it"))
P_BUSWAY_LOSS = Var("facility", "p_busway_loss", "W", "busway losses")
P_UPS_LOSS = Var("facility", "p_ups_loss", "W", "UPS losses (modules in service, operating mode)")
P_TRANSFORMER_LOSS = Var("facility", "p_transformer_loss", "W", "transformer losses")
P_MISC = Var("facility", "p_misc", "W", "miscellaneous facility load (lighting, controls, offices)")
P_ELECTRICAL_ROOM = Var("facility", "p_electrical_room_cooling", "W",
                        "cooling of the electrical rooms (UPS, busway and miscellaneous heat)")
P_BATTERY_CHARGE = Var("facility", "p_ups_battery_charge", "W",
                       "UPS battery recharge power drawn from the utility (part of p_facility)")
E_BATTERY = Var("facility", "e_ups_battery", "J", "energy left in the UPS batteries")
BATTERY_EMPTY = Var("facility", "battery_empty", "1", "the UPS battery ran out during an outage",
                    record=False)


def design_ac_power(system) -> float:
    """IT design load at the racks' AC inputs [W]: each rack's design DC power (device TDP, sled
    overhead and fans) through its power shelves' efficiency curve at that load, summed."""
    from twin.power.psu import shelf_input_power

    sy = system
    dc = (np.bincount(sy.device_rack, weights=sy.chip["tdp"], minlength=sy.n_racks)
          + sy.rack_sum(sy.sled_overhead + sy.sled_fan_power))
    capacity = sy.rack_psus * sy.rack_psu_rating
    total = 0.0
    for s, (loads, etas) in enumerate(sy.shelf_curves):
        sel = sy.shelf_members[s]
        total += float(shelf_input_power(dc[sel], capacity[sel], loads, etas).sum())
    return total


def design_bus_load(design_it_power: float) -> float:
    """The UPS system's output at the IT design load [W]: P_design + the busway's losses at it
    (busway rated :data:`BUSWAY_RATING_FACTOR` × P_design, :func:`~twin.power.delivery.busway_losses`)."""
    rating = BUSWAY_RATING_FACTOR * design_it_power
    return design_it_power + float(busway_losses(design_it_power, rating, BUSWAY_LOSS_AT_RATING * rating))


class PowerChain(Component):
    """Busway, UPS and transformers between the racks and the utility, the miscellaneous load,
    and the cooling of the electrical rooms.

    Parameters
    ----------
    design_it_power : float
        Design IT load the chain is sized for [W].
    ups : UPSEntry, optional
        Catalogue entry of one UPS module (None: no chain, lossless).
    mode : {"double_conversion", "eco"}
    transformer : TransformerEntry, optional
    totals : Totals
        Running totals of the run (this component keeps the facility power peak and the heat
        the electrical rooms and transformers reject).
    redundant : int
        Redundant UPS modules (N + R).
    power_factor : float
        Power factor of the load on the transformers [1].
    misc_fraction : float
        Miscellaneous load as a share of the design IT load [1].
    room_cooler : RoomCoolerEntry, optional
        Cooling of the electrical rooms (None: their heat is not cooled by any unit).
    module_management : float, optional
        Load limit of an active module under module management in double conversion
        (:func:`~twin.power.ups.ups_active_modules`; None: every module active).
    p_facility_limit : float, optional
        Facility power limit [W] (the scenario's ``control.p_facility_limit``): the time the
        step-mean facility power is above it is counted in ``totals.p_facility_over_limit_seconds``.

    Notes
    -----
    Sizing from the design load: busway rated 1.25 P_design; N + R UPS modules,
    N = ⌈(P_design + L_bus,design) / P_module⌉ (:func:`~twin.power.ups.ups_modules`); the
    battery scales with the modules; transformers ⌈1.25 P_design / (PF S_rated)⌉
    (:func:`~twin.power.delivery.transformer_count`). Which module and transformer entries a
    plant gets without a template is chosen before (:mod:`twin.power.selection`).
    Per step: busway L_bus = f_bus P_r (P_IT / P_r)² (I²R); UPS losses from the
    module loss model fitted to the mode's curve (:func:`~twin.power.ups.ups_losses`) at the
    modules' load (under module management: the active modules N_a share it and each parked
    module loses the catalogue's ``suspended_loss`` × P_module; on battery all are active);
    misc load constant; the UPS, busway and misc heat is cooled by the electrical rooms' units
    (:func:`~twin.cooling.electrical_room.electrical_room_cooling`, at the plant's outdoor
    temperature); transformers (outdoor, liquid-immersed) carry all of it
    plus the cooling and reject their losses outdoors. On battery the UPS input comes from the
    battery (never below empty) and the loads outside the UPS stay on the transformers (as if
    generators carried them; not modelled); facility power is the utility's (and those
    generators') draw: the battery's discharge is an internal transfer, not facility input (see
    the module docstring), so the step's PUE is below 1 while the battery carries the IT load.
    When the battery is empty every rack is dark
    (:class:`~twin.power.shelves.Shelves`) until the utility returns. Afterwards the battery
    recharges at the modules' charge power (:func:`~twin.power.ups.ups_battery_step`): the
    charger's draw is UPS input from the utility (``p_ups_battery_charge``), its loss counts in
    the UPS losses and heats the electrical room.
    """

    inputs = ("facility.p_it", "facility.p_cooling", "rack.p_loss")
    VARIABLES = (P_FACILITY, P_LOSS, PUE, P_BUSWAY_LOSS, P_UPS_LOSS, P_TRANSFORMER_LOSS, P_MISC,
                 P_ELECTRICAL_ROOM, P_BATTERY_CHARGE, E_BATTERY, BATTERY_EMPTY)
    events = ("utility_outage",)
    phase = "integration"

    def __init__(self, design_it_power: float, ups=None, mode: str = "double_conversion",
                 transformer=None, totals=None, *, redundant: int = 1, power_factor: float = 0.95,
                 misc_fraction: float = 0.0, room_cooler=None, outdoor: bool = False,
                 module_management: float | None = None, p_facility_limit: float | None = None):
        self.totals = totals
        self.p_facility_limit = p_facility_limit
        self.modelled = ups is not None
        self.outputs = self.VARIABLES if self.modelled else (P_FACILITY, P_LOSS, PUE, BATTERY_EMPTY)
        self.inputs = PowerChain.inputs + (("facility.t_outdoor",) if outdoor and self.modelled else ())
        self.on_battery = False
        self.outage_start = math.inf
        self.ride_through = math.inf  # s of battery from the outage's start until empty (inf: never)
        self.battery_energy = self.battery_left = 0.0
        self.charge_power, self.charge_efficiency = 0.0, 1.0
        if not self.modelled:
            return
        curve = getattr(ups, UPS_MODES[mode])
        self.ups_coefficients = ups_loss_coefficients([p[0] for p in curve.points],
                                                      [p[1] for p in curve.points])
        self.design = float(design_it_power)
        self.busway_rating = BUSWAY_RATING_FACTOR * self.design
        self.busway_loss_at_rating = BUSWAY_LOSS_AT_RATING * self.busway_rating
        self.ups = ups
        self.module_rating = ups.rating.si
        self.n_modules = ups_modules(design_bus_load(self.design), self.module_rating, redundant)
        self.redundant = int(redundant)
        self.max_load = module_management
        if module_management is not None and ups.suspended_loss is None:
            raise ValueError("module management needs the UPS entry's suspended_loss (the losses of a "
                             "parked module)")
        self.suspended_loss = ups.suspended_loss.si if ups.suspended_loss is not None else 0.0
        self.battery_energy = (ups.battery_energy.si if ups.battery_energy else 0.0) * self.n_modules
        self.battery_left = self.battery_energy
        if ups.battery_charge_power is not None:
            self.charge_power = ups.battery_charge_power.si * self.n_modules
            self.charge_efficiency = ups.battery_charge_efficiency.si
        self.power_factor = float(power_factor)
        self.n_transformers = transformer_count(TRANSFORMER_MARGIN * self.design, self.power_factor,
                                                transformer.rating.si)
        self.transformer = transformer
        self.p_misc = misc_power(self.design, misc_fraction)
        self.room = room_cooler

    def initialise(self, state) -> None:
        state["facility.battery_empty"] = np.array([False])

    def active_modules(self, p_out: float) -> int:
        """UPS modules in double conversion at an output [W]: all, unless module management
        parks some; on battery all are active again (ABB Xtra VFI is deactivated by a mains
        failure, every module switched to active)."""
        if self.max_load is None or self.on_battery:
            return self.n_modules
        return int(ups_active_modules(p_out, self.n_modules, self.module_rating, self.redundant, self.max_load))

    def ups_loss(self, p_out: float) -> float:
        """UPS losses at an output [W]: the active modules sharing it on the mode's loss model,
        and the parked modules' ``suspended_loss``."""
        n = self.active_modules(p_out)
        parked = (self.n_modules - n) * self.module_rating * self.suspended_loss
        return float(ups_losses(p_out, n, self.module_rating, self.ups_coefficients)) + parked

    def _room_cooling(self, q_room, t_outdoor):
        """The electrical room's cooling power and the heat it rejects (W), for the room's heat
        ``q_room`` (W) at ``t_outdoor`` (degC): :func:`electrical_room_cooling` with this room's figures."""
        r = self.room
        return electrical_room_cooling(
            q_room, t_outdoor, r.room_temperature.si, r.evaporator_approach.si,
            r.condenser_approach.si, r.carnot_fraction.si, r.cop_max.si,
            r.fan_power_per_watt.si, r.economiser_approach.si)

    def delivery(self, p_it: float, p_cooling: float, dt: float, t_outdoor: float = T_OUTDOOR_DEFAULT):
        """Utility input and the losses upstream of the racks [W] (see the class Notes).

        Returns a dict: ``p_facility``, ``busway``, ``ups``, ``transformer``, ``misc``,
        ``room`` (electrical-room cooling power), ``q_room`` (heat the room units reject
        outdoors), ``charge`` (battery recharge drawn from the utility), ``battery`` (power the
        battery gives the UPS). Draws the battery for ``dt`` [s] while on battery.
        """
        if not self.modelled:
            return {"p_facility": p_it + p_cooling, "busway": 0.0, "ups": 0.0, "transformer": 0.0,
                    "misc": 0.0, "room": 0.0, "q_room": 0.0, "charge": 0.0, "battery": 0.0}
        l_bus = float(busway_losses(p_it, self.busway_rating, self.busway_loss_at_rating))
        p_bus = p_it + l_bus
        l_ups = self.ups_loss(p_bus)
        # The battery: it feeds the UPS during an outage (never below empty), else recharges.
        self.battery_left, p_battery, p_charge = ups_battery_step(
            self.battery_left, self.battery_energy, p_bus + l_ups, self.on_battery, dt,
            self.charge_power, self.charge_efficiency)
        l_ups += (1.0 - self.charge_efficiency) * p_charge  # the charger's loss
        q_room = l_bus + l_ups + self.p_misc
        if self.room is not None:
            p_room, q_out = self._room_cooling(q_room, t_outdoor)
            p_room, q_out = float(p_room), float(q_out)
        else:
            p_room, q_out = 0.0, q_room
        p_ups_in = p_bus + l_ups + self.charge_efficiency * p_charge  # load, losses, stored
        p_util = (p_ups_in - p_battery) + p_cooling + self.p_misc + p_room
        n, tr = self.n_transformers, self.transformer
        s_each = float(apparent_power(p_util, self.power_factor)) / n
        l_tr = float(n * transformer_losses(s_each, tr.rating.si, tr.no_load_loss.si, tr.load_loss.si))
        return {"p_facility": p_util + l_tr, "busway": l_bus, "ups": l_ups, "transformer": l_tr,
                "misc": self.p_misc, "room": p_room, "q_room": q_out, "charge": p_charge,
                "battery": p_battery}

    def step(self, t: float, dt: float, state) -> None:
        p_it_sub = state["facility.p_it"]
        p_it = float(step_mean(p_it_sub)[0])
        t_out = float(state["facility.t_outdoor"][0]) if "facility.t_outdoor" in self.inputs else T_OUTDOOR_DEFAULT
        d = self.delivery(p_it, float(state["facility.p_cooling"][0]), dt, t_out)
        if d["battery"] > 0.0:  # the battery carries the UPS: the utility does not see the racks' sub-steps
            p_it_sub, p_it = np.zeros_like(p_it_sub), 0.0
        over_it = d["p_facility"] - p_it  # the facility's draw beyond the racks (cooling, losses)
        state["facility.p_facility"] = p_it_sub + over_it
        upstream = d["busway"] + d["ups"] + d["transformer"]
        state["facility.p_loss"] = np.array([float(state["rack.p_loss"].sum()) + upstream])
        tot = self.totals
        if self.modelled:
            state["facility.p_busway_loss"] = np.array([d["busway"]])
            state["facility.p_ups_loss"] = np.array([d["ups"]])
            state["facility.p_transformer_loss"] = np.array([d["transformer"]])
            state["facility.p_misc"] = np.array([d["misc"]])
            state["facility.p_electrical_room_cooling"] = np.array([d["room"]])
            state["facility.p_ups_battery_charge"] = np.array([d["charge"]])
            state["facility.e_ups_battery"] = np.array([self.battery_left])
            # heat rejected outdoors by the electrical rooms' units and the transformers
            tot.e_electrical_rejected += (d["q_room"] + d["transformer"]) * dt
            tot.e_battery_discharged += d["battery"] * dt
            empty = self.on_battery and self.battery_left <= 0  # every rack dark from the next step
            if empty and not math.isfinite(self.ride_through):
                self.ride_through = t + dt - self.outage_start
            state["facility.battery_empty"] = np.array([empty])
        tot.p_facility_peak = max(tot.p_facility_peak, float(p_it_sub.max()) + over_it)
        if self.p_facility_limit is not None and step_mean(state["facility.p_facility"])[0] > self.p_facility_limit:
            tot.p_facility_over_limit_seconds += dt

    @property
    def blocks(self) -> bool:
        """:meth:`step_block` applies now: no chain, or one on the utility with its battery full
        and every UPS module active (nothing in it then carries over from step to step)."""
        return not self.modelled or (not self.on_battery and self.battery_left == self.battery_energy
                                     and self.max_load is None)

    def _delivery_block(self, p_it, p_cooling, t_outdoor: float) -> dict:
        """:meth:`delivery` of ``k`` steps at once (arrays of k) while :attr:`blocks`: the same
        operations element by element (the battery full: it neither gives nor charges)."""
        l_bus = busway_losses(p_it, self.busway_rating, self.busway_loss_at_rating)
        p_bus = p_it + l_bus
        l_ups = ups_losses(p_bus, self.n_modules, self.module_rating, self.ups_coefficients) + 0.0
        p_battery = p_charge = 0.0
        l_ups = l_ups + (1.0 - self.charge_efficiency) * p_charge
        q_room = l_bus + l_ups + self.p_misc
        if self.room is not None:
            p_room, q_out = self._room_cooling(q_room, t_outdoor)
        else:
            p_room, q_out = np.zeros_like(q_room), q_room
        p_ups_in = p_bus + l_ups + self.charge_efficiency * p_charge
        p_util = (p_ups_in - p_battery) + p_cooling + self.p_misc + p_room
        n, tr = self.n_transformers, self.transformer
        s_each = apparent_power(p_util, self.power_factor) / n
        l_tr = n * transformer_losses(s_each, tr.rating.si, tr.no_load_loss.si, tr.load_loss.si)
        return {"p_facility": p_util + l_tr, "busway": l_bus, "ups": l_ups, "transformer": l_tr,
                "room": p_room, "q_room": q_out}

    def step_block(self, k: int, dt: float, p_it_sub, p_cooling, p_loss, state, t_outdoor=None) -> dict:
        """:meth:`step` for ``k`` steps at once while :attr:`blocks` (a quiet block,
        :mod:`twin.sim.block`): ``p_it_sub`` (k, sub-steps, 1), ``p_cooling`` (k, 1) and the
        racks' shelf losses ``p_loss`` (k, racks) of each step, and the outdoor temperature
        ``t_outdoor`` (k,) of each step [degC] when it changes within the block (else the
        state's); same operations, same order, same bits as :meth:`step`."""
        if not self.blocks:
            raise ValueError("PowerChain.step_block: the chain steps per step now (on battery, "
                             "recharging or with module management)")
        if self.modelled:
            return self._step_block_modelled(k, dt, p_it_sub, p_cooling, p_loss, state, t_outdoor)
        p_it = p_it_sub[:, 0, 0] if p_it_sub.shape[1] == 1 else p_it_sub.mean(axis=1)[:, 0]
        over_it = (p_it + p_cooling[:, 0]) - p_it
        tot = self.totals
        tot.p_facility_peak = max(tot.p_facility_peak, float((p_it_sub.max(axis=(1, 2)) + over_it).max()))
        p_facility = p_it_sub + over_it[:, None, None]
        if self.p_facility_limit is not None:
            for p in p_facility:  # (each step as step compares it)
                if step_mean(p)[0] > self.p_facility_limit:
                    tot.p_facility_over_limit_seconds += dt
        return {"facility.p_facility": p_facility, "facility.p_loss": p_loss.sum(axis=1)[:, None] + 0.0}

    def _step_block_modelled(self, k, dt, p_it_sub, p_cooling, p_loss, state, t_outdoor=None) -> dict:
        p_it = np.array([step_mean(p)[0] for p in p_it_sub])
        t_out = float(state["facility.t_outdoor"][0]) if "facility.t_outdoor" in self.inputs else T_OUTDOOR_DEFAULT
        if t_outdoor is not None and "facility.t_outdoor" in self.inputs:
            t_out = np.asarray(t_outdoor, dtype=float)
        d = self._delivery_block(p_it, p_cooling[:, 0], t_out)
        over_it = d["p_facility"] - p_it
        p_facility = p_it_sub + over_it[:, None, None]
        upstream = d["busway"] + d["ups"] + d["transformer"]
        tot = self.totals
        for q, t in zip(d["q_room"], d["transformer"]):  # (each step's, in order)
            tot.e_electrical_rejected += (q + t) * dt
        tot.p_facility_peak = max(tot.p_facility_peak, float((p_it_sub.max(axis=(1, 2)) + over_it).max()))
        if self.p_facility_limit is not None:
            for p in p_facility:
                if step_mean(p)[0] > self.p_facility_limit:
                    tot.p_facility_over_limit_seconds += dt
        column = {"facility.p_busway_loss": d["busway"], "facility.p_ups_loss": d["ups"],
                  "facility.p_transformer_loss": d["transformer"], "facility.p_misc": np.full(k, self.p_misc),
                  "facility.p_electrical_room_cooling": d["room"], "facility.p_ups_battery_charge": np.zeros(k),
                  "facility.e_ups_battery": np.full(k, self.battery_left)}
        out = {key: v[:, None] for key, v in column.items()}
        out.update({"facility.p_facility": p_facility, "facility.p_loss": (p_loss.sum(axis=1) + upstream)[:, None],
                    "facility.battery_empty": np.zeros((k, 1), dtype=bool)})
        return out

    def apply(self, action) -> bool:
        start = action.what == "start"
        self.on_battery = start
        if start:
            self.outage_start = min(self.outage_start, action.time)
        return True
