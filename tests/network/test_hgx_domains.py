"""NVLink domains of HGX boards: each 8-GPU sled is its own scale-up domain, and a gang on two
boards crosses the scale-out fabric between them — collective times against hand calculations."""

from __future__ import annotations

import pytest

from tests.conftest import write_scenario
from twin.catalog import load_catalog
from twin.scenario import load_scenario
from twin.sim.driver import Simulation
from twin.workload.jobs import scale_up_link


def _job(tmp_path, count, name):
    data = {
        "name": "hgx", "time": {"duration": "20 s", "step": "1 s"},
        "halls": [{"name": "h", "rows": [{"name": "r", "racks": [{"name": "k", "template": "h100-rack"}]}]}],
        "jobs": [{"kind": "training", "name": "t", "devices": {"kind": "h100-sxm", "count": count},
                  "iteration_time": "1 s", "compute_share": 0.5, "collective_bytes": "10 GB"}],
        "record": {"job": "1 s", "device": "off"},
    }
    sim = Simulation(load_scenario(write_scenario(tmp_path, data, name)))
    sim.run()
    return sim.jobs.jobs[0], sim


def test_hgx_board_is_one_nvlink_domain_and_two_boards_cross_the_nics(tmp_path):
    """8 H100 on one HGX board: a ring all-reduce on NVLink 4, 2·7·α + 2·(7/8)·n/β. 16 on two
    boards: reduce-scatter and all-gather on each board's NVLink, and an all-reduce of the n/8
    shard between the 2 boards over the scale-out fabric, each GPU on its share of the board's
    ports (8 ConnectX × 2 400G ports / 8 GPUs = 100 GB/s): 2·(7α + (7/8)·n/β) + 2·α_o + (n/8)/β_o.
    Tolerance 1e-9: the model is these formulas; a rack-wide domain (32 GPUs on NVLink) or a
    different port count would miss by far more."""
    cat = load_catalog()
    nv, efa = cat.fabrics["nvlink-4"], cat.fabrics["efa-ultracluster"]
    b, a = nv.bandwidth.si, nv.latency.si
    assert (b, a) == (450e9, 1e-6)  # NVIDIA H100 SXM: 900 GB/s both directions
    n = 10e9
    one = 2 * 7 * a + 2 * 7 / 8 * n / b
    b_out = 8 * 2 * efa.port_speed.si / 8
    two = 2 * (7 * a + 7 / 8 * n / b) + 2 * efa.latency.si + (n / 8) / b_out
    job, sim = _job(tmp_path, 8, "one.yaml")
    assert (job.kind_state.path.domains, job.kind_state.path.per_domain, job.kind_state.path.fabric) == (1, 8, "nvlink-4")
    assert job.kind_state.t_collective == pytest.approx(one, rel=1e-9)
    assert sim.system.device_domain[job.devices[0]] == "k/s00"  # the board, not the rack
    job, _ = _job(tmp_path, 16, "two.yaml")
    assert (job.kind_state.path.domains, job.kind_state.path.per_domain, job.kind_state.path.fabric) == (2, 8, "efa-ultracluster")
    assert job.kind_state.t_collective == pytest.approx(two, rel=1e-9)
    # Hierarchical: only the n/8 shard crosses the NICs (100 GB/s against NVLink's 450), so two
    # boards cost 1.32x one board's time, not the 4.5x of a flat ring over the NICs.
    assert two / one == pytest.approx(1.32, abs=0.01)


def test_serving_tensor_parallel_uses_the_board_nvlink():
    """Inference replicas of HGX GPUs time their all-reduces on the board's NVLink (before the
    sleds named a fabric they were free: infinite bandwidth)."""
    cat = load_catalog()
    assert scale_up_link(cat, "h100-sxm") == (450e9, 1e-6)
    assert scale_up_link(cat, "a100-sxm") == (300e9, 1e-6)


@pytest.mark.parametrize("fabric, match", [
    ("{trn2: nvlink-4}", r"catalog\.sleds\.h100-hgx\.fabric\.trn2: the sled holds no 'trn2' devices"),
    ("{h100-sxm: efa-ultracluster}", r"catalog\.sleds\.h100-hgx\.fabric\.h100-sxm: 'efa-ultracluster' is a "
                                     r"scale-out fabric"),
])
def test_sled_fabric_is_checked_like_a_rack_one(tmp_path, fabric, match):
    from tests.catalog.test_overrides import _load
    from twin.scenario.errors import ScenarioError

    with pytest.raises(ScenarioError, match=match):
        _load(tmp_path, f"  sleds:\n    h100-hgx:\n      fabric: {fabric}\n")


def test_serving_uses_the_fabric_its_racks_declare(tmp_path):
    """An inference pool times its tensor-parallel all-reduces on the fabric its own devices'
    sled declares — here a server of H100s on NVLink 3 (300 GB/s) — not on the first catalogue
    entry that names a fabric for the chip (HGX H100's NVLink 4, 450 GB/s). Two racks on
    different fabrics give the pool the slower one."""
    from twin.workload.jobs import declared_link

    cat = load_catalog()
    sled = {"description": "8 H100 SXM on an NVLink 3 board (test)", "devices": {"h100-sxm": {"value": 8, "source": "test"}},
            "fabric": {"h100-sxm": "nvlink-3"}}
    for k, v in (("overhead", "2000 W"), ("fan_power", "900 W"), ("air_flow", "0.55 m**3/s"),
                 ("coolant_volume", "0.1 L"), ("c_chassis", "20000 J/K")):  # as h100-hgx
        sled[k] = {"value": v, "source": "test"}
    data = {
        "name": "serve", "time": {"duration": "5 s", "step": "1 s"},
        "catalog": {"sleds": {"h100-nvl3": sled},
                    "racks": {"h100-nvl3-rack": {"description": "test", "sleds": {"h100-nvl3": {"value": 1, "source": "test"}},
                                                 "power_shelf": "titanium-shelf-33kw", "shelves": {"value": 1, "source": "test"},
                                                 "coolant_flow": {"value": "0 L/min", "source": "air"}}}},
        "halls": [{"name": "h", "rows": [{"name": "r", "racks": [{"name": "k", "template": "h100-nvl3-rack"}]}]}],
        "jobs": [{"kind": "inference", "name": "chat", "devices": {"kind": "h100-sxm", "count": 8}, "replica_size": 8,
                  "model": {"params": 70e9, "format": "fp8", "kv_bytes_per_token": 163840},
                  "arrivals": {"rate": "1 1/s"}}],
        "record": {"job": "1 s", "device": "off"},
    }
    loaded = load_scenario(write_scenario(tmp_path, data, "serve.yaml"))
    assert scale_up_link(loaded.catalog, "h100-sxm")[0] == 450e9  # the first entry naming one: HGX H100's
    sim = Simulation(loaded)
    args = sim.jobs.jobs[0].kind_state.pool_args
    nv3 = cat.fabrics["nvlink-3"]
    assert args["fabric_bandwidth"] == nv3.bandwidth.si == 300e9
    assert declared_link(cat, ["nvlink-4", "nvlink-3", ""]) == (300e9, max(nv3.latency.si, cat.fabrics["nvlink-4"].latency.si))
    assert declared_link(cat, ["", ""]) == (float("inf"), 0.0)
