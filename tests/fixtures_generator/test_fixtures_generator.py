"""The fixture generator: deterministic bytes, a manifest that covers every check, row counts that match the
shards, and planted defects that are clear-cut.

The last part re-reads every shard with plain pyarrow/tarfile and runs a small reference audit (the check
semantics the fixtures are designed for, written out simply, independent of dataaudit). It must find exactly
the manifest's defects, with every clean sample far below each threshold and every plant far above it, so a
correct audit has no borderline case to disagree on.
"""
from __future__ import annotations

import gzip
import importlib
import hashlib
import io
import json
import re
import subprocess
import sys
import tarfile
import time
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.paths import REPO

gen = importlib.import_module("fixtures.generate")

ALL_CHECKS = (
    "nonfinite", "extreme_span", "constant", "out_of_range", "dtype_mismatch",
    "label_out_of_range", "token_id_out_of_range", "too_long", "all_padding", "mask_mismatch",
    "empty_text", "control_chars", "mojibake", "long_unbroken_run", "repetition", "non_text_ratio",
    "reader_warning", "unreadable_record", "image_constant", "image_value_range", "missing_value",
)
IMAGE_CHECKS = ("image_constant", "image_value_range")   # only the tar's `pixels` is an image tensor
TAR_SHARDS = ("images-000.tar", "captions-000.tar.gz")
PARQUET_SHARDS = ("train-000.parquet", "train-001.parquet")


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("fixtures")
    gen.generate(path)
    return path


@pytest.fixture(scope="module")
def manifest(out) -> dict:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def _hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# --- determinism, speed, CLI -----------------------------------------------------------------------------

def test_two_runs_write_identical_bytes(tmp_path, out):
    start = time.perf_counter()
    returned = gen.generate(tmp_path / "again")
    assert time.perf_counter() - start < 2.0
    first, second = _hashes(out), _hashes(tmp_path / "again")
    assert sorted(first) == sorted([
        "captions-000.tar.gz", "corrupt/not-a-tar.tar", "corrupt/truncated.tar", "images-000.tar",
        "manifest.json", "train-000.parquet", "train-001.parquet"])
    assert first == second
    assert returned == json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def test_cli_writes_the_same_files(tmp_path, out):
    proc = subprocess.run([sys.executable, "-m", "fixtures.generate", str(tmp_path / "cli")], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert _hashes(tmp_path / "cli") == _hashes(out)
    bad = subprocess.run([sys.executable, "-m", "fixtures.generate"], cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_tar_members_carry_no_timestamps_or_owners(out):
    for name in (*TAR_SHARDS, "corrupt/truncated.tar"):
        try:
            with tarfile.open(out / name, "r:*") as tf:
                for m in tf:
                    assert (m.mtime, m.uid, m.gid, m.uname, m.gname) == (0, 0, 0, "", "")
        except tarfile.ReadError:
            assert name == "corrupt/truncated.tar"
    raw = (out / "captions-000.tar.gz").read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0"  # gzip mtime 0


# --- manifest ------------------------------------------------------------------------------------------

def test_manifest_covers_every_check(manifest):
    found = Counter(d["check"] for d in manifest["defects"])
    assert set(found) == set(ALL_CHECKS)
    assert manifest["plants_per_check"] == {c: found[c] for c in ALL_CHECKS}
    # every numeric / label / token / text check is planted at least twice across the shards
    for check in ALL_CHECKS:
        if check not in ("reader_warning", "unreadable_record", "missing_value"):
            assert found[check] >= 2, check


def test_manifest_is_well_formed_and_sorted(manifest):
    defects = manifest["defects"]
    assert all(set(d) == {"shard", "key", "row", "check"} for d in defects)
    assert defects == sorted(defects, key=lambda d: (d["shard"], d["row"], d["check"]))
    assert len({(d["shard"], d["row"], d["check"]) for d in defects}) == len(defects)
    assert all(d["shard"] in manifest["shards"] for d in defects)
    assert manifest["unreadable_shards"] == ["corrupt/truncated.tar", "corrupt/not-a-tar.tar"]
    # nothing is planted in the unreadable shards; the one record the truncation cut is an error row
    in_unreadable = [d for d in defects if d["shard"] in manifest["unreadable_shards"]]
    assert [(d["shard"], d["row"], d["check"]) for d in in_unreadable] == [
        ("corrupt/truncated.tar", manifest["shards"]["corrupt/truncated.tar"]["samples_at_least"],
         "unreadable_record")]
    for d in defects:
        if d["shard"].endswith(".parquet"):
            assert d["key"] == str(d["row"])
    # train-000 plants every numeric/label/token/text check at least twice at scattered rows
    in_000 = Counter(d["check"] for d in defects if d["shard"] == "train-000.parquet")
    for check in ALL_CHECKS:
        if check not in ("reader_warning", "unreadable_record", "dtype_mismatch", "missing_value", *IMAGE_CHECKS):
            assert in_000[check] >= 2, check


# --- row counts -----------------------------------------------------------------------------------------

def test_parquet_row_counts(out, manifest):
    for name in PARQUET_SHARDS:
        meta = pq.read_metadata(out / name)
        assert meta.num_rows == manifest["shards"][name]["samples"]
    assert pq.read_metadata(out / "train-000.parquet").num_row_groups >= 2
    schema = pq.read_schema(out / "train-000.parquet")
    assert [str(t) for t in schema.types] == [
        "string", "int64", "list<element: float>", "list<element: int32>", "list<element: int8>"]


def _split(name: str) -> tuple[str, str]:
    """WebDataset naming: the key is the path up to the first dot of the file name."""
    d, _, base = name.rpartition("/")
    stem, _, suffix = base.partition(".")
    return (f"{d}/{stem}" if d else stem), suffix


def read_tar_records(path: Path) -> list[dict]:
    """Reference WebDataset reader: consecutive members of one key form a record (streaming, no pickle)."""
    records: list[dict] = []
    seen: set[str] = set()
    try:
        with tarfile.open(path, "r|*") as tf:
            for m in tf:
                key, suffix = _split(m.name)
                if not records or records[-1]["key"] != key:
                    records.append({"key": key, "members": {}, "split": key in seen})
                    seen.add(key)
                records[-1]["members"][suffix] = tf.extractfile(m).read()
    except tarfile.ReadError:
        # the shard breaks here: the record in progress is kept as an error row
        records[-1]["truncated"] = True
    return records


def test_tar_record_counts(out, manifest):
    for name in TAR_SHARDS:
        records = read_tar_records(out / name)
        assert len(records) == manifest["shards"][name]["samples"]
        keys = {(d["row"], d["key"]) for d in manifest["defects"] if d["shard"] == name}
        for row, key in keys:
            assert records[row]["key"] == key


def test_truncated_tar_breaks_after_the_stated_records(out, manifest):
    info = manifest["shards"]["corrupt/truncated.tar"]
    data = (out / "corrupt/truncated.tar").read_bytes()
    assert len(data) == info["cut_at_byte"]
    done, names = 0, []
    with pytest.raises(tarfile.ReadError):
        with tarfile.open(fileobj=io.BytesIO(data), mode="r|") as tf:
            for m in tf:
                names.append(m.name)
                tf.extractfile(m).read()
                done += 1
    assert done == info["samples_at_least"] > 0
    # the cut is inside the data of the next member (its header is whole): the reader yields that record
    # too, as an error row
    assert names[-1] == f"part_{done:04d}.txt" and len(names) == done + 1
    assert info["samples"] == done + 1
    assert len(read_tar_records(out / "corrupt/truncated.tar")) == info["samples"]


def test_not_a_tar_is_rejected(out):
    with pytest.raises(tarfile.ReadError):
        with tarfile.open(out / "corrupt/not-a-tar.tar", "r:*") as tf:
            tf.getmembers()


# --- reference audit ------------------------------------------------------------------------------------
# Thresholds of the default checks. Clean samples must stay below MARGIN x threshold, plants above it / MARGIN.

MARGIN = 0.5
DUP_LINE, TOP_NGRAM, DUP_NGRAM = 0.30, {2: 0.20, 3: 0.18, 4: 0.16}, {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12,
                                                                         9: 0.11, 10: 0.10}
NON_TEXT, RUN, SPAN, STD = 0.30, 100, 1e4, 1e-6
CJK = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def repetition_score(text: str) -> float:
    """Largest Gopher repetition statistic divided by its threshold (> 1 means repetitive)."""
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    scores = [(len(lines) - len(set(lines))) / len(lines) / DUP_LINE] if lines else [0.0]
    words = text.split()
    total = sum(map(len, words)) or 1
    for n, thr in TOP_NGRAM.items():
        grams = Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
        if grams:
            gram, count = grams.most_common(1)[0]
            if count > 1:
                scores.append(count * sum(map(len, gram)) / total / thr)
    for n, thr in DUP_NGRAM.items():
        grams = Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
        covered = np.zeros(len(words), bool)
        for i in range(len(words) - n + 1):
            if grams[tuple(words[i:i + n])] > 1:
                covered[i:i + n] = True
        scores.append(sum(len(w) for w, c in zip(words, covered) if c) / total / thr)
    return max(scores)


def non_text_score(text: str) -> float:
    bad = sum(1 for ch in text if unicodedata.category(ch)[0] in "SC" and ch not in "\t\n\r")
    return bad / len(text) / NON_TEXT


def longest_run(text: str) -> int:
    """Longest run of non-whitespace characters, CJK characters breaking runs (CJK has no spaces)."""
    return max((len(piece) for run in text.split() for piece in CJK.split(run)), default=0)


def is_mojibake(text: str) -> bool:
    if "\ufffd" in text:
        return True
    # a run of 2+ non-ASCII chars that is UTF-8 bytes shown as Windows-1252
    for run in re.findall(r"[^\x00-\x7f]{2,}", text):
        try:
            fixed = run.encode("cp1252").decode("utf-8")
        except UnicodeError:
            continue
        if fixed != run:
            return True
    return False


def text_checks(text: str | None, clean: bool) -> set[str]:
    if text is None or not text.strip():
        return {"empty_text"}
    found = set()
    if any(ord(ch) < 32 and ch not in "\t\n\r" for ch in text):
        found.add("control_chars")
    if is_mojibake(text):
        found.add("mojibake")
    scores = {"long_unbroken_run": longest_run(text) / RUN, "repetition": repetition_score(text),
              "non_text_ratio": non_text_score(text)}
    for check, score in scores.items():
        if score > 1:
            found.add(check)
            assert score > 1 / MARGIN, (check, score, text[:80])
        elif clean:
            assert score < MARGIN, (check, score, text[:80])
    return found


def numeric_checks(values: np.ndarray, dtype: str) -> set[str]:
    v = values.astype(np.float64).ravel()
    found = set()
    finite = v[np.isfinite(v)]
    if finite.size < v.size:
        found.add("nonfinite")
    if finite.size and finite.max() - finite.min() > SPAN:
        found.add("extreme_span")
    if finite.size >= 2:
        std = finite.std()
        if std < STD:
            found.add("constant")
        else:
            assert std > 0.1, std
    lo, hi = gen.OUT_OF_RANGE
    considered = v[~np.isnan(v)] if gen.INF_IS_OUT_OF_RANGE else finite
    if ((considered < lo) | (considered > hi)).any():
        found.add("out_of_range")
    else:
        assert np.abs(finite).max() < 10
    if dtype != "float32":
        found.add("dtype_mismatch")
    return found


def image_checks(pixels: np.ndarray) -> set[str]:
    """image_constant (every channel one value) and image_value_range ("normalized": finite values in [-10, 10])
    on a [C, H, W] image; clean pixels are in [0, 1], far from both."""
    v = pixels.astype(np.float64).reshape(pixels.shape[0], -1)
    found = set()
    spans = [c[np.isfinite(c)].max() - c[np.isfinite(c)].min() for c in v if np.isfinite(c).any()]
    if spans and max(spans) <= 1e-6:
        found.add("image_constant")
    else:
        assert not spans or max(spans) > 0.5, spans
    finite = v[np.isfinite(v)]
    if finite.size and np.abs(finite).max() > 10:
        found.add("image_value_range")
    else:
        assert not finite.size or np.abs(finite).max() <= 1.25
    return found


def token_checks(ids: list[int], mask: list[int] | None) -> set[str]:
    found = set()
    if any(i < 0 or i >= gen.VOCAB_SIZE for i in ids):
        found.add("token_id_out_of_range")
    real = sum(mask) if mask is not None else len(ids)
    if real > gen.CONTEXT_LENGTH:
        found.add("too_long")
    if not ids or all(i == gen.PAD_ID for i in ids) or (mask is not None and not any(mask)):
        found.add("all_padding")
    if mask is not None:
        if len(mask) != len(ids) or any((m == 0) != (i == gen.PAD_ID) for i, m in zip(ids, mask)):
            found.add("mask_mismatch")
    return found


def label_checks(label: int | None) -> set[str]:
    if label is None or label == -100:
        return set()
    return set() if 0 <= label < gen.NUM_CLASSES else {"label_out_of_range"}


def reference_audit(out: Path, manifest: dict) -> set[tuple]:
    planted = {(d["shard"], d["row"]) for d in manifest["defects"]}
    flags: set[tuple] = set()

    def emit(shard, key, row, checks):
        flags.update((shard, key, row, c) for c in checks)

    for name in PARQUET_SHARDS:
        table = pq.read_table(out / name).to_pylist()
        for row, rec in enumerate(table):
            clean = (name, row) not in planted
            checks = text_checks(rec["text"], clean)
            checks |= numeric_checks(np.asarray(rec["features"], np.float32), "float32")
            checks |= label_checks(rec["label"])
            checks |= token_checks(rec["input_ids"], rec["attention_mask"])
            emit(name, str(row), row, checks)
    for name in (*TAR_SHARDS, "corrupt/truncated.tar"):
        for row, rec in enumerate(read_tar_records(out / name)):
            members, checks = dict(rec["members"]), set()
            clean = (name, row) not in planted
            if rec.get("truncated"):
                emit(name, rec["key"], row, {"unreadable_record"})
                continue
            if "txt.gz" in members:
                members["txt"] = gzip.decompress(members.pop("txt.gz"))
            try:
                text = members["txt"].decode("utf-8") if "txt" in members else None
            except UnicodeDecodeError:
                emit(name, rec["key"], row, {"unreadable_record"})
                continue
            if rec["split"] or "pkl" in members:
                checks.add("reader_warning")
            if name == "images-000.tar" and not {"pixels.npy", "label.cls"} <= set(members):
                checks.add("missing_value")  # a record of a shard whose others have pixels and a label
            checks |= text_checks(text, clean)
            if "pixels.npy" in members:
                arr = np.load(io.BytesIO(members["pixels.npy"]), allow_pickle=False)
                assert arr.shape == gen.PIXEL_SHAPE
                checks |= numeric_checks(arr, arr.dtype.name) | image_checks(arr)
            if "label.cls" in members:
                checks |= label_checks(int(members["label.cls"].decode("ascii")))
            if "meta.json" in members:
                meta = json.loads(members["meta.json"])
                assert set(meta) == {"url", "width", "height"} and len(meta["url"]) < 60
            emit(name, rec["key"], row, checks)
    return flags


def test_reference_audit_finds_exactly_the_manifest(out, manifest):
    expected = {(d["shard"], d["key"], d["row"], d["check"]) for d in manifest["defects"]}
    found = reference_audit(out, manifest)
    assert sorted(found - expected) == [], "flags not in the manifest"
    assert sorted(expected - found) == [], "manifest entries not found"


def test_truncated_shard_records_are_clean(out, manifest):
    data = (out / "corrupt/truncated.tar").read_bytes()
    texts = []
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r|") as tf:
            for m in tf:
                texts.append(tf.extractfile(m).read().decode("utf-8"))
    except tarfile.ReadError:
        pass
    assert len(texts) == manifest["shards"]["corrupt/truncated.tar"]["samples_at_least"]
    assert all(text_checks(t, clean=True) == set() for t in texts)


def test_clean_text_is_varied_and_sized():
    """Clean documents: 200-1500 chars, no line repeated, static non-Latin and code samples pass."""
    rng = np.random.default_rng(0)
    docs = [gen.english_doc(rng) for _ in range(300)] + [gen.caption_doc(rng) for _ in range(300)]
    for doc in docs:
        assert 200 <= len(doc) <= 1500, doc
        lines = doc.split("\n")
        assert len(lines) == len(set(lines))
    assert len(set(docs)) == len(docs)
    for lang, doc in gen.STATIC_DOCS.items():
        assert text_checks(doc, clean=True) == set(), lang
        assert len(doc) >= 150, lang
    assert longest_run(gen.STATIC_DOCS["zh"]) < 20 and max(map(len, gen.STATIC_DOCS["zh"].split())) >= 150
    assert max(map(len, gen.STATIC_DOCS["ja"].split())) >= 150
