"""The MGX and UltraCluster scenarios: they run; busbar, manifold, collectives and network power
against hand calculations from the catalogue's figures."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

import twin
from twin.catalog import load_catalog
from twin.cli import app
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

from tests.conftest import SCENARIOS, write_scenario

MIXED = SCENARIOS / "mgx-trn4-mixed.yaml"
ULTRA = SCENARIOS / "ultracluster-trn3.yaml"


@pytest.fixture(scope="module")
def mixed():
    """The mixed MGX row for 60 s, no sub-steps (so interval means of p_ac and p_dc pair exactly)."""
    sim = Simulation(load_scenario(MIXED, {"time": {"duration": "60 s"}, "workload_step": "1 s",
                                           "record": {"sled": "1 s", "device": "1 s", "rack": "1 s"}}))
    sim.run()
    return sim


@pytest.fixture(scope="module")
def ultra():
    sim = Simulation(load_scenario(ULTRA, {"time": {"duration": "30 s"}}))
    sim.run()
    return sim


def test_scenarios_validate_and_run(tmp_path):
    runner = CliRunner()
    for path in (MIXED, ULTRA):
        result = runner.invoke(app, ["validate", str(path)])
        assert result.exit_code == 0, result.output
        out = tmp_path / f"{path.stem}.nc"
        result = runner.invoke(app, ["run", str(path), "--duration", "20 s", "-o", str(out), "--no-progress"],
                               terminal_width=200)
        assert result.exit_code == 0, result.output
        assert "scale-out network" in result.stdout and "warning" not in result.stdout
        tree = twin.load(out)
        assert tree.attrs["warnings"] == ""
        assert (tree["facility"]["p_network"].values > 0).all()


def test_mixed_rack_busbar_is_the_sum_of_its_sleds_through_the_shelf_curve(mixed):
    sy, rec = mixed.system, mixed.recorder.snapshot()
    cat = load_catalog()
    rack = cat.racks["mgx-mixed"]
    shelf = cat.power_shelves[rack.power_shelf]
    capacity = rack.shelves.value * shelf.psus.value * shelf.psu_rating.si  # all PSUs share the load
    loads, etas = np.array(shelf.efficiency.points).T
    p_sled, p_dev = rec["sled"]["p_dc"], rec["device"]["p"]
    # sled = its devices + catalogue overhead and fans (no fan events in this run)
    per_sled = np.add.reduceat(p_dev, sy.sled_device_start, axis=1)
    fixed = np.array([cat.sleds[t].overhead.si + cat.sleds[t].fan_power.si for t in sy.sled_template])
    np.testing.assert_allclose(p_sled, per_sled + fixed, rtol=1e-12)
    for r in range(sy.n_racks):
        sleds = sy.sled_rack == r
        busbar = p_sled[:, sleds].sum(axis=1)
        np.testing.assert_allclose(rec["rack"]["p_dc"][:, r], busbar, rtol=1e-12)
        x = busbar / capacity
        assert (x > loads[0]).all()  # on the interpolated part of the curve
        np.testing.assert_allclose(rec["rack"]["p_ac"][:, r], busbar / np.interp(x, loads, etas), rtol=1e-12)


def test_mixed_rack_manifold_flow_is_shared_by_design_flow(mixed):
    """Hand count from the catalogue: liquid chips' flow_ref × count per sled, over the rack's sum."""
    sy, cat = mixed.system, load_catalog()
    lpm = 1 / 60000  # m3/s per L/min
    design = {  # L/min of cold-plate design flow per sled
        "trn4-tray": 4 * 2.7,                      # Graviton host and EFA are air-cooled
        "nvlink6-switch-tray": 2 * 0.6,
        "gb300-compute-tray": 4 * 2.1 + 2 * 0.5,   # ConnectX-8 is air-cooled
        "nvlink-switch-tray": 2 * 0.45,
        "graviton-server": 0.0,
    }
    for tpl, flow in design.items():
        got = sum(c.flow_ref.si * n.value for ch, n in cat.sleds[tpl].devices.items()
                  if (c := cat.chips[ch]).cooling == "liquid")
        assert got == pytest.approx(flow * lpm, rel=1e-12), tpl
    total = sum(design[s] * n.value for s, n in cat.racks["mgx-mixed"].sleds.items())  # 170 L/min
    assert total == pytest.approx(170.0)
    for r in range(sy.n_racks):
        sleds = np.flatnonzero(sy.sled_rack == r)
        share = sy.sled_m_coolant[sleds] / sy.rack_m_coolant[r]
        hand = np.array([design[t] / total for t in sy.sled_template[sleds]])
        np.testing.assert_allclose(share, hand, rtol=1e-12)
        assert sy.sled_m_coolant[sleds].sum() == pytest.approx(sy.rack_m_coolant[r], rel=1e-12)


def _two_rack_job(tmp_path, blockers_in_one_rack: bool):
    """Job x (32 Trn4, 100 GB all-reduced per iteration) after two 16-chip blockers: both in
    rack mgx-01 (x gets all of mgx-02's NVLink Fusion domain) or one per rack (x spans both
    domains and crosses EFA)."""
    second = "mgx-01" if blockers_in_one_rack else "mgx-02"
    job = {"kind": "training", "iteration_time": "0.4 s", "compute_share": 0.5, "u_compute": 0.5}
    data = {
        "name": "fabric", "time": {"duration": "120 s", "step": "1 s"},
        "halls": [{"name": "h", "rows": [{"name": "r", "racks": [
            {"name": "mgx", "template": "mgx-mixed", "count": 2}]}]}],
        "jobs": [
            {**job, "name": "b1", "devices": {"kind": "trn4", "count": 16, "select": {"rack": ["mgx-01"]}}},
            {**job, "name": "b2", "devices": {"kind": "trn4", "count": 16, "select": {"rack": [second]}}},
            {**job, "name": "x", "devices": {"kind": "trn4", "count": 32}, "collective_bytes": "100 GB"},
        ],
        "record": {"job": "1 s", "device": "off"},
    }
    sim = Simulation(load_scenario(write_scenario(tmp_path, data, f"f{int(blockers_in_one_rack)}.yaml")))
    sim.run()
    return sim.jobs.jobs[2], sim


def test_collective_time_nvlink_fusion_vs_efa_by_hand(tmp_path):
    cat = load_catalog()
    nvl, efa = cat.fabrics["nvlink-fusion-6"], cat.fabrics["efa-ultracluster"]
    b_up, a_up = nvl.bandwidth.si, nvl.latency.si            # 1.8 TB/s, 1 µs
    b_port, a_out = efa.port_speed.si, efa.latency.si        # 400 Gb/s = 50 GB/s, 15 µs
    n = 100e9
    # In one domain of 32: ring all-reduce, 2(p-1)α + 2(p-1)/p · n/β
    t_domain = 2 * 31 * a_up + 2 * 31 / 32 * n / b_up
    # 16 + 16 over EFA: reduce-scatter and all-gather inside each domain (p = 16), then a ring
    # all-reduce of n/16 between the 2 domains at 4 EFA ports per 4-chip tray = 1 port per chip.
    b_out = 4 * b_port / 4
    t_efa = 2 * (15 * a_up + 15 / 16 * n / b_up) + (2 * 1 * a_out + 2 * 1 / 2 * (n / 16) / b_out)
    assert t_efa / t_domain > 1.8  # the two placements differ by far more than the tolerance
    for one_rack, hand, fabric, domains in ((True, t_domain, "nvlink-fusion-6", 1), (False, t_efa, "efa-ultracluster", 2)):
        job, sim = _two_rack_job(tmp_path, one_rack)
        assert job.kind_state.path.fabric == fabric and job.kind_state.path.domains == domains
        assert job.kind_state.t_collective == pytest.approx(hand, rel=0.05)  # the 5 % (agrees to round-off)
        # Measured: iterations over the run at full clock = run time / (compute + collective).
        t_iter = 0.4 * 0.5 + hand
        assert job.progress == pytest.approx(120.0 / t_iter, rel=0.01)  # 1 %: the last partial step
        # EFA NICs of the gang's trays carry its collectives only when it crosses domains
        nics = job.network[sim.system.device_kind[job.network] == "efa"]
        u_nic = sim.state["device.u"][:, nics]
        assert nics.size == 8 * 4  # 8 trays × 4 EFA
        if one_rack:
            assert np.all(u_nic == 0.1) and job.kind_state.quiet_nics.size == nics.size
        else:
            assert u_nic.mean() > 0.2 and job.kind_state.quiet_nics.size == 0


def test_ultracluster_network_power_by_hand_count(ultra):
    cat = load_catalog()
    efa = cat.fabrics["efa-ultracluster"]
    # NIC ports: 16 UltraServers × 36 Trn3 servers × 2 EFA (one 400G port each) = 1,152
    nics = 16 * 36 * 2
    # Non-blocking fat tree of 128-port switches: 1,152 > 128, ≤ 128²/2 → leaf and spine;
    # 1,152 / 64 = 18 leaves, 1,152 / 128 = 9 spines.
    switches = 18 + 9
    # optics: switch end of each NIC link + both ends of each leaf–spine link
    optics = nics + 2 * nics
    hand = switches * efa.switch_power.si + optics * efa.optics_power.si      # 66.96 kW
    hand_nics = nics * cat.chips["efa"].tdp.si                                 # 28.8 kW, in the racks
    net = ultra.network
    assert (net.size.ports, net.size.n_switches, net.size.optics, net.nics) == (nics, switches, optics, nics)
    assert net.power == pytest.approx(hand, rel=0.01)
    assert net.power + net.p_nics == pytest.approx(hand + hand_nics, rel=0.01)
    rec = ultra.recorder.snapshot()
    p_it, p_racks = rec["facility"]["p_it"][:, 0], rec["rack"]["p_ac"].sum(axis=1)
    # IT power = racks + switches and optics (rack recorded every 10 s: compare the means)
    assert p_it.mean() - p_racks.mean() == pytest.approx(hand, rel=0.01)
    assert abs(ultra.totals.energy_residual) < 1e-9  # the network's heat is accounted (to room air)


def test_unplaceable_and_idle_inference_jobs_warn(tmp_path):
    data = {
        "name": "warn", "time": {"duration": "30 s", "step": "1 s"},
        "halls": [{"name": "h", "rows": [{"name": "r", "racks": [{"name": "k", "template": "gb300-nvl72"}]}]}],
        "jobs": [
            {"kind": "inference", "name": "big", "devices": {"kind": "gb300", "count": 100}, "replica_size": 4,
             "model": {"params": 70e9}, "arrivals": {"rate": "1 1/s"}},
            {"kind": "inference", "name": "quiet", "devices": {"kind": "gb300", "count": 8}, "replica_size": 8,
             "model": {"params": 70e9}, "arrivals": {"rate": "1e-6 1/s"}},
            {"kind": "training", "name": "wide", "devices": {"kind": "gb300", "count": 48, "within": "domain"},
             "iteration_time": "2 s"},
        ],
    }
    path = write_scenario(tmp_path, data)
    out = tmp_path / "w.nc"
    result = CliRunner().invoke(app, ["run", str(path), "-o", str(out), "--no-progress"], terminal_width=250)
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("warning: ")]
    # one line each, naming the job and why
    assert sum("job big" in ln for ln in lines) == 1
    assert any("job big can never be placed" in ln and "the selection has 72" in ln for ln in lines)
    assert sum("job quiet" in ln for ln in lines) == 1
    assert any("job quiet served" in ln and ("0 requests" in ln or "no request" in ln) for ln in lines)
    assert not any("job wide" in ln for ln in lines)  # 48 GB300 fit in the NVL72 domain
    tree = twin.load(out)
    state = tree["job"]["state"].sel(job="big").values
    assert (state == 5).all()  # unplaceable, in the dataset
    assert "job big can never be placed" in tree.attrs["warnings"]


def test_collectives_need_a_scale_up_fabric(tmp_path):
    from twin.scenario import ScenarioError

    data = {"name": "nofab", "time": {"duration": "30 s"},
            "halls": [{"name": "h", "rows": [{"name": "r", "racks": [{"name": "k", "template": "trn2-rack"}]}]}],
            "jobs": [{"kind": "training", "name": "t", "devices": {"kind": "trn2", "count": 16},
                      "iteration_time": "2 s", "collective_bytes": "1 GB"}]}
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.collective_bytes: 'trn2' in rack 'k' has no scale-up fabric"):
        Simulation(load_scenario(write_scenario(tmp_path, data)))
