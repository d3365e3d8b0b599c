"""When clean refuses (exit 2, one line, nothing written), and how an unreadable shard can be left out."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit.io import fingerprint
from tests.clean.helpers import cli, fake_audit


@pytest.fixture()
def corpus(tmp_path) -> tuple[Path, list[str], Path]:
    data = tmp_path / "data"
    data.mkdir()
    paths = []
    for s in range(3):
        p = data / f"s{s}.parquet"
        pq.write_table(pa.table({"x": list(range(10))}), p)
        paths.append(str(p))
    audit = fake_audit(tmp_path / "audit", {paths[0]: [1, 2]}, {p: 10 for p in paths})
    return data, paths, audit


def _refused(tmp_path, *args) -> str:
    out = tmp_path / "out"
    code, text = cli("clean", *args, "--out", out)
    assert code == 2, text
    assert text.startswith("Error: refused: ") and text.count("\n") == 1 and "Traceback" not in text
    assert not out.exists()
    return text


def test_changed_since_the_audit(tmp_path, corpus):
    data, paths, audit = corpus
    pq.write_table(pa.table({"x": list(range(10, 20))}), paths[1])         # same size, other bytes
    assert "s1.parquet: changed since the audit" in _refused(tmp_path, data, "--audit", audit)


def test_same_bytes_new_mtime_is_refused(tmp_path, corpus):
    data, paths, audit = corpus
    os.utime(paths[2], ns=(1, 1))
    assert "modification time changed" in _refused(tmp_path, data, "--audit", audit)


def test_shard_not_in_the_audit(tmp_path, corpus):
    data, paths, audit = corpus
    extra = data / "new.parquet"
    pq.write_table(pa.table({"x": [1]}), extra)
    assert "new.parquet: not in the audit's report" in _refused(tmp_path, data, "--audit", audit)


def test_out_inside_or_equal_to_an_input_folder(tmp_path, corpus):
    data, paths, audit = corpus
    out = data / "clean"
    code, text = cli("clean", data, "--audit", audit, "--out", out)
    assert code == 2 and "inside the input folder" in text and not out.exists()
    code, text = cli("clean", *paths, "--audit", audit, "--out", data)
    assert code == 2 and "--out is an input folder" in text


def test_out_is_the_audit_folder(tmp_path, corpus):
    data, paths, audit = corpus
    code, text = cli("clean", data, "--audit", audit, "--out", audit)
    assert code == 2 and "findings folder" in text
    assert sorted(p.name for p in audit.iterdir()) == ["flags.parquet", "report.json"]


def test_dedup_folder_that_does_not_cover_the_shard(tmp_path, corpus):
    data, paths, audit = corpus
    d = tmp_path / "dedup"
    d.mkdir()
    (d / "dedup.json").write_text(json.dumps({"shards": [{"path": paths[0], "samples": 10, "status": "ok",
                                                          "fingerprint": fingerprint(paths[0])}]}))
    pq.write_table(pa.table({"shard": [paths[0]], "key": ["0"], "row": [0]}), d / "keep.parquet")
    assert "s1.parquet: not among the shards of any --dedup folder" in _refused(tmp_path, data, "--audit", audit, "--dedup", d)


def test_contamination_without_drop_list(tmp_path, corpus):
    data, paths, audit = corpus
    c = tmp_path / "con"
    c.mkdir()
    (c / "contamination.json").write_text(json.dumps({"decontaminate": None, "train": {"shards": []}}))
    assert "--decontaminate-train" in _refused(tmp_path, data, "--audit", audit, "--contamination", c)


def test_unreadable_shard_refused_unless_skipped(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    good, bad = data / "a.parquet", data / "b.parquet"
    pq.write_table(pa.table({"x": list(range(5))}), good)
    bad.write_bytes(b"PAR1 not really")
    audit = fake_audit(tmp_path / "audit", {str(good): [4]}, {str(good): 5, str(bad): 0},
                       status={str(bad): "unreadable"})
    assert "b.parquet: the audit could not read it to the end" in _refused(tmp_path, data, "--audit", audit)
    out = tmp_path / "out"
    code, text = cli("clean", data, "--audit", audit, "--out", out, "--skip-unreadable")
    assert code == 0, text
    report = json.loads((out / ".dataaudit/clean.json").read_text())
    assert report["skipped"] == [{"path": str(bad), "reason": "the audit could not read it to the end (broken)"}]
    assert report["totals"] == {"shards": 1, "rows": 5, "kept": 4, "dropped": 1,
                                "dropped_by": {"check:nonfinite": 1}, "skipped_shards": 1,
                                "failed_shards": 0}
    assert sorted(p.name for p in out.iterdir()) == [".dataaudit", "a.parquet"]   # clean's own files hidden
    assert sorted(p.name for p in (out / ".dataaudit").iterdir()) == ["clean.html", "clean.json", "dropped.parquet",
                                                                      "parts"]
    assert pq.read_table(out / "a.parquet").column("x").to_pylist() == [0, 1, 2, 3]


def test_every_format_through_the_job(tmp_path):
    """Compressed tar and JSONL, a JSON array, selection by check only (--severity none)."""
    import gzip
    import io
    import tarfile

    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    jl = data / "sub" / "a.jsonl.gz"
    jl.write_bytes(gzip.compress(b"".join(b'{"i": %d}\r\n' % i for i in range(6))))
    js = data / "b.json"
    js.write_text('[\n  {"i": 0},\n  {"i": 1},\n  {"i": 2}\n]\n')
    tz = data / "c.tar.gz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for k in range(4):
            for ext in ("txt", "cls"):
                body = f"{k}".encode()
                info = tarfile.TarInfo(f"{k:04d}.{ext}")
                info.size = len(body)
                tf.addfile(info, io.BytesIO(body))
    tz.write_bytes(buf.getvalue())
    counts = {str(jl): 6, str(js): 3, str(tz): 4}
    audit = fake_audit(tmp_path / "audit", {str(jl): [0, 5], str(js): [1], str(tz): [2]}, counts)
    out = tmp_path / "out"
    code, text = cli("clean", data, "--audit", audit, "--out", out, "--severity", "none")
    assert code == 0, text
    assert json.loads((out / ".dataaudit/clean.json").read_text())["totals"]["dropped"] == 0
    out = tmp_path / "out2"
    code, text = cli("clean", data, "--audit", audit, "--out", out, "--severity", "none", "--check", "nonfinite")
    assert code == 0, text
    assert gzip.decompress((out / "sub" / "a.jsonl.gz").read_bytes()) == b'{"i": 1}\r\n{"i": 2}\r\n{"i": 3}\r\n{"i": 4}\r\n'
    assert (out / "b.json").read_text() == '[\n  {"i": 0},\n  {"i": 2}\n]\n'
    with tarfile.open(out / "c.tar.gz") as tf:
        assert [m.name for m in tf] == ["0000.txt", "0000.cls", "0001.txt", "0001.cls", "0003.txt", "0003.cls"]
    report = json.loads((out / ".dataaudit/clean.json").read_text())
    assert [(s["output"], s["format"], s["rows"], s["kept"], s["dropped"]) for s in report["shards"]] == [
        ("b.json", "json", 3, 2, 1), ("c.tar.gz", "webdataset", 4, 3, 1), ("sub/a.jsonl.gz", "jsonl", 6, 4, 2)]
    dropped = pq.read_table(out / ".dataaudit/dropped.parquet").to_pylist()
    assert [(Path(r["shard"]).name, r["key"], r["row"], r["reasons"]) for r in dropped] == [
        ("b.json", "1", 1, ["check:nonfinite"]), ("c.tar.gz", "0002", 2, ["check:nonfinite"]),
        ("a.jsonl.gz", "0", 0, ["check:nonfinite"]), ("a.jsonl.gz", "5", 5, ["check:nonfinite"])]


def _dedup(folder: Path, keep: dict[str, list[int]]) -> Path:
    folder.mkdir()
    (folder / "dedup.json").write_text(json.dumps({"shards": [{"path": p, "samples": 10, "status": "ok",
                                                                "fingerprint": fingerprint(p)} for p in keep]}))
    pq.write_table(pa.table({"shard": [p for p, rows in keep.items() for _ in rows],
                             "key": [str(r) for rows in keep.values() for r in rows],
                             "row": [r for rows in keep.values() for r in rows]}), folder / "keep.parquet")
    return folder


def test_two_dedup_folders_each_for_the_shards_it_covers(tmp_path, corpus):
    data, paths, audit = corpus
    everything = list(range(10))
    text = _dedup(tmp_path / "text", {paths[0]: [0, 1, 2, 3, 4, 5, 6, 7, 8], paths[1]: everything})
    image = _dedup(tmp_path / "image", {paths[1]: [0, 2, 4, 6, 8, 9], paths[2]: [1, 2, 3, 4, 5, 6, 7, 8, 9]})
    out = tmp_path / "out"
    code, text_out = cli("clean", data, "--audit", audit, "--dedup", text, "--dedup", image, "--out", out)
    assert code == 0, text_out
    d = pq.read_table(out / ".dataaudit/dropped.parquet").to_pylist()
    assert [(Path(r["shard"]).name, r["row"], r["reasons"]) for r in d] == [
        ("s0.parquet", 1, ["check:nonfinite"]), ("s0.parquet", 2, ["check:nonfinite"]), ("s0.parquet", 9, ["dedup"]),
        ("s1.parquet", 1, ["dedup"]), ("s1.parquet", 3, ["dedup"]), ("s1.parquet", 5, ["dedup"]),
        ("s1.parquet", 7, ["dedup"]), ("s2.parquet", 0, ["dedup"])]
    assert pq.read_table(out / "s1.parquet").column("x").to_pylist() == [0, 2, 4, 6, 8, 9]
    assert json.loads((out / ".dataaudit/clean.json").read_text())["findings"]["dedup"] == [str(text), str(image)]


def test_findings_cover_an_object_only_with_the_audits_size_and_version():
    from dataaudit.clean.safety import CleanRefused, covered

    uri = "s3://b/train/a.jsonl"
    audit = {"size": 6000, "identity": {"ETag": '"e1-1"'}}

    def check(theirs):
        covered([uri], [{"path": uri, "status": "ok", "records": 7, "fingerprint": theirs}], [7], "dedup",
                "records", [audit])

    check({"size": 6000, "identity": {"ETag": '"e1-1"'}})      # the same version: covered
    with pytest.raises(CleanRefused, match=r"^s3://b/train/a.jsonl: the dedup job read other bytes than the audit"):
        check({"size": 6000, "identity": {"ETag": '"e2-1"'}})
    with pytest.raises(CleanRefused, match=r"^s3://b/train/a.jsonl: the dedup job and the audit recorded the file "
                                           r"in different ways \(a version of dataaudit before the other\)"):
        check({"size": 6000, "mtime_ns": 1, "xxh3_128": "0" * 32})
