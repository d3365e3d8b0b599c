"""What every `dataaudit` command shares: the usage-error type (exit 2), the --out folder and the progress bars."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class InputError(click.ClickException):
    """Usage or I/O error: printed as one line `Error: <file>: <what>`, exit code 2."""

    exit_code = 2


def progress_bar(console: Console, verb: str, unit: str) -> Progress:
    """A transient bar `VERB [====] N/M UNIT  K samples  0:00:12`; update with completed= and samples=."""
    return Progress(TextColumn(verb), BarColumn(), MofNCompleteColumn(), TextColumn(unit),
                    TextColumn("{task.fields[samples]} samples"), TimeElapsedColumn(),
                    console=console, transient=True)


def make_out_dir(out: Path) -> None:
    """Create the --out folder, or fail with one line naming it (exit 2)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{out}: cannot create output folder: {exc.strerror}") from None


@contextmanager
def shard_progress(console: Console, verb: str, total: int):
    """A progress bar over `total` shards; yields `on_progress(shards_done, samples_done)` for the pipelines."""
    with progress_bar(console, verb, "shards") as progress:
        task = progress.add_task(verb, total=total, samples=0)
        yield lambda shards_done, samples_done: progress.update(task, completed=shards_done, samples=samples_done)
