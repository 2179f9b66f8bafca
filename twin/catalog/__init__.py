"""Hardware catalogue: chips, sleds, racks, systems, power shelves and CDUs as data.

Every figure in ``hardware.yaml`` is a mapping ``{value: "<quantity>", source: "<where from>"}``;
the source is a citation or the word ``estimate``. :func:`load_catalog` validates the file with
one schema (pydantic) and returns SI floats, keeping the sources for ``twin catalog``.

The names below are imported from :mod:`twin.catalog.model` on first use (PEP 562): the
simulator's modules name the catalogue without importing pydantic.
"""

__all__ = ["CDU", "Catalog", "Chip", "PowerShelf", "Rack", "Sled", "System", "load_catalog"]


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from twin.catalog import model

    value = getattr(model, name)
    globals()[name] = value
    return value
