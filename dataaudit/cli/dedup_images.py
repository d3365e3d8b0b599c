"""`dataaudit dedup-images`: exact and perceptual-hash near-duplicate images across shards, and with `--against`
the training images that appear in a validation or benchmark set.

Exit codes: 0 done (duplicates are listed and the keep-list drops them: a warning, as in text dedup); 1 a training
image appears in the `--against` set (a leak, as in text dedup), or a shard could not be read to the end; 2 usage or
I/O error.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from dataaudit.cli.common import (FOLDER, InputError, MultiValueCommand, engine_options, freeze_imports, job_progress,
                                  make_out_dir, plural, print_resumed, print_wrote)
from dataaudit.cli.dedup import clusters_table
from dataaudit.cli.fields import fields_line, require_fields, text_fields
from dataaudit.cli.paths import expand_shards
from dataaudit.dedup import CLUSTERS, FILES, KEEP, OVERLAP
from dataaudit.extras import available, missing_message
from dataaudit.fields import FieldSpec

if TYPE_CHECKING:   # rich loads when a command prints, not for `--help`
    from rich.console import Console


def _print_summary(console: Console, r: dict, out: Path) -> None:
    console.print(clusters_table(f"dataaudit dedup-images: {plural(r['documents'], 'record')}, "
                                 f"{plural(r['images'], 'image')} in {plural(len(r['shards']), 'shard')} "
                                 f"(pHash within {r['params']['max_distance']} bits)", r, "images"))
    console.print(f"duplicate rate {100 * r['duplicate_rate']:.2f}%; kept {r['kept']} of {r['documents']}; "
                  f"records without an image {r['no_image']}; undecodable images {r['undecodable']}; "
                  f"unreadable shards {r['unreadable_shards']}", highlight=False)
    console.print(fields_line({"image": s["image_field"].split(", ") if s.get("image_field") else []}
                              for s in r["shards"]), highlight=False)
    for s in r["shards"]:
        if s["status"] != "ok":
            console.print(f"[red]unreadable[/] {s['path']}: {s['error']}", markup=True, highlight=False)
    if r.get("against"):
        a = r["against"]
        n = a["train_records_matched"]
        console.print(f"[{'red' if n else 'green'}]training records with an image in the --against set: {n}[/] "
                      f"(exact {a['exact']}, near {a['near']}, flipped {a['flipped']}; "
                      f"{plural(a['validation_images'], 'validation image')}): left out of {KEEP}",
                      markup=True, highlight=False)
    for note in r["notes"]:
        console.print(f"note: {note}", highlight=False, markup=False)
    print_resumed(console, r, out)
    print_wrote(console, out, [FILES.record, CLUSTERS, KEEP, OVERLAP if r.get("against") else None])


@click.command("dedup-images", cls=MultiValueCommand, multi_value=("--against",))
@click.argument("shards", nargs=-1, required=True)
@click.option("--out", "out", required=True, type=FOLDER,
              help=f"Folder for {FILES.record}, {CLUSTERS}, {KEEP} (+ {OVERLAP} with --against; created if "
                   "missing).")
@click.option("--against", multiple=True, metavar="VAL_SHARDS",
              help="Validation or benchmark shards (files, folders, globs; several may follow): training records "
                   "with an exact, near or horizontally flipped copy of one of their images there are reported "
                   f"in {OVERLAP} and left out of {KEEP}.")
@click.option("--max-distance", type=click.IntRange(0, 32), default=6, show_default=True,
              help="Near duplicates: perceptual hashes (64 bits) differing in at most this many bits.")
@click.option("--image-field", "image_field", multiple=True,
              help="Image field(s), repeatable or comma-separated (default: every image field of the field rule; "
                   "a record's images are compared as a set).")
@click.option("--max-image-pixels", type=click.IntRange(1), default=None,
              help="Never decode an image declaring more pixels (default: Pillow's 89,478,485).")
@engine_options("one task per shard", "shards")
def dedup_images(shards, out, against, max_distance, image_field, max_image_pixels, options):
    """Find exact and near-duplicate images in SHARD_OR_GLOB... and write a keep-list."""
    from rich.console import Console

    from dataaudit.dedup.image_hashes import ImageDedupSpec
    from dataaudit.images.batch import Limits

    if not available("PIL"):
        raise InputError(missing_message("PIL", "dedup-images"))
    paths = expand_shards(list(shards))
    val_paths = expand_shards(list(against)) if against else []
    both = set(paths) & set(val_paths)
    if both:
        raise InputError(f"{sorted(both)[0]}: given both as a training shard and in --against")
    fields = text_fields(image_field)
    limits = Limits() if max_image_pixels is None else Limits(max_pixels=max_image_pixels)
    spec = ImageDedupSpec(image_field=fields, max_distance=max_distance, limits=limits)
    require_fields(paths + val_paths, FieldSpec(image=fields), "--image-field")
    make_out_dir(out)

    from dataaudit.pipelines.image_dedup import run_image_dedup   # imported late: keeps `--help` fast
    freeze_imports()

    console = Console(stderr=False)
    with job_progress(console, len(paths) + len(val_paths), {"hash": ("hashing", "shards")}) as on_progress:
        report = run_image_dedup(paths, spec, out, options, on_progress, val_paths)
    _print_summary(console, report, out)
    leak = bool(report["against"] and report["against"]["train_records_matched"])
    raise SystemExit(1 if leak or report["unreadable_shards"] else 0)
