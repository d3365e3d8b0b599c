"""`dataaudit contamination`: which benchmark items the training data already contains.

Exit codes: 0 no item contaminated; 1 some item contaminated (or a training shard could not be read to the
end, so the answer is incomplete); 2 usage or I/O error (one line naming the file, line and field).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from dataaudit.cli.common import (FOLDER, InputError, MultiValueCommand, engine_options, freeze_imports, job_progress,
                                  make_out_dir, plural, print_resumed, print_wrote, text_records_option)
from dataaudit.contamination import DECONTAMINATE, FILES
from dataaudit.outputs import PARTS
from dataaudit.cli.fields import fields_line, require_fields
from dataaudit.fields import FieldSpec

if TYPE_CHECKING:   # rich loads when a command prints, not for `--help`
    from rich.console import Console

RESERVED_NAMES = {PARTS}   # names of the folders a job keeps in --out


def _print_summary(console: Console, report: dict, out: Path) -> None:
    from rich.table import Table
    from rich.text import Text

    text = bool(report["benchmarks"]) or not report.get("image_benchmarks")   # image benchmarks only: no text table
    t = report["totals"]
    table = Table(title=f"dataaudit contamination: {plural(t['items'], 'item')} in "
                        f"{plural(t['benchmarks'], 'benchmark')} vs {plural(t['train_records'], 'training record')} "
                        f"in {plural(t['train_shards'], 'shard')}")
    for col, just in (("benchmark", "left"), ("items", "right"), ("contaminated", "right"), ("rate", "right"),
                      ("ngram", "right"), ("exact", "right"), ("minhash", "right"), ("empty", "right")):
        table.add_column(col, justify=just)
    for name, b in report["benchmarks"].items():
        style = "red" if b["contaminated"] else "green"
        table.add_row(name, str(b["items"]), f"[{style}]{b['contaminated']}[/]", f"{100 * b['rate']:.2f}%",
                      *("-" if b["methods"][m] is None else str(b["methods"][m])
                        for m in ("ngram", "exact", "minhash")),
                      str(b["empty"]))
    if text:
        console.print(table)
    for name, b in report["benchmarks"].items():
        leaks = b.get("leaks") or {}
        if b["contaminated"] and (leaks.get("answer") is not None or leaks.get("choices") is not None):
            parts = [f"{k} {leaks[k]}" for k in ("answer", "choices") if leaks.get(k) is not None]
            console.print(f"{name}: of {b['contaminated']} contaminated, leaked with the " + ", with the ".join(parts),
                          highlight=False, markup=False)
    short = [(name, b["short_items"]) for name, b in report["benchmarks"].items() if b["short_items"]["found"]]
    if short:
        st = Table(title=f"short items (fewer than {short[0][1]['min_item_words']} words) found as a whole sentence "
                         f"or turn: {'counted' if short[0][1]['counted'] else 'not counted'}")
        for col in ("benchmark", "id", "item", "records"):
            st.add_column(col)
        for name, s in short:
            for w in s["listed"]:
                st.add_row(Text(name), Text(w["id"]), Text(w["text"]), str(w["train_records"]))   # data: no markup
        console.print(st)
    _print_images(console, report)
    m = report["methods"]
    parts = []
    if m["ngram"]["enabled"]:
        parts.append(f"ngram n={m['ngram']['n']} threshold={m['ngram']['threshold']}")
    if m["exact"]["enabled"]:
        parts.append("exact")
    if m["minhash"]["enabled"]:
        parts.append(f"minhash threshold={m['minhash']['threshold']}")
    if text:
        console.print("methods: " + (", ".join(parts) or "none"), highlight=False)
        console.print(fields_line({"text": s["text_field"].split(", ") if s.get("text_field") else []}
                                  for s in report["train"]["shards"]), highlight=False)
    for shard in report["train"]["shards"]:
        if shard["status"] != "ok":
            console.print(f"[red]unreadable[/] {shard['path']}: {shard['error']}", markup=True, highlight=False)
    for note in report["notes"]:
        console.print(f"note: {note}", highlight=False, markup=False)   # notes hold data: "[x]" is no markup
    print_resumed(console, report, out)
    benches = list(report["benchmarks"].values()) + list((report.get("image_benchmarks") or {}).values())
    files = [FILES.record, FILES.page] + ([report["clean_ids"]] if report.get("clean_ids") else []) + \
        [f for b in benches for f in b["files"]]
    decon = report["decontaminate"]
    print_wrote(console, out, files,
                more=[f"{out / decon['file']} ({plural(decon['records'], 'record')})"] if decon else [])


def _print_images(console: Console, report: dict) -> None:
    """The image benchmarks: counts per kind of copy, then each leaked image with its first training record."""
    from rich.table import Table
    from rich.text import Text

    images = report.get("image_benchmarks") or {}
    if not images:
        return
    t = report["totals"]
    table = Table(title=f"image benchmarks vs {plural(t['train_images'], 'training image')} in "
                        f"{plural(t['train_records'], 'training record')}")
    for col, just in (("benchmark", "left"), ("images", "right"), ("contaminated", "right"), ("rate", "right"),
                      ("exact", "right"), ("near", "right"), ("flipped", "right"), ("not checked", "right")):
        table.add_column(col, justify=just)
    for name, b in images.items():
        style = "red" if b["contaminated"] else "green"
        table.add_row(Text(name), str(b["items"]), f"[{style}]{b['contaminated']}[/]", f"{100 * b['rate']:.2f}%",
                      str(b["exact"]), str(b["near"]), str(b["flipped"]), str(b["not_checked"]))
    console.print(table)
    leaks = Table(title="leaked benchmark images (first training record each)")
    for col in ("benchmark", "id", "match", "records", "shard", "key", "row", "field"):
        leaks.add_column(col)
    for name, b in images.items():
        for w in b["leaked"]:
            m = w["matches"][0] if w["matches"] else {}
            leaks.add_row(*(Text(str(x)) for x in (name, w["id"], w["match"], w["train_records"], m.get("shard", ""),
                                                   m.get("key", ""), m.get("row", ""), m.get("field", ""))))
    if leaks.row_count:
        console.print(leaks)


@click.command(cls=MultiValueCommand, multi_value=("--train",))
@click.option("--train", "train", multiple=True, required=True, metavar="SHARD_OR_GLOB...",
              help="Training shards: files, folders or quoted globs (Parquet, WebDataset tar, JSONL). Several may "
                   "follow the option.")
@click.option("--benchmark", "benchmarks", multiple=True, required=True, metavar="NAME=PATH[:FIELD+FIELD]",
              help="A benchmark file (JSONL, JSON, CSV, Parquet, optionally gzipped) with the fields to match "
                   "(dots for nested fields, '+' to join several). Known names (gsm8k, arc, mmlu, hellaswag, "
                   "humaneval, mbpp, truthfulqa) pick their fields by preset; lm-eval:TASK=PATH (or a TASK name "
                   "no preset matches) renders the lm-eval task's query, target and choices. An image benchmark: a "
                   "folder of images, or a WebDataset tar or Parquet file of images (matched against the training "
                   "images: exact, pHash, mirrored pHash). Repeatable.")
@click.option("--lm-eval-tasks", "lm_eval_tasks", type=click.Path(file_okay=False, exists=True),
              help="Folder of lm-eval task YAMLs for lm-eval:TASK (default: the installed lm-eval's tasks; "
                   "pip install 'dataaudit[lmeval]').")
@click.option("--out", "out", required=True, type=FOLDER,
              help=f"Folder for {FILES.record}, {FILES.page} and one folder per benchmark.")
@click.option("--ngram", type=click.IntRange(min=1), default=None,
              help="Word n-gram size of the ngram method (default 13, or the config's; 8 for PaLM-style).")
@click.option("--score", type=click.Choice(["fraction", "longest"]), default=None,
              help="ngram method: the fraction of the item's n-grams found anywhere (default), or the longest "
                   "contiguous copy in one record, over the item's words; both against the threshold.")
@click.option("--min-item-words", type=click.IntRange(min=1), default=None,
              help="Items of fewer words (default 8, or the config's) match only as a whole sentence or turn with "
                   "their own final mark, and are listed as short items, not counted.")
@click.option("--count-short-items", is_flag=True,
              help="Count the short items found in the verdict, the exit code and the drop list.")
@click.option("--decontaminate-train", is_flag=True,
              help=f"Also write {DECONTAMINATE}: the (shard, key) of every training record to drop.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="contamination.toml: methods and thresholds, training text field, per-benchmark fields.")
@text_records_option("the config's [train] text_records, else line")
@engine_options("one task per training shard")
def contamination(train, benchmarks, lm_eval_tasks, out, ngram, score, min_item_words, count_short_items,
                  decontaminate_train, config_path, text_records, options):
    """Report which benchmark items the training shards already contain, per benchmark and per item, and write
    a clean subset of every benchmark. Exit 0: none contaminated; 1: some; 2: usage or I/O error."""
    from rich.console import Console

    from dataaudit.cli.paths import expand_shards
    from dataaudit.contamination.config import load_contamination_config
    from dataaudit.contamination.load import LM_EVAL_PREFIX, load_benchmark, parse_benchmark_arg

    paths = expand_shards(list(train))
    config = load_contamination_config(config_path).with_overrides(
        ngram=ngram, text_unit=text_records, min_item_words=min_item_words, count_short_items=count_short_items,
        score=score)
    specs = [parse_benchmark_arg(b.removeprefix(LM_EVAL_PREFIX)) for b in benchmarks]
    forced = [b.startswith(LM_EVAL_PREFIX) for b in benchmarks]
    names = [s[0] for s in specs]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise InputError(f"--benchmark: the name {dup!r} is given twice (names must be unique: each names an "
                         "output folder)")
    bad = next((n for n in names if n.lower() in RESERVED_NAMES), None)
    if bad is not None:
        raise InputError(f"--benchmark: the name {bad!r} is reserved (the output folder holds {bad}/)")
    unknown = sorted(set(config.benchmarks) - set(names))
    if unknown:
        raise InputError(f"{config.source}: [benchmarks.{unknown[0]}] names no --benchmark "
                         f"(given: {', '.join(names)})")
    from dataaudit.contamination.image_bench import image_format, load_image_benchmark
    loaded, images = [], []
    for (n, p, f), lm in zip(specs, forced):
        # a folder, or a tar or Parquet file of images without a field spec: an image benchmark
        kind = None if lm else image_format(p, f)
        settings = config.benchmarks.get(n)
        if kind is None:
            loaded.append(load_benchmark(n, p, f, settings, lm_eval=lm, lm_eval_tasks=lm_eval_tasks))
        else:
            key = next((k for k in ("preset", "fields", "header") if settings and getattr(settings, k) is not None),
                       None)
            if key is not None:
                raise InputError(f"{config.source}: [benchmarks.{n}] {key} does not apply to an image benchmark "
                                 f"({p}); only id_field does")
            images.append(load_image_benchmark(n, p, kind, settings.id_field if settings else None))
    if loaded:
        require_fields(paths, FieldSpec(text=config.text_field), f"{config.source}: [train] text_field")
    make_out_dir(out)

    from dataaudit.contamination.report import has_errors
    from dataaudit.pipelines.contamination import run_contamination   # late: keeps `--help` fast
    freeze_imports()

    console = Console(stderr=False)
    with job_progress(console, len(paths), {"scan": ("scanning", "shards"),
                                            "images": ("hashing images of", "shards")}) as on_progress:
        report = run_contamination(paths, loaded, config, out, options, on_progress,
                                   decontaminate_train=decontaminate_train, images=images)
    _print_summary(console, report, out)
    raise SystemExit(1 if has_errors(report) else 0)
