"""`dataaudit audit`: scan shards with the configured checks and report every bad sample.

Exit codes: 0 nothing at error severity, 1 something at error severity (or an unreadable shard),
2 usage or I/O errors (one line naming the file).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from dataaudit.audit import FILES, FLAGS
from dataaudit.cli.common import (FOLDER, InputError, media_root_option, engine_options, text_records_option,
                                  freeze_imports, job_progress, make_out_dir, plural, print_resumed, print_wrote,
                                  make_slice_out_dir, print_slice_done, slice_options)
from dataaudit.cli.paths import expand_shards
from dataaudit.cli.fields import fields_line, require_fields
from dataaudit.config import READ_MODES, load_config
from dataaudit.fields import FieldSpec

if TYPE_CHECKING:   # rich loads when a command prints, not for `--help`
    from rich.console import Console


def _print_summary(console: Console, report: dict, out: Path) -> None:
    from rich.table import Table

    from dataaudit.audit.report import not_decoded_columns

    t = report["totals"]
    title = f"dataaudit audit: {plural(t['samples'], 'sample')} in {plural(t['shards'], 'shard')}"
    # The checks that flagged something have a row; those that ran clean are one line counting them.
    flagged = {name: c for name, c in report["checks"].items() if c["flagged"]}
    clean = [name for name, c in report["checks"].items() if c["ran"] and not c["flagged"]]
    if flagged:
        table = Table(title=title)
        table.add_column("check")
        table.add_column("severity")
        table.add_column("flagged", justify="right")
        for name, c in flagged.items():
            style = {"error": "red", "warning": "yellow"}.get(c["severity"], "")
            table.add_row(name, f"[{style}]{c['severity']}[/]" if style else c["severity"], str(c["flagged"]))
        console.print(table)
    else:
        console.print(title, highlight=False, markup=False)
    if clean or not flagged:
        console.print(f"clean: {plural(len(clean), 'check')} ran with no flag" if clean else "no check ran",
                      highlight=False, markup=False)
    for reason, names in _skipped_by_reason(report["checks"]).items():
        console.print(f"not run ({reason}): {', '.join(names)}", highlight=False, soft_wrap=True, markup=False)
    skipped = not_decoded_columns(report)
    console.print(f"flagged {t['flagged']} / {t['samples']} samples; unreadable shards: {t['unreadable_shards']}"
                  + (f"; {skipped} column(s) not decoded (--read checked-columns)" if skipped else ""))
    for shard in report["shards"]:
        if shard["status"] != "ok":
            console.print(f"[red]unreadable[/] {shard['path']}: {shard['error']}", markup=True, highlight=False)
    formats = {k: v for s in report["shards"] for k, v in s["formats"].items()}
    console.print(fields_line((s["fields"] for s in report["shards"]), formats), highlight=False, soft_wrap=True,
                  markup=False)
    for note in report["notes"]:
        console.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)
    print_resumed(console, report, out)
    print_sample_and_gates(console, report)
    print_wrote(console, out, [FILES.record, FLAGS, FILES.page])


def print_sample_and_gates(console: Console, report: dict) -> None:
    """A sampled audit's rates with their 95% intervals, and each --fail-on rule with its measured rate."""
    if "sample" in report:      # (the first note says what was sampled)
        how = ", widened by the clusters' design effect" if report["sample"].get("design") == "clusters" else ""
        console.print(f"sample rates of the checks that flagged (95% Wilson interval{how}):", highlight=False,
                      markup=False)
        for name, r in report["sample"]["rates"].items():
            if r["flagged"]:
                lo, hi = r["ci95"]
                console.print(f"  {name}: {r['rate']:.4%} (95% CI {lo:.4%} .. {hi:.4%})", highlight=False,
                              markup=False)
    for g in report.get("gates", []):
        verdict = "not run (no shard had its field)" if not g["ran"] else "EXCEEDED" if g["exceeded"] else "ok"
        console.print(f"fail-on {g['rule']}: {g['flagged']} / {g['samples']} = {g['rate']:.4%} ({verdict})",
                      highlight=False, soft_wrap=True, markup=False)


def _skipped_by_reason(checks: dict) -> dict[str, list[str]]:
    """The checks that ran on no shard, grouped by the reason report.json gives for each ("no numeric field in any
    shard")."""
    grouped: dict[str, list[str]] = {}
    for name, c in checks.items():
        if not c["ran"] and not c["flagged"]:
            grouped.setdefault(c.get("skipped") or "not run", []).append(name)
    return grouped


@click.command()
@click.argument("shards", nargs=-1, required=True)
@click.option("--out", "out", required=True, type=FOLDER,
              help=f"Folder for {FILES.record}, {FLAGS} and {FILES.page} (created if missing).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="audit.toml: fields, data facts (num_classes, vocab_size, ...) and per-check settings.")
@click.option("--tokenizer", type=click.Path(path_type=Path),
              help="tokenizer.json, or a folder holding one with its tokenizer_config.json: token lengths, and its "
                   "special tokens searched for in the text (= [data] tokenizer).")
@click.option("--context-length", type=click.IntRange(min=1),
              help="Context length the lengths are compared with (= [data] context_length).")
@click.option("--strict", is_flag=True,
              help="Exit 1 when a field warning is noted: a column no check reads, a shard without text, a "
                   "configured field of the wrong type.")
@click.option("--read", "read", type=click.Choice(READ_MODES), default=None,
              help="Parquet: all-columns (the default) decodes every column of every row group, as a training loader "
                   "does (a column that cannot be decoded makes its shard unreadable, naming it); checked-columns "
                   "decodes only the columns the checks read (faster on shards with wide unchecked columns; a note "
                   "names the columns not decoded; the default of a sample, which is a first look, not an "
                   "integrity check). Other formats always read whole records.")
@click.option("--dataset-info", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="LLaMA-Factory's dataset_info.json: its formatting, ranking, columns and tags decide the "
                   "preference/KTO layout of the shards it lists (default: the one beside each shard, if any).")
@media_root_option
@click.option("--profile", "profile", default=None, metavar="NAME",
              help="A named set of check settings for a kind of data (dataaudit/profiles.py): sft (the default: "
                   "instruction and chat data) or pretrain (also the Gopher, C4 and FineWeb quality rules, "
                   "doc_length and char_class_ratio). Wins over the config's `profile`; the config's [checks.*] "
                   "tables win over it.")
@text_records_option("the config's [data] text_records, else line")
@click.option("--sample", "sample_size", type=click.IntRange(min=1), default=None, metavar="N",
              help="Audit a sample of N records spread over every shard (chosen by a hash of shard, record and "
                   "--seed: the same on every run); the report gives each check's rate with its 95% interval.")
@click.option("--sample-fraction", type=click.FloatRange(min=0, max=1, min_open=True), default=None, metavar="F",
              help="Audit a sample of this fraction of the records (as --sample; no count of the input first).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="The sample's seed (--sample, --sample-fraction).")
@click.option("--fail-on", "fail_on", multiple=True, metavar="CHECK>RATE",
              help="Exit 1 when the share of records CHECK flags is above RATE (a check or a severity: "
                   "empty_reply>0.1%, error>0, warning>5%), instead of on anything at error severity. Repeatable.")
@engine_options("one task per shard", local_workers=True)
@slice_options
def audit(shards, out, config_path, tokenizer, context_length, strict, read, dataset_info, media_root, profile,
          text_records, sample_size, sample_fraction, seed, fail_on, options, shard_slice):
    """Scan SHARD_OR_GLOB... (Parquet, WebDataset .tar/.tar.gz, JSONL, JSON, CSV/TSV, plain text, Arrow IPC) and report
    every bad sample."""
    from rich.console import Console

    given = {"tokenizer": str(tokenizer.resolve()) if tokenizer else None, "context_length": context_length,
             "dataset_info": str(dataset_info.resolve()) if dataset_info else None, "text_records": text_records,
             "media_root": str(media_root.resolve()) if media_root else None}
    paths = expand_shards(list(shards))
    from dataaudit.audit.warm import warm_up
    from dataaudit.pipelines.lanes import early_lanes

    # worker processes start now, on the cores this process's own start-up leaves idle (pipelines.lanes)
    with early_lanes(_planned_lanes(paths, options, shard_slice), warm_up):
        if dataset_info:
            from dataaudit.dataset_info import load
            load(str(dataset_info.resolve()))     # a bad registry is a usage error now, not a failed shard later
        config = load_config(config_path, {k: v for k, v in given.items() if v is not None}, profile)
        require_fields(paths, FieldSpec.from_config(config.fields, config.data), f"{config.source}: [fields]")
        gates = parse_gates(fail_on)
        if sample_size is not None and sample_fraction is not None:
            raise InputError("--sample and --sample-fraction: give one of them")
        if shard_slice is not None:
            make_slice_out_dir(out, shard_slice)
        else:
            make_out_dir(out)

        from dataaudit.pipelines.audit import run_audit   # imported late: keeps `--help` fast
        freeze_imports()
        if sample_size is not None or sample_fraction is not None:
            from dataclasses import replace

            from dataaudit.audit.sample import plan_sample
            config = replace(config, sample=plan_sample(paths, seed, sample_size, sample_fraction,
                                                        config.data.get("text_records", "line")))
            # a sample decodes only the columns its checks read unless --read all-columns asks for the integrity read
            read = read or READ_MODES[1]

        console = Console(stderr=False)
        with job_progress(console, len(paths), {"audit": ("auditing", "shards")}) as on_progress:
            report = run_audit(paths, config, out, options, on_progress, read=read, shard_slice=shard_slice,
                               gates=gates)
        if shard_slice is not None:     # the merge reports and decides the exit code (its own --strict, --fail-on)
            print_slice_done(console, shard_slice, report, out)
            raise SystemExit(0)
    _print_summary(console, report, out)
    raise SystemExit(exit_code(report, strict))


def _planned_lanes(paths, options, shard_slice) -> int:
    """The lanes to start workers for as the command starts (objects in a store too, sized in parallel, a request
    each: 2 Parquet objects of 31 MB on the test server, the default audit took 1.98 s with its worker started when
    the job reached its shards, 1.68 s started here; medians of 5)."""
    from dataaudit.audit.pieces import likely_units
    from dataaudit.pipelines.engine import MIN_PIECE_BYTES, planned_lanes, shard_sizes

    if shard_slice is not None:   # an array task runs its slice only
        from dataaudit.pipelines.slices import assign

        paths = [p for p, s in zip(paths, assign(paths, shard_slice.count)) if s == shard_slice.index]
    sizes = shard_sizes(paths)
    return planned_lanes(paths, options, likely_units(paths, sizes, MIN_PIECE_BYTES), sizes)


def parse_gates(rules) -> list:
    """The --fail-on rules, or exit 2 naming the first bad one."""
    from dataaudit.audit.gates import GateError, parse_gate

    try:
        return [parse_gate(r) for r in rules]
    except GateError as exc:
        raise InputError(str(exc)) from None


def exit_code(report: dict, strict: bool) -> int:
    """1: the --fail-on rules say so (when given), else anything at error severity or an unreadable shard; with
    --strict also a field warning. 0 otherwise."""
    from dataaudit.audit.gates import gates_failed
    from dataaudit.audit.report import has_errors

    failed = gates_failed(report, strict) if "gates" in report else has_errors(report)
    return 1 if failed or (strict and report["totals"]["field_warnings"]) else 0

