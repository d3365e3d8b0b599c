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
import re
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


# ----------------------------------------------------------------------------------- tests/ mirrors the packages

# Folders of tests/ named after no package of the code, each with the reason.
TEST_FOLDERS_NOT_PACKAGES = {
    "e2e": "end-to-end tests of each command (the CLI in, the outputs out), across packages",
    "docs": "the documentation: README.md, the mkdocs site (docs/, mkdocs.yml) and its generated checks page",
    "objectstore": "every command on URIs (dataaudit/io.py) against an S3-compatible server its fixture starts, and fsspec",
}
# Guard tests that another change moves into tests/guard/: drop these names once it is merged.
def test_test_folders_are_named_after_packages():
    """Every folder of tests/ is named after what it tests: a package of dataaudit/ (`dataaudit/<name>/`), `core`
    (dataaudit's top-level modules), `pipelines` or `fixtures` (the data generators), so a test is found where
    its code is; shared helpers are modules (tests/paths.py, tests/builders.py, ...), not folders."""
    packages = {p.parent.name for p in (REPO / "dataaudit").glob("*/__init__.py")} | {"core", "pipelines", "fixtures"}
    assert {"checks", "sources", "stats", "images", "report"} <= packages
    folders = {p.name for p in (REPO / "tests").iterdir()
               if p.is_dir() and p.name != "__pycache__" and not p.name.startswith(".")}
    strays = folders - packages - set(TEST_FOLDERS_NOT_PACKAGES)
    assert strays == set(), f"tests/ folders named after no package: {sorted(strays)}"


# benchmarks/ modules a test may import: benchmark code the test checks, never a data generator (fixtures/ has those).
BENCHMARK_CODE_TESTED = {
    "chat_recall": "the chat benchmark's scorer, checked against the chat generator's truth table",
}


def _absolute_imports(path: Path) -> set[str]:
    """Absolute module names `path` imports anywhere, with `from m import x` also as `m.x`."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def test_generators_are_imported_from_fixtures():
    """The generators of test data live in fixtures/ and are imported from there (`fixtures.image_data`): none has
    a copy in benchmarks/; nothing under tests/ or benchmarks/ imports one by a benchmarks/ name (`benchmarks.X`,
    or a bare `import X` with benchmarks/ on sys.path); no file of tests/, benchmarks/ or fixtures/ names one as a
    benchmarks/ script (a command line in a docstring, a README or a shell script); and tests import from
    benchmarks/ only the benchmark code they test (BENCHMARK_CODE_TESTED), so a generator a test needs cannot stay
    in benchmarks/. Data builders only the benchmarks use (make_corpus.py, ...) may stay there."""
    generators = {p.stem for p in (REPO / "fixtures").glob("*.py") if p.stem != "__init__"}
    benchmark_modules = {p.stem for p in (REPO / "benchmarks").glob("*.py")}
    assert {"image_data", "chat_data", "generate"} <= generators
    assert generators & benchmark_modules == set()
    offenders = [f"{path.relative_to(REPO)} names benchmarks/{g}.py"
                 for tree in ("tests", "benchmarks", "fixtures") for path in sorted((REPO / tree).rglob("*"))
                 if path.suffix in (".py", ".md", ".sh") for g in sorted(generators)
                 if f"benchmarks/{g}.py" in path.read_text(encoding="utf-8")]
    for tree in ("tests", "benchmarks"):
        for path in sorted((REPO / tree).rglob("*.py")):
            rel = path.relative_to(REPO)
            modules = set()
            for parts in (name.split(".") for name in _absolute_imports(path)):
                if parts[0] == "benchmarks" and len(parts) > 1:
                    modules.add(parts[1])
                elif parts[0] in generators | benchmark_modules:      # bare: benchmarks/ put on sys.path
                    modules.add(parts[0])
            for module in sorted(modules):
                if module in generators:
                    offenders.append(f"{rel} imports the generator {module} from benchmarks/ (fixtures.{module})")
                elif tree == "tests" and module not in BENCHMARK_CODE_TESTED:
                    offenders.append(f"{rel} imports benchmarks/{module}.py (a generator belongs in fixtures/)")
    assert offenders == [], "\n".join(offenders)


# ------------------------------------------------------------------------------------------ one home for each thing

# What a module of pipelines/ may import from dataaudit/: the ground floor every job stands on, and its own command's
# package (a job's report model, exit rule and output names live there, never in pipelines/).
GROUND_FLOOR = ("dataaudit.atomic", "dataaudit.io", "dataaudit.outputs", "dataaudit.handlers", "dataaudit.errors",
                "dataaudit.extras", "dataaudit.config")
JOB_PACKAGES = {"audit": "dataaudit.audit", "dedup": "dataaudit.dedup", "image_dedup": "dataaudit.dedup",
                "contamination": "dataaudit.contamination", "clean": "dataaudit.clean"}


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_pipelines_import_only_the_ground_floor_and_their_jobs_package():
    offenders = []
    for name, path in MODULES.items():
        if not _within(name, "dataaudit.pipelines"):
            continue
        job = JOB_PACKAGES.get(name.rpartition(".")[2])
        for m in _imports(name, path, top_level_only=False):
            if not m.startswith("dataaudit.") or _within(m, "dataaudit.pipelines"):
                continue
            if any(_within(m, g) for g in GROUND_FLOOR) or (job is not None and _within(m, job)):
                continue
            offenders.append(f"{name} imports {m}")
    assert offenders == []


def _package(module: str) -> str:
    """dataaudit.textops._kernels -> dataaudit.textops; dataaudit.io -> dataaudit.io."""
    return ".".join(module.split(".")[:2])


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_private_name_is_imported_across_packages():
    offenders = []
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                base = ".".join(anchor[: len(anchor) - (node.level - 1)] + ([base] if base else []))
            if not base.startswith("dataaudit") or _package(base) == _package(name):
                continue
            hidden = [p for p in base.split(".") if _private(p)] + [a.name for a in node.names if _private(a.name)]
            if hidden:
                offenders.append(f"{name} imports {', '.join(hidden)} from {base}")
    assert offenders == []


def _declared_outputs() -> dict[str, str]:
    """Every output file name a job declares -> the module that declares it (`FILES` and the table names beside
    it in each command's package)."""
    import importlib

    from dataaudit.outputs import JobFiles

    declared = {}
    for package in ("dataaudit.audit", "dataaudit.clean", "dataaudit.contamination", "dataaudit.dedup",
                    "dataaudit.tokenization"):
        files = importlib.import_module(package).FILES
        assert isinstance(files, JobFiles)
        for f in (files.record, *files.tables, files.page, *files.nested):
            if f:
                declared[f] = package
    return declared


def _strings(path: Path):
    """The string constants of a module, its prose left out: docstrings and the checks' descriptions (they
    describe files in words, for people)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
        if isinstance(node, ast.keyword) and node.arg == "description":
            docs.update(id(n) for n in ast.walk(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.value


def test_each_output_name_is_spelled_once():
    """A job's output names are declared in its command's package and taken from there everywhere else (the job,
    the summary lines, clean reading the findings, the folder walk): no second spelling can drift."""
    declared = _declared_outputs()
    assert {"report.json", "flags.parquet", ".dataaudit/clean.json", "dedup.json", "keep.parquet", "contamination.json",
            "items.parquet", "tokenizer_drift.json"} <= set(declared)
    spelled: dict[str, set[str]] = {}
    # the name as a word: ".flags.parquet", a part's suffix, is another name
    patterns = {f: re.compile(rf"(?<![\w.]){re.escape(f)}(?!\w)") for f in declared}
    for name, path in MODULES.items():
        for text in _strings(path):
            for f, pattern in patterns.items():
                if pattern.search(text):
                    spelled.setdefault(f, set()).add(name)
    assert {f: sorted(m) for f, m in spelled.items() if m != {declared[f]}} == {}
    folders = {name for name, path in MODULES.items() for t in _strings(path)
               if t in ("parts", "work") or t.startswith("parts/")}
    assert folders == {"dataaudit.outputs"}


# Reading, listing, measuring and writing files goes through dataaudit.io (the one door, which object-store URIs
# plug into). Calls that go around it:
_AROUND_THE_DOOR = {"open", "os.open", "os.stat", "os.walk", "os.listdir", "os.scandir", "os.replace", "os.rename",
                    "os.remove", "os.unlink", "os.makedirs", "os.mkdir", "os.path.getsize", "os.path.isfile",
                    "os.path.isdir", "os.path.exists", "shutil.copyfile", "shutil.copy", "shutil.rmtree",
                    "shutil.move", "glob.glob", "glob.iglob"}
_PATH_METHODS = {"read_text", "read_bytes", "write_text", "write_bytes", "is_file", "is_dir", "exists", "mkdir",
                 "unlink", "rglob", "iterdir", "touch", "rmdir"}
# Modules that touch files of their own, and why they need no door.
_OWN_FILES = {
    "dataaudit.io": "the door itself",
    "dataaudit.atomic": "writes the temporary path the door's commit gives it",
    "dataaudit": "maps a checkout's pipelines/ folder at import (no data)",
    "dataaudit.cache": "the local cache folder",
    "dataaudit.contamination.lmeval_tasks": "lm-eval's task YAMLs: the installed package's or a local folder's",
    "dataaudit.pipelines.parts": "dataaudit's own source files, digested so parts of other code are redone",
    "dataaudit.textops.compiled": "the kernels compiled into the local cache folder, and /proc/cpuinfo",
    "dataaudit.textops.codepoints": "code point tables in the local cache folder",
    "dataaudit.textops.spacy_en": "the package's own tables of spaCy's English tokenizer (spacy_en.json)",
    "dataaudit.textops.spacy_kernel_tables": "spaCy's character classes per code point in the local cache folder, "
                                             "keyed by its own source",
    "dataaudit.report.render": "compiled templates in the local cache folder",
    "dataaudit.tokenization.loading": "a tokenizer: a local file or folder the tokenizers library loads",
    "dataaudit.checks.special_tokens": "a tokenizer's local file",
    "dataaudit.checks.drift": "a tokenizer's local file",
    "dataaudit.stats.conversation_lengths": "a tokenizer's local file or folder",
    "dataaudit.cli.replay": "the user's module beside the command (sys.path)",
    "dataaudit.guard.profiler": "an append-only log the training process writes as it goes",
}


def _call_name(func: ast.expr) -> str | None:
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
        return ".".join(reversed(parts))
    return None


def test_files_are_opened_only_through_the_door():
    offenders = []
    for name, path in MODULES.items():
        if name in _OWN_FILES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            called = _call_name(node.func)
            method = node.func.attr if isinstance(node.func, ast.Attribute) else None
            if called in _AROUND_THE_DOOR or (method in _PATH_METHODS and called not in ("self.exists",)):
                offenders.append(f"{name}:{node.lineno} {called or method}")
    assert offenders == []
