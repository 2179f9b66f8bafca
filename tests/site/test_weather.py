"""Weather and psychrometrics against published tables, the EPW files' own data and closed forms."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from twin.site.weather import (
    DAILY_RANGE_FRACTION,
    SECONDS_PER_DAY,
    SECONDS_PER_YEAR,
    EpwHeader,
    Weather,
    bundled_epw,
    design_day,
    humidity_ratio,
    read_epw,
    read_epw_header,
    saturation_vapour_pressure,
    standard_pressure,
    wet_bulb,
    wet_bulb_stull,
)

SITES = ["Leesburg", "Phoenix", "Seattle"]


@pytest.fixture(scope="module")
def epw():
    return {site: read_epw(bundled_epw(site)) for site in SITES}


@pytest.fixture(scope="module")
def leesburg_lines():
    return bundled_epw("Leesburg").read_text(encoding="latin-1").splitlines()


def write_lines(tmp_path: Path, lines, name="bad.epw") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="latin-1")
    return path


# --------------------------------------------------------------------------------------------
# Psychrometrics
# --------------------------------------------------------------------------------------------
def test_saturation_pressure_matches_ashrae_table():
    """Hyland–Wexler p_ws against ASHRAE Fundamentals 2017 ch. 1 Table 3 (IAPWS-based values).

    Tolerance 3e-4 relative: ASHRAE states the Hyland–Wexler formulas reproduce the table
    within 300 ppm over −100..200 degC.
    """
    t = np.array([-20.0, -5.0, 5.0, 25.0, 50.0, 100.0])
    table = np.array([103.24, 401.74, 872.6, 3169.7, 12351.3, 101418.0])
    np.testing.assert_allclose(saturation_vapour_pressure(t), table, rtol=3e-4)


def test_standard_pressure_matches_ashrae_table():
    """Standard atmosphere against ASHRAE Fundamentals 2017 ch. 1 Table 1 (printed to 1 Pa)."""
    z = np.array([-500.0, 0.0, 500.0, 1000.0, 4000.0])
    table = np.array([107478.0, 101325.0, 95461.0, 89875.0, 61640.0])
    np.testing.assert_allclose(standard_pressure(z), table, atol=1.0)


def test_humidity_ratio_ashrae_example_1():
    """ASHRAE Fundamentals 2017 ch. 1 Example 1: 40 degC dry-bulb, 20 degC wet-bulb, sea level.

    The Handbook prints W = 0.0065. Tolerance 1.5e-4: the printed value is rounded (±5e-5),
    and the Handbook's saturation humidity ratio carries the real-gas enhancement factor that
    the ideal-gas relations here omit (≈0.45 % of W*_s ≈ 6.5e-5 in W).
    """
    assert humidity_ratio(40.0, 20.0, 101325.0) == pytest.approx(0.0065, abs=1.5e-4)


@pytest.mark.parametrize(
    ("t", "t_wb", "w_ref"),
    [(30.0, 25.0, 0.0192281274241096), (-1.0, -5.0, 0.00120399819933844)],
)
def test_psychrometric_equation_matches_psychrolib(t, t_wb, w_ref):
    """Both branches (water, ice) of the psychrometric equation at 95 461 Pa (500 m) against
    PsychroLib's reference values (an independent implementation of the same ASHRAE equations).

    Tolerance 3e-4 relative: PsychroLib's own tolerance for these values, which covers the
    300 ppm uncertainty of the saturation-pressure formula both rely on.
    """
    w = humidity_ratio(t, t_wb, 95461.0)
    assert w == pytest.approx(w_ref, rel=3e-4)
    # and back: the solver inverts the equation (to its 1e-9 K bisection tolerance)
    p_w = w * 95461.0 / (0.621945 + w)
    rh = p_w / saturation_vapour_pressure(t)
    assert wet_bulb(t, rh=rh, pressure=95461.0) == pytest.approx(t_wb, abs=1e-7)


@pytest.mark.parametrize(
    ("t", "rh", "t_wb_ref", "tol"),
    [
        # Psychrometric tables: 30 degC, 50 % RH, sea level → 22.0 degC. Tolerance 0.05 K:
        # the published value is rounded to 0.1 K.
        (30.0, 0.50, 22.0, 0.05),
        # Çengel & Boles, Thermodynamics (Example 14-6, psychrometric chart): 35 degC, 40 %,
        # 1 atm → 24 degC. Tolerance 0.3 K: the value is read off a chart to the nearest degree.
        (35.0, 0.40, 24.0, 0.3),
    ],
)
def test_wet_bulb_published_values(t, rh, t_wb_ref, tol):
    assert wet_bulb(t, rh=rh) == pytest.approx(t_wb_ref, abs=tol)


def test_wet_bulb_limits_and_bounds():
    """Saturated air: t* = t (exactly, up to the 1e-9 K bisection tolerance); dry air: t* < t;
    in general dew point ≤ t* ≤ t."""
    t = np.linspace(-30.0, 50.0, 33)
    np.testing.assert_allclose(wet_bulb(t, rh=1.0), t, atol=1e-8)
    np.testing.assert_allclose(wet_bulb(t, t_dew_point=t), t, atol=1e-8)
    t_dp = t - 12.0
    t_wb = wet_bulb(t, t_dew_point=t_dp)
    assert np.all((t_wb >= t_dp) & (t_wb <= t))


def test_wet_bulb_is_vectorised_and_round_trips():
    """An array in, the same shape out; t* solves the psychrometric equation for the air's W
    (1e-12 relative: the bisection stops at 1e-9 K, where dW/dt* ≈ 1e-3 /K)."""
    t = np.array([[5.0, 20.0, 35.0], [10.0, 25.0, 45.0]])
    rh = np.array([[0.9, 0.5, 0.3], [0.7, 0.6, 0.1]])
    p = 97000.0
    t_wb = wet_bulb(t, rh=rh, pressure=p)
    assert t_wb.shape == t.shape
    p_w = rh * saturation_vapour_pressure(t)
    w = 0.621945 * p_w / (p - p_w)
    np.testing.assert_allclose(humidity_ratio(t, t_wb, p), w, rtol=0, atol=1e-11)


def test_stull_paper_example():
    """Stull (2011) gives 13.7 degC at 20 degC, 50 % (tolerance 0.05 K: printed to 0.1 K)."""
    assert wet_bulb_stull(20.0, 0.5) == pytest.approx(13.7, abs=0.05)


def test_wet_bulb_agrees_with_stull():
    """The iterative solution against Stull's independent closed-form fit.

    Where the fit is best (15..30 degC, RH 50..99 %) the two agree within 0.35 K: Stull's
    fit error there is about ±0.3 K, plus ≤0.05 K from the saturation-pressure formulas.
    Over 5..35 degC, RH 20..99 % the difference stays inside Stull's own published error band
    for the fit, −1 to +0.65 K. (Outside that — hot and half-dry air, or below freezing where
    RH conventions differ — Stull's fit is off by more, up to ~1.2 K at 50 degC.)
    """
    t, rh = np.meshgrid(np.arange(15.0, 30.1, 1.0), np.linspace(0.50, 0.99, 50))
    diff = wet_bulb_stull(t, rh) - wet_bulb(t, rh=rh)
    assert np.max(np.abs(diff)) < 0.35
    t, rh = np.meshgrid(np.arange(5.0, 35.1, 1.0), np.linspace(0.20, 0.99, 80))
    diff = wet_bulb_stull(t, rh) - wet_bulb(t, rh=rh)
    assert diff.min() > -1.0 and diff.max() < 0.65


def test_stull_warns_outside_its_range():
    with pytest.warns(RuntimeWarning, match="outside the fitted range"):
        wet_bulb_stull(55.0, 0.5)


def test_wet_bulb_bad_input():
    with pytest.raises(ValueError, match="exactly one of rh"):
        wet_bulb(20.0)
    with pytest.raises(ValueError, match="exactly one of rh"):
        wet_bulb(20.0, rh=0.5, t_dew_point=10.0)
    with pytest.raises(ValueError, match="rh is a fraction 0..1"):
        wet_bulb(20.0, rh=55.0)


# --------------------------------------------------------------------------------------------
# EPW files
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("site", SITES)
def test_read_epw_shape_and_ranges(epw, site):
    data = epw[site]
    assert len(data) == 8760
    np.testing.assert_array_equal(data.index.to_numpy(), np.arange(1, 8761) * 3600.0)
    assert list(data.columns[:3]) == ["month", "day", "hour"]
    assert data.iloc[0][["month", "day", "hour"]].tolist() == [1, 1, 1]
    assert data.iloc[-1][["month", "day", "hour"]].tolist() == [12, 31, 24]
    assert data["t_dry_bulb"].between(-40.0, 50.0).all()
    assert data["rh"].between(0.0, 1.0).all()
    assert data["pressure"].between(85e3, 105e3).all()
    # wet-bulb between dew point and dry-bulb (dew point ≤ dry-bulb in these files)
    assert (data["t_wet_bulb"] <= data["t_dry_bulb"]).all()
    assert (data["t_wet_bulb"] >= data["t_dew_point"] - 1e-9).all()
    # northern-hemisphere sites: July is warmer than January
    monthly = data.groupby("month")["t_dry_bulb"].mean()
    assert monthly[7] > monthly[1] + 10.0


def test_sites_rank_as_expected(epw):
    """Phoenix is the hottest and driest site, Seattle the mildest in summer."""
    mean = {s: epw[s]["t_dry_bulb"].mean() for s in SITES}
    assert mean["Phoenix"] > mean["Leesburg"] > mean["Seattle"]
    assert epw["Phoenix"]["rh"].mean() < epw["Leesburg"]["rh"].mean()
    p99 = {s: epw[s]["t_dry_bulb"].quantile(0.99) for s in SITES}
    assert p99["Phoenix"] > p99["Leesburg"] > p99["Seattle"]


@pytest.mark.parametrize("site", SITES)
def test_epw_rh_agrees_with_dew_point(epw, site):
    """The file's RH column against RH computed here from its dry-bulb and dew point.

    An independent check of the saturation-pressure formula and of the over-ice convention
    below 0 degC. Tolerance 0.015 mean absolute: RH is stored as whole percent (±0.005) and the
    dew point to 0.1 K (±0.05 K ≈ ±0.004 in RH), plus the data producer's own psychrometric
    formulas.
    """
    data = epw[site]
    rh = saturation_vapour_pressure(data["t_dew_point"]) / saturation_vapour_pressure(
        data["t_dry_bulb"]
    )
    assert np.mean(np.abs(rh - data["rh"])) < 0.015


def test_leesburg_header():
    header = read_epw_header(bundled_epw("Leesburg"))
    assert isinstance(header, EpwHeader)
    assert header.city.startswith("Leesburg")
    assert (header.state, header.country, header.wmo) == ("VA", "USA", "724055")
    assert header.latitude == pytest.approx(39.078)
    assert header.longitude == pytest.approx(-77.558)
    assert header.timezone == -5.0
    assert header.elevation == 119.0
    d = header.design
    assert d.source.startswith("2021 ASHRAE Handbook")
    assert d.cooling["0.4"] == (35.0, 24.8)
    assert d.cooling["1"] == (33.0, 24.0)
    assert d.evaporation["0.4"] == (26.3, 32.3)
    assert d.hottest_month == 7
    assert d.daily_range == 11.5
    assert read_epw(bundled_epw("Leesburg")).attrs["header"] == header


@pytest.mark.parametrize(
    ("site", "pairs"),
    [
        ("Leesburg", [(24.9, 20.3), (23.9, 19.1), (23.0, 17.9)]),
        ("Phoenix", [(21.9, 17.3), (20.9, 16.2), (19.8, 15.1)]),
        ("Seattle", [(16.1, 11.6), (15.3, 11.0), (14.6, 10.5)]),
    ],
)
def test_humidity_ratio_matches_ashrae_design_tables(site, pairs):
    """ASHRAE 2021 dehumidification design values (dew point, humidity ratio in g/kg) from the
    DESIGN CONDITIONS line, at the standard pressure of the station's elevation.

    Tolerance 0.12 g/kg: the humidity ratio is printed to 0.1 g/kg (±0.05) and the dew point
    to 0.1 K (±0.05 K ≈ ±0.06 g/kg at these humidities).
    """
    p = standard_pressure(read_epw_header(bundled_epw(site)).elevation)
    for t_dp, w_table in pairs:
        p_w = saturation_vapour_pressure(t_dp)
        w = 0.621945 * p_w / (p - p_w) * 1e3
        assert w == pytest.approx(w_table, abs=0.12)


def test_leap_day_rows_are_dropped(tmp_path, leesburg_lines, epw):
    """An actual-year file with 29 February maps onto the same non-leap typical year."""
    head, rows = leesburg_lines[:8], leesburg_lines[8:]
    feb28 = [r for r in rows if r.split(",")[1:3] == ["2", "28"]]
    feb29 = [_set_field(_set_field(r, 2, "29"), 6, "45.0") for r in feb28]
    cut = rows.index(feb28[-1]) + 1
    path = write_lines(tmp_path, head + rows[:cut] + feb29 + rows[cut:], "leap.epw")
    data = read_epw(path)
    assert len(data) == 8760
    np.testing.assert_array_equal(data["t_dry_bulb"], epw["Leesburg"]["t_dry_bulb"])


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda L: ["NOT AN EPW"] + L[1:], r"bad\.epw:1: not an EPW file"),
        (lambda L: L[:1] + ["SOMETHING ELSE"] + L[2:], r"bad\.epw:2: expected the 'DESIGN"),
        (lambda L: L[:7] + ["DATA PERIODS,1,4,Data,Sunday,1/ 1,12/31"] + L[8:],
         r"bad\.epw:8: 4 records per hour"),
        (lambda L: L[:20] + [_set_field(L[20], 6, "abc")] + L[21:],
         r"bad\.epw:21: Dry Bulb Temperature is not a number: 'abc'"),
        (lambda L: L[:20] + [_set_field(L[20], 9, "999999")] + L[21:],
         r"bad\.epw:21: Atmospheric Station Pressure is missing"),
        (lambda L: L[:20] + [L[21], L[20]] + L[22:],
         r"bad\.epw:21: expected month 1 day 1 hour 13"),
        (lambda L: L[:-10], r"bad\.epw:8758: only 8750 hourly rows"),
        (lambda L: L + [L[-1]], r"bad\.epw:8769: more than 8760 hourly rows"),
        (lambda L: L[:30] + ["2010,1,2"] + L[31:], r"bad\.epw:31: expected at least 10 fields"),
        (lambda L: L[:5], r"bad\.epw:5: EPW file ends inside its 8-line header"),
    ],
)
def test_bad_epw_names_file_and_line(tmp_path, leesburg_lines, edit, match):
    path = write_lines(tmp_path, edit(list(leesburg_lines)))
    with pytest.raises(ValueError, match=match):
        read_epw(path)


def _set_field(line: str, index: int, value: str) -> str:
    fields = line.split(",")
    fields[index] = value
    return ",".join(fields)


def test_missing_epw_file(tmp_path):
    with pytest.raises(ValueError, match=r"nope\.epw: cannot read EPW file"):
        read_epw(tmp_path / "nope.epw")


def test_bundled_epw_lookup():
    assert bundled_epw("phoenix").name == "USA_AZ_Phoenix-Sky.Harbor.epw"
    with pytest.raises(ValueError, match=r"'Tokyo': no bundled EPW file matches \(known: "):
        bundled_epw("Tokyo")
    with pytest.raises(ValueError, match="more than one"):
        bundled_epw("USA")


def test_bundled_weather_readme_carries_attribution():
    readme = (bundled_epw("Leesburg").parent / "README.md").read_text()
    assert "climate.onebuilding.org TMYx files (NOAA ISD / ERA5)" in readme
    assert "MIT licence by\nHewlettPackard/dc-rl (data/Weather)" in readme


# --------------------------------------------------------------------------------------------
# Design days
# --------------------------------------------------------------------------------------------
def test_design_day_cooling_profile():
    """Leesburg 0.4 % cooling day: 35.0 degC / 24.8 degC at 14:00–15:00, minimum 35.0 − 11.5
    at 05:00, ASHRAE fraction profile in between, humidity ratio constant through the day."""
    header = read_epw_header(bundled_epw("Leesburg"))
    day = design_day(header, "cooling_0.4")
    assert len(day) == 24
    np.testing.assert_array_equal(day.index.to_numpy(), np.arange(1, 25) * 3600.0)
    t_db, t_wb = day["t_dry_bulb"].to_numpy(), day["t_wet_bulb"].to_numpy()
    # exact arithmetic of the published profile (floating-point round-off only)
    np.testing.assert_allclose(t_db, 35.0 - 11.5 * DAILY_RANGE_FRACTION, atol=1e-12)
    assert day["t_dry_bulb"].idxmax() == 14 * 3600.0 and t_db[14] == 35.0
    assert t_db.min() == pytest.approx(35.0 - 11.5) and np.argmin(t_db) == 4  # hour 5
    # the design pair at the peak (1e-7 K: bisection tolerance 1e-9 K)
    assert t_wb[13] == pytest.approx(24.8, abs=1e-7) and t_wb[14] == pytest.approx(24.8, abs=1e-7)
    assert np.all(t_wb <= t_db)
    p = standard_pressure(header.elevation)
    w = humidity_ratio(t_db, t_wb, p)
    np.testing.assert_allclose(w, w[13], rtol=1e-8)  # 1e-9 K in t* ≈ 1e-10 relative in W


def test_design_day_evaporation_kind():
    """Evaporation design day: the wet-bulb design value 26.3 degC at its coincident 32.3 degC."""
    day = design_day(read_epw_header(bundled_epw("Leesburg")), "evaporation_0.4")
    assert day["t_dry_bulb"].max() == 32.3
    assert day["t_wet_bulb"].max() == pytest.approx(26.3, abs=1e-7)


def test_design_day_saturates_below_dew_point():
    """A humid design pair with a wide daily range: the night air saturates (t* = t)."""
    header = read_epw_header(bundled_epw("Leesburg"))
    from dataclasses import replace

    humid = replace(header, design=replace(header.design, cooling={"0.4": (30.0, 29.0)},
                                           daily_range=15.0))
    day = design_day(humid, "cooling_0.4")
    night = day["hour"] == 5
    assert day.loc[night, "t_wet_bulb"].item() == pytest.approx(
        day.loc[night, "t_dry_bulb"].item(), abs=1e-8
    )


def test_design_day_bad_input():
    header = read_epw_header(bundled_epw("Leesburg"))
    with pytest.raises(ValueError, match=r"unknown kind 'heating_99.6' \(known: cooling_0.4"):
        design_day(header, "heating_99.6")
    with pytest.raises(ValueError, match="unknown kind 'cooling_5'"):
        design_day(header, "cooling_5")
    from dataclasses import replace

    with pytest.raises(ValueError, match="carries no DESIGN CONDITIONS"):
        design_day(replace(header, design=None))


# --------------------------------------------------------------------------------------------
# Weather at simulation times
# --------------------------------------------------------------------------------------------
def test_weather_from_epw_interpolates_and_wraps(epw):
    data = epw["Leesburg"]
    w = Weather.from_epw(bundled_epw("Leesburg"))
    t_db = data["t_dry_bulb"].to_numpy()
    # hour-ending convention: t = 3600 s is row 0, t = 0 is the last row (31 Dec 24:00)
    assert w.t_dry_bulb(3600.0) == t_db[0]
    assert w.t_dry_bulb(0.0) == t_db[-1]
    assert w.t_dry_bulb(1800.0) == pytest.approx(0.5 * (t_db[-1] + t_db[0]), abs=1e-12)
    assert w.t_dry_bulb(5400.0) == pytest.approx(0.5 * (t_db[0] + t_db[1]), abs=1e-12)
    # runs longer than a year wrap round
    times = np.array([[0.0, 12345.0], [3.3e6, 2.0e7]])
    np.testing.assert_allclose(w.t_dry_bulb(times + SECONDS_PER_YEAR), w.t_dry_bulb(times),
                               atol=1e-9)
    assert w.t_wet_bulb(times).shape == (2, 2)
    np.testing.assert_allclose(w.t_wet_bulb(np.arange(1, 8761) * 3600.0), data["t_wet_bulb"],
                               atol=1e-9)


def test_weather_from_epw_start_day():
    """start_day_of_year = 196: simulation time 0 is 15 July 00:00 = 14 July hour 24."""
    data = read_epw(bundled_epw("Leesburg"))
    w = Weather.from_epw(bundled_epw("Leesburg"), start_day_of_year=196)
    row = data[(data.month == 7) & (data.day == 14) & (data.hour == 24)]
    assert w.t_dry_bulb(0.0) == row["t_dry_bulb"].item()
    assert w.t_wet_bulb(0.0) == pytest.approx(row["t_wet_bulb"].item(), abs=1e-12)
    later = data[(data.month == 7) & (data.day == 15) & (data.hour == 15)]
    assert w.t_dry_bulb(15 * 3600.0) == later["t_dry_bulb"].item()


def test_weather_design_day_repeats_daily():
    w = Weather.from_design_day(bundled_epw("Leesburg"), "cooling_0.4")
    t = np.array([14.0, 14.5, 15.0]) * 3600.0
    np.testing.assert_allclose(w.t_dry_bulb(t), 35.0, atol=1e-12)
    np.testing.assert_allclose(w.t_dry_bulb(t + 3 * SECONDS_PER_DAY), w.t_dry_bulb(t),
                               atol=1e-9)
    assert w.t_dry_bulb(5 * 3600.0) == pytest.approx(23.5)
    assert w.t_wet_bulb(14 * 3600.0) == pytest.approx(24.8, abs=1e-7)
    header = read_epw_header(bundled_epw("Leesburg"))
    assert Weather.from_design_day(header).t_dry_bulb(0.0) == w.t_dry_bulb(0.0)


def test_weather_constant():
    w = Weather.constant(30.0, rh=0.5)
    t = np.linspace(-1e9, 1e9, 7)
    np.testing.assert_array_equal(w.t_dry_bulb(t), 30.0)
    np.testing.assert_array_equal(w.t_wet_bulb(t), wet_bulb(30.0, rh=0.5))
    assert Weather.constant(25.0, t_wet_bulb=18.0).t_wet_bulb(3.0) == 18.0
    with pytest.raises(ValueError, match="give t_wet_bulb or rh"):
        Weather.constant(25.0)


def test_weather_from_csv_seconds_and_iso(tmp_path):
    seconds = tmp_path / "w.csv"
    seconds.write_text("time,t_dry_bulb,t_wet_bulb\n0,20,15\n600,22,16\n1200,24,17\n")
    w = Weather.from_csv(seconds)
    np.testing.assert_allclose(w.t_dry_bulb([0.0, 300.0, 900.0]), [20.0, 21.0, 23.0])
    np.testing.assert_allclose(w.t_wet_bulb([300.0]), [15.5])
    iso = tmp_path / "iso.csv"
    iso.write_text(
        "time,t_dry_bulb,rh\n2024-07-01T12:00:00,30,0.5\n2024-07-01T12:10:00,32,0.5\n"
    )
    w = Weather.from_csv(iso)
    assert w.t_dry_bulb(300.0) == pytest.approx(31.0)
    assert w.t_wet_bulb(0.0) == pytest.approx(wet_bulb(30.0, rh=0.5))
    dew = tmp_path / "dew.csv"
    dew.write_text("time,t_dry_bulb,t_dew_point,pressure\n0,30,20,95000\n60,30,20,95000\n")
    assert Weather.from_csv(dew).t_wet_bulb(30.0) == pytest.approx(
        wet_bulb(30.0, t_dew_point=20.0, pressure=95000.0)
    )


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("t,t_dry_bulb,t_wet_bulb\n0,20,15\n", r"w\.csv:1: missing column 'time'"),
        ("time,t_dry_bulb\n0,20\n", r"w\.csv:1: needs one of the columns t_wet_bulb"),
        ("time,t_dry_bulb,rh\n0,20,0.5\n60,hot,0.5\n", r"w\.csv:3: t_dry_bulb is not a number"),
        ("time,t_dry_bulb,rh\n0,20,0.5\n60,20,55\n", r"w\.csv:3: rh is a fraction 0..1"),
        ("time,t_dry_bulb,rh\n0,20,0.5\n60,20,0.5\n30,20,0.5\n", r"w\.csv:4: time does not"),
        ("time,t_dry_bulb,rh\n0,20,0.5\nnoon,20,0.5\n", r"w\.csv:3: time is not a number of"),
        ("time,t_dry_bulb,rh\n2024-07-01T12:00,20,0.5\nnoon,20,0.5\n",
         r"w\.csv:3: time is neither seconds nor an ISO 8601 timestamp: 'noon'"),
        ("time,t_dry_bulb,t_wet_bulb\n0,20,25\n", r"w\.csv:2: t_wet_bulb above t_dry_bulb"),
    ],
)
def test_weather_csv_bad_input(tmp_path, text, match):
    path = tmp_path / "w.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        Weather.from_csv(path)


def test_weather_csv_outside_series(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("time,t_dry_bulb,t_wet_bulb\n0,20,15\n600,22,16\n")
    w = Weather.from_csv(path)  # two rows 600 s apart cover 1200 s: the last holds for one step
    assert w.t_dry_bulb(np.array([900.0]))[0] == 22.0
    with pytest.raises(ValueError, match=r"asked for time 0..1201 s, outside the series 0..1200 s"):
        w.t_dry_bulb(np.array([0.0, 1201.0]))
