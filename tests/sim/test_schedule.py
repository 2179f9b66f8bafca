"""The multi-rate schedule: what a slow component reads from faster and from same-rate writers."""

from __future__ import annotations

import numpy as np

from twin.sim.component import Component, Schedule, State, Var

FAST = Var("facility", "fast", "1", "written every step")
SLOW = Var("facility", "slow", "1", "written every 3 steps", record=False)
SEEN = Var("facility", "seen", "1", "what the reader saw", record=False)


class Counter(Component):
    outputs = (FAST,)

    def step(self, t, dt, state):
        state["facility.fast"] = np.array([t])


class SlowWriter(Component):
    inputs = ("facility.fast",)
    outputs = (SLOW,)
    every = 3

    def step(self, t, dt, state):
        state["facility.slow"] = 10.0 * t


class SlowReader(Component):
    inputs = ("facility.fast", "facility.slow")
    outputs = (SEEN,)
    every = 3

    def __init__(self):
        self.seen = []

    def step(self, t, dt, state):
        self.seen.append((t, dt, float(state["facility.fast"][0]), state["facility.slow"]))


def test_slow_components_average_faster_inputs_and_read_same_rate_ones_as_written():
    """Steps at t = 0, 1, 2, … (h = 1): the slow pair steps at t = 0, 3, 6 over dt = 3. The
    reader gets the mean of the fast input over the steps up to its own (exact: mean of the
    integers), and the slow writer's value of the same step (10 t), not a mean mixing it with
    the value it held before."""
    reader = SlowReader()
    comps = [Counter(), SlowWriter(), reader]
    state = State()
    for c in comps:
        state.declare(c)
    state.check_inputs(comps)
    sched = Schedule(comps, 1.0)
    for k in range(9):
        sched.step(float(k), state)
    assert [s[:2] for s in reader.seen] == [(0.0, 3.0), (3.0, 3.0), (6.0, 3.0)]
    assert [s[2] for s in reader.seen] == [0.0, np.mean([1, 2, 3]), np.mean([4, 5, 6])]
    assert [s[3] for s in reader.seen] == [0.0, 30.0, 60.0]
