"""No import circle inside an app (issue 36): every module's imports, at the top and inside functions, read from
its syntax tree, form no cycle among the modules of one app. import-linter keeps the apps' order and the contracts
inside leaderboard/, submissions/uploads/ and checker/; this catches a circle no contract names."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = (
    "access",
    "previews",
    "spotchecks",
    "leaderboard",
    "review",
    "submissions",
    "catalog",
    "accounts",
    "audit",
)
PACKAGES = (*APPS, "checker", "portal")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _known(name: str, modules) -> str | None:
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return None


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modules of its own top-level package it imports."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            else:
                continue
            for target in targets:
                known = _known(target, modules)
                if known and known != name and known.split(".")[0] == name.split(".")[0]:
                    graph[name].add(known)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
    return found


def test_no_import_circle_inside_an_app():
    found = cycles(import_graph(_modules()))
    assert not found, (
        "import circles (break one edge: a signal, a lower module, or move the code):\n"
        + "\n".join(" -> ".join(group) for group in found)
    )


def test_the_scan_finds_a_circle_and_its_members():
    graph = {"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}, "a.w": {"a.x"}, "a.v": set()}
    assert cycles(graph) == [["a.x", "a.y", "a.z"]]
    assert cycles({"a.x": {"a.y"}, "a.y": set()}) == []
