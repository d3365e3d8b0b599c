"""`dataaudit clean`: write the shards without the records the audit (and dedup, contamination) name, each in
its own format and layout, with an account of every record dropped.

Exit codes: 0 done; 1 a shard could not be cleaned (no output for it, its error in clean.json's `failed`, the
others cleaned); 2 usage or I/O error, or a refusal (a shard changed since the audit, a shard the audit did
not read, an output that would be an input ...): one line, nothing written.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from dataaudit import audit, contamination, dedup
from dataaudit.clean import DROPPED, FILES, STATE
from dataaudit.cli.common import (FOLDER, InputError, engine_options, freeze_imports, job_progress, make_out_dir, plural,
                                  print_resumed, print_wrote)
from dataaudit.cli.paths import expand_shards

if TYPE_CHECKING:   # rich loads when a command prints, not for `--help`
    from rich.console import Console

SEVERITY_CHOICES = ["error", "warning", "info", "none"]


def _check_names(values: tuple[str, ...]) -> tuple[str, ...]:
    from dataaudit.checks import REGISTRY

    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise InputError(f"--check: unknown check {', '.join(map(repr, unknown))} (known: {', '.join(REGISTRY)})")
    return tuple(dict.fromkeys(names))


def _sidecar_line(c: dict) -> str:
    """What became of a sidecar: not copied (why), the registry entries removed, or copied."""
    if "error" in c:
        return c["error"]
    removed = list(c.get("removed", {}))
    if removed:
        shown = ", ".join(removed[:5]) + (", ..." if len(removed) > 5 else "")
        return f"{plural(len(removed), 'entry', 'entries')} removed, their file not in the output ({shown})"
    return c.get("note", "copied")


def _print_summary(console: Console, r: dict, out: Path) -> None:
    from rich.table import Table

    t = r["totals"]
    table = Table(title=f"dataaudit clean: kept {t['kept']} of {plural(t['rows'], 'record')} in "
                        f"{plural(t['shards'], 'shard')}")
    for col in ("shard", "records", "kept", "dropped", "dropped by"):
        table.add_column(col, justify="left" if col in ("shard", "dropped by") else "right")
    for s in r["shards"]:
        table.add_row(s["output"], str(s["rows"]), str(s["kept"]), str(s["dropped"]),
                      ", ".join(f"{k} {v}" for k, v in s["dropped_by"].items()))
    console.print(table)
    console.print("dropped by: " + (", ".join(f"{k} {v}" for k, v in t["dropped_by"].items()) or "nothing"),
                  highlight=False, markup=False)
    for s in r["skipped"]:
        console.print(f"skipped {s['path']}: {s['reason']}", highlight=False, markup=False)
    for s in r.get("failed", []):
        console.print(f"not cleaned {s['path']}: {s['error']}", highlight=False, markup=False)
    m = r.get("referenced", {})
    if any(m.values()):
        console.print(f"media the kept records reference: copied {m['copied']}, missing {m['missing']}, refused "
                      f"{m['refused']}", highlight=False, markup=False)
    for c in r.get("sidecars", []):
        console.print(f"{c['output']}: {_sidecar_line(c)}", highlight=False, markup=False, soft_wrap=True)
    print_resumed(console, r, out, FILES.parts)
    print_wrote(console, out, [FILES.record, DROPPED, FILES.page], first=[plural(t["shards"], "shard")])


@click.command("clean")
@click.argument("shards", nargs=-1, required=True)
@click.option("--audit", "audit_dir", required=True, type=FOLDER,
              help=f"The audit's --out folder ({audit.FILES.record}, {audit.FLAGS}) for these shards.")
@click.option("--dedup", "dedup_dirs", type=FOLDER, multiple=True,
              help=f"A `dedup` or `dedup-images` --out folder: keep only the records its {dedup.KEEP} lists "
                   "(repeatable: each applies to the shards it covers; every shard must be covered).")
@click.option("--contamination", "contamination_dir", type=FOLDER,
              default=None, help="A `contamination --decontaminate-train` --out folder: drop the training records "
                                 f"its {contamination.DECONTAMINATE} lists.")
@click.option("--out", "out", required=True, type=FOLDER,
              help="Folder for the cleaned shards (same relative names), the media their kept records reference and "
                   f"the folder's dataset_info.json and *.yaml; clean's own {FILES.record}, {DROPPED} and "
                   f"{FILES.page} go in its hidden {STATE}/ folder.")
@click.option("--severity", type=click.Choice(SEVERITY_CHOICES), default="error", show_default=True,
              help="Drop every record with a flag of this severity or worse (none: drop nothing by severity).")
@click.option("--check", "checks", multiple=True,
              help="Also drop the records flagged by these checks, whatever their severity (repeatable or "
                   "comma-separated).")
@click.option("--skip-unreadable", is_flag=True,
              help=f"Leave out (with a reason in {FILES.record}) the shards the audit could not read to the end, "
                   "instead of refusing.")
@click.option("--row-group-rows", type=click.IntRange(1), default=None,
              help="Parquet: rows per row group of the output (default: the input's).")
@click.option("--max-drop", type=click.FloatRange(0, 100), default=50.0, show_default=True,
              help="Refuse (exit 2, nothing written) when any shard would lose more than this percentage of its "
                   "records.")
@engine_options("one task per shard", "shards")
def clean(shards, audit_dir, dedup_dirs, contamination_dir, out, severity, checks, skip_unreadable, row_group_rows,
          max_drop, options):
    """Write SHARD_OR_GLOB... without the records the findings name, in their own format and layout."""
    from rich.console import Console

    from dataaudit.clean.selection import Selection

    names = _check_names(checks)
    paths = expand_shards(list(shards))
    selection = Selection(severity=None if severity == "none" else severity, checks=names,
                          dedup=bool(dedup_dirs), contamination=contamination_dir is not None)

    from dataaudit.clean.plan import plan_clean
    from dataaudit.pipelines.clean import run_clean   # imported late: keeps `--help` fast
    freeze_imports()

    job = plan_clean(paths, list(shards), out, selection, audit_dir, dedup_dirs, contamination_dir,
                     skip_unreadable=skip_unreadable, row_group_rows=row_group_rows, max_drop=max_drop / 100)
    make_out_dir(out)
    console = Console(stderr=False)
    from dataaudit.clean.plan import drop_share
    for p in job.shards.values():   # before a byte is written: what each shard will lose
        console.print(f"{p.path}: dropping {p.drop.size} of {plural(p.rows, 'record')} ({drop_share(p):.1%})",
                      highlight=False, markup=False, soft_wrap=True)
    with job_progress(console, len(job.shards), {"clean": ("cleaning", "shards")}) as on_progress:
        report = run_clean(job, out, options, on_progress)
    _print_summary(console, report, out)
    from dataaudit.clean.report import has_errors

    raise SystemExit(1 if has_errors(report) else 0)
