"""Heat rejection to outdoor air: dry coolers and cooling-tower cells as banks of identical units
(ε-NTU counterflow against sensible air or, for towers, saturated air with its effective specific
heat), fan speeds that reach a water set-point, and their water use.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from twin.cooling.plant import H_FG_WATER, cooling_tower_water, fan_power, hx_outlets
from twin.site.weather import P_STANDARD, humidity_ratio
from twin.units import CP_AIR, CP_WATER, RHO_AIR, RHO_WATER

#: Relative fan speeds at which heat-rejection outlets are tabulated each step [1].
SPEED_GRID = np.linspace(0.0, 1.0, 41)
#: Outlet tables a bank keeps (:meth:`HeatRejectionBank.table`) [1].
TABLES_KEPT = 256
#: Latent heat of vaporisation of water at 0 degC [J kg-1] and specific heat of water vapour
#: [J kg-1 K-1], for moist-air enthalpy (ASHRAE Handbook — Fundamentals 2021, ch. 1, eq. 30).
H_FG_0 = 2.501e6
CP_VAPOUR = 1860.0


def ntu_counterflow(effectiveness, c_ratio):
    """Number of transfer units of a counterflow exchanger from its effectiveness.

    Parameters
    ----------
    effectiveness : float
        ε [1], 0 < ε < 1 (and ε < 1/C_r).
    c_ratio : float
        C_r = C_min / C_max [1], 0..1.

    Returns
    -------
    float
        NTU = ln((1 − ε C_r) / (1 − ε)) / (1 − C_r), or ε / (1 − ε) for C_r = 1 [1].

    References
    ----------
    .. [1] F. P. Incropera et al., Fundamentals of Heat and Mass Transfer, 6th ed., §11.4,
       Table 11.4.
    """
    eps, cr = float(effectiveness), float(c_ratio)
    if not 0.0 < eps < 1.0 or eps * cr >= 1.0:
        raise ValueError(f"ntu_counterflow: effectiveness {eps:.3f} is not reachable (C_r {cr:.3f})")
    if abs(1.0 - cr) < 1e-9:
        return eps / (1.0 - eps)
    return math.log((1.0 - eps * cr) / (1.0 - eps)) / (1.0 - cr)


def saturated_air_enthalpy(t, pressure=P_STANDARD):
    """Enthalpy of saturated moist air per kg of dry air [J kg-1] at temperature ``t`` [degC].

    Notes
    -----
    h = c_p,a t + W_s(t) (h_fg,0 + c_p,v t) (ASHRAE Handbook — Fundamentals 2021, ch. 1).
    """
    w_s = humidity_ratio(t, t, pressure)
    return CP_AIR * np.asarray(t, dtype=float) + w_s * (H_FG_0 + CP_VAPOUR * np.asarray(t, dtype=float))


@functools.lru_cache(maxsize=4096)
def _saturated_specific_heat_cached(t_wet_bulb: float, t_water: float) -> float:
    return saturated_specific_heat(t_wet_bulb, t_water)


def saturated_specific_heat(t_wet_bulb, t_water, pressure=P_STANDARD):
    """Effective specific heat of saturated air between the wet-bulb and the water [J kg-1 K-1].

    Notes
    -----
    c_s = (h_s(T_w) − h_s(T_wb)) / (T_w − T_wb): the slope of the saturation enthalpy curve that
    turns a cooling tower into an equivalent sensible counterflow exchanger whose air stream has
    capacity rate ṁ_a c_s (Braun, Klein and Mitchell 1989).

    References
    ----------
    .. [1] J. E. Braun, S. A. Klein, J. W. Mitchell, "Effectiveness models for cooling towers
       and cooling coils", ASHRAE Transactions 95(2), 1989.
    """
    t_w = max(float(t_water), float(t_wet_bulb) + 1.0)
    h = saturated_air_enthalpy(np.array([t_wet_bulb, t_w]), pressure)
    return float((h[1] - h[0]) / (t_w - t_wet_bulb))


class HeatRejectionBank:
    """Identical dry coolers or tower cells in parallel, sharing one water flow.

    Parameters
    ----------
    entry : DryCooler or CoolingTower
        Catalogue entry of one unit.
    count : int
        Units in the bank.
    kind : {"dry_cooler", "hybrid", "cooling_tower"}

    Notes
    -----
    The bank is one counterflow exchanger between the water and an air stream (ε-NTU,
    :func:`~twin.cooling.plant.hx_outlets`): for dry coolers sensible air (c_p,a) entering at the
    dry-bulb — or, with the adiabatic pads wetted, at T_db − η (T_db − T_wb); for towers
    saturated air entering at the wet-bulb with the effective specific heat c_s
    (:func:`saturated_specific_heat`). UA at the rating follows from the rated capacity,
    approach and flows (:func:`ntu_counterflow`); at relative fan speed s it is
    UA = UA_d · s^n (air-side film coefficient). Each step the water outlet fraction
    r(s) = (T_out − T_sink) / (T_in − T_sink) is tabulated over :data:`SPEED_GRID` for the actual
    water flow; the fans then run at the lowest speed that brings the water to its set-point
    (or flat out), with power by the cube law. Failed fans remove their share of air flow: the
    fraction in service is an argument (``in_service``), the state of the equipment that owns
    the fans (:class:`twin.cooling.rejection.HeatRejection`), not of the bank.
    """

    def __init__(self, entry, count: int, kind: str):
        self.entry = entry
        self.count = int(count)
        self.kind = kind
        self.tower = kind == "cooling_tower"
        self.v_air = entry.air_flow.si * count  # [m3/s]
        self.p_fan = entry.fan_power.si * count  # [W]
        self.exponent = entry.ua_exponent.si
        self.capacity = entry.capacity.si * count
        m_w = entry.water_flow.si * RHO_WATER * count
        c_w = m_w * CP_WATER
        sink = entry.design_sink.si
        water_range = self.capacity / c_w
        t_out = sink + entry.approach.si
        c_air_specific = (saturated_specific_heat(sink, t_out + water_range / 2.0)
                          if self.tower else CP_AIR)
        c_a = RHO_AIR * self.v_air * c_air_specific
        c_min, c_max = min(c_w, c_a), max(c_w, c_a)
        eps = self.capacity / (c_min * (entry.approach.si + water_range))
        try:
            self.ua = ntu_counterflow(eps, c_min / c_max) * c_min  # [W/K] at full fans
        except ValueError as exc:
            raise ValueError(f"heat rejection '{entry.description}': rating is not reachable "
                             f"with its air flow ({exc})") from None
        self.adiabatic = getattr(entry, "adiabatic_effectiveness", None)
        self.adiabatic = None if self.adiabatic is None else self.adiabatic.si
        cycles = getattr(entry, "cycles_of_concentration", None)
        self.cycles = None if cycles is None else cycles.si
        self.latent = entry.latent_fraction.si if self.tower else 1.0
        self._tables: dict[bytes, tuple] = {}  # see :meth:`table`
        self._fans: dict[float, tuple] = {}  # see :meth:`table_inputs`

    def air_specific_heat(self, t_wb: float, t_water: float) -> float:
        """Specific heat of the air stream [J kg-1 K-1]: c_p,a, or c_s for a tower."""
        if not self.tower:
            return CP_AIR
        # c_s varies slowly with temperature: 0.01 K rounding keeps a small cache useful
        return _saturated_specific_heat_cached(round(t_wb, 2), round(t_water, 2))

    def table(self, m_water: float, c_air_specific: float, in_service: float = 1.0):
        """Speeds and outlet fractions over :data:`SPEED_GRID` at this water flow, air specific
        heat and fraction of the fans in service (:func:`outlet_tables` of this bank alone).

        The same inputs give the same table, so it is kept: the plant's flows recur from step to
        step (valves at their limits, steady loads). At most :data:`TABLES_KEPT` are held; then
        they are dropped and built again as needed.
        """
        key = b"".join(np.asarray(v, dtype=float).tobytes() for v in (m_water, c_air_specific, in_service))
        table = self._tables.get(key)
        if table is None:
            if len(self._tables) >= TABLES_KEPT:
                self._tables.clear()
            (table,) = outlet_tables(self.table_inputs(m_water, c_air_specific, in_service))
            self._tables[key] = table
        return table

    def table_inputs(self, m_water: float, c_air_specific: float, in_service: float = 1.0):
        """Arguments of :func:`~twin.cooling.plant.hx_outlets` over the speed grid up to the
        fans ``in_service`` (water hot, air cold, unit temperature difference): speeds, air
        flows, UA, water flow, c_air."""
        fans = self._fans.get(float(in_service))
        if fans is None:  # (what depends on the fans alone is kept: they are rarely out)
            if len(self._fans) >= TABLES_KEPT:
                self._fans.clear()
            s = SPEED_GRID * in_service
            fans = self._fans[float(in_service)] = (s, RHO_AIR * self.v_air * s, self.ua * s ** self.exponent)
        s = fans[0]
        return (*fans, np.full_like(s, m_water), np.full_like(s, c_air_specific))

    @staticmethod
    def speed_for(s, r, r_target: float) -> float:
        """Lowest speed whose outlet fraction is at most ``r_target`` (flat out if none)."""
        if r_target >= r[0]:
            return 0.0
        if r_target <= r[-1]:
            return float(s[-1])
        return float(np.interp(r_target, r[::-1], s[::-1]))

    def fan_power(self, speed, in_service: float = 1.0):
        """Fan power at relative air flow ``speed`` (of the bank's design; float or ndarray) with
        the fraction ``in_service`` of the fans working [W]: P = P_d w (s / w)³, w the fraction."""
        working = in_service
        if np.ndim(speed) == 0:
            if working <= 0.0 or speed <= 0.0:
                return 0.0
            return float(fan_power(speed, working, self.p_fan * working))
        if working <= 0.0:
            return np.zeros(np.shape(speed))
        return fan_power(np.maximum(speed, 0.0), working, self.p_fan * working)

    def solve(self, table, t_in: float, t_target: float, t_db: float, t_wb: float) -> dict:
        """Free cooling of water entering at ``t_in`` towards ``t_target`` [degC].

        Parameters
        ----------
        table : (ndarray, ndarray)
            Speeds and outlet fractions from :func:`outlet_tables` for this step's water flow.

        Returns
        -------
        dict
            ``t_sink`` [degC], ``r_full`` (outlet fraction at full fans) [1], ``t_free`` (lowest
            outlet, fans flat out) [degC], ``speed`` (to reach ``t_target``) [1], ``wet``
            (adiabatic pads on: dry operation could not reach ``t_target``), ``table``.
        """
        s, r = table
        wet = False
        t_sink = t_wb if self.tower else t_db
        t_free = t_sink + r[-1] * (t_in - t_sink) if t_in > t_sink else t_in
        if self.adiabatic is not None and t_free > t_target and t_db > t_wb:
            wet = True
            t_sink = t_db - self.adiabatic * (t_db - t_wb)
            t_free = t_sink + r[-1] * (t_in - t_sink) if t_in > t_sink else t_in
        speed = 0.0
        if t_in > t_target and t_in > t_sink:
            speed = self.speed_for(s, r, (t_target - t_sink) / (t_in - t_sink))
        return {"t_sink": t_sink, "r_full": float(r[-1]), "t_free": float(t_free),
                "speed": speed, "wet": wet, "table": table}

    def water(self, q_rejected: float, speed: float, wet: bool, t_db: float, t_air_in: float) -> float:
        """Make-up water [kg/s]: tower evaporation and blowdown, or adiabatic pad water."""
        if self.tower:
            return float(cooling_tower_water(q_rejected, self.entry.cycles_of_concentration.si,
                                             H_FG_WATER, self.latent)[2])
        if wet and speed > 0:
            evaporation = RHO_AIR * self.v_air * speed * CP_AIR * (t_db - t_air_in) / H_FG_WATER
            return evaporation * self.cycles / (self.cycles - 1.0)
        return 0.0


def outlet_tables(*inputs):
    """Speeds and water outlet fractions of several banks in one ε-NTU evaluation.

    Parameters
    ----------
    *inputs : tuple
        :meth:`HeatRejectionBank.table_inputs` of each bank.

    Returns
    -------
    list of (ndarray, ndarray)
        Per bank: relative speeds s and outlet fractions r(s) = (T_out − T_sink)/(T_in − T_sink).
    """
    cols = inputs[0] if len(inputs) == 1 else [np.concatenate(parts) for parts in zip(*inputs)]
    _, m_air, ua, m_w, c_air = cols
    r, _, _ = hx_outlets(1.0, 0.0, m_w, m_air, ua, CP_WATER, c_air)
    out, i = [], 0
    for parts in inputs:
        n = parts[0].size
        out.append((parts[0], r[i:i + n]))
        i += n
    return out
