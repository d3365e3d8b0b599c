"""lm-evaluation-harness task configs read from their YAML files, without importing lm_eval.

Importing lm_eval's task registry loads torch, transformers and datasets and runs the tasks' Python helpers; a
contamination scan needs only the YAML. The installed package's folder is found by `importlib.util.find_spec`
(nothing is executed), or the user names a folder of task YAMLs (`--lm-eval-tasks DIR`). The YAML is untrusted:
`!function` is kept as a `Function` reference (never imported), `include:` must stay inside the tasks folder, and
every file is bounded in size. The harness's rules, as in its `tasks/_yaml_loader.py` and `_index.py`: an
include (a path relative to the including file, or a list of them) is loaded first and the file's own keys win
over it; a config with `group:` is a group, one with `task:` a task, `tag:` names more groups of tasks.
"""
from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass, field
from typing import Any

from dataaudit.errors import DataAuditError
from dataaudit.extras import missing_message

MAX_YAML_BYTES = 1 << 20      # the harness's largest task YAML is ~100 kB
MAX_INCLUDE_DEPTH = 16
_IGNORE_DIRS = {"__pycache__", ".ipynb_checkpoints"}


class LmEvalError(DataAuditError, ValueError):
    """An lm-eval task that cannot be used (unknown, a group, a `!function` query, a missing field); one line."""


@dataclass(frozen=True)
class Function:
    """A `!function module.name` reference of a task YAML: Python code, which is never imported here."""
    ref: str

    def __str__(self) -> str:
        return f"!function {self.ref}"


@dataclass
class Entry:
    """One task or group name: the file that declares it and, for a task, its config with includes resolved."""
    name: str
    path: str
    config: dict[str, Any] | None = None        # a task's config; None for a group or tag
    members: list[str] = field(default_factory=list)   # a group's or tag's task (and group) names
    kind: str = "task"                          # task | group | tag


def _yaml():
    try:
        import yaml
    except ImportError:
        raise LmEvalError(missing_message("yaml", "reading lm-eval task YAMLs")) from None
    return yaml


def _loader():
    """PyYAML's safe loader (C when built) that turns `!function x.y` into a Function and nothing else."""
    yaml = _yaml()
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):   # type: ignore[misc, valid-type]
        pass

    Loader.add_constructor("!function", lambda loader, node: Function(str(loader.construct_scalar(node))))
    return Loader


def installed_tasks_dir() -> str | None:
    """The installed lm_eval package's `tasks` folder, found without importing lm_eval; None when not installed."""
    try:
        spec = importlib.util.find_spec("lm_eval")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec is not None else []:
        tasks = os.path.join(root, "tasks")
        if os.path.isdir(tasks):
            return tasks
    return None


def tasks_dir(given: str | None) -> str:
    """The folder to read task YAMLs from: `--lm-eval-tasks DIR`, else the installed package's."""
    if given is not None:
        if not os.path.isdir(given):
            raise LmEvalError(f"--lm-eval-tasks {given}: not a folder")
        return given
    found = installed_tasks_dir()
    if found is None:
        raise LmEvalError(missing_message("lm_eval", "--benchmark lm-eval:TASK") + " (or name a folder of task "
                          "YAMLs with --lm-eval-tasks DIR)")
    return found


def yaml_files(root: str) -> list[str]:
    """Every `*.yaml` under `root`, sorted (the harness's traversal order)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _IGNORE_DIRS)
        out += [os.path.join(dirpath, f) for f in filenames if f.endswith(".yaml")]
    return sorted(out)


def _inside(root: str, path: str) -> str:
    real, top = os.path.realpath(path), os.path.realpath(root)
    if os.path.commonpath([real, top]) != top:
        raise LmEvalError(f"{path}: outside the lm-eval tasks folder {root} (not read)")
    return real


def load_yaml(path: str, root: str, loader=None, _seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """One YAML file with its includes merged under its own keys (the harness's `load_yaml`)."""
    loader = loader or _loader()
    real = _inside(root, path)
    if real in _seen or len(_seen) >= MAX_INCLUDE_DEPTH:
        raise LmEvalError(f"{path}: include cycle or more than {MAX_INCLUDE_DEPTH} nested includes")
    try:
        if os.path.getsize(real) > MAX_YAML_BYTES:
            raise LmEvalError(f"{path}: larger than {MAX_YAML_BYTES >> 10} KiB; not a task config")
        with open(real, "rb") as fh:
            cfg = _yaml().load(fh, Loader=loader)    # noqa: S506 (a safe loader with one added tag)
    except OSError as exc:
        raise LmEvalError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except _yaml().YAMLError as exc:
        raise LmEvalError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(cfg, dict):
        raise LmEvalError(f"{path}: expected a YAML mapping, got {type(cfg).__name__}")
    if "include" not in cfg:
        return cfg
    includes = cfg.pop("include")
    merged: dict[str, Any] = {}
    for inc in includes if isinstance(includes, list) else [includes]:
        if not isinstance(inc, str):
            raise LmEvalError(f"{path}: include {inc!r} is not a file name")
        sub = load_yaml(os.path.join(os.path.dirname(path), inc), root, loader, _seen + (real,))
        sub.pop("task_list", None)
        merged.update(sub)
    merged.update(cfg)
    return merged


def _names(v: Any) -> list[str]:
    return [v] if isinstance(v, str) else [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def _members(cfg: dict) -> list[str]:
    """A group's member names: `task:` strings, and the `task:` / `group:` names of its inline configs."""
    out = []
    for m in cfg.get("task") if isinstance(cfg.get("task"), list) else _names(cfg.get("task")):
        if isinstance(m, str):
            out.append(m)
        elif isinstance(m, dict):
            out += _names(m.get("group")) or _names(m.get("task"))
    return out


def _register(cfg: dict, path: str, index: dict[str, Entry]) -> None:
    """The harness's `TaskIndex.process_cfg`: the first file to declare a name keeps it."""
    if "group" in cfg and "class" not in cfg:
        for g in _names(cfg["group"])[:1]:
            index.setdefault(g, Entry(g, path, None, _members(cfg), "group"))
        return
    task = cfg.get("task")
    if not isinstance(task, str) or task in index:
        return
    index[task] = Entry(task, path, cfg)
    for tag in _names(cfg.get("tag")):
        entry = index.setdefault(tag, Entry(tag, path, None, [], "tag"))
        if entry.config is None:
            entry.members.append(task)


def find_task(name: str, root: str) -> Entry | None:
    """The task (or group) `name` among the YAMLs under `root`; None when no file declares it. Only files where
    the name stands as a whole YAML value (`task: NAME`, `- NAME`, `[a, NAME]`) are parsed: a declaration spells
    it out, so a lookup reads ~14,000 files but parses a few, whatever the name."""
    loader, index = _loader(), {}
    raw = name.encode("utf-8")
    needle = re.compile(rb"(?m)(?::|^\s*-|[\[,])\s*[\"']?" + re.escape(raw) + rb"[\"']?\s*(?:$|[,\]#])")
    for path in yaml_files(root):
        try:
            if os.path.getsize(path) > MAX_YAML_BYTES:
                continue
            with open(path, "rb") as fh:
                data = fh.read()
                if raw not in data or not needle.search(data):
                    continue
            cfg = load_yaml(path, root, loader)
        except (LmEvalError, OSError):
            continue      # as the harness's index does: a file that does not load declares nothing
        _register(cfg, path, index)
        if name in index and index[name].config is not None:
            return index[name]
    entry = index.get(name)
    if entry is not None and entry.kind == "tag":
        _tag_members(entry, root, loader)
    return entry


def _tag_members(entry: Entry, root: str, loader) -> None:
    """A tag's tasks that inherit it from an include (`arc_challenge` includes `arc_easy.yaml`, tag `ai2_arc`):
    their files do not spell the tag; includes are siblings, so the declaring folders' files are read whole."""
    folders = {os.path.dirname(entry.path)}
    for path in yaml_files(root):
        if os.path.dirname(path) not in folders:
            continue
        try:
            cfg = load_yaml(path, root, loader)
        except LmEvalError:
            continue
        task = cfg.get("task")
        if isinstance(task, str) and entry.name in _names(cfg.get("tag")) and task not in entry.members:
            entry.members.append(task)


def task_config(name: str, root: str) -> Entry:
    """A task's entry; a group or tag is refused naming its members, an unknown name naming the folder."""
    entry = find_task(name, root)
    if entry is None:
        raise LmEvalError(f"lm-eval task {name!r}: no task YAML under {root} declares it")
    if entry.config is None:
        members = ", ".join(entry.members[:30]) + (" ..." if len(entry.members) > 30 else "")
        raise LmEvalError(f"lm-eval task {name!r} is a {entry.kind} of tasks ({members}): name one task")
    if "class" in entry.config:
        raise LmEvalError(f"lm-eval task {name!r} is a Python class ({entry.config['class']}), not a YAML "
                          "config: it cannot be rendered without importing code")
    return entry
