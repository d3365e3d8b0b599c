"""A readable diff of two JSON values (tokenizer components): a list of changes by path, plus a unified text diff."""
from __future__ import annotations

import difflib
import json
from typing import Any

MAX_CHANGES = 50
MAX_UNIFIED_LINES = 200


def _dump(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, sort_keys=True)


def _walk(a: Any, b: Any, path: str, out: list[dict]) -> None:
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in b:
                out.append({"path": sub, "op": "removed", "train": a[key], "infer": None})
            elif key not in a:
                out.append({"path": sub, "op": "added", "train": None, "infer": b[key]})
            else:
                _walk(a[key], b[key], sub, out)
        return
    if isinstance(a, list) and isinstance(b, list):
        matcher = difflib.SequenceMatcher(a=[_dump(x) for x in a], b=[_dump(x) for x in b], autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "equal":
                continue
            if op == "replace" and i2 - i1 == j2 - j1:
                for k in range(i2 - i1):
                    _walk(a[i1 + k], b[j1 + k], f"{path}[{i1 + k}]", out)
                continue
            for k in range(i1, i2):
                out.append({"path": f"{path}[{k}]", "op": "removed", "train": a[k], "infer": None})
            for k in range(j1, j2):
                out.append({"path": f"{path}[{k}]", "op": "added", "train": None, "infer": b[k]})
        return
    out.append({"path": path or "(root)", "op": "changed", "train": a, "infer": b})


def json_diff(a: Any, b: Any) -> dict:
    """{same, changes: [{path, op: added|removed|changed, train, infer}], more, unified}."""
    if a == b:
        return {"same": True, "changes": [], "more": 0, "unified": ""}
    changes: list[dict] = []
    _walk(a, b, "", changes)
    lines = list(difflib.unified_diff(
        json.dumps(a, indent=1, ensure_ascii=False, sort_keys=True).splitlines(),
        json.dumps(b, indent=1, ensure_ascii=False, sort_keys=True).splitlines(),
        fromfile="train", tofile="infer", lineterm="", n=2))
    if len(lines) > MAX_UNIFIED_LINES:
        lines = lines[:MAX_UNIFIED_LINES] + [f"... ({len(lines) - MAX_UNIFIED_LINES} more lines)"]
    return {"same": False, "changes": changes[:MAX_CHANGES], "more": max(0, len(changes) - MAX_CHANGES),
            "unified": "\n".join(lines)}


def short(v: Any, limit: int = 80) -> str:
    s = _dump(v)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def describe(diff: dict, limit: int = 3) -> str:
    """'normalizers[2] added {"type": "NFKC"}; ...' for a reason line."""
    parts = []
    for c in diff["changes"][:limit]:
        if c["op"] == "added":
            parts.append(f"{c['path']} added {short(c['infer'])}")
        elif c["op"] == "removed":
            parts.append(f"{c['path']} removed {short(c['train'])}")
        else:
            parts.append(f"{c['path']}: {short(c['train'])} -> {short(c['infer'])}")
    extra = len(diff["changes"]) - limit + diff["more"]
    if extra > 0:
        parts.append(f"{extra} more")
    return "; ".join(parts)
