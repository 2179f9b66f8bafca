"""The compiled chip kernel against the numpy reference (twin.power.kernels).

Both evaluate the same equations in the same order; only ``exp`` and ``pow`` may round
differently (numba calls the C library, numpy its own vectorised routines), by a few ulp. So
per step they agree to 1e-12 relative (a few ulp, with margin), and a whole run's KPIs to 1e-6
relative — rounding differences can move a governor's clock by an ulp, which the thermal
network then carries along — with die temperatures within 0.05 K (the tolerance of the
fast-vs-reference integrator check).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from twin.power.kernels import (BLOCK_MIN_STEPS, COMPILED_MIN_DEVICES, COMPILED_MIN_STEPS, NumpyKernel, choose,
                                 choose_block)
from twin.scenario import load_scenario
from twin.scenario.errors import ScenarioError

numba = pytest.importorskip("numba")

from twin.power.kernels import NumbaKernel  # noqa: E402

#: Per-step agreement: a few ulp of exp/pow, with margin.
STEP_RTOL = 1e-12
#: Whole-run agreement of KPIs (relative) and die temperatures (absolute) [1], [K].
RUN_RTOL = 1e-6
RUN_T_ATOL = 0.05


@pytest.fixture(scope="module")
def chip():
    """Per-device chip figures of a real mixed system (Trn3, GB300, Graviton, switches)."""
    from twin.sim.driver import Simulation

    sim = Simulation(load_scenario(SCENARIOS / "mixed-hall.yaml", {"time": {"duration": "1 s"}}), kernel="numpy")
    return sim.system.chip


def _inputs(chip, n_sub, seed):
    rng = np.random.default_rng(seed)
    n = chip["tdp"].size
    u = rng.uniform(0.0, 1.3, (n_sub, n)) * (rng.random(n) < 0.8)  # some idle, some beyond rated
    clock = np.where(rng.random(n) < 0.5, 1.0, rng.uniform(0.3, 1.0, n))  # full clock and DVFS states
    on = rng.random(n) < 0.95
    held = rng.random(n) < 0.5
    t_die = rng.uniform(30.0, 110.0, n)  # through the throttle and shutdown points
    return u, clock, on, t_die, held


@pytest.mark.parametrize("n_sub", [1, 10])
def test_power_matches_reference(chip, n_sub):
    u, clock, on, t_die, held = _inputs(chip, n_sub, n_sub)
    ref = NumpyKernel(chip).power(u, clock, on, t_die, held)
    got = NumbaKernel(chip).power(u, clock, on, t_die, held)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=STEP_RTOL, atol=0.0)
    assert np.all(got[:, ~on] == 0.0)  # tripped devices draw nothing
    # A power limit set while running (a cap at 70 % of the scenario's) clamps both alike.
    cap = 0.7 * chip["p_limit"]
    np.testing.assert_allclose(NumbaKernel(chip).power(u, clock, on, t_die, held, cap),
                               NumpyKernel(chip).power(u, clock, on, t_die, held, cap), rtol=STEP_RTOL)
    # One row (the initial steady state passes a single demand).
    np.testing.assert_allclose(NumbaKernel(chip).power(u[0], clock, on, t_die, held),
                               NumpyKernel(chip).power(u[0], clock, on, t_die, held), rtol=STEP_RTOL)


def test_governors_match_reference(chip):
    u, clock, on, t_die, held = _inputs(chip, 10, 7)
    tripped = ~on
    ref = NumpyKernel(chip).govern(u, t_die, clock, tripped, 1.0)
    got = NumbaKernel(chip).govern(u, t_die, clock, tripped, 1.0)
    for r, g in zip(ref, got):
        np.testing.assert_allclose(g, r, rtol=STEP_RTOL, atol=0.0)
    thermal, power, both, trip = got
    assert (power < 1.0).any() and (thermal < clock).any() and (trip & ~tripped).any()  # every branch taken
    np.testing.assert_allclose(NumbaKernel(chip).clock_limit(u, t_die), ref[1], rtol=STEP_RTOL)
    cap = 0.7 * chip["p_limit"]  # a limit in force other than the scenario's
    capped = NumbaKernel(chip).govern(u, t_die, clock, tripped, 1.0, cap)
    for r, g in zip(NumpyKernel(chip).govern(u, t_die, clock, tripped, 1.0, cap), capped):
        np.testing.assert_allclose(g, r, rtol=STEP_RTOL, atol=0.0)
    assert (capped[1] <= power).all() and (capped[1] < power).any()  # a lower limit, a lower clock


def test_govern_writes_new_arrays_and_leaves_its_inputs_alone(chip):
    """The governors keep the previous step's trips to tell a first trip: a kernel that wrote
    its trips into (or returned) the array it was given would hide it."""
    u, clock, on, t_die, _ = _inputs(chip, 10, 7)
    tripped = ~on
    for kernel in (NumpyKernel(chip), NumbaKernel(chip)):
        before = (tripped.copy(), clock.copy(), t_die.copy())
        out = kernel.govern(u, t_die, clock, tripped, 1.0)
        for given, kept in zip((tripped, clock, t_die), before):
            np.testing.assert_array_equal(given, kept)
        for a in out:
            assert not any(np.shares_memory(a, x) for x in (tripped, clock, t_die, u)), type(kernel).__name__
        assert (out[3] & ~tripped).any()  # new trips this step, only in the output


def test_power_reuses_the_governors_leakage_only_where_the_die_temperature_is_theirs(chip):
    """The governors leave each device's leakage factor for the next step's power, which starts
    from the same die temperatures: power computed after govern equals a fresh kernel's to the
    bit (the factor is the same number), where the temperatures are the governors' and where
    they moved (half the devices 1 K warmer: computed anew), and the reference to a few ulp."""
    u, clock, on, t_die, held = _inputs(chip, 4, 11)
    k = NumbaKernel(chip)
    k.govern(u, t_die, clock, ~on, 1.0)
    moved = t_die.copy()
    moved[::2] += 1.0
    for t in (t_die, moved):
        got = k.power(u, clock, on, t, held)
        np.testing.assert_array_equal(got, NumbaKernel(chip).power(u, clock, on, t, held))
        np.testing.assert_allclose(got, NumpyKernel(chip).power(u, clock, on, t, held), rtol=STEP_RTOL, atol=0.0)


def test_sled_product_sums_each_column_in_row_order():
    """The compiled loop's sled product (sleds innermost, several at once) is a row-order
    matrix product to the bit: each column summed from 0 over the rows in order, as the
    per-sled loop it replaced did; here against that loop in Python on random figures, for a
    chunk fuller and emptier than its stride."""
    from twin.power.compiled import chunk_product

    rng = np.random.default_rng(3)
    cols, stride = 14, 8
    for rows, ns in ((24, stride), (24, 3), (19, 5), (1, stride)):  # (rows added four at a time, then one)
        W = rng.normal(size=5 + rows * cols)  # one W at offset 5 of a flat array
        x = rng.normal(size=rows * stride)
        x[:stride] *= np.where(np.arange(stride) % 2, -0.0, 1.0)  # (a first term of -0: the sum from 0 is +0)
        y = np.full(cols * stride, np.nan)
        chunk_product(x, y, W, 5, rows, cols, ns, stride)
        for s in range(ns):
            for c in range(cols):
                acc = 0.0
                for r in range(rows):
                    acc += x[r * stride + s] * W[5 + r * cols + c]
                assert y[c * stride + s] == acc and np.signbit(y[c * stride + s]) == np.signbit(acc), (rows, ns, s, c)


def test_alike_sleds_share_one_product():
    """The compiled loop forms one product for a chunk whose sleds all have the first sled's
    inputs (fused._alike): equal inputs give the chunk's products to the bit, also where an
    input differs only in the sign of a zero (the sums start from +0.0); a NaN or one other
    value makes the chunk unlike."""
    from twin.power.compiled import chunk_product
    from twin.sim import fused

    fused._compiled()
    rng = np.random.default_rng(5)
    rows, cols, stride, ns = 19, 14, 8, 6
    W = rng.normal(size=rows * cols)
    x = np.repeat(rng.normal(size=(rows, 1)), stride, axis=1)
    x[3] = 0.0
    x[3, 1::2] = -0.0
    assert fused._alike(x.ravel(), rows, ns, stride)
    y, y1 = np.full(cols * stride, np.nan), np.full(cols * stride, np.nan)
    chunk_product(x.ravel(), y, W, 0, rows, cols, ns, stride)
    chunk_product(x.ravel(), y1, W, 0, rows, cols, 1, stride)
    want = np.repeat(y1.reshape(cols, stride)[:, :1], ns, axis=1)
    got = y.reshape(cols, stride)[:, :ns]
    assert np.array_equal(got, want) and (np.signbit(got) == np.signbit(want)).all()
    for value in (np.nan, np.nextafter(x[5, 0], np.inf)):
        other = x.copy()
        other[5, ns - 1] = value
        assert not fused._alike(other.ravel(), rows, ns, stride)
    assert not fused._alike(x.ravel(), rows, 1, stride)  # (one sled: its own product)


#: faults and throttling; jobs and a plant; shutdown trips (first-trip time, devices tripped)
@pytest.mark.parametrize("case", ["quickstart-events", "hall-1k", "cdu-pump-trip"])
def test_run_matches_reference(case):
    from tests.sim.test_kpi_regression import CASES
    from twin.export.dataset import summary
    from twin.sim.driver import Simulation

    name, over = CASES[case]
    out = {}
    for kernel in ("numpy", "numba"):
        sim = Simulation(load_scenario(SCENARIOS / name, over), kernel=kernel)
        assert sim.kernel == kernel
        sim.run()
        out[kernel] = (summary(sim), sim.t_die.copy())
    (ref, t_ref), (got, t_got) = out["numpy"], out["numba"]
    if case == "cdu-pump-trip":  # the trips happen, at the same step in both kernels
        assert ref["devices_tripped"] > 0 and got["time_to_first_trip_s"] == ref["time_to_first_trip_s"]
    np.testing.assert_allclose(t_got, t_ref, rtol=0.0, atol=RUN_T_ATOL)
    for key, value in ref.items():
        if isinstance(value, str):
            assert got[key] == value, key
        else:
            assert float(got[key]) == pytest.approx(float(value), rel=RUN_RTOL, abs=1e-9, nan_ok=True), key


def test_choice(monkeypatch):
    monkeypatch.delenv("TWIN_KERNEL", raising=False)
    assert choose(COMPILED_MIN_DEVICES - 1) == "numpy"  # small systems: not worth numba's import
    assert choose(COMPILED_MIN_DEVICES) == "numba"
    # long runs: numba's load is paid back by the steps whatever the size; short ones keep numpy
    assert choose(290, n_steps=COMPILED_MIN_STEPS - 1) == "numpy"
    assert choose(290, n_steps=COMPILED_MIN_STEPS) == "numba"
    assert choose(10, "numba") == "numba"
    assert choose(10, "numpy", n_steps=10**7) == "numpy"
    monkeypatch.setenv("TWIN_KERNEL", "numpy")
    assert choose(10**6) == "numpy"
    monkeypatch.setenv("TWIN_KERNEL", "cuda")
    with pytest.raises(ScenarioError, match=r"^<environment>:1: TWIN_KERNEL: unknown kernel 'cuda' "
                                            r"\(allowed: auto, numpy, numba\)$"):
        choose(10)
    with pytest.raises(ValueError, match=r"^kernel: unknown kernel 'cuda'"):
        choose(10, "cuda")  # a name given by the caller is not blamed on the environment


def test_block_choice(monkeypatch):
    """The quiet blocks' compiled loop pays from BLOCK_MIN_STEPS steps (a 2 h quickstart, the
    control environment's horizon) on; ``numpy`` keeps the reference however long the run."""
    pytest.importorskip("numba")
    monkeypatch.delenv("TWIN_KERNEL", raising=False)
    assert choose_block(290, n_steps=BLOCK_MIN_STEPS - 1) == "numpy"
    assert choose_block(290, n_steps=BLOCK_MIN_STEPS) == "numba"
    assert choose_block(290, n_steps=7200) == "numba"  # the quickstart's 2 h at 1 s
    assert choose_block(290, "numpy", n_steps=10**7) == "numpy"
    assert choose_block(COMPILED_MIN_DEVICES) == "numba"
    monkeypatch.setenv("TWIN_KERNEL", "numpy")
    assert choose_block(290, n_steps=10**7) == "numpy"


@pytest.mark.parametrize("n_sub", [1, 10])
def test_compiled_loop_parts_are_the_kernels(chip, n_sub):
    """The quiet blocks' compiled loop (twin.sim.fused) reads the chip figures from a table per
    kind of device (with the power limits and holds) and its rack sums in rack order; its chip
    power and governors give the per-step compiled kernel's numbers to the bit (the same
    equations on the same numbers) and the numpy reference's to a few ulp, on random inputs
    through every branch: idle, held, tripped, throttling, the power limit's Newton clock, new
    trips; and the leakage factor it keeps for the next step is exp at the new die temperature
    whether it was computed anew (the die moved), kept (it did not) or taken from its mate (a
    device of the same kind before it at the same temperature)."""
    from twin.power import compiled
    from twin.power.governor import CLOCK_MIN, THROTTLE_DOWN_RATE, THROTTLE_GAIN, THROTTLE_UP_RATE
    from twin.power.device import CLOCK_NEWTON_STEPS
    from twin.sim import fused

    fused._compiled()
    u, clock, on, t_die, held = _inputs(chip, n_sub, 11 + n_sub)
    n = t_die.size
    limit = chip["p_limit"] * np.where(np.arange(n) % 3 == 0, 0.7, 1.0)  # limits that split kinds
    kind, tab = fused.NumbaChip(chip).rows(limit, held)
    assert tab.shape[0] < n / 4  # (a few kinds of device)
    leak = np.array([compiled.leak_factor(t, r, b) for t, r, b in zip(t_die, chip["t_ref"], chip["leak_beta"])])
    # chip power with the shelves' sums: two racks, the second holding devices from n // 3 on
    rack_dev = np.array([0, n // 3, n])
    racks = np.arange(2)  # (the loop's tiles: both racks as one)
    fixed = np.array([10.0, 20.0])
    P, p_step, clock_out, rack_p = np.empty((1, n_sub, n)), np.empty((1, n)), np.empty((1, n)), np.empty(2 * n_sub)
    over = fused._power_jit(0, u[None], kind, tab, clock, ~on, leak, rack_dev, fixed, np.full(2, np.inf), racks, 0, 2,
                            rack_p, P, p_step, True, clock_out, True)
    assert not over
    ref = NumbaKernel(chip).power(u, clock, on, t_die, held, limit)
    np.testing.assert_array_equal(P[0], ref)
    np.testing.assert_allclose(P[0], NumpyKernel(chip).power(u, clock, on, t_die, held, limit), rtol=STEP_RTOL, atol=0)
    np.testing.assert_array_equal(clock_out[0], clock)
    np.testing.assert_allclose(p_step[0], ref.mean(axis=0), rtol=1e-15)
    sums = np.stack([fixed + np.add.reduceat(p, rack_dev[:2]) for p in P[0]])
    np.testing.assert_allclose(rack_p.reshape(n_sub, 2), sums, rtol=1e-13)
    assert fused._power_jit(0, u[None], kind, tab, clock, ~on, leak, rack_dev, fixed, sums.max(axis=0) * (1 - 1e-9),
                            racks, 0, 2, rack_p, P, p_step, True, clock_out, True)  # a rack above its limit
    # the mean and the clock left unwritten (the block's views of P and of the last step's clock limits)
    kept = np.full((1, n), -1.0)
    fused._power_jit(0, u[None], kind, tab, clock, ~on, leak, rack_dev, fixed, np.full(2, np.inf), racks, 0, 2,
                     rack_p, np.empty((1, n_sub, n)), kept, False, kept, False)
    np.testing.assert_array_equal(kept, -1.0)
    # the governors at new die temperatures: half of them moved, half where they were; every
    # fourth device from the second has its mate one before it, and moved to the mate's new
    # temperature (it takes the mate's factor where their kinds are the same, else its own exp)
    t_new = np.where(np.arange(n) % 2 == 0, t_die + np.linspace(-5.0, 5.0, n), t_die)
    back = np.where(np.arange(n) % 4 == 1, 1, 0).astype(np.uint8)
    t_new[1::4] = t_new[0::4][: t_new[1::4].size]
    assert (kind[1::4] == kind[0::4][: t_new[1::4].size]).any() and (kind[1::4] != kind[0::4][: t_new[1::4].size]).any()
    t_die_out = t_new[None].copy()
    thermal, power, clock_lim = clock.copy(), np.empty(n), np.empty(n)
    gov_trip, off, peak, t_state, e = ~on, ~on, t_die.copy(), t_die.copy(), leak.copy()
    out = t_die_out, np.empty((1, n), dtype=bool), np.empty((1, n)), np.empty((1, n), dtype=bool)
    fused._govern_jit(0, u[None], kind, tab, THROTTLE_GAIN, THROTTLE_DOWN_RATE, THROTTLE_UP_RATE, CLOCK_MIN,
                      CLOCK_NEWTON_STEPS, 1.0, rack_dev, racks, 0, 2, clock_lim, off, gov_trip, thermal, power, t_state,
                      peak, e, *out, back)
    want = NumbaKernel(chip).govern(u, t_new, clock, ~on, 1.0, limit)
    for got, w in zip((thermal, power, clock_lim), want):
        np.testing.assert_array_equal(got, w)
    np.testing.assert_array_equal(gov_trip, want[3] & ~(t_new < chip["t_throttle"]))  # (the restart: Governors.step)
    for got, w in zip((thermal, power, clock_lim), NumpyKernel(chip).govern(u, t_new, clock, ~on, 1.0, limit)):
        np.testing.assert_allclose(got, w, rtol=STEP_RTOL, atol=0)
    assert (power < 1.0).any() and (thermal < clock).any() and (gov_trip & on).any()  # every branch taken
    np.testing.assert_array_equal(e, [compiled.leak_factor(t, r, b) for t, r, b in zip(t_new, chip["t_ref"],
                                                                                      chip["leak_beta"])])
    np.testing.assert_array_equal(t_state, t_new)
    np.testing.assert_array_equal(peak, np.maximum(t_die, t_new))
    np.testing.assert_array_equal(out[0][0], t_new)
    np.testing.assert_array_equal(out[1][0], clock < 1.0)  # throttled as the step began
    np.testing.assert_array_equal(out[2][0], clock_lim)
    np.testing.assert_array_equal(out[3][0], gov_trip)
    np.testing.assert_array_equal(off, gov_trip)


def test_distinct_rows_are_numpys_unique_rows():
    """The compiled loop's table of device kinds: the rows np.unique(axis=0) finds, each
    device's row index giving its own row back bit for bit, also when two distinct rows share
    the hash (the check falls back to sorting the rows)."""
    from twin.sim.fused import distinct_rows

    rng = np.random.default_rng(7)
    kinds = rng.normal(size=(5, 15))
    full = kinds[rng.integers(0, 5, size=10_000)]
    full[::7, 13] = 0.7 * full[::7, 13]  # (a power limit that splits some kinds)
    table, kind = distinct_rows(full)
    np.testing.assert_array_equal(table[kind], full)
    expected = np.unique(full, axis=0)
    assert table.shape == expected.shape
    np.testing.assert_array_equal(np.unique(table, axis=0), expected)
    # two rows whose hashes collide: (a0, a1) and (c0, c1) with a0·K ^ a1 = c0·K ^ c1 (mod 2**64)
    k = np.uint64(0x9E3779B97F4A7C15)
    a = np.array([1.0, 2.0]).view(np.uint64)
    for c0 in np.arange(3.0, 200.0):
        c = np.array([c0, 0.0]).view(np.uint64)
        c[1:] = (a[:1] * k) ^ a[1:] ^ (c[:1] * k)  # (arrays: integer arrays wrap without a warning)
        if np.isfinite(c.view(float)[1]):
            break
    pair = np.stack([a.view(float), c.view(float), a.view(float)])
    table, kind = distinct_rows(pair)
    assert table.shape == (2, 2)
    np.testing.assert_array_equal(table[kind], pair)
