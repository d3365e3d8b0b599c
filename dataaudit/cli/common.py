"""What every `dataaudit` command shares: the usage-error type (exit 2), the --out folder (a path or a URI), the
engine and storage options and the progress bars."""
from __future__ import annotations

import atexit
import functools
import gc
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from dataaudit.text_records import TEXT_UNITS

if TYPE_CHECKING:   # rich loads when a command prints, not for `--help`
    from rich.console import Console
    from rich.progress import Progress


class InputError(click.ClickException):
    """Usage or I/O error: printed as one line `Error: <file>: <what>`, exit code 2."""

    exit_code = 2


class MultiValueCommand(click.Command):
    """A command whose `multi_value` options take every following value up to the next option: `--against V1 V2`
    is read as `--against V1 --against V2` (click's options take one value each). Such an option given no value is
    a usage error naming it, not a confusing "missing option" about the next one."""

    def __init__(self, *args, multi_value: tuple[str, ...] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.multi_value = multi_value

    def parse_args(self, ctx, args):
        out, i = [], 0
        while i < len(args):
            a = args[i]
            if a == "--":
                out += args[i:]
                break
            if a in self.multi_value:
                i += 1
                values = []
                while i < len(args) and not args[i].startswith("-"):
                    values.append(args[i])
                    i += 1
                if not values:
                    raise click.UsageError(f"{a} needs at least one value (files, folders or quoted globs)", ctx)
                out += [x for v in values for x in (a, v)]
                continue
            out.append(a)
            i += 1
        return super().parse_args(ctx, out)


class Folder(click.ParamType):
    """A folder option that may name a URI (`s3://bucket/out/`: kept as the string, dataaudit.io opens it) or a
    local path (a Path, as click.Path gives it: click.Path would make `s3://b/o` the local `s3:/b/o`)."""

    name = "folder"

    def convert(self, value, param, ctx):
        from dataaudit.io import is_uri

        if isinstance(value, Path) or not is_uri(value):
            return click.Path(file_okay=False, path_type=Path).convert(value, param, ctx)
        return value


FOLDER = Folder()


def _storage_options(ctx, param, pairs):
    """--storage-option KEY=VALUE: checked (an unknown key is one line, exit 2), then set for every URI the
    command opens, in this process and its workers (dataaudit.io.set_storage_options)."""
    from dataaudit.io import parse_storage_options, set_storage_options

    try:
        set_storage_options(parse_storage_options(pairs))
    except ValueError as exc:
        raise InputError(f"--storage-option {exc}") from None


# The same option on every command that reads shards (added with the engine options).
storage_option = click.option(
    "--storage-option", "storage_options", multiple=True, metavar="KEY=VALUE", expose_value=False,
    callback=_storage_options,
    help="Setting of the s3:// filesystem (pyarrow.fs.S3FileSystem), repeatable: endpoint_override, region, "
         "scheme, access_key, secret_key, anonymous, retry_max_attempts, ... (default: AWS_ENDPOINT_URL and "
         "the AWS credential chain).")


def print_resumed(console: Console, report: dict, out: Path | str, parts: str | None = None) -> None:
    """Say when a rerun reused shards finished by an earlier run (their parts in OUT/parts, or OUT/`parts`)."""
    from dataaudit.io import join
    from dataaudit.outputs import PARTS

    n = report.get("run", {}).get("resumed_shards", 0)
    if n:
        console.print(f"reused {plural(n, 'finished shard')} of an earlier run ({join(out, parts or PARTS)}); "
                      "the others were read now", highlight=False, soft_wrap=True)


def print_wrote(console: Console, out: Path | str, names, first: list[str] = (), more: list[str] = ()) -> None:
    """The closing line: what a command wrote: `first` as it is, the files `names` in --out, then `more`."""
    from dataaudit.io import join

    console.print("wrote " + ", ".join([*first, *(join(out, n) for n in names if n), *more]), highlight=False,
                  soft_wrap=True)


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 shard', '3 shards' (`many`: the plural when it is not word + 's')."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def progress_bar(console: Console, verb: str, unit: str) -> Progress:
    """A transient bar `VERB [====] N/M UNIT  K records  0:00:12`; update with completed= and records=."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn(verb), BarColumn(), MofNCompleteColumn(), TextColumn(unit),
                    TextColumn("{task.fields[records]} records"), TimeElapsedColumn(),
                    console=console, transient=True)


def make_out_dir(out: Path | str, hold: Path | str | None = None) -> None:
    """Create the --out folder and hold it for this run (`dataaudit.io.lock_folder`: a second run into the same
    folder is refused, never let to delete this one's temporary files), or fail with one line naming it (exit 2).
    `hold`: the folder inside it to hold instead (an array job's slice: the other slices write into --out too)."""
    from dataaudit.io import FolderLocked, lock_folder, makedirs

    try:
        makedirs(hold or out)
    except OSError as exc:
        raise InputError(f"{out}: cannot create output folder: {exc.strerror or ' '.join(str(exc).split())}") from None
    try:
        lock_folder(hold or out)
    except FolderLocked as exc:
        raise InputError(str(exc)) from None
    except OSError as exc:
        raise InputError(f"{out}: cannot write in the output folder: {exc.strerror or exc}") from None


def make_slice_out_dir(out: Path | str, piece) -> None:
    """`make_out_dir` for an array job's slice: the other slices write into --out at the same time, so the slice
    holds only its own folder inside it (OUT/parts/slices/.IIIII-of-NNNNN); --out may be a URI."""
    from dataaudit.io import join
    from dataaudit.outputs import PARTS
    from dataaudit.pipelines.slices import SLICES

    make_out_dir(out, join(str(out), PARTS, SLICES, f".{piece.name}"))


@contextmanager
def job_progress(console: Console, total: int, stages: dict[str, tuple[str, str]]):
    """A progress bar over a job's units; yields the job's `on_progress(Progress)`. `stages`: each stage's verb and
    unit as the bar says them ({"sign": ("signing", "shards"), ...}); the first is shown before any progress."""
    verb, unit = next(iter(stages.values()))
    with progress_bar(console, verb, unit) as bar:
        task = bar.add_task(verb, total=total, records=0)

        def on_progress(p) -> None:
            verb, unit = stages.get(p.stage, (p.stage, ""))
            bar.columns[0].text_format = verb
            bar.columns[3].text_format = unit
            bar.update(task, completed=p.done, total=p.total, records=p.records)

        yield on_progress


def _ray_installed(ctx, param, value):
    """--engine ray (or --ray-address) without Ray installed: one line naming the extra, exit 2."""
    from dataaudit.extras import available, missing_message

    if value and value not in ("auto", "local") and not available("ray"):
        raise InputError(missing_message("ray", f"{param.opts[0]} {value}"))
    return value


def engine_options(ray_unit: str, in_flight: str = "shards", local_workers: bool = False):
    """--engine, --ray-address and --workers: the same three options on every command that runs a job over shards,
    handed to the command as one `options` (`dataaudit.pipelines.engine.EngineOptions`), and --storage-option
    (applied as it is parsed: nothing handed on). `ray_unit` says what one
    Ray task does, `in_flight` what --workers counts; `local_workers`: the job's local engine runs --workers shards
    at once, in this process and worker processes."""
    def wrap(command):
        @functools.wraps(command)
        def with_options(*args, engine, ray_address, workers, **kwargs):
            from dataaudit.pipelines.engine import EngineOptions   # loaded when the command runs, not for --help

            return command(*args, options=EngineOptions(engine, ray_address, workers), **kwargs)

        for option in reversed((
            storage_option,
            click.option("--engine", type=click.Choice(["auto", "local", "ray"]), default="auto", show_default=True,
                         callback=_ray_installed,
                         help=f"local: in this process; ray: {ray_unit}; auto: local for small inputs."),
            click.option("--ray-address", default=None, callback=_ray_installed,
                         help="Address of a running Ray cluster (default: start a local one)."),
            click.option("--workers", type=click.IntRange(min=1), default=None,
                         help=f"Ray engine: at most this many {in_flight} in flight (default: as many as Ray has "
                              "CPUs for)." + (" Local engine: this many shards at once, in this process and "
                                              "N-1 worker processes (default: one per core when the input holds 64 "
                                              "MiB or more in several shards, else 1)."
                                              if local_workers else "")),
        )):
            with_options = option(with_options)
        return with_options
    return wrap


def print_slice_done(console: Console, piece, manifest: dict, out: Path) -> None:
    """The line an array job's slice ends with: what it ran, and that `merge` finishes the job."""
    console.print(f"slice {piece.index} of {piece.count} ({piece.source}): {plural(manifest['shards'], 'shard')}, "
                  f"{plural(manifest['records'], 'record')} into {out}; `dataaudit merge {out}` writes the report "
                  "once every slice is done", highlight=False, soft_wrap=True, markup=False)


def slice_options(command):
    """--shard-index and --num-shards: run one slice of the job's shards as a task of an array job
    (`dataaudit.pipelines.slices`; also read from Slurm's and a Kubernetes indexed job's variables), handed to the
    command as `shard_slice` (None: the whole job); `dataaudit merge OUT` writes the report once every slice is done."""
    @functools.wraps(command)
    def with_slice(*args, shard_index, num_shards, **kwargs):
        from dataaudit.pipelines.slices import slice_from

        return command(*args, shard_slice=slice_from(shard_index, num_shards), **kwargs)

    for option in reversed((
        click.option("--shard-index", type=click.IntRange(min=0), default=None,
                     help="Array job: run slice I (0-based) of --num-shards, into --out's parts; `dataaudit merge "
                          "OUT` writes the report when every slice is done (default: SLURM_ARRAY_TASK_ID, or "
                          "JOB_COMPLETION_INDEX with --num-shards)."),
        click.option("--num-shards", type=click.IntRange(min=1), default=None,
                     help="Array job: the number of slices (default: SLURM_ARRAY_TASK_COUNT). Slices are whole "
                          "shards, balanced by size, the same in every task."),
    )):
        with_slice = option(with_slice)
    return with_slice


# --media-root: where the paths of images, videos and audio that records reference resolve (the same option on every
# command that reads media): the config's [data] media_root, else each shard's own folder.
media_root_option = click.option(
    "--media-root", "media_root", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
    help="Folder that media paths in the records (images, videos, audio, content parts) resolve from, never "
         "outside it (LLaMA-Factory's media_dir). Default: the config's [data] media_root, else each shard's folder.")


def text_records_option(default_from: str):
    """--text-records: where a record of a plain-text (.txt) shard ends, the same option on every command that
    reads shards as records; `default_from` says where the default comes from when it is not given."""
    return click.option("--text-records", "text_records", type=click.Choice(TEXT_UNITS), default=None,
                        help="Plain-text (.txt) shards: one record per line, or per paragraph (lines up to a blank "
                             f"line). Default: {default_from}.")


_FROZEN_AT_EXIT = []


def collect_less_often() -> None:
    """Called as a command starts, before its imports: they make a few hundred thousand objects (pyarrow's, and
    numba's on its first call, with scipy and numpy's submodules) and the run then makes few reference cycles, so
    the first collection threshold goes from 700 new objects to 5,000 (measured: ~0.05-0.1 s less per audit of
    200 MB). The process is the command's own: dataaudit imported as a library (the training guard) leaves the
    collector as the host program has it."""
    gc.set_threshold(5_000, 10, 10)


def freeze_imports() -> None:
    """Called by a command once its pipeline is imported. A command is a one-shot process: the objects of the
    modules it imported (numba's, pandas', pyarrow's) live until it exits, so the garbage collector need not walk
    them again in every full collection of the run (gc.freeze), nor in the interpreter's collections at exit
    (a second freeze at exit). Measured: ~0.3-0.5 s less per run. Only cyclic garbage that is alive at a freeze
    is never collected, which a process that exits right after does not notice."""
    gc.freeze()
    if not _FROZEN_AT_EXIT:
        _FROZEN_AT_EXIT.append(atexit.register(gc.freeze))

