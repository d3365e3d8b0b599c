"""What every `dataaudit` command shares: the usage-error type (exit 2) and the progress bar."""
from __future__ import annotations

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
