"""Sizing the plant from the IT design load with redundancy (N + R).

One path for every piece of equipment: the heat it must carry at the IT design load
(:class:`DesignHeat`, the racks' design AC power split between the liquid and the air, plus the
pump and fan heat and, for the towers of water-cooled chillers, the compressor heat where the
equipment sees them), divided by one unit's rating, rounded up (N), plus R redundant units
(:func:`units_for_load`). An explicit ``count:`` in the scenario wins. The plant
(:class:`~twin.cooling.facility.Plant`) chains the loads:

- CRAHs: the air share, each unit's rating net of its own fan heat at its rated flow;
- chilled water (its heat-rejection units): the CRAHs' coil load (air share + CRAH fans) and
  the chilled-water pumps, at the design air load; N only, R = 0: they free-cool the chilled
  water ahead of the chillers, which carry it when a unit is out (an extra unit adds no
  capacity);
- facility water (its heat-rejection units): the liquid share + CDU pumps at the racks' design
  flow + facility-water pumps; towers carrying water-cooled chillers' condensers add the
  compressor heat of both circuits at the rated COP;
- chillers: both circuits (so the plant can run on chillers alone on a design day); without a
  ``template:`` in the scenario the unit size too, from the catalogue's chillers of the plant's
  condenser kind (:func:`unit_size`).

The power chain (UPS modules, busway, transformers; :class:`twin.power.chain.PowerChain`) is
sized from the same IT design load, :attr:`DesignHeat.it`: the UPS module size whose N + R
modules lose least at it (:func:`least_loss_size`), the transformers' standard rating for its
kVA (:func:`standard_rating`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Air share of the heat of a plant built from its CDUs alone, without racks [1] (liquid-cooled
#: sleds put 85–95 % of their heat into the liquid: CATALOGUE-SOURCES, "liquid share of heat").
AIR_SHARE_DESIGN = 0.15


def units_for_load(design_load, unit_capacity, redundant=1):
    """Units of one type for a design load: N = ⌈Q_design / Q_unit⌉ duty plus R redundant.

    Parameters
    ----------
    design_load : float
        Load the duty units must carry [W] (IT design load plus the other heat the equipment
        sees: electrical losses, pump and fan heat, the air share for air-side equipment).
    unit_capacity : float
        Rated capacity of one unit [W], > 0.
    redundant : int
        R (1 for N+1, 0 for N).

    Returns
    -------
    int
        N + R, N ≥ 1.

    References
    ----------
    .. [1] Uptime Institute, Tier Standard: Topology (2018): N+1 capacity components.
    """
    if unit_capacity <= 0:
        raise ValueError(f"units_for_load: unit capacity must be > 0, got {unit_capacity}")
    return int(max(1, math.ceil(design_load / unit_capacity - 1e-9)) + redundant)


def unit_size(design_load, capacities, min_loads):
    """The unit size for a design load among a catalogue's sizes: the smallest of those that
    carry it with the fewest duty units, at or above its minimum load there.

    Parameters
    ----------
    design_load : float
        Load the duty units must carry [W].
    capacities : sequence of float
        Rated capacity of each size [W], > 0.
    min_loads : sequence of float
        Each size's minimum part-load ratio before it cycles or false-loads [1] (0: none).

    Returns
    -------
    int
        Index of the size chosen.

    Notes
    -----
    Each size needs N_i = ⌈Q / C_i⌉ duty units (:func:`units_for_load`); the candidates are the
    sizes with the fewest, N* = min N_i (fewest machines to buy and pipe), and of those the
    smallest C: the N* units share Q equally at design, PLR_i = Q / (N* C_i), so the smallest
    unit runs the highest part load and its trim stays above the minimum load longest as the
    load falls. A candidate whose design PLR is below its own minimum load is passed over
    (unless all are).
    """
    cap = np.asarray(capacities, dtype=float)
    if cap.size == 0 or np.any(cap <= 0):
        raise ValueError(f"unit_size: capacities must be > 0, got {list(cap)}")
    n = np.array([units_for_load(design_load, c, 0) for c in cap])
    fewest = n == n.min()
    ok = fewest & (design_load / (n * cap) >= np.asarray(min_loads, dtype=float))
    pool = np.flatnonzero(ok if ok.any() else fewest)
    return int(pool[np.argmin(cap[pool])])


def least_loss_size(design_load, capacities, losses, redundant=1):
    """The module size of a modular system (a UPS) for a design load: the one whose N + R
    modules lose least at it.

    Parameters
    ----------
    design_load : float
        Load the duty modules must carry [W].
    capacities : sequence of float
        Rated output of one module of each size [W], > 0.
    losses : callable
        ``losses(i, n)``: losses of ``n`` modules of size ``i`` sharing ``design_load`` [W].
    redundant : int
        R (1 for N+1).

    Returns
    -------
    (int, int)
        Index of the size chosen and its module count N + R.

    Notes
    -----
    Each size needs n_i = ⌈Q / C_i⌉ + R modules (:func:`units_for_load`); all of them share the
    load, so each runs at x_i = Q / (n_i C_i). Smaller modules mean more of them and a smaller
    redundant share of the installed capacity (x_i nearer the efficiency plateau), larger ones
    fewer no-load losses: the size with the least L_i = losses(i, n_i) is chosen, the smaller
    on a tie (within 1e-9 relative). Unlike :func:`unit_size` (chillers: fewest machines to
    buy and pipe), modules slide into one frame, so their count costs little and their losses
    run all year.
    """
    cap = np.asarray(capacities, dtype=float)
    if cap.size == 0 or np.any(cap <= 0):
        raise ValueError(f"least_loss_size: capacities must be > 0, got {list(cap)}")
    n = [units_for_load(design_load, c, redundant) for c in cap]
    loss = np.array([float(losses(i, n[i])) for i in range(cap.size)])
    pool = np.flatnonzero(loss <= loss.min() * (1.0 + 1e-9))
    i = int(pool[np.argmin(cap[pool])])
    return i, n[i]


def standard_rating(design_load, ratings):
    """The standard rating for a design load: the smallest at or above it, else the largest.

    Parameters
    ----------
    design_load : float
        Load to carry, in the ratings' unit (kVA for transformers: the design load with its
        margin, over the power factor) [VA].
    ratings : sequence of float
        Standard ratings available [VA], > 0.

    Returns
    -------
    int
        Index of the rating chosen: min{S_i ≥ S}, or max S_i where none is (the load is then
        split over ⌈S / S_max⌉ units; :func:`twin.power.delivery.transformer_count`).
    """
    r = np.asarray(ratings, dtype=float)
    if r.size == 0 or np.any(r <= 0):
        raise ValueError(f"standard_rating: ratings must be > 0, got {list(r)}")
    fits = np.flatnonzero(r >= design_load * (1.0 - 1e-9))
    return int(fits[np.argmin(r[fits])]) if fits.size else int(np.argmax(r))


@dataclass(frozen=True)
class DesignHeat:
    """The IT design load the plant is sized for, by where its heat goes [W].

    Attributes
    ----------
    liquid : float
        Heat into the CDUs' secondary loops: the liquid-cooled devices at their TDP.
    air : float
        Heat into the room air: the rest of the racks' design AC input (air-cooled devices,
        sled overhead and fans, power-shelf losses) and the scale-out network.
    """

    liquid: float
    air: float

    @property
    def it(self) -> float:
        """The IT design load [W]: liquid + air (the racks' design AC input and the network)."""
        return self.liquid + self.air

    @classmethod
    def of_system(cls, system, network: float = 0.0) -> DesignHeat:
        """From the racks: liquid = Σ TDP of the liquid-cooled devices, air = the racks'
        design AC input (:func:`twin.power.chain.design_ac_power`) less that, plus the
        scale-out network's power ``network`` [W]."""
        from twin.power.chain import design_ac_power

        sy = system
        liquid = float(np.asarray(sy.chip["tdp"])[np.asarray(sy.device_liquid, dtype=bool)].sum())
        return cls(liquid, design_ac_power(sy) - liquid + float(network))

    @classmethod
    def of_cdus(cls, capacity: float) -> DesignHeat:
        """A plant built from its CDUs alone (no racks known): their rated heat ``capacity`` [W]
        as the liquid share and :data:`AIR_SHARE_DESIGN` of the total in the air."""
        return cls(capacity, AIR_SHARE_DESIGN / (1.0 - AIR_SHARE_DESIGN) * capacity)
