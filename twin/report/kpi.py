"""Power-quality and workload KPIs as pure functions of arrays."""

from __future__ import annotations

import numpy as np

#: Units of KPIs by name suffix (UDUNITS), longest match first (``_per_J`` before ``_J``).
KPI_UNITS = (("_W_per_s", "W s-1"), ("_per_J", "J-1"), ("_L_per_kWh", "L kWh-1"), ("_J", "J"), ("_W", "W"),
             ("_degC", "degC"), ("_s", "s"), ("_seconds", "s"), ("_hours", "h"), ("_m3", "m3"))


def kpi_units(name: str) -> str:
    """UDUNITS label of a KPI from its name (``_J`` → J, ``_W`` → W, …; ``1`` otherwise)."""
    for suffix, units in KPI_UNITS:
        if name.endswith(suffix):
            return units
    return "1"


def kpi_label(name: str) -> str:
    """A KPI's name without its unit suffix, for tables whose values carry their unit
    (``energy_it_J`` → ``energy_it``, shown as "1.23 kWh")."""
    for suffix, _ in KPI_UNITS:
        if name.endswith(suffix) and suffix not in ("_seconds", "_hours"):
            return name[: -len(suffix)]
    return name


def peak_to_average(power) -> float:
    """Peak over mean of a power series [1]."""
    power = np.asarray(power, dtype=float)
    mean = power.mean() if power.size else np.nan
    return float(power.max() / mean) if power.size and mean > 0 else float("nan")


def largest_ramp(power, dt: float) -> float:
    """Largest change between consecutive samples per second [W/s].

    Parameters
    ----------
    power : ndarray
        Power series at a fixed interval [W].
    dt : float
        Sample interval [s].
    """
    power = np.asarray(power, dtype=float)
    return float(np.abs(np.diff(power)).max() / dt) if power.size > 1 else 0.0


def hottest_index(peak) -> int:
    """Index of the device named hottest from per-device peak temperatures [degC] (NaN for a
    device without the node, or not a candidate): the first within a microkelvin of the maximum.
    Identical devices tie to round-off, which differs between BLAS and numpy builds and between
    the numpy and compiled kernels, so the name is reproducible. The run summary and the run's
    warnings both name devices by it."""
    peak = np.asarray(peak, dtype=float)
    return int(np.flatnonzero(peak >= np.nanmax(peak) - 1e-6)[0])


#: RMS fluctuation relative to the mean below which a power series counts as steady [1]: far
#: above double-precision round-off of sums of ~1e3-1e6 terms (~1e-13), far below any load swing.
STEADY_RELATIVE_RMS = 1e-9

#: Fewest samples of a power series with a band share (shorter series have none: the KPI is left
#: out rather than NaN, so a short sweep variant is not an error).
BAND_MIN_SAMPLES = 4


def band_energy_share(power, dt: float, f_low: float = 0.1, f_high: float = 20.0) -> float:
    """Share of a power series' fluctuation energy in a frequency band [1].

    Parameters
    ----------
    power : ndarray
        Power series at a fixed interval [W].
    dt : float
        Sample interval [s]; only frequencies up to the Nyquist frequency 1/(2·dt) are seen.
    f_low, f_high : float
        Band edges [Hz]; 0.1–20 Hz is the band of concern for synchronous training loads
        (Choukse et al. 2025, arXiv 2508.14318).

    Notes
    -----
    share = Σ_{f_low ≤ f ≤ f_high} |X(f)|² / Σ_{f > 0} |X(f)|² with X the real FFT of the
    mean-removed series (Parseval: the one-sided power spectrum). A series whose RMS fluctuation
    is at most :data:`STEADY_RELATIVE_RMS` of its mean is steady and has share 0: its "spectrum"
    is floating-point round-off, which any change of summation order reshuffles.
    """
    x = np.asarray(power, dtype=float)
    if x.size < BAND_MIN_SAMPLES:
        return float("nan")
    dev = x - x.mean()
    if np.sqrt(np.mean(dev * dev)) <= STEADY_RELATIVE_RMS * abs(x.mean()):
        return 0.0  # steady: the spectrum of round-off is not a share of anything
    spec = np.abs(np.fft.rfft(dev)) ** 2
    freqs = np.fft.rfftfreq(x.size, d=dt)
    total = spec[1:].sum()
    if total == 0:
        return 0.0
    band = (freqs >= f_low) & (freqs <= f_high)
    return float(spec[band].sum() / total)


def job_kpis(name, device_energy, progress, tokens, facility_per_device_joule, price=None) -> dict:
    """Energy KPIs of one job.

    Parameters
    ----------
    device_energy : float
        Device energy attributed to the job [J].
    progress : float
        Iterations completed [1].
    tokens : float
        Tokens processed [1].
    facility_per_device_joule : float
        Facility energy per joule of device energy over the run [1] (shelf losses, board
        overhead, fans, cooling), used to attribute facility energy in proportion.
    price : float, optional
        Electricity price [1/J] (currency per joule).
    """
    energy = device_energy * facility_per_device_joule
    out = {
        f"job_{name}_energy_J": energy,
        f"job_{name}_iterations": progress,
        f"job_{name}_tokens": tokens,
        f"job_{name}_energy_per_iteration_J": energy / progress if progress > 0 else float("nan"),
        f"job_{name}_energy_per_token_J": energy / tokens if tokens > 0 else float("nan"),
        f"job_{name}_tokens_per_J": tokens / energy if energy > 0 else float("nan"),
    }
    if price is not None and tokens > 0:
        out[f"job_{name}_cost_per_million_tokens"] = price * energy / tokens * 1e6
    return out


#: Facility overheads of a PUE breakdown: recorded facility variable → what it is.
OVERHEADS = {
    "p_cdu_pumps": "CDU secondary pumps",
    "p_facility_pumps": "facility- and chilled-water pumps",
    "p_heat_rejection_fans": "dry-cooler / tower fans",
    "p_chiller": "chiller compressors",
    "p_crah": "CRAH fans",
    "p_busway_loss": "busway",
    "p_ups_loss": "UPS",
    "p_transformer_loss": "transformers",
    "p_electrical_room_cooling": "electrical-room cooling",
    "p_misc": "miscellaneous (lighting, controls)",
}


def overhead_breakdown(facility) -> dict[str, float]:
    """Each facility overhead's energy as a share of IT energy [1], and the PUE.

    Parameters
    ----------
    facility : xarray.Dataset
        The run's ``facility`` group (interval means at a fixed interval).

    Returns
    -------
    dict
        Variable name → Σ overhead / Σ p_it for each of :data:`OVERHEADS` present, and ``pue``
        = Σ p_facility / Σ p_it. The shares add up to PUE − 1 exactly when the facility power is
        the sum of IT and these parts.
    """
    e_it = float(facility["p_it"].sum())
    out = {k: float(facility[k].sum()) / e_it for k in OVERHEADS if k in facility}
    out["pue"] = float(facility["p_facility"].sum()) / e_it
    return out


def overhead_table(facility) -> str:
    """Markdown table of :func:`overhead_breakdown` (each overhead as % of IT energy)."""
    b = overhead_breakdown(facility)
    lines = ["| overhead | % of IT energy |", "| --- | --- |"]
    for k, label in OVERHEADS.items():
        if k in b:
            lines.append(f"| {label} | {100 * b[k]:.2f} |")
    lines.append(f"| **PUE** | **{b['pue']:.3f}** |")
    return "\n".join(lines)
