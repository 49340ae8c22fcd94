"""The perflab package has no import cycle: each module can be read, and changed, on top of the
ones it imports. The graph is built from the package's own files (ast), with every import a module
makes: at module level, inside functions, and under TYPE_CHECKING, since a cycle hidden in a
function or behind a type-checking guard is still two modules that cannot be understood apart.
"""
from __future__ import annotations

import ast
from pathlib import Path

import perflab

PACKAGE = Path(perflab.__file__).parent


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Each module of the package under `root` -> the package's modules it imports anywhere in its file."""
    modules = {_module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                # `from perflab import report` imports the module perflab.report; `from perflab.x import y`
                # imports perflab.x, where y is a name unless it is itself a module.
                imported.update(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names)
        graph[name] = {m for m in imported if m in modules and m != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as the modules along it (the first repeated at the end); None when there is none."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(module: str) -> list[str] | None:
        path.append(module)
        on_path.add(module)
        for target in sorted(graph[module]):
            if target in on_path:
                return [*path[path.index(target):], target]
            if target not in done:
                found = visit(target)
                if found:
                    return found
        path.pop()
        on_path.discard(module)
        done.add(module)
        return None

    for module in sorted(graph):
        if module not in done:
            found = visit(module)
            if found:
                return found
    return None


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph(PACKAGE)
    assert "perflab.rundir" in graph["perflab.report"], "the graph misses `from perflab import rundir`"
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_a_cycle_through_a_function_level_or_type_checking_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub import c\n")
    (package / "sub" / "c.py").write_text("def late() -> None:\n    from ..a import late\n")
    graph = import_graph(package)
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.sub.c"} and graph["pkg.sub.c"] == {"pkg.a"}
    assert find_cycle(graph) == ["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]
    (package / "sub" / "c.py").write_text("def late() -> None:\n    import json\n")
    assert find_cycle(import_graph(package)) is None
