"""The secondary pumps of a bank of CDUs: duty pumps in parallel on their catalogue curve,
standby pumps, trips and failover, and the power they draw under differential-pressure control.

One definition for both CDU models (:class:`twin.cooling.cdu.SimpleCdu` without a plant,
:class:`twin.cooling.facility.Plant` with one): a trip of one of N parallel duty pumps leaves
the flow where the survivors' curve meets the loop's curve
(:func:`~twin.cooling.hydraulics.operating_flow`), not (N−1)/N of it.

Catalogue: the CDU entry's ``pumps`` (duty, in parallel), ``standby_pumps``, ``pump`` (a
``pumps:`` entry: one pump's rated point, shut-off pressure, best efficiency, drive efficiency,
minimum speed), ``design_pressure`` (the duty pumps' pressure rise at the CDU's design flow) and
``index_pressure`` (the differential pressure held across the hydraulically farthest rack).
Without a pump curve the CDU's ``pump_power`` follows the affinity law and a trip leaves
(N−1)/N of the flow. With a coolant other than water (``resistance``, ``heat`` of
:func:`twin.cooling.coolant.loop_coolant_factors`) the loop's resistances scale by
``resistance`` at the same volume flow (Darcy–Weisbach/Blasius and form losses), so the pumps
deliver that much more pressure for the same flow; the pumps' catalogue curves are rated on
water, and on a denser coolant give ``density`` = ρ/ρ_water times their pressure at the same
flow and speed (head in metres is independent of the liquid: Δp = ρ g H).
"""

from __future__ import annotations

import numpy as np

from twin.cooling.hydraulics import dp_controlled_power, operating_flow, pump_curve_coefficient
from twin.cooling.plant import affinity_power
from twin.units import RHO_WATER


def _figure(entry, name, default=float("nan")):
    """SI value of an optional catalogue figure (``default`` where the entry or figure is absent)."""
    value = getattr(entry, name, None) if entry is not None else None
    return value.si if value is not None else default


class CduPumps:
    """Secondary pumps of n CDUs.

    Parameters
    ----------
    cdus : sequence of CduEntry
        The CDUs' catalogue entries.
    pumps : mapping
        The catalogue's ``pumps`` section (name → PumpEntry).
    resistance, heat, density : float
        The loop coolant against water (:func:`twin.cooling.coolant.loop_coolant_factors`):
        loop resistance and heat-capacity rate at one volume flow, and ρ/ρ_water, by which the
        pump curves (rated on water) scale [1]. Water: all 1.

    Notes
    -----
    Flow factor (secondary flow relative to design with every duty pump running):
    Q(N_run) / Q(N_duty), both at full speed on the loop's design curve k = Δp_d / Q_d².
    Power under differential-pressure control: the pumps deliver Δp = Δp_index + k_path Q²
    with k_path = (Δp_d − Δp_index) / Q_d² (:func:`~twin.cooling.hydraulics.dp_control_pressure`)
    at the speed their curve needs (never below the drive's minimum, where the surplus is
    throttled) and draw Q Δp / (η_pump(Q, N, speed) η_drive).
    """

    def __init__(self, cdus, pumps, resistance: float = 1.0, heat: float = 1.0, density: float = 1.0):
        entries = [pumps[c.pump] if getattr(c, "pump", None) is not None else None for c in cdus]
        self.curve = np.array([p is not None and c.index_pressure is not None and c.design_pressure is not None
                               and p.shutoff_pressure is not None for c, p in zip(cdus, entries)], dtype=bool)
        self.duty = np.array([c.pumps.value if c.pumps else 1 for c in cdus], dtype=np.int64)
        self.standby = np.array([c.standby_pumps.value if c.standby_pumps else 1 for c in cdus], dtype=np.int64)
        self.design_flow = np.array([c.design_flow.si for c in cdus])  # [m³ s-1]
        self.design_power = np.array([c.pump_power.si for c in cdus])  # [W]
        self.p0 = np.array([_figure(p, "shutoff_pressure") for p in entries])
        self.q_pump = np.array([_figure(p, "design_flow") for p in entries])
        self.a = np.array([pump_curve_coefficient(p.shutoff_pressure.si, p.design_flow.si, p.design_pressure.si)
                           if ok else np.nan for p, ok in zip(entries, self.curve)])
        self.eta = np.array([_figure(p, "efficiency") for p in entries])
        self.drive = np.array([_figure(p, "drive_efficiency", 1.0) for p in entries])
        self.min_speed = np.array([_figure(p, "min_speed", 0.0) for p in entries])
        dp_design = np.array([_figure(c, "design_pressure") for c in cdus])
        self.dp_index = np.array([_figure(c, "index_pressure") for c in cdus])
        q2 = self.design_flow * self.design_flow
        self.k_path = (dp_design - self.dp_index) / q2  # CDU, strainer and headers [Pa s² m-6]
        self.k_loop = dp_design / q2  # the whole loop at design [Pa s² m-6]
        # another coolant than water: every resistance of the loop (and so the differential
        # pressure the index rack needs at its design flow) × ``resistance``
        self.resistance, self.heat, self.density = float(resistance), float(heat), float(density)
        self.dp_index = self.dp_index * self.resistance
        self.k_path = self.k_path * self.resistance
        self.k_loop = self.k_loop * self.resistance
        # the pump curves (rated on water) give ρ/ρ_water × their pressure on another coolant:
        # the same head H at the same flow and speed, Δp = ρ g H
        self.p0 = self.p0 * self.density
        self.a = self.a * self.density
        self._flow_factor = None  # (running pumps, flow factor) of the last solve
        self._power = None  # ((flow, running pumps), power) of the last solve
        self.restore_all()

    def volume(self, m) -> np.ndarray:
        """Secondary volume flow [m³ s-1] of a water-equivalent mass flow ``m`` [kg s-1] (the
        mass flow that carries the coolant's heat-capacity rate with the water constants)."""
        return np.asarray(m, dtype=float) / (RHO_WATER * self.heat)

    # -- state -----------------------------------------------------------------------------------
    def restore_all(self) -> None:
        """Every duty pump running, every standby available."""
        self.running = self.duty.copy()
        self.standby_left = self.standby.copy()

    def trip(self, i: int, count: int = 1) -> None:
        """``count`` running pumps of CDU ``i`` trip."""
        self.running[i] = max(self.running[i] - count, 0)

    def failover(self, i: int) -> None:
        """A standby pump of CDU ``i`` starts in place of a tripped duty pump, if one is left."""
        if self.standby_left[i] > 0 and self.running[i] < self.duty[i]:
            self.standby_left[i] -= 1
            self.running[i] += 1

    def restore(self, i: int) -> None:
        """CDU ``i``'s pumps repaired: all duty pumps running, all standby pumps back."""
        self.running[i] = self.duty[i]
        self.standby_left[i] = self.standby[i]

    # -- physics ---------------------------------------------------------------------------------
    @property
    def flow_factor(self) -> np.ndarray:
        """Secondary flow each CDU's running pumps give, relative to design [1]."""
        key = self.running.tobytes()
        if self._flow_factor is None or self._flow_factor[0] != key:  # pumps changed: solve again
            self._flow_factor = (key, self._solve_flow_factor())
        return self._flow_factor[1].copy()

    def _solve_flow_factor(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            q_run = operating_flow(1.0, self.running, self.p0, self.a, 0.0, self.k_loop)
            q_all = operating_flow(1.0, self.duty, self.p0, self.a, 0.0, self.k_loop)
            by_curve = np.minimum(np.where(q_all > 0, q_run / q_all, 0.0), 1.0)
        return np.where(self.curve, by_curve, self.running / self.duty)

    def power(self, flow, up=True) -> np.ndarray:
        """Electrical power of each CDU's running pumps at secondary volume flow ``flow`` [W].

        Parameters
        ----------
        flow : array_like
            Secondary flow of each CDU [m³ s-1].
        up : array_like of bool
            False where the CDU as a whole is down (no pump runs).
        """
        q = np.asarray(flow, dtype=float)
        running = self.running * np.asarray(up, dtype=bool)
        # The same flow and pumps as the last call (steady loops, most steps) give the same power.
        key = (q.shape, q.tobytes(), running.tobytes())
        if self._power is not None and self._power[0] == key:
            return self._power[1].copy()
        p = self._solve_power(q, running)
        self._power = (key, p)
        return p.copy()

    def _solve_power(self, q: np.ndarray, running: np.ndarray) -> np.ndarray:
        share = running / self.duty
        with np.errstate(divide="ignore", invalid="ignore"):
            p_affinity = affinity_power(q / (self.design_flow * share), self.design_power * share) * self.resistance
            p_curve = dp_controlled_power(q, running, self.dp_index, self.k_path, self.p0, self.a,
                                          self.min_speed, self.q_pump, self.eta, self.drive)
        p = np.where(self.curve, p_curve, p_affinity)
        return np.where((running > 0) & (q > 0), p, 0.0)
