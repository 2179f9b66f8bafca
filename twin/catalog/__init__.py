"""Hardware catalogue: chips, sleds, racks, systems, power shelves and CDUs as data.

Every figure in ``hardware.yaml`` is a mapping ``{value: "<quantity>", source: "<where from>"}``;
the source is a citation or the word ``estimate``. :func:`load_catalog` validates the file with
one schema (pydantic) and returns SI floats, keeping the sources for ``twin catalog``.
"""

from twin.catalog.model import (
    CDU,
    Catalog,
    Chip,
    PowerShelf,
    Rack,
    Sled,
    System,
    load_catalog,
)

__all__ = ["CDU", "Catalog", "Chip", "PowerShelf", "Rack", "Sled", "System", "load_catalog"]
