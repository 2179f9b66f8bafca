"""Inference request streams: trace readers and seeded synthetic arrivals.

The reader and the generator here return the same table, one row per request in arrival order:

``arrival``
    Arrival time [s] (float), from the start of the stream.
``prompt_tokens``
    Prompt (context) length [tokens] (int).
``output_tokens``
    Generated length [tokens] (int).

:class:`twin.workload.inference.InferencePool` serves such a table. Foreign column names (the
Azure trace's ``TIMESTAMP``, ``ContextTokens``, ``GeneratedTokens``) are translated once, by
:data:`AZURE_TRACE_COLUMNS`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

#: Folder of the bundled traces (see README.md there for their source and licence).
TRACE_DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "traces"
#: The Azure LLM inference trace 2023, code assistant (Microsoft, CC-BY 4.0).
AZURE_CODE_TRACE = TRACE_DATA_DIR / "AzureLLMInferenceTrace_code.csv"

#: The one translation of Azure LLM inference trace columns to twin names.
AZURE_TRACE_COLUMNS = {
    "TIMESTAMP": "arrival",
    "ContextTokens": "prompt_tokens",
    "GeneratedTokens": "output_tokens",
}
#: Columns of a request table, in order.
REQUEST_COLUMNS = ("arrival", "prompt_tokens", "output_tokens")

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0
HOURS_PER_DAY = 24
#: Nanoseconds → seconds.
NANOSECOND = 1e-9
#: Header line of a CSV file; data row ``i`` (0-based) sits on line ``i + FIRST_DATA_LINE``.
FIRST_DATA_LINE = 2


class LogNormalTokens(NamedTuple):
    """Token-count distribution: round(exp(N(mu, sigma²))) clipped to [low, high].

    Attributes
    ----------
    mu : float
        Mean of ln(tokens) [ln token].
    sigma : float
        Standard deviation of ln(tokens) [ln token].
    low, high : int
        Clip bounds [tokens].
    """

    mu: float
    sigma: float
    low: int
    high: int


#: Prompt tokens of the bundled Azure code trace: maximum-likelihood lognormal fit
#: (mean and population standard deviation of ln tokens over its 8,819 requests), clipped to the
#: trace's observed range. Median exp(mu) ≈ 1,095 tokens (trace: 1,469). The trace is cut off near
#: 7.4 k tokens (the service's context window), so the clip keeps the mean near the trace's
#: 2,048 (the unclipped lognormal would have mean 2,762).
AZURE_CODE_PROMPT = LogNormalTokens(mu=6.998644, sigma=1.360193, low=3, high=7437)
#: Output tokens of the bundled Azure code trace, fitted the same way: median exp(mu) ≈ 16 tokens
#: (trace: 13), mean of the fit 23.3 (trace: 27.9).
AZURE_CODE_OUTPUT = LogNormalTokens(mu=2.788157, sigma=0.847238, low=6, high=1899)
#: Mean request rate of the bundled Azure code trace: 8,819 requests over 3,435.9 s [1/s].
AZURE_CODE_RATE = 8819 / 3435.948056


def _fail(path, line, message):
    return ValueError(f"{path}:{line}: {message}")


def read_azure_trace(path=AZURE_CODE_TRACE) -> pd.DataFrame:
    """Read an Azure LLM inference trace (CSV) into a request table.

    Parameters
    ----------
    path : str or Path, optional
        CSV file with a header and the columns ``TIMESTAMP`` (a date-time such as
        ``2023-11-16 18:17:03.9799600``, or seconds as a number), ``ContextTokens`` and
        ``GeneratedTokens`` (non-negative integers); other columns are ignored. Default: the
        bundled code-assistant trace, :data:`AZURE_CODE_TRACE`.

    Returns
    -------
    pandas.DataFrame
        One row per request: ``arrival`` [s] since the first request (float), ``prompt_tokens``
        [tokens] and ``output_tokens`` [tokens] (int64). ``attrs["start"]`` holds the first
        timestamp as found in the file and ``attrs["source"]`` the path.

    Raises
    ------
    ValueError
        Unreadable or empty file, a missing column, a missing or non-numeric value, a negative or
        fractional token count, or a timestamp earlier than the one before it. The message names
        the file and line (``trace.csv:17: ...``).

    Notes
    -----
    Column names are translated by :data:`AZURE_TRACE_COLUMNS`. Blank lines are skipped; line
    numbers in messages count them.

    References
    ----------
    .. [1] Microsoft, Azure Public Dataset, "Azure LLM inference trace 2023"
       (AzureLLMInferenceDataset2023), CC-BY 4.0. https://github.com/Azure/AzurePublicDataset
    .. [2] P. Patel et al., "Splitwise: Efficient Generative LLM Inference Using Phase
       Splitting", ISCA 2024.
    """
    try:
        raw = pd.read_csv(path, dtype=str, skip_blank_lines=False, keep_default_na=False)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read trace file ({exc.strerror or exc})") from None
    except pd.errors.EmptyDataError:
        raise _fail(path, 1, "empty file; expected a header with "
                    f"{', '.join(AZURE_TRACE_COLUMNS)}") from None
    except pd.errors.ParserError as exc:
        raise ValueError(f"{path}: malformed CSV: {exc}") from None
    raw.columns = [str(c).strip() for c in raw.columns]
    missing = [c for c in AZURE_TRACE_COLUMNS if c not in raw.columns]
    if missing:
        raise _fail(path, 1, f"missing column(s) {', '.join(missing)} "
                    f"(expected {', '.join(AZURE_TRACE_COLUMNS)}; found {', '.join(raw.columns)})")
    raw = raw[list(AZURE_TRACE_COLUMNS)].apply(lambda s: s.str.strip())
    line = np.arange(len(raw)) + FIRST_DATA_LINE
    blank = (raw == "").all(axis=1).to_numpy()
    raw, line = raw[~blank], line[~blank]
    if raw.empty:
        raise _fail(path, 2, "no requests after the header")

    for name in AZURE_TRACE_COLUMNS:
        empty = (raw[name] == "").to_numpy()
        if empty.any():
            raise _fail(path, line[np.argmax(empty)], f"{name}: missing value")

    out = {}
    for name in ("ContextTokens", "GeneratedTokens"):
        values = pd.to_numeric(raw[name], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(values) | (values < 0) | (values != np.round(values))
        if bad.any():
            i = np.argmax(bad)
            raise _fail(path, line[i], f"{name}: expected a non-negative whole number of "
                        f"tokens, got {raw[name].iloc[i]!r}")
        out[AZURE_TRACE_COLUMNS[name]] = values.astype(np.int64)

    stamps = raw["TIMESTAMP"]
    seconds = pd.to_numeric(stamps, errors="coerce").to_numpy(dtype=float)
    if np.isfinite(seconds).all():
        arrival = seconds - seconds[0]
    else:
        parsed = pd.to_datetime(stamps, format="ISO8601", errors="coerce")
        bad = parsed.isna().to_numpy()
        if bad.any():
            i = np.argmax(bad)
            raise _fail(path, line[i], f"TIMESTAMP: expected a date-time such as "
                        f"'2023-11-16 18:17:03.97996' or seconds, got {stamps.iloc[i]!r}")
        ns = parsed.to_numpy(dtype="datetime64[ns]").astype(np.int64)
        arrival = (ns - ns[0]) * NANOSECOND
    back = np.flatnonzero(np.diff(arrival) < 0)
    if back.size:
        i = back[0] + 1
        raise _fail(path, line[i], f"TIMESTAMP {stamps.iloc[i]!r} is earlier than the one before "
                    f"it ({stamps.iloc[i - 1]!r}); requests must be in arrival order")

    table = pd.DataFrame({"arrival": arrival.astype(float), **out}, columns=list(REQUEST_COLUMNS))
    table.attrs["start"] = stamps.iloc[0]
    table.attrs["source"] = str(path)
    return table


def fit_lognormal_tokens(tokens) -> LogNormalTokens:
    """Maximum-likelihood lognormal fit of token counts.

    Parameters
    ----------
    tokens : array_like of int
        Token counts [tokens], all ≥ 1.

    Returns
    -------
    LogNormalTokens
        mu and sigma of ln(tokens) [ln token], and the observed minimum and maximum as clip
        bounds [tokens].

    Raises
    ------
    ValueError
        Empty input or a count below 1 (its logarithm is undefined).

    Notes
    -----
    mu = mean(ln x), sigma = sqrt(mean((ln x − mu)²)) (the maximum-likelihood estimates; the
    population standard deviation, not the unbiased one).
    """
    x = np.asarray(tokens, dtype=float)
    if x.size == 0 or np.any(x < 1):
        raise ValueError("fit_lognormal_tokens: need at least one token count, all >= 1")
    log = np.log(x)
    return LogNormalTokens(float(log.mean()), float(log.std()), int(x.min()), int(x.max()))


def sample_tokens(dist: LogNormalTokens, n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw token counts from a clipped lognormal.

    Parameters
    ----------
    dist : LogNormalTokens
        Distribution (mu, sigma [ln token]; low, high [tokens]).
    n : int
        Number of draws.
    rng : numpy.random.Generator
        Random source.

    Returns
    -------
    ndarray of int64
        Token counts [tokens], round(exp(mu + sigma·z)) clipped to [low, high], z ~ N(0, 1).
    """
    z = rng.standard_normal(n)
    return np.clip(np.rint(np.exp(dist.mu + dist.sigma * z)), dist.low, dist.high).astype(np.int64)


def _rate_function(rate, base_rate, start, duration, rate_max):
    """Turn the three accepted forms of ``rate`` into (vectorised rate(t) [1/s], bound [1/s])."""
    if callable(rate):
        fn = rate
        if rate_max is None:
            grid = np.linspace(0.0, duration, int(min(1_000_000, max(2, np.ceil(duration) + 1))))
            # Margin for peaks between grid points; thinning is exact for any bound ≥ the rate.
            rate_max = 1.1 * float(np.max(fn(grid)))
        return fn, float(rate_max)
    values = np.asarray(rate, dtype=float)
    if values.ndim == 0:
        if not np.isfinite(values) or values < 0:
            raise ValueError(f"poisson_arrivals: rate must be a finite number >= 0 [1/s], "
                             f"got {rate}")
        r = float(values)
        return (lambda t: np.full(np.shape(t), r)), r
    if values.shape != (HOURS_PER_DAY,) or not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("poisson_arrivals: a daily profile must be 24 finite hourly multipliers "
                         f">= 0, got shape {values.shape}")

    def fn(t):
        hour = np.floor(np.mod(start + t, SECONDS_PER_DAY) / SECONDS_PER_HOUR).astype(np.int64)
        return base_rate * values[np.minimum(hour, HOURS_PER_DAY - 1)]

    return fn, base_rate * float(values.max())


def poisson_arrivals(
    rate: float | np.ndarray | Callable[[np.ndarray], np.ndarray],
    duration: float,
    seed: int | np.random.Generator,
    *,
    base_rate: float = AZURE_CODE_RATE,
    start: float = 0.0,
    rate_max: float | None = None,
    prompt: LogNormalTokens = AZURE_CODE_PROMPT,
    output: LogNormalTokens = AZURE_CODE_OUTPUT,
) -> pd.DataFrame:
    """Seeded non-homogeneous Poisson request arrivals with lognormal token counts.

    Parameters
    ----------
    rate : float, array_like of 24 floats, or callable
        Arrival rate: a constant [1/s]; a daily profile of 24 hourly multipliers [1] of
        ``base_rate`` (hour 0 = midnight to 01:00, piecewise constant); or a function of an
        array of times ``t`` [s] since the start returning rates [1/s].
    duration : float
        Length of the stream [s]; arrivals fall in [0, duration).
    seed : int or numpy.random.Generator
        Random seed (or generator): the same seed gives the same stream, bit for bit.
    base_rate : float, optional
        Rate that a profile multiplier of 1 stands for [1/s]. Default: the bundled Azure code
        trace's mean, :data:`AZURE_CODE_RATE` ≈ 2.567 /s.
    start : float, optional
        Time of day at t = 0 [s since midnight], for a daily profile. Default 0.
    rate_max : float, optional
        Upper bound of a callable rate [1/s]. Default: 1.1 × its maximum on a grid of 1 s (at
        most 10⁶ points).
    prompt, output : LogNormalTokens, optional
        Distributions of prompt and output tokens. Defaults: fits to the bundled Azure code trace,
        :data:`AZURE_CODE_PROMPT` (mu 6.9986, sigma 1.3602, clipped to 3…7,437 tokens) and
        :data:`AZURE_CODE_OUTPUT` (mu 2.7882, sigma 0.8472, clipped to 6…1,899 tokens).

    Returns
    -------
    pandas.DataFrame
        Request table: ``arrival`` [s] (sorted), ``prompt_tokens``, ``output_tokens`` [tokens].

    Raises
    ------
    ValueError
        A negative or non-finite rate, a profile that is not 24 multipliers, a negative duration,
        or a callable rate that exceeds ``rate_max``.

    Notes
    -----
    Thinning (Lewis and Shedler [1]_): candidates from a homogeneous Poisson process of rate
    λ_max — a Poisson(λ_max·T) count of sorted uniform times on [0, T) — are each kept with
    probability λ(t)/λ_max. The kept times form a Poisson process of rate λ(t), so the count is
    Poisson with mean Λ = ∫₀ᵀ λ(t) dt. Draw order (count, times, acceptance, prompt tokens,
    output tokens) is fixed, so a seed fixes the stream. Token counts are independent of each
    other and of the arrival time (in the Azure code trace the correlation of ln prompt and
    ln output tokens is −0.005).

    References
    ----------
    .. [1] P. A. W. Lewis and G. S. Shedler, "Simulation of nonhomogeneous Poisson processes by
       thinning", Naval Research Logistics Quarterly 26(3), 403–413, 1979.
    """
    if not np.isfinite(duration) or duration < 0:
        raise ValueError(f"poisson_arrivals: duration must be a finite number >= 0 [s], "
                         f"got {duration}")
    fn, lam_max = _rate_function(rate, base_rate, start, duration, rate_max)
    if not np.isfinite(lam_max) or lam_max < 0:
        raise ValueError(f"poisson_arrivals: rate bound must be finite and >= 0 [1/s], "
                         f"got {lam_max}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    n = rng.poisson(lam_max * duration)
    t = np.sort(rng.uniform(0.0, duration, n))
    lam = np.broadcast_to(np.asarray(fn(t), dtype=float), t.shape)
    if np.any(lam > lam_max * (1 + 1e-12)) or np.any(lam < 0) or not np.all(np.isfinite(lam)):
        raise ValueError(f"poisson_arrivals: rate outside [0, rate_max={lam_max:g}/s] "
                         f"(max {np.max(lam):g}/s); pass a larger rate_max")
    keep = rng.uniform(0.0, 1.0, n) * lam_max < lam
    t = t[keep]
    return pd.DataFrame({
        "arrival": t,
        "prompt_tokens": sample_tokens(prompt, t.size, rng),
        "output_tokens": sample_tokens(output, t.size, rng),
    }, columns=list(REQUEST_COLUMNS))
