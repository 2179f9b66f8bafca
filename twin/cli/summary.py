"""The run summary table printed by ``twin run``."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from twin.cli.common import duration_text
from twin.report.diagnostics import plural


#: Largest IT power recording interval [s] at which the largest ramp is shown: beyond a minute the
#: difference of two interval means says little about how fast power can change.
RAMP_INTERVAL = 60.0
#: Stored heat shown beside the liquid and air shares once it reaches this share of IT energy.
STORED_SHOWN = 0.0005


def heat_shares(kpi: dict) -> str:
    """Heat to liquid and to air as shares of IT energy; on a run short enough for the thermal
    mass to matter, the share it stored (liquid + air + stored = 100 %)."""
    e_it = max(kpi["energy_it_J"], 1e-9)
    text = f"{kpi['energy_liquid_J'] / e_it:.1%} / {kpi['energy_air_J'] / e_it:.1%}"
    stored = kpi.get("energy_stored_J", 0.0) / e_it
    if abs(stored) >= STORED_SHOWN:
        text += f" ({stored:+.1%} {'stored in' if stored > 0 else 'released by'} the thermal mass)"
    return text


def hottest_per_kind(kpi: dict) -> str:
    """``gb300 84.8, grace 61.0, connectx8 85.7 °C``: the hottest die of each device kind."""
    kinds = [(k[len("t_die_max_"):-len("_degC")], v) for k, v in kpi.items()
             if k.startswith("t_die_max_") and k.endswith("_degC") and k != "t_die_max_degC"]
    return ", ".join(f"{k} {v:.1f}" for k, v in kinds) + " °C"


def summary_table(kpi: dict, path: Path | None, interrupted: bool) -> Table:
    import numpy as np

    def mw(x):
        return f"{x / 1e6:,.3f} MW" if x >= 1e6 else f"{x / 1e3:,.1f} kW"

    table = Table(title="twin run summary" + (" (interrupted)" if interrupted else ""), show_header=False)
    table.add_column("quantity")
    table.add_column("value", justify="right")
    rows = [
        ("simulated time", duration_text(kpi["simulated_seconds"])),
        ("devices / racks", f"{kpi['n_devices']:,} / {kpi['n_racks']:,}"),
        ("IT energy", f"{kpi['energy_it_J'] / 3.6e9:,.3f} MWh"),
        ("facility energy", f"{kpi['energy_facility_J'] / 3.6e9:,.3f} MWh"),
        ("mean IT power", mw(kpi["p_it_mean_W"])),
        ("peak facility power", mw(kpi["p_facility_peak_W"])),
        ("peak rack power", mw(kpi["p_rack_peak_W"])),
        ("PUE (energy-weighted)", f"{kpi['pue']:.3f}"),
        ("heat to liquid / air", heat_shares(kpi)),
        ("max die temperature", f"{kpi['t_die_max_degC']:.1f} °C"
                                + (f" ({kpi['t_die_max_kind']} {kpi['t_die_max_device']})"
                                   if "t_die_max_device" in kpi else "")),
        *([("hottest of each kind", hottest_per_kind(kpi))] if "t_die_max_device" in kpi else []),
        *([("max HBM temperature", f"{kpi['t_hbm_max_degC']:.1f} °C (limit {kpi['t_hbm_limit_degC']:.1f} °C; "
                                   f"{plural(kpi['devices_over_hbm_limit'], 'device')} above)")]
          if "t_hbm_max_degC" in kpi else []),
        ("throttled time", f"{kpi['throttled_device_seconds']:,.0f} device-s "
                           f"({plural(kpi['devices_throttled'], 'device')})"),
        ("devices tripped", f"{kpi['devices_tripped']}"),
        ("energy balance residual", f"{kpi['energy_residual']:.1e}"),
    ]
    if "network_power_W" in kpi:
        rows.append(("scale-out network", f"{kpi['network_switches']:,} switches in {kpi['network_tiers']} tiers, "
                     f"{kpi['network_optics']:,} optics: {mw(kpi['network_power_W'])} "
                     f"(+ {kpi['network_nics']:,} NICs, {mw(kpi['network_nic_power_W'])} at TDP, in the racks)"))
    if "wue_L_per_kWh" in kpi:
        rows.append(("WUE (water / IT energy)", f"{kpi['wue_L_per_kWh']:.3f} L/kWh ({kpi['water_m3']:,.1f} m³)"))
        rows.append(("chiller / full free cooling", f"{kpi['chiller_hours']:,.1f} h / {kpi['full_free_cooling_hours']:,.1f} h"))
        rows.append(("cold aisle outside ASHRAE", f"{kpi['hours_outside_ashrae_recommended']:,.1f} h recommended, "
                                                  f"{kpi['hours_outside_ashrae_allowable']:,.1f} h allowable"))
        rows.append(("plant energy residual", f"{kpi['plant_energy_residual']:.1e}"))
    if "ride_through_s" in kpi:
        rows.append(("UPS battery left", f"{kpi['battery_left_J'] / 3.6e6:,.1f} kWh"
                     + (f" (ran out after {kpi['ride_through_s']:,.0f} s)" if np.isfinite(kpi['ride_through_s']) else "")))
    if "peak_to_average" in kpi:
        rows.append((f"IT power peak/average ({duration_text(kpi['p_it_record_interval_s'])})",
                     f"{kpi['peak_to_average']:.2f}"))
        if kpi["p_it_record_interval_s"] <= RAMP_INTERVAL:  # a ramp between coarse means is no ramp
            rows.append(("largest IT power ramp", f"{kpi['largest_ramp_W_per_s'] / 1e3:,.1f} kW/s"))
        if kpi["p_it_record_interval_s"] <= 5.0 and "band_0p1_20Hz_share" in kpi:  # samples every ≤ 5 s, ≥ 4 of them
            rows.append(("fluctuation in 0.1-20 Hz", f"{kpi['band_0p1_20Hz_share']:.0%}"))
    if "first_event_s" in kpi:
        def after(x):
            return "never" if not np.isfinite(x) else f"{x:,.0f} s"
        rows.append(("first event at", f"{kpi['first_event_s']:,.0f} s"))
        rows.append(("time to first throttle / trip",
                     f"{after(kpi['time_to_first_throttle_s'])} / {after(kpi['time_to_first_trip_s'])}"))
    if kpi.get("capped_rack_seconds"):
        rows.append(("capped by power limits", f"{kpi['capped_rack_seconds']:,.0f} rack-s"))
    if kpi.get("energy_smoothing_J"):
        rows.append(("energy spent on smoothing", f"{kpi['energy_smoothing_J'] / 3.6e6:,.1f} kWh"))
    for key in [k for k in kpi if k.startswith("job_") and k.endswith("_iterations")]:
        name = key[4:-len("_iterations")]
        def get(suffix, _name=name):
            return kpi.get(f"job_{_name}_{suffix}", float("nan"))
        unit = {"inference": "requests", "cpu": "device-s of work"}.get(kpi.get(f"job_{name}_kind"), "it")
        line = f"{get('iterations'):,.0f} {unit}"
        if get("tokens") > 0:
            ept = get("energy_per_token_J")
            ept_text = f"{ept:,.3g} J/token" if ept >= 1 else f"{ept * 1e3:,.3g} mJ/token"
            tok = get("tokens")
            tok_text = f"{tok / 1e9:,.2f} G" if tok >= 1e9 else f"{tok / 1e6:,.2f} M" if tok >= 1e6 else f"{tok:,.0f}"
            line += f", {tok_text} tokens, {ept_text}"
            if f"job_{name}_cost_per_million_tokens" in kpi:
                line += f", {get('cost_per_million_tokens'):.4f}/M tokens"
        elif get("iterations") > 0 and unit == "it":
            line += f", {get('energy_per_iteration_J') / 1e6:,.2f} MJ/it"
        if get("throttle_loss_s") > 0:
            line += f", {get('throttle_loss_s'):,.0f} s lost to throttling"
        if get("failures") > 0:
            line += f", {plural(int(get('failures')), 'failure')}"
        rows.append((f"job {name}", line))
    if path is not None:
        rows.append(("output", str(path)))
    for k, v in rows:
        table.add_row(k, v)
    return table
