"""Training jobs: swings at the facility meter, checkpoints, power floors, throttle feedback."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from twin.catalog import load_catalog
from twin.export.dataset import build_tree
from twin.scenario import load_scenario
from twin.sim.driver import Simulation

SWINGS = SCENARIOS / "training-swings.yaml"


def _run(path, over):
    sim = Simulation(load_scenario(path, over))
    sim.run()
    return sim, build_tree(sim)


def _dyn(chip):
    from twin.power.device import dynamic_power_full

    c = load_catalog().chips[chip]
    return dynamic_power_full(c.tdp.si, c.p_active_idle.si, c.p_leak_ref.si, c.t_ref.si, c.t_idle.si,
                              c.leak_beta.si)


@pytest.fixture(scope="module")
def swings():
    """training-swings shortened to 20 minutes with checkpoints every 5 minutes."""
    over = {
        "time": {"duration": "20 min"},
        "record": {"facility": "100 ms", "job": "1 s", "device": "off", "rack": "1 s", "cdu": "off"},
        "jobs": [{"kind": "training", "name": "pretrain", "devices": {"kind": "trn3", "count": 1152},
                  "iteration_time": "2 s", "compute_share": 0.7, "u_compute": 0.95, "u_collective": 0.2,
                  "network_load": 0.8, "checkpoint": {"interval": "5 min", "duration": "30 s"}}],
    }
    return _run(SWINGS, over)


def test_dominant_frequency_is_one_over_iteration_time(swings):
    """The facility power spectrum (100 ms samples) peaks at 1/T_iter = 0.5 Hz (±5 %)."""
    sim, tree = swings
    p = tree["facility"]["p_it"].values
    seg = p[600:2400]  # 3 minutes between checkpoints
    spec = np.abs(np.fft.rfft(seg - seg.mean()))
    freqs = np.fft.rfftfreq(seg.size, d=0.1)
    f_peak = freqs[np.argmax(spec)]
    assert f_peak == pytest.approx(0.5, rel=0.05)


def test_swing_amplitude_is_compute_minus_collective_times_chips(swings):
    """Facility swing = Σ (P_compute − P_collective) over the job's devices / η_shelf (within 5 %).

    By hand: in the device model the leakage term is the same in both phases, so per device
    ΔP = P_dyn·Δu (f = 1). Accelerators go 0.95 → 0.2 (1,152 Trn3); the job's network devices
    (2 EFA + 1 NeuronSwitch per sled) go the other way, 0.1 → 0.8. The shelves lose ~2.5 %.
    """
    sim, tree = swings
    p = tree["facility"]["p_it"].values[600:2400]
    high, low = np.percentile(p, 90), np.percentile(p, 10)
    job = sim.scenario.jobs[0]
    n_sleds = 1152 // 4
    d_acc = 1152 * _dyn("trn3") * (job.u_compute - job.u_collective)
    d_net = n_sleds * (2 * _dyn("efa") + _dyn("neuronswitch")) * (job.network_load - 0.1)
    eta = 0.975  # ORv3 shelf near 50-75 % load (catalogue curve: 97.5 % / 97.3 %)
    expected = (d_acc - d_net) / eta
    assert (high - low) == pytest.approx(expected, rel=0.05)


def test_checkpoint_dips_at_the_configured_interval(swings):
    """Power dips to near idle for 30 s at the end of every 5-minute interval of job time."""
    sim, tree = swings
    state = tree["job"]["state"].values[:, 0]
    starts = np.flatnonzero(np.diff((state == 2).astype(int)) == 1) + 1  # seconds
    assert list(starts) == [270, 570, 870, 1170]
    p = tree["facility"]["p_it"].values
    dip = p[2800:2900].mean()  # 280-290 s: inside the first checkpoint
    busy = p[600:2400].mean()
    assert dip < 0.6 * busy


def test_power_floor_shrinks_swing_and_costs_energy_as_by_hand():
    """A floor at 80 % of TDP: collective-phase power rises to 800 W per chip; the swing and the
    extra energy follow by hand from the unsmoothed device powers."""
    over = {"time": {"duration": "4 min"}, "workload_step": "100 ms",
            "record": {"facility": "100 ms", "device": "100 ms", "rack": "off", "cdu": "off", "job": "1 s"},
            "jobs": [{"kind": "training", "name": "t", "devices": {"kind": "trn3"},
                      "iteration_time": "2 s", "compute_share": 0.7, "u_compute": 0.95, "u_collective": 0.2}]}
    quick = SCENARIOS / "quickstart.yaml"
    sim0, tree0 = _run(quick, over)
    over["jobs"][0]["smoothing"] = {"floor": 0.8}
    sim1, tree1 = _run(quick, over)
    d0 = tree0["device"].to_dataset()
    d1 = tree1["device"].to_dataset()
    trn0 = d0["p"].where(d0.kind == "trn3", drop=True)
    trn1 = d1.where(d1.kind == "trn3", drop=True)
    assert float(trn1["p"].min()) >= 800.0 - 1e-9
    # By hand from the device equation: in each collective sub-step (u = 0.2) the unsmoothed
    # power would be P_active_idle − L(T_idle) + P_dyn·0.2 + L(T) with L(T) =
    # P_leak,ref·exp(β(T − T_ref)) at the die temperature of the step start (recorded 10 samples
    # earlier); the floor adds max(0, 800 W − that).
    c = load_catalog().chips["trn3"]
    t_start = np.roll(trn1["t_die"].values, 10, axis=0)[10:]
    u = trn1["u"].values[10:]
    raw = (c.p_active_idle.si - c.p_leak_ref.si * np.exp(c.leak_beta.si * (c.t_idle.si - c.t_ref.si))
           + _dyn("trn3") * u + c.p_leak_ref.si * np.exp(c.leak_beta.si * (t_start - c.t_ref.si)))
    extra_by_hand = float(np.maximum(0.0, 800.0 - raw).sum()) * 0.1
    extra_first_second = float(np.maximum(0.0, 800.0 - trn0.values[:10]).sum()) * 0.1
    # The first second has no recorded start temperature; it is taken from the unsmoothed run.
    assert sim1.totals.e_smoothing == pytest.approx(extra_by_hand + extra_first_second, rel=0.005)
    # The swing shrinks to P_compute − 800 W.
    swing0 = np.percentile(trn0.values, 95) - np.percentile(trn0.values, 5)
    swing1 = np.percentile(trn1["p"].values, 95) - np.percentile(trn1["p"].values, 5)
    assert swing1 == pytest.approx(np.percentile(trn1["p"].values, 95) - 800.0, rel=0.01)
    assert swing1 < swing0 - 300.0  # collective power rose from ~400 W to 800 W
    # The run draws at least that much more energy: the floor's energy, plus the leakage of dies
    # that now run warmer in every phase (here ~10 % on top: a few K at β = 1.5 %/K).
    more = sim1.totals.e_device - sim0.totals.e_device
    assert sim1.totals.e_smoothing < more < 1.15 * sim1.totals.e_smoothing


def test_throttled_rack_slows_the_whole_job():
    """One rack on a starved coolant flow throttles; the synchronous job runs at its clock."""
    over = {
        "time": {"duration": "10 min"},
        "halls": [{"name": "h", "rows": [{"name": "r", "racks": [
            {"name": "cool", "template": "trn3-gen2-rack", "cdu": "cdu-1"},
            {"name": "hot", "template": "trn3-gen2-rack", "cdu": "cdu-1", "coolant_flow": "30 L/min"}]}]}],
        "workload": [],
        "jobs": [{"kind": "training", "name": "t", "devices": {"kind": "trn3"}, "iteration_time": "2 s",
                  "compute_share": 0.9, "u_compute": 1.0, "u_collective": 0.9}],
        "record": {"device": "1 s", "job": "1 s"},
    }
    sim, tree = _run(SCENARIOS / "quickstart.yaml", over)
    dev = tree["device"].to_dataset()
    trn = dev.where(dev.kind == "trn3", drop=True)
    clock_hot = trn["clock"].where(trn.rack == "hot", drop=True).min("device")
    clock_cool = trn["clock"].where(trn.rack == "cool", drop=True).min("device")
    assert float(clock_cool.min()) == 1.0           # the cool rack never throttles
    assert float(clock_hot[-60:].mean()) < 0.95      # the hot one does
    rate = tree["job"]["throughput"].values[:, 0]
    # By hand: at clock f an iteration takes T (c/f + 1 − c) — compute stretches by 1/f, the
    # collectives (1 − c of it) do not — so over the last 300 s (~150 iterations) the job does
    # Σ h / (T (c/f + 1 − c)) iterations with the recorded clocks (those the steps used). The
    # phase within an iteration at the window's ends moves the sum by less than one iteration's
    # difference between the two timings, c (1/f − 1) ≤ 0.1 of an iteration here: rtol 1e-3.
    f = clock_hot.values[-300:]
    expected = 1.0 / (2.0 * (0.9 / f + 0.1))
    np.testing.assert_allclose(rate[-300:].sum(), expected.sum(), rtol=1e-3)
    assert rate[-300:].sum() > (f / 2.0).sum()  # faster than if the collectives slowed too
    # Lost time: the compute share of the running time times (1 − f).
    assert sim.jobs.jobs[0].kind_state.throttle_loss > 0


def test_clocked_phase_by_hand():
    """c = 0.6 at f = 0.5: an iteration lasts 0.6/0.5 + 0.4 = 1.6 full-clock iterations, compute
    1.2 of them (0.75 of the time); half the compute work (w = 0.3) is at 0.6/1.6 = 0.375 of the
    time, the middle of the collectives (w = 0.8) at (1.2 + 0.2)/1.6 = 0.875; the map inverts."""
    from twin.workload.jobs import clocked_phase

    w = np.array([0.0, 0.3, 0.6, 0.8, 1.0, 2.3])
    theta = clocked_phase(w, 0.6, 0.5)
    np.testing.assert_allclose(theta, [0.0, 0.375, 0.75, 0.875, 1.0, 2.375], rtol=1e-12)
    np.testing.assert_allclose(clocked_phase(theta, 0.6, 0.5, inverse=True), w, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(clocked_phase(w, 0.6, 1.0), w, rtol=1e-15, atol=1e-15)  # identity at full clock


def test_failure_rolls_back_to_checkpoint_and_restarts():
    """With a short MTBF the job fails, loses the work since its checkpoint and restarts."""
    over = {"time": {"duration": "30 min"}, "workload": [],
            "jobs": [{"kind": "training", "name": "t", "devices": {"kind": "trn3"}, "iteration_time": "2 s",
                      "checkpoint": {"interval": "2 min", "duration": "10 s"}, "mtbf": "8 min",
                      "restart_time": "1 min"}],
            "record": {"job": "1 s", "device": "off"}, "seed": 3}
    sim, tree = _run(SCENARIOS / "quickstart.yaml", over)
    job = sim.jobs.jobs[0]
    progress = tree["job"]["progress"].values[:, 0]
    state = tree["job"]["state"].values[:, 0]
    assert job.kind_state.failures >= 1
    drops = np.flatnonzero(np.diff(progress) < 0)
    assert drops.size == job.kind_state.failures
    assert (state == 3).sum() >= 60 * job.kind_state.failures - 1  # restarting for 1 min each
    # Without failures the job would have done more work.
    assert progress[-1] < 30 * 60 / 2.0


def test_same_seed_same_failures_other_seed_differs():
    def failures(seed):
        over = {"time": {"duration": "40 min"}, "workload": [], "seed": seed,
                "jobs": [{"kind": "training", "name": "t", "devices": {"kind": "trn3"}, "iteration_time": "2 s",
                          "mtbf": "5 min", "restart_time": "30 s"}],
                "record": {"job": "1 s", "device": "off", "rack": "off"}}
        sim, tree = _run(SCENARIOS / "quickstart.yaml", over)
        return tree["job"]["progress"].values[:, 0]
    a, b, c = failures(1), failures(1), failures(2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def _bench():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench", SCENARIOS.parent / "benchmarks" / "trn2_vs_trn3.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_trn3_vs_trn2_table_in_readme():
    """The README's Trn3/Trn2 table: compute and HBM bandwidth per UltraServer and chip FLOP/W
    follow from the catalogue's published figures (exact), the inference rows from the serving
    model (analytic, exact to the printed digits; GPT-OSS's weights read per step by hand), and
    the training row at the default TDP from a
    10-minute run instead of the README's 30 (within 3 %: whole-step iteration counts and warm-up),
    with iteration times from the compute and the ZeRO-3 all-reduce on each fabric by hand."""
    bench = _bench()
    cat = load_catalog()
    chip = bench.chip_figures(cat)
    assert chip["compute_us"] == pytest.approx(144 * 2.517 / (64 * 1.299), rel=1e-12)
    assert chip["hbm_us"] == pytest.approx(144 * 4.9 / (64 * 2.9), rel=1e-12)
    assert chip["flops_per_watt"](690.0) == pytest.approx(2.517 / 1.299 * 500 / 690, rel=1e-12)
    readme = (SCENARIOS.parent / "README.md").read_text(encoding="utf-8")
    assert f"| peak dense FP8-class compute per UltraServer | {chip['compute_us']:.2f}x |" in readme
    assert f"| chip: dense FP8-class FLOP/s per watt of TDP | {chip['flops_per_watt'](690.0):.2f}x | " in readme
    from twin.workload.jobs import scale_up_link

    s2 = bench.serving(cat, "trn2", scale_up_link(cat, "trn2"))
    s3 = bench.serving(cat, "trn3", scale_up_link(cat, "trn3"))
    assert s2["step_ms"] <= 50 and s3["step_ms"] <= 50
    ratio = s3["tokens_per_s"] / s2["tokens_per_s"]
    assert f"| inference, 70B FP8 at <= 50 ms per token: tokens per second per chip | {ratio:.2f}x |" in readme
    # GPT-OSS-120B: the weights a decode step reads, by hand (MXFP4 = 4.25 bits per value, BF16 2 B):
    # one token reads 4 of 128 experts of 114.71e9 parameters plus 1.54e9 non-expert ones.
    held, read = bench.moe_weights(bench.SERVE_MOE, 1)
    assert held == pytest.approx(114.71e9 * 4.25 / 8 + 2.12e9 * 2, rel=1e-12)
    assert read == pytest.approx(114.71e9 * 4.25 / 8 * 4 / 128 + 1.54e9 * 2, rel=1e-12)
    assert bench.moe_weights(bench.SERVE_MOE, 4096)[1] == pytest.approx(114.71e9 * 4.25 / 8 + 1.54e9 * 2, rel=1e-12)
    g2 = bench.serving(cat, "trn2", scale_up_link(cat, "trn2"), bench.SERVE_MOE)
    g3 = bench.serving(cat, "trn3", scale_up_link(cat, "trn3"), bench.SERVE_MOE)
    assert g2["step_ms"] <= 50 and g3["step_ms"] <= 50
    ratio = g3["tokens_per_s"] / g2["tokens_per_s"]
    assert f"at <= 50 ms per token: tokens per second per chip | {ratio:.2f}x |" in readme
    trn2 = bench.training("trn2-training", duration="10 min")
    trn3 = bench.training("trn3-training", duration="10 min")
    # By hand: an iteration is its compute (iteration_time × compute_share of the scenario) plus
    # a ring all-reduce of collective_bytes (477 GB) on the UltraServer's scale-up fabric,
    # 2(p − 1)α + 2(p − 1)/p · n/β (1e-9: the model is this formula).
    def by_hand(iteration_time, p, fabric):
        f = cat.fabrics[fabric]
        return iteration_time * 0.75 + 2 * (p - 1) * f.latency.si + 2 * (p - 1) / p * 477e9 / f.bandwidth.si

    t2, t3 = by_hand(40.093, 64, "neuronlink-v3"), by_hand(9.2, 144, "neuronswitch-v1")
    assert trn2["iteration_time"] == pytest.approx(t2, rel=1e-9)
    assert trn3["iteration_time"] == pytest.approx(t3, rel=1e-9)
    # Equal MFU: the iterations run in the ratio of those times (1 %: neither throttles; the
    # count is fractional progress).
    assert trn3["iterations"] / trn2["iterations"] == pytest.approx(t2 / t3, rel=0.01)
    assert t2 / t3 < chip["compute_us"]  # the collectives weigh more on the faster chips
    row = next(line for line in readme.splitlines() if line.startswith("| training at equal MFU"))
    stated = float(row.split("|")[4].strip().rstrip("x"))  # the 1,000 W column
    assert trn3["it_per_kWh"] / trn2["it_per_kWh"] == pytest.approx(stated, rel=0.03)


def test_moe_all_to_all_loads_the_fabric():
    """MoE training spends part of each iteration in all-to-all: the NeuronSwitches and EFA NICs
    run at full load then, so their energy rises against dense training of the same timing, by
    the hand-computed share: Δu = (1.0 − 0.8) over the all-to-all fraction of each iteration."""
    def network_energy(kind, share):
        job = {"kind": kind, "name": "t", "devices": {"kind": "trn3"}, "iteration_time": "2 s",
               "compute_share": 0.6}
        if share:
            job["all_to_all_share"] = share
        over = {"time": {"duration": "4 min"}, "workload": [], "workload_step": "100 ms",
                "jobs": [job], "record": {"device": "1 s"}}
        sim, tree = _run(SCENARIOS / "quickstart.yaml", over)
        dev = tree["device"].to_dataset()
        net = dev["p"].where(dev.kind.isin(["efa", "neuronswitch"]), drop=True)
        return float(net.sum()), sim
    dense, sim = network_energy("training", 0.0)
    moe, _ = network_energy("moe_training", 0.25)
    # By hand: in the all-to-all quarter of each iteration the fabric goes from 0.8 to 1.0.
    n_sleds = 36
    p_dyn = 2 * _dyn("efa") + _dyn("neuronswitch")
    expected = n_sleds * p_dyn * (1.0 - 0.8) * 0.25 * 240  # W·s over 4 minutes
    assert moe - dense == pytest.approx(expected, rel=0.05)


def test_moe_on_trn2_torus_vs_trn3_switch_by_hand():
    """The same MoE step on a Trn2 UltraServer (64 chips, NeuronLink 3D torus) and a Trn3 one
    (144 chips, switched NeuronSwitch): the all-to-all and all-reduce times, and so the iteration
    time, follow from topology and message size. By hand from the catalogue's fabrics:
    a 4×4×4 torus has mean hop distance 3 · ⌊4²/4⌋/4 · 64/63 = 64/21 (each byte loads that many
    links), a switch 1; pairwise all-to-all (p−1)α + h (p−1)/p · n/β; ring all-reduce
    2(p−1)α + 2 (p−1)/p · n/β. Tolerance 1e-9: the model's times are these formulas, so
    anything beyond round-off is a different topology or message."""
    cat = load_catalog()
    nl, ns = cat.fabrics["neuronlink-v3"], cat.fabrics["neuronswitch-v1"]
    a2a, grad, t_compute = 64e9, 6.4e9, 4.0
    hand = {}
    for kind, p, fab, hops in (("trn2", 64, nl, 64 / 21), ("trn3", 144, ns, 1.0)):
        b, a = fab.bandwidth.si, fab.latency.si
        t_a2a = (p - 1) * a + hops * (p - 1) / p * a2a / b
        t_ar = 2 * (p - 1) * a + 2 * (p - 1) / p * grad / b
        hand[kind] = (t_a2a, t_ar)
    # Trn2: 63 · 2 µs + 3 · 64e9 / 640 GB/s = 0.300126 s of all-to-all (a switch would take 0.098 s)
    assert hand["trn2"][0] == pytest.approx(0.3 + 126e-6, rel=1e-12)
    for kind in ("trn2", "trn3"):
        job = {"kind": "moe_training", "name": "moe", "devices": {"kind": kind},
               "iteration_time": f"{t_compute / 0.5} s", "compute_share": 0.5,
               "all_to_all_bytes": f"{a2a} B", "collective_bytes": f"{grad} B"}
        sim = Simulation(load_scenario(SCENARIOS / f"{kind}-training.yaml",
                                       {"time": {"duration": "30 s"}, "jobs": [job]}))
        sim.run()
        js = sim.jobs.jobs[0]
        t_a2a, t_ar = hand[kind]
        ks = js.kind_state
        assert ks.path.domains == 1 and ks.path.up.name == {"trn2": "neuronlink-v3", "trn3": "neuronswitch-v1"}[kind]
        assert js.kind_state.t_collective == pytest.approx(t_a2a + t_ar, rel=1e-9)
        assert js.kind_state.iteration_time == pytest.approx(t_compute + t_a2a + t_ar, rel=1e-9)
        assert js.kind_state.all_to_all_share == pytest.approx(t_a2a / (t_compute + t_a2a + t_ar), rel=1e-9)
