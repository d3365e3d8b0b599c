"""The one door for files: every shard, referenced file and output is opened, listed, measured and committed here.

A location is a local path or a URI: `s3://` (one S3FileSystem per bucket and settings: the endpoint from
AWS_ENDPOINT_URL[_S3], `--storage-option`s, bounded retries), `gs://` (one GcsFileSystem: Google's credential chain,
STORAGE_EMULATOR_HOST, bounded retries), `abfs://` (one AzureFileSystem per account: AZURE_STORAGE_CONNECTION_STRING
or an account key, else Azure's credential chain), `hdfs://`, `file://` (pyarrow.fs's own), and any other protocol
through fsspec (`hf://`, `az://`, `memory://`), wrapped as a pyarrow filesystem.
Local paths use Python's own file objects and `os`, exactly as a program that knows only local files would (the
errors a user sees name the file the way the operating system does); a URI goes through its filesystem, and the
same calls work on it (prefixes walked and globbed like folders). What opens, lists or writes a shard, a
referenced file or an output anywhere in dataaudit calls one of these functions (tests/core/test_layout.py names
the few local-only files that do not: the cache folder, tokenizer files), so a new kind of storage is one more
branch here.

Outputs are committed atomically: written to a temporary file beside the final name and renamed into place
(locally), or uploaded whole once complete (an object store makes an object visible only when its upload ends).
A reader never sees half a file, even when the job is killed mid-write; `remove_stale_temps` clears what a killed
run left. Nothing heavy is imported here (it loads with `dataaudit --help`): pyarrow.fs loads on the first URI,
shutil and tempfile on the first copy or upload, fsspec on the first URI of a protocol pyarrow.fs lacks.
"""
from __future__ import annotations

import errno
import io
import json
import os
import stat as st_mode
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator, NamedTuple

_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
TEMP_SUFFIX = ".tmp"          # temporary outputs are `.<name>.<random>.tmp` beside their final name
COPY_CHUNK = 1 << 20
# A URI is read this much at a time: each chunk is one ranged GET on an object store, whose per-request cost
# (latency; on moto, a copy of the whole object) dwarfs a local read's. 16 MiB: 64 requests per GB, memory flat (a
# streaming reader holds two: the next one is fetched while it reads, `dataaudit.readahead`).
REMOTE_BUFFER = 16 << 20
OBJECT_STORES = ("s3", "gcs", "abfs")   # pyarrow filesystems whose objects appear whole when their upload ends


class FileStat(NamedTuple):
    size: int
    mtime_ns: int


# What a path that is not a regular file is, by its stat mode (a FIFO would block the reader forever, a device
# never ends): only regular files are opened, and this names the others.
_NOT_REGULAR = ((st_mode.S_ISFIFO, "a named pipe (FIFO)"), (st_mode.S_ISCHR, "a character device"),
                (st_mode.S_ISBLK, "a block device"), (st_mode.S_ISSOCK, "a socket"))


class NotRegularFileError(OSError):
    """A local path that names a FIFO, a device or a socket (or a link to one): never opened."""


def not_regular(mode: int) -> str | None:
    """What a stat mode is when it is neither a regular file nor a folder ("a named pipe (FIFO)"), else None."""
    return next((what for test, what in _NOT_REGULAR if test(mode)), None)


def _refuse(path: str, mode: int) -> None:
    """Raise unless `mode` is a regular file's (a folder raises IsADirectoryError, as open() would)."""
    if st_mode.S_ISREG(mode):
        return
    if st_mode.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
    raise NotRegularFileError(errno.EINVAL, f"not a regular file ({not_regular(mode) or 'not a file'})", path)


def _open_regular(path: str) -> int:
    """A read-only descriptor of a local regular file. Checked before the open (a device's open may act), and on
    the open descriptor (the path may have been swapped in between); O_NONBLOCK makes opening a FIFO return at
    once instead of waiting for a writer (on a regular file the flag does nothing)."""
    _refuse(path, os.stat(path).st_mode)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        _refuse(path, os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def is_uri(location: str | os.PathLike) -> bool:
    """Whether `location` is a URI (scheme://...) rather than a local path."""
    if not isinstance(location, str):
        return False
    scheme, sep, _ = location.partition("://")
    return bool(sep) and scheme[:1].isalpha() and scheme.isascii() and set(scheme) <= _SCHEME_CHARS


# pyarrow.fs's own schemes (native clients: range reads, pre-buffering, retries); any other goes through fsspec.
_ARROW_SCHEMES = frozenset({"s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss", "file"})
STORAGE_ENV = "DATAAUDIT_STORAGE_OPTIONS"   # --storage-option as JSON: worker processes (spawned, Ray) inherit it


def _flag(text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


# --storage-option keys: pyarrow.fs.S3FileSystem's settings that a string can give, each with its parser;
# `retry_max_attempts` sets its retry strategy (AwsStandardS3RetryStrategy: jittered back-off per request).
S3_OPTIONS = {"endpoint_override": str, "region": str, "scheme": str, "access_key": str, "secret_key": str,
              "session_token": str, "anonymous": _flag, "role_arn": str, "session_name": str, "external_id": str,
              "request_timeout": float, "connect_timeout": float, "force_virtual_addressing": _flag,
              "allow_delayed_open": _flag, "background_writes": _flag, "tls_ca_file_path": str,
              "proxy_options": str, "retry_max_attempts": int}
DEFAULT_RETRY_ATTEMPTS = 3    # pyarrow's own default: a stopped server fails a request in well under a second


def parse_storage_options(pairs) -> dict[str, str]:
    """--storage-option KEY=VALUE pairs as {key: value}, each value checked by its key's parser; ValueError (one
    line) for a pair without '=', an unknown key or a value its key cannot take."""
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"{pair!r}: expected KEY=VALUE")
        if key not in S3_OPTIONS:
            raise ValueError(f"{key!r}: unknown key (known: {', '.join(sorted(S3_OPTIONS))})")
        try:
            S3_OPTIONS[key](value)
        except ValueError as exc:
            raise ValueError(f"{key}={value}: {exc}") from None
        options[key] = value
    return options


def set_storage_options(options: dict[str, str]) -> None:
    """The settings every URI of this run opens with (and its worker processes': kept in the environment)."""
    if options:
        os.environ[STORAGE_ENV] = json.dumps(options, sort_keys=True)
    else:
        os.environ.pop(STORAGE_ENV, None)


def _endpoint(url: str) -> dict:
    """AWS_ENDPOINT_URL's "http://host:port" as S3FileSystem's (endpoint_override, scheme)."""
    scheme, sep, rest = url.partition("://")
    return {"endpoint_override": rest.rstrip("/"), "scheme": scheme} if sep else {"endpoint_override": url}


# The environment an S3 client is built from: a change (another endpoint, other credentials) builds another.
_S3_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID",
           "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")


def _s3(bucket: str, options: dict[str, str]):
    """An S3FileSystem: the endpoint from --storage-option endpoint_override, else AWS_ENDPOINT_URL_S3, else
    AWS_ENDPOINT_URL (set here, not left to the SDK: older ones ignore it, and pyarrow's from_uri then also asks
    the endpoint for the bucket's region on every call); the region from the options or AWS_REGION /
    AWS_DEFAULT_REGION, else the bucket's own (asked once, as from_uri does) when the endpoint is AWS's;
    credentials from the SDK's standard chain unless given."""
    import pyarrow.fs as pafs

    kwargs = {}
    url = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if url and "endpoint_override" not in options:
        kwargs.update(_endpoint(url))
    for key, value in options.items():
        if key == "endpoint_override":
            kwargs.update(_endpoint(value))
        elif key != "retry_max_attempts":
            kwargs[key] = S3_OPTIONS[key](value)
    kwargs.setdefault("region", os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"))
    if not kwargs["region"] and "endpoint_override" not in kwargs and bucket:
        try:
            kwargs["region"] = pafs.resolve_s3_region(bucket)
        except OSError:
            pass     # the SDK's default; the first request says what is wrong
    attempts = int(options.get("retry_max_attempts", DEFAULT_RETRY_ATTEMPTS))
    return pafs.S3FileSystem(**{k: v for k, v in kwargs.items() if v is not None},
                             retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=attempts))


_FILESYSTEMS: dict[tuple, object] = {}


def _s3_filesystem(bucket: str):
    """The S3 filesystem for `bucket`, made once per process for the same options and environment."""
    options = json.loads(os.environ.get(STORAGE_ENV) or "{}")
    key = ("s3", bucket, json.dumps(options, sort_keys=True), tuple(os.environ.get(v) for v in _S3_ENV))
    fs = _FILESYSTEMS.get(key)
    if fs is None:
        fs = _FILESYSTEMS[key] = _s3(bucket, options)
    return fs


# How long pyarrow's GCS client retries a failing request (jittered exponential back-off) before the error is
# reported: its own default is 15 minutes, which turns a stopped server or a missing credential into a hang.
GCS_RETRY_SECONDS = 20.0


def _gcs_filesystem():
    """The GCS filesystem, made once per process for the same environment: credentials from Google's standard chain
    (GOOGLE_APPLICATION_CREDENTIALS, gcloud's application default, the instance's service account); with
    STORAGE_EMULATOR_HOST (the variable Google's clients and gcsfs read: "http://host:port"), that server,
    anonymously."""
    from datetime import timedelta

    emulator = os.environ.get("STORAGE_EMULATOR_HOST", "").strip()
    key = ("gcs", emulator)
    fs = _FILESYSTEMS.get(key)
    if fs is None:
        import pyarrow.fs as pafs

        kwargs = {"anonymous": True, **_endpoint(emulator if "://" in emulator else f"http://{emulator}")} \
            if emulator else {}
        fs = _FILESYSTEMS[key] = pafs.GcsFileSystem(retry_time_limit=timedelta(seconds=GCS_RETRY_SECONDS), **kwargs)
    return fs


# Azurite's well-known development account (UseDevelopmentStorage=true), as Azure's SDKs define it
_AZURITE = {"AccountName": "devstoreaccount1", "DefaultEndpointsProtocol": "http",
            "AccountKey": "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
            "BlobEndpoint": "http://127.0.0.1:10000/devstoreaccount1"}


def _azure_settings() -> dict:
    """AZURE_STORAGE_CONNECTION_STRING's fields (the Azure SDKs' and adlfs's variable; UseDevelopmentStorage=true:
    Azurite's account), else AZURE_STORAGE_ACCOUNT_NAME / AZURE_STORAGE_ACCOUNT_KEY."""
    text = os.environ.get("AZURE_STORAGE_CONNECTION_STRING", "").strip()
    if text:
        fields = dict(part.split("=", 1) for part in text.split(";") if "=" in part)
        return {**_AZURITE, **fields} if fields.get("UseDevelopmentStorage", "").lower() == "true" else fields
    return {k: v for k, v in (("AccountName", os.environ.get("AZURE_STORAGE_ACCOUNT_NAME")),
                              ("AccountKey", os.environ.get("AZURE_STORAGE_ACCOUNT_KEY"))) if v}


def _azure_location(rest: str, settings: dict) -> tuple[str, str]:
    """(account, "container/path") of an abfs:// URI's part after the scheme: `container@account.dfs.core.windows.net/
    path`, `account.dfs.core.windows.net/container/path`, or `container/path` with the account from the settings."""
    host, _, path = rest.partition("/")
    if "@" in host:
        container, _, account_host = host.partition("@")
        return account_host.split(".")[0], f"{container}/{path}" if path else container
    if host.endswith(".core.windows.net"):
        return host.split(".")[0], path
    if not settings.get("AccountName"):
        raise ValueError("no storage account: name it (abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/...) or set "
                         "AZURE_STORAGE_ACCOUNT_NAME or AZURE_STORAGE_CONNECTION_STRING")
    return settings["AccountName"], rest


def _azure_filesystem(rest: str):
    """(AzureFileSystem, path) for an abfs:// URI: the account key from the settings (`_azure_settings`), else
    Azure's default credential chain (environment, managed identity, Azure CLI); a BlobEndpoint / DfsEndpoint that is
    not Azure's own (an emulator such as Azurite) as the service's address. One filesystem per account and
    settings in a process."""
    settings = _azure_settings()
    account, path = _azure_location(rest, settings)
    key = ("azure", account, json.dumps(settings, sort_keys=True))
    fs = _FILESYSTEMS.get(key)
    if fs is None:
        import pyarrow.fs as pafs

        kwargs = {"account_name": account}
        if settings.get("AccountKey"):
            kwargs["account_key"] = settings["AccountKey"]
        for service in ("blob", "dfs"):
            url = settings.get(f"{service.capitalize()}Endpoint") or settings.get("BlobEndpoint", "")
            scheme, sep, where = url.partition("://")
            authority = where.split("/")[0]
            if sep and not authority.endswith(".core.windows.net"):
                kwargs[f"{service}_storage_authority"] = authority
                kwargs[f"{service}_storage_scheme"] = scheme
        fs = _FILESYSTEMS[key] = pafs.AzureFileSystem(**kwargs)
    return fs, path


def _fsspec(location: str):
    """(pyarrow filesystem, path) of a URI whose scheme pyarrow.fs does not know (hf://, memory://, az://, ...):
    fsspec's filesystem for it, behind pyarrow's FSSpecHandler so that every call here works on it alike."""
    try:
        import fsspec
    except ImportError:
        from dataaudit.errors import DataAuditError

        raise DataAuditError(f"{location}: this kind of location needs fsspec: pip install 'dataaudit[hf]' "
                             "(or the fsspec package of its protocol)") from None
    import pyarrow.fs as pafs

    fs, path = fsspec.core.url_to_fs(location)
    key = ("fsspec", location.partition("://")[0], id(fs))
    wrapped = _FILESYSTEMS.get(key)
    if wrapped is None:
        wrapped = _FILESYSTEMS[key] = pafs.PyFileSystem(pafs.FSSpecHandler(fs))
    return wrapped, path


def _remote(location: str):
    """(pyarrow filesystem, path inside it) of a URI; a scheme nobody knows, or a malformed URI, is the user's
    error. A folder's trailing '/' is dropped (`s3://bucket/prefix/` is the prefix)."""
    from dataaudit.errors import DataAuditError

    scheme, _, rest = location.partition("://")
    scheme = scheme.lower()
    try:
        if scheme not in _ARROW_SCHEMES:
            fs, path = _fsspec(location)
        elif scheme == "s3":
            bucket, _, key = rest.partition("/")
            if not bucket:
                raise ValueError("no bucket named")
            fs, path = _s3_filesystem(bucket), f"{bucket}/{key}" if key else bucket
        elif scheme in ("gs", "gcs"):
            bucket, _, key = rest.partition("/")
            if not bucket:
                raise ValueError("no bucket named")
            fs, path = _gcs_filesystem(), f"{bucket}/{key}" if key else bucket
        elif scheme in ("abfs", "abfss"):
            fs, path = _azure_filesystem(rest)
        else:                # hdfs://, file://: pyarrow's own, from their providers' settings
            import pyarrow.fs as pafs

            fs, path = pafs.FileSystem.from_uri(location)
    except (ValueError, ImportError) as exc:   # pyarrow.lib.ArrowInvalid is a ValueError
        raise DataAuditError(f"{location}: cannot open this location: {' '.join(str(exc).split())}") from None
    except OSError as exc:
        raise DataAuditError(f"{location}: cannot open this location: {' '.join(str(exc).split())}") from None
    return fs, path.rstrip("/") if len(path) > 1 else path


def arrow_filesystem(location: str | os.PathLike):
    """(pyarrow filesystem, path) for pyarrow APIs that need both (datasets, fragments): local paths made
    absolute on the local filesystem."""
    if is_uri(location):
        return _remote(location)
    import pyarrow.fs as pafs

    return pafs.LocalFileSystem(), os.path.abspath(os.fspath(location))


def arrow_source(location: str | os.PathLike):
    """(filesystem or None, path) for pyarrow functions taking `(path, filesystem=...)`: a local path is passed as
    given (pyarrow's messages then name it as the user wrote it). pyarrow opens it by name, so a local path is
    checked to be a regular file first (NotRegularFileError: a FIFO would block pyarrow's open)."""
    if is_uri(location):
        return _remote(location)
    path = os.fspath(location)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None, path          # nothing there: pyarrow's own message names it
    if not st_mode.S_ISDIR(mode):
        _refuse(path, mode)
    return None, path


def open_input(location: str | os.PathLike, buffering: int = -1) -> IO[bytes]:
    """A buffered, seekable binary file to read (`peek` works on it). OSError when it cannot be opened;
    NotRegularFileError for a FIFO, a device or a socket, never opened for reading."""
    if is_uri(location):
        from dataaudit.readahead import ReadAhead

        fs, path = _remote(location)
        return io.BufferedReader(ReadAhead(fs.open_input_file(path), REMOTE_BUFFER),
                                 buffer_size=max(buffering, COPY_CHUNK))
    return open(os.fspath(location), "rb", buffering=buffering, opener=lambda path, _flags: _open_regular(path))


def open_arrow(location: str | os.PathLike):
    """A pyarrow random-access file to read Arrow IPC or Parquet from: memory-mapped when local (only the pages
    read are loaded), the filesystem's file otherwise."""
    import pyarrow as pa

    if is_uri(location):
        fs, path = _remote(location)
        return fs.open_input_file(path)
    path = os.fspath(location)
    _refuse(path, os.stat(path).st_mode)     # pyarrow opens it by name: a FIFO would block its open
    return pa.memory_map(path)


def read_parquet(location: str | os.PathLike, columns: list[str] | None = None, schema=None):
    """A Parquet file (one of a job's own tables or parts) as an Arrow table, memory-mapped when local."""
    import pyarrow.parquet as pq

    fs, path = arrow_source(location)
    if fs is None and schema is None:     # one local file: its reader, without pyarrow.dataset (~0.3 s to import)
        with pq.ParquetFile(path, memory_map=True) as f:
            return f.read(columns=columns)
    return pq.read_table(path, columns=columns, schema=schema, memory_map=fs is None, filesystem=fs)


def read_bytes(location: str | os.PathLike, limit: int | None = None) -> bytes:
    """The file's bytes (at most `limit` + 1 when `limit` is given, so a caller can tell "too large")."""
    with open_input(location) as f:
        return f.read() if limit is None else f.read(limit + 1)


def read_text(location: str | os.PathLike) -> str:
    """The file as UTF-8 text (UnicodeDecodeError when it is not)."""
    return read_bytes(location).decode("utf-8")


def stat(location: str | os.PathLike) -> FileStat:
    """Size and modification time of a file (FileNotFoundError when there is none)."""
    if is_uri(location):
        import pyarrow.fs as pafs

        fs, path = _remote(location)
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(2, "No such file or directory", location)
        return FileStat(int(info.size or 0), int(info.mtime_ns or 0))
    st = os.stat(os.fspath(location))
    return FileStat(st.st_size, st.st_mtime_ns)


def _kind(location: str | os.PathLike) -> str | None:
    """"file", "dir" or None (nothing there)."""
    if is_uri(location):
        import pyarrow.fs as pafs

        fs, path = _remote(location)
        kind = fs.get_file_info(path).type
        return {pafs.FileType.File: "file", pafs.FileType.Directory: "dir"}.get(kind)
    p = os.fspath(location)
    return "file" if os.path.isfile(p) else "dir" if os.path.isdir(p) else None


def is_file(location: str | os.PathLike) -> bool:
    return _kind(location) == "file"


def is_dir(location: str | os.PathLike) -> bool:
    return _kind(location) == "dir"


def exists(location: str | os.PathLike) -> bool:
    return _kind(location) is not None


def special(location: str | os.PathLike) -> str | None:
    """What a local path is when it is there but neither a regular file nor a folder, links followed ("a named
    pipe (FIFO)", "a character device"), for a message better than "not found"; None otherwise."""
    if is_uri(location):
        return None
    try:
        return not_regular(os.stat(os.fspath(location)).st_mode)
    except (OSError, ValueError):
        return None


def join(folder: str | os.PathLike, *names: str) -> str:
    """A location inside `folder` (URIs joined with '/')."""
    if is_uri(folder):
        return "/".join([os.fspath(folder).rstrip("/"), *names])
    return os.path.join(os.fspath(folder), *names)


def resolved(location: str | os.PathLike) -> str:
    """One spelling per file, to compare locations: a local path with its links resolved (os.path.realpath), a URI
    with its path normalized ('a//b/' and 'a/./b' are 'a/b')."""
    if is_uri(location):
        import posixpath

        scheme, _, rest = location.partition("://")
        lead = "/" if rest.startswith("/") else ""
        return f"{scheme}://{lead}{posixpath.normpath(rest).lstrip('/')}" if rest.strip("/") else f"{scheme}://"
    return os.path.realpath(os.fspath(location))


def absolute(location: str | os.PathLike) -> str:
    """A local path made absolute from the working folder (links kept); a URI normalized (`resolved`)."""
    return resolved(location) if is_uri(location) else os.path.abspath(os.fspath(location))


def parent(location: str | os.PathLike) -> str:
    """The folder holding `location` (of an absolute path or a normalized URI)."""
    if is_uri(location):
        head, _, rest = resolved(location).partition("://")
        up = rest.rpartition("/")[0]
        return f"{head}://{up}" if up or rest.startswith("/") else f"{head}://{rest}"
    return os.path.dirname(os.fspath(location))


def relative(location: str | os.PathLike, folder: str | os.PathLike) -> str:
    """`location` relative to `folder`, both absolute paths or both URIs ('/'-separated for URIs); ValueError when
    `location` is not inside `folder`."""
    if is_uri(location) or is_uri(folder):
        loc, top = resolved(location), resolved(folder).rstrip("/")
        if not loc.startswith(top + "/"):
            raise ValueError(f"{location} is not inside {folder}")
        return loc[len(top) + 1:]
    return os.path.relpath(os.fspath(location), os.fspath(folder))


def inside(location: str, folder: str) -> bool:
    """Whether `location` is `folder` or under it (both `resolved`)."""
    sep = "/" if is_uri(folder) else os.sep
    return location == folder or location.startswith(folder.rstrip(sep) + sep)


def common_parent(locations: list[str]) -> str:
    """The deepest folder holding every one of `locations` (absolute paths, or URIs of one scheme and bucket)."""
    if is_uri(locations[0]):
        folders = [parent(loc).split("/") for loc in locations]
        common = []
        for names in zip(*folders):
            if len(set(names)) > 1:
                break
            common.append(names[0])
        return "/".join(common)
    return os.path.commonpath([os.path.dirname(a) for a in locations])


def walk(folder: str | os.PathLike) -> Iterator[tuple[str, list[str], list[str]]]:
    """(folder, subfolders, files) top-down, like os.walk; a caller may prune the subfolders list in place. Links
    to folders are listed, never descended (a link loop would never end). `files` holds every other entry,
    FIFOs and devices too: opening one raises NotRegularFileError, so the job reports it instead of dropping it."""
    if not is_uri(folder):
        yield from os.walk(os.fspath(folder))
        return
    fs, root = _remote(folder)
    base = os.fspath(folder).rstrip("/")    # locations are spelled as the user wrote the folder
    dirs: dict[str, list[str]] = {}
    files: dict[str, list[str]] = {}
    for parent, name, is_folder in _listing(fs, root):
        (dirs if is_folder else files).setdefault(parent, []).append(name)

    def visit(rel: str):
        subs = sorted(dirs.get(rel, []))
        yield base + rel, subs, sorted(files.get(rel, []))
        for sub in subs:                  # pruned by the caller as os.walk allows
            yield from visit(f"{rel}/{sub}")

    yield from visit("")


def _listing(fs, root: str) -> Iterator[tuple[str, str, bool]]:
    """(parent relative to `root` as "" or "/a/b", name, is a folder) of everything under `root`, one recursive
    listing (on an object store: a few LIST requests per thousand keys, never one per folder)."""
    import pyarrow.fs as pafs

    cut = len(root.rstrip("/"))
    for info in fs.get_file_info(pafs.FileSelector(root, recursive=True)):
        parent, _, name = info.path.rstrip("/")[cut:].rpartition("/")
        yield parent, name, info.type == pafs.FileType.Directory


def _match(names: list[str], pats: list[str]) -> bool:
    """Whether the path components `names` match the glob components `pats` (`**`: zero or more folders, hidden
    ones excepted, as glob does; a hidden name only by a pattern starting with '.')."""
    import fnmatch

    if not pats:
        return not names
    if pats[0] == "**":
        return any(_match(names[k:], pats[1:]) for k in range(len(names) + 1)
                   if not any(n.startswith(".") for n in names[:k]))
    return bool(names) and (pats[0].startswith(".") or not names[0].startswith(".")) \
        and fnmatch.fnmatchcase(names[0], pats[0]) and _match(names[1:], pats[1:])


def _remote_glob(pattern: str) -> list[str]:
    """What a URI glob matches (files only, sorted): one listing under the fixed prefix before the first pattern
    component, each key matched component by component (`s3://b/train/**/*.parquet`)."""
    import glob as globbing

    head, _, rest = pattern.partition("://")
    parts = rest.split("/")
    fixed = next(i for i, part in enumerate(parts) if globbing.has_magic(part))
    if fixed == 0:
        from dataaudit.errors import DataAuditError

        raise DataAuditError(f"{pattern}: a pattern cannot match bucket names: name the bucket")
    top = f"{head}://{'/'.join(parts[:fixed])}"
    if not is_dir(top):
        return []
    fs, root = _remote(top)
    return sorted(f"{top}{parent}/{name}" for parent, name, is_folder in _listing(fs, root)
                  if not is_folder and _match([*parent.split("/")[1:], name], parts[fixed:]))


def glob(pattern: str) -> list[str]:
    """What a local glob pattern matches (`**` included), sorted: regular files, and FIFOs or devices (so that
    opening one reports it; folders and broken links are left out). `**` follows links to folders but enters no
    folder twice (the real folders first), so a link loop ends: Python's glob followed it until the path was too
    long."""
    import glob as globbing

    if is_uri(pattern):
        return _remote_glob(pattern)
    if "**" not in pattern:      # a bounded depth: Python's glob cannot loop
        return sorted(m for m in globbing.glob(pattern) if _globbed(m))
    parts = pattern.split(os.sep)
    fixed = next(i for i, part in enumerate(parts) if globbing.has_magic(part))
    top = os.sep.join(parts[:fixed]) or (os.sep if pattern.startswith(os.sep) else "")
    wanted = parts[fixed:]

    found, seen, links = [], set(), []

    def visit(start: str, follow: bool) -> None:
        for root, dirs, files in os.walk(start, followlinks=follow):
            here = os.stat(root)
            if (here.st_dev, here.st_ino) in seen:     # entered already: a link loop, or a second way in
                dirs[:] = []
                continue
            seen.add((here.st_dev, here.st_ino))
            dirs.sort()
            if not follow:
                links.extend(os.path.join(root, d) for d in dirs if os.path.islink(os.path.join(root, d)))
            rel = os.path.relpath(root, top or os.curdir)
            names = [] if rel == os.curdir else rel.split(os.sep)
            for f in files:
                if _match(names + [f], wanted):
                    path = os.path.join(root, f) if top else os.path.join(*names, f)
                    if _globbed(path):
                        found.append(path)

    visit(top or os.curdir, False)      # the real folders first: a file is found under its own path
    for link in links:                  # then the folders only links lead to
        visit(link, True)
    return sorted(found)


def _globbed(path: str) -> bool:
    """A glob match the job takes: a regular file, or something that is no folder and no broken link (a FIFO,
    a device: opening it reports it)."""
    try:
        return not st_mode.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def makedirs(folder: str | os.PathLike) -> None:
    """Create `folder` and its parents (nothing to do on an object store: prefixes need no creation)."""
    if is_uri(folder):
        fs, path = _remote(folder)
        fs.create_dir(path, recursive=True)
        return
    os.makedirs(os.fspath(folder), exist_ok=True)


def remove_tree(folder: str | os.PathLike) -> None:
    """Delete a work folder and everything in it (nothing when it is not there)."""
    import shutil

    if is_uri(folder):
        fs, path = _remote(folder)
        if is_dir(folder):
            fs.delete_dir(path)
        return
    shutil.rmtree(os.fspath(folder), ignore_errors=True)


# ------------------------------------------------------------------------------------------- atomic commit

def temp_beside(path: str | os.PathLike) -> Path:
    """A new empty local file next to `path`, created with mode 0o666 less the umask, like any file the user
    makes (tempfile.mkstemp's 0o600 would leave outputs unreadable to teammates on shared storage)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = path.parent / f".{path.name}.{os.urandom(6).hex()}{TEMP_SUFFIX}"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue


def _upload(local: Path, dst: str) -> None:
    """Put a complete local file at the URI `dst`. An object store shows an object only once its upload ends: the
    copy runs in pyarrow's C++ loop (a Ctrl-C is seen after it, never in the middle, where closing the stream
    would commit a truncated object; a killed process never completes the upload, so no object appears). A
    filesystem with folders gets a temporary name beside `dst`, then a rename, as a local output does."""
    import shutil

    fs, path = _remote(dst)
    parent_dir = path.rpartition("/")[0]
    if fs.type_name in OBJECT_STORES:
        import pyarrow.fs as pafs

        pafs.copy_files(str(local), path, source_filesystem=pafs.LocalFileSystem(), destination_filesystem=fs,
                        chunk_size=COPY_CHUNK * 8)
        return
    if parent_dir:
        fs.create_dir(parent_dir, recursive=True)
    target = f"{parent_dir}/.{path.rpartition('/')[2]}.{os.urandom(6).hex()}{TEMP_SUFFIX}"
    try:
        with open(local, "rb") as src, fs.open_output_stream(target) as out:
            shutil.copyfileobj(src, out, COPY_CHUNK)
        fs.move(target, path)
    except BaseException:
        try:
            fs.delete_file(target)
        except OSError:
            pass
        raise


@contextmanager
def atomic_path(dst: str | os.PathLike) -> Iterator[Path]:
    """A local temporary path to write `dst` to (for writers that take a path); committed to `dst` when the block
    ends without error, removed otherwise."""
    if is_uri(dst):
        import tempfile

        fd, name = tempfile.mkstemp(suffix=TEMP_SUFFIX)
        os.close(fd)
        tmp = Path(name)
        try:
            yield tmp
            _upload(tmp, os.fspath(dst))
        finally:
            tmp.unlink(missing_ok=True)
        return
    tmp = temp_beside(dst)
    try:
        yield tmp
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def atomic_output(dst: str | os.PathLike, buffering: int = -1) -> Iterator[IO[bytes]]:
    """A binary file to write `dst` through, committed when the block ends without error."""
    with atomic_path(dst) as tmp:
        with open(tmp, "wb", buffering=buffering) as f:
            yield f


def copy_file(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Copy `src` to `dst`, committed atomically (never a hard link: editing the copy must not edit the original)."""
    import shutil

    with open_input(src) as f, atomic_output(dst) as out:
        shutil.copyfileobj(f, out, COPY_CHUNK)


def remove_stale_temps(folder: str | os.PathLike) -> int:
    """Delete the temporary files a killed run left in `folder` (and its subfolders); returns how many. An object
    store holds none (uploads are staged locally)."""
    if is_uri(folder) or not os.path.isdir(os.fspath(folder)):
        return 0
    stale = [p for p in Path(folder).rglob(f".*{TEMP_SUFFIX}") if p.is_file()]
    for p in stale:
        p.unlink(missing_ok=True)
    return len(stale)


def content_hash(location: str | os.PathLike) -> str:
    """The xxh3-128 of every byte of a file (streamed in 8 MiB chunks, 16 MiB ranged reads on a URI; ~GB/s)."""
    import xxhash

    h = xxhash.xxh3_128()
    with open_input(location) as f:
        while chunk := f.read(REMOTE_BUFFER if is_uri(location) else 8 << 20):
            h.update(chunk)
    return h.hexdigest()


# What names an object's version at its provider, in the answer to one metadata request: S3's ETag (and VersionId on
# a versioned bucket) and Azure's ETag (pyarrow's names); GCS's generation and content hashes (md5Hash, crc32c; not
# its etag, which a metadata-only update changes too); through fsspec the same names as its filesystems give them
# (s3fs, gcsfs, adlfs's etag and version_id) and a Hugging Face file's git blob id and LFS sha256. A store gives its
# object new values of these whenever its bytes change, so a URI's fingerprint holds them instead of a hash that
# would download the object a second time.
IDENTITY_KEYS = ("ETag", "VersionId", "generation", "md5Hash", "crc32c", "etag", "version_id", "blob_id",
                 "lfs.sha256")


def object_version(location: str) -> tuple[int, dict[str, str]]:
    """(size, identity) of a URI's object from one metadata request and no byte of it: the HEAD that opening it on
    pyarrow's S3, GCS or Azure filesystem makes (its `metadata()`), or fsspec's `info()`. The identity holds the
    IDENTITY_KEYS the store gave ({} when it gives none: an S3-compatible store without ETags, `memory://`).
    FileNotFoundError when there is no object, IsADirectoryError for a prefix, OSError when it cannot be asked."""
    fs, path = _remote(location)
    spec = getattr(getattr(fs, "handler", None), "fs", None)     # the fsspec filesystem behind FSSpecHandler
    if spec is not None:
        info = spec.info(path)
        if info.get("type") != "file":
            raise IsADirectoryError(errno.EISDIR, "Is a directory", location)
        meta = {k: v for k, v in info.items() if not isinstance(v, dict)}
        meta.update({f"{k}.{sub}": v for k, d in info.items() if isinstance(d, dict) for sub, v in d.items()})
        size = int(info.get("size") or 0)
    else:
        with fs.open_input_file(path) as f:
            size = f.size()
            meta = {k: v.decode("utf-8", "replace") if isinstance(v, bytes) else v
                    for k, v in (f.metadata() or {}).items()}
    identity = {k: str(meta[k]) for k in IDENTITY_KEYS if meta.get(k) not in (None, "", "0")}
    if "generation" in identity:      # GCS: its etag also changes with the object's metadata alone
        identity.pop("etag", None)
    return size, identity


def fingerprint(location: str | os.PathLike, content: bool = True) -> dict:
    """What a file is now. A URI whose store names its object's version: {"size", "identity"} from one metadata
    request (`object_version`), no byte read, so a job reads the shard once. A local file, or an object whose store
    names no version: {"size", "mtime_ns", "xxh3_128"} (a hash of every byte); `content=False`: no hash (None), for
    a job that reads a few of the file's bytes (a sample: hashing would read them all); `changed` then never takes
    the file for the same one."""
    if is_uri(location):
        size, identity = object_version(location)
        if identity:
            return {"size": size, "identity": identity}
    st = stat(location)
    return {"size": st.size, "mtime_ns": st.mtime_ns, "xxh3_128": content_hash(location) if content else None}


def content_key(recorded: dict) -> tuple | None:
    """What identifies the bytes a fingerprint describes, to compare two jobs' records of one file: ("xxh3_128",
    size, hash) or ("identity", size, the object's version); None when it holds neither."""
    if recorded.get("identity"):
        return ("identity", recorded.get("size"), tuple(sorted(recorded["identity"].items())))
    if recorded.get("xxh3_128"):
        return ("xxh3_128", recorded.get("size"), recorded["xxh3_128"])
    return None


def content_digest(recorded: dict) -> str:
    """A short string for the bytes a fingerprint describes (its xxh3-128, or a digest of the object's size and
    version), for digests of work that depends on them."""
    if recorded.get("xxh3_128"):
        return recorded["xxh3_128"]
    import xxhash

    return xxhash.xxh3_128_hexdigest(json.dumps(content_key(recorded), sort_keys=True).encode())


def _version_changed(location: str, recorded: dict) -> str | None:
    """`changed` for a fingerprint that holds an object's version: its size and version now (one metadata
    request, no byte read) against the recorded ones."""
    try:
        size, identity = object_version(location) if is_uri(location) else (None, {})
    except OSError as e:
        return f"cannot read it: {e.strerror or e}"
    if size is None:
        return "its fingerprint names an object-store version, and it is a local file"
    if size != recorded.get("size"):
        return f"its size changed ({recorded.get('size')} -> {size} bytes)"
    was = recorded["identity"]
    diff = [k for k in IDENTITY_KEYS if was.get(k) != identity.get(k)]
    if diff:
        return "its object version changed (" + "; ".join(f"{k} {was.get(k)} -> {identity.get(k)}" for k in diff) \
            + ")"
    return None


def changed(location: str | os.PathLike, recorded: dict | None) -> str | None:
    """Why `location` is not the file `recorded` (a `fingerprint`) describes; None: the same file. An object's
    version is compared with its size (no byte read); otherwise the size and time first, and the hash is read only
    when they match (a fingerprint of an older version, xxh3-128 only, is checked so on a URI too)."""
    if not recorded:
        return "no fingerprint of it was recorded"
    if recorded.get("identity"):
        return _version_changed(os.fspath(location), recorded)
    try:
        st = stat(location)
    except OSError as e:
        return f"cannot read it: {e.strerror or e}"
    if st.size != recorded.get("size"):
        return f"its size changed ({recorded.get('size')} -> {st.size} bytes)"
    if st.mtime_ns != recorded.get("mtime_ns"):
        return "its modification time changed"
    if recorded.get("xxh3_128") is None:
        return "no hash of its content was recorded"
    try:
        now = content_hash(location)
    except OSError as e:
        return f"cannot read it: {e.strerror or e}"
    return None if now == recorded.get("xxh3_128") else "its content changed"


class FolderLocked(OSError):
    """Another run holds the output folder."""


_HELD_LOCKS: dict[str, int] = {}   # resolved folder -> the descriptor that holds its lock


def lock_folder(folder: str | os.PathLike) -> None:
    """Hold `folder` (a job's --out, which this process must be able to write in: PermissionError otherwise) until
    the process exits: an flock on the folder itself (no file is added to it), never waited for; the kernel drops it
    when the process ends, killed or not. A second call for the same folder in this process is a no-op. Another
    process holding it is FolderLocked naming that run (its pid and command line, from /proc on Linux). A URI folder,
    or one on storage without locks (some network mounts), is not locked: two runs into it are the user's to
    avoid."""
    if is_uri(folder):
        return
    import errno
    import fcntl

    key = os.path.realpath(os.fspath(folder))
    if key in _HELD_LOCKS:
        return
    if not os.access(key, os.W_OK | os.X_OK):   # a read-only --out: said now, before any work
        raise PermissionError(errno.EACCES, "Permission denied", os.fspath(folder))
    fd = os.open(key, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _lock_holder(os.fstat(fd).st_ino)
        os.close(fd)
        raise FolderLocked(f"{folder}: in use by another dataaudit run ({holder}): wait for it to end, or choose "
                           "another --out") from None
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
            return      # storage without locks (some network mounts): the run goes on unlocked, as on a URI
        raise
    _HELD_LOCKS[key] = fd


def _lock_holder(inode: int) -> str:
    """"pid N: its command line" of the process holding an flock on `inode` (Linux's /proc/locks), else a vaguer
    word."""
    try:
        with open("/proc/locks") as f:
            for line in f:
                fields = line.split()
                if "FLOCK" in fields and fields[5].rsplit(":", 1)[-1] == str(inode):
                    pid = fields[4]
                    with open(f"/proc/{pid}/cmdline", "rb") as c:
                        words = c.read().decode("utf-8", "replace").split("\0")
                    command = " ".join(" ".join(words).split())   # one line, whatever the arguments hold
                    return f"pid {pid}: {command[:300]}"
    except (OSError, IndexError):
        pass
    return "another process"


def stored_size(location: str | os.PathLike) -> int:
    """The bytes a file takes on its storage: its size, or less for a sparse local file (its allocated blocks), so a
    file that claims terabytes but holds none is not taken for a large input."""
    size = stat(location).size
    if is_uri(location):
        return size
    st = os.stat(os.fspath(location))
    return min(size, getattr(st, "st_blocks", size // 512 + 1) * 512)
