"""Each preset's reference answer and choices of an item, read from its original record.

They are not matched on their own: after a training record matches an item's input, the text right after the
match is searched for them (`scan`): the answer there is the worst leak (the model saw question and answer), the
choices there show the multiple-choice form was copied. A record without the fields gives none (not checked).
"""
from __future__ import annotations

import re
from typing import Any, Callable

_CALC = re.compile(r"<<[^<>]*>>")     # GSM8K's calculator annotations, absent from most copies


def _text(v: Any) -> str:
    return "" if v is None else v if isinstance(v, str) else str(v)


def _gsm8k(rec: dict) -> tuple[list[str], None]:
    sol = _text(rec.get("answer"))
    if not sol:
        return [], None
    final = sol.rsplit("####", 1)[-1].strip() if "####" in sol else ""
    body = _CALC.sub("", sol)
    return [a for a in (final, sol, body) if a], None


def label_answers(key: Any) -> list[str]:
    """A choice's label as an answer line gives it ("Answer: C", "the answer is C"); a bare letter is no answer."""
    key = _text(key).strip()
    return [f"Answer: {key}", f"answer is {key}"] if key else []


def _labelled(rec: dict, key: Any, texts: list, labels: list) -> list[str]:
    """The correct choice's text, and its label as an answer line gives it."""
    key = _text(key).strip()
    found = [_text(t) for t, lab in zip(texts, labels) if _text(lab).strip() == key]
    return found + label_answers(key) if found else []


def _arc(rec: dict) -> tuple[list[str], list[str] | None]:
    q = rec.get("question")
    ch = q.get("choices") if isinstance(q, dict) else rec.get("choices")
    if isinstance(ch, list):                                  # AI2: [{"text", "label"}, ...]
        texts = [c.get("text") for c in ch if isinstance(c, dict)]
        labels = [c.get("label") for c in ch if isinstance(c, dict)]
    elif isinstance(ch, dict):                                # HF: {"text": [...], "label": [...]}
        texts, labels = list(ch.get("text") or []), list(ch.get("label") or [])
    else:
        return [], None
    return _labelled(rec, rec.get("answerKey"), texts, labels), [_text(t) for t in texts]


def _mmlu(rec: dict) -> tuple[list[str], list[str] | None]:
    if all(k in rec for k in "ABCD"):                         # original CSV: answer is a letter
        choices = [_text(rec[k]) for k in "ABCD"]
        ans = _text(rec.get("answer")).strip()
        return (_labelled(rec, ans, choices, list("ABCD")) if ans else []), choices
    choices = rec.get("choices")
    if not isinstance(choices, list):
        return [], None
    choices = [_text(c) for c in choices]
    a = rec.get("answer")
    i = "ABCD".index(a) if isinstance(a, str) and len(a) == 1 and a in "ABCD" else a
    ok = isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(choices)
    return (_labelled(rec, "ABCD"[i] if i < 4 else i, choices, list("ABCD")) if ok else []), choices


def _hellaswag(rec: dict) -> tuple[list[str], list[str] | None]:
    endings = rec.get("endings")
    if not isinstance(endings, list):
        return [], None
    endings = [_text(e) for e in endings]
    label = _text(rec.get("label")).strip()
    ok = label.isdigit() and int(label) < len(endings)
    return ([endings[int(label)]] if ok else []), endings


def _truthfulqa(rec: dict) -> tuple[list[str], list[str] | None]:
    best = rec.get("best_answer", rec.get("Best Answer"))
    mc = rec.get("mc1_targets")
    choices = None
    answers = [_text(best)] if best else []
    if isinstance(mc, dict) and isinstance(mc.get("choices"), list):
        choices = [_text(c) for c in mc["choices"]]
        if not answers:
            answers = [c for c, lab in zip(choices, mc.get("labels") or []) if lab == 1]
    return answers, choices


def _field(name: str) -> Callable[[dict], tuple[list[str], None]]:
    def read(rec: dict) -> tuple[list[str], None]:
        v = _text(rec.get(name))
        return ([v] if v.strip() else []), None
    return read


ANSWERS: dict[str, Callable[[dict], tuple[list[str], list[str] | None]]] = {
    "gsm8k": _gsm8k,                  # the final number after ####, the whole solution (with, without <<calc>>)
    "arc": _arc,                      # the choice whose label is answerKey; every choice
    "mmlu": _mmlu,                    # the choice at `answer` (letter or index); every choice
    "hellaswag": _hellaswag,          # the ending at `label`; every ending
    "truthfulqa": _truthfulqa,        # best_answer (or the mc1 target); mc1 choices
    "humaneval": _field("canonical_solution"),
    "mbpp": _field("code"),
}


def answers_of(preset: str | None, records: list[dict]) -> tuple[list[list[str]], list[list[str] | None]] | None:
    """(answers, choices) per record for a preset that has a reader; None when there is none (not checked)."""
    read = ANSWERS.get(preset or "")
    if read is None:
        return None
    answers, choices = [], []
    for rec in records:
        a, c = read(rec) if isinstance(rec, dict) else ([], None)
        answers.append([x for x in a if x.strip()])
        choices.append([x for x in c if x.strip()] if c else None)
    return answers, choices
