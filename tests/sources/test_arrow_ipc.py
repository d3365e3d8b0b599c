"""Arrow IPC shards (`.arrow`): Hugging Face `save_to_disk` folders (IPC streams beside dataset_info.json and
state.json) and IPC files, read like Parquet: record number = row, images as struct<bytes, path>; a broken file is
an unreadable shard; `clean` rewrites one as the same kind of IPC."""
from __future__ import annotations

import io
import json

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.cli.paths import expand_shards
from dataaudit.formats import format_of, iter_shard
from dataaudit.sources import ROW, ShardReadError
from dataaudit.writers.arrow_ipc import rewrite_arrow


def _write(path, table: pa.Table, stream: bool = True, chunk: int = 3) -> None:
    with pa.OSFile(str(path), "wb") as sink, \
            (pa.ipc.new_stream if stream else pa.ipc.new_file)(sink, table.schema) as w:
        for b in table.to_batches(max_chunksize=chunk):
            w.write_batch(b)


def _png(size: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.full((size, size, 3), 120, np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def saved(tmp_path):
    """A save_to_disk folder of two data files, as `datasets` writes it (IPC streams, its features in the schema's
    metadata)."""
    folder = tmp_path / "ds"
    folder.mkdir()
    meta = {b"huggingface": json.dumps({"info": {"features": {"text": {"dtype": "string", "_type": "Value"}}}}).encode()}
    texts = [["first", "", "third", "fourth"], ["bad \x00 text", "sixth", "seventh"]]
    for i, t in enumerate(texts):
        _write(folder / f"data-{i:05d}-of-00002.arrow", pa.table({"text": t}).replace_schema_metadata(meta))
    (folder / "dataset_info.json").write_text(json.dumps({"features": {"text": {"_type": "Value"}}}))
    (folder / "state.json").write_text(json.dumps({"_data_files": [{"filename": "data-00000-of-00002.arrow"}]}))
    return folder


def test_a_save_to_disk_folder_is_its_data_files(saved):
    assert expand_shards([str(saved)]) == [str(saved / "data-00000-of-00002.arrow"),
                                           str(saved / "data-00001-of-00002.arrow")]
    assert format_of(saved / "data-00000-of-00002.arrow").title == "Arrow IPC"


@pytest.mark.parametrize("stream", [True, False])
def test_records_are_rows_in_batches_of_any_size(tmp_path, stream):
    path = tmp_path / "s.arrow"
    _write(path, pa.table({"text": [f"r{i}" for i in range(10)], "n": list(range(10))}), stream=stream, chunk=4)
    batches = list(iter_shard(str(path), batch_rows=3))
    assert [b.num_rows for b in batches] == [3, 1, 3, 1, 2]
    got = pa.Table.from_batches(batches)
    assert got.column(ROW).to_pylist() == list(range(10))
    assert got.column("text").to_pylist() == [f"r{i}" for i in range(10)]
    assert [b.schema.names for b in iter_shard(str(path), columns=["n"])][0][:1] == ["n"]


def test_the_audit_reads_a_save_to_disk_folder(saved, tmp_path):
    out = tmp_path / "o"
    res = CliRunner().invoke(main, ["audit", str(saved), "--out", str(out), "--engine", "local"])
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text())
    assert report["totals"]["samples"] == 7
    assert [s["samples"] for s in report["shards"]] == [4, 3]
    assert report["checks"]["empty_text"]["flagged"] == 1 and report["checks"]["control_chars"]["flagged"] == 1
    examples = {e["row"] for e in report["examples"]["control_chars"]}
    assert examples == {0}    # the second file's first record


def test_images_as_struct_bytes_path_are_checked(tmp_path):
    pytest.importorskip("PIL")
    images = pa.array([{"bytes": _png(64), "path": "a.png"}, {"bytes": _png(2), "path": "b.png"},
                       {"bytes": b"not an image", "path": "c.png"}],
                      pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    _write(tmp_path / "data-00000-of-00001.arrow", pa.table({"image": images, "text": ["a cat", "a dot", "junk"]}))
    out = tmp_path / "o"
    res = CliRunner().invoke(main, ["audit", str(tmp_path / "data-00000-of-00001.arrow"), "--out", str(out),
                                    "--engine", "local"])
    report = json.loads((out / "report.json").read_text())
    assert report["shards"][0]["fields"]["image"] == ["image"], res.output
    assert report["checks"]["image_corrupt"]["flagged"] + report["checks"]["not_an_image"]["flagged"] == 1
    assert report["checks"]["image_too_small"]["flagged"] == 1


def test_a_broken_file_is_an_unreadable_shard(tmp_path):
    path = tmp_path / "s.arrow"
    _write(path, pa.table({"text": ["a"] * 10}))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ShardReadError, match=r"^arrow: "):
        list(iter_shard(str(path)))
    (tmp_path / "junk.arrow").write_bytes(b"not arrow at all")
    with pytest.raises(ShardReadError, match=r"^arrow: "):
        list(iter_shard(str(tmp_path / "junk.arrow")))


@pytest.mark.parametrize("stream", [True, False])
def test_clean_rewrites_the_kept_records_as_the_same_kind(tmp_path, stream):
    src = tmp_path / "s.arrow"
    table = pa.table({"text": [f"r{i}" for i in range(8)]}).replace_schema_metadata({b"huggingface": b"{}"})
    _write(src, table, stream=stream)
    dst = tmp_path / "out.arrow"
    assert rewrite_arrow(str(src), dst, np.array([1, 5, 6]), 8) == {"records": 8, "kept": 5}
    reader = pa.ipc.open_stream(str(dst)) if stream else pa.ipc.open_file(str(dst))
    got = reader.read_all()
    assert got.column("text").to_pylist() == ["r0", "r2", "r3", "r4", "r7"]
    assert got.schema.metadata == {b"huggingface": b"{}"}


def test_offsets_that_lie_make_the_shard_unreadable_not_a_crash(tmp_path):
    path = tmp_path / "s.arrow"
    _write(path, pa.table({"text": ["abc", "def"]}))
    good = (0).to_bytes(4, "little") + (3).to_bytes(4, "little") + (6).to_bytes(4, "little")
    data = path.read_bytes()
    assert data.count(good) == 1
    path.write_bytes(data.replace(good, good[:8] + (1 << 30).to_bytes(4, "little")))
    with pytest.raises(ShardReadError, match=r"^arrow: .*offset"):
        list(iter_shard(str(path)))
