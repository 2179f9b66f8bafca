"""Warnings about a finished run: things that passed without an error but that the user almost
certainly did not mean — a job that never ran, an inference job that served nothing, racks no
workload selects, accelerators and CPUs that stayed idle the whole run.

One place for them: the summary prints them, the dataset keeps them in its root ``warnings``
attribute (one per line), and ``twin capacity`` turns the rack warning into a note. Each is one
line that says what happened and why it probably happened.
"""

from __future__ import annotations

import numpy as np

# idleness is worth a warning for the compute roles (network devices follow the others' load)
from twin.power.chips import COMPUTE_ROLES
from twin.report.kpi import hottest_index

#: Names listed in one warning before "…".
SHOWN = 6


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 rack``, ``2 racks``, ``1,152 devices`` (``words``: an irregular plural)."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def _names(names) -> str:
    names = list(names)
    return ", ".join(names[:SHOWN]) + (f", … ({len(names):,} in all)" if len(names) > SHOWN else "")


def unselected_racks(sim) -> list[str]:
    """Racks none of whose devices any workload rule or job selects (they idle the whole run)."""
    sy = sim.system
    selected = np.bincount(sy.device_rack, weights=sim.workload.selected.astype(float), minlength=sy.n_racks)
    return [str(n) for n in sy.rack_name[selected == 0]]


def run_warnings(sim) -> list[str]:
    """Every warning about a finished (or interrupted) simulation, one line each."""
    sy = sim.system
    # Jobs that did nothing (never placed, never started, served no request): the job set says
    # why, since it knows placement.
    t_end = sim.totals.steps * sim.h
    out = sim.jobs.warnings(t_end) if sim.jobs is not None else []
    out += sim.workload.rules.warnings(t_end)
    idle_racks = unselected_racks(sim)
    if idle_racks:
        out.append(f"{plural(len(idle_racks), 'rack')} no workload rule or job selects (idle the whole "
                   f"run): {_names(idle_racks)}")
    roles = {name: chip.role for name, chip in sim.loaded.catalog.chips.items()}
    role = np.array([roles.get(k, "") for k in sy.device_kind], dtype=object)
    in_idle_rack = np.isin(sy.rack_name[sy.device_rack], idle_racks)
    never = np.isin(role, COMPUTE_ROLES) & ~sim.ever_used & ~in_idle_rack
    if never.any():
        kinds, counts = np.unique(sy.device_kind[never], return_counts=True)
        what = ", ".join(f"{c:,} {k}" for k, c in zip(kinds, counts))
        out.append(f"{plural(int(never.sum()), 'device')} never used (utilisation 0 the whole run): {what}")
    hbm = getattr(sim.racks, "t_hbm_peak", None)
    if hbm is not None:
        over = hbm > sy.chip["t_hbm_max"]  # (NaN for devices without an HBM node: False)
        if over.any():
            hottest = hottest_index(np.where(over, hbm, np.nan))  # named as the summary names it
            out.append(f"{plural(int(over.sum()), 'device')} above the HBM temperature limit "
                       f"(hottest {sy.device_name[hottest]} {hbm[hottest]:.1f} degC, limit "
                       f"{sy.chip['t_hbm_max'][hottest]:.1f} degC; the model does not slow the memory down)")
    return out
