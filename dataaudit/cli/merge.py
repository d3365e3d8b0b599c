"""`dataaudit merge OUT`: the result of an array job (`audit` or `dedup` with `--shard-index I --num-shards N --out
OUT`) once every slice has finished: the outputs one job on the same input writes (but their `run` section).
  audit  report.json, flags.parquet and report.html from the slices' parts;
  dedup  the bands, partitions, clusters and outputs (dedup.json, clusters, keep list, overlap, page) from the
         slices' signatures, on this machine's cores.

Exit codes: those of the job (audit: 0, 1 as its rules or --fail-on say; dedup: 1 for a validation sample copied in
train or an unreadable shard), 2 when a slice has not finished (naming its shards), a part is missing, or the slices
were run with other settings or on other shards.
"""
from __future__ import annotations

import click

from dataaudit.cli.common import FOLDER, InputError, freeze_imports, make_out_dir


@click.command()
@click.argument("out", type=FOLDER)
@click.option("--strict", is_flag=True, help="As audit's --strict: exit 1 on a field warning too (audit slices).")
@click.option("--fail-on", "fail_on", multiple=True, metavar="CHECK>RATE",
              help="As audit's --fail-on: exit 1 when the share of records CHECK flags is above RATE (audit "
                   "slices).")
def merge(out, strict, fail_on):
    """Write the report of the array job whose slices ran into OUT."""
    from rich.console import Console

    from dataaudit.cli.audit import parse_gates

    from dataaudit.io import is_dir, is_uri, join

    gates = parse_gates(fail_on)
    if not is_uri(out) and not is_dir(out):     # a local folder that is not there: nothing to merge
        raise InputError(f"{out}: no such folder")
    make_out_dir(out)     # held: no second merge or single run into it meanwhile

    from dataaudit.outputs import PARTS
    from dataaudit.pipelines.slices import read_manifests
    freeze_imports()

    console = Console(stderr=False)
    if read_manifests(join(str(out), PARTS)).get("command") == "dedup":
        if strict or fail_on:
            raise InputError(f"{out}: the slices are a dedup's: --strict and --fail-on apply to an audit's")
        from dataaudit.cli.dedup import _print_summary, exit_code
        from dataaudit.pipelines.dedup import merge_dedup

        report = merge_dedup(out)
        _print_summary(console, report, out)
        raise SystemExit(exit_code(report))
    from dataaudit.cli.audit import _print_summary, exit_code
    from dataaudit.pipelines.audit import merge_audit

    report = merge_audit(out, gates)
    _print_summary(console, report, out)
    raise SystemExit(exit_code(report, strict))
