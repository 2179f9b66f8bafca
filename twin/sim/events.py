"""Scenario events (faults and operator actions) as a time-ordered queue of state changes.

Each event starts at ``at`` and, with a ``duration``, is cleared ``duration`` later; a CDU event
with ``failover`` is taken over by a standby after ``failover_delay``. The driver applies due
actions at the start of a step, then re-derives flows and boundaries from its state factors.
"""

from __future__ import annotations

import fnmatch
import heapq
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the scenario model imports nothing from here; kept out of the import graph
    from twin.scenario.model import Event


@dataclass(order=True)
class Action:
    time: float
    seq: int
    what: str = field(compare=False)  # "start" | "clear" | "failover"
    event: Event = field(compare=False)
    index: int = field(compare=False)  # position in scenario.events


class EventQueue:
    """Pending actions, popped in time order."""

    def __init__(self, events: list[Event]):
        self._heap: list[Action] = []
        self._seq = 0
        for i, ev in enumerate(events):
            self.push(ev.at, "start", ev, i)
            if ev.duration is not None:
                self.push(ev.at + ev.duration, "clear", ev, i)
            if ev.failover and ev.kind in ("cdu_pump_trip", "cdu_failure"):
                self.push(ev.at + ev.failover_delay, "failover", ev, i)

    def push(self, time, what, event, index):
        heapq.heappush(self._heap, Action(time, self._seq, what, event, index))
        self._seq += 1

    def due(self, t_end: float):
        """Pop every action before ``t_end``."""
        while self._heap and self._heap[0].time < t_end:
            yield heapq.heappop(self._heap)

    def first_after(self, t_end: float) -> float:
        """Time of the first action not before ``t_end`` (those before are due now) [s]."""
        if not self._heap or self._heap[0].time >= t_end:
            return self.first_time
        return min((a.time for a in self._heap if a.time >= t_end), default=np.inf)

    @property
    def first_time(self) -> float:
        return self._heap[0].time if self._heap else np.inf


def rack_targets(pattern: str, rack_names: np.ndarray) -> np.ndarray:
    """Indices of the racks a target names (exact name or shell pattern)."""
    return np.array([i for i, n in enumerate(rack_names) if fnmatch.fnmatchcase(n, pattern)], dtype=np.int64)


def cdu_targets(name: str, cdu_names: np.ndarray) -> np.ndarray:
    """Indices of the CDUs a target names (a CDU, or a family ``name`` of ``name-NN``)."""
    exact = np.flatnonzero(cdu_names == name)
    if exact.size:
        return exact
    return np.array([i for i, n in enumerate(cdu_names) if n.startswith(name + "-")], dtype=np.int64)
