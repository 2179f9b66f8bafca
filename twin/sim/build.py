"""Build the simulated system from a scenario: named entities and flat parameter arrays.

Entities are ordered rack → sled → device slot, so every device of a sled (and every sled of a
rack) is contiguous and level sums are ``np.add.reduceat`` over fixed offsets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from twin.cooling.hydraulics import held_branch_flow
from twin.power.device import dynamic_power_full, hbm_power_coefficients
from twin.scenario.layout import expand_cdus, expand_racks
from twin.thermal.network import CONVECTION_FLOW_EXPONENT, SledGroup, volume_to_mass_flow_air, volume_to_mass_flow_water
from twin.units import CP_WATER

if TYPE_CHECKING:
    from twin.catalog import Catalog
    from twin.scenario.model import CDUSpec, Scenario

#: Chip figures copied into per-device arrays (name in the catalogue = name of the array).
CHIP_FIELDS = (
    "tdp", "p_idle", "t_idle", "idle_leak_fraction", "p_active_idle", "p_leak_ref", "t_ref",
    "leak_beta", "clock_exponent", "t_throttle", "t_shutdown", "throttle_hysteresis",
)


def default_cdu(scenario: Scenario) -> CDUSpec:
    """The CDU of a scenario that names none: ``CDUSpec(name="cdu-1")``, made without validation
    as the models' defaults are (building CDUSpec's validator costs start-up time), or its
    stand-in for a scenario read as stand-ins (:mod:`twin.scenario.plain`), read with it."""
    from twin.scenario import plain

    if plain.is_stand_in(scenario):
        return plain.default("cdu")
    from twin.scenario.model import CDUSpec

    return CDUSpec.model_construct(name="cdu-1")


@dataclass
class System:
    """A built system: names, coordinates and parameter arrays (SI floats)."""

    # racks
    rack_name: np.ndarray
    rack_template: np.ndarray
    rack_system: np.ndarray
    rack_row: np.ndarray
    rack_hall: np.ndarray
    rack_cdu: np.ndarray  # index into cdu arrays
    rack_m_coolant: np.ndarray  # [kg/s]
    rack_shelf_capacity: np.ndarray  # rated DC output of all PSUs [W]
    rack_psus: np.ndarray  # PSUs installed
    rack_psu_rating: np.ndarray  # rated output of one PSU [W]
    rack_power_limit: np.ndarray  # [W], inf = none
    row_power_limit: np.ndarray  # [W], inf = none
    rack_shelf_type: np.ndarray  # index into shelf_curves
    shelf_curves: list[tuple[np.ndarray, np.ndarray]]
    rack_sled_start: np.ndarray
    # sleds
    sled_name: np.ndarray
    sled_template: np.ndarray
    sled_rack: np.ndarray
    sled_overhead: np.ndarray  # [W]
    sled_fan_power: np.ndarray  # [W]
    sled_m_coolant: np.ndarray  # [kg/s]
    sled_m_air: np.ndarray  # [kg/s]
    sled_device_start: np.ndarray
    # devices
    device_name: np.ndarray
    device_kind: np.ndarray
    device_sled: np.ndarray
    device_rack: np.ndarray
    device_liquid: np.ndarray
    chip: dict[str, np.ndarray]  # CHIP_FIELDS + p_dyn
    # cdus
    cdu_name: np.ndarray
    cdu_template: np.ndarray
    cdu_setpoint: np.ndarray  # [degC]
    cdu_approach: np.ndarray  # [K]
    cdu_design_flow: np.ndarray  # [kg/s]
    cdu_pump_power: np.ndarray  # [W]
    # thermal
    groups: list[SledGroup]
    hall_names: list[str]
    row_names: list[str]
    extra: dict = field(default_factory=dict)
    #: Scale-up fabric joining each device to the others of its domain; "" if none.
    device_fabric: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))
    #: Scale-up domain of each device: its sled when the sled has its own fabric for the chip
    #: (an HGX board's NVLink), else its rack's system (or the rack).
    device_domain: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))

    @property
    def shelf_members(self) -> list[np.ndarray]:
        """Rack indices per power-shelf type (index into ``shelf_curves``)."""
        if "shelf_members" not in self.extra:
            self.extra["shelf_members"] = [np.flatnonzero(self.rack_shelf_type == s)
                                           for s in range(len(self.shelf_curves))]
        return self.extra["shelf_members"]

    @property
    def design_it_power(self) -> float:
        """Σ over racks of device TDP + sled overhead + fans [W] (for sizing UPS and transformers)."""
        return float(self.chip["tdp"].sum() + self.sled_overhead.sum() + self.sled_fan_power.sum())

    @property
    def n_devices(self) -> int:
        return self.device_name.size

    @property
    def n_racks(self) -> int:
        return self.rack_name.size

    @property
    def device_row(self) -> np.ndarray:
        return self.rack_row[self.device_rack]

    @property
    def device_hall(self) -> np.ndarray:
        return self.rack_hall[self.device_rack]

    def rack_sum(self, per_sled: np.ndarray) -> np.ndarray:
        """Sum a per-sled array to racks."""
        return np.add.reduceat(per_sled, self.rack_sled_start)

    def sled_sum(self, per_device: np.ndarray) -> np.ndarray:
        """Sum a per-device array to sleds."""
        return np.add.reduceat(per_device, self.sled_device_start)


def build_system(scenario: Scenario, catalog: Catalog) -> System:
    """Expand the scenario's halls, rows and racks into a :class:`System`."""
    cdus, cdu_index = expand_cdus(list(scenario.cdus) or [default_cdu(scenario)])
    shelf_names = sorted({r.power_shelf for r in catalog.racks.values()})
    shelf_curves = [
        (np.array([p[0] for p in catalog.power_shelves[n].efficiency.points]),
         np.array([p[1] for p in catalog.power_shelves[n].efficiency.points]))
        for n in shelf_names
    ]
    cdu_tpl = [catalog.cdus[spec.template] for _, spec in cdus]
    coolant = _coolant(scenario, catalog, [spec for _, spec in cdus])
    layout = _layout(scenario, catalog, cdu_index, {n: i for i, n in enumerate(shelf_names)}, cdu_tpl,
                     coolant["heat"])
    racks, sleds, devices = layout["racks"], layout["sleds"], layout["devices"]
    kinds = _col(devices, "kind", object)
    chip = {f: np.array([getattr(catalog.chips[k], f).si for k in kinds]) for f in CHIP_FIELDS}
    chip["p_dyn"] = dynamic_power_full(chip["tdp"], chip["p_active_idle"], chip["p_leak_ref"],
                                       chip["t_ref"], chip["t_idle"], chip["leak_beta"])
    chip["power_excursion"] = np.array([catalog.chips[k].power_excursion.si
                                        if catalog.chips[k].power_excursion else 1.0 for k in kinds])
    chip["p_limit"] = chip["tdp"].copy()  # scenario caps lower it (see the power-limit governor)
    # lowest settable power limit; the idle power where the catalogue gives none
    chip["p_limit_min"] = np.array([catalog.chips[k].p_limit_min.si if catalog.chips[k].p_limit_min
                                    else catalog.chips[k].p_idle.si for k in kinds])
    # the HBM stacks' temperature limit (NaN for devices without an HBM node)
    chip["t_hbm_max"] = np.array([catalog.chips[k].t_hbm_max.si if catalog.chips[k].t_hbm_max is not None
                                  else np.nan for k in kinds])
    liquid = np.array([catalog.chips[k].cooling == "liquid" for k in kinds])
    sled_template = _col(sleds, "template", object)
    device_start = _col(sleds, "device_start", np.int64)
    groups = _sled_groups(catalog, kinds, sled_template, device_start, coolant)
    col = _col
    system = System(
        rack_name=col(racks, "name", object), rack_template=col(racks, "template", object),
        rack_system=col(racks, "system", object), rack_row=col(racks, "row", np.int64),
        rack_hall=col(racks, "hall", np.int64), rack_cdu=col(racks, "cdu", np.int64),
        rack_m_coolant=col(racks, "m_coolant", float), rack_shelf_capacity=col(racks, "capacity", float),
        rack_psus=col(racks, "psus", np.int64), rack_psu_rating=col(racks, "psu_rating", float),
        rack_power_limit=col(racks, "limit", float),
        row_power_limit=np.array(layout["row_limits"], dtype=float),
        rack_shelf_type=col(racks, "shelf", np.int64), shelf_curves=shelf_curves,
        rack_sled_start=col(racks, "sled_start", np.int64),
        sled_name=col(sleds, "name", object), sled_template=sled_template,
        sled_rack=col(sleds, "rack", np.int64), sled_overhead=col(sleds, "overhead", float),
        sled_fan_power=col(sleds, "fan", float), sled_m_coolant=col(sleds, "m_coolant", float),
        sled_m_air=col(sleds, "m_air", float), sled_device_start=device_start,
        device_name=col(devices, "name", object), device_kind=kinds,
        device_sled=col(devices, "sled", np.int64), device_rack=col(devices, "rack", np.int64),
        device_liquid=liquid, chip=chip,
        cdu_name=np.array([name for name, _ in cdus], dtype=object),
        cdu_template=np.array([spec.template for _, spec in cdus], dtype=object),
        cdu_setpoint=np.array([spec.supply_temperature for _, spec in cdus]),
        cdu_approach=np.array([t.approach.si for t in cdu_tpl]),
        cdu_design_flow=np.array([volume_to_mass_flow_water(t.design_flow.si) for t in cdu_tpl]),
        cdu_pump_power=np.array([t.pump_power.si for t in cdu_tpl]),
        groups=groups, hall_names=layout["hall_names"], row_names=layout["row_names"],
        device_fabric=col(devices, "fabric", object), device_domain=col(devices, "domain", object),
    )
    system.extra["coolant"] = coolant
    # what each rack's power shelves do beyond their healthy PSUs' rating (catalogue ``overload``)
    system.extra["rack_overload_trip"] = np.array(
        [catalog.power_shelves[shelf_names[i]].overload == "trip" for i in system.rack_shelf_type], dtype=bool)
    return system


def _coolant(scenario, catalog, cdu_specs) -> dict:
    """The secondary loops' coolant and what it changes against water
    (:func:`~twin.cooling.coolant.loop_coolant_factors`, at the mean CDU supply set-point)."""
    from twin.cooling.coolant import loop_coolant_factors
    from twin.scenario.errors import FieldError

    for i, spec in enumerate(scenario.cdus):
        if spec.coolant not in catalog.coolants:
            raise FieldError(("cdus", i, "coolant"), f"unknown coolant '{spec.coolant}' (the catalogue's "
                             f"coolants: {', '.join(sorted(catalog.coolants))})")
        if spec.coolant != scenario.cdus[0].coolant:
            raise FieldError(("cdus", i, "coolant"), "every CDU of a scenario has the same coolant "
                             f"(cdus[0] has '{scenario.cdus[0].coolant}')")
    name = cdu_specs[0].coolant if cdu_specs else "water"
    if name == "water":
        return {"name": name, "heat": 1.0, "resistance": 1.0, "density": 1.0}
    t = float(np.mean([spec.supply_temperature for spec in cdu_specs]))
    points, water = catalog.coolants[name].properties.points, catalog.coolants["water"].properties.points
    f = loop_coolant_factors(points, water, t, 0.0)
    return {"name": name, "heat": f["heat"], "resistance": f["resistance"], "density": f["density"], "temperature": t,
            "points": points, "water": water}


def _col(rows, key, dtype=None):
    return np.array([x[key] for x in rows], dtype=dtype)


def _layout(scenario, catalog, cdu_index, shelf_index, cdu_tpl, heat_ratio=1.0) -> dict:
    """Racks, sleds and devices in entity order (rack → sled → device slot), as dicts.

    A rack's coolant flow is its design flow (the scenario's or the template's) at the
    differential pressure its CDU holds: a rack whose catalogue ``pressure_drop`` at design flow
    differs from the CDU's ``index_pressure`` takes Q_d √(Δp_index / Δp_rack)
    (:func:`~twin.cooling.hydraulics.held_branch_flow`), so racks of different hydraulic
    resistance on one CDU share its flow as their resistances give. ``m_coolant`` is the
    water-equivalent mass flow Q ρ_w (ρ c_p)/(ρ c_p)_w: what carries the coolant's heat-capacity
    rate Q ρ c_p with the water constants used on the secondary side (``heat_ratio`` = 1 for
    water)."""
    racks, sleds, devices = [], [], []
    hall_names, row_names, row_limits = [], [], []
    for hall in scenario.halls:
        hall_names.append(hall.name)
        for row in hall.rows:
            row_names.append(row.name)
            row_limits.append(row.power_limit if row.power_limit is not None else np.inf)
            for spec in row.racks:
                slots = expand_racks(spec, catalog)
                family = cdu_index[spec.cdu] if spec.cdu else [0]
                domain_fabric = (catalog.systems[spec.template].fabric if spec.template in catalog.systems
                                 else catalog.racks[spec.template].fabric)
                for j, slot in enumerate(slots):
                    tpl = catalog.racks[slot.template]
                    flow = spec.coolant_flow if spec.coolant_flow is not None else tpl.coolant_flow.si
                    cdu = family[j * len(family) // len(slots)]
                    held = cdu_tpl[cdu].index_pressure
                    if tpl.pressure_drop is not None and held is not None:
                        flow = float(held_branch_flow(flow, tpl.pressure_drop.si, held.si))
                    shelf = catalog.power_shelves[tpl.power_shelf]
                    racks.append(dict(
                        name=slot.name, template=slot.template, system=slot.system,
                        row=len(row_names) - 1, hall=len(hall_names) - 1,
                        cdu=cdu,
                        m_coolant=volume_to_mass_flow_water(flow) * heat_ratio,
                        capacity=tpl.shelves.value * shelf.psus.value * shelf.psu_rating.si,
                        psus=tpl.shelves.value * shelf.psus.value, psu_rating=shelf.psu_rating.si,
                        limit=spec.power_limit if spec.power_limit is not None else np.inf,
                        shelf=shelf_index[tpl.power_shelf], sled_start=len(sleds),
                    ))
                    _rack_sleds(catalog, tpl, slot.name, len(racks) - 1, racks[-1]["m_coolant"],
                                sleds, devices, domain_fabric, slot.system)
    return {"racks": racks, "sleds": sleds, "devices": devices, "hall_names": hall_names,
            "row_names": row_names, "row_limits": row_limits}


def _rack_sleds(catalog, tpl, rack_name: str, r: int, m_coolant: float, sleds: list, devices: list,
                domain_fabric: dict, system: str) -> None:
    """Append the sleds and devices of rack ``r`` (of ``system``). Liquid flow is split over
    sleds in proportion to their plates' design flow; each device is joined to its domain by its
    sled's ``fabric[kind]`` (the sled is the domain) or else ``domain_fabric[kind]``."""
    sled_list = [(s, c.value) for s, c in tpl.sleds.items()]
    design = {
        s: sum(catalog.chips[ch].flow_ref.si * n.value
               for ch, n in catalog.sleds[s].devices.items()
               if catalog.chips[ch].cooling == "liquid")
        for s, _ in sled_list
    }
    total = sum(design[s] * n for s, n in sled_list)
    slot_no = 0
    for sname, count in sled_list:
        stpl = catalog.sleds[sname]
        for _ in range(count):
            share = design[sname] / total if total > 0 else 0.0
            sled_id = f"{rack_name}/s{slot_no:02d}"
            sleds.append(dict(
                name=sled_id, template=sname, rack=r,
                overhead=stpl.overhead.si, fan=stpl.fan_power.si,
                m_coolant=m_coolant * share,
                m_air=volume_to_mass_flow_air(stpl.air_flow.si),
                device_start=len(devices),
            ))
            for chip_name, n in stpl.devices.items():
                on_sled = chip_name in stpl.fabric
                for j in range(n.value):
                    devices.append(dict(
                        name=f"{sled_id}/{chip_name}-{j}", kind=chip_name, sled=len(sleds) - 1, rack=r,
                        fabric=stpl.fabric[chip_name] if on_sled else domain_fabric.get(chip_name, ""),
                        domain=sled_id if on_sled else system,
                    ))
            slot_no += 1


def _sled_groups(catalog, kinds, sled_template, device_start, coolant=None) -> list[SledGroup]:
    """One :class:`SledGroup` (thermal network layout) per sled template.

    With a coolant other than water the liquid plates' reference flows are water-equivalent
    (× (ρ c_p)/(ρ c_p)_w, so the ratio to the sled's flow stays the volume-flow ratio), their
    convection conductance changes by :func:`~twin.cooling.coolant.convection_factor` and the
    sled's coolant heat capacity by (ρ c_p)/(ρ c_p)_w."""
    heat = coolant["heat"] if coolant else 1.0
    groups = []
    for sname in dict.fromkeys(sled_template):
        idx = np.flatnonzero(sled_template == sname)
        stpl = catalog.sleds[sname]
        k = sum(n.value for n in stpl.devices.values())
        dev = device_start[idx][:, None] + np.arange(k)[None, :]
        slot_kinds = kinds[dev[0]]
        chips = [catalog.chips[c] for c in slot_kinds]
        slot_liquid = np.array([c.cooling == "liquid" for c in chips])
        rho = np.where(slot_liquid, volume_to_mass_flow_water(1.0) * heat, volume_to_mass_flow_air(1.0))
        exponent = np.array([c.convection_exponent.si if c.convection_exponent is not None
                             else CONVECTION_FLOW_EXPONENT for c in chips])
        g_conv = np.array([1.0 / c.r_conv_ref.si for c in chips])
        if coolant is not None and coolant["name"] != "water":
            from twin.cooling.coolant import loop_coolant_factors

            factor = loop_coolant_factors(coolant["points"], coolant["water"], coolant["temperature"],
                                          exponent)["convection"]
            g_conv = np.where(slot_liquid, g_conv * factor, g_conv)
        # One HBM node per accelerator whose catalogue entry gives the HBM figures (its stacks
        # lumped: the power, resistance and capacity are those of all its stacks together).
        hbm = [j for j, c in enumerate(chips) if getattr(c, "hbm_idle_power", None) is not None]
        hbm_s, hbm_c = hbm_power_coefficients(*(np.array([getattr(chips[j], f).si for j in hbm]) for f in
                                                ("p_idle", "tdp", "hbm_idle_power", "hbm_active_power")))
        groups.append(SledGroup(
            hbm_slot=np.array(hbm, dtype=np.int64),
            hbm_fraction=hbm_s, hbm_offset=hbm_c,
            g_hbm=np.array([1.0 / chips[j].r_hbm.si for j in hbm]),
            c_hbm=np.array([chips[j].c_hbm.si for j in hbm]),
            template=sname, sleds=idx, devices=dev, liquid=slot_liquid,
            g_jc=np.array([1.0 / c.r_jc.si for c in chips]),
            g_conv_ref=g_conv,
            flow_ref=np.array([c.flow_ref.si for c in chips]) * rho,
            conv_exponent=exponent,
            c_die=np.array([c.c_die.si for c in chips]),
            c_plate=np.array([c.c_plate.si for c in chips]),
            c_coolant=stpl.coolant_volume.si * volume_to_mass_flow_water(1.0) * CP_WATER * heat,
            c_chassis=stpl.c_chassis.si,
        ))
    return groups
