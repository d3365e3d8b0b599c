"""Built-in field choices for common public benchmark files, so `--benchmark gsm8k=test.jsonl` just works.

A preset names the text an item is matched on: the question that lm-evaluation-harness's query for the task is
built on (its `doc_to_decontamination_query` where the task sets one, else its `doc_to_text`), without the
prompt's scaffolding (`Question:` / `Answer:`), which copies of an item often lack. Compared with lm-eval 0.4.13's
YAMLs (tests/contamination/test_contamination_lmeval.py): arc_easy/arc_challenge decontaminate on `Question:
{{question}}\nAnswer:` and gsm8k prompts `Question: {{question}}\nAnswer:`: the preset is the question, exactly
what they interpolate; truthfulqa decontaminates on `question` and humaneval prompts `{{prompt}}`: the same text.
Three differ on purpose: mmlu's prompt lists the lettered choices after the question and hellaswag's prefixes the
activity label (its `process_docs` also capitalizes `ctx_b` and drops `[title]` marks), mbpp's wraps the task
text in an instruction and the tests; the preset matches the question, the context and the text alone, and the
choices are looked for after a match (the choices leak form). `--benchmark lm-eval:TASK=FILE` renders the task's
own query instead (`lmeval_render`). A preset also names the item id field, the headerless CSV column names, and
how to read the item's reference answer and its choices (`answers`), which are looked for after a match (the
answer leak, the severity) but never matched on their own. Each preset lists alternative field sets for the
schemas the benchmark is published in (the original release and the Hugging Face export); the first alternative
whose fields all exist in the file's first record is used.
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
    Preset("arc", (("question.stem",), ("question",)), ("id",),
           description="ARC (AI2 JSONL: question.stem; HF ai2_arc: question), id"),
    Preset("mmlu", (("question",),), (),
           csv_columns=("question", "A", "B", "C", "D", "answer"),
           description="MMLU (original headerless CSV: question,A,B,C,D,answer; HF cais/mmlu: question)"),
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
