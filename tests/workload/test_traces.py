"""Request streams: the Azure trace reader and seeded Poisson arrivals."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd
import pytest

from twin.workload.traces import (
    AZURE_CODE_OUTPUT,
    AZURE_CODE_PROMPT,
    AZURE_CODE_RATE,
    AZURE_CODE_TRACE,
    LogNormalTokens,
    fit_lognormal_tokens,
    poisson_arrivals,
    read_azure_trace,
    sample_tokens,
)

HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


@pytest.fixture(scope="module")
def trace():
    return read_azure_trace()


def _write(tmp_path, text, name="trace.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


# -- the bundled trace -----------------------------------------------------------------------------
def test_bundled_trace_matches_its_documentation(trace):
    """Rows, span, medians and rate as documented for the Azure code trace.

    The shared data README says 8,818 requests; the file has 8,819 data rows (`wc -l` minus the
    header gives 8,818 because the last line has no newline), so the count is checked exactly
    against the file. Medians of integer columns are exact, so no tolerance there.
    """
    assert len(trace) == 8819
    assert list(trace.columns) == ["arrival", "prompt_tokens", "output_tokens"]
    assert trace["arrival"].dtype == np.float64
    assert trace["prompt_tokens"].dtype == np.int64 and trace["output_tokens"].dtype == np.int64
    assert trace["prompt_tokens"].median() == 1469
    assert trace["output_tokens"].median() == 13
    # "About one hour": 57 min 16 s.
    assert 3300 < trace["arrival"].iloc[-1] < 3600
    # "About 2.6 requests/s" (rounded to one decimal, so ±0.05).
    assert len(trace) / trace["arrival"].iloc[-1] == pytest.approx(2.6, abs=0.05)
    assert AZURE_CODE_RATE == pytest.approx(len(trace) / trace["arrival"].iloc[-1], rel=1e-12)


def test_arrival_is_seconds_since_first_request(trace):
    """First and last timestamps of the file, differenced by hand with datetime (to 1 µs, the
    resolution of datetime; the file carries 100 ns digits)."""
    first = datetime(2023, 11, 16, 18, 17, 3, 979960)
    last = datetime(2023, 11, 16, 19, 14, 19, 928016)
    assert trace["arrival"].iloc[0] == 0.0
    assert trace["arrival"].iloc[-1] == pytest.approx((last - first).total_seconds(), abs=1e-6)
    assert np.all(np.diff(trace["arrival"].to_numpy()) >= 0)
    assert trace.attrs["start"] == "2023-11-16 18:17:03.9799600"


def test_shipped_copy_is_the_reference_file():
    """The bundled copy is byte-identical to the shared reference data."""
    checkout = AZURE_CODE_TRACE.parents[3]
    shared = checkout.parent / "shared" / "data" / "traces" / AZURE_CODE_TRACE.name
    if not shared.exists():
        pytest.skip("shared reference data not present")
    assert AZURE_CODE_TRACE.read_bytes() == shared.read_bytes()


def test_default_token_distributions_are_the_trace_fit(trace):
    """The module defaults equal a fresh maximum-likelihood fit (constants rounded to 6
    decimals, hence abs 1e-6)."""
    prompt = fit_lognormal_tokens(trace["prompt_tokens"])
    output = fit_lognormal_tokens(trace["output_tokens"])
    assert prompt == pytest.approx(AZURE_CODE_PROMPT, abs=1e-6)
    assert output == pytest.approx(AZURE_CODE_OUTPUT, abs=1e-6)


def test_fit_lognormal_recovers_known_parameters():
    """Fit of 200,000 exact lognormal draws: mu and sigma within 1 % (standard errors are
    sigma/√n ≈ 0.002 and sigma/√(2n) ≈ 0.0016)."""
    rng = np.random.default_rng(3)
    x = np.exp(5.0 + 0.8 * rng.standard_normal(200_000))
    fit = fit_lognormal_tokens(x)
    assert fit.mu == pytest.approx(5.0, rel=0.01)
    assert fit.sigma == pytest.approx(0.8, rel=0.01)
    with pytest.raises(ValueError, match="all >= 1"):
        fit_lognormal_tokens([0, 5])


# -- reader edge cases and errors --------------------------------------------------------------
def test_numeric_timestamps_and_extra_columns(tmp_path):
    path = _write(tmp_path, "TIMESTAMP,ContextTokens,GeneratedTokens,Other\n"
                            "10.5,100,7,x\n11.0,200,0,y\n\n11.0,5,1,z\n")
    t = read_azure_trace(path)
    assert t["arrival"].tolist() == [0.0, 0.5, 0.5]
    assert t["prompt_tokens"].tolist() == [100, 200, 5]
    assert t["output_tokens"].tolist() == [7, 0, 1]


@pytest.mark.parametrize("text, match", [
    ("TIMESTAMP,ContextTokens\n0,1\n", r"trace\.csv:1: missing column\(s\) GeneratedTokens"),
    (HEADER + "0,10,5\n1,ten,5\n", r"trace\.csv:3: ContextTokens: .* got 'ten'"),
    (HEADER + "0,10,5\n1,10,-2\n", r"trace\.csv:3: GeneratedTokens: expected a non-negative"),
    (HEADER + "0,10,5\n1,10.5,2\n", r"trace\.csv:3: ContextTokens: .* got '10.5'"),
    (HEADER + "0,10,5\n1,10,\n", r"trace\.csv:3: GeneratedTokens: missing value"),
    (HEADER + "2023-11-16 18:17:04,10,5\n2023-11-16 18:17:03,10,5\n",
     r"trace\.csv:3: TIMESTAMP '2023-11-16 18:17:03' is earlier than the one before"),
    # A blank line is skipped but counted.
    (HEADER + "5,10,5\n\n4,10,5\n", r"trace\.csv:4: TIMESTAMP '4' is earlier"),
    (HEADER + "2023-11-16 18:17:04,10,5\nyesterday,10,5\n",
     r"trace\.csv:3: TIMESTAMP: expected a date-time"),
    (HEADER, r"trace\.csv:2: no requests after the header"),
    ("", r"trace\.csv:1: empty file"),
    (HEADER + "0,1,2\n1,2,3,4\n", r"trace\.csv: malformed CSV"),
])
def test_malformed_trace_names_file_and_line(tmp_path, text, match):
    with pytest.raises(ValueError, match=match):
        read_azure_trace(_write(tmp_path, text))


def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match=r"nope\.csv: cannot read trace file"):
        read_azure_trace(tmp_path / "nope.csv")


# -- Poisson arrivals ------------------------------------------------------------------------------
def test_constant_rate_count_and_gaps():
    """λ = 3 /s for 2 h: the count is Poisson(λT) = 21,600 ± 147 (1σ); accept 4σ. The mean gap
    is 1/λ with standard error (1/λ)/√n ≈ 0.0023 s; accept 4 standard errors."""
    lam, T = 3.0, 7200.0
    a = poisson_arrivals(lam, T, seed=7)
    n = len(a)
    assert abs(n - lam * T) < 4 * np.sqrt(lam * T)
    t = a["arrival"].to_numpy()
    assert t.min() >= 0 and t.max() < T and np.all(np.diff(t) >= 0)
    gaps = np.diff(t)
    assert abs(gaps.mean() - 1 / lam) < 4 * (1 / lam) / np.sqrt(n)
    # Exponential gaps: coefficient of variation 1 (its standard error is 1/√n ≈ 0.007 for
    # exponential data; accept 0.03 ≈ 4σ).
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.03)


def test_same_seed_same_stream():
    a = poisson_arrivals(2.0, 600, seed=11)
    pd.testing.assert_frame_equal(a, poisson_arrivals(2.0, 600, seed=11))
    assert not a.equals(poisson_arrivals(2.0, 600, seed=12))
    b = poisson_arrivals(2.0, 600, seed=np.random.default_rng(11))
    pd.testing.assert_frame_equal(a, b)


def test_daily_profile_hourly_counts():
    """Two days of a profile that is 0 at night and up to 2× by day: each hour's count is
    Poisson(2·base·m·3600), checked within 4σ; zero hours have no arrival at all."""
    profile = np.array([0.0] * 6 + [0.5, 1.0, 1.5, 2.0] + [1.0] * 10 + [0.5] * 4)
    base = 1.5
    a = poisson_arrivals(profile, 2 * 86400.0, seed=5, base_rate=base)
    hour = (a["arrival"].to_numpy() // 3600).astype(int) % 24
    counts = np.bincount(hour, minlength=24)
    expected = 2 * base * profile * 3600
    assert np.all(counts[profile == 0] == 0)
    live = profile > 0
    assert np.all(np.abs(counts[live] - expected[live]) < 4 * np.sqrt(expected[live]))


def test_profile_start_shifts_the_day():
    """Starting at 06:00 puts the first six hours of the run in profile hours 6–11."""
    profile = np.zeros(24)
    profile[6:12] = 1.0
    a = poisson_arrivals(profile, 12 * 3600.0, seed=1, base_rate=1.0, start=6 * 3600.0)
    t = a["arrival"].to_numpy()
    assert t.max() < 6 * 3600.0
    assert abs(len(t) - 6 * 3600) < 4 * np.sqrt(6 * 3600)


def test_callable_rate():
    """λ(t) = 2 + sin(2πt/600) /s over 1 h: Λ = 7,200 exactly (whole periods); accept 4σ."""
    def lam(t):
        return 2.0 + np.sin(2 * np.pi * t / 600.0)

    a = poisson_arrivals(lam, 3600.0, seed=2)
    assert abs(len(a) - 7200) < 4 * np.sqrt(7200)
    # More arrivals in the quarter periods around the peak than around the trough (mean rates
    # 2.9 and 1.1 /s: ~2,600 vs ~1,000 arrivals); "> 1.5×" holds by ~16σ of Poisson noise.
    phase = np.mod(a["arrival"].to_numpy(), 600.0)
    assert np.sum((phase > 75) & (phase < 225)) > 1.5 * np.sum((phase > 375) & (phase < 525))
    with pytest.raises(ValueError, match="pass a larger rate_max"):
        poisson_arrivals(lam, 3600.0, seed=2, rate_max=2.0)


def test_sampled_tokens_follow_the_fit():
    """Median of 100,000 draws near exp(mu) = 16.25: draws are whole tokens, so up to 0.5 off
    from rounding, plus 3 standard errors of a sample median (1.25·sigma/√n·16.25 ≈ 0.05 each);
    accept 0.7. All draws inside the clip range."""
    rng = np.random.default_rng(0)
    x = sample_tokens(AZURE_CODE_OUTPUT, 100_000, rng)
    assert np.median(x) == pytest.approx(np.exp(AZURE_CODE_OUTPUT.mu), abs=0.7)
    assert x.min() >= AZURE_CODE_OUTPUT.low and x.max() <= AZURE_CODE_OUTPUT.high
    fixed = sample_tokens(LogNormalTokens(np.log(500), 0.0, 1, 10_000), 10, rng)
    assert np.all(fixed == 500)


def test_poisson_default_tokens_resemble_the_trace(trace):
    """Synthetic requests with the default fits: medians within 30 % of the trace's (the lognormal
    is only an approximation: its median is exp(mu) = 1,095 vs 1,469 for prompts)."""
    a = poisson_arrivals(AZURE_CODE_RATE, 3600.0, seed=4)
    assert a["prompt_tokens"].median() == pytest.approx(trace["prompt_tokens"].median(), rel=0.3)
    assert a["output_tokens"].median() == pytest.approx(trace["output_tokens"].median(), rel=0.3)


@pytest.mark.parametrize("rate, duration, match", [
    (-1.0, 10.0, "rate must be a finite number >= 0"),
    (np.ones(12), 10.0, "24 finite hourly multipliers"),
    (1.0, -5.0, "duration must be"),
])
def test_poisson_bad_input(rate, duration, match):
    with pytest.raises(ValueError, match=match):
        poisson_arrivals(rate, duration, seed=0)
