"""Coolant properties (water, propylene-glycol solutions) and what they change.

Properties come from the catalogue's ``coolants:`` tables (temperature, ρ, c_p, μ, k with their
source). From them follow the heat a loop carries per unit flow (ρ c_p), the cold-plate
convection conductance (Nu ∝ Re^n Pr^(1/3)) and the loop's pressure drop
(:func:`twin.cooling.hydraulics.fluid_resistance_factor`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CoolantProperties:
    """Properties of a coolant at one temperature (or arrays of them), SI units."""

    rho: np.ndarray  # density [kg m-3]
    cp: np.ndarray  # specific heat [J kg-1 K-1]
    mu: np.ndarray  # dynamic viscosity [Pa s]
    k: np.ndarray  # thermal conductivity [W m-1 K-1]

    @property
    def prandtl(self):
        """Pr = c_p μ / k [1]."""
        return self.cp * self.mu / self.k

    @property
    def volumetric_heat_capacity(self):
        """ρ c_p [J m-3 K-1]: heat carried per unit volume flow and kelvin."""
        return self.rho * self.cp


def coolant_properties(points, t):
    """Coolant properties at temperature ``t`` from a catalogue table.

    Parameters
    ----------
    points : sequence of (T, ρ, c_p, μ, k)
        Table rows, T increasing [degC, kg m-3, J kg-1 K-1, Pa s, W m-1 K-1].
    t : array_like
        Temperature [degC]; held at the table's ends outside it.

    Returns
    -------
    CoolantProperties

    Notes
    -----
    ρ, c_p and k are interpolated linearly; μ log-linearly (viscosity of liquids falls close to
    exponentially with temperature, Andrade's law μ = A e^(B/T)), which keeps a 10 K table
    within 1 % between its rows.
    """
    tab = np.asarray(points, dtype=float)
    t = np.asarray(t, dtype=float)
    tt = tab[:, 0]
    rho = np.interp(t, tt, tab[:, 1])
    cp = np.interp(t, tt, tab[:, 2])
    mu = np.exp(np.interp(t, tt, np.log(tab[:, 3])))
    k = np.interp(t, tt, tab[:, 4])
    return CoolantProperties(rho=rho, cp=cp, mu=mu, k=k)


def convection_factor(props, props_ref, exponent, prandtl_exponent=1.0 / 3.0):
    """Change of a cold plate's convection conductance when its coolant changes.

    Parameters
    ----------
    props, props_ref : CoolantProperties
        The new coolant and the one the plate was rated with, at the same temperature.
    exponent : array_like
        n in Nu ∝ Re^n of the plate [1] (the catalogue's convection exponent).
    prandtl_exponent : float
        m in Nu ∝ Pr^m [1] (1/3: laminar developing flow and Colburn/Sieder–Tate).

    Returns
    -------
    ndarray
        G / G_ref at the same volume flow through the same plate [1]:
        (k / k_ref) · ((ρ/μ) / (ρ_ref/μ_ref))^n · (Pr / Pr_ref)^m.

    Notes
    -----
    h = Nu k / D_h with Re = ρ v D_h / μ; at one volume flow v is fixed. For 25 % propylene
    glycol against water at 35 °C with n = 0.4 this gives ≈ 0.79: cold-plate heat transfer
    15–20 % lower, the figure liquid-cooling vendors quote for PG25.

    References
    ----------
    .. [1] Incropera & DeWitt, Fundamentals of Heat and Mass Transfer, §8.4–8.5 (Nu ∝ Re^n Pr^m).
    """
    n = np.asarray(exponent, dtype=float)
    re = (props.rho / props.mu) / (props_ref.rho / props_ref.mu)
    return (props.k / props_ref.k) * re ** n * (props.prandtl / props_ref.prandtl) ** prandtl_exponent


def flow_for_same_heat(props, props_ref):
    """Volume flow needed, relative to the reference coolant, to carry the same heat at the same
    temperature rise: Q / Q_ref = (ρ c_p)_ref / (ρ c_p) [1]."""
    return props_ref.volumetric_heat_capacity / props.volumetric_heat_capacity


def loop_coolant_factors(points, water_points, t, exponent, friction_share=0.5):
    """What a secondary loop's coolant changes against water, at the loop temperature.

    Parameters
    ----------
    points, water_points : sequence of (T, ρ, c_p, μ, k)
        Catalogue property tables of the coolant and of water.
    t : float
        Loop temperature the properties are taken at [degC] (the CDU supply set-point).
    exponent : array_like
        Convection exponent n of each cold plate (Nu ∝ Re^n) [1].
    friction_share : float
        Share of the loop's pressure drop that is pipe friction
        (:func:`twin.cooling.hydraulics.fluid_resistance_factor`) [1].

    Returns
    -------
    dict
        ``heat`` (ρ c_p) / (ρ c_p)_water: heat-capacity rate at one volume flow [1];
        ``resistance``: k / k_water at one volume flow [1]; ``density`` ρ / ρ_water: the
        pressure a centrifugal pump gives at one flow and speed, against its curve on water [1];
        ``convection`` (shape of ``exponent``): cold-plate conductance / conductance with water
        [1] (:func:`convection_factor`).

    Notes
    -----
    The loop is balanced for its design volume flows with its own coolant (the pumps' set-point
    is commissioned so the index rack gets its design flow), so volume flows stay and the pumps
    deliver ``resistance`` × the pressure; the heat each litre carries, the plates' convection and
    the loop's thermal mass change with the properties. A centrifugal pump's head in metres at a
    given flow and speed does not depend on the liquid (Euler's turbomachine equation; viscosity
    corrections are negligible below about 4 cSt, and PG25 is about 2 cSt at 40 °C), so the
    pressure of its curve, Δp = ρ g H, scales with ``density`` (ASHRAE Handbook — HVAC Systems
    and Equipment 2020, ch. 44).
    """
    from twin.cooling.hydraulics import fluid_resistance_factor

    c = coolant_properties(points, t)
    w = coolant_properties(water_points, t)
    return {"heat": float(c.volumetric_heat_capacity / w.volumetric_heat_capacity),
            "resistance": float(fluid_resistance_factor(c.rho, c.mu, w.rho, w.mu, friction_share)),
            "density": float(c.rho / w.rho),
            "convection": convection_factor(c, w, exponent)}
