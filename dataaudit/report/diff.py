"""dedup.html's word diff: the words of a duplicate that differ from its cluster's representative are marked.

difflib over the (lowercased) words of the two excerpts; whitespace is kept as it is in the text.
"""
from __future__ import annotations

import difflib
import re

_SPLIT = re.compile(r"(\s+)")


def diff_segments(base: str | None, text: str | None) -> list[dict]:
    """`text` as [{text, changed}] pieces: words not matched to `base` are changed (whitespace kept)."""
    if text is None:
        return [{"text": "(no text)", "changed": False}]
    parts = _SPLIT.split(text)
    words = parts[0::2]
    changed = [False] * len(words)
    if base is not None and base != text:
        bwords = _SPLIT.split(base)[0::2]
        sm = difflib.SequenceMatcher(None, [w.lower() for w in bwords], [w.lower() for w in words], autojunk=False)
        for op, _, _, j1, j2 in sm.get_opcodes():
            if op != "equal":
                for j in range(j1, j2):
                    changed[j] = True
    segs: list[dict] = []
    for i, p in enumerate(parts):
        if not p:
            continue
        w = i // 2
        # a word: its own flag; whitespace: changed only between two changed words
        flag = changed[w] if i % 2 == 0 else changed[w] and w + 1 < len(changed) and changed[w + 1]
        if segs and segs[-1]["changed"] == flag:
            segs[-1]["text"] += p
        else:
            segs.append({"text": p, "changed": flag})
    return segs


def examples_with_segments(report: dict) -> dict:
    """The report's example clusters and validation overlaps, each text given its `segments` (in place):
    cluster members against the cluster's first member, a validation sample against its training copy."""
    ex = report.get("examples") or {"clusters": [], "overlap": []}
    for c in ex.get("clusters", []):
        base = c["members"][0].get("text") if c["members"] else None
        for k, m in enumerate(c["members"]):
            m["segments"] = diff_segments(None if k == 0 else base, m.get("text"))
    for o in ex.get("overlap", []):
        o["val"]["segments"] = diff_segments(o["train"].get("text"), o["val"].get("text"))
        o["train"]["segments"] = diff_segments(None, o["train"].get("text"))
    return ex
