"""The pumps of the plant's water circuits (facility water, chilled water): duty pumps in
parallel on their catalogue curve under differential-pressure control at the circuit's index point.

Catalogue: the ``pumps:`` entry's curve (``design_flow`` and ``design_pressure``, one pump's rated
point; ``shutoff_pressure``, ``efficiency`` at best efficiency, ``drive_efficiency``,
``min_speed``) and the circuit it is applied to: ``circuit_pressure``, the circuit's pressure drop
at its design flow Q_d, and ``index_pressure``, the differential pressure held across the
hydraulically farthest branch (a CDU's primary, a CRAH coil, with its control valve). The circuit
runs n = ⌈Q_d / Q_pump⌉ identical pumps in parallel, each selected for its share of the design
flow: the template's pressures and efficiencies with its rated and best-efficiency flow Q_d / n
(a pump of the same type and head, sized for the duty: a 700 L/min chilled-water circuit gets
a 700 L/min pump, not a 3,000 L/min one running near shut-off). At flow Q (what the branches' valves draw)
they deliver Δp = Δp_index + k_path Q², k_path = (Δp_circuit − Δp_index) / Q_d² (pipes, headers,
the heat-rejection units or evaporators in series with the branches), at the speed their curve
needs for it, not below the drive's minimum, and draw Q Δp / (η(Q, N) η_drive)
(:func:`~twin.cooling.hydraulics.dp_controlled_power`, the CDU secondary pumps' model). The
index pressure does not fall with the flow, so at part flow the power falls roughly with the
flow, not its cube. A template without the curve figures follows the affinity law from its rated
point: P = P_pump (Q_d / Q_pump) (Q / Q_d)³.
"""

from __future__ import annotations

import math

import numpy as np

from twin.cooling.hydraulics import dp_controlled_power, pump_curve_coefficient, pump_pressure
from twin.scenario.errors import FieldError

_CURVE = ("shutoff_pressure", "efficiency", "circuit_pressure")


class CircuitPumps:
    """Duty pumps of one water circuit (module docstring).

    Parameters
    ----------
    pump : Pump
        Catalogue entry of each pump.
    design_flow : float
        The circuit's design flow [m³ s-1], > 0.
    loc : tuple
        Scenario field of the template (for errors).

    Raises
    ------
    FieldError
        The pumps at full speed cannot give ``circuit_pressure`` at the design flow.
    """

    def __init__(self, pump, design_flow: float, loc=("plant", "pumps", "template")):
        self.design_flow = float(design_flow)
        q_pump = pump.design_flow.si
        self.n = max(1, math.ceil(self.design_flow / q_pump - 1e-9))
        self.curve = all(getattr(pump, k) is not None for k in _CURVE)
        #: power at the design flow by the affinity law from one pump's rated point [W]
        self.p_affinity = pump.power.si * self.design_flow / q_pump
        if not self.curve:
            return
        self.p0, self.q_pump = pump.shutoff_pressure.si, self.design_flow / self.n  # selected for the duty
        self.a = float(pump_curve_coefficient(self.p0, self.q_pump, pump.design_pressure.si))
        self.eta = pump.efficiency.si
        self.drive = pump.drive_efficiency.si if pump.drive_efficiency is not None else 1.0
        self.min_speed = pump.min_speed.si if pump.min_speed is not None else 0.0
        self.dp_index = pump.index_pressure.si
        self.dp_circuit = pump.circuit_pressure.si
        self.k_path = (self.dp_circuit - self.dp_index) / self.design_flow ** 2
        full = float(pump_pressure(self.design_flow, 1.0, self.p0, self.a, self.n))
        if full < self.dp_circuit:
            raise FieldError(loc, f"{self.n} '{pump.description}' pump(s) give {full / 1e3:.0f} kPa at the "
                                  f"circuit's design flow ({self.design_flow * 6e4:.0f} L/min), below its "
                                  f"circuit_pressure {self.dp_circuit / 1e3:.0f} kPa")

    def power(self, flow):
        """Electrical power of the pumps at circuit flow ``flow`` [m³ s-1] → [W] (float or ndarray)."""
        if self.curve and np.ndim(flow) == 0:  # (one flow: dp_controlled_power on floats, as below)
            q = float(flow)
            return float(dp_controlled_power(q, self.n, self.dp_index, self.k_path, self.p0, self.a,
                                             self.min_speed, self.q_pump, self.eta, self.drive)) if q > 0 else 0.0
        q = np.maximum(np.asarray(flow, dtype=float), 0.0)
        if self.curve:
            p = np.where(q > 0, dp_controlled_power(q, self.n, self.dp_index, self.k_path, self.p0, self.a,
                                                    self.min_speed, self.q_pump, self.eta, self.drive), 0.0)
        else:
            p = self.p_affinity * (q / self.design_flow) ** 3
        return float(p) if p.ndim == 0 else p
