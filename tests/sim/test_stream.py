"""Streaming to Zarr: the same numbers as the in-memory path, with bounded buffers."""

from __future__ import annotations

import xarray as xr

import twin
from tests.conftest import SCENARIOS
from twin.export.dataset import build_tree
from twin.export.writers import ZarrStream
from twin.scenario import load_scenario
from twin.sim.driver import Simulation


def test_streamed_zarr_equals_in_memory(tmp_path):
    # 3 minutes are enough: the buffers below hold 16–23 samples, so every group still appends
    # several whole blocks and a partial last one (device at 10 s: 18 samples, one block of 16 + 2).
    over = {"time": {"duration": "3 min"}, "record": {"device": "10 s", "sled": "1 s"}}
    mem = Simulation(load_scenario(SCENARIOS / "quickstart.yaml", over))
    mem.run()
    expected = build_tree(mem)

    # Buffers of a few kB: many appends, and a partial last one.
    over["record"]["buffer"] = f"{23 * 8 * 2 * 11} B"
    stream = ZarrStream(tmp_path / "q.zarr")
    sim = Simulation(load_scenario(SCENARIOS / "quickstart.yaml", over), sink=stream)
    assert sim.recorder.groups["rack"].capacity == 23  # 2 racks × 11 variables × 8 bytes × 23
    assert sim.recorder.groups["facility"].capacity < 180  # facility is streamed too (not all 180 samples held)
    sim.run()
    stream.finish()
    got = twin.load(tmp_path / "q.zarr")
    for group in ("facility", "cdu", "rack", "sled", "device"):
        xr.testing.assert_allclose(got[group].to_dataset(), expected[group].to_dataset(), rtol=0, atol=0)
    assert got.attrs["kpi_energy_it_J"] == expected.attrs["kpi_energy_it_J"]
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())
