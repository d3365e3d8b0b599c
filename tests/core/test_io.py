"""The one door for files (dataaudit.io): local paths and URIs (`file://`, through pyarrow.fs) read, list and commit
the same way; an output is either absent or complete; a scheme nobody knows is one line naming the location."""
from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit import io
from dataaudit.errors import DataAuditError
from dataaudit.formats import iter_shard


def _uri(path) -> str:
    return f"file://{path}"


def _tree(root):
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "one.jsonl").write_bytes(b'{"text": "one"}\n')
    (root / "a" / "b" / "two.jsonl").write_bytes(b'{"text": "two"}\n')
    (root / "top.txt").write_bytes(b"hello\n")


def test_local_paths_and_uris_read_and_measure_alike(tmp_path):
    _tree(tmp_path)
    for where in (tmp_path, _uri(tmp_path)):
        top = io.join(where, "top.txt")
        assert io.read_bytes(top) == b"hello\n" and io.read_text(top) == "hello\n"
        assert io.read_bytes(top, limit=2) == b"hel"                  # limit + 1: a caller tells "too large"
        assert io.stat(top).size == 6 and io.stat(top).mtime_ns == (tmp_path / "top.txt").stat().st_mtime_ns
        assert (io.is_file(top), io.is_dir(top), io.exists(top)) == (True, False, True)
        assert (io.is_file(io.join(where, "a")), io.is_dir(io.join(where, "a"))) == (False, True)
        assert not io.exists(io.join(where, "nothing"))
        with io.open_input(top) as f:
            assert f.peek(2)[:2] == b"he" and f.read() == b"hello\n"
        with pytest.raises(FileNotFoundError):
            io.stat(io.join(where, "nothing"))


def test_walk_gives_the_same_tree_for_a_path_and_a_uri(tmp_path):
    _tree(tmp_path)

    def listing(where, strip):
        return [(root[len(strip):], sorted(dirs), sorted(files)) for root, dirs, files in io.walk(where)]

    local = listing(str(tmp_path), str(tmp_path))
    assert local == [("", ["a"], ["top.txt"]), ("/a", ["b"], ["one.jsonl"]), ("/a/b", [], ["two.jsonl"])]
    assert listing(_uri(tmp_path), _uri(tmp_path)) == local
    pruned = []
    for root, dirs, files in io.walk(_uri(tmp_path)):
        dirs[:] = [d for d in dirs if d != "b"]          # pruned in place, as os.walk allows
        pruned += files
    assert pruned == ["top.txt", "one.jsonl"]


def test_glob_takes_files_only_sorted(tmp_path):
    _tree(tmp_path)
    assert io.glob(str(tmp_path / "**" / "*.jsonl")) == [str(tmp_path / "a" / "b" / "two.jsonl"),
                                                        str(tmp_path / "a" / "one.jsonl")]


@pytest.mark.parametrize("uri", [False, True])
def test_an_output_is_committed_whole_or_not_at_all(tmp_path, uri):
    dst = io.join(_uri(tmp_path) if uri else str(tmp_path), "out", "x.bin")
    with io.atomic_output(dst) as f:
        f.write(b"complete")
    assert (tmp_path / "out" / "x.bin").read_bytes() == b"complete"
    with pytest.raises(RuntimeError, match="killed"):
        with io.atomic_output(dst) as f:
            f.write(b"half")
            raise RuntimeError("killed mid-write")
    assert (tmp_path / "out" / "x.bin").read_bytes() == b"complete"        # the old file, untouched
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["x.bin"]   # no temporary left


def test_stale_temporaries_of_a_killed_run_are_removed(tmp_path):
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / ".00001-abc.flags.parquet.0a1b2c.tmp").write_bytes(b"PAR1 half")
    (tmp_path / ".report.json.ffee.tmp").write_bytes(b"{")
    (tmp_path / "report.json").write_bytes(b"{}")
    assert io.remove_stale_temps(tmp_path) == 2
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == ["report.json"]
    assert io.remove_stale_temps(tmp_path / "missing") == 0 and io.remove_stale_temps(_uri(tmp_path)) == 0


def test_copy_makes_folders_and_never_links(tmp_path):
    (tmp_path / "src.jpg").write_bytes(b"\xff\xd8 image")
    dst = tmp_path / "deep" / "er" / "copy.jpg"
    io.copy_file(str(tmp_path / "src.jpg"), str(dst))
    assert dst.read_bytes() == b"\xff\xd8 image" and dst.stat().st_ino != (tmp_path / "src.jpg").stat().st_ino


def test_folders_made_and_removed(tmp_path):
    for where in (str(tmp_path / "local"), _uri(tmp_path / "remote")):
        io.makedirs(io.join(where, "work", "x"))
        assert io.is_dir(io.join(where, "work", "x"))
        io.remove_tree(io.join(where, "work"))
        assert not io.exists(io.join(where, "work"))
        io.remove_tree(io.join(where, "work"))           # nothing there: nothing to do


def test_a_scheme_nobody_knows_is_one_line(tmp_path):
    with pytest.raises(DataAuditError, match=r"^nope://bucket/x\.jsonl: cannot open this location: "):
        io.read_bytes("nope://bucket/x.jsonl")
    assert io.is_uri("s3://bucket/key") and io.is_uri("file:///tmp/x") and not io.is_uri("/tmp/x")
    assert not io.is_uri("C:/data/x.jsonl") and not io.is_uri("relative/x.jsonl")


def test_every_format_reads_the_same_through_a_uri(tmp_path):
    """The readers open shards through the door: a URI gives the same batches as the path."""
    pq.write_table(pa.table({"text": ["a", "b", "c"]}), tmp_path / "s.parquet", row_group_size=2)
    (tmp_path / "s.jsonl.gz").write_bytes(gzip.compress(b'{"text": "a"}\n\n{"text": "b"}\n'))
    (tmp_path / "s.json").write_text(json.dumps([{"text": "a"}, {"text": "b"}], indent=1))
    (tmp_path / "s.csv").write_bytes(b'text,n\r\n"a, b",1\r\nc,2\r\n')
    import tarfile
    with tarfile.open(tmp_path / "s.tar", "w") as tf:
        for key, text in (("k1", b"first"), ("k2", b"second")):
            info = tarfile.TarInfo(f"{key}.txt")
            info.size = len(text)
            tf.addfile(info, __import__("io").BytesIO(text))
    for name in ("s.parquet", "s.jsonl.gz", "s.json", "s.csv", "s.tar"):
        local = pa.Table.from_batches(list(iter_shard(str(tmp_path / name))))
        remote = pa.Table.from_batches(list(iter_shard(_uri(tmp_path / name))))
        assert remote.equals(local), name
        assert local.num_rows == (3 if name == "s.parquet" else 2), name


def test_only_regular_files_are_opened(tmp_path):
    """A FIFO would block its reader and /dev/zero never ends: both are refused before a byte is read (issue 38)."""
    import os

    os.mkfifo(tmp_path / "pipe.jsonl")
    os.symlink("/dev/zero", tmp_path / "zero.jsonl")
    (tmp_path / "fine.jsonl").write_bytes(b"{}\n")
    os.symlink("fine.jsonl", tmp_path / "link.jsonl")              # a link to a regular file is followed
    assert io.read_bytes(str(tmp_path / "link.jsonl")) == b"{}\n"
    for name in ("pipe.jsonl", "zero.jsonl"):
        with pytest.raises(io.NotRegularFileError, match="not a regular file"):
            io.read_bytes(str(tmp_path / name))
        assert not io.is_file(str(tmp_path / name))
    assert [io.special(str(tmp_path / n)) for n in ("pipe.jsonl", "zero.jsonl", "link.jsonl", "none")] == \
        ["a named pipe (FIFO)", "a character device", None, None]
    with pytest.raises(IsADirectoryError):
        io.open_input(str(tmp_path))
    # a walk lists them (the job reports them as unreadable), a glob too
    [(_, _, files)] = list(io.walk(str(tmp_path)))
    assert sorted(files) == ["fine.jsonl", "link.jsonl", "pipe.jsonl", "zero.jsonl"]
    assert [p.rsplit("/", 1)[1] for p in io.glob(str(tmp_path / "*.jsonl"))] == sorted(files)


def test_a_double_star_glob_enters_no_folder_twice(tmp_path, monkeypatch):
    """Links back up (`up -> ..`) made Python's glob run until the path was too long (issue 38, F12)."""
    import os

    _tree(tmp_path)
    os.symlink("..", tmp_path / "a" / "up")
    os.symlink(str(tmp_path / "a"), tmp_path / "a" / "b" / "loop")
    os.symlink(str(tmp_path / "a" / "b"), tmp_path / "elsewhere")          # another way into a/b
    (tmp_path / "a" / ".hidden").mkdir()
    (tmp_path / "a" / ".hidden" / "h.jsonl").write_bytes(b"{}\n")
    found = io.glob(str(tmp_path / "**" / "*.jsonl"))
    assert sorted(set(found)) == sorted(found) and len(found) == 2      # each file once
    assert {p.rsplit("/", 1)[1] for p in found} == {"one.jsonl", "two.jsonl"}
    # links are followed (as Python's glob does), into folders not entered yet: `up` leads to top.txt once
    assert io.glob(str(tmp_path / "a" / "**")) == [str(tmp_path / "a" / "b" / "two.jsonl"),
                                                  str(tmp_path / "a" / "one.jsonl"),
                                                  str(tmp_path / "a" / "up" / "top.txt")]
    assert io.glob(str(tmp_path / "a" / ".hidden" / "**" / "*.jsonl")) == [str(tmp_path / "a" / ".hidden" / "h.jsonl")]
    monkeypatch.chdir(tmp_path)
    assert io.glob("**/one.jsonl") == ["a/one.jsonl"]


def test_uri_locations_compare_and_nest_by_their_normalized_spelling():
    assert io.resolved("s3://b/a//x/./y.parquet") == "s3://b/a/x/y.parquet"
    assert io.resolved("s3://b/prefix/") == "s3://b/prefix" and io.resolved("memory:///b/c") == "memory:///b/c"
    assert io.parent("s3://b/a/x.parquet") == "s3://b/a" and io.parent("s3://b") == "s3://b"
    assert io.relative("s3://b/a/sub/x.tar", "s3://b/a/") == "sub/x.tar"
    with pytest.raises(ValueError):
        io.relative("s3://b/ab/x.tar", "s3://b/a")
    assert io.common_parent(["s3://b/a/x/1.pq", "s3://b/a/2.pq"]) == "s3://b/a"
    assert io.inside("s3://b/a/x", "s3://b/a") and not io.inside("s3://b/ab", "s3://b/a")


def test_storage_options_are_checked_by_key_and_value():
    assert io.parse_storage_options(["region=eu-west-1", "anonymous=true", "retry_max_attempts=2"]) == \
        {"region": "eu-west-1", "anonymous": "true", "retry_max_attempts": "2"}
    for bad, message in (("region", "'region': expected KEY=VALUE"),
                         ("colour=red", "'colour': unknown key (known: access_key, "),
                         ("anonymous=maybe", "anonymous=maybe: expected true or false, got 'maybe'"),
                         ("connect_timeout=soon", "connect_timeout=soon: could not convert string to float")):
        with pytest.raises(ValueError) as err:
            io.parse_storage_options([bad])
        assert str(err.value).startswith(message), str(err.value)
