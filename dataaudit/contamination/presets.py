"""Built-in field choices for common public benchmark files, so `--benchmark gsm8k=test.jsonl` just works.

A preset names the text an item is matched on (the prompt part a model is evaluated on, as the
lm-evaluation-harness decontamination queries do; multiple-choice options are included where the question
alone is too short to be specific), the item id field, and for headerless CSV files the column names.
Each preset lists alternative field sets for the schemas the benchmark is published in (the original release
and the Hugging Face export); the first alternative whose fields all exist in the file's first record is used.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    name: str
    alternatives: tuple[tuple[str, ...], ...]   # text field specs, tried in order
    id_fields: tuple[str, ...] = ()              # the first one present is the item id; none: the line number
    csv_columns: tuple[str, ...] | None = None   # column names of the headerless CSV release
    description: str = ""


PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("gsm8k", (("question",),), (),
           description="GSM8K (openai/grade-school-math JSONL, HF gsm8k): question"),
    Preset("arc", (("question.stem", "question.choices.text"), ("question", "choices.text")), ("id",),
           description="ARC (AI2 JSONL: question.stem + question.choices[].text; HF ai2_arc: question + "
                       "choices.text), id"),
    Preset("mmlu", (("question", "A", "B", "C", "D"), ("question", "choices")), (),
           csv_columns=("question", "A", "B", "C", "D", "answer"),
           description="MMLU (original headerless CSV: question,A,B,C,D,answer; HF cais/mmlu: question + "
                       "choices)"),
    Preset("hellaswag", (("ctx",), ("ctx_a", "ctx_b")), ("ind",),
           description="HellaSwag (rowanz JSONL and HF hellaswag): ctx, id ind"),
    Preset("humaneval", (("prompt",),), ("task_id",),
           description="HumanEval (openai/human-eval JSONL, HF openai_humaneval): prompt, id task_id"),
    Preset("mbpp", (("text",), ("prompt",)), ("task_id",),
           description="MBPP (google-research JSONL: text; HF sanitized: prompt), id task_id"),
    Preset("truthfulqa", (("question",), ("Question",)), (),
           description="TruthfulQA (HF truthful_qa generation/multiple_choice: question; original CSV: "
                       "Question)"),
)}

ALIASES = {
    "arc_challenge": "arc", "arc_easy": "arc", "arc-challenge": "arc", "arc-easy": "arc", "ai2_arc": "arc",
    "hendrycks_test": "mmlu", "openai_humaneval": "humaneval", "human_eval": "humaneval",
    "truthful_qa": "truthfulqa", "truthfulqa_mc": "truthfulqa", "truthfulqa_gen": "truthfulqa",
}

_SEPARATORS = "_-."


def find_preset(name: str) -> Preset | None:
    """The preset for a benchmark name: exact (case-insensitive) name or alias, else the longest preset name or
    alias that the name starts with followed by `_`, `-` or `.` (`mmlu_anatomy`, `arc_challenge_test`)."""
    key = name.lower()
    if key in PRESETS:
        return PRESETS[key]
    if key in ALIASES:
        return PRESETS[ALIASES[key]]
    best = None
    for cand in list(PRESETS) + list(ALIASES):
        if key.startswith(cand) and len(key) > len(cand) and key[len(cand)] in _SEPARATORS:
            if best is None or len(cand) > len(best):
                best = cand
    if best is None:
        return None
    return PRESETS[ALIASES.get(best, best)]


def preset_by_name(name: str) -> Preset:
    """An explicit preset name (config `preset = "arc"`); KeyError lists the known ones."""
    p = PRESETS.get(name.lower()) or PRESETS.get(ALIASES.get(name.lower(), ""))
    if p is None:
        raise KeyError(f"unknown preset {name!r} (known: {', '.join(sorted(PRESETS))})")
    return p
