"""Validated scenarios and catalogues read back from the start-up cache without pydantic.

A scenario and its catalogue, once validated by the pydantic models (:mod:`twin.scenario.model`,
:mod:`twin.catalog.model`, :mod:`twin.cooling.config`, ...), are stored in the on-disk cache
(:mod:`twin.cache`) by :func:`dumps`, which writes every model instance as its class path, its
fields and the names of the fields that were set. :func:`loads` reads them back either as the
models themselves (``plain=False``) or as *stand-ins* (``plain=True``, the default): objects of
a small class per model, named as the model, with

- every field as an attribute (the same values: SI floats, strings, lists, mappings, nested
  stand-ins), frozen;
- ``model_fields_set``, equality and hashing by value, as the models have;
- the model's own methods: those the simulator uses live in classes without pydantic that the
  models inherit (:data:`METHODS`, e.g. :class:`twin.catalog.base.CatalogMethods`); any other
  is taken from the model class on first use (which imports pydantic and the models: slower,
  never different).

``twin run`` reads its scenario this way (``load_scenario(..., plain=True)``), so a run whose
scenario was validated before starts without importing pydantic or building the models' classes
(~0.3 CPU-s). A stand-in pickles (for worker processes) and copies like a model.
"""

from __future__ import annotations

import importlib
import io
import pickle

#: Methods without pydantic for the stand-ins of these models (class path → module:class).
METHODS = {
    "twin.catalog.model:Catalog": "twin.catalog.base:CatalogMethods",
    "twin.catalog.model:Figure": "twin.catalog.base:FigureMethods",
}

_CLASSES: dict[str, type] = {}
#: Names of each model's attributes other than its fields (methods, properties, constants of
#: the project's classes in its MRO), as written by :func:`dumps`: a stand-in answers any other
#: missing name with AttributeError at once, without importing the model.
_ATTRIBUTES: dict[str, frozenset[str]] = {}
#: Model instances the simulator makes itself (e.g. the default CDU), as stand-ins: filled by
#: :func:`loads` from what :func:`dumps` was given as ``defaults``.
_DEFAULTS: dict[str, object] = {}


def _import(path: str):
    module, _, name = path.partition(":")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


class Plain:
    """A validated model's stand-in: its fields as attributes (see the module's notes)."""

    __slots__ = ("__dict__", "model_fields_set")
    #: ``module:qualname`` of the model this class stands in for.
    model_path = ""

    def __setattr__(self, name, value):
        raise TypeError(f"{type(self).__name__} is frozen: '{name}' cannot be set")

    def __delattr__(self, name):
        raise TypeError(f"{type(self).__name__} is frozen: '{name}' cannot be deleted")

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self):
        return hash((type(self).model_path, tuple(self.__dict__.values())))

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({fields})"

    def __reduce__(self):
        return _plain, (type(self).model_path, dict(self.__dict__), set(self.model_fields_set))

    def __getattr__(self, name):
        # Only reached for what is not a field nor a method of METHODS: the model's own
        # attribute (a method, a property, a constant) applied to this object.
        path = type(self).model_path
        if name.startswith("__") or name == "model_path" or (path in _ATTRIBUTES and name not in _ATTRIBUTES[path]):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        model = _import(path)
        for klass in model.__mro__:
            if klass.__module__.split(".")[0] == "pydantic" or klass is object:
                break
            if name in vars(klass):
                raw = vars(klass)[name]
                return raw.__get__(self, type(self)) if hasattr(raw, "__get__") else raw
        raise AttributeError(f"'{type(self).__name__}' object (a stand-in for the validated model) "
                             f"has no attribute '{name}'")


def stand_in_class(path: str) -> type:
    """The stand-in class of the model at ``path`` (``module:qualname``), made once."""
    cls = _CLASSES.get(path)
    if cls is None:
        bases = (_import(METHODS[path]), Plain) if path in METHODS else (Plain,)
        name = path.rpartition(":")[2].rpartition(".")[2]
        cls = type(name, bases, {"__slots__": (), "model_path": path, "__module__": __name__,
                                 "__qualname__": name})
        _CLASSES[path] = cls
    return cls


def _plain(path: str, fields: dict, fields_set) -> Plain:
    obj = object.__new__(stand_in_class(path))
    object.__setattr__(obj, "__dict__", fields)
    object.__setattr__(obj, "model_fields_set", frozenset(fields_set))
    return obj


def _model(path: str, fields: dict, fields_set, extra=None, private=None):
    """A model instance restored as pydantic restores a pickled one."""
    cls = _import(path)
    obj = cls.__new__(cls)
    obj.__setstate__({"__dict__": fields, "__pydantic_fields_set__": set(fields_set),
                      "__pydantic_extra__": extra, "__pydantic_private__": private})
    return obj


def _standing_in(path: str, fields: dict, fields_set, extra=None, private=None) -> Plain:
    return _plain(path, fields, fields_set)


def is_stand_in(obj) -> bool:
    """Whether ``obj`` is a stand-in (read with ``plain=True``) rather than a model."""
    return isinstance(obj, Plain)


def default(name: str):
    """The stand-in of a model instance the simulator makes itself (``"cdu"``: the CDU of a
    scenario that names none), as stored with the stand-ins last read."""
    return _DEFAULTS[name]


def _attributes(cls) -> frozenset[str]:
    fields = set(getattr(cls, "model_fields", ()))
    names = set()
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] == "pydantic" or klass is object:
            break
        names.update(n for n in vars(klass) if not n.startswith("__") and n not in fields)
    return frozenset(names)


class _Pickler(pickle.Pickler):
    def __init__(self, fh):
        super().__init__(fh, protocol=pickle.HIGHEST_PROTOCOL)
        from pydantic import BaseModel

        self._base = BaseModel

        self.attributes: dict[str, frozenset[str]] = {}

    def reducer_override(self, obj):
        if isinstance(obj, self._base):
            cls = type(obj)
            path = f"{cls.__module__}:{cls.__qualname__}"
            if path not in self.attributes:
                self.attributes[path] = _attributes(cls)
            return _model, (f"{cls.__module__}:{cls.__qualname__}", obj.__dict__,
                            sorted(obj.__pydantic_fields_set__), obj.__pydantic_extra__,
                            obj.__pydantic_private__)
        if isinstance(obj, Plain):
            return _model, (type(obj).model_path, obj.__dict__, sorted(obj.model_fields_set))
        return NotImplemented


class _Unpickler(pickle.Unpickler):
    def __init__(self, fh, plain: bool):
        super().__init__(fh)
        self._plain = plain

    def find_class(self, module, name):
        if module == __name__ and name == "_model":
            return _standing_in if self._plain else _model
        return super().find_class(module, name)


def dumps(value, defaults: dict | None = None) -> bytes:
    """``value`` (models, and lists, mappings and tuples of them) as bytes for :func:`loads`,
    with ``defaults`` (name → model instance, for :func:`default`)."""
    fh = io.BytesIO()
    pickler = _Pickler(fh)
    pickler.dump(value)
    pickler.dump(defaults or {})
    pickler.dump(pickler.attributes)  # of the classes met in value and defaults
    return fh.getvalue()


def loads(data: bytes, plain: bool = True):
    """What :func:`dumps` wrote: with stand-ins for the models (``plain``), or the models
    (whose NaN defaults are then new NaN objects: such models compare unequal to the originals,
    as NaN equals nothing but itself)."""
    unpickler = _Unpickler(io.BytesIO(data), plain)  # one memo, as the pickler's
    value, defaults, attributes = unpickler.load(), unpickler.load(), unpickler.load()
    if plain:
        _ATTRIBUTES.update(attributes)
        _DEFAULTS.update(defaults)
    return value
