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
    fit_power,
    fit_timing,
    power_model,
    serving_comparison,
    splitwise_power_rows,
    splitwise_timing_rows,
    timing_ratios,
    utilisation_bins,
)
from twin.workload.measured import read_biohpc as _ORIGINAL_READ

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


def test_power_against_utilisation_bins():
    """BioHPC hourly telemetry of one A100 PCIe (MIT, shipped by the calibration work): mean power
    per utilisation bin, as a fraction of TDP, against the device model with the active-idle step
    and one fitted number, the workload's kernel activity. Idle hours, 0–20 % (the active-idle step:
    measured 0.26 of TDP) and 40–100 % are within ±10 %. The 20–40 % bin is not: its hours draw
    barely more than the 0–20 % ones (0.28 against 0.26 of TDP, at the same 46 °C) — kernels that
    count as utilisation but keep the GPU nearly idle — so a utilisation-driven model reads it
    +26 % high; it is held to ±30 % and listed in README Fidelity as outside the bar."""
    table, activity = utilisation_bins(load_catalog())
    assert 0.3 < activity < 1.2  # a plausible share of the dynamic budget while kernels run
    ratio = table["ratio"].to_numpy()
    assert table["n"].min() >= 500  # every bin well populated
    outside = 2  # the (20, 40] bin
    for i, r in enumerate(ratio):
        assert abs(r - 1) <= (0.30 if i == outside else 0.10), (table.index[i], r)
    assert table["model"].iloc[1] / table["model"].iloc[0] > 1.7  # the active-idle step is there


def test_power_against_utilisation_held_out_in_time():
    """Fit the kernel activity on the older half of the hours, predict the newer half: the busy
    bins (40–100 %) stay within ±15 % (measured 0.93, 0.90, 0.90: the newer hours run heavier
    kernels, which one workload activity cannot know in advance; README Fidelity)."""
    from twin.workload import measured

    data = measured.read_biohpc()
    half = len(data) // 2  # the file is newest first
    old, new = data.iloc[half:], data.iloc[:half]
    cat = load_catalog()
    try:
        measured.read_biohpc = lambda: old
        _, activity = utilisation_bins(cat)
        measured.read_biohpc = lambda: new
        table, _ = utilisation_bins(cat, activity)
    finally:
        measured.read_biohpc = _ORIGINAL_READ
    busy = table["ratio"].to_numpy()[-3:]
    assert np.all(np.abs(busy - 1) <= 0.15), table
