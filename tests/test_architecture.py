"""Structure rules checked statically (with ``ast``, nothing imported): no import cycles in the
package, typer only in the command line, short functions in the simulation core."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "twin"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _walk_runtime(node):
    """ast.walk that skips ``if TYPE_CHECKING:`` blocks (never run)."""
    if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
        yield from (n for child in node.orelse for n in _walk_runtime(child))
        return
    yield node
    for child in ast.iter_child_nodes(node):
        yield from _walk_runtime(child)


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Package modules ``path`` imports at module level or inside functions (all explicit imports:
    a lazy import inside a function still ties the two modules together)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    out = set()
    for node in _walk_runtime(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # ``from pkg import sub`` imports the submodule pkg.sub when there is one
            targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    # Importing a.b.c first runs the __init__ of a and a.b, unless they are already running
    # because they are packages this module itself belongs to.
    own = {name.rsplit(".", i)[0] for i in range(1, name.count(".") + 1)} | ({name} if is_pkg else set())
    for t in list(out):
        parts = t.split(".")
        out |= {p for p in (".".join(parts[:i]) for i in range(1, len(parts))) if p in known}
    return out - own  # importing a package one is inside runs nothing new


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {name: _imports(path, name, known) for name, path in mods.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph (as a closed path), or None."""
    colour = dict.fromkeys(graph, 0)  # 0 new, 1 on the stack, 2 done
    stack: list[str] = []

    def visit(n):
        colour[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if colour[m] == 1:
                return stack[stack.index(m):] + [m]
            if colour[m] == 0:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        colour[n] = 2
        return None

    for n in sorted(graph):
        if colour[n] == 0:
            found = visit(n)
            if found:
                return found
    return None


def test_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles():
    """Imports between the package's modules form no cycle, whichever module is imported first:
    an import of ``a.b.c`` also runs the ``__init__`` of ``a`` and ``a.b`` (unless the importer is
    inside them), so a package ``__init__`` that imports a module that imports back into the
    package from outside is a cycle too."""
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle)


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(n, ast.Import):
            roots |= {a.name.split(".")[0] for a in n.names}
        elif isinstance(n, ast.ImportFrom) and not n.level and n.module:
            roots.add(n.module.split(".")[0])
    return roots


def test_only_the_cli_imports_typer():
    offenders = [name for name, path in _modules().items()
                 if not name.startswith("twin.cli") and "typer" in _imported_roots(path)]
    assert not offenders, f"typer imported outside twin.cli: {offenders}"


def test_readme_variable_table_is_the_registry():
    from twin.sim.variables import variable_table

    text = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- variables: generated -->\n", 1)[1].split("<!-- variables: end -->", 1)[0]
    assert block.strip() == variable_table().strip(), "README variable table is stale: regenerate it"


#: Longest function allowed in the simulation core [lines, including its docstring].
MAX_FUNCTION_LINES = 80
CORE = ("twin.sim", "twin.power", "twin.cooling")


def test_no_long_functions_in_the_core():
    """Functions in twin/sim, twin/power and twin/cooling stay short enough to read at once."""
    long = []
    for name, path in _modules().items():
        if not name.startswith(CORE):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {n} lines")
    assert not long, long
