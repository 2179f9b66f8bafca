"""The facility plant's equipment registry: every component class with a ``plant_stage``,
found in the modules of :data:`PACKAGES`, in step order; and the CDU models without a plant,
by the catalogue CDU ``kind`` each declares (``cdu_kind``, :func:`cdu_models`).

A piece of equipment is one module under ``twin/cooling/`` (or ``twin/site/``) that defines a
:class:`~twin.sim.component.Component` with

``plant_stage``
    A number: where it steps within a plant step (lowest first; no two alike). The stages of
    the bundled equipment leave room between them: weather 0, CDU demand 10, facility-water
    supply 20, CDU loops 30, facility-water return 40, chilled water 50, chillers 60, heat
    rejection 70, the ledger 100.
``from_plant(plant)`` (classmethod)
    Builds it for a :class:`~twin.cooling.facility.Plant` (its ``spec``, ``catalog``, ``every``
    and the equipment built before it, ``plant.components``), or returns None when the scenario
    does not have it.

and, optionally,

``config_key`` and ``Spec``
    Its options in a scenario, ``plant.equipment.<config_key>: {...}``, validated by the pydantic
    model ``Spec`` (:func:`options`).
``cooling_power``
    Keys of its outputs that are electrical power of the cooling plant whose heat leaves
    outdoors: the ledger (:class:`~twin.cooling.facility.PlantLedger`) adds them to the cooling
    power and to both sides of the plant's energy balance.

Nothing else names it: the plant builds what this registry lists, the variable registry
(:mod:`twin.sim.variables`) declares its outputs, the exporter publishes those with a
``metric``, and its catalogue entry comes from an existing catalogue kind.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

from twin.scenario.errors import FieldError

#: Packages whose modules are searched for plant equipment.
PACKAGES = ("twin.site", "twin.cooling")


@functools.cache
def declaring(attribute: str) -> tuple[type, ...]:
    """Classes defined in the modules of :data:`PACKAGES` that set ``attribute`` themselves
    (not only through a base class) to something other than None, in module order."""
    found: dict[str, type] = {}
    for package in PACKAGES:
        pkg = importlib.import_module(package)
        for info in pkgutil.iter_modules(pkg.__path__):
            module = importlib.import_module(f"{package}.{info.name}")
            for obj in vars(module).values():
                if (isinstance(obj, type) and obj.__module__ == module.__name__
                        and vars(obj).get(attribute) is not None):
                    found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return tuple(found.values())


@functools.cache
def plant_equipment() -> tuple[type, ...]:
    """The plant's equipment classes in step order (by ``plant_stage``).

    Raises
    ------
    ValueError
        Two classes with the same stage (their order would be arbitrary).
    """
    ordered = sorted(declaring("plant_stage"), key=lambda c: c.plant_stage)
    for a, b in zip(ordered, ordered[1:]):
        if a.plant_stage == b.plant_stage:
            raise ValueError(f"plant equipment {a.__name__} and {b.__name__} share stage {a.plant_stage}")
    return tuple(ordered)


@functools.cache
def cdu_models() -> dict[str, type]:
    """CDU models without a plant by the catalogue CDU ``kind`` they bring in (``cdu_kind``).

    Raises
    ------
    ValueError
        Two models of one kind.
    """
    out: dict[str, type] = {}
    for cls in declaring("cdu_kind"):
        if cls.cdu_kind in out:
            raise ValueError(f"CDU models {out[cls.cdu_kind].__name__} and {cls.__name__} both model '{cls.cdu_kind}'")
        out[cls.cdu_kind] = cls
    return out


def config_keys() -> dict[str, type]:
    """``plant.equipment`` keys of the scenario → the equipment class they configure."""
    return {cls.config_key: cls for cls in plant_equipment() if getattr(cls, "config_key", None)}


def check_config(spec) -> None:
    """Every key of the scenario's ``plant.equipment`` names registered equipment.

    Raises
    ------
    FieldError
        At ``plant.equipment.<key>``, naming the known keys.
    """
    known = config_keys()
    for key in spec.equipment:
        if key not in known:
            raise FieldError(("plant", "equipment", key),
                             f"unknown equipment (known: {', '.join(sorted(known)) or 'none'})")


def options(cls, spec):
    """The scenario's options for equipment ``cls`` (its ``Spec`` model), or None when
    ``plant.equipment`` does not name it.

    Raises
    ------
    FieldError
        At ``plant.equipment.<config_key>.<field>`` for the first problem pydantic finds.
    """
    from pydantic import ValidationError

    raw = spec.equipment.get(cls.config_key)
    if raw is None:
        return None
    try:
        return cls.Spec.model_validate(raw or {})
    except ValidationError as exc:
        err = exc.errors()[0]
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = f"unknown field (allowed: {', '.join(cls.Spec.model_fields)})"
        raise FieldError(("plant", "equipment", cls.config_key, *err["loc"]), message) from None
