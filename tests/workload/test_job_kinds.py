"""Job kinds: each keeps its own state, and a new kind is one registration (no change to JobState)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from twin.export.dataset import build_tree, summary
from twin.scenario import load_scenario
from twin.scenario.model import DeviceRequest
from twin.sim.driver import Simulation
from twin.workload.cpu_job import CpuBatch
from twin.workload.inference_job import InferenceState
from twin.workload.job_kinds import DONE, JOB_KINDS, JobKind, register
from twin.workload.jobs import JobState
from twin.workload.training_job import TrainingState

#: What every job shares (identity, gang, state, progress and energy accounting).
SHARED = {"spec", "index", "kind", "kind_state", "candidates", "need", "devices", "network", "hosts",
          "state", "started", "progress", "tokens", "rate", "power", "energy", "unplaceable"}


def _fields(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def test_job_state_holds_only_the_shared_fields():
    """JobState has exactly the shared fields; no kind's field is on it or on another kind."""
    assert _fields(JobState) == SHARED
    training, inference = _fields(TrainingState), _fields(InferenceState)
    assert not training & SHARED and not inference & SHARED and not training & inference
    assert {"checkpointed", "next_failure", "failures", "throttle_loss", "path", "t_collective"} <= training
    assert {"pool", "requests", "replicas", "trace_end"} <= inference
    assert CpuBatch.state_type is None  # CPU batch work keeps nothing beyond the shared state


def test_kinds_are_found_by_the_scenario_kind():
    assert set(JOB_KINDS) >= {"training", "moe_training", "inference", "cpu"}
    assert JOB_KINDS["training"] is JOB_KINDS["moe_training"]
    with pytest.raises(ValueError, match="registered twice"):
        register("cpu")(CpuBatch)


@dataclass(frozen=True)
class FixedSpec:
    """Scenario entry of the test-only kind: a fixed utilisation for ``steps`` steps."""

    name: str
    devices: DeviceRequest
    level: float
    steps: int
    start: float = 0.0
    kind: str = "test-fixed"


@dataclass
class FixedState:
    steps_done: int = 0


class Fixed(JobKind):
    """Holds its devices at ``level`` for ``steps`` thermal steps, one unit of progress per step."""

    state_type = FixedState

    def step(self, jobs, job, t, ts, clock, tripped, u, t_die):
        u[:, job.devices] = job.spec.level
        job.kind_state.steps_done += 1
        job.progress += 1.0
        job.rate = 1.0 / (jobs.h_w * ts.size)
        if job.kind_state.steps_done >= job.spec.steps:
            job.state = DONE
            jobs.release(job)
        return None


@pytest.fixture
def fixed_kind():
    register("test-fixed")(Fixed)
    yield JOB_KINDS["test-fixed"]
    del JOB_KINDS["test-fixed"]


def test_a_new_kind_runs_through_the_whole_twin(fixed_kind):
    """A kind defined here (registered, nothing else changed) runs in a simulation: its devices
    draw the utilisation it sets while it runs and are released when it is done, its state is
    its own, and the dataset and KPIs carry it like any job."""
    loaded = load_scenario(SCENARIOS / "quickstart.yaml",
                           {"time": {"duration": "40 s"}, "workload": [], "record": {"job": "1 s", "device": "1 s"}})
    spec = FixedSpec("fixed", DeviceRequest(kind="trn3", count=16), level=0.8, steps=20)
    loaded.scenario.jobs.append(spec)
    sim = Simulation(loaded)
    sim.run()
    job = sim.jobs.jobs[0]
    assert job.kind is fixed_kind and isinstance(job.kind_state, FixedState)
    assert job.kind_state.steps_done == 20 and job.progress == 20.0 and job.state == DONE
    tree = build_tree(sim)
    u = tree["device"]["u"].isel(device=job.devices).values
    # Held at exactly the level for the first 20 steps, idle (no rules) after release.
    assert np.all(u[:20] == 0.8) and np.all(u[21:] == 0.0)
    assert list(tree["job"]["state"].isel(job=0).values[-5:]) == [DONE] * 5
    kpi = summary(sim)
    assert kpi["job_fixed_failures"] == 0 and kpi["job_fixed_kind"] == "test-fixed"
    assert kpi["job_fixed_energy_J"] > 0
