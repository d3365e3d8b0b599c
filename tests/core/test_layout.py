"""The house rules that keep the layout livable, checked on the source (no import runs):

- no import cycle among the modules of `dataaudit/` and `pipelines/` (installed as `dataaudit.pipelines`; imports
  anywhere in a module: a cycle hidden in a function-level import is still two modules that cannot be understood
  apart);
- nothing under `dataaudit/` imports `dataaudit.pipelines` (the `dataaudit/cli/` package aside: it starts the jobs);
- `dataaudit/` never imports `ray`; `dataaudit.guard` loads no shard reader, Ray, Jinja or click (its checks
  come from the shared registry, which uses pyarrow for the text checks).
"""
from __future__ import annotations

import ast
from pathlib import Path

from tests.paths import REPO

# folder -> the package it installs as (pyproject's package-dir: pipelines/ is dataaudit.pipelines)
PACKAGES = {"dataaudit": "dataaudit", "pipelines": "dataaudit.pipelines"}


def _modules() -> dict[str, Path]:
    out = {}
    for folder, pkg in PACKAGES.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = [pkg] + list(path.relative_to(REPO / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path, top_level_only: bool) -> set[str]:
    """Modules `name` imports (absolute names), at module level or anywhere."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            # `from pkg import sub`: an edge to the submodule when it is one
            found.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES)
    return found


def _graph(top_level_only: bool = True) -> dict[str, set[str]]:
    return {name: {m for m in _imports(name, path, top_level_only) if m in MODULES and m != name}
            for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_modules_are_found():
    assert {"dataaudit.fields", "dataaudit.stage", "dataaudit.pipelines.audit", "dataaudit.guard"} <= set(MODULES)


def test_no_import_cycle():
    assert _cycles(_graph(top_level_only=False)) == []


def test_no_cycle_between_packages():
    """Folded to packages (dataaudit.checks, dataaudit.report, ..., dataaudit.pipelines), the imports still form no
    cycle: each package can be read knowing only those below it."""
    def package(m):
        return ".".join(m.split(".")[:2])

    folded: dict[str, set[str]] = {}
    for a, targets in _graph(top_level_only=False).items():
        folded.setdefault(package(a), set()).update(package(b) for b in targets if package(b) != package(a))
    for targets in list(folded.values()):
        for b in targets:
            folded.setdefault(b, set())
    assert _cycles(folded) == []


def test_core_never_imports_pipelines_or_ray():
    offenders = []
    for name, path in MODULES.items():
        if name.startswith(("dataaudit.cli", "dataaudit.pipelines")):
            continue
        for m in _imports(name, path, top_level_only=False):
            if m.split(".")[0] == "ray" or m.startswith("dataaudit.pipelines"):
                offenders.append(f"{name} imports {m}")
    assert offenders == []


def test_guard_loads_no_reader():
    """The guard's module-level import closure holds no shard reader and no job machinery."""
    graph = _graph()
    seen, todo = set(), [m for m in MODULES if m == "dataaudit.guard" or m.startswith("dataaudit.guard.")]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += graph[m]
    heavy = sorted(f"{m} imports {i}" for m in seen for i in _imports(m, MODULES[m], True)
                   if i.split(".")[0] in ("ray", "jinja2", "click"))
    assert not any(m.startswith("dataaudit.sources") for m in seen), sorted(seen)
    assert heavy == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
