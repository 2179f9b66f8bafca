"""Ranges of the quantities a scenario may set, and their check.

A value outside its range is refused when the scenario is loaded (exit 2, one line) rather than
run into NaN, infinities or an overflow. Every quantity is also finite and temperatures are
above absolute zero (:func:`twin.units.parse_quantity`). The README's "Limits" section lists
these ranges; a test keeps it in step.
"""

from __future__ import annotations

from twin.text import excerpt

#: Ranges of scenario quantities, in stored units (degC, m3/s, W, J-1, s …): name → (low, high,
#: unit shown, why).
LIMITS: dict[str, tuple[float, float, str, str]] = {
    # Liquid loops: water above freezing with margin; ASHRAE TC9.9 (Liquid Cooling Guidelines,
    # 2nd ed.) classes W17–W45 and W+ (> 45 degC, for heat reuse, which runs to 60–70 degC).
    "coolant_supply": (5.0, 70.0, "degC", "ASHRAE W17-W45 and W+ secondary loops"),
    "facility_water": (2.0, 60.0, "degC", "ASHRAE W17-W45 and W+ facility water"),
    "chilled_water": (2.0, 30.0, "degC", "chilled-water coils"),
    # Air at the IT inlet: ASHRAE A1–A4 allowable 5–45 degC (Thermal Guidelines, 5th ed.).
    "cold_aisle": (0.0, 50.0, "degC", "ASHRAE A1-A4 allowable inlet air 5-45 degC"),
    # Outdoor air: the extremes measured on Earth are -89 and +57 degC (WMO archive).
    "outdoor": (-90.0, 60.0, "degC", "outdoor air on Earth"),
    # A rack manifold: DN50 at 3 m/s carries 0.35 m3/min; 2 m3/min is far beyond any rack.
    "rack_flow": (0.0, 2.0 / 60.0, "L/min", "a rack's coolant manifold"),
    # Rack and row power: the densest racks announced are near 1 MW; a row of them near 100 MW.
    "rack_power": (0.0, 10e6, "W", "a rack's input"),
    "row_power": (0.0, 1e9, "W", "a row's input"),
    # A facility's input: the largest campuses announced are planned at a few GW.
    "facility_power": (0.0, 10e9, "W", "a facility's input"),
    # A single device's power limit: the largest accelerator packages draw a few kW.
    "device_power": (0.0, 100e3, "W", "a device's power limit"),
    # Wholesale electricity: ERCOT's offer cap is 5 USD/kWh; 100 USD/kWh leaves room for any tariff.
    "price": (0.0, 100.0 / 3.6e6, "USD/kWh", "an electricity price"),
    # Simulated spans: within what a datetime64[ns] time axis holds after the start (year 2262).
    "span": (0.0, 100 * 365.25 * 86400.0, "s", "a simulated span: at most 100 years"),
    "rate": (0.0, 1e6, "1/s", "request arrivals"),
    "power_rate": (0.0, 1e9, "W/s", "a per-device power ramp"),
    "volume": (0.0, 1e6, "m**3", "a water or air volume"),
    "buffer": (1e3, 2.0**32, "byte", "a recording buffer"),
    # Control bands and approach margins (hysteresis, minimum useful free cooling).
    "temperature_band": (0.0, 30.0, "K", "a control band"),
}


def _display(si: float, unit: str) -> str:
    if unit == "L/min":
        return f"{si * 60000.0:g} L/min"
    if unit == "USD/kWh":
        return f"{si * 3.6e6:g} USD/kWh"
    return f"{si:g} {unit}"


def check_limit(name: str, si: float, value) -> float:
    """``si`` if it lies within ``LIMITS[name]``; else ValueError quoting an excerpt of ``value``."""
    low, high, unit, why = LIMITS[name]
    if not low <= si <= high:
        raise ValueError(f"{excerpt(value)} is outside {_display(low, unit)} to "
                         f"{_display(high, unit)} ({why})")
    return si
