#!/usr/bin/env python
"""Recall and false positives of the audit on chat and instruction data, per form x format.

Generates the chat datasets (fixtures/chat_data.py: ShareGPT, OpenAI messages and Alpaca forms, each as
Parquet, JSONL and a JSON array, built from the real conversations in ../shared/data/chat with defects planted
at known records, fields and turns), runs `dataaudit audit SHARDS --out DIR --engine local` on each form x
format (one process each, the installed CLI), and scores its flags.parquet against the truth table:

  recall        per kind: planted records flagged by the expected check AT the planted row AND field path
                (`messages[3].content`, `conversations[2].from`, `output`, `tools`, ...). A flag of the right
                check on the same record but another field counts as "wrong field" (a wrong turn index); a
                found flag whose `role` is not the planted turn's role as written counts as "wrong role"; a
                special_tokens flag whose detail does not name the planted token is not "named".
  clean flagged the real records, converted and never planted (the clean set), that get ANY flag, as a share
                of the clean records; which checks flag them, with examples (row, field, detail).

Targets: recall >= 0.95 for every kind; clean flagged <= 1%. A kind whose check this version of dataaudit
does not have is shown as "no check" (not scored); a format the audit cannot read shows the audit's error.
Exit status: 0 done (targets met or not), 1 error, 3 a target missed and --strict given.

    .venv/bin/python benchmarks/chat_recall.py                       # 2,000 records per form, 3 forms x 3 formats
    .venv/bin/python benchmarks/chat_recall.py --forms messages --formats parquet --examples 5
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
sys.path.insert(0, str(_common.REPO))   # the data generators live in fixtures/ (not installed)
from fixtures import chat_data  # noqa: E402

TARGET_RECALL = 0.95
TARGET_CLEAN = 0.01


# ------------------------------------------------------------------------------------------------ scoring

def _stem(path: str) -> str:
    name = Path(path).name
    for ext in (".parquet", ".jsonl", ".json"):
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def score(form_truth: dict, flags: list[dict], checks_run: set[str] | None = None, examples: int = 3) -> dict:
    """Score one audit of one form against its truth (truth.json's forms[FORM]).

    flags: flags.parquet rows (dicts with shard, row, field, check, detail). checks_run: the checks the
    audit has (report.json's `checks`); a kind whose check is missing is "no check". Returns
    {kinds: {kind: {check, planted, found, wrong_field, wrong_role, named, recall, misses: [...], reasons}},
     clean: {records, flagged, share, by_check: {check: {records, examples}}},
     generated_unplanted: {...same}, planted_extra: {check: records}}."""
    by_record: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for f in flags:
        by_record[(_stem(f["shard"]), int(f["row"]))].append(f)
    kinds: dict[str, dict] = {}
    for t in form_truth["planted"]:
        k = kinds.setdefault(t["kind"], {"check": t["check"], "planted": 0, "found": 0, "wrong_field": 0,
                                         "wrong_role": 0, "named": None, "misses": [], "reasons": Counter()})
        k["planted"] += 1
        on_record = by_record.get((t["shard"], t["row"]), [])
        right = [f for f in on_record if f["check"] == t["check"]]
        hits = [f for f in right if f["field"] == t["field"]]
        if hits:
            k["found"] += 1
            if t.get("role") is not None and not any(f.get("role") == t["role"] for f in hits):
                k["wrong_role"] += 1
            if t["kind"] == "special_tokens":      # the detail must name the token
                k["named"] = (k["named"] or 0) + any(repr(t["inserted"]) in (f["detail"] or "") for f in hits)
            continue
        if right:
            k["wrong_field"] += 1
            reason = f"{t['check']} on another field ({', '.join(sorted({f['field'] for f in right}))})"
        elif on_record:
            reason = "other checks only: " + ", ".join(sorted({f["check"] for f in on_record}))
        else:
            reason = "no flag on the record"
        k["reasons"][f"{reason} [{t.get('variant')}]" if t.get("variant") else reason] += 1
        if len(k["misses"]) < examples:
            k["misses"].append({"shard": t["shard"], "row": t["row"], "field": t["field"], "variant": t.get("variant"),
                                "inserted": t.get("inserted"),
                                "flags": [(f["check"], f["field"], f["detail"]) for f in on_record]})
    order = list(chat_data.CHECK_OF)
    kinds = {kind: kinds[kind] for kind in sorted(kinds, key=lambda x: order.index(x) if x in order else len(order))}
    for k in kinds.values():
        k["scored"] = checks_run is None or k["check"] in checks_run
        k["recall"] = k["found"] / k["planted"] if k["planted"] and k["scored"] else None

    def flagged_share(keys: list[tuple[str, int]]) -> dict:
        by_check: dict[str, dict] = {}
        flagged = 0
        for key in keys:
            on = by_record.get(key, [])
            if on:
                flagged += 1
            for check in sorted({f["check"] for f in on}):
                c = by_check.setdefault(check, {"records": 0, "examples": []})
                c["records"] += 1
                if len(c["examples"]) < examples:
                    f = next(f for f in on if f["check"] == check)
                    c["examples"].append({"shard": key[0], "row": key[1], "field": f["field"], "detail": f["detail"]})
        return {"records": len(keys), "flagged": flagged, "share": flagged / len(keys) if keys else 0.0,
                "by_check": dict(sorted(by_check.items(), key=lambda kv: -kv[1]["records"]))}

    clean = [(s, r) for s, r, origin, kind in form_truth["records"] if origin == "real" and kind is None]
    generated = [(s, r) for s, r, origin, kind in form_truth["records"] if origin == "generated" and kind is None]
    planted_keys = {(t["shard"], t["row"]): t for t in form_truth["planted"]}
    extra: Counter = Counter()
    for key, t in planted_keys.items():
        for check in {f["check"] for f in by_record.get(key, []) if f["check"] != t["check"]}:
            extra[check] += 1
    return {"kinds": kinds, "clean": flagged_share(clean), "generated_unplanted": flagged_share(generated),
            "planted_extra": dict(extra.most_common())}


def targets_met(result: dict) -> tuple[bool, list[str]]:
    missed = []
    for kind, k in result["kinds"].items():
        if k["recall"] is not None and k["recall"] < TARGET_RECALL:
            missed.append(f"{kind} recall {k['recall']:.2f}")
    if result["clean"]["share"] > TARGET_CLEAN:
        missed.append(f"clean flagged {result['clean']['share']:.1%}")
    return not missed, missed


# -------------------------------------------------------------------------------------------------- running

# ------------------------------------------------------------------------------------------------ printing

def _fmt_recall(k: dict) -> str:
    if not k["scored"]:
        return "no check"
    return f"{k['recall']:.2f}" + ("" if k["recall"] >= TARGET_RECALL else " MISS")


def print_cell(form: str, fmt: str, res: dict, result: dict | None, examples: int) -> None:
    title = f"== {form} x {fmt}"
    if result is None:
        print(f"{title}: audit did not run (exit {res['rc']}): {' / '.join(res['output'][-2:])}")
        return
    rep = res["report"]
    print(f"{title}: {rep['totals']['samples']} records, audit {res['seconds']:.1f} s (exit {res['rc']}); "
          f"fields: {_common.fields_line(rep)}")
    rows = []
    for kind, k in result["kinds"].items():
        rows.append([kind, k["check"], k["planted"], k["found"] if k["scored"] else "-", _fmt_recall(k),
                     k["wrong_field"] or "", k["wrong_role"] or "",
                     "" if k["named"] is None else f"{k['named']}/{k['found']}"])
    print(_common.fmt_table(["kind", "check", "planted", "found", "recall", "wrong field", "wrong role",
                             "token named"], rows))
    c = result["clean"]
    verdict = "meets" if c["share"] <= TARGET_CLEAN else "ABOVE"
    print(f"clean (real records, unplanted): {c['flagged']} / {c['records']} flagged = {c['share']:.2%} "
          f"({verdict} the {TARGET_CLEAN:.0%} target)")
    for check, v in c["by_check"].items():
        ex = "; ".join(f"{e['shard']} row {e['row']} {e['field']}: {_clip(e['detail'])}"
                       for e in v["examples"][:examples])
        print(f"  false positives {check}: {v['records']} clean records ({v['records'] / c['records']:.2%}), e.g. {ex}")
    g = result["generated_unplanted"]
    if g["records"]:
        print(f"generated records, unplanted: {g['flagged']} / {g['records']} flagged ({g['share']:.2%})"
              + "".join(f"; {ch} {v['records']}" for ch, v in g["by_check"].items()))
    for kind, k in result["kinds"].items():
        if k["scored"] and k["found"] < k["planted"]:
            reasons = "; ".join(f"{n} x {r}" for r, n in k["reasons"].most_common(4))
            print(f"  missed {kind}: {reasons}")
            for m in k["misses"][:examples]:
                fl = ", ".join(f"{c}@{f}" for c, f, _ in m["flags"][:4]) or "none"
                print(f"    e.g. {m['shard']} row {m['row']} {m['field']} ({m['variant']}; "
                      f"inserted {_clip(repr(m['inserted']), 40)}): flags {fl}")


def _clip(s, n: int = 70) -> str:
    s = "" if s is None else str(s).replace("\n", "\\n")
    return s if len(s) <= n else s[: n - 1] + "…"


def print_summary(results: dict, truth: dict) -> None:
    cells = [(form, fmt) for form in results for fmt in results[form]]
    kinds = []
    for form in results:
        for kind in chat_data.KINDS[form]:
            if kind not in kinds:
                kinds.append(kind)
    header = ["kind"] + [f"{form[:8]}/{fmt}" for form, fmt in cells]
    rows = []
    for kind in kinds:
        row = [kind]
        for form, fmt in cells:
            r = results[form][fmt]
            if r is None:
                row.append("n/r")
            elif kind not in r["kinds"]:
                row.append("")
            else:
                k = r["kinds"][kind]
                row.append("no chk" if not k["scored"] else f"{k['recall']:.2f}")
        rows.append(row)
    rows.append(["clean flagged"] + ["n/r" if results[f][m] is None else f"{results[f][m]['clean']['share']:.1%}"
                                     for f, m in cells])
    print()
    print(_common.fmt_table(header, rows, title="recall per kind (found at the planted record and field) and "
                                                 "clean flagged share; n/r = the audit could not read the format"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default=str(_common.REPO / "bench-data" / "chat"),
                    help="folder for the generated data and the audits (default bench-data/chat)")
    ap.add_argument("--records", type=int, default=2000, help="records per form (default 2000)")
    ap.add_argument("--rate", type=float, default=0.02, help="share of records planted per kind (default 0.02)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--forms", default=",".join(chat_data.FORMS))
    ap.add_argument("--formats", default=",".join(chat_data.FORMATS))
    ap.add_argument("--config", default=None, help="audit config passed to every audit")
    ap.add_argument("--examples", type=int, default=3, help="examples per false-positive check and per miss")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--strict", action="store_true", help="exit 3 when a target is missed")
    args = ap.parse_args(argv)
    return _common.run_with_data("chat_recall", chat_data.chat_sources, run, args)


def run(args) -> int:
    work = Path(args.work)
    data = work / "data"
    forms = [f for f in args.forms.split(",") if f]
    formats = [f for f in args.formats.split(",") if f]
    print(_common.machine_line())
    t0 = time.perf_counter()
    truth = chat_data.generate(data, args.records, args.rate, args.seed, tuple(forms), tuple(formats),
                               log=lambda s: print("generated " + s))
    print(f"data: {data} ({time.perf_counter() - t0:.1f} s); shared data: {chat_data.shared_data_dir()}")
    results: dict = {}
    figures: dict = {}
    all_met = True
    for form in forms:
        results[form] = {}
        for fmt in formats:
            shards = [chat_data.shard_path(data, fmt, form, s) for s in chat_data.SHARDS[form]]
            res = _common.run_audit_cli(shards, work / "audits" / f"{form}-{fmt}", args.config)
            result = None
            if "flags" in res:
                result = score(truth["forms"][form], res["flags"], set(res["report"]["checks"]), args.examples)
                met, missed = targets_met(result)
                all_met &= met
            else:
                all_met = False
            print()
            print_cell(form, fmt, res, result, args.examples)
            results[form][fmt] = result
            figures[f"{form}/{fmt}"] = {"rc": res["rc"], "seconds": res["seconds"], "output": res["output"],
                                        "result": _jsonable(result)}
    print_summary(results, truth)
    print(f"\ntargets: recall >= {TARGET_RECALL} for every kind, clean flagged <= {TARGET_CLEAN:.0%}: "
          + ("met in every cell" if all_met else "MISSED (see above)") + f"; {time.perf_counter() - t0:.0f} s in all")
    _common.write_json_result(args.json, {"params": truth["params"], "cells": figures})
    return 3 if args.strict and not all_met else 0


def _jsonable(x):
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


if __name__ == "__main__":
    sys.exit(main())
