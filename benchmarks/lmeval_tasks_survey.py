"""How many of an installed lm-eval's task YAMLs `--benchmark lm-eval:TASK` can use, and rendering on real files.

Counts the `*.yaml` files under lm_eval/tasks (or --tasks DIR), how many parse with their includes resolved, how
many are tasks / groups / other, how many tasks' query (`doc_to_decontamination_query` when should_decontaminate,
else `doc_to_text`) is a `!function` (refused) and how many preprocess with a `!function` process_docs; then
renders gsm8k over ../shared/data/benchmarks/gsm8k_test.jsonl and arc_challenge over the ARC file as it is (AI2
schema) and mapped to the HF ai2_arc schema the task is written for. Needs `pip install 'dataaudit[lmeval]'`.

    .venv/bin/python benchmarks/lmeval_tasks_survey.py [--tasks DIR]
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

from dataaudit.contamination.lmeval_render import render_task
from dataaudit.contamination.lmeval_tasks import (Function, LmEvalError, _loader, installed_tasks_dir, load_yaml,
                                                  task_config, yaml_files)

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "benchmarks"


def ai2_to_hf(rec: dict) -> dict:
    """The AI2 ARC record in the HF ai2_arc schema (question, choices {text, label}, answerKey)."""
    q = rec["question"]
    return {"id": rec["id"], "question": q["stem"], "answerKey": rec["answerKey"],
            "choices": {"text": [c["text"] for c in q["choices"]], "label": [c["label"] for c in q["choices"]]}}


def survey(root: str) -> None:
    t0 = time.perf_counter()
    files = yaml_files(root)
    loader = _loader()
    kinds, failures, queries = collections.Counter(), collections.Counter(), collections.Counter()
    names = set()
    for path in files:
        try:
            cfg = load_yaml(path, root, loader)
        except LmEvalError as exc:
            failures[str(exc).split(": ", 1)[1][:40]] += 1
            continue
        if "class" in cfg:
            kinds["python class"] += 1
        elif "group" in cfg:
            kinds["group"] += 1
        elif isinstance(cfg.get("task"), str):
            kinds["task"] += 1
            if cfg["task"] in names:
                kinds["task (duplicate name)"] += 1
            names.add(cfg["task"])
            decon = cfg.get("should_decontaminate") and cfg.get("doc_to_decontamination_query") is not None
            q = cfg.get("doc_to_decontamination_query" if decon else "doc_to_text")
            queries["decontamination query" if decon else "doc_to_text"] += 1
            queries["query is !function (refused)" if isinstance(q, Function)
                    else "query missing" if q is None else "query is a field or template"] += 1
            if isinstance(cfg.get("process_docs"), Function):
                queries["process_docs is !function (records used as they are)"] += 1
        else:
            kinds["other (no task or group key)"] += 1
    print(f"tasks folder: {root}")
    print(f"task YAML files: {len(files)}; parsed with includes resolved: {len(files) - sum(failures.values())}"
          f" ({time.perf_counter() - t0:.1f} s)")
    for k, v in failures.most_common():
        print(f"  failed: {v} {k}")
    for k, v in sorted(kinds.items()):
        print(f"  {k}: {v}")
    print(f"  distinct task names: {len(names)}")
    for k, v in sorted(queries.items()):
        print(f"  tasks, {k}: {v}")


def render_real(root: str) -> None:
    for task, name, convert in (("gsm8k", "gsm8k_test.jsonl", None), ("arc_challenge", "arc_challenge_test.jsonl",
                                                                       None),
                                ("arc_challenge", "arc_challenge_test.jsonl", ai2_to_hf)):
        path = SHARED / name
        if not path.exists():
            print(f"{path}: missing (skipped)")
            continue
        recs = [json.loads(line) for line in path.open(encoding="utf-8")]
        recs = [convert(r) for r in recs] if convert else recs
        entry = task_config(task, root)
        ok = 0
        for i, r in enumerate(recs):       # one by one: count every item that renders
            try:
                render_task(entry, [r], [f"line {i + 1}"])
                ok += 1
            except LmEvalError as exc:
                if ok == 0 and i == 0:
                    print(f"  first error: {exc}")
        how = " (mapped to the HF schema)" if convert else ""
        print(f"{task} over {name}{how}: {ok} of {len(recs)} items rendered")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", help="folder of task YAMLs (default: the installed lm-eval's)")
    args = ap.parse_args(argv)
    root = args.tasks or installed_tasks_dir()
    if root is None:
        print("lm-eval is not installed: pip install 'dataaudit[lmeval]'", file=sys.stderr)
        return 2
    survey(root)
    render_real(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
