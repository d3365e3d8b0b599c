"""`dataaudit tokenizer-drift TRAIN_TOKENIZER INFER_TOKENIZER --out DIR [--sample SHARDS...]`.

Exit codes: 0 identical or compatible, 1 breaking (or a sample shard that broke part way: its error in
tokenizer_drift.json's `unreadable_samples`), 2 usage or I/O errors (one line naming the file).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import click

from dataaudit.cli.common import FOLDER, InputError, storage_option, make_out_dir, progress_bar
from dataaudit.extras import available, missing_message
from dataaudit.cli.fields import fields_line, text_fields
from dataaudit.tokenization import FILES

if TYPE_CHECKING:   # rich loads when a command prints, not for `--help`
    from rich.console import Console

_STYLE = {"breaking": "red", "compatible": "yellow", "identical": "green"}


def _print_summary(console: Console, result: dict, json_path: Path, html_path: Path) -> None:
    from rich.table import Table

    beh = result["behaviour"]
    verdict = result["verdict"]
    console.print(f"verdict: [{_STYLE[verdict]}]{verdict}[/]")
    table = Table(title=f"tokenizer drift on {beh['texts']} texts ({beh['by_source']['probe']['texts']} probes, "
                        f"{beh['by_source']['sample']['texts']} sample)")
    table.add_column("")
    table.add_column("train", justify="right")
    table.add_column("infer", justify="right")
    vocab = result["static"]["vocab"]
    rows = [
        ("vocabulary", vocab["size"]["train"], vocab["size"]["infer"]),
        ("tokens", beh["train"]["tokens"], beh["infer"]["tokens"]),
        ("round-trip failures", beh["train"]["roundtrip_failures"], beh["infer"]["roundtrip_failures"]),
        ("unknown-token rate", f"{beh['train']['unk_rate']:.4%}", f"{beh['infer']['unk_rate']:.4%}"),
        ("byte-fallback rate", *(f"{beh[s]['byte_fallback_rate']:.4%}" if beh[s]["byte_fallback_rate"] is not None
                                 else "n/a" for s in ("train", "infer"))),
        ("hazards", len(result["hazards"]["train"]), len(result["hazards"]["infer"])),
    ]
    for name, a, b in rows:
        table.add_row(name, str(a), str(b))
    console.print(table)
    console.print(f"identical ids on {beh['identical']} of {beh['texts']} texts; {beh['texts_per_second']} texts/s",
                  highlight=False)
    from rich.markup import escape

    # messages quote the tokenizers' tokens ('[/INST]' is rich markup): escaped, never read as markup
    for r in result["reasons"]:
        console.print(f"[{_STYLE[r['level']]}]{r['level']}[/] {r['code']}: {escape(r['message'])}", highlight=False)
    for side in ("train", "infer"):
        for h in result["hazards"][side]:
            console.print(f"[yellow]hazard[/] ({side}) {h['code']}: {escape(h['message'])}", highlight=False)
    console.print(f"wrote {json_path}, {html_path}", highlight=False, soft_wrap=True)


@click.command("tokenizer-drift")
@click.argument("train_tokenizer", type=click.Path(path_type=Path))
@click.argument("infer_tokenizer", type=click.Path(path_type=Path))
@click.argument("more_samples", nargs=-1, metavar="")
@click.option("--out", "out", required=True, type=FOLDER,
              help=f"Folder for {FILES.record} and {FILES.page} (created if missing).")
@click.option("--sample", "samples", multiple=True,
              help="Shards (files, folders or quoted globs) whose text is compared; takes one or more values.")
@click.option("--max-texts", type=click.IntRange(min=0), default=10000, show_default=True,
              help="Sample texts read in all (split evenly over the shards, first records first); 0: every text.")
@click.option("--text-field", "text_field", multiple=True,
              help="Field(s) holding the text, repeatable or comma-separated (default: every text field, joined).")
@click.option("--examples", type=click.IntRange(min=0), default=20, show_default=True,
              help="Differing texts shown aligned in the outputs.")
@storage_option
def tokenizer_drift(train_tokenizer, infer_tokenizer, more_samples, out, samples, max_texts, text_field, examples):
    """Compare TRAIN_TOKENIZER with INFER_TOKENIZER (each a tokenizer.json, or a folder with tokenizer.json and
    its tokenizer_config.json / special_tokens_map.json): static diff, behaviour on probe and sample texts, and a
    verdict (identical / compatible / breaking; exit 1 on breaking)."""
    from rich.console import Console

    from dataaudit.errors import DataAuditError
    from dataaudit.handlers import report_unreadable
    from dataaudit.tokenization.behaviour import TextSet
    from dataaudit.tokenization.compare import compare_bundles
    from dataaudit.tokenization.loading import load_bundle
    from dataaudit.tokenization.report import has_errors, write_outputs

    if not available("tokenizers"):
        raise InputError(missing_message("tokenizers", "tokenizer-drift"))
    if more_samples and not samples:
        raise click.UsageError(f"unexpected extra argument {more_samples[0]!r} (sample shards go after --sample)")
    sample_args = list(samples) + list(more_samples)
    train = load_bundle(train_tokenizer)
    infer = load_bundle(infer_tokenizer)
    console = Console(stderr=False)
    sample = None
    unreadable: list[dict] = []
    if sample_args:
        from dataaudit.cli.paths import expand_shards
        from dataaudit.tokenization.sample import read_sample

        paths = expand_shards(sample_args)
        sample = TextSet()
        per_shard = math.ceil(max_texts / len(paths)) if max_texts else 0
        with progress_bar(console, "reading samples", "shards") as progress:
            task = progress.add_task("sample", total=len(paths), records=0)
            for done, path in enumerate(paths, 1):
                try:   # one shard at a time: a shard that breaks the reader costs its texts, not the comparison
                    read_sample([path], per_shard, text_fields(text_field), into=sample)
                except (DataAuditError, OSError):
                    raise
                except Exception as exc:   # noqa: BLE001  (the texts read before the break are kept)
                    unreadable.append({"path": path, "error": report_unreadable(exc, path)})
                progress.update(task, completed=done, records=len(sample))
        console.print(fields_line({"text": f.split(", ")} for f in sample.text_fields.values()), highlight=False)
        for u in unreadable:
            console.print(f"unreadable sample shard {u['path']}: {u['error']}", highlight=False, markup=False)
    make_out_dir(out)
    with progress_bar(console, "encoding", "texts") as progress:
        task = progress.add_task("encode", total=None, records=0)
        result = compare_bundles(train, infer, sample, examples=examples,
                                 on_chunk=lambda done: progress.update(task, records=done))
    result["unreadable_samples"] = unreadable   # sample shards that broke part way ({path, error})
    json_path, html_path = write_outputs(result, out)
    _print_summary(console, result, json_path, html_path)
    raise SystemExit(1 if has_errors(result) or unreadable else 0)
