"""Assembly: the components of a scenario, built and put in step order.

The driver (:mod:`twin.sim.driver`) owns the clock, the schedule and the recorder; this module
chooses and builds what it schedules: workload demand, chip power, job accounting, power shelves,
the sled networks and rack manifolds, the cooling (the CDU model registered for the scenario's
CDU kind, or the facility plant's equipment), the power chain and the governors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.cooling.cdu import SimpleCdu
from twin.cooling.cdu_pumps import CduPumps
from twin.cooling.sizing import DesignHeat
from twin.network.component import NetworkPower
from twin.power.chain import PowerChain
from twin.power.selection import transformer_entry, ups_entry
from twin.power.chips import COMPUTE_ROLES, ChipPower, Governors
from twin.power.kernels import KERNELS
from twin.power.shelves import Shelves
from twin.scenario.errors import FieldError
from twin.scenario.loader import LoadedScenario
from twin.sim.build import System
from twin.sim.variables import cdu_model
from twin.thermal.integrators import INTEGRATORS
from twin.thermal.racks import RackThermal
from twin.workload.components import Demand, JobAccounting


@dataclass
class Parts:
    """The built components (``components`` in step order) and the ones the driver reads by name."""

    components: list
    chips: ChipPower
    network: object | None  # scale-out switches and optics outside the racks (scenario `network:`)
    racks: RackThermal
    demand: Demand
    cooling: object  # the no-plant CDU model, or the facility plant
    plant: object | None
    chain: PowerChain
    governors: Governors


def assemble(loaded: LoadedScenario, system: System, workload, totals, kernel: str, solver: str,
             step: float) -> Parts:
    """Build the components of ``loaded``'s scenario over ``system``, in step order.

    Parameters
    ----------
    loaded : LoadedScenario
        The validated scenario, its catalogue and the locator for error messages.
    system : System
        The built system (:func:`twin.sim.build.build_system`).
    workload : Workload
        The workload engine of the scenario (its jobs, if any, get a job-accounting component).
    totals : Totals
        The run's running totals the components add to.
    kernel : str
        Chip kernel name (:data:`twin.power.kernels.KERNELS`).
    solver : str
        Integrator name (:data:`twin.thermal.integrators.INTEGRATORS`).
    step : float
        Thermal step [s].
    """
    sy, sc, tot = system, loaded.scenario, totals
    jobs = workload.jobs
    chip_kernel = KERNELS[kernel](sy.chip)
    roles = {name: chip.role for name, chip in loaded.catalog.chips.items()}
    compute = np.array([roles[k] in COMPUTE_ROLES for k in sy.device_kind], dtype=float)
    chips = ChipPower(sy.chip, workload.h_w, jobs is not None, tot, chip_kernel, system=sy, compute=compute)
    network = None
    if sc.network is not None:
        from twin.network.cluster import ScaleOutNetwork

        network = ScaleOutNetwork.build(sy, loaded.catalog, sc.network.scale_out)
    racks = RackThermal(sy, INTEGRATORS[solver](sy.groups, step), tot)
    p_limit = sc.control.p_facility_limit if sc.control is not None else None
    plant = None
    if sc.plant is None:
        cooling = _cdus(loaded, sy)
        chain = PowerChain(sy.design_it_power, totals=tot, p_facility_limit=p_limit)
    else:
        design = DesignHeat.of_system(sy, network.power if network is not None else 0.0)
        cooling = plant = _plant(loaded, sy, step, design)
        cat = loaded.catalog
        pl = sc.plant
        room = (cat.room_coolers[pl.electrical_room.template]
                if pl.electrical_room.template is not None else None)
        ups = ups_entry(cat, pl.ups.template, design.it, pl.ups.mode, pl.ups.redundant)
        transformer = transformer_entry(cat, pl.transformer.template, design.it, pl.transformer.power_factor)
        if pl.ups.module_management is not None and cat.ups[ups].suspended_loss is None:
            raise loaded.locate(FieldError(("plant", "ups", "module_management"),
                                           f"UPS '{ups}' has no suspended_loss in the catalogue "
                                           "(the losses of a parked module that module management needs)"))
        chain = PowerChain(design.it, cat.ups[ups], pl.ups.mode, cat.transformers[transformer], tot,
                           redundant=pl.ups.redundant, power_factor=pl.transformer.power_factor,
                           misc_fraction=pl.misc_load, room_cooler=room, outdoor=True,
                           module_management=(pl.ups.module_management.max_load
                                              if pl.ups.module_management is not None else None),
                           p_facility_limit=p_limit)
    governors = Governors(sy, tot, chip_kernel)
    demand = Demand(workload)
    components = [NetworkPower(network), demand, chips]
    if jobs is not None:
        components.append(JobAccounting(jobs))
    equipment = plant.components if plant is not None else [cooling]
    components += [Shelves(sy, tot), racks, *equipment, chain, governors]
    return Parts(components, chips, network, racks, demand, cooling, plant, chain, governors)


def _cdus(loaded: LoadedScenario, sy: System):
    """The CDU model of a scenario without a plant: the one registered for its CDUs' kind."""
    sc = loaded.scenario
    entries = [loaded.catalog.cdus[t] for t in sy.cdu_template]
    kinds = sorted({e.kind for e in entries} - {"liquid_to_liquid"})
    if len(kinds) > 1:
        raise loaded.locate(FieldError(("cdus",), f"CDUs of kinds {', '.join(kinds)} in one scenario "
                                                  "are not modelled together"))
    coolant = sy.extra["coolant"]
    pumps = CduPumps(entries, loaded.catalog.pumps, coolant["resistance"], coolant["heat"], coolant["density"])
    if not kinds:
        volume = np.array([e.supply_volume.si if e.supply_volume is not None else 0.0 for e in entries])
        return SimpleCdu(sy, sc.site.facility_water_supply, sc.site.cold_aisle, pumps, volume)
    return cdu_model(kinds[0])(sy, sc.site.facility_water_supply, sc.site.cold_aisle, pumps, entries)


def _plant(loaded: LoadedScenario, sy: System, step: float, design):
    """The facility cooling plant of the scenario's ``plant:`` behind the CDUs, sized for the IT
    design load ``design`` (:class:`~twin.cooling.sizing.DesignHeat`)."""
    import pandas as pd

    from twin.cooling.facility import Plant

    sc, cat = loaded.scenario, loaded.catalog
    for i, t in enumerate(sy.cdu_template):
        if cat.cdus[t].kind != "liquid_to_liquid":
            raise loaded.locate(FieldError(("cdus", i, "template"), f"'{t}' is a {cat.cdus[t].kind} CDU: "
                                           "the facility plant serves liquid-to-liquid CDUs only"))
    design_flow = np.bincount(sy.rack_cdu, weights=sy.rack_m_coolant, minlength=sy.cdu_name.size)
    start = pd.Timestamp(sc.time.start)
    day = start.day_of_year + (start - start.normalize()).total_seconds() / 86400.0
    # Multi-rate: the plant (time constants of minutes) may update every k thermal steps.
    every = max(1, int(round((sc.plant.step or step) / step)))
    # the supply pipes between each CDU and its racks (plug flow; none where the catalogue has no volume)
    volume = np.array([cat.cdus[t].supply_volume.si if cat.cdus[t].supply_volume is not None else 0.0
                       for t in sy.cdu_template])
    try:
        plant = Plant(sc.plant, cat, list(sy.cdu_template), sy.cdu_setpoint, design_flow,
                      step * every, start_day_of_year=day, base_dir=loaded.base, every=every,
                      system=sy, supply_volume=volume, coolant=sy.extra["coolant"], design=design)
        why = plant.weather.span_error(sc.time.duration)  # before the run, not at its end
        if why is not None:
            raise FieldError(("plant", "weather", "file"), why)
    except FieldError as exc:
        raise loaded.locate(exc) from None
    return plant
