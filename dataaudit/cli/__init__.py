"""The `dataaudit` command: the click group `main`, with one module per subcommand.

Exit codes (each command's module says what counts as an error): 0 no error found, 1 an error found (or a
shard that could not be read to the end), 2 usage or I/O error (one line naming the file). The group is the one
place that turns the user's errors (`dataaudit.errors.DataAuditError`) into that line and exit 2. A command's module
imports click and light helpers only: its pipeline, the readers, the checks and rich are imported inside the
command function, so `dataaudit --help` loads none of them (tests/core/test_startup_imports.py).
"""
from __future__ import annotations

import os
import signal
import threading

import click

from dataaudit.cli.audit import audit
from dataaudit.cli.build_kernels import build_kernels
from dataaudit.cli.common import InputError, collect_less_often
from dataaudit.cli.clean import clean
from dataaudit.cli.contamination import contamination
from dataaudit.cli.dedup import dedup
from dataaudit.cli.dedup_images import dedup_images
from dataaudit.cli.merge import merge
from dataaudit.cli.replay import replay
from dataaudit.cli.tokenizer_drift import tokenizer_drift
from dataaudit.errors import DataAuditError


class DataAuditGroup(click.Group):
    """Runs a command; an error of the user's input or config (DataAuditError), or a file that cannot be written
    (OSError: a full disk, no permission, also when a worker process or a Ray task met it), becomes one line naming
    it and exit 2. Ctrl-C is one line and exit 130 (128 + SIGINT, as shells report it), never a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except DataAuditError as exc:
            raise InputError(f"{exc.prefix}{exc}") from None
        except OSError as exc:
            where = exc.filename or ctx.invoked_subcommand
            raise InputError(f"{where}: {exc.strerror or exc}") from None
        except (KeyboardInterrupt, click.Abort):
            # The exit is decided: another Ctrl-C while the workers are torn down (a user pressing twice, or the
            # group's signal reaching us again) must not turn exit 130 into a death by signal.
            if threading.current_thread() is threading.main_thread():   # (signal handlers are set there only)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            _forget_interrupt()
            click.echo(f"Error: {ctx.invoked_subcommand}: interrupted", err=True)
            ctx.exit(130)


def _forget_interrupt() -> None:
    """CPython (3.11) remembers a KeyboardInterrupt that left code run from a string (the source that dataclasses
    and namedtuple generate while a module is imported: a Ctrl-C during the command's start-up) even when it was
    caught since, and `python -m` then ends the process by SIGINT instead of with its exit code. The next string
    run clears that memory: making a namedtuple class runs its generated `__new__` (stdlib source, no data)."""
    from collections import namedtuple

    namedtuple("Interrupted", ())


@click.group(cls=DataAuditGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dataaudit")
def main() -> None:
    """Find the bad data that wrecks training runs."""
    collect_less_often()
    if os.environ.get("DATAAUDIT_NUMBA_MIN_WORK"):       # a bad value is a usage error before any work
        from dataaudit.textops.hashing import numba_min_work

        try:
            numba_min_work()
        except ValueError as exc:
            raise InputError(str(exc)) from None


# The commands, one line each.
main.add_command(audit)
main.add_command(merge)
main.add_command(tokenizer_drift)
main.add_command(contamination)
main.add_command(dedup)
main.add_command(dedup_images)
main.add_command(clean)
main.add_command(replay)
main.add_command(build_kernels)
