"""Cooling of electrical rooms: the heat of UPS, battery and distribution losses.

Electrical losses are heat in rooms of their own (UPS and battery rooms, switchgear; the twin's
liquid-immersed transformers stand outdoors). Their cooling is counted in PUE like any other:
here a packaged DX (direct-expansion) unit with an air-side economiser, its COP from the
refrigerant lift (:func:`twin.cooling.refrigeration.chiller_full_load_cop`), or fans only when
the outdoor air is cold enough to cool the room directly.
"""

from __future__ import annotations

import numpy as np

from twin.cooling.refrigeration import chiller_full_load_cop


def electrical_room_cooling(q_loss, t_outdoor, t_room, evaporator_approach, condenser_approach,
                            carnot_fraction, cop_max, fan_power_per_watt, economiser_approach):
    """Power of the electrical rooms' cooling and the heat it rejects outdoors.

    Parameters
    ----------
    q_loss : array_like
        Heat released in the rooms [W]: the power chain puts the UPS (with its battery
        charger), busway and miscellaneous heat here; its transformers stand outdoors
        (:class:`twin.power.chain.PowerChain`).
    t_outdoor : array_like
        Outdoor dry-bulb [degC].
    t_room : array_like
        Room supply-air set-point [degC] (UPS rooms 20–25 °C for battery life; IEEE 1184).
    evaporator_approach, condenser_approach : array_like
        DX coil approach below the supply air, and condensing approach above the outdoor air [K].
    carnot_fraction, cop_max : array_like
        Second-law efficiency and COP cap of the DX unit [1].
    fan_power_per_watt : array_like
        Indoor + condenser fan power per watt of heat removed [1].
    economiser_approach : array_like
        Outdoor air must be this much below the room set-point for the economiser alone to
        hold it [K].

    Returns
    -------
    p_cooling : ndarray
        Electrical power of the room cooling [W].
    q_rejected : ndarray
        Heat rejected outdoors, q_loss + p_cooling [W] (the fans and compressor end as heat too).

    Notes
    -----
    P = q (f_fan + 1/COP) with COP from (T_room − Δ_e, T_out + Δ_c), or P = q f_fan when
    T_out + Δ_econ ≤ T_room (air-side economiser).
    """
    q, to, tr = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (q_loss, t_outdoor, t_room)))
    q = np.maximum(q, 0.0)
    free = to + economiser_approach <= tr
    cop = chiller_full_load_cop(tr, to, evaporator_approach, condenser_approach, carnot_fraction, cop_max)
    p = q * fan_power_per_watt + np.where(free, 0.0, q / cop)
    return p, q + p
