"""The serving model against measured data it ships with (README, Fidelity).

Splitwise (ISCA 2024; MIT; twin/data/calibration/splitwise): A100-80GB and H100-80GB serving
Llama-2-70B and BLOOM-176B at tensor parallelism 2-8. Each configuration is served end to end by
an InferencePool with the catalogue's figures (twin.workload.measured.serving_comparison) and
compared with the measurement. Tolerances are the project's bars for serving: per-GPU power
±15 % (median over the configurations), throughput and energy per output token ±20 %, prefill and
decode step times ±25 %. The same bars hold per model and GPU (each group's median), and a held-out
split (fit on one model or GPU, test on the other) keeps the step times within ±25 %.
"""

from __future__ import annotations

import numpy as np
import pytest

from twin.catalog import load_catalog
from twin.workload.measured import (
    active_idle_readings,
    biohpc_fidelity_rows,
    biohpc_splits,
    fit_power,
    fit_timing,
    hour_samples,
    hourly_power,
    kernel_activity,
    power_model,
    read_biohpc,
    serving_comparison,
    splitwise_power_rows,
    splitwise_timing_rows,
    timing_ratios,
    utilisation_bins,
)

BARS = {"power": 0.15, "throughput": 0.20, "energy_per_token": 0.20, "prefill": 0.25, "decode": 0.25}


@pytest.fixture(scope="module")
def comparison():
    return serving_comparison(load_catalog())


@pytest.mark.parametrize("quantity", list(BARS))
def test_median_over_configurations_within_the_bar(comparison, quantity):
    ratios = comparison[quantity].dropna()
    assert ratios.size >= 40  # every measured configuration, not a handful
    assert abs(np.median(ratios) - 1) <= BARS[quantity], np.median(ratios)


@pytest.mark.parametrize("quantity", list(BARS))
def test_each_model_and_gpu_within_the_bar(comparison, quantity):
    """No group carried by another: each (model, GPU) median is inside the bar too."""
    groups = comparison.dropna(subset=[quantity]).groupby(["model", "hardware"])[quantity].median()
    assert len(groups) >= 2
    assert (np.abs(groups - 1) <= BARS[quantity]).all(), groups.to_dict()


def test_most_configurations_within_the_bar(comparison):
    """Beyond the medians: the share of configurations inside each bar (decode, power, throughput
    and energy at least 90 %; prefill, whose batching behaviour the stack varied, at least 65 %)."""
    share = {q: float((np.abs(comparison[q].dropna() - 1) <= bar).mean()) for q, bar in BARS.items()}
    assert share["decode"] >= 0.9 and share["power"] >= 0.9, share
    assert share["throughput"] >= 0.9 and share["energy_per_token"] >= 0.9, share
    assert share["prefill"] >= 0.65, share


@pytest.mark.parametrize("train, test", [
    (("model", "llama2-70b"), ("model", "bloom-176b")),
    (("hardware", "a100-80gb"), ("hardware", "h100-80gb")),
])
def test_held_out_step_times(train, test):
    """Fit the four timing parameters on one model (or GPU) and predict the other: median
    prefill and decode step times stay within ±25 % (held out: 1.05 / 1.23 for BLOOM, 1.02 /
    1.22 for H100, README Fidelity)."""
    rows = splitwise_timing_rows(load_catalog())
    fit = fit_timing(rows[rows[train[0]] == train[1]])
    pf, dec = timing_ratios(rows[rows[test[0]] == test[1]], **fit)
    assert abs(np.median(pf) - 1) <= 0.25 and abs(np.median(dec) - 1) <= 0.25, (np.median(pf), np.median(dec))


def test_held_out_power():
    """Fit the A100's active idle and its HBM and tensor activities on Llama-2-70B and predict
    BLOOM-176B's average power: median within ±15 % (held out: 0.996)."""
    cat = load_catalog()
    rows = splitwise_power_rows(cat)
    chip = cat.chips["a100-sxm"]
    llama = rows["model"] == "llama2-70b"
    fit = fit_power(rows[llama], chip)
    ratio = power_model(rows[~llama], chip, **fit) / rows[~llama]["average_power"]
    assert abs(np.median(ratio) - 1) <= 0.15


# -- power against utilisation: BioHPC hourly telemetry of one A100 PCIe (MIT, shipped) ----------
# Tolerance ±10 % per bin: the project's bar for power against utilisation. The bins' sampling
# error is small beside it (n ≥ 500 hours a bin, spread ~40 W: standard error ≤ 2 W, 1-2 %),
# and the alternate-week split moves the bins by at most 3 points, so the bar tests the model's
# shape, not noise; the time split is a different job mix and is held to ±15 % (see below).


@pytest.fixture(scope="module")
def biohpc():
    return read_biohpc()


def test_power_against_utilisation_bins(biohpc):
    """Mean power per utilisation bin (idle, 0-20 %, …, 80-100 %) against the device model with
    the catalogue's measured idle and active idle and the two-number utilisation mapping
    (kernel_activity) fitted to the bins: every bin within ±10 % (0.98, 0.96, 1.04, 0.93, 0.99,
    1.05; README Fidelity)."""
    table, mapping = utilisation_bins(load_catalog(), data=biohpc)
    assert 0.3 < mapping["activity"] < 1.2  # a plausible share of the dynamic budget at full utilisation
    assert 0.0 < mapping["latency_share"] < 0.5
    assert table["n"].min() >= 500  # every bin well populated
    assert len(table) == 6
    ratio = table["ratio"].to_numpy()
    assert np.all(np.abs(ratio - 1) <= 0.10), table
    assert table["model"].iloc[1] / table["model"].iloc[0] > 1.5  # the active-idle step is there


@pytest.mark.parametrize("split, bar", [("weeks", 0.10), ("time", 0.15)])
def test_power_against_utilisation_held_out(biohpc, split, bar):
    """Fit the mapping on one part of the hours and predict the other. Alternate weeks (the same
    jobs' other weeks): every bin within ±10 % (0.98, 0.96, 1.07, 0.94, 0.99, 1.04). The older
    half predicting the newer (other jobs): ±15 % (0.99, 0.94, 0.92, 0.89, 0.94, 0.97) — the
    newer jobs draw more per unit of utilisation, which no mapping fitted in advance can know."""
    fit, test = biohpc_splits(biohpc)[split]
    cat = load_catalog()
    _, mapping = utilisation_bins(cat, data=biohpc[fit].reset_index(drop=True))
    table, _ = utilisation_bins(cat, mapping, data=biohpc[test].reset_index(drop=True))
    assert len(table) == 6
    assert np.all(np.abs(table["ratio"].to_numpy() - 1) <= bar), table


def test_active_idle_is_the_measured_one(biohpc):
    """The catalogue's A100 PCIe active idle equals the telemetry's kernel-free readings inside
    busy hours (median, at the idle temperature) within ±5 %, the bar for measured idle levels."""
    chip = load_catalog().chips["a100-pcie"]
    readings = active_idle_readings(biohpc, chip)
    assert readings.size >= 500
    assert abs(chip.p_active_idle.si / np.median(readings) - 1) <= 0.05, np.median(readings)
    assert abs(chip.p_idle.si / biohpc.loc[biohpc["util_max"] == 0, "power"].median() - 1) <= 0.05


def test_hour_samples_rebuild_the_readings():
    """Three readings are rebuilt exactly from mean, min and max; four keep the mean and the
    extremes (the middle two become their mean)."""
    reads = hour_samples([0.5, 0.2], [0.0, 0.2], [1.0, 0.2], n=3)
    np.testing.assert_allclose(reads, [[0.0, 0.2], [0.5, 0.2], [1.0, 0.2]])
    four = hour_samples([0.25, 0.6], [0.0, 0.4], [1.0, 0.9], n=4)  # (0, 0, 0, 1) and (0.4, 0.5, 0.6, 0.9)
    np.testing.assert_allclose(four.mean(axis=0), [0.25, 0.6])
    np.testing.assert_allclose(four[:, 0], [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(four[:, 1], [0.4, 0.55, 0.55, 0.9])


def test_kernel_activity_by_hand():
    """u = a · max(0, util − u0)/(1 − u0): 0 up to the latency share, a at full utilisation."""
    u = kernel_activity(np.array([0.0, 0.2, 0.6, 1.0]), 0.8, 0.2)
    np.testing.assert_allclose(u, [0.0, 0.0, 0.8 * 0.4 / 0.8, 0.8])


def test_hourly_power_mixes_readings():
    """An hour of one fully busy reading and three kernel-free ones draws the mean of the four
    readings' powers (active idle three times, the busy power once), more than four readings at
    25 % under the latency share's threshold would."""
    from twin.power.device import active_power, dynamic_power_full

    chip = load_catalog().chips["a100-pcie"]
    c = {k: getattr(chip, k).si for k in ("tdp", "p_active_idle", "p_leak_ref", "t_ref", "t_idle", "leak_beta",
                                          "clock_exponent")}
    pdyn = dynamic_power_full(c["tdp"], c["p_active_idle"], c["p_leak_ref"], c["t_ref"], c["t_idle"], c["leak_beta"])

    def p(u):
        return active_power(u, 1.0, 50.0, c["p_active_idle"], c["t_idle"], pdyn, c["p_leak_ref"], c["t_ref"],
                            c["leak_beta"], c["clock_exponent"])

    mixed = hourly_power([0.25], [50.0], chip, 0.8, 0.2, [0.0], [1.0])
    np.testing.assert_allclose(mixed, (3 * p(0.0) + p(0.8)) / 4, rtol=1e-12)
    flat = hourly_power([0.25], [50.0], chip, 0.8, 0.2)
    np.testing.assert_allclose(flat, p(0.8 * 0.05 / 0.8), rtol=1e-12)
    assert mixed > flat


def test_readme_fidelity_rows_are_generated():
    """The README's BioHPC rows are what biohpc_fidelity_rows prints (regenerate them with
    ``python -c "from twin.catalog import load_catalog; from twin.workload.measured import
    biohpc_fidelity_rows; print(*biohpc_fidelity_rows(load_catalog()), sep=chr(10))"``)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    for row in biohpc_fidelity_rows(load_catalog()):
        assert row in readme, row


def test_readme_splitwise_rows_are_the_comparison(comparison):
    """The README's five Splitwise rows (median, range and share inside the bar) are what the
    comparison gives, to the two decimals and whole percent they are printed with."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    fidelity = readme.split("\n## Fidelity", 1)[1].split("\n## ", 1)[0]
    starts = {"power": "| per-GPU average serving power", "throughput": "| output-token throughput",
              "energy_per_token": "| energy per output token", "prefill": "| prefill (prompt) time",
              "decode": "| decode step time"}
    for quantity, start in starts.items():
        row = next(r for r in fidelity.splitlines() if r.startswith(start))
        ratio = row.split("|")[3]
        m = re.search(r"([\d.]+) \(([\d.]+)–([\d.]+); (\d+) % within ±(\d+) %\)", ratio)
        assert m, row
        r = comparison[quantity].dropna()
        bar = BARS[quantity]
        assert int(m.group(5)) == round(bar * 100), row
        shown = [float(m.group(i)) for i in (1, 2, 3)]
        assert shown == pytest.approx([np.median(r), r.min(), r.max()], abs=0.005 + 1e-9), (quantity, shown)
        assert int(m.group(4)) == round(100 * float((np.abs(r - 1) <= bar).mean())), (quantity, row)
