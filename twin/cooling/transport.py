"""Transport delays in coolant loops and first-order sensor lag.

Water takes time to travel from a CDU to the farthest rack and back; a set-point change or a
new supply temperature reaches a rack only after the pipe between them has been flushed (plug
flow). Controllers also see their sensors through a thermowell's lag. Both make real control
loops slower than an idealised model.
"""

from __future__ import annotations

import numpy as np


def transport_delay(volume, flow):
    """Plug-flow transit time of a pipe run: τ = V / Q [s] (``inf`` at no flow).

    Parameters
    ----------
    volume : array_like
        Water volume between the two points [m³].
    flow : array_like
        Volume flow through it [m³ s-1].
    """
    v, q = np.broadcast_arrays(np.asarray(volume, dtype=float), np.asarray(flow, dtype=float))
    return np.divide(v, q, out=np.full(v.shape, np.inf), where=q > 0)


def sensor_lag(measured, true_value, dt, tau):
    """First-order sensor over one step, exact for an input held over the step.

    Parameters
    ----------
    measured : array_like
        Reading at the start of the step.
    true_value : array_like
        The quantity over the step.
    dt : float
        Step [s].
    tau : array_like
        Time constant [s] (immersion temperature sensors in thermowells: 10–60 s); 0 = no lag.

    Returns
    -------
    ndarray
        y + (x − y)(1 − e^(−dt/τ)).
    """
    y, x, tau = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (measured, true_value, tau)))
    a = np.where(tau > 0, -np.expm1(-dt / np.where(tau > 0, tau, 1.0)), 1.0)
    return y + (x - y) * a


class PlugFlowDelay:
    """Plug-flow delay lines for several pipe runs at once (one per CDU, say).

    Parameters
    ----------
    volume : ndarray, shape (c,)
        Water volume of each run [m³].
    initial : ndarray, shape (c,)
        Temperature the runs are filled with [degC].
    capacity : int
        Slugs kept per run (≥ 2); to be exact it should cover the longest delay in steps
        (beyond it the oldest slugs merge: heat is kept, the front is smeared).

    Notes
    -----
    Each step pushes the inlet temperature and the volume that entered; the outlet is the inlet
    temperature from when the water now leaving entered, i.e. when the cumulative inflow was
    V less than now — a step later or earlier when the flow changes, as in a real pipe. The
    outlet over a step is the volume-weighted mean of the slugs that leave during it, so heat is
    conserved: Σ inflow·T_in = Σ outflow·T_out + change of the heat held in the pipe.
    Vectorised over runs: no Python loop over runs.
    """

    def __init__(self, volume, initial, capacity: int = 4096):
        self.volume = np.asarray(volume, dtype=float).copy()
        c = self.volume.size
        self.capacity = int(capacity)
        # Slugs in the pipe, newest last: volume and temperature (c, capacity); the pipe starts
        # full of one slug at the initial temperature.
        self.slug_v = np.zeros((c, self.capacity))
        self.slug_t = np.zeros((c, self.capacity))
        self.slug_v[:, -1] = self.volume
        self.slug_t[:, -1] = np.asarray(initial, dtype=float)
        #: Each run's one temperature while every run holds water of one temperature, else None.
        self.uniform = self.slug_t[:, -1].copy()

    def stored_heat(self, rho_cp):
        """Σ ρ c_p V T of the water in each run [J] (relative to 0 degC)."""
        return rho_cp * (self.slug_v * self.slug_t).sum(axis=1)

    def step(self, t_in, flow, dt):
        """Push ``flow·dt`` of water at ``t_in`` in; return the mean outlet temperature.

        Parameters
        ----------
        t_in : ndarray, shape (c,)
            Inlet temperature over the step [degC].
        flow : ndarray, shape (c,)
            Volume flow [m³ s-1].
        dt : float
            Step [s].

        Returns
        -------
        ndarray, shape (c,)
            Volume-weighted mean temperature of the water that left [degC] (the oldest slug's
            temperature where nothing flowed).
        """
        t_in = np.asarray(t_in, dtype=float)
        if self.uniform is not None and np.array_equal(t_in, self.uniform):
            # Water of one temperature in, and only that in the pipe: it leaves at exactly that
            # temperature, and the pipe still holds V of it (how it is cut into slugs is of no
            # consequence when they are all alike), so nothing needs pushing.
            return self.uniform.copy()
        v_in = np.maximum(np.asarray(flow, dtype=float), 0.0) * dt
        # append the new slug; the two oldest merge (volume-weighted), so nothing is lost when
        # the pipe holds more slugs than ``capacity`` (the outlet is then smeared slightly)
        v0, v1 = self.slug_v[:, 0], self.slug_v[:, 1]
        merged_v = v0 + v1
        t0, t1 = self.slug_t[:, 0], self.slug_t[:, 1]
        merged_t = np.divide(v0 * t0 + v1 * t1, merged_v, out=t1.copy(), where=(merged_v > 0) & (t0 != t1))
        self.slug_v = np.concatenate([merged_v[:, None], self.slug_v[:, 2:], v_in[:, None]], axis=1)
        self.slug_t = np.concatenate([merged_t[:, None], self.slug_t[:, 2:], t_in[:, None]], axis=1)
        # remove v_in from the oldest end
        cum = np.cumsum(self.slug_v, axis=1)
        out_v = np.minimum(self.slug_v, np.maximum(v_in[:, None] - (cum - self.slug_v), 0.0))
        out_vol = out_v.sum(axis=1)
        heat_out = (out_v * self.slug_t).sum(axis=1)
        self.slug_v = self.slug_v - out_v
        oldest = self.slug_t[np.arange(self.slug_t.shape[0]), np.argmax(self.slug_v > 0, axis=1)]
        mean = np.divide(heat_out, out_vol, out=oldest.copy(), where=out_vol > 0)
        # water of one temperature leaves at exactly that temperature (the weighted mean could
        # differ from it in the last bit, and a steady supply should stay bit-for-bit steady)
        leaving = out_v > 0
        hi = np.where(leaving, self.slug_t, -np.inf).max(axis=1)
        lo = np.where(leaving, self.slug_t, np.inf).min(axis=1)
        held = self.slug_v > 0
        alike = ~held | (self.slug_t == t_in[:, None])
        self.uniform = t_in.copy() if alike.all() else None
        return np.where(leaving.any(axis=1) & (hi == lo), hi, mean)
