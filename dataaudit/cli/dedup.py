"""`dataaudit dedup`: exact and MinHash near-duplicates in train shards, and train/validation overlap.

Exit codes: 0 done (duplicates inside the training set are a warning: they are listed, and the keep-list
drops them); 1 a validation sample has an exact or near copy in train (`--against`; a leak that makes the
validation loss too good: error severity) or a shard could not be read to the end; 2 usage or I/O error.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from dataaudit.cli.common import (FOLDER, InputError, MultiValueCommand, engine_options, freeze_imports,
                                  job_progress, make_out_dir, make_slice_out_dir, plural, print_resumed,
                                  print_slice_done, print_wrote, slice_options, text_records_option)
from dataaudit.cli.fields import fields_line, require_fields, text_fields
from dataaudit.cli.paths import expand_shards
from dataaudit.dedup import CLUSTERS, FILES, KEEP, OVERLAP
from dataaudit.fields import FieldSpec

if TYPE_CHECKING:   # rich loads when a command prints, not for `--help`
    from rich.console import Console
    from rich.table import Table

_STAGES = {"sign": ("signing", "shards"), "map": ("banding", "shards"), "reduce": ("clustering", "partitions")}


def clusters_table(title: str, r: dict, unit: str = "documents") -> Table:
    """The summary table of a dedup report (text or images): exact groups, near clusters, all clusters."""
    from rich.table import Table

    table = Table(title=title)
    table.add_column("")
    table.add_column("groups", justify="right")
    table.add_column(unit, justify="right")
    table.add_column("removable", justify="right")
    table.add_row("exact duplicates", str(r["exact"]["groups"]), str(r["exact"]["documents"]),
                  str(r["exact"]["duplicates"]))
    table.add_row("near duplicates", str(r["near"]["clusters"]), str(r["near"]["documents"]),
                  str(r["near"]["duplicates"]))
    table.add_row("all clusters", str(r["clusters"]["count"]), str(r["clusters"]["documents"]),
                  f"[yellow]{r['duplicates']}[/]" if r["duplicates"] else "0")
    return table


def _print_summary(console: Console, r: dict, out: Path) -> None:
    p = r["params"]
    console.print(clusters_table(f"dataaudit dedup: {plural(r['documents'], 'document')} in "
                                 f"{plural(len(r['shards']), 'shard')} "
                                 f"({p['shingles']} {p['ngram']}-grams, threshold {p['threshold']}, "
                                 f"{p['bands']}x{p['rows']} bands)", r))
    console.print(f"duplicate rate {100 * r['duplicate_rate']:.2f}%; kept {r['kept']} of {r['documents']}; "
                  f"empty documents (not clustered) {r['empty_documents']}; "
                  f"unreadable shards {r['unreadable_shards']}", highlight=False)
    if r["against"]:
        a = r["against"]
        style = "red" if a["overlapping"] else "green"
        console.print(f"[{style}]validation samples with a copy in train: {a['overlapping']} / "
                      f"{a['validation_samples']}[/] ({a['exact']} exact, {a['near']} near)", highlight=False)
    console.print(fields_line({"text": s["text_field"].split(", ") if s.get("text_field") else []}
                              for s in r["shards"] + r["validation_shards"]), highlight=False)
    for s in r["shards"] + r["validation_shards"]:
        if s["status"] != "ok":
            console.print(f"[red]unreadable[/] {s['path']}: {s['error']}", markup=True, highlight=False)
    print_resumed(console, r, out)
    print_wrote(console, out, [FILES.record, CLUSTERS, KEEP, FILES.page, OVERLAP if r["against"] else None])


@click.command(cls=MultiValueCommand, multi_value=("--against",))
@click.argument("shards", nargs=-1, required=True)
@click.option("--out", "out", required=True, type=FOLDER,
              help=f"Folder for {FILES.record}, {CLUSTERS}, {KEEP}, {FILES.page} (created if missing).")
@click.option("--against", multiple=True, metavar="VAL_SHARDS",
              help="Validation shards (files, folders, globs; several may follow) to check for copies in train.")
@click.option("--threshold", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True), default=0.8,
              show_default=True, help="Jaccard similarity of near duplicates (sets LSH bands and rows).")
@click.option("--num-perm", type=click.IntRange(1, 1024), default=128, show_default=True,
              help="MinHash permutations.")
@click.option("--ngram", type=click.IntRange(1, 1000), default=5, show_default=True,
              help="Shingle size: words (or characters with --char-shingles).")
@click.option("--char-shingles", is_flag=True, help="Character n-grams instead of word n-grams.")
@click.option("--seed", type=int, default=1, show_default=True, help="Permutation seed (datasketch's).")
@click.option("--verify/--no-verify", default=False, show_default=True,
              help="Check candidate pairs by the exact Jaccard of their shingle sets before clustering.")
@click.option("--estimate/--no-estimate", default=False, show_default=True,
              help="Keep a candidate pair only when its signatures agree on >= threshold of their values "
                   "(estimated Jaccard), with LSH bands chosen for recall (16x8 at 0.8): fewer missed and "
                   "fewer false duplicates, for a slower LSH stage. With --verify: the same bands, candidates "
                   "checked by exact Jaccard.")
@click.option("--nfc/--no-nfc", default=True, show_default=True, help="Unicode NFC normalization.")
@click.option("--lowercase/--no-lowercase", default=True, show_default=True, help="Lowercase.")
@click.option("--strip-punct/--keep-punct", default=False, show_default=True, help="Remove punctuation.")
@click.option("--collapse-ws/--keep-ws", default=True, show_default=True,
              help="Collapse whitespace runs to one space and trim.")
@click.option("--text-field", "text_field", multiple=True,
              help="Field(s) holding the text, repeatable or comma-separated; nested paths and conversations "
                   "allowed (default: every text field; a record's texts and turns are joined).")
@click.option("--with-images", is_flag=True,
              help="A record's identity is its text plus its images (the bytes of each, in order): records with "
                   "the same text and different images are not duplicates.")
@text_records_option("line")
@engine_options("one task per shard and per partition", "shards (or partitions)")
@click.option("--partitions", default="auto", show_default=True,
              help="Band-hash partitions (reduce units); auto: about 64 MB of entries each.")
@slice_options
def dedup(shards, out, against, threshold, num_perm, ngram, char_shingles, seed, verify, estimate, nfc,
          lowercase, strip_punct, collapse_ws, text_field, with_images, text_records, options, partitions,
          shard_slice):
    """Find exact and near-duplicate documents in SHARD_OR_GLOB... (and validation samples copied in train)."""
    from rich.console import Console

    from dataaudit.dedup.config import DedupSpec

    paths = expand_shards(list(shards))
    val_paths = expand_shards(list(against)) if against else []
    both = set(paths) & set(val_paths)
    if both:
        raise InputError(f"{sorted(both)[0]}: given both as a training shard and in --against")
    if partitions != "auto":
        try:
            partitions = int(partitions)
            if partitions < 1:
                raise ValueError
        except ValueError:
            raise InputError(f"--partitions: expected 'auto' or a positive integer, got {partitions!r}") from None
    text_field = text_fields(text_field)
    spec = DedupSpec(text_field=text_field, nfc=nfc, lowercase=lowercase, strip_punct=strip_punct,
                     collapse_ws=collapse_ws, shingles="char" if char_shingles else "word", ngram=ngram,
                     num_perm=num_perm, seed=seed, threshold=threshold, verify=verify,
                     estimate=estimate, text_unit=text_records or "line", with_images=with_images)
    require_fields(paths + val_paths, FieldSpec(text=text_field), "--text-field")
    if shard_slice is not None:
        make_slice_out_dir(out, shard_slice)
    else:
        make_out_dir(out)

    from dataaudit.pipelines.dedup import run_dedup   # imported late: keeps `--help` fast

    freeze_imports()

    console = Console(stderr=False)
    with job_progress(console, len(paths) + len(val_paths), _STAGES) as on_progress:
        report = run_dedup(paths, spec, out, val_paths, options, on_progress, partitions=partitions,
                           shard_slice=shard_slice)
    if shard_slice is not None:     # the merge clusters, reports and decides the exit code
        print_slice_done(console, shard_slice, report, out)
        raise SystemExit(0)
    _print_summary(console, report, out)
    raise SystemExit(exit_code(report))


def exit_code(report: dict) -> int:
    """1: a validation sample has a copy in train, or a shard could not be read to the end; else 0."""
    leak = bool(report["against"] and report["against"]["overlapping"])
    return 1 if leak or report["unreadable_shards"] else 0
