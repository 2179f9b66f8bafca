"""Which UPS module and transformer a plant gets without a ``template:``: the sizes a designer
picks for the IT design load among the catalogue entries of one family, through the plant's one
sizing path (:mod:`twin.cooling.sizing`). The power chain (:class:`twin.power.chain.PowerChain`)
is then built on the entries chosen here.
"""

from __future__ import annotations

from twin.cooling.sizing import least_loss_size, standard_rating
from twin.power.chain import TRANSFORMER_MARGIN, design_bus_load
from twin.power.delivery import apparent_power
from twin.power.ups import UPS_MODES, ups_loss_coefficients, ups_losses

#: The UPS module and transformer a plant without a ``template:`` starts from: the design chooses
#: among the catalogue entries of their ``family`` (:func:`ups_entry`, :func:`transformer_entry`).
DEFAULT_UPS = "ups-500kw-modern"
DEFAULT_TRANSFORMER = "mv-transformer-1000kva"


def _family(entries: dict, default: str) -> list[str]:
    """Names of the catalogue entries of ``default``'s family (``default`` alone without one)."""
    fam = entries[default].family
    return [k for k, e in entries.items() if fam is not None and e.family == fam] or [default]


def ups_entry(catalog, template: str | None, design_it_power: float, mode: str = "double_conversion",
              redundant: int = 1) -> str:
    """Name of the scenario's UPS module entry: its ``template``, else the module size of
    :data:`DEFAULT_UPS`'s family whose N + R modules lose least at the design output in
    ``mode`` (:func:`~twin.cooling.sizing.least_loss_size` with
    :func:`~twin.power.ups.ups_losses` on each size's curve; the output is
    :func:`design_bus_load` of ``design_it_power`` [W])."""
    if template is not None:
        return template
    names = _family(catalog.ups, DEFAULT_UPS)
    p = design_bus_load(design_it_power)
    sizes = [catalog.ups[k] for k in names]
    coeffs = [ups_loss_coefficients(*zip(*getattr(u, UPS_MODES[mode]).points)) for u in sizes]
    i, _ = least_loss_size(p, [u.rating.si for u in sizes],
                           lambda i, n: ups_losses(p, n, sizes[i].rating.si, coeffs[i]), redundant)
    return names[i]


def transformer_entry(catalog, template: str | None, design_it_power: float, power_factor: float) -> str:
    """Name of the scenario's transformer entry: its ``template``, else the standard rating of
    :data:`DEFAULT_TRANSFORMER`'s family for the sized load, S = :data:`TRANSFORMER_MARGIN` ×
    P_design / PF (:func:`~twin.cooling.sizing.standard_rating`: the smallest rating ≥ S, else
    the largest, counted by :func:`~twin.power.delivery.transformer_count`)."""
    if template is not None:
        return template
    names = _family(catalog.transformers, DEFAULT_TRANSFORMER)
    s = float(apparent_power(TRANSFORMER_MARGIN * design_it_power, power_factor))
    return names[standard_rating(s, [catalog.transformers[k].rating.si for k in names])]
