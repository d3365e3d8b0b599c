"""The first screen of report.html, computed from report.json's dict alone: the verdict, flags per check, the
shard x check matrix and the worst records among the examples. Plain data; the template escapes every string."""
from __future__ import annotations

SEVERITY_RANK = {"error": 3, "warning": 2, "info": 1}
SEVERITY_COLOUR = {"error": "#b00020", "warning": "#a15c00", "info": "#777777"}
TOP = 10


def flagged_checks(report: dict) -> list[dict]:
    """The checks with any flag, most flagged first (ties: error before warning before info, then by name); `linked`:
    the page has the check's examples (a `#check-NAME` section)."""
    examples = report.get("examples", {})
    rows = [{"name": name, "flagged": c["flagged"], "severity": c["severity"], "linked": name in examples}
            for name, c in report["checks"].items() if c.get("flagged")]
    return sorted(rows, key=lambda r: (-r["flagged"], -SEVERITY_RANK.get(r["severity"], 0), r["name"]))


def verdict(report: dict) -> dict:
    """What decides the exit code: flags at error severity, and unreadable shards; with --fail-on rules
    (report.json's `gates`), the rules exceeded instead of the error flags."""
    errors = [c for c in flagged_checks(report) if c["severity"] == "error"]
    unreadable = report["totals"].get("unreadable_shards", 0)
    gates = report.get("gates")
    if gates is not None:
        exceeded = [g["rule"] for g in gates if g["exceeded"]]
        return {"exit_code": 1 if exceeded or unreadable else 0, "error_checks": [], "error_flags": 0,
                "unreadable": unreadable, "gates": gates, "exceeded": exceeded}
    return {"exit_code": 1 if errors or unreadable else 0, "error_checks": [c["name"] for c in errors],
            "error_flags": sum(c["flagged"] for c in errors), "unreadable": unreadable}


def matrix(report: dict, checks: list[dict]) -> dict:
    """Rows: the shards with any flag (report order); columns: the flagged checks (bar-chart order); each cell the
    shard's flagged records for that check and a 0-1 shade (its count over the largest cell)."""
    names = [c["name"] for c in checks]
    shards = [s for s in report["shards"] if any(s.get("checks", {}).get(n) for n in names)]
    top = max((s["checks"].get(n, 0) for s in shards for n in names), default=0) or 1
    rows = [{"shard": s["path"], "cells": [{"check": c["name"], "count": s["checks"].get(c["name"], 0),
                                            "severity": c["severity"], "linked": c["linked"],
                                            "shade": round(s["checks"].get(c["name"], 0) / top, 2)} for c in checks]}
            for s in shards]
    return {"checks": checks, "rows": rows}


def worst_records(report: dict, limit: int = TOP) -> list[dict]:
    """The records of the examples with the most flagged checks, then the highest severity (then shard, row): each
    with its shard, row, key, checks (report order) and the first example's detail. Only the examples shown are
    known here (flags.parquet has every flag)."""
    records: dict[tuple, dict] = {}
    for name, items in report.get("examples", {}).items():
        severity = report["checks"].get(name, {}).get("severity", "info")
        for e in items:
            rec = records.setdefault((e.get("shard"), e.get("row")), {
                "shard": e.get("shard"), "row": e.get("row"), "key": e.get("key"), "checks": [], "severity": severity,
                "detail": e.get("detail")})
            if name not in rec["checks"]:
                rec["checks"].append(name)
            if SEVERITY_RANK.get(severity, 0) > SEVERITY_RANK.get(rec["severity"], 0):
                rec["severity"] = severity
    ordered = sorted(records.values(), key=lambda r: (-len(r["checks"]), -SEVERITY_RANK.get(r["severity"], 0),
                                                      str(r["shard"]), r["row"] if r["row"] is not None else -1))
    return ordered[:limit]


def shards_line(report: dict) -> str:
    """The Shards table's one-line summary: "7 shards: 5 ok, 2 unreadable" (statuses in order of first use)."""
    statuses: dict[str, int] = {}
    for s in report["shards"]:
        statuses[s["status"]] = statuses.get(s["status"], 0) + 1
    n = len(report["shards"])
    return f"{n} shard{'s' if n != 1 else ''}" + (": " if statuses else "") + \
        ", ".join(f"{k} {status}" for status, k in statuses.items())


def overview(report: dict) -> dict:
    checks = flagged_checks(report)
    return {"verdict": verdict(report), "checks": checks, "matrix": matrix(report, checks),
            "worst": worst_records(report), "colours": SEVERITY_COLOUR, "shards": shards_line(report),
            "skipped": {n: c["skipped"] for n, c in report["checks"].items() if not c.get("ran")},
            "sample": sample_rows(report)}


def sample_rows(report: dict) -> dict | None:
    """A sampled audit: its note and the rate of each check that flagged, with its 95% interval, as percentages."""
    sample = report.get("sample")
    if sample is None:
        return None
    rows = [{"name": n, "flagged": r["flagged"], "rate": f"{r['rate']:.4%}",
             "ci": f"{r['ci95'][0]:.4%} .. {r['ci95'][1]:.4%}"}
            for n, r in sample["rates"].items() if r["flagged"]]
    return {"note": sample["note"], "rows": rows}
