"""Load a scenario file: YAML with line numbers → validated :class:`Scenario`.

Every problem becomes one :class:`ScenarioError` naming the file, the line and the field path.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from twin.scenario.errors import FieldError, OptionError, ScenarioError, format_path
from twin.scenario.files import FileProblem, check_epw, check_table, read_text_file
from twin.scenario.layout import expand_cdus, expand_racks
from twin.scenario.names import EVENT_KINDS, GROUPS
from twin.text import excerpt

if TYPE_CHECKING:  # pydantic and the models are imported when a scenario is validated
    from pydantic import ValidationError

    from twin.catalog import Catalog
    from twin.scenario.model import Scenario

MAX_FILE_BYTES = 5_000_000
#: Deepest nesting of mappings and lists in a scenario (the bundled ones need 7).
MAX_DEPTH = 32
#: Longest run of digits in one scalar: a float has 17 significant digits, a 64-bit seed 19.
MAX_DIGITS = 100
_DIGITS = re.compile(r"\d{%d,}" % (MAX_DIGITS + 1))


def _read(path: Path) -> str:
    """A scenario's text: a regular file of at most MAX_FILE_BYTES, read without blocking."""
    name = str(path)
    try:
        text = read_text_file(path, MAX_FILE_BYTES, what="scenario file")
    except FileProblem as exc:
        raise ScenarioError(exc.reason, file=name) from None
    return text


#: libyaml's parser when PyYAML has it (~15× faster than the pure-Python one); a document it
#: refuses is read again with the pure-Python parser, whose messages the errors quote.
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _compose(text: str, name: str, loader=_FAST_LOADER) -> yaml.Node:
    """Parse YAML into a node tree (keeps line numbers).

    Refuses anchors and aliases, tags (``!!python/…``, ``!!set``, any ``!tag``), nesting deeper
    than :data:`MAX_DEPTH` and scalars with more than :data:`MAX_DIGITS` digits in a row, before
    any value is built (the checks walk the event stream, which needs no recursion). A document
    libyaml refuses is parsed again with PyYAML's own parser, so every error reads the same.
    """
    if loader is not yaml.SafeLoader:
        try:
            return _compose_with(text, name, loader)
        except Exception:  # refused (or failed otherwise): PyYAML's parser decides and words it
            pass
    return _compose_with(text, name, yaml.SafeLoader)


def _compose_with(text: str, name: str, loader) -> yaml.Node:
    depth = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            line = event.start_mark.line + 1
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise ScenarioError("YAML anchors and aliases are not allowed in scenarios",
                                    file=name, line=line)
            tag = getattr(event, "tag", None)
            if tag is not None and not (isinstance(event, yaml.ScalarEvent) and tag == "!"):
                tag = tag.replace("tag:yaml.org,2002:", "!!")
                raise ScenarioError(f"YAML tags are not allowed in scenarios (found {excerpt(tag)})",
                                    file=name, line=line)
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise ScenarioError(f"nested more than {MAX_DEPTH} levels deep", file=name, line=line)
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            elif isinstance(event, yaml.ScalarEvent) and _DIGITS.search(event.value):
                raise ScenarioError(f"a number with more than {MAX_DIGITS} digits", file=name, line=line)
        node = yaml.compose(text, Loader=loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise ScenarioError(f"not valid YAML: {exc.problem}", file=name, line=line) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"not valid YAML: {type(exc).__name__}", file=name) from None
    if node is None:
        raise ScenarioError("empty file: a scenario needs at least 'name', 'time' and 'halls'", file=name)
    if not isinstance(node, yaml.MappingNode):
        raise ScenarioError("a scenario must be a YAML mapping of keys to values", file=name,
                            line=node.start_mark.line + 1)
    return node


def _line_map(node: yaml.Node, path: tuple = (), out: dict | None = None) -> dict[tuple, int]:
    """Map field paths to 1-based line numbers (keys point at their key's line)."""
    if out is None:
        out = {(): node.start_mark.line + 1}
    if isinstance(node, yaml.MappingNode):
        seen = set()
        for key, value in node.value:
            k = key.value
            sub = path + (k,)
            if k in seen:
                raise ScenarioError("duplicate key", line=key.start_mark.line + 1, path=format_path(sub))
            seen.add(k)
            out[sub] = key.start_mark.line + 1
            _line_map(value, sub, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            sub = path + (i,)
            out[sub] = item.start_mark.line + 1
            _line_map(item, sub, out)
    return out


def _line_of(lines: dict[tuple, int], loc: tuple) -> int:
    loc = tuple(loc)
    while loc not in lines and loc:
        loc = loc[:-1]
    return lines.get(loc, 1)


def _clean_loc(loc) -> tuple:
    """Drop pydantic's union/validator tags from an error location."""
    return tuple(p for p in loc if isinstance(p, int) or not any(c in str(p) for c in "[(-"))


def _unwrap(tp):
    """Strip Annotated and Optional/Union wrappers down to a model or container type."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = args[0]
        else:
            return tp


def _model_at(loc: tuple):
    """The pydantic model class found at ``loc`` inside a Scenario, if any."""
    from pydantic import BaseModel

    from twin.scenario.model import Scenario

    tp = Scenario
    for part in loc:
        tp = _unwrap(tp)
        if isinstance(part, int):
            args = typing.get_args(tp)
            tp = args[0] if args else None
        elif isinstance(tp, type) and issubclass(tp, BaseModel) and part in tp.model_fields:
            tp = tp.model_fields[part].annotation
        else:
            return None
    tp = _unwrap(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _message(err: dict, loc: tuple) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1])
        allowed = ", ".join(model.model_fields) if model else ""
        return f"unknown key {excerpt(loc[-1])}" + (f" (allowed: {allowed})" if allowed else "")
    if kind == "missing":
        return "required field is missing"
    msg = err["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
    return msg


def read_document(path: Path, what: str) -> tuple[str, dict[tuple, int], dict]:
    """Read a YAML mapping with its line map: (text, field path → line, data).

    Raises ScenarioError (file, line) for a missing, unreadable, empty or non-mapping file, for
    anchors/aliases, duplicate keys and non-string keys.
    """
    name = str(path)
    text = _read(path)
    node = _compose(text, name)
    try:
        lines = _line_map(node)
    except ScenarioError as exc:
        raise ScenarioError(exc.message, file=name, line=exc.line, path=exc.path) from None
    data = yaml.load(text, Loader=_FAST_LOADER)  # anchors/aliases already refused
    if not all(isinstance(k, str) for k in data):
        raise ScenarioError(f"{what} keys must be strings", file=name)
    return text, lines, data


@dataclass
class LoadedScenario:
    """A validated scenario with what is needed to place later errors in its file."""

    scenario: Scenario
    catalog: Catalog
    text: str
    path: Path
    lines: dict[tuple, int]
    estimate: object = None  # twin.sim.resources.Estimate of the run, once checked

    @property
    def base(self) -> Path:
        """Folder that relative paths in the scenario are resolved from."""
        return self.path.parent

    def locate(self, err: FieldError) -> ScenarioError:
        """Turn a :class:`FieldError` found after loading into a file:line ScenarioError."""
        return ScenarioError(err.message, file=str(self.path), line=_line_of(self.lines, err.loc),
                             path=format_path(err.loc))


def _prune(loc: tuple, data) -> tuple:
    """Drop location parts that are not in the document (tags of discriminated unions)."""
    out, node = [], data
    for i, part in enumerate(loc):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif isinstance(node, dict) and i + 1 < len(loc) and isinstance(part, str) \
                and node.get("kind") == part:
            continue  # the discriminator value pydantic inserts for `kind`-tagged unions
        else:
            node = None
        out.append(part)
    return tuple(out)


def _validation_error(exc: ValidationError, prefix: tuple, data=None) -> FieldError:
    errors = exc.errors()
    # A misspelled key also makes the intended one "missing": report the misspelling.
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = _clean_loc(err["loc"])
    if data is not None:
        loc = _prune(loc, data)
    loc = prefix + loc
    return FieldError(loc, _message(err, loc))


def load_scenario(path: str | Path, overrides: dict | None = None,
                  options: dict[str, str] | None = None, *, plain: bool = False) -> LoadedScenario:
    """Read, validate and cross-check a scenario file.

    Parameters
    ----------
    path : str or Path
        The YAML file.
    overrides : dict, optional
        Values merged into top-level keys after parsing (e.g. ``{"time": {"duration": "1 h"}}``);
        used by the CLI's ``--duration``, ``--step``, ``--seed`` and ``--record``.
    options : dict, optional
        Field path of an override → the command-line option it came from (``{"time.duration":
        "--duration"}``). A bad value there is an :class:`OptionError` naming the option, not
        the file; an error elsewhere that only the overrides cause says which options it is
        "with".
    plain : bool
        Return the scenario and catalogue as stand-ins of the models (:mod:`twin.scenario.plain`:
        the same fields and methods, no pydantic), read from the on-disk cache when the same
        data were validated before by the same code (validated, and then stored, otherwise):
        what ``twin run`` uses, to start without importing pydantic. The same errors either way.

    Returns
    -------
    LoadedScenario
        The scenario, the catalogue with the scenario's own entries merged in, the file text and
        the line map.

    Raises
    ------
    ScenarioError
        With file, line and field path, for every kind of bad input.
    """
    try:
        return _load_scenario(Path(path), overrides, plain)
    except ScenarioError as exc:
        if not overrides or not options or isinstance(exc, OptionError):
            raise
        for field, option in options.items():
            if exc.path == field or exc.path.startswith((field + ".", field + "[")):
                raise OptionError(option, exc.message) from None
        try:
            _load_scenario(Path(path), None)
        except ScenarioError:
            raise exc from None  # the file is bad by itself
        given = ", ".join(f"{option} {_lookup(overrides, field)}" for field, option in options.items()
                          if _lookup(overrides, field) is not None)
        raise ScenarioError(f"{exc.message} (with {given})", file=exc.file, line=exc.line,
                            path=exc.path) from None


def _lookup(data: dict, field: str):
    for part in field.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


#: Top-level keys of a sweep file that a scenario never has.
SWEEP_KEYS = ("base", "parameters")


def _load_scenario(path: Path, overrides: dict | None, plain: bool = False) -> LoadedScenario:
    text, lines, data = read_document(path, "scenario")
    if all(k in data for k in SWEEP_KEYS) and "halls" not in data:
        raise ScenarioError("this is a sweep file (it has 'base' and 'parameters'), not a scenario; "
                            "`twin sweep` runs it", file=str(path), line=lines.get(("base",), 1))
    layers = apply_overlays(path, lines, data)
    for key, value in (overrides or {}).items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return _validated(data, text, path, lines, layers, plain)


def scenario_from_data(data: dict, path: str | Path, text: str = "") -> LoadedScenario:
    """Validate scenario data already in memory (built by a program rather than read from a
    file) exactly as :func:`load_scenario` validates a file. Relative paths in it resolve from
    ``path``'s folder; errors name ``path``, line 1 and the field path."""
    return _validated(data, text, Path(path), {(): 1}, [])


def _validated(data: dict, text: str, path: Path, lines: dict, layers: list, plain: bool = False) -> LoadedScenario:
    digest = _plain_digest(data) if plain else None
    found = _read_plain(digest) if digest is not None else None
    if found is not None:
        scenario, catalog = found
    else:
        from pydantic import ValidationError

        from twin.catalog.model import CatalogError, load_catalog

        where = _Layered(LoadedScenario(None, None, text, path, lines), layers)  # type: ignore[arg-type]
        try:
            scenario = _validate(data)
        except ValidationError as exc:
            raise where.locate(_validation_error(exc, (), data)) from None
        try:
            catalog = load_catalog().merged(scenario.catalog)
        except CatalogError as exc:
            raise where.locate(FieldError(("catalog",) + exc.loc, exc.message)) from None
        if plain:
            scenario, catalog = _store_plain(digest, scenario, catalog)
    loaded = LoadedScenario(scenario, catalog, text, path, lines)
    try:
        check_references(scenario, catalog, base=path.parent)
    except FieldError as exc:
        raise loaded.locate(exc) from None
    return loaded


def _plain_digest(data: dict) -> str | None:
    """The cache key of the stand-ins of ``data`` validated with the bundled catalogue merged:
    the data's ``repr`` (plain YAML values only, else None: nothing is read or stored), the
    catalogue file's bytes, the package's source files (path, size, modification time), the
    Python version, the installed pydantic's files and the PyYAML version."""
    if not _plain(data):
        return None
    import sys

    from twin import cache
    from twin.catalog.base import CATALOG_FILE

    try:
        catalog = CATALOG_FILE.read_bytes()
    except OSError:
        return None
    return cache.key("loaded", repr(data), catalog, cache.source_signature(Path(__file__).parents[1]), sys.version,
                     cache.library_signature("pydantic", "pydantic_core"), yaml.__version__)


def _read_plain(digest: str):
    """(scenario, catalogue) as stand-ins from the on-disk cache, or None."""
    from twin import cache
    from twin.scenario import plain

    data = cache.load_bytes("loaded", digest)
    if data is None:
        return None
    try:
        scenario, catalog = plain.loads(data)
    except Exception:  # damaged, or of classes no longer there: validate instead
        return None
    if getattr(type(scenario), "model_path", None) != "twin.scenario.model:Scenario" \
            or getattr(type(catalog), "model_path", None) != "twin.catalog.model:Catalog":
        return None
    return scenario, catalog


def _store_plain(digest: str | None, scenario, catalog):
    """The validated scenario and catalogue as stand-ins (stored in the cache under ``digest``
    when there is one), with the default CDU (:func:`twin.sim.build.default_cdu`)."""
    from twin import cache
    from twin.scenario import plain
    from twin.scenario.model import CDUSpec

    data = plain.dumps((scenario, catalog), {"cdu": CDUSpec.model_construct(name="cdu-1")})
    if digest is not None:
        cache.store_bytes("loaded", digest, data)
    return plain.loads(data)


def _validate(data: dict) -> Scenario:
    """``Scenario.model_validate(data)``, read back from the on-disk cache (:mod:`twin.cache`)
    when the same data were validated before by the same code.

    Building the scenario models' validators and validating costs ~0.08 CPU-s of every run's
    start-up; the key is the data's ``repr`` (plain YAML values only: strings, numbers, booleans,
    None, dates, lists and mappings — anything else is validated every time), the package's
    source files (path, size, modification time) and the Python and pydantic versions. Data
    that fail validation are never stored, so every error is found and reported as before.
    """
    from twin import cache
    from twin.scenario.model import Scenario

    if not _plain(data):
        return Scenario.model_validate(data)
    import sys

    import pydantic

    digest = cache.key(repr(data), cache.source_signature(Path(__file__).parents[1]), sys.version,
                       pydantic.VERSION)
    scenario = cache.load_object("scenario", digest)
    if type(scenario) is Scenario:
        return scenario
    scenario = Scenario.model_validate(data)
    cache.store_object("scenario", digest, scenario)
    return scenario


_PLAIN = (str, int, float, bool, type(None), dt.date, dt.datetime)


def _plain(value) -> bool:
    """Whether ``value`` is made of plain YAML values only (its ``repr`` is then its content)."""
    if type(value) is dict:
        return all(type(k) in _PLAIN and _plain(v) for k, v in value.items())
    if type(value) is list:
        return all(_plain(v) for v in value)
    return type(value) in _PLAIN


def merge_over(base: dict, top: dict) -> dict:
    """``top`` merged over ``base``: mappings key by key (recursively), anything else replaced.

    A catalogue figure (a mapping with ``source``) is replaced whole, so a value never keeps
    another value's source or uncertainty.
    """
    out = dict(base)
    for key, value in top.items():
        prev = out.get(key)
        if isinstance(value, dict) and isinstance(prev, dict) and "source" not in value and "source" not in prev:
            out[key] = merge_over(prev, value)
        else:
            out[key] = value
    return out


def _has(data, loc: tuple) -> bool:
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return False
    return True


def apply_overlays(path: Path, lines: dict, data: dict) -> list[tuple[Path, dict, dict]]:
    """Merge the files named by the scenario's ``overlays:`` over ``data`` (in place, in order,
    later wins) — e.g. the catalogue overlay ``twin calibrate`` writes.

    Returns
    -------
    list of (path, line map, data)
        The overlays read, for placing later errors in the file a value came from.

    Raises
    ------
    ScenarioError
        A missing or unreadable overlay (at the scenario's ``overlays`` line), or an overlay
        that is not a mapping or names overlays itself.
    """
    names = data.get("overlays") or []
    if not isinstance(names, list):
        return []
    layers = []
    for i, name in enumerate(names):
        if not isinstance(name, str):
            continue  # reported by the schema
        file = path.parent / name
        if not file.is_file():
            raise ScenarioError(f"overlay not found: {file}", file=str(path),
                                line=_line_of(lines, ("overlays", i)), path=f"overlays[{i}]")
        _, olines, odata = read_document(file, "overlay")
        if "overlays" in odata:
            raise ScenarioError("an overlay cannot name overlays itself", file=str(file),
                                line=_line_of(olines, ("overlays",)), path="overlays")
        merged = merge_over(data, odata)
        data.clear()
        data.update(merged)
        layers.append((file, olines, odata))
    return layers


class _Layered:
    """Places an error in the overlay that supplied the value, else in the scenario file."""

    def __init__(self, where: LoadedScenario, layers):
        self.where, self.layers = where, layers

    def locate(self, err: FieldError) -> ScenarioError:
        for file, olines, odata in reversed(self.layers):
            if _has(odata, err.loc):
                return ScenarioError(err.message, file=str(file), line=_line_of(olines, err.loc),
                                     path=format_path(err.loc))
        return self.where.locate(err)


def _known(names) -> str:
    names = sorted(names)
    shown = ", ".join(names[:12])
    return shown + (", …" if len(names) > 12 else "")


def _check(loc: tuple, check, *args) -> None:
    """Run a file check; its problem becomes a FieldError at ``loc``."""
    try:
        check(*args)
    except FileProblem as exc:
        raise FieldError(loc, str(exc)) from None


#: Most of a thing per catalogue entry (the bundled catalogue's largest: 8 shelves per rack,
#: 6 PSUs per shelf, 28 sleds per rack, 16 devices per sled, 2 racks per system). A scenario's
#: own entries beyond these describe no equipment that exists (and 356,337 power shelves' idle
#: losses heat a rack's air to millions of degrees).
MAX_PER_ENTRY = {
    ("racks", "shelves"): 64,
    ("power_shelves", "psus"): 64,
    ("power_shelves", "redundant"): 64,
    ("racks", "sleds"): 1024,
    ("sleds", "devices"): 1024,
}


def _check_catalog_counts(scenario: Scenario, catalog: Catalog) -> None:
    """Counts in the scenario's own catalogue entries within :data:`MAX_PER_ENTRY`."""
    for kind, entries in (scenario.catalog or {}).items():
        table = getattr(catalog, kind, {})
        for name in entries:
            entry = table.get(name)
            for (k, field), limit in MAX_PER_ENTRY.items():
                if k != kind or entry is None:
                    continue
                value = getattr(entry, field, None)
                counts = value.items() if isinstance(value, dict) else [(None, value)]
                for key, count in counts:
                    if count is not None and count.value > limit:
                        loc = ("catalog", kind, name, field) + ((key,) if key else ()) + ("value",)
                        raise FieldError(loc, f"{count.value:,} is more than the {limit:,} any "
                                              f"{kind[:-1].replace('_', ' ')} holds")


def check_references(scenario: Scenario, catalog: Catalog, base: Path) -> None:
    """Cross-field checks: templates exist, names are unique, references resolve, and every
    file the scenario names is a regular file of the right size and format
    (:mod:`twin.scenario.files`).

    Raises
    ------
    FieldError
        At the offending field.
    """
    _check_catalog_counts(scenario, catalog)
    cdu_names = set()
    for i, cdu in enumerate(scenario.cdus):
        names = {cdu.name} | set(expand_cdus([cdu])[1])
        if names & cdu_names:
            raise FieldError(("cdus", i, "name"), f"duplicate CDU name '{cdu.name}'")
        cdu_names |= names
        if cdu.template not in catalog.cdus:
            raise FieldError(("cdus", i, "template"),
                             f"unknown CDU template {excerpt(cdu.template)} (known: {_known(catalog.cdus)})")
    halls, rows, racks, built = set(), set(), set(), set()
    templates = catalog.templates()
    for h, hall in enumerate(scenario.halls):
        if hall.name in halls:
            raise FieldError(("halls", h, "name"), f"duplicate hall name '{hall.name}'")
        halls.add(hall.name)
        for r, row in enumerate(hall.rows):
            where = ("halls", h, "rows", r)
            if row.name in rows:
                raise FieldError(where + ("name",), f"duplicate row name '{row.name}'")
            rows.add(row.name)
            for k, rack in enumerate(row.racks):
                at = where + ("racks", k)
                if rack.template not in templates:
                    raise FieldError(at + ("template",),
                                     f"unknown template {excerpt(rack.template)} (known: {_known(templates)})")
                names = [slot.name for slot in expand_racks(rack, catalog)]
                if rack.name in racks or built.intersection(names):
                    raise FieldError(at + ("name",), f"duplicate rack name '{rack.name}'")
                racks.add(rack.name)
                built.update(names)
                if rack.cdu is not None and rack.cdu not in cdu_names:
                    known = _known(cdu_names) if cdu_names else "none defined under 'cdus'"
                    raise FieldError(at + ("cdu",), f"unknown CDU {excerpt(rack.cdu)} (known: {known})")
    kinds = set(catalog.chips)
    for w, rule in enumerate(scenario.workload):
        for k, kind in enumerate(rule.select.kind or []):
            if kind not in kinds:
                raise FieldError(("workload", w, "select", "kind", k),
                                 f"unknown device kind {excerpt(kind)} (known: {_known(kinds)})")
        for field, names in (("rack", built), ("row", rows), ("hall", halls)):
            for k, pattern in enumerate(getattr(rule.select, field) or []):
                if not any(fnmatch.fnmatchcase(n, pattern) for n in names):
                    raise FieldError(("workload", w, "select", field, k),
                                     f"{excerpt(pattern)} matches no {field} (known: {_known(names)})")
        if rule.replay is not None:
            _check(("workload", w, "replay"), check_table, base / rule.replay, "replay file",
                   ("time", "device", "u"))
    job_names: dict[str, int] = {}
    for j, job in enumerate(scenario.jobs):
        if job.name in job_names:
            raise FieldError(("jobs", j, "name"), f"duplicate job name '{job.name}' "
                                                  f"(also jobs[{job_names[job.name]}])")
        job_names[job.name] = j
        if getattr(job, "trace", None) not in (None, "azure-code"):
            _check(("jobs", j, "trace"), check_table, base / job.trace, "trace file",
                   ("TIMESTAMP", "ContextTokens", "GeneratedTokens"))
    weather = scenario.plant.weather if scenario.plant is not None else None
    if weather is not None and weather.kind != "constant":
        file = Path(weather.file)
        bundled = weather.kind != "csv" and file.suffix.lower() != ".epw" and len(file.parts) == 1
        where = ("plant", "weather", "file")
        if weather.kind == "csv":
            _check(where, check_table, base / file, "weather file", ("time", "t_dry_bulb"),
                   ("t_wet_bulb", "rh", "t_dew_point"))
        elif not bundled:
            _check(where, check_epw, base / file, "weather file", weather.kind == "epw")
    for e, event in enumerate(scenario.events):
        if event.at >= scenario.time.duration:
            raise FieldError(("events", e, "at"),
                             f"{event.at:g} s is outside the run (0 to {scenario.time.duration:g} s)")
        wants = EVENT_KINDS[event.kind]
        if wants == "cdu" and event.target not in cdu_names | ({"cdu-1"} if not scenario.cdus else set()):
            known = _known(cdu_names) if cdu_names else "cdu-1 (the default CDU)"
            raise FieldError(("events", e, "target"), f"unknown CDU {excerpt(event.target)} (known: {known})")
        if wants == "rack" and not any(fnmatch.fnmatchcase(n, event.target) for n in built):
            raise FieldError(("events", e, "target"),
                             f"{excerpt(event.target)} matches no rack (known: {_known(built)})")
        if wants == "plant" and event.target not in (None, "plant"):
            raise FieldError(("events", e, "target"), f"'{event.kind}' acts on the plant; leave out 'target'")
    if scenario.network is not None:
        name = scenario.network.scale_out
        outs = sorted(n for n, f in catalog.fabrics.items() if f.scope == "scale-out")
        if name not in outs:
            raise FieldError(("network", "scale_out"), f"unknown scale-out fabric '{name}' (known: {_known(outs)})")
    step = scenario.time.step
    for group in GROUPS:
        interval = getattr(scenario.record, group)
        if interval == "off":
            continue
        ratio = interval / step  # an interval shorter than the step records every step
        if ratio > 1 and abs(ratio - round(ratio)) > 1e-6:
            raise FieldError(("record", group),
                             f"interval {interval:g} s is not a whole multiple of the step ({step:g} s)")


def scenario_json_schema() -> str:
    """The JSON Schema of the scenario format, as indented JSON text.

    The project's models build their validators on first use (``defer_build``), and some field
    defaults are instances of such models; the schema writes those defaults as JSON, which needs
    their classes built (pydantic 2.6, the lowest supported, fails on an unbuilt one), so every
    project model not yet built is built first."""
    from pydantic import BaseModel

    from twin.scenario.model import Scenario

    todo = list(BaseModel.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("twin.") and not cls.__pydantic_complete__:
            cls.model_rebuild()
    schema = Scenario.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "twin scenario"
    return json.dumps(schema, indent=2)
