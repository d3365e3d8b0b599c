"""`dataaudit merge OUT`: the report of an array job (`audit --shard-index I --num-shards N --out OUT`) once every
slice has finished: the report.json (but its `run`), flags.parquet and report.html one job on the same input writes.

Exit codes: those of `audit` (0, 1 as its rules or --fail-on say), 2 when a slice has not finished (naming its
shards), a part is missing, or the slices were run with other settings or on other shards.
"""
from __future__ import annotations

from pathlib import Path

import click

from dataaudit.cli.audit import _print_summary, exit_code, parse_gates
from dataaudit.cli.common import freeze_imports, make_out_dir


@click.command()
@click.argument("out", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--strict", is_flag=True, help="As audit's --strict: exit 1 on a field warning too.")
@click.option("--fail-on", "fail_on", multiple=True, metavar="CHECK>RATE",
              help="As audit's --fail-on: exit 1 when the share of records CHECK flags is above RATE.")
def merge(out, strict, fail_on):
    """Write the report of the array job whose slices ran into OUT."""
    from rich.console import Console

    gates = parse_gates(fail_on)
    make_out_dir(out)     # held: no second merge or single run into it meanwhile

    from dataaudit.pipelines.audit import merge_audit
    freeze_imports()

    console = Console(stderr=False)
    report = merge_audit(out, gates)
    _print_summary(console, report, out)
    raise SystemExit(exit_code(report, strict))
