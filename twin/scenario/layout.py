"""How scenario rack entries expand into named racks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from twin.catalog import Catalog
    from twin.scenario.model import RackSpec


@dataclass(frozen=True)
class RackSlot:
    name: str  # rack name in outputs
    template: str  # catalogue rack entry
    system: str  # the scale-up domain it belongs to (its own name for a lone rack)


def expand_racks(spec: RackSpec, catalog: Catalog) -> list[RackSlot]:
    """Expand one ``racks:`` entry into named racks.

    ``name`` alone for one rack; ``name-01 … name-NN`` for ``count: NN``; systems of several
    racks (a Trn3 UltraServer is two) add ``-a``, ``-b`` suffixes: ``us-03-b``.
    """
    if spec.template in catalog.systems:
        members = catalog.systems[spec.template].racks
    else:
        members = [spec.template]
    width = max(2, len(str(spec.count)))
    out = []
    for i in range(spec.count):
        base = spec.name if spec.count == 1 else f"{spec.name}-{i + 1:0{width}d}"
        if len(members) == 1:
            out.append(RackSlot(base, members[0], base))
        else:
            out.extend(RackSlot(f"{base}-{chr(97 + j)}", rack, base) for j, rack in enumerate(members))
    return out


def expand_cdus(specs) -> tuple[list[tuple[str, object]], dict[str, list[int]]]:
    """Expand ``cdus:`` entries: a list of (name, spec) and a map from every usable name (each
    CDU's own, and a family's ``name``) to CDU indices."""
    cdus, names = [], {}
    for spec in specs:
        width = max(2, len(str(spec.count)))
        members = []
        for i in range(spec.count):
            name = spec.name if spec.count == 1 else f"{spec.name}-{i + 1:0{width}d}"
            names[name] = [len(cdus)]
            members.append(len(cdus))
            cdus.append((name, spec))
        names[spec.name] = members
    return cdus, names
