"""`dedup --with-images`: a record's identity is its text plus its images (issue 31, item 3): the same text with
other images is no duplicate; the same text with the same images is, exact or near (a text edited slightly)."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
from click.testing import CliRunner

from dataaudit.cli import main
from tests.images.image_shards import picture, write_jsonl

QUESTION = "Look at the picture carefully and describe every object you can see in it, with its colour and place."
LONG = (QUESTION + " Then say which of them is the largest, which is the smallest, and whether any of them is moving. "
        "Finish with one sentence on the light: where it comes from, how strong it is, and what it falls on.")


def _dedup(shard, out, *extra) -> tuple[dict, list[int]]:
    res = CliRunner().invoke(main, ["dedup", str(shard), "--out", str(out), "--engine", "local", *extra])
    assert res.exit_code == 0, res.output
    report = json.loads((out / "dedup.json").read_text())
    return report, pq.read_table(out / "keep.parquet").column("row").to_pylist()


def _pictures(folder, n: int) -> list[str]:
    for k in range(n):
        (folder / f"{k}.jpg").write_bytes(picture(64, 48, seed=100 + k))
    return [f"{k}.jpg" for k in range(n)]


def test_each_text_with_three_different_images_drops_nothing(tmp_path):
    names = _pictures(tmp_path, 3)
    texts = [QUESTION, "What is written on the sign in this photo? Read it out word by word please, all of it."]
    shard = write_jsonl(tmp_path / "s.jsonl", [{"text": t, "image": n} for t in texts for n in names])
    report, kept = _dedup(shard, tmp_path / "joint", "--with-images")
    assert (report["duplicates"], kept) == (0, [0, 1, 2, 3, 4, 5])
    assert report["params"]["with_images"] is True
    assert any(n.startswith("--with-images: a record is its text plus its images' bytes (xxh3-64 of each of 6")
               for n in report["notes"])
    report, kept = _dedup(shard, tmp_path / "text")                 # text alone: 4 of 6 dropped
    assert (report["duplicates"], kept) == (4, [0, 3])


def test_true_text_and_image_duplicates_are_all_found(tmp_path):
    names = _pictures(tmp_path, 2)
    shard = write_jsonl(tmp_path / "s.jsonl", [
        {"text": QUESTION, "image": names[0]},                          # 0
        {"text": QUESTION, "image": names[0]},                          # 1: exact copy of 0
        {"text": LONG, "image": names[0]},                              # 2
        {"text": LONG + " Thanks.", "image": names[0]},                 # 3: near copy of 2 (a word added)
        {"text": LONG + " Thanks.", "image": names[1]},                 # 4: other image: kept
        {"text": QUESTION, "image": "missing.jpg"},                     # 5: its image unread: kept (own identity)
        {"text": QUESTION, "image": "missing.jpg"},                     # 6: the same record as 5
        {"text": QUESTION},                                             # 7: no image: kept
        {"text": QUESTION},                                             # 8: text-only copy of 7
    ])
    report, kept = _dedup(shard, tmp_path / "out", "--with-images")
    clusters = pq.read_table(tmp_path / "out" / "clusters.parquet").to_pylist()
    assert [(c["row"], c["cluster_id"], c["kind"]) for c in clusters] == [
        (0, 0, "exact"), (1, 0, "exact"), (2, 1, "near"), (3, 1, "near"), (5, 2, "exact"), (6, 2, "exact"),
        (7, 3, "exact"), (8, 3, "exact")]
    assert kept == [0, 2, 4, 5, 7]
    assert "2 images could not be read" in " ".join(report["notes"])


def test_image_order_and_count_are_part_of_the_identity(tmp_path):
    """[a, b], [b, a] and [a] with the same text are three records: "<image><image>Which one is brighter, the first
    or the second?" has another answer when the images swap. [a, b] twice is a duplicate."""
    a, b = _pictures(tmp_path, 2)
    shard = write_jsonl(tmp_path / "s.jsonl", [{"text": QUESTION, "images": imgs}
                                               for imgs in ([a, b], [b, a], [a], [a, b], [a, a])])
    report, kept = _dedup(shard, tmp_path / "out", "--with-images")
    assert (report["duplicates"], kept) == (1, [0, 1, 2, 4])


def test_against_compares_text_and_images(tmp_path):
    """A benchmark question asked of another picture is no copy; the same question with the same picture is."""
    a, b = _pictures(tmp_path, 2)
    train = write_jsonl(tmp_path / "train.jsonl", [{"text": QUESTION, "image": a}, {"text": LONG, "image": b}])
    val = write_jsonl(tmp_path / "val.jsonl", [{"text": QUESTION, "image": b}, {"text": LONG, "image": b}])
    res = CliRunner().invoke(main, ["dedup", str(train), "--against", str(val), "--out", str(tmp_path / "out"),
                                    "--engine", "local", "--with-images"])
    assert res.exit_code == 1, res.output          # a leak
    overlap = pq.read_table(tmp_path / "out" / "overlap.parquet").to_pylist()
    assert [(r["row"], r["match"], [t["row"] for t in r["train"]]) for r in overlap] == [(0, "none", []),
                                                                                         (1, "exact", [1])]
