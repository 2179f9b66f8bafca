"""What the catalogue's models share without pydantic: the kinds of entry, where the bundled
catalogue is, and the methods of the catalogue and of a figure.

:class:`twin.catalog.model.Catalog` and :class:`~twin.catalog.model.Figure` inherit these, and so
do their stand-ins read back from the start-up cache (:mod:`twin.scenario.plain`), which is why
they are here: a run reads its catalogue without importing pydantic.
"""

from __future__ import annotations

from pathlib import Path

CATALOG_FILE = Path(__file__).with_name("hardware.yaml")
#: The kinds of catalogue entry, in file order.
KINDS = (
    "chips", "sleds", "power_shelves", "racks", "systems", "fabrics", "cdus",
    "dry_coolers", "cooling_towers", "chillers", "crahs", "pumps", "ups", "transformers",
    "coolants", "battery_backup_units", "room_coolers",
)
#: One entry of each kind, in words ("power shelf", not "power shelve").
SINGULAR = {
    "chips": "chip", "sleds": "sled", "power_shelves": "power shelf", "racks": "rack",
    "systems": "system", "fabrics": "fabric", "cdus": "CDU", "dry_coolers": "dry cooler",
    "cooling_towers": "cooling tower", "chillers": "chiller", "crahs": "CRAH", "pumps": "pump",
    "ups": "UPS", "transformers": "transformer", "coolants": "coolant",
    "battery_backup_units": "battery backup unit", "room_coolers": "room cooler",
}
#: Each kind in words, plural.
PLURAL = {kind: ("UPS" if kind == "ups" else kind.replace("_", " ").replace("cdus", "CDUs")
                 .replace("crahs", "CRAHs")) for kind in KINDS}


class FigureMethods:
    """Methods of a catalogue figure (fields ``value``, ``source``, ``si``, ...)."""

    __slots__ = ()

    @property
    def estimate(self) -> bool:
        return self.source.strip().lower().startswith("estimate")


class CatalogMethods:
    """Methods of the whole catalogue (one field per kind: ``chips``, ``sleds``, ...)."""

    __slots__ = ()

    def reference_errors(self, only: set[tuple[str, str]] | None = None) -> list[tuple[tuple, str]]:
        """Names that refer to missing or unfit entries, and scale-up domains larger than their
        fabric: ``[(field path, message), ...]``.

        ``only`` limits the reference check to those ``(kind, name)`` entries.
        """
        out = []

        def check(loc, ref, kind, want=None):
            table = getattr(self, kind)
            if only is not None and loc[:2] not in only:
                return
            if ref not in table:
                out.append((loc, f"unknown {SINGULAR[kind]} '{ref}' (known: {', '.join(sorted(table))})"))
            elif want is not None and not want[0](table[ref]):
                out.append((loc, f"'{ref}' {want[1]}"))

        scale_up = (lambda f: f.scope == "scale-up", "is a scale-out fabric; a domain needs a scale-up one")
        nic = (lambda c: c.role == "nic", "is not a NIC (role: nic)")

        for name, sled in self.sleds.items():
            for chip in sled.devices:
                check(("sleds", name, "devices", chip), chip, "chips")
            for chip, fabric in sled.fabric.items():
                check(("sleds", name, "fabric", chip), fabric, "fabrics", scale_up)
        for name, rack in self.racks.items():
            check(("racks", name, "power_shelf"), rack.power_shelf, "power_shelves")
            for sled in rack.sleds:
                check(("racks", name, "sleds", sled), sled, "sleds")
            for chip, fabric in rack.fabric.items():
                check(("racks", name, "fabric", chip), fabric, "fabrics", scale_up)
        for name, system in self.systems.items():
            for i, rack in enumerate(system.racks):
                check(("systems", name, "racks", i), rack, "racks")
            for chip, fabric in system.fabric.items():
                check(("systems", name, "fabric", chip), fabric, "fabrics", scale_up)
        for name, fabric in self.fabrics.items():
            if fabric.switch_chip is not None:
                check(("fabrics", name, "switch_chip"), fabric.switch_chip, "chips")
            for name_ in fabric.nics:
                check(("fabrics", name, "nics", name_), name_, "chips", nic)
        for name, cdu in self.cdus.items():
            if cdu.pump is not None:
                check(("cdus", name, "pump"), cdu.pump, "pumps")
        if not out:  # a changed sled or fabric can break a domain the override did not name
            out += self._domain_errors()
        return out

    def chips_in(self, rack: str) -> dict[str, int]:
        """Devices of each chip kind in one rack template."""
        out: dict[str, int] = {}
        for sled, n in self.racks[rack].sleds.items():
            for chip, k in self.sleds[sled].devices.items():
                out[chip] = out.get(chip, 0) + n.value * k.value
        return out

    def _domain_errors(self) -> list[tuple[tuple, str]]:
        """Scale-up domains larger than their fabric allows, or naming chips they do not hold."""
        out = []
        for kind in ("sleds", "racks", "systems"):
            for name, entry in getattr(self, kind).items():
                held: dict[str, int] = {}
                if kind == "sleds":
                    held = {chip: n.value for chip, n in entry.devices.items()}
                else:
                    members = [name] if kind == "racks" else entry.racks
                    if not all(r in self.racks and all(s in self.sleds for s in self.racks[r].sleds)
                               for r in members):
                        continue  # reported as an unknown reference
                    for r in members:
                        for chip, n in self.chips_in(r).items():
                            held[chip] = held.get(chip, 0) + n
                for chip, fabric in entry.fabric.items():
                    loc = (kind, name, "fabric", chip)
                    if chip not in held:
                        out.append((loc, f"the {SINGULAR[kind]} holds no '{chip}' devices"))
                    elif fabric in self.fabrics and self.fabrics[fabric].domain_size is not None \
                            and held[chip] > self.fabrics[fabric].domain_size.value:
                        out.append((loc, f"{held[chip]} '{chip}' exceed the {fabric} domain size "
                                         f"({self.fabrics[fabric].domain_size.value})"))
        return out

    def templates(self) -> list[str]:
        """Names usable as a scenario rack ``template``: racks and systems."""
        return sorted({*self.racks, *self.systems})

    def entries(self):
        """Yield ``(kind, name, entry)`` for every entry."""
        for kind in KINDS:
            for name, entry in getattr(self, kind).items():
                yield kind, name, entry
