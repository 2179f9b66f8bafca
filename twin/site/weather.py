"""Outdoor weather: EPW files, psychrometrics, ASHRAE design days, and a time-interpolated source.

Conventions
-----------
*Typical year.* An EPW typical-year (TMY) file stitches months from different years, so its rows
are mapped onto one fixed non-leap year of 8,760 hours. EPW hour ``h`` (1–24) is the hour ending
at ``h``:00 local standard time, and its temperatures are taken as the values *at* that instant
(as EnergyPlus does when it interpolates between hours). Row ``k`` (0-based) therefore sits at
typical-year time ``(k + 1) · 3600`` s, from 3,600 s (1 January 01:00) to 31,536,000 s (the next
1 January 00:00, which wraps round to 0). A 29 February row (an actual-year file) is dropped.

*Units.* Temperatures in degC, relative humidity as a fraction 0..1, pressure in Pa, time in s.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from twin.scenario.errors import FieldError

if TYPE_CHECKING:
    import pandas as pd

#: Folder of the bundled EPW files (see README.md there for their source and licence).
WEATHER_DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "weather"

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0
HOURS_PER_YEAR = 8760
SECONDS_PER_YEAR = HOURS_PER_YEAR * SECONDS_PER_HOUR
#: Days per month of the fixed non-leap typical year.
DAYS_PER_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
#: Percent → fraction.
PERCENT = 0.01
#: Standard sea-level pressure [Pa].
P_STANDARD = 101325.0
#: 0 degC in kelvin.
ZERO_CELSIUS = 273.15
#: Ratio of the molar masses of water and dry air, M_w / M_da [1] (ASHRAE Fundamentals ch. 1).
MOLAR_MASS_RATIO = 0.621945

#: EPW data fields read, in file order, with their position in a data row (EnergyPlus Auxiliary
#: Programs, "EnergyPlus Weather File (EPW) Data Dictionary").
EPW_FIELDS = {
    "Year": 0,
    "Month": 1,
    "Day": 2,
    "Hour": 3,
    "Dry Bulb Temperature": 6,
    "Dew Point Temperature": 7,
    "Relative Humidity": 8,
    "Atmospheric Station Pressure": 9,
}
#: The one translation of EPW names to twin names.
EPW_VARIABLE_MAP = {
    "Dry Bulb Temperature": "t_dry_bulb",
    "Dew Point Temperature": "t_dew_point",
    "Relative Humidity": "rh",
    "Atmospheric Station Pressure": "pressure",
}
#: EPW unit → twin unit factor (EPW gives RH in percent; the others are already degC / Pa).
_EPW_SCALE = {"rh": PERCENT}
#: EPW "missing" codes: a value at or above the code is missing (EPW data dictionary).
_EPW_MISSING = {"t_dry_bulb": 99.9, "t_dew_point": 99.9, "rh": 999.0, "pressure": 999999.0}

#: Plausible outdoor air temperatures [degC]: the recorded extremes are −89.2 °C (Vostok, 1983)
#: and 56.7 °C (Death Valley, 1913; WMO archive of weather and climate extremes). A weather file
#: outside this range is in other units (kelvin, °F), not a climate.
T_OUTDOOR_RANGE = (-90.0, 60.0)
#: Plausible barometric pressure [Pa]: from the summit of Everest (~33 kPa) to the highest
#: sea-level reading (~108.4 kPa); a file outside it is in hPa, kPa or inHg, not Pa.
PRESSURE_RANGE = (30e3, 110e3)
#: Lengths of a year that make a regular CSV series a typical year that wraps round [s].
YEAR_LENGTHS = (365 * SECONDS_PER_DAY, 366 * SECONDS_PER_DAY)

#: ASHRAE fraction of the daily dry-bulb range below the daily maximum, for hours 1..24 of the
#: day (ASHRAE Fundamentals 2009–2021 ch. 14, Table 6; the default profile of EnergyPlus).
DAILY_RANGE_FRACTION = np.array([
    0.88, 0.92, 0.95, 0.98, 1.00, 0.98, 0.91, 0.74, 0.55, 0.38, 0.23, 0.13,
    0.05, 0.00, 0.00, 0.06, 0.14, 0.24, 0.39, 0.50, 0.59, 0.68, 0.75, 0.82,
])  # fmt: skip


def _seconds_text(seconds: float) -> str:
    """``3,600 s`` → ``1 h``; ``2,592,000 s`` → ``30 d`` (for messages)."""
    for unit, size in (("d", SECONDS_PER_DAY), ("h", SECONDS_PER_HOUR), ("min", 60.0)):
        if seconds >= size and abs(seconds / size - round(seconds / size)) < 1e-9:
            return f"{seconds / size:,.0f} {unit}"
    return f"{seconds:,.6g} s"


# --------------------------------------------------------------------------------------------
# Psychrometrics
# --------------------------------------------------------------------------------------------
def saturation_vapour_pressure(t):
    """Saturation pressure of water vapour, over liquid water (t ≥ 0) or ice (t < 0).

    Parameters
    ----------
    t : array_like
        Temperature [degC], valid −100..200 degC.

    Returns
    -------
    ndarray
        Saturation vapour pressure p_ws [Pa].

    Notes
    -----
    Hyland and Wexler (1983), as given in ASHRAE Fundamentals ch. 1, with T in kelvin:

    over ice (−100..0 degC):
        ln p_ws = C1/T + C2 + C3·T + C4·T² + C5·T³ + C6·T⁴ + C7·ln T
    over liquid water (0..200 degC):
        ln p_ws = C8/T + C9 + C10·T + C11·T² + C12·T³ + C13·ln T

    References
    ----------
    .. [1] ASHRAE Handbook — Fundamentals (2017), ch. 1 "Psychrometrics", eqs. (5) and (6).
    .. [2] R. W. Hyland and A. Wexler, "Formulations for the thermodynamic properties of the
       saturated phases of H2O from 173.15 K to 473.15 K", ASHRAE Trans. 89(2A), 1983.
    """
    t = np.asarray(t, dtype=float)
    tk = t + ZERO_CELSIUS
    ln_ice = (
        -5.6745359e3 / tk + 6.3925247 - 9.6778430e-3 * tk + 6.2215701e-7 * tk**2
        + 2.0747825e-9 * tk**3 - 9.4840240e-13 * tk**4 + 4.1635019 * np.log(tk)
    )
    ln_water = (
        -5.8002206e3 / tk + 1.3914993 - 4.8640239e-2 * tk + 4.1764768e-5 * tk**2
        - 1.4452093e-8 * tk**3 + 6.5459673 * np.log(tk)
    )
    return np.exp(np.where(t < 0.0, ln_ice, ln_water))


def standard_pressure(elevation):
    """Standard-atmosphere barometric pressure at an elevation.

    Parameters
    ----------
    elevation : array_like
        Height above sea level [m].

    Returns
    -------
    ndarray
        Pressure [Pa].

    Notes
    -----
    p = 101 325 · (1 − 2.25577·10⁻⁵ · Z)^5.2559. ASHRAE's climatic tables (and so the EPW
    design-condition line) give humidity values at this station pressure.

    References
    ----------
    .. [1] ASHRAE Handbook — Fundamentals (2017), ch. 1, eq. (3).
    """
    z = np.asarray(elevation, dtype=float)
    return P_STANDARD * (1.0 - 2.25577e-5 * z) ** 5.2559


def _humidity_ratio_from_vapour_pressure(p_w, pressure):
    """W = 0.621945 · p_w / (p − p_w) [kg/kg dry air] (ASHRAE Fundamentals ch. 1, eq. 20)."""
    return MOLAR_MASS_RATIO * p_w / (pressure - p_w)


def humidity_ratio(t_dry_bulb, t_wet_bulb, pressure=P_STANDARD):
    """Humidity ratio of moist air from dry-bulb and thermodynamic wet-bulb temperatures.

    Parameters
    ----------
    t_dry_bulb : array_like
        Dry-bulb temperature [degC].
    t_wet_bulb : array_like
        Thermodynamic wet-bulb temperature [degC].
    pressure : array_like, optional
        Barometric pressure [Pa].

    Returns
    -------
    ndarray
        Humidity ratio W [kg water / kg dry air].

    Notes
    -----
    The psychrometric equation, with W*_s the saturation humidity ratio at the wet-bulb
    temperature t* (kJ/kg constants, temperatures in degC):

    t* ≥ 0:  W = ((2501 − 2.326 t*) W*_s − 1.006 (t − t*)) / (2501 + 1.86 t − 4.186 t*)
    t* < 0:  W = ((2830 − 0.24 t*) W*_s − 1.006 (t − t*)) / (2830 + 1.86 t − 2.1 t*)

    References
    ----------
    .. [1] ASHRAE Handbook — Fundamentals (2017), ch. 1, eqs. (33) and (35).
    """
    t = np.asarray(t_dry_bulb, dtype=float)
    ts = np.asarray(t_wet_bulb, dtype=float)
    ws = _humidity_ratio_from_vapour_pressure(saturation_vapour_pressure(ts), pressure)
    above = ((2501.0 - 2.326 * ts) * ws - 1.006 * (t - ts)) / (2501.0 + 1.86 * t - 4.186 * ts)
    below = ((2830.0 - 0.24 * ts) * ws - 1.006 * (t - ts)) / (2830.0 + 1.86 * t - 2.1 * ts)
    return np.where(ts >= 0.0, above, below)


#: Lower end of the wet-bulb search bracket [degC] (bottom of the Hyland–Wexler range).
_T_WET_BULB_MIN = -100.0
#: Bisection stops when the bracket is this narrow [K].
_WET_BULB_TOLERANCE = 1e-9


def _wet_bulb_from_humidity_ratio(t, w, pressure):
    """Solve the psychrometric equation for t* by vectorised bisection (see :func:`wet_bulb`)."""
    t, w, pressure = np.broadcast_arrays(
        np.asarray(t, dtype=float), np.asarray(w, dtype=float), np.asarray(pressure, dtype=float)
    )
    lo = np.full(t.shape, _T_WET_BULB_MIN)
    hi = t.copy()
    # W_psy(t*) rises monotonically with t*; W_psy(−100 degC) < 0 ≤ W ≤ W_psy(t) = W_s(t).
    # 40 halvings take a 150 K bracket below 1e-10 K; the loop stops earlier when it can.
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        too_low = humidity_ratio(t, mid, pressure) < w
        lo = np.where(too_low, mid, lo)
        hi = np.where(too_low, hi, mid)
        if np.all(hi - lo < _WET_BULB_TOLERANCE):
            break
    return 0.5 * (lo + hi)


def wet_bulb(t_dry_bulb, rh=None, t_dew_point=None, pressure=P_STANDARD):
    """Thermodynamic (psychrometric) wet-bulb temperature.

    Give exactly one of ``rh`` and ``t_dew_point``.

    Parameters
    ----------
    t_dry_bulb : array_like
        Dry-bulb temperature [degC].
    rh : array_like, optional
        Relative humidity, a fraction 0..1 [1] (over water at t ≥ 0, over ice below).
    t_dew_point : array_like, optional
        Dew-point temperature [degC] (frost point below 0 degC, the ASHRAE convention).
    pressure : array_like, optional
        Barometric pressure [Pa]; 101 325 Pa (sea level) by default.

    Returns
    -------
    ndarray
        Wet-bulb temperature t* [degC], t_dew_point ≤ t* ≤ t_dry_bulb.

    Raises
    ------
    ValueError
        Neither or both of ``rh`` and ``t_dew_point`` given, or ``rh`` outside 0..1.

    Notes
    -----
    The vapour pressure is p_w = rh · p_ws(t) or p_w = p_ws(t_dew_point), with p_ws from
    Hyland–Wexler (:func:`saturation_vapour_pressure`); a dew point above the dry-bulb is taken
    as saturation. The humidity ratio is W = 0.621945 · p_w / (p − p_w), and t* is the root of
    the psychrometric equation W_psy(t, t*, p) = W (:func:`humidity_ratio`), found by bisection
    on [−100 degC, t] to 10⁻⁹ K (W_psy rises monotonically with t*). Where t* crosses 0 degC the
    equation switches from the water to the ice form, as in ASHRAE; there t* can sit at 0 degC
    for a small range of humidity.

    References
    ----------
    .. [1] ASHRAE Handbook — Fundamentals (2017), ch. 1 "Psychrometrics", eqs. (5), (6), (20),
       (33), (35).
    """
    if (rh is None) == (t_dew_point is None):
        raise ValueError("wet_bulb: give exactly one of rh (fraction 0..1) and t_dew_point (degC)")
    t = np.asarray(t_dry_bulb, dtype=float)
    p_ws = saturation_vapour_pressure(t)
    if rh is not None:
        rh = np.asarray(rh, dtype=float)
        if np.any((rh < 0.0) | (rh > 1.0)):
            raise ValueError(
                f"wet_bulb: rh is a fraction 0..1, got values from {np.min(rh)} to {np.max(rh)}"
            )
        p_w = rh * p_ws
    else:
        p_w = np.minimum(saturation_vapour_pressure(t_dew_point), p_ws)
    w = _humidity_ratio_from_vapour_pressure(p_w, pressure)
    return _wet_bulb_from_humidity_ratio(t, w, pressure)


def wet_bulb_stull(t_dry_bulb, rh):
    """Wet-bulb temperature at sea level by Stull's (2011) closed-form fit.

    Parameters
    ----------
    t_dry_bulb : array_like
        Dry-bulb temperature [degC]; fitted for −20..50 degC.
    rh : array_like
        Relative humidity, a fraction [1]; fitted for 0.05..0.99.

    Returns
    -------
    ndarray
        Wet-bulb temperature [degC], for 101.325 kPa.

    Warns
    -----
    RuntimeWarning
        Inputs outside the fitted range.

    Notes
    -----
    With RH in percent:

    T_w = T·atan(0.151977·(RH + 8.313659)^½) + atan(T + RH) − atan(RH − 1.676331)
          + 0.00391838·RH^{3/2}·atan(0.023101·RH) − 4.686035

    Stull reports errors of −1 to +0.65 K over the fitted range, with the larger errors at low
    humidity and low temperature. Used here as an independent cross-check of :func:`wet_bulb`.

    References
    ----------
    .. [1] R. Stull, "Wet-Bulb Temperature from Relative Humidity and Air Temperature",
       J. Appl. Meteor. Climatol. 50, 2267–2269, 2011. doi:10.1175/JAMC-D-11-0143.1
    """
    t = np.asarray(t_dry_bulb, dtype=float)
    rh_pct = np.asarray(rh, dtype=float) / PERCENT
    if np.any((t < -20.0) | (t > 50.0) | (rh_pct < 5.0) | (rh_pct > 99.0)):
        warnings.warn(
            "wet_bulb_stull: inputs outside the fitted range (-20..50 degC, rh 0.05..0.99); "
            "errors may exceed 1 K",
            RuntimeWarning,
            stacklevel=2,
        )
    return (
        t * np.arctan(0.151977 * np.sqrt(rh_pct + 8.313659))
        + np.arctan(t + rh_pct)
        - np.arctan(rh_pct - 1.676331)
        + 0.00391838 * rh_pct**1.5 * np.arctan(0.023101 * rh_pct)
        - 4.686035
    )


# --------------------------------------------------------------------------------------------
# EPW files
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DesignConditions:
    """ASHRAE climatic design conditions from an EPW ``DESIGN CONDITIONS`` line.

    Attributes
    ----------
    source : str
        The edition, e.g. "2021 ASHRAE Handbook -- Fundamentals - Chapter 14 ...".
    hottest_month : int
        Month with the highest mean dry-bulb temperature (1..12).
    daily_range : float
        Mean daily dry-bulb range of the hottest month [K].
    cooling : dict
        Annual percentile ("0.4", "1", "2") → (dry-bulb, mean coincident wet-bulb) [degC].
    evaporation : dict
        Annual percentile ("0.4", "1", "2") → (wet-bulb, mean coincident dry-bulb) [degC].
    """

    source: str
    hottest_month: int
    daily_range: float
    cooling: dict[str, tuple[float, float]] = field(default_factory=dict)
    evaporation: dict[str, tuple[float, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class EpwHeader:
    """Location and design conditions from the header of an EPW file.

    Attributes
    ----------
    city, state, country : str
        As written in the ``LOCATION`` line.
    wmo : str
        WMO station number.
    latitude, longitude : float
        [degree] north and east positive.
    timezone : float
        Offset of local standard time from UTC [h].
    elevation : float
        [m] above sea level.
    design : DesignConditions or None
        None when the file carries no design conditions.
    """

    city: str
    state: str
    country: str
    wmo: str
    latitude: float
    longitude: float
    timezone: float
    elevation: float
    design: DesignConditions | None


#: Layout of the "Cooling" block of the DESIGN CONDITIONS line (ASHRAE 2009–2021 editions):
#: offset after the word "Cooling" → meaning. Only the fields used are named.
_COOLING_FIELDS = {
    "hottest_month": 0,
    "daily_range": 1,
    "cooling": {"0.4": (2, 3), "1": (4, 5), "2": (6, 7)},
    "evaporation": {"0.4": (8, 9), "1": (10, 11), "2": (12, 13)},
}
_COOLING_BLOCK_LENGTH = 14


def _parse_location(path, line) -> dict:
    f = [s.strip() for s in line.split(",")]
    if f[0].upper() != "LOCATION" or len(f) < 10:
        raise ValueError(
            f"{path}:1: not an EPW file: expected 'LOCATION,city,state,country,source,WMO,"
            f"latitude,longitude,timezone,elevation', got {line[:60]!r}"
        )
    try:
        numbers = [float(x) for x in f[6:10]]
    except ValueError:
        raise ValueError(
            f"{path}:1: LOCATION latitude, longitude, timezone, elevation must be numbers, "
            f"got {f[6:10]}"
        ) from None
    return dict(city=f[1], state=f[2], country=f[3], wmo=f[5], latitude=numbers[0],
                longitude=numbers[1], timezone=numbers[2], elevation=numbers[3])


def _parse_design(path, line) -> DesignConditions | None:
    f = [s.strip() for s in line.split(",")]
    if f[0].upper() != "DESIGN CONDITIONS":
        raise ValueError(f"{path}:2: expected the 'DESIGN CONDITIONS' line, got {line[:60]!r}")
    if len(f) < 2 or f[1] in ("", "0") or "Cooling" not in f:
        return None
    i = f.index("Cooling") + 1
    block = f[i : i + _COOLING_BLOCK_LENGTH]
    try:
        values = [float(x) for x in block]
        if len(values) < _COOLING_BLOCK_LENGTH:
            raise ValueError
    except ValueError:
        raise ValueError(
            f"{path}:2: DESIGN CONDITIONS 'Cooling' block: expected {_COOLING_BLOCK_LENGTH} "
            f"numbers (hottest month, daily range, DB/MCWB 0.4 1 2 %, WB/MCDB 0.4 1 2 %), "
            f"got {block}"
        ) from None
    cf = _COOLING_FIELDS
    return DesignConditions(
        source=f[2] if len(f) > 2 else "",
        hottest_month=int(values[cf["hottest_month"]]),
        daily_range=values[cf["daily_range"]],
        cooling={k: (values[a], values[b]) for k, (a, b) in cf["cooling"].items()},
        evaporation={k: (values[a], values[b]) for k, (a, b) in cf["evaporation"].items()},
    )


def _read_lines(path) -> list[str]:
    try:
        with open(path, encoding="latin-1") as fh:  # EPW headers are not always UTF-8
            return fh.read().splitlines()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read EPW file ({exc.strerror})") from None


_HEADER_LINES = 8


def _parse_header(path, lines) -> EpwHeader:
    if len(lines) < _HEADER_LINES:
        raise ValueError(f"{path}:{len(lines)}: EPW file ends inside its 8-line header")
    location = _parse_location(path, lines[0])
    design = _parse_design(path, lines[1])
    periods = [s.strip() for s in lines[7].split(",")]
    if periods[0].upper() != "DATA PERIODS":
        raise ValueError(f"{path}:8: expected the 'DATA PERIODS' line, got {lines[7][:60]!r}")
    if len(periods) > 2 and periods[2] not in ("1", ""):
        raise ValueError(
            f"{path}:8: {periods[2]} records per hour; only hourly EPW files (1) are supported"
        )
    return EpwHeader(**location, design=design)


def read_epw_header(path) -> EpwHeader:
    """Read the location and ASHRAE design conditions from an EPW header.

    Parameters
    ----------
    path : str or Path
        EPW file.

    Returns
    -------
    EpwHeader

    Raises
    ------
    ValueError
        Unreadable or malformed header; the message names the file and line.
    """
    return _parse_header(path, _read_lines(path)[:_HEADER_LINES])


def _typical_year_calendar() -> np.ndarray:
    """(month, day, hour 1..24) of each of the 8,760 hours of the non-leap typical year."""
    month = np.repeat(np.arange(1, 13), np.array(DAYS_PER_MONTH) * 24)
    day = np.concatenate([np.repeat(np.arange(1, n + 1), 24) for n in DAYS_PER_MONTH])
    hour = np.tile(np.arange(1, 25), sum(DAYS_PER_MONTH))
    return np.stack([month, day, hour], axis=1)


def read_epw(path) -> pd.DataFrame:
    """Read an hourly EPW weather file onto the typical-year time axis.

    Parameters
    ----------
    path : str or Path
        EPW file (8 header lines, then 8,760 hourly rows; an 8,784-row leap-year file has its
        29 February dropped).

    Returns
    -------
    pandas.DataFrame
        8,760 rows indexed by ``time`` [s], the end of each EPW hour in the typical year
        (3,600 … 31,536,000; see the module docstring), with columns ``month``, ``day``,
        ``hour`` (EPW 1..24), ``t_dry_bulb`` [degC], ``t_dew_point`` [degC], ``rh`` [1],
        ``pressure`` [Pa] and ``t_wet_bulb`` [degC] (from dry-bulb, dew point and station
        pressure by :func:`wet_bulb`). ``attrs["header"]`` holds the :class:`EpwHeader`.

    Raises
    ------
    ValueError
        Malformed header, a non-numeric or missing value (EPW missing codes), rows out of
        hourly order or not 8,760 of them; the message names the file and line.

    References
    ----------
    .. [1] U.S. DOE, EnergyPlus Auxiliary Programs, "EnergyPlus Weather File (EPW) Data
       Dictionary".
    """
    import pandas as pd  # on first use: the step path does not need it

    lines = _read_lines(path)
    header = _parse_header(path, lines)
    calendar = _typical_year_calendar()
    value_fields = list(EPW_VARIABLE_MAP)
    n_fields = max(EPW_FIELDS.values()) + 1
    stamps = np.empty((HOURS_PER_YEAR, 3), dtype=int)
    values = np.empty((HOURS_PER_YEAR, len(value_fields)))
    k = 0
    lineno = _HEADER_LINES
    for lineno, line in enumerate(lines[_HEADER_LINES:], start=_HEADER_LINES + 1):
        if not line.strip():
            continue
        f = line.split(",")
        if len(f) < n_fields:
            raise ValueError(f"{path}:{lineno}: expected at least {n_fields} fields, got {len(f)}")
        try:
            stamp = [int(f[EPW_FIELDS[name]]) for name in ("Month", "Day", "Hour")]
        except ValueError:
            raise ValueError(
                f"{path}:{lineno}: month, day and hour must be integers, got {f[1:4]}"
            ) from None
        if stamp[0] == 2 and stamp[1] == 29:
            continue  # leap day: the typical year has none
        if k >= HOURS_PER_YEAR:
            raise ValueError(f"{path}:{lineno}: more than {HOURS_PER_YEAR} hourly rows")
        if tuple(stamp) != tuple(calendar[k]):
            m, d, h = calendar[k]
            raise ValueError(
                f"{path}:{lineno}: expected month {m} day {d} hour {h} (rows run hourly from "
                f"1/1 hour 1 to 12/31 hour 24), got month {stamp[0]} day {stamp[1]} hour {stamp[2]}"
            )
        for j, name in enumerate(value_fields):
            text = f[EPW_FIELDS[name]]
            try:
                v = float(text)
            except ValueError:
                raise ValueError(f"{path}:{lineno}: {name} is not a number: {text!r}") from None
            if v >= _EPW_MISSING[EPW_VARIABLE_MAP[name]]:
                raise ValueError(f"{path}:{lineno}: {name} is missing (EPW code {text})")
            values[k, j] = v
        stamps[k] = stamp
        k += 1
    if k < HOURS_PER_YEAR:
        raise ValueError(f"{path}:{lineno}: only {k} hourly rows, expected {HOURS_PER_YEAR}")

    data = pd.DataFrame(values, columns=[EPW_VARIABLE_MAP[n] for n in value_fields])
    for name, factor in _EPW_SCALE.items():
        data[name] = data[name] * factor
    data.insert(0, "month", stamps[:, 0])
    data.insert(1, "day", stamps[:, 1])
    data.insert(2, "hour", stamps[:, 2])
    data["t_wet_bulb"] = wet_bulb(
        data["t_dry_bulb"].to_numpy(),
        t_dew_point=data["t_dew_point"].to_numpy(),
        pressure=data["pressure"].to_numpy(),
    )
    data.index = pd.Index(np.arange(1, HOURS_PER_YEAR + 1) * SECONDS_PER_HOUR, name="time")
    data.attrs["header"] = header
    return data


def bundled_epw(name: str) -> Path:
    """Path of a bundled EPW file by name or unique part of it (e.g. ``"Leesburg"``).

    Parameters
    ----------
    name : str
        File name, or a case-insensitive part of it.

    Returns
    -------
    Path

    Raises
    ------
    ValueError
        No bundled file, or more than one, matches.
    """
    files = sorted(WEATHER_DATA_DIR.glob("*.epw"))
    matches = [p for p in files if name.lower() in p.name.lower()]
    if len(matches) != 1:
        known = ", ".join(p.name for p in files)
        what = "no" if not matches else "more than one"
        raise ValueError(f"weather {name!r}: {what} bundled EPW file matches (known: {known})")
    return matches[0]


# --------------------------------------------------------------------------------------------
# Design days
# --------------------------------------------------------------------------------------------
#: Design-day kind → (DesignConditions attribute, whether the first value is the dry-bulb).
DESIGN_DAY_KINDS = {
    "cooling": ("cooling", True),  # dry-bulb design with mean coincident wet-bulb
    "evaporation": ("evaporation", False),  # wet-bulb design with mean coincident dry-bulb
}


def design_day(header: EpwHeader, kind: str = "cooling_0.4") -> pd.DataFrame:
    """Hourly 24 h dry-bulb and wet-bulb profile of an ASHRAE design day.

    Parameters
    ----------
    header : EpwHeader
        From :func:`read_epw_header` (needs its design conditions and elevation).
    kind : str
        ``"cooling_<p>"`` (dry-bulb design value with its mean coincident wet-bulb) or
        ``"evaporation_<p>"`` (wet-bulb design value with its mean coincident dry-bulb), with
        the annual percentile p in 0.4, 1, 2.

    Returns
    -------
    pandas.DataFrame
        24 rows indexed by ``time`` [s] = hour · 3600 (3,600 … 86,400; 86,400 ≡ midnight),
        columns ``hour`` (1..24), ``t_dry_bulb`` [degC], ``t_wet_bulb`` [degC].

    Raises
    ------
    ValueError
        Unknown kind, or a header without design conditions.

    Notes
    -----
    Dry-bulb: t(h) = t_max − f(h) · DR, with t_max the design (or mean coincident) dry-bulb,
    DR the mean daily range of the hottest month and f(h) the ASHRAE fraction of daily range
    (:data:`DAILY_RANGE_FRACTION`): minimum at 05:00, maximum at 14:00–15:00 local time, not
    shifted for solar time (as in EnergyPlus).

    Wet-bulb: the EPW header does not carry ASHRAE's mean coincident wet-bulb daily range, so
    the humidity ratio is held constant through the day at its value at the peak (from the
    design dry-bulb and coincident wet-bulb at the standard station pressure,
    :func:`standard_pressure`), and t*(h) follows from t(h) and that humidity ratio
    (EnergyPlus does the same when it is given no wet-bulb range). Where t(h) would fall
    below the dew point the air is saturated and t* = t(h). The peak hour reproduces the
    design pair exactly.

    References
    ----------
    .. [1] ASHRAE Handbook — Fundamentals (2021), ch. 14 "Climatic Design Information",
       "Generating design-day data" and Table 6 (fraction of daily temperature range).
    .. [2] U.S. DOE, EnergyPlus Engineering Reference, "Climate Calculations: EnergyPlus Design
       Day Temperature Calculations".
    """
    import pandas as pd  # on first use: the step path does not need it

    section, percentile = _parse_design_day_kind(kind)
    if header.design is None:
        raise ValueError(f"design_day {kind!r}: the weather file carries no DESIGN CONDITIONS")
    attr, dry_first = DESIGN_DAY_KINDS[section]
    a, b = getattr(header.design, attr)[percentile]
    t_peak, t_wb_peak = (a, b) if dry_first else (b, a)
    pressure = float(standard_pressure(header.elevation))
    w = humidity_ratio(t_peak, t_wb_peak, pressure)
    t_db = t_peak - DAILY_RANGE_FRACTION * header.design.daily_range
    # Saturated where t_db is below the dew point: W cannot exceed W_s(t_db).
    w_hour = np.minimum(w, _humidity_ratio_from_vapour_pressure(
        saturation_vapour_pressure(t_db), pressure))
    t_wb = _wet_bulb_from_humidity_ratio(t_db, w_hour, pressure)
    hours = np.arange(1, 25)
    return pd.DataFrame(
        {"hour": hours, "t_dry_bulb": t_db, "t_wet_bulb": t_wb},
        index=pd.Index(hours * SECONDS_PER_HOUR, name="time"),
    )


def _parse_design_day_kind(kind: str) -> tuple[str, str]:
    known = [f"{s}_{p}" for s in DESIGN_DAY_KINDS for p in ("0.4", "1", "2")]
    section, _, pct = str(kind).partition("_")
    try:
        percentile = f"{float(pct):g}"
    except ValueError:
        percentile = ""
    if section not in DESIGN_DAY_KINDS or percentile not in ("0.4", "1", "2"):
        raise ValueError(f"design_day: unknown kind {kind!r} (known: {', '.join(known)})")
    return section, percentile


# --------------------------------------------------------------------------------------------
# Weather at simulation times
# --------------------------------------------------------------------------------------------
class Weather:
    """Outdoor dry-bulb and wet-bulb at arbitrary simulation times, by linear interpolation.

    Build one with :meth:`constant`, :meth:`from_epw`, :meth:`from_design_day` or
    :meth:`from_csv`; then ``weather.t_dry_bulb(time)`` takes a whole array of times [s] at once.

    Parameters
    ----------
    time : array_like
        Sample times [s], strictly increasing.
    t_dry_bulb, t_wet_bulb : array_like
        Samples [degC].
    period : float, optional
        Repeat period [s]: the series wraps round (``time`` must lie in [0, period]).
        Without it, asking for a time outside the samples is an error.
    offset : float, optional
        Series time at simulation time 0 [s] (a periodic series' start, e.g. a day of year).
    source : str, optional
        Where the data came from, for messages.
    hold : float, optional
        How long the last sample of a finite series holds after its time [s] (a CSV series of
        regular samples covers one sample step past its last row).
    """

    def __init__(self, time, t_dry_bulb, t_wet_bulb, period=None, offset=0.0, source="weather", hold=0.0):
        self.hold = float(hold)
        self.time = np.atleast_1d(np.asarray(time, dtype=float))
        self._t_dry_bulb = np.atleast_1d(np.asarray(t_dry_bulb, dtype=float))
        self._t_wet_bulb = np.atleast_1d(np.asarray(t_wet_bulb, dtype=float))
        self.period = None if period is None else float(period)
        self.offset = float(offset)
        self.source = source
        if not (self.time.shape == self._t_dry_bulb.shape == self._t_wet_bulb.shape):
            raise ValueError(f"{source}: time, t_dry_bulb and t_wet_bulb differ in length")
        if self.time.ndim != 1 or self.time.size == 0:
            raise ValueError(f"{source}: needs a 1-D series of at least one sample")
        if np.any(np.diff(self.time) <= 0):
            raise ValueError(f"{source}: sample times must be strictly increasing")
        if np.any(self._t_wet_bulb > self._t_dry_bulb + 1e-9):
            raise ValueError(f"{source}: wet-bulb above dry-bulb")

    @property
    def end(self) -> float:
        """Last simulation time the series covers [s] (inf for a periodic or constant series)."""
        if self.period is not None or self.time.size == 1:
            return np.inf
        return self.time[-1] + self.hold - self.offset

    def span_error(self, duration: float) -> str | None:
        """Why this weather cannot serve a run from 0 to ``duration`` [s], or None if it can.

        Checked when a simulation is built, so a file that ends too early is one line before the
        run starts, not an error at the step that runs past its end.
        """
        if self.period is not None or self.time.size == 1:
            return None
        start, end = self.time[0] - self.offset, self.end
        step = np.median(np.diff(self.time))
        what = (f"{self.time.size:,} samples every {_seconds_text(step)}" if np.allclose(np.diff(self.time), step)
                else f"{self.time.size:,} samples")
        if start > 0:
            return (f"{self.source}: the series starts at {_seconds_text(start)}, after the run's start "
                    f"(the first row is time 0 of the run)")
        if duration > end + 1e-6 * max(1.0, end):
            return (f"{self.source}: covers {_seconds_text(end)} ({what}; the last one holds for one "
                    f"step); the run needs {_seconds_text(duration)}: give a longer file (a whole year "
                    f"of regular samples wraps round) or a shorter run")
        return None

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def constant(cls, t_dry_bulb, t_wet_bulb=None, rh=None, pressure=P_STANDARD) -> Weather:
        """Constant conditions; the wet-bulb given directly or from ``rh`` (fraction 0..1).

        Parameters
        ----------
        t_dry_bulb : float
            Dry-bulb temperature [degC].
        t_wet_bulb : float, optional
            Wet-bulb temperature [degC].
        rh : float, optional
            Relative humidity [1], used when ``t_wet_bulb`` is not given.
        pressure : float, optional
            Barometric pressure for ``rh`` [Pa].
        """
        if t_wet_bulb is None:
            if rh is None:
                raise ValueError("Weather.constant: give t_wet_bulb or rh")
            t_wet_bulb = float(wet_bulb(t_dry_bulb, rh=rh, pressure=pressure))
        return cls([0.0], [t_dry_bulb], [t_wet_bulb], source="constant weather")

    @classmethod
    def from_epw(cls, path, start_day_of_year: float = 1.0) -> Weather:
        """Typical-year weather from an EPW file, repeating every 365 days.

        Parameters
        ----------
        path : str or Path
            EPW file (see :func:`read_epw`).
        start_day_of_year : float, optional
            Day of the typical (non-leap) year at simulation time 0 [day]: 1 = 1 January
            00:00, 196.5 = 15 July 12:00.
        """
        data = read_epw(path)
        return cls.from_frame(data, period=SECONDS_PER_YEAR,
                              offset=(start_day_of_year - 1.0) * SECONDS_PER_DAY,
                              source=str(path))

    @classmethod
    def from_design_day(cls, path_or_header, kind: str = "cooling_0.4") -> Weather:
        """An ASHRAE design day (see :func:`design_day`) repeating every 24 h from midnight.

        Parameters
        ----------
        path_or_header : str, Path or EpwHeader
            EPW file or its header.
        kind : str, optional
            Design-day kind, e.g. ``"cooling_0.4"``.
        """
        header = (path_or_header if isinstance(path_or_header, EpwHeader)
                  else read_epw_header(path_or_header))
        return cls.from_frame(design_day(header, kind), period=SECONDS_PER_DAY,
                              source=f"{header.city} design day {kind}")

    @classmethod
    def from_frame(cls, data: pd.DataFrame, period=None, offset=0.0, source="weather") -> Weather:
        """From a frame indexed by time [s] with ``t_dry_bulb`` and ``t_wet_bulb`` columns."""
        return cls(data.index.to_numpy(dtype=float), data["t_dry_bulb"].to_numpy(),
                   data["t_wet_bulb"].to_numpy(), period=period, offset=offset, source=source)

    @classmethod
    def from_csv(cls, path, pressure=P_STANDARD) -> Weather:
        """Weather from a CSV file.

        Parameters
        ----------
        path : str or Path
            CSV with a header row and columns ``time`` (seconds, or ISO 8601 timestamps:
            time 0 is then the first row), ``t_dry_bulb`` [degC], and one of ``t_wet_bulb``
            [degC], ``rh`` [fraction 0..1] or ``t_dew_point`` [degC]; optionally ``pressure``
            [Pa]. Rows in increasing time.
        pressure : float, optional
            Barometric pressure when the file has no ``pressure`` column [Pa].

        Raises
        ------
        ValueError
            Missing column, non-numeric value, rh outside 0..1, a temperature or pressure that
            cannot be degC or Pa (:data:`T_OUTDOOR_RANGE`, :data:`PRESSURE_RANGE`), times not
            increasing; the message names the file and line.

        Notes
        -----
        Span: the last row holds for one sample step, so an hourly file of N rows covers N
        hours. A file of regular samples spanning exactly a year (8,760 hourly rows, or 8,784
        for a leap year, from time 0) is a typical year like an EPW file: it wraps round,
        interpolating from its last row back to its first, and serves runs of any length.
        Any other file serves runs up to what it covers; a longer run is refused when the
        simulation is built (:meth:`span_error`).
        """
        import pandas as pd  # on first use: the step path does not need it

        try:
            df = pd.read_csv(path, skipinitialspace=True)
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
            raise ValueError(f"{path}: cannot read weather CSV ({exc})") from None
        humidity = [c for c in ("t_wet_bulb", "rh", "t_dew_point") if c in df.columns]
        for col in ("time", "t_dry_bulb"):
            if col not in df.columns:
                raise ValueError(
                    f"{path}:1: missing column {col!r} (columns: {', '.join(map(str, df.columns))})"
                )
        if not humidity:
            raise ValueError(f"{path}:1: needs one of the columns t_wet_bulb, rh, t_dew_point")

        def numeric(col):
            values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
            bad = np.flatnonzero(~np.isfinite(values))
            if bad.size:
                raise ValueError(
                    f"{path}:{bad[0] + 2}: {col} is not a number: {df[col].iloc[bad[0]]!r}"
                )
            return values

        raw_time = pd.to_numeric(df["time"], errors="coerce")
        if len(df) and pd.notna(raw_time.iloc[0]):  # the first row decides: seconds or ISO
            bad = np.flatnonzero(raw_time.isna().to_numpy())
            if bad.size:
                raise ValueError(
                    f"{path}:{bad[0] + 2}: time is not a number of seconds: "
                    f"{df['time'].iloc[bad[0]]!r}"
                )
            time = raw_time.to_numpy(dtype=float)
        else:
            stamps = pd.to_datetime(df["time"], errors="coerce", format="ISO8601")
            bad = np.flatnonzero(stamps.isna().to_numpy())
            if bad.size:
                raise ValueError(
                    f"{path}:{bad[0] + 2}: time is neither seconds nor an ISO 8601 timestamp: "
                    f"{df['time'].iloc[bad[0]]!r}"
                )
            time = (stamps - stamps.iloc[0]).dt.total_seconds().to_numpy()
        back = np.flatnonzero(np.diff(time) <= 0)
        if back.size:
            raise ValueError(f"{path}:{back[0] + 3}: time does not increase")
        def plausible(col, values, lo, hi, units, hint):
            bad = np.flatnonzero((values < lo) | (values > hi))
            if bad.size:
                raise ValueError(f"{path}:{bad[0] + 2}: {col} {values[bad[0]]:g} is outside "
                                 f"{lo:g}..{hi:g} {units}: {hint}")

        t_db = numeric("t_dry_bulb")
        plausible("t_dry_bulb", t_db, *T_OUTDOOR_RANGE, "degC", "the column is in degC, not kelvin or °F")
        p = numeric("pressure") if "pressure" in df.columns else pressure
        if "pressure" in df.columns:
            plausible("pressure", p, *PRESSURE_RANGE, "Pa", "the column is in Pa, not hPa, kPa or inHg")
        col = humidity[0]
        h = numeric(col)
        if col in ("t_wet_bulb", "t_dew_point"):
            plausible(col, h, *T_OUTDOOR_RANGE, "degC", "the column is in degC, not kelvin or °F")
        if col == "t_wet_bulb":
            t_wb = h
            above = np.flatnonzero(t_wb > t_db)
            if above.size:
                raise ValueError(f"{path}:{above[0] + 2}: t_wet_bulb above t_dry_bulb")
        elif col == "rh":
            bad = np.flatnonzero((h < 0.0) | (h > 1.0))
            if bad.size:
                raise ValueError(f"{path}:{bad[0] + 2}: rh is a fraction 0..1, got {h[bad[0]]}")
            t_wb = wet_bulb(t_db, rh=h, pressure=p)
        else:
            t_wb = wet_bulb(t_db, t_dew_point=h, pressure=p)
        steps = np.diff(time)
        step = float(steps[0]) if steps.size and np.allclose(steps, steps[0], rtol=0, atol=1e-6) else 0.0
        span = time.size * step
        if step > 0 and time[0] == 0 and any(abs(span - y) < 1e-6 for y in YEAR_LENGTHS):
            return cls(time, t_db, t_wb, period=span, source=str(path))  # a typical year: wraps round
        return cls(time, t_db, t_wb, source=str(path), hold=step if step > 0 else 0.0)

    # -- queries -----------------------------------------------------------------------------
    def _sample(self, values, time) -> np.ndarray:
        time = np.asarray(time, dtype=float)
        if self.time.size == 1:
            return np.full(time.shape, values[0])
        if self.period is not None:
            return np.interp(time + self.offset, self.time, values, period=self.period)
        t = time + self.offset
        if t.size and (np.min(t) < self.time[0] or np.max(t) > self.time[-1] + self.hold):
            raise ValueError(
                f"{self.source}: weather asked for time {np.min(t):g}..{np.max(t):g} s, "
                f"outside the series {self.time[0]:g}..{self.time[-1] + self.hold:g} s"
            )
        return np.interp(t, self.time, values)  # the last value holds beyond the last sample

    def t_dry_bulb(self, time) -> np.ndarray:
        """Outdoor dry-bulb temperature [degC] at simulation times ``time`` [s]."""
        return self._sample(self._t_dry_bulb, time)

    def t_wet_bulb(self, time) -> np.ndarray:
        """Outdoor wet-bulb temperature [degC] at simulation times ``time`` [s]."""
        return self._sample(self._t_wet_bulb, time)

    def __repr__(self) -> str:
        return f"Weather({self.source!r}, {self.time.size} samples, period={self.period})"


#: Relative humidity assumed for constant weather given without humidity [1].
DEFAULT_RH = 0.5


def build_weather(spec, base_dir: Path | None = None, start_day_of_year: float | None = None
                  ) -> Weather:
    """The :class:`Weather` a ``plant.weather`` section asks for.

    Parameters
    ----------
    spec : ConstantWeather | EpwWeather | DesignDayWeather | CsvWeather
    base_dir : Path, optional
        Folder relative file paths are taken from (the scenario's folder).
    start_day_of_year : float, optional
        Typical-year day at simulation time 0, used when an EPW spec gives no ``start_day``.

    Raises
    ------
    FieldError
        File not found, not readable, or an unknown bundled name (``plant.weather.file``).
    """
    loc = ("plant", "weather", "file")
    if spec.kind == "constant":
        rh = spec.rh if spec.t_wet_bulb is None and spec.rh is not None else DEFAULT_RH
        return Weather.constant(spec.t_dry_bulb, t_wet_bulb=spec.t_wet_bulb,
                                rh=None if spec.t_wet_bulb is not None else rh)

    def path_of(name: str, bundled: bool) -> Path:
        p = Path(name)
        if bundled and p.suffix.lower() != ".epw" and len(p.parts) == 1:
            try:
                return bundled_epw(name)
            except ValueError as exc:
                raise FieldError(loc, str(exc)) from None
        if not p.is_absolute() and base_dir is not None:
            p = Path(base_dir) / p
        if not p.is_file():
            raise FieldError(loc, f"weather file not found: {p}")
        return p

    try:
        if spec.kind == "epw":
            start = spec.start_day if spec.start_day is not None else (start_day_of_year or 1.0)
            return Weather.from_epw(path_of(spec.file, True), start_day_of_year=start)
        if spec.kind == "design_day":
            return Weather.from_design_day(path_of(spec.file, True), spec.day)
        return Weather.from_csv(path_of(spec.file, False))
    except FieldError:
        raise
    except ValueError as exc:
        raise FieldError(loc, str(exc)) from None
