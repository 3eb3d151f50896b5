"""The Python package has no import cycles, lazy imports inside functions included.

A cycle hidden in a function (a command importing ``latlab.cli``, which imports
the command) works until someone moves an import to the top; this test reads
every ``import`` statement at any depth and fails on any strongly connected
set of modules, naming it and its edges.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "python"


def _modules() -> dict[str, tuple[Path | None, bool]]:
    """Module name -> (source file, is a package); compiled extensions have no source."""
    mods: dict[str, tuple[Path | None, bool]] = {}
    for p in PACKAGE_ROOT.rglob("*.py"):
        parts = list(p.relative_to(PACKAGE_ROOT).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    for p in PACKAGE_ROOT.rglob("*.so"):
        parts = list(p.relative_to(PACKAGE_ROOT).parts)
        parts[-1] = parts[-1].split(".")[0]
        mods[".".join(parts)] = (None, False)
    return mods


def _targets(node: ast.AST, pkg: str, mods: dict) -> list[str]:
    """The latlab modules an import statement loads (the module itself, or the nearest package)."""

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1] if node.level else []
        module = ".".join(base + ([node.module] if node.module else []))
        names = [
            f"{module}.{a.name}" if f"{module}.{a.name}" in mods else module for a in node.names
        ]
    else:
        return []
    return [t for n in names if n.startswith("latlab") and (t := resolve(n))]


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, (path, is_pkg) in mods.items():
        if path is None:
            continue
        pkg = m if is_pkg else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            graph[m].update(t for t in _targets(node, pkg, mods) if t != m)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_the_package_has_no_import_cycles() -> None:
    graph = import_graph()
    assert len(graph) > 50, sorted(graph)
    found = cycles(graph)
    detail = [{m: sorted(graph[m] & set(c)) for m in c} for c in found]
    assert not found, detail


def test_the_check_finds_a_hidden_cycle() -> None:
    graph = import_graph()
    # As commands/sweep.py once did: a function-level import of the CLI that imports the command.
    graph["latlab.cli"].add("latlab.commands.sweep")
    graph["latlab.commands.sweep"].add("latlab.cli")
    assert any({"latlab.cli", "latlab.commands.sweep"} <= set(c) for c in cycles(graph))
