"""The house: no import circles among the project's modules, and the libraries never import Beam.

Every import counts, at the top of a module or inside a function (a lazy import is still a dependency), read from
the source with `ast`, so a circle fails here even when no test happens to import its modules in a bad order.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pipelines", "miner", "encoders", "training")
LIBRARIES = ("miner", "encoders", "training")  # pipelines call them; they never import apache_beam


def project_modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imported_names(name: str, path: Path) -> set[str]:
    """Every module name `name` imports (absolute, relative resolved), project's or not."""
    names = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(parent + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)  # `from pkg import module`
    return names


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()

    def project_module(imported: str) -> str | None:
        while imported and imported not in modules:
            imported = imported.rpartition(".")[0]
        return imported or None

    return {name: {m for m in map(project_module, imported_names(name, path)) if m and m != name}
            for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_checker_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_checker_sees_lazy_and_relative_imports(tmp_path):
    module = tmp_path / "pkg" / "mod.py"
    module.parent.mkdir()
    module.write_text("from . import other\n\ndef f():\n    from pkg.sub import thing\n    import numpy\n")
    assert imported_names("pkg.mod", module) >= {"pkg", "pkg.other", "pkg.sub", "pkg.sub.thing", "numpy"}


def test_no_import_circles_among_the_project_modules():
    graph = import_graph()
    assert {"pipelines.mine", "miner.margin", "encoders", "training.train"} <= set(graph)
    assert cycles(graph) == []


def test_the_libraries_never_import_beam():
    offenders = {name: sorted(n for n in imported_names(name, path) if n.split(".")[0] == "apache_beam")
                 for name, path in project_modules().items() if name.split(".")[0] in LIBRARIES}
    assert {name: found for name, found in offenders.items() if found} == {}
