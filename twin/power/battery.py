"""Rack battery backup units (BBU) on the rack's DC busbar, as in OCP Open Rack V3 racks.

Hyperscale racks with ORv3 power shelves carry lithium-ion battery backup shelves on the 48–54 V
busbar instead of a central UPS: on a utility outage the BBUs carry the rack for a few minutes
(long enough for generators to start), then recharge at a limited rate. Here one rack's BBU
shelves are lumped into one store per rack; all functions are vectorised over racks.
"""

from __future__ import annotations

import numpy as np


def bbu_ride_through(energy, p_load, p_max, eta_discharge):
    """Time the rack's BBUs can carry a constant load.

    Parameters
    ----------
    energy : array_like
        Energy stored in the cells [J].
    p_load : array_like
        DC load on the busbar [W], ≥ 0.
    p_max : array_like
        Highest DC output of the rack's BBUs [W].
    eta_discharge : array_like
        Cells → busbar efficiency of the BBU's DC-DC converter [1].

    Returns
    -------
    ndarray
        t = E · η_d / P [s]; ``inf`` at no load; 0 where the load exceeds ``p_max`` (the
        BBUs cannot carry it: the shelf's overload policy applies at once).
    """
    e, p, pm, eta = np.broadcast_arrays(*(np.asarray(v, dtype=float)
                                          for v in (energy, p_load, p_max, eta_discharge)))
    t = np.divide(e * eta, p, out=np.full(p.shape, np.inf), where=p > 0)
    return np.where(p > pm, 0.0, t)


def bbu_step(energy, p_load, on_battery, dt, capacity, p_max, p_charge, eta_charge, eta_discharge):
    """Advance the rack BBUs over one step: discharge on an outage, recharge otherwise.

    Parameters
    ----------
    energy : array_like
        Energy in the cells at the start of the step [J].
    p_load : array_like
        DC load of the rack over the step [W].
    on_battery : array_like of bool
        Utility (or the rack's AC feed) lost over this step.
    dt : float
        Step [s].
    capacity : array_like
        Usable energy of the rack's BBUs when full [J].
    p_max : array_like
        Highest DC output of the rack's BBUs [W].
    p_charge : array_like
        Charging power drawn from the busbar while the store is not full [W].
    eta_charge, eta_discharge : array_like
        Busbar → cells and cells → busbar efficiencies [1].

    Returns
    -------
    energy_end : ndarray
        Energy at the end of the step [J].
    p_delivered : ndarray
        DC power the BBUs give the rack (mean over the step) [W]; less than ``p_load`` when the
        store empties or the load exceeds ``p_max``.
    p_charge_drawn : ndarray
        Extra DC power drawn from the PSUs to recharge (mean over the step) [W].
    p_loss : ndarray
        Conversion losses, heat in the rack [W].

    Notes
    -----
    Discharge: the cells give P_d / η_d for P_d = min(P_load, P_max, E η_d / dt).
    Charge (constant power, the constant-current phase of CC/CV, which is most of a
    recharge): P_c = min(p_charge, (E_max − E) / (η_c dt)), of which η_c P_c is stored.
    Energy: E_end = E − P_d dt / η_d + η_c P_c dt, and P_loss = P_d (1/η_d − 1) + P_c (1 − η_c),
    so every joule is accounted for.

    References
    ----------
    .. [1] Open Compute Project, Open Rack V3 Battery Backup Unit specification (BBU shelf on the
       48 V busbar; regulated output, constant-power recharge).
    """
    e, p, on, cap, pm, pc, ec, ed = np.broadcast_arrays(
        *(np.asarray(v, dtype=float) for v in (energy, p_load, on_battery, capacity, p_max,
                                               p_charge, eta_charge, eta_discharge)))
    on = on.astype(bool)
    p_d = np.where(on, np.minimum(np.minimum(np.maximum(p, 0.0), pm), e * ed / dt), 0.0)
    room = np.maximum(cap - e, 0.0)
    p_c = np.where(on, 0.0, np.minimum(pc, room / (ec * dt)))
    e_end = e - p_d * dt / ed + ec * p_c * dt
    loss = p_d * (1.0 / ed - 1.0) + p_c * (1.0 - ec)
    return np.clip(e_end, 0.0, cap), p_d, p_c, loss
