#!/usr/bin/env python
"""Recall per leak form, false positives, and the count on greeting SFT data, for `dataaudit contamination`.

Real items from ../shared/data/benchmarks (GSM8K test, ARC-Challenge test) are planted in real training text
(tinyshakespeare paragraphs, and the chat demo data as more records), each sampled item in one leak form:

  question            the input alone, as its own record
  question_answer     the input, a line break, the reference answer (GSM8K: the worked solution with its
                      <<calc>> notes and "#### N"; ARC: the correct choice's text)
  question_choices    the input and every choice "A. ...", no answer (ARC only)
  scaffold            "Question: {input}\\nA. ...\\nAnswer: {answer}" (lm-eval's prompt form; choices for ARC)
  case_whitespace     input and answer upper-cased, spaces replaced by runs of tabs, newlines, spaces
  hard_wrapped        a paragraph, then input and answer, wrapped at 60-80 columns (textwrap)
  mid_paragraph       inside a paragraph: its sentences before, input and answer, its sentences after

then `dataaudit contamination` runs with its defaults (the CLI, in a subprocess). Printed: per benchmark and form,
the planted items found (input recall, target 1.0), the answer and choices flags where planted (recall) and where
not planted (false flags), false positives among the items not planted (target 0); then the contaminated count of
GSM8K, ARC and TruthfulQA-like short questions against the identity / greeting SFT data (target 0).

Items are sampled (seeded) among those of at least min_item_words (8) words: shorter ones are, by design, listed as
short items and not counted.

    .venv/bin/python benchmarks/contamination_leak_forms.py [--per-form 12] [--seed 7]
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.paths import SHARED_DATA  # noqa: E402

FORMS = ("question", "question_answer", "question_choices", "scaffold", "case_whitespace", "hard_wrapped",
         "mid_paragraph")
WITH_ANSWER = {"question_answer", "scaffold", "case_whitespace", "hard_wrapped", "mid_paragraph"}
WITH_CHOICES = {"question_choices", "scaffold"}
SHORT_QUESTIONS = ["Who are you?", "What is your name?", "Are you ChatGPT?", "Who created you?", "hi", "hello",
                   "What can you do?", "Can you introduce yourself?"]


def _respace(text: str) -> str:
    seps = ["  ", "\n", " \t ", "   ", "\t"]
    return "".join(w + seps[i % len(seps)] for i, w in enumerate(text.split())).upper().strip()


def _sentences(paragraph: str) -> str:
    return " ".join(paragraph.split())


def plant(form: str, q: str, answer: str, choices: list[str], before: str, after: str, width: int) -> str:
    lettered = "\n".join(f"{'ABCDEFGH'[i]}. {c}" for i, c in enumerate(choices))
    if form == "question":
        return q
    if form == "question_answer":
        return f"{q}\n{answer}"
    if form == "question_choices":
        return f"{q}\n{lettered}"
    if form == "scaffold":
        return f"Question: {q}\n{lettered}\nAnswer: {answer}" if choices else f"Question: {q}\nAnswer: {answer}"
    if form == "case_whitespace":
        return _respace(f"{q}\n{answer}")
    if form == "hard_wrapped":
        return textwrap.fill(f"{_sentences(before)} {q} {' '.join(answer.split())}", width)
    if form == "mid_paragraph":
        return f"{_sentences(before)} {q} {' '.join(answer.split())} {_sentences(after)}"
    raise ValueError(form)


def _paragraphs() -> list[str]:
    text = (SHARED_DATA / "corpora" / "tinyshakespeare.txt").read_text(encoding="utf-8")
    return [p for p in text.split("\n\n") if p.strip()]


def _cli(args: list[str]) -> int:
    return subprocess.run([sys.executable, "-m", "dataaudit.cli", "contamination", *args, "--engine", "local"],
                          cwd=ROOT, capture_output=True, text=True).returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-form", type=int, default=12, help="items planted per benchmark and leak form")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    from dataaudit.contamination.load import load_benchmark

    bench_files = {"gsm8k": SHARED_DATA / "benchmarks" / "gsm8k_test.jsonl",
                   "arc_challenge": SHARED_DATA / "benchmarks" / "arc_challenge_test.jsonl"}
    rng = random.Random(args.seed)
    docs = _paragraphs()
    # paragraphs ending a sentence: what is planted after them starts a sentence, as in real text
    hosts = [i for i, p in enumerate(docs) if p.rstrip()[-1:] in ".!?" and len(p.split()) >= 12]
    rng.shuffle(hosts)
    hosts_it = iter(hosts)
    planted: dict[tuple[str, str], str] = {}      # (benchmark, id) -> form
    host_rows: set[int] = set()                   # training rows holding a planted item
    for name, path in bench_files.items():
        b = load_benchmark(name, str(path))
        eligible = [i for i, t in enumerate(b.texts) if len(t.split()) >= 8 and b.answers[i]]
        rng.shuffle(eligible)
        picks = iter(eligible)
        for form in FORMS:
            if form == "question_choices" and not b.choices[0]:
                continue
            for _ in range(args.per_form):
                i = next(picks)
                h = next(hosts_it)
                host_rows.add(h)
                answer = b.answers[i][1] if name == "gsm8k" else b.answers[i][0]   # GSM8K: the worked solution
                docs[h] = plant(form, b.texts[i], answer, b.choices[i] or [], docs[h],
                                docs[(h + 1) % len(docs)], rng.randint(60, 80))
                planted[(name, b.ids[i])] = form
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "train.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
        chat = SHARED_DATA / "chat" / "v1_sft_demo.jsonl"
        out = tmp / "out"
        rc = _cli(["--train", str(tmp / "train.jsonl"), str(chat), *[f"--benchmark={n}={p}"
                                                                      for n, p in bench_files.items()],
                   "--out", str(out)])
        print(f"planted run: exit {rc}; {len(planted)} items planted in {len(docs)} tinyshakespeare paragraphs "
              f"(+ {chat.name}); defaults (ngram n=13 threshold 0.5, exact, minhash 0.8, min_item_words 8)")
        print(f"{'benchmark':15} {'form':17} {'planted':>7} {'input':>7} {'answer':>9} {'choices':>9} "
              f"{'ans.false':>9} {'ch.false':>8}")
        totals = {"fp": 0, "not_planted": 0, "dup": 0}
        for name in bench_files:
            rows = pq.read_table(out / name / "items.parquet").to_pylist()
            by_form: dict[str, list[dict]] = {}
            for r in rows:
                form = planted.get((name, r["id"]))
                if form is None:
                    totals["not_planted"] += 1
                    if r["contaminated"]:
                        m = r["matches"][0]
                        # an item whose text is largely another planted item's (benchmarks hold near-duplicates)
                        dup = Path(m["shard"]).name == "train.jsonl" and m["row"] in host_rows
                        totals["dup" if dup else "fp"] += 1
                        print(f"  {'near-duplicate of a planted item' if dup else 'false positive'} {name}/"
                              f"{r['id']} {r['methods']} fraction {r['ngram_fraction']:.2f}: {r['text']!r} in "
                              f"{m['snippet'][:300]!r}")
                elif not r["input_contaminated"]:
                    print(f"  missed {name}/{r['id']} ({form}, {r['words']} words): {r['text']!r}")
                else:
                    by_form.setdefault(form, []).append(r)
            for form in FORMS:
                rs = by_form.get(form)
                if not rs:
                    continue
                found = sum(r["input_contaminated"] for r in rs)
                ans = sum(bool(r["answer_contaminated"]) for r in rs)
                ch = sum(bool(r["choices_contaminated"]) for r in rs)
                a_txt = f"{ans}/{len(rs)}" if form in WITH_ANSWER else "-"
                c_txt = f"{ch}/{len(rs)}" if form in WITH_CHOICES and name == "arc_challenge" else "-"
                a_false = "-" if form in WITH_ANSWER else str(ans)
                c_false = "-" if form in WITH_CHOICES else str(ch)
                print(f"{name:15} {form:17} {len(rs):7} {found / len(rs):7.3f} {a_txt:>9} {c_txt:>9} "
                      f"{a_false:>9} {c_false:>8}")
        print(f"false positives among items not planted: {totals['fp']} of {totals['not_planted']} (and "
              f"{totals['dup']} found in a planted record: a benchmark near-duplicate of the item planted there)")

        tqa = tmp / "truthfulqa.jsonl"
        tqa.write_text("".join(json.dumps({"question": q, "best_answer": "-"}) + "\n" for q in SHORT_QUESTIONS))
        sft = [SHARED_DATA / "posttrain" / "identity.json", SHARED_DATA / "chat"]
        out2 = tmp / "out2"
        rc = _cli(["--train", *map(str, sft), *[f"--benchmark={n}={p}" for n, p in bench_files.items()],
                   f"--benchmark=truthfulqa={tqa}", "--out", str(out2)])
        rep = json.loads((out2 / "contamination.json").read_text())
        counted = {n: b["contaminated"] for n, b in rep["benchmarks"].items()}
        short = {n: b["short_items"]["found"] for n, b in rep["benchmarks"].items()}
        print(f"identity/greeting SFT data (identity.json + chat/): exit {rc}; contaminated counted {counted}; "
              f"short items found, not counted {short}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
