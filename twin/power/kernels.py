"""Step kernels for chip power and the power-limit clock: a numpy reference and a compiled one.

Two kernels compute the same two things each thermal step:

- :meth:`power`: device power per workload sub-step — idle or active power with leakage
  (:func:`twin.power.device.device_power`), clamped at the part's power excursion above its
  limit, zero for tripped devices;
- :meth:`clock_limit`: the clock that holds each device's highest demand of the step at its power
  limit (:func:`twin.power.governor.power_limit_governor`, Newton on the power equation).

``numpy`` is the reference: it calls those functions as they are, array operation by array
operation. ``numba`` (the optional ``fast`` extra) does both in one compiled pass over the
devices, with the same equations in the same order; only the rounding
of ``exp`` and ``pow`` may differ from numpy's (a few ulp), so results agree to ~1e-12 relative
per step and to 1e-6 over a run (tests/power/test_kernels.py).

The kernel is chosen once, when the simulation is built (:func:`choose`): ``TWIN_KERNEL`` =
``numpy`` or ``numba`` forces one; by default (``auto``) systems of at least
:data:`COMPILED_MIN_DEVICES` devices and runs of at least :data:`COMPILED_MIN_STEPS` thermal
steps use ``numba`` when it is installed — below both, importing numba and loading its compiled
code costs more than it saves. The quiet blocks' compiled loop (:mod:`twin.sim.fused`) is
chosen by :func:`choose_block`, from :data:`BLOCK_MIN_STEPS` steps on.
"""

from __future__ import annotations

import os

import numpy as np

from twin.power.device import CLOCK_NEWTON_STEPS, device_power
from twin.power.governor import (
    CLOCK_MIN,
    THROTTLE_DOWN_RATE,
    THROTTLE_GAIN,
    THROTTLE_UP_RATE,
    power_limit_governor,
    shutdown_trip,
    thermal_governor,
)

#: Environment variable that picks the kernel: ``auto`` (default), ``numpy`` or ``numba``.
ENV = "TWIN_KERNEL"
#: Devices from which ``auto`` picks the compiled kernel (numba's import and cache load take
#: ~0.5 s of CPU; the compiled step saves ~10-20 µs per thousand devices and step).
COMPILED_MIN_DEVICES = 2000
#: Thermal steps from which ``auto`` picks the compiled kernel whatever the system's size: one
#: compiled call in place of the ~30 numpy calls of the reference saves ~100-200 µs of CPU per
#: step even for a few hundred devices (the quickstart's quiet blocks, twin.sim.block: 605 →
#: 410 µs per step, measured on a loaded 2-core machine), against ~0.75 s of CPU to import numba
#: and load its cached code (~3.7 s the first time, when it compiles): a day at 1 s (86,400
#: steps) gains ~10 s; the short runs of the tests and sweeps keep the numpy reference.
COMPILED_MIN_STEPS = 50_000
#: Thermal steps from which ``auto`` runs the quiet blocks' feedback loop compiled
#: (:mod:`twin.sim.fused`): there one call does a whole block's loop in place of ~30 numpy calls
#: per step, saving ~0.3-0.4 ms of CPU per step on the quickstart against ~0.75 s of CPU to
#: import numba and load the cached loop: a 5-minute control interval (300 steps) saves
#: ~100 ms, and a run of a few thousand steps pays for the import.
BLOCK_MIN_STEPS = 3_000


class NumpyKernel:
    """The reference: :func:`~twin.power.device.device_power` and
    :func:`~twin.power.governor.power_limit_governor` on whole arrays."""

    name = "numpy"

    def __init__(self, chip: dict):
        self.chip = chip

    def power(self, u, clock, on, t_die, held, p_limit=None):
        """Device power [W] for utilisation ``u`` (devices,) or (sub-steps, devices); ``p_limit``
        is the power limit in force [W] (default the scenario's, ``chip["p_limit"]``)."""
        c = self.chip
        p = device_power(u * on, clock * on, t_die, ((u > 0) | held) & on, c)
        return np.minimum(p, c["power_excursion"] * (c["p_limit"] if p_limit is None else p_limit)) * on

    def clock_limit(self, u, t_die, p_limit=None):
        """Clock [1] that holds the highest of the step's demands ``u`` (sub-steps, devices) or
        (devices,) at each device's power limit ``p_limit`` [W] (default ``chip["p_limit"]``)."""
        u_max = u.max(axis=0) if u.ndim == 2 else u
        return power_limit_governor(self.chip["p_limit"] if p_limit is None else p_limit, u_max, t_die, self.chip)

    def govern(self, u, t_die, clock_thermal, tripped, dt, p_limit=None):
        """The governors' per-device part of one step: the thermal governor's next clock, the
        power-limit clock, their minimum and the shutdown trips.

        Returns
        -------
        (ndarray, ndarray, ndarray, ndarray of bool)
            Thermal clock, power-limit clock, clock [1] and tripped devices.
        """
        c = self.chip
        thermal = thermal_governor(clock_thermal, t_die, c["t_throttle"], c["throttle_hysteresis"], dt)
        power = self.clock_limit(u, t_die, p_limit)
        return thermal, power, np.minimum(thermal, power), shutdown_trip(t_die, c["t_shutdown"], tripped)


class NumbaKernel(NumpyKernel):
    """Both steps compiled with numba, one pass over the devices, into reused buffers.

    The per-device constants of the power equations (the active floor less its leakage at the
    idle temperature, the idle leakage, the clamp) are computed once, here, with numpy — the
    same expressions the reference evaluates every step.
    """

    name = "numba"

    def __init__(self, chip: dict):
        super().__init__(chip)
        a, e_idle, *rest = chip_arrays(chip)
        self._a, self._e_idle = a, e_idle
        self._args, self._excursion, self._thermal = tuple(rest[:7]), rest[7], tuple(rest[8:])
        # the leakage factors the governors computed last (e) and the die temperatures they are
        # for (t_e): the next step's power starts from the same temperatures and reuses them
        self._t_e = np.full(a.shape, np.nan)
        self._e = np.empty(a.shape)
        _compiled()  # compile (or load from numba's cache) now, while the simulation is built

    def _limit(self, p_limit):
        return np.ascontiguousarray(self.chip["p_limit"] if p_limit is None else p_limit, dtype=float)

    def power(self, u, clock, on, t_die, held, p_limit=None):
        u2 = u if u.ndim == 2 else u[None, :]
        out = np.empty(u2.shape)  # fresh: the caller keeps it (state, ramp limits)
        p_leak_ref, t_ref, beta, alpha, p_dyn, p_idle, ilf = self._args
        _compiled()[0](np.ascontiguousarray(u2, dtype=float), np.ascontiguousarray(clock, dtype=float),
                    np.ascontiguousarray(on), np.ascontiguousarray(t_die, dtype=float),
                    np.ascontiguousarray(held), self._a, self._e_idle, p_leak_ref, t_ref,
                    beta, alpha, p_dyn, p_idle, ilf, self._excursion, self._limit(p_limit), self._t_e, self._e,
                    out)
        return out if u.ndim == 2 else out[0]

    def clock_limit(self, u, t_die, p_limit=None):
        u2 = u if u.ndim == 2 else u[None, :]
        p_leak_ref, t_ref, beta, alpha, p_dyn, _, _ = self._args
        out = np.empty(self._a.shape)
        _compiled()[1](np.ascontiguousarray(u2, dtype=float), np.ascontiguousarray(t_die, dtype=float),
                           self._limit(p_limit), self._a, p_leak_ref, t_ref, beta, alpha, p_dyn, CLOCK_MIN,
                           CLOCK_NEWTON_STEPS, out)
        return out


    def govern(self, u, t_die, clock_thermal, tripped, dt, p_limit=None):
        n = self._a.shape[0]
        thermal, power, clock = np.empty(n), np.empty(n), np.empty(n)
        trip = np.empty(n, dtype=bool)
        u2 = u if u.ndim == 2 else u[None, :]
        p_leak_ref, t_ref, beta, alpha, p_dyn, _, _ = self._args
        _compiled()[2](np.ascontiguousarray(u2, dtype=float), np.ascontiguousarray(t_die, dtype=float),
                     np.ascontiguousarray(clock_thermal, dtype=float), np.ascontiguousarray(tripped),
                     float(dt), self._limit(p_limit), self._a, p_leak_ref, t_ref, beta, alpha, p_dyn, *self._thermal,
                     THROTTLE_GAIN, THROTTLE_DOWN_RATE, THROTTLE_UP_RATE, CLOCK_MIN, CLOCK_NEWTON_STEPS,
                     self._t_e, self._e, thermal, power, clock, trip)
        return thermal, power, clock, trip


def chip_arrays(c: dict) -> tuple:
    """The chip figures the compiled kernels read, one contiguous (devices,) float array each:
    the active floor less its leakage at the idle temperature ``a`` [W], the idle leakage
    factor ``e_idle`` [1] (the same expressions the reference evaluates every step), then
    ``p_leak_ref``, ``t_ref``, ``leak_beta``, ``clock_exponent``, ``p_dyn``, ``p_idle``,
    ``idle_leak_fraction``, ``power_excursion``, ``t_throttle``, ``throttle_hysteresis``,
    ``t_shutdown`` of the chip figures ``c``."""
    e_idle = np.exp(c["leak_beta"] * (np.asarray(c["t_idle"]) - c["t_ref"]))
    a = np.ascontiguousarray(c["p_active_idle"] - c["p_leak_ref"] * e_idle, dtype=float)

    def arr(v):  # (a writable copy: the compiled loop's argument types are its warm-up's)
        return np.array(np.broadcast_to(np.asarray(v, dtype=float), a.shape))

    return (a, arr(e_idle), *(arr(c[k]) for k in (
        "p_leak_ref", "t_ref", "leak_beta", "clock_exponent", "p_dyn", "p_idle", "idle_leak_fraction",
        "power_excursion", "t_throttle", "throttle_hysteresis", "t_shutdown")))


_COMPILED = None


def _compiled():
    """The numba-compiled functions (compiled, or loaded from numba's cache, on first use); the
    per-device equations they call (:mod:`twin.power.compiled`) are bound to the module's
    globals first, where they find them."""
    global _COMPILED, _dev
    if _COMPILED is None:
        import numba

        from twin.power import compiled as _dev

        jit = numba.njit(cache=True, nogil=True)
        _COMPILED = (jit(_power_loop), jit(_clock_loop), jit(_govern_loop))
    return _COMPILED


def _power_loop(u, clock, on, t_die, held, a, e_idle, p_leak_ref, t_ref, beta, alpha, p_dyn,
                p_idle, ilf, excursion, limit, t_e, e_c, out):
    """Device power per sub-step into ``out`` (sub-steps, devices) [W]
    (:func:`twin.power.compiled.device_power`); a device's leakage factor is ``e_c``'s where its
    die temperature is ``t_e``'s (the governors computed it there), else computed."""
    n_sub, n = u.shape
    for j in range(n):
        if not on[j]:
            for k in range(n_sub):
                out[k, j] = 0.0
            continue
        e = e_c[j] if t_die[j] == t_e[j] else _dev.leak_factor(t_die[j], t_ref[j], beta[j])
        floor, fa, idle = _dev.power_terms(clock[j], e, a[j], e_idle[j], p_leak_ref[j], alpha[j], p_idle[j], ilf[j])
        cap = excursion[j] * limit[j]
        for k in range(n_sub):
            out[k, j] = _dev.device_power(u[k, j], held[j], floor, fa, p_dyn[j], idle, cap)


def _clock_loop(u, t_die, limit, a, p_leak_ref, t_ref, beta, alpha, p_dyn, clock_min, steps, out):
    """Clock holding the step's highest demand at the limit into ``out`` (devices,) [1]
    (:func:`twin.power.compiled.power_clock`)."""
    for j in range(t_die.size):
        e = _dev.leak_factor(t_die[j], t_ref[j], beta[j])
        out[j] = _dev.power_clock(_dev.peak(u, j), e, limit[j], a[j], p_leak_ref[j], alpha[j], p_dyn[j], clock_min, steps)


def _govern_loop(u, t_die, clock_thermal, tripped, dt, limit, a, p_leak_ref, t_ref, beta, alpha, p_dyn,
                 t_throttle, hysteresis, t_shutdown, gain, down_rate, up_rate, clock_min, steps,
                 t_e, e_c, thermal, power, clock, trip):
    """The governors' per-device step into ``thermal``, ``trip``, ``power``, ``clock``: the
    thermal governor (:func:`twin.power.compiled.thermal_clock`), the shutdown trip, the
    power-limit clock (:func:`twin.power.compiled.power_clock`) and their minimum; each
    device's leakage factor into ``e_c`` and the die temperature it is for into ``t_e``."""
    for j in range(t_die.size):
        td = t_die[j]
        thermal[j] = _dev.thermal_clock(clock_thermal[j], td, t_throttle[j], hysteresis[j], gain, down_rate, up_rate,
                                        clock_min, dt)
        trip[j] = tripped[j] or td > t_shutdown[j]
        e = _dev.leak_factor(td, t_ref[j], beta[j])
        t_e[j], e_c[j] = td, e
        power[j] = _dev.power_clock(_dev.peak(u, j), e, limit[j], a[j], p_leak_ref[j], alpha[j], p_dyn[j], clock_min, steps)
        clock[j] = min(thermal[j], power[j])


#: Kernels by name.
KERNELS = {"numpy": NumpyKernel, "numba": NumbaKernel}


def _installed(name: str) -> bool:
    """Whether package ``name`` is installed, without importing it."""
    import importlib.util

    return importlib.util.find_spec(name) is not None


def numba_available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def choose_block(n_devices: int, name: str | None = None, n_steps: int = 0) -> str:
    """The kernel of the quiet blocks' feedback loop (:mod:`twin.sim.block`): as
    :func:`choose`, but ``auto`` picks ``numba`` from :data:`BLOCK_MIN_STEPS` thermal steps
    (or :data:`COMPILED_MIN_DEVICES` devices) when it is installed."""
    chosen = choose(n_devices, name, n_steps)
    asked = (name or os.environ.get(ENV, "") or "auto").strip().lower()
    if asked == "auto" and chosen == "numpy" and n_steps >= BLOCK_MIN_STEPS and _installed("numba"):
        return "numba"  # (imported when the first quiet block runs, not here)
    return chosen


def choose(n_devices: int, name: str | None = None, n_steps: int = 0) -> str:
    """The kernel for a system of ``n_devices`` run for ``n_steps`` thermal steps: ``name`` or
    ``TWIN_KERNEL`` if given (``auto`` when neither is), else numba for large systems
    (:data:`COMPILED_MIN_DEVICES`) or long runs (:data:`COMPILED_MIN_STEPS`) when it is installed.

    Raises
    ------
    ScenarioError
        ``TWIN_KERNEL`` names no kernel, or asks for ``numba`` when it is not installed: one line
        ``<environment>:1: TWIN_KERNEL: …`` naming the allowed values (the CLI's exit code 2).
    ValueError
        The same for a ``name`` given by the caller.
    """
    from_env = not name
    name = (name or os.environ.get(ENV, "") or "auto").strip().lower()
    if name == "auto":
        big = n_devices >= COMPILED_MIN_DEVICES or n_steps >= COMPILED_MIN_STEPS
        return "numba" if big and numba_available() else "numpy"
    why = None
    if name not in KERNELS:
        why = f"unknown kernel '{name}' (allowed: auto, {', '.join(KERNELS)})"
    elif name == "numba" and not numba_available():
        why = "numba is not installed (pip install 'twin[fast]'; allowed without it: auto, numpy)"
    if why is None:
        return name
    if from_env:
        from twin.scenario.errors import ScenarioError

        raise ScenarioError(why, file="<environment>", path=ENV)
    raise ValueError(f"kernel: {why}")
