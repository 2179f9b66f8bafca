"""Build the result :class:`xarray.DataTree` from a finished (or interrupted) simulation.

One group per level, each with its own ``time`` coordinate (the start of each recording
interval; values are interval means, stated in ``cell_methods``). Variables carry ``units``
(UDUNITS) and ``long_name``; the root carries the scenario text, seed, solver, twin version and
the run's KPIs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

import twin
from twin.report.kpi import (BAND_MIN_SAMPLES, band_energy_share, hottest_index, job_kpis, largest_ramp,
                             peak_to_average)
from twin.sim.variables import VARIABLES


#: long_name of every coordinate (CF): what each label names.
COORD_NAMES = {
    "cdu": "coolant distribution unit",
    "rack": "rack",
    "row": "row of racks",
    "hall": "data hall",
    "template": "catalogue template",
    "system": "scale-up system (UltraServer or NVL domain) the rack belongs to",
    "sled": "sled (server tray)",
    "device": "device (chip package: accelerator, CPU, NIC or switch)",
    "kind": "device kind (catalogue chip)",
    "job": "job name",
    "job_kind": "job kind (training, moe_training, inference, cpu)",
}


def _coords(sim, group: str) -> dict:
    """Coordinates of ``group`` with their long names."""
    coords = _coord_values(sim, group)
    out = {}
    for name, value in coords.items():
        dims, data, attrs = (value + ({},))[:3] if isinstance(value, tuple) else (name, value, {})
        attrs = dict(attrs)
        attrs.setdefault("long_name", COORD_NAMES.get(name, name))
        out[name] = (dims, data, attrs)
    return out


def _coord_values(sim, group: str) -> dict:
    sy = sim.system
    halls = np.array(sy.hall_names, dtype=object)
    rows = np.array(sy.row_names, dtype=object)
    if group == "cdu":
        return {"cdu": sy.cdu_name.astype(str)}
    if group == "rack":
        return {
            "rack": sy.rack_name.astype(str),
            "row": ("rack", rows[sy.rack_row].astype(str)),
            "hall": ("rack", halls[sy.rack_hall].astype(str)),
            "template": ("rack", sy.rack_template.astype(str)),
            "system": ("rack", sy.rack_system.astype(str)),
            "cdu": ("rack", sy.cdu_name[sy.rack_cdu].astype(str)),
            "power_limit": ("rack", sy.rack_power_limit, {"units": "W", "long_name": "rack power limit (inf: none)"}),
        }
    if group == "sled":
        return {
            "sled": sy.sled_name.astype(str),
            "rack": ("sled", sy.rack_name[sy.sled_rack].astype(str)),
            "template": ("sled", sy.sled_template.astype(str)),
        }
    if group == "job":
        jobs = sim.jobs.jobs
        fabric, domains, t_collective = zip(*(j.kind.collective(j) for j in jobs)) if jobs else ((), (), ())
        return {
            "job": np.array([j.spec.name for j in jobs]),
            "job_kind": ("job", np.array([j.spec.kind for j in jobs])),
            "job_fabric": ("job", np.array(fabric),
                           {"long_name": "fabric carrying the gang's collectives (scale-out when it spans domains)"}),
            "job_domains": ("job", np.array(domains),
                            {"long_name": "scale-up domains the gang spans (0: no fabric timing)"}),
            "job_t_collective": ("job", np.array(t_collective),
                                 {"units": "s", "long_name": "collective time per iteration on the gang's fabrics"}),
        }
    if group == "device":
        return {
            "device": sy.device_name.astype(str),
            "rack": ("device", sy.rack_name[sy.device_rack].astype(str)),
            "sled": ("device", sy.sled_name[sy.device_sled].astype(str)),
            "kind": ("device", sy.device_kind.astype(str)),
            "row": ("device", rows[sy.device_row].astype(str)),
            "hall": ("device", halls[sy.device_hall].astype(str)),
        }
    return {}


def summary(sim) -> dict[str, float | int]:
    """KPIs of the run as plain numbers (also stored as root attributes).

    Power-quality KPIs (peak-to-average, largest ramp, 0.1–20 Hz share) use the recorded facility
    IT power at its recording interval (record it at the workload step for sub-second detail).
    """
    tot = sim.totals
    seconds = tot.steps * sim.h
    kpi = {
        "simulated_seconds": seconds,
        "energy_it_J": tot.e_ac,
        "energy_facility_J": tot.e_facility,
        "energy_loss_J": tot.e_loss,
        "energy_liquid_J": tot.e_liquid,
        "energy_air_J": tot.e_air,
        "energy_residual": tot.energy_residual,
        "p_it_mean_W": tot.e_ac / seconds if seconds else 0.0,
        "p_facility_peak_W": tot.p_facility_peak,
        "p_rack_peak_W": tot.p_rack_peak,
        "pue": tot.e_facility / tot.e_ac if tot.e_ac else float("nan"),
        "t_die_max_degC": tot.t_die_max,
        "energy_stored_J": tot.stored_end - tot.stored_start,
        "throttled_device_seconds": tot.throttled_device_seconds,
        "devices_throttled": tot.devices_throttled,
        "devices_tripped": tot.devices_tripped,
        "n_devices": int(sim.system.n_devices),
        "n_racks": int(sim.system.n_racks),
        "energy_smoothing_J": tot.e_smoothing,
        "capped_rack_seconds": sim.capped_rack_seconds,
    }
    if sim.network is not None:
        net = sim.network
        kpi["network_power_W"] = net.power
        kpi["network_switches"] = net.size.n_switches
        kpi["network_tiers"] = net.size.tiers
        kpi["network_optics"] = net.size.optics
        kpi["network_nic_ports"] = net.size.ports
        kpi["network_nics"] = net.nics
        kpi["network_nic_power_W"] = net.p_nics
    peak = getattr(sim, "t_die_peak", None)
    if peak is not None and np.isfinite(peak).any():
        sy = sim.system
        hottest = hottest_index(peak)
        kpi["t_die_max_device"] = str(sy.device_name[hottest])
        kpi["t_die_max_kind"] = str(sy.device_kind[hottest])
        for kind in dict.fromkeys(sy.device_kind.astype(str)):  # catalogue order of appearance
            kpi[f"t_die_max_{kind}_degC"] = float(peak[sy.device_kind == kind].max())
    hbm = getattr(getattr(sim, "racks", None), "t_hbm_peak", None)
    if hbm is not None and np.isfinite(hbm).any():
        # The hottest HBM stacks against their limit (the stacks' own limit: with warm coolant
        # or a hot aisle it can bind before the die's).
        sy = sim.system
        hottest = hottest_index(hbm)
        over = hbm > sy.chip["t_hbm_max"]  # (NaN compares False)
        kpi["t_hbm_max_degC"] = float(np.nanmax(hbm))
        kpi["t_hbm_max_device"] = str(sy.device_name[hottest])
        kpi["t_hbm_limit_degC"] = float(sy.chip["t_hbm_max"][hottest])
        kpi["devices_over_hbm_limit"] = int(np.count_nonzero(over))
    if np.isfinite(sim.first_event):
        kpi["first_event_s"] = sim.first_event
        kpi["time_to_first_throttle_s"] = (sim.first_throttle - sim.first_event
                                           if sim.first_throttle >= sim.first_event else 0.0)
        kpi["time_to_first_trip_s"] = sim.first_trip - sim.first_event
    if sim.plant is not None:
        pt = sim.plant.totals
        kpi["wue_L_per_kWh"] = sim.water / (tot.e_ac / 3.6e6) if tot.e_ac else float("nan")  # 1 kg = 1 L
        kpi["water_m3"] = sim.water / 1000.0
        kpi["chiller_hours"] = pt.chiller_seconds / 3600.0
        kpi["full_free_cooling_hours"] = pt.economiser_seconds[2] / 3600.0
        kpi["hours_outside_ashrae_recommended"] = pt.seconds_outside_recommended / 3600.0
        kpi["hours_outside_ashrae_allowable"] = pt.seconds_outside_allowable / 3600.0
        kpi["plant_energy_residual"] = pt.energy_residual
        if np.isfinite(sim.chain.outage_start) or sim.battery_left < sim.battery_energy:  # an outage
            kpi["battery_left_J"] = sim.battery_left
            kpi["ride_through_s"] = sim.ride_through
    series = sim.recorder.p_it_series()
    if series is not None and series.size > 1:
        dt = sim.recorder.groups["facility"].every * sim.h_w
        kpi["p_it_record_interval_s"] = dt
        kpi["peak_to_average"] = peak_to_average(series)
        kpi["largest_ramp_W_per_s"] = largest_ramp(series, dt)
        if series.size >= BAND_MIN_SAMPLES:  # fewer samples have no spectrum to share out
            kpi["band_0p1_20Hz_share"] = band_energy_share(series, dt)
    if sim.jobs is not None and tot.e_device > 0:
        per_joule = tot.e_facility / tot.e_device
        price = sim.scenario.electricity_price
        for job in sim.jobs.jobs:
            kpi.update(job_kpis(job.spec.name, job.energy, job.progress, job.tokens, per_joule, price))
            kpi.update({f"job_{job.spec.name}_{key}": value for key, value in job.kind.kpis(job).items()})
            kpi[f"job_{job.spec.name}_kind"] = job.spec.kind
    return kpi


def run_warnings(sim) -> list[str]:
    """Things a run did not do that the scenario asked for (summary lines, root ``warnings``);
    see :mod:`twin.report.diagnostics`."""
    from twin.report.diagnostics import run_warnings as warnings

    return warnings(sim)


def _variable(dims, data, attrs) -> xr.Variable | tuple:
    """An xarray Variable of a plain numeric, string or time array (in a time unit pandas keeps
    as it is), made without xarray's checks for dask and pint arrays: they would convert nothing
    here, and they import dask.array, scipy.sparse and pint (~0.7 CPU-s of a run's first write).
    Anything else as the usual ``(dims, data, attrs)``."""
    if type(data) is np.ndarray and (data.dtype.kind in "biufcU" or (
            data.dtype.kind == "M" and np.datetime_data(data.dtype)[0] in ("s", "ms", "us", "ns"))):
        return xr.Variable(dims, data, attrs, fastpath=True)
    return (dims, data, attrs)


def group_dataset(sim, group: str, variables: dict[str, np.ndarray], offset: int = 0,
                  index: bool = True) -> xr.Dataset:
    """One group's samples ``offset … offset + n`` as a Dataset with coordinates and attributes.

    ``index=False`` leaves out the coordinates' pandas indexes (for a block written to a store,
    which does not keep them: building them costs the first write the dask and pint imports)."""
    every = sim.recorder.intervals()[group]
    start = pd.Timestamp(sim.scenario.time.start)
    n = next(iter(variables.values())).shape[0] if variables else 0
    seconds = (offset + np.arange(n)) * every * sim.h_w
    time = start + pd.to_timedelta(seconds, unit="s")
    coords = {"time": ("time", time.to_numpy(), {"long_name": "start of recording interval"})}
    coords.update(_coords(sim, group))
    coords = {name: _variable(*value) if isinstance(value, tuple) and len(value) == 3 else value
              for name, value in coords.items()}
    dims = ("time",) if group == "facility" else ("time", group)
    ds_vars = {}
    for v, arr in variables.items():
        units, long_name = VARIABLES[group][v]
        values = arr[:, 0] if group == "facility" else arr
        attrs = {"units": units, "long_name": long_name,
                 "cell_methods": f"time: mean (interval: {every * sim.h_w:g} s)"}
        if (group, v) == ("job", "state"):  # categorical: the state at the end of the interval
            from twin.workload.jobs import STATE_NAMES

            attrs["cell_methods"] = f"time: point (interval: {every * sim.h_w:g} s; value at its end)"
            attrs["flag_values"] = np.array(sorted(STATE_NAMES), dtype=np.int8)
            attrs["flag_meanings"] = " ".join(STATE_NAMES[k] for k in sorted(STATE_NAMES))
        if units == "degC":
            attrs["units_metadata"] = "temperature: on_scale"
        ds_vars[v] = _variable(dims, values, attrs)
    if not index:
        return xr.Dataset(ds_vars, coords=xr.Coordinates(coords, indexes={}))
    return xr.Dataset(ds_vars, coords=coords)


def root_attrs(sim, interrupted: bool = False) -> dict:
    """Root attributes: provenance (scenario text, seed, solver, version) and KPIs (``kpi_*``)."""
    attrs = {
        "title": f"twin result: {sim.scenario.name}",
        "twin_version": twin.__version__,
        "scenario_name": sim.scenario.name,
        "scenario": sim.loaded.text,
        "seed": sim.scenario.seed,
        "solver": sim.solver,
        "step_seconds": sim.h,
        "workload_step_seconds": sim.h_w,
        "start": str(pd.Timestamp(sim.scenario.time.start)),
        "interrupted": int(interrupted),
        "Conventions": "CF-1.11",
        "warnings": "\n".join(run_warnings(sim)),
    }
    attrs.update({f"kpi_{k}": v for k, v in summary(sim).items()})
    return attrs


def build_tree(sim, interrupted: bool = False, index: bool = True) -> xr.DataTree:
    """The result tree of ``sim`` held in memory: one group per recorded level.

    ``index=False`` for a tree that is only written to a file (see :func:`group_dataset`)."""
    children = {f"/{g}": group_dataset(sim, g, v, index=index) for g, v in sim.recorder.snapshot().items()}
    return xr.DataTree.from_dict({"/": xr.Dataset(attrs=root_attrs(sim, interrupted)), **children})
