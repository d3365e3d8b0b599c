"""The guard as a webdataset stage, and the audit's tar reader keying samples exactly as webdataset does.

Keys: our `__key__` (dataaudit.sources.webdataset_tar) against webdataset's own, on the real
../shared/data/webdataset/testgz.tar and on a generated tar with tricky names (dots in folder and file names,
nested folders, upper-case extensions, members webdataset does not group into samples)."""
from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest

from dataaudit.sources.webdataset_tar import iter_webdataset
from dataaudit.provenance import KEY

wds = pytest.importorskip("webdataset")
pytest.importorskip("torch")


def _our_keys(path) -> list[str]:
    return [k for b in iter_webdataset(str(path)) for k in b.column(KEY).to_pylist()]


def _wds_keys(path) -> list[str]:
    return [s["__key__"] for s in wds.WebDataset(str(path), shardshuffle=False, empty_check=False)]


def _tar(path, members: list[tuple[str, bytes]]) -> str:
    with tarfile.open(path, "w") as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return str(path)


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def test_keys_match_webdataset_on_the_real_tar(shared_data):
    path = shared_data / "webdataset" / "testgz.tar"
    ours = _our_keys(path)
    assert len(ours) == 1000
    assert ours == _wds_keys(path)


TRICKY = [
    ("a.txt", b"plain"),
    ("a.meta.json", b'{"x": 1}'),
    ("v1.2/b.txt", b"folder with a dot"),
    ("v1.2/b.seg.0.txt", b"several dots after the key"),
    ("deep/er/c.TXT", b"upper-case extension"),
    ("deep/er/c.cls", b"3"),
    ("d.e.f.txt", b"key ends at the first dot"),
    ("README", b"no extension: webdataset groups it into no sample"),
    ("dir/.hidden.txt", b"basename starting with a dot: key 'dir/'"),
    ("__meta__", b"webdataset's metadata member, skipped"),
    ("e.txt", b"last"),
]


def test_keys_match_webdataset_on_tricky_names(tmp_path):
    path = _tar(tmp_path / "tricky.tar", TRICKY)
    expected = ["a", "v1.2/b", "deep/er/c", "d", "dir/", "e"]   # README and __meta__ are in no sample
    assert _wds_keys(path) == expected
    assert _our_keys(path) == expected


def _guarded_tar(tmp_path) -> str:
    members = []
    for i, (features, label) in enumerate([([0.5, 1.0], 1), ([np.nan, 1.0], 2), ([0.1, 0.2], 7), ([2.0, 3.0], 0)]):
        members += [(f"s{i:03d}.features.npy", _npy(np.array(features, np.float32))),
                    (f"s{i:03d}.cls", str(label).encode())]
    return _tar(tmp_path / "train-000.tar", members)


def _config(tmp_path) -> str:
    cfg = tmp_path / "audit.toml"
    cfg.write_text('[fields]\nlabel = "cls"\nnumeric = ["features.npy"]\n[data]\nnum_classes = 5\n')
    return str(cfg)


def test_guard_stage_drops_flagged_samples_in_a_webdataset_pipeline(tmp_path):
    from dataaudit.guard.webdataset_stage import guard_stage

    path = _guarded_tar(tmp_path)
    stage = guard_stage(_config(tmp_path), group=3)
    out = list(wds.WebDataset(path, shardshuffle=False, empty_check=False).decode().compose(stage))
    assert [s["__key__"] for s in out] == ["s000", "s003"]          # NaN feature (s001), class 7 of 5 (s002)
    assert [s["__shard__"] for s in out] == [path, path]
    assert [int(s["cls"]) for s in out] == [1, 0]
    assert (stage.checked, stage.dropped) == (4, 2)


def test_guard_stage_keeps_and_logs_without_drop(tmp_path, caplog):
    from dataaudit.guard.webdataset_stage import guard_stage

    path = _guarded_tar(tmp_path)
    stage = guard_stage(_config(tmp_path), drop=False)
    with caplog.at_level("WARNING", logger="dataaudit.guard"):
        out = list(wds.WebDataset(path, shardshuffle=False, empty_check=False).decode().compose(stage))
    assert [s["__key__"] for s in out] == ["s000", "s001", "s002", "s003"]
    assert (stage.checked, stage.dropped) == (4, 0)
    assert [r.getMessage() for r in caplog.records] == [
        f"webdataset guard stage: flagged 2 of 4 samples: {path}:s001 (nonfinite:features.npy), "
        f"{path}:s002 (label_out_of_range:cls)"]


def test_our_reader_reads_what_the_pipeline_keys(tmp_path):
    """The audit's reader and the pipeline agree on the samples of the guarded tar too (labels by key)."""
    path = _guarded_tar(tmp_path)
    batches = list(iter_webdataset(path))
    ours = {k: c for b in batches for k, c in zip(b.column(KEY).to_pylist(), b.column("cls").to_pylist())}
    theirs = {s["__key__"]: int(s["cls"]) for s in wds.WebDataset(path, shardshuffle=False, empty_check=False)
              .decode()}
    assert ours == theirs == {"s000": 1, "s001": 2, "s002": 7, "s003": 0}


def test_a_none_sample_is_dropped_as_null_sample_not_a_crash():
    from dataaudit.guard.webdataset_stage import guard_stage

    stage = guard_stage(fields={"numeric": ["x.npy"]})
    good = {"__key__": "a", "__url__": "u.tar", "x.npy": np.ones(2, np.float32)}
    out = list(stage(iter([good, None])))
    assert [s["__key__"] for s in out] == ["a"]
    assert (stage.checked, stage.dropped) == (2, 1)
