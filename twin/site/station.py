"""The weather at the site as a component: outdoor dry- and wet-bulb temperatures for the
equipment that rejects heat outdoors, at the middle of each of its steps."""

from __future__ import annotations

import numpy as np

from twin.sim.component import Component, Var

#: Steps of weather sampled ahead in one call (interpolating a periodic series sorts it each call).
WEATHER_BLOCK = 4096

T_OUTDOOR = Var("facility", "t_outdoor", "degC", "outdoor dry-bulb temperature")
T_WET_BULB = Var("facility", "t_wet_bulb", "degC", "outdoor wet-bulb temperature")


class WeatherStation(Component):
    """Outdoor conditions from a :class:`~twin.site.weather.Weather`, sampled at mid-step.

    Parameters
    ----------
    weather : Weather
    every : int
        Thermal steps per update (the plant's).
    """

    outputs = (T_OUTDOOR, T_WET_BULB)
    phase = "integration"
    plant_stage = 0

    @classmethod
    def from_plant(cls, plant):
        return plant.station

    def __init__(self, weather, every: int = 1):
        self.weather = weather
        self.every = every
        self._block = None

    def at(self, tm: float, dt: float) -> tuple[float, float]:
        """Dry- and wet-bulb at time ``tm`` [s], sampled a block of steps of ``dt`` ahead at a time."""
        block = self._block
        if block is not None and block[3] == dt:
            k = round((tm - block[0]) / dt)
            if 0 <= k < block[1].size and abs(block[0] + k * dt - tm) < 1e-6 * dt + 1e-9:
                return float(block[1][k]), float(block[2][k])
        w = self.weather
        times = tm + dt * np.arange(WEATHER_BLOCK)
        if w.period is None and w.time.size > 1:  # a finite series: do not ask past its end
            times = times[times <= w.end] if tm <= w.end else times[:1]
        self._block = (tm, w.t_dry_bulb(times), w.t_wet_bulb(times), dt)
        return float(self._block[1][0]), float(self._block[2][0])

    def step(self, t: float, dt: float, state) -> None:
        t_db, t_wb = self.at(t + 0.5 * dt, dt)
        state["facility.t_outdoor"] = np.array([t_db])
        state["facility.t_wet_bulb"] = np.array([t_wb])
