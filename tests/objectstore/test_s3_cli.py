"""Every command's shards and outputs on an S3-compatible server (moto, tests/objectstore/conftest.py), through the
CLI as a user runs it: the same flags as the audit of local copies, --out s3:// with resume, clean from s3 to s3
with the bytes of a local clean, and a missing object, wrong credentials or a stopped server reported as an
unreadable shard naming the URI with the provider's message."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.cli.paths import expand_shards
from tests.objectstore.conftest import MotoServer, s3_environment

SHARDS = ["a.parquet", "b.jsonl", "sub/c.tar"]


def cli(*args) -> tuple[int, str]:
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return r.exit_code, r.output


def flag_rows(table) -> list[tuple]:
    """The flags with each shard named relative to its train/ folder (a local path and a URI name the same shard)."""
    return sorted((r["shard"].rpartition("train/")[2], r["row"], r["check"], r["severity"], r["field"], r["detail"])
                  for r in table.to_pylist())


def test_audit_of_a_prefix_and_globs_gives_the_flags_of_the_local_copies(tmp_path, bucket, corpus):
    code, _ = cli("audit", corpus, "--out", tmp_path / "local-out", "--engine", "local")
    assert code == 1
    code, out = cli("audit", bucket.uri("train/"), "--out", tmp_path / "s3-out", "--engine", "local")
    assert code == 1, out
    local, remote = (pq.read_table(tmp_path / d / "flags.parquet") for d in ("local-out", "s3-out"))
    assert flag_rows(remote) == flag_rows(local)
    assert [r[:3] for r in flag_rows(remote)] == [
        ("a.parquet", 5, "empty_text"), ("a.parquet", 11, "nonfinite"), ("b.jsonl", 3, "empty_text"),
        ("b.jsonl", 7, "unreadable_record"), ("sub/c.tar", 4, "empty_text")]
    report = json.loads((tmp_path / "s3-out" / "report.json").read_text())
    assert [s["path"] for s in report["shards"]] == [bucket.uri(f"train/{s}") for s in SHARDS]
    assert [s["samples"] for s in report["shards"]] == [60, 40, 20]
    assert expand_shards([bucket.uri("train/**/*.tar"), bucket.uri("train/*.jsonl")]) == \
        [bucket.uri("train/sub/c.tar"), bucket.uri("train/b.jsonl")]


def test_out_on_s3_is_written_whole_and_a_rerun_resumes_to_the_same_outputs(tmp_path, bucket, corpus):
    out = bucket.uri("out/")
    code, text = cli("audit", bucket.uri("train/"), "--out", out, "--engine", "local")
    assert code == 1, text
    assert f"wrote {bucket.uri('out/report.json')}" in " ".join(text.split())
    first = {k: bucket.get(k) for k in ("out/flags.parquet", "out/report.html")}
    keys = bucket.keys("out")
    assert {"out/report.json", "out/flags.parquet", "out/report.html"} <= set(keys)
    assert not [k for k in keys if k.endswith(".tmp")]
    parts = [k for k in keys if k.startswith("out/parts/") and k.endswith(".json")]
    assert len(parts) == 3
    # a run killed after two shards: its last part's marker (written last), and the job's outputs, never written
    for k in (parts[-1], "out/report.json", "out/flags.parquet", "out/report.html"):
        bucket.fs.delete_file(f"{bucket.name}/{k}")
    code, text = cli("audit", bucket.uri("train/"), "--out", out, "--engine", "local")
    assert code == 1 and "reused 2 finished shards" in text
    assert bucket.get("out/flags.parquet") == first["out/flags.parquet"]
    report = json.loads(bucket.get("out/report.json"))
    assert report["run"]["resumed_shards"] == 2 and report["totals"]["flagged"] == 5


def test_clean_from_s3_to_s3_writes_the_bytes_of_a_local_clean(tmp_path, bucket, corpus):
    assert cli("audit", corpus, "--out", tmp_path / "audit", "--engine", "local")[0] == 1
    code, text = cli("clean", corpus, "--audit", tmp_path / "audit", "--out", tmp_path / "clean", "--engine", "local")
    assert code == 0, text
    assert cli("audit", bucket.uri("train/"), "--out", bucket.uri("audit"), "--engine", "local")[0] == 1
    code, text = cli("clean", bucket.uri("train/"), "--audit", bucket.uri("audit"), "--out", bucket.uri("clean/"),
                     "--engine", "local")
    assert code == 0, text
    for name in SHARDS:
        assert bucket.get(f"clean/{name}") == (tmp_path / "clean" / name).read_bytes(), name
    assert pq.read_table(tmp_path / "clean" / "a.parquet").num_rows == 59     # the NaN row dropped


def _unreadable(tmp_path, *args) -> list[dict]:
    code, text = cli("audit", *args, "--out", tmp_path / "o", "--engine", "local")
    assert code == 1, text
    assert "Traceback" not in text
    return [s for s in json.loads((tmp_path / "o" / "report.json").read_text())["shards"] if s["status"] != "ok"]


def test_a_missing_object_is_an_unreadable_shard_the_others_are_read(tmp_path, bucket, corpus):
    missing = bucket.uri("train/gone.parquet")
    bad = _unreadable(tmp_path, bucket.uri("train/a.parquet"), missing)
    assert [s["path"] for s in bad] == [missing]
    assert "Path does not exist" in bad[0]["error"] and f"{bucket.name}/train/gone.parquet" in bad[0]["error"]


def test_wrong_credentials_are_an_unreadable_shard_with_the_providers_message(tmp_path, bucket, corpus,
                                                                               moto_server, monkeypatch):
    s3_environment(monkeypatch, moto_server, key="AKIAWRONGWRONGWRONG0", secret="wrong")
    bad = _unreadable(tmp_path, bucket.uri("train/a.parquet"), bucket.uri("train/b.jsonl"))
    assert [s["path"] for s in bad] == [bucket.uri("train/a.parquet"), bucket.uri("train/b.jsonl")]
    assert all("ACCESS_DENIED" in s["error"] for s in bad), bad
    code, text = cli("audit", bucket.uri("train/"), "--out", tmp_path / "p")     # a prefix: nothing to report
    assert code == 2 and text.startswith(f"Error: {bucket.uri('train/')}: ") and "ACCESS_DENIED" in text
    assert len(text.strip().splitlines()) == 1


def test_a_stopped_server_is_an_unreadable_shard_within_seconds(tmp_path, monkeypatch):
    server = MotoServer(auth=False)
    try:
        s3_environment(monkeypatch, server)
        fs = server.filesystem()
        fs.create_dir("gone")
        with fs.open_output_stream("gone/a.jsonl") as f:
            f.write(b'{"text": "hello"}\n')
    finally:
        server.stop()
    bad = _unreadable(tmp_path, "s3://gone/a.jsonl", "--storage-option", "retry_max_attempts=1")
    assert [s["path"] for s in bad] == ["s3://gone/a.jsonl"]
    assert "Could not connect" in bad[0]["error"] and f"127.0.0.1:{server.port}" in bad[0]["error"]


def test_storage_options_set_the_endpoint_and_an_unknown_key_is_one_line(tmp_path, bucket, corpus, moto_server,
                                                                          monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    code, text = cli("audit", bucket.uri("train/a.parquet"), "--out", tmp_path / "o", "--engine", "local",
                     "--storage-option", f"endpoint_override={moto_server.url}", "--storage-option", "region=us-east-1")
    assert code == 1, text
    assert json.loads((tmp_path / "o" / "report.json").read_text())["totals"]["samples"] == 60
    code, text = cli("audit", bucket.uri("train/a.parquet"), "--out", tmp_path / "p", "--storage-option", "colour=red")
    assert code == 2 and text.startswith("Error: --storage-option 'colour': unknown key (known: access_key, ")
    assert len(text.strip().splitlines()) == 1
    code, text = cli("dedup", bucket.uri("train/a.parquet"), "--out", tmp_path / "q", "--storage-option",
                     "retry_max_attempts=many")
    assert code == 2 and "retry_max_attempts=many: invalid literal for int()" in text


def test_dedup_and_contamination_read_shards_from_s3_as_the_local_copies(tmp_path, bucket, corpus):
    for name, where in (("local", corpus), ("s3", bucket.uri("train/"))):
        code, text = cli("dedup", where, "--out", tmp_path / f"d-{name}", "--engine", "local")
        assert code == 0, text
    local, remote = (json.loads((tmp_path / f"d-{n}" / "dedup.json").read_text()) for n in ("local", "s3"))
    assert [s["path"] for s in remote["shards"]] == [bucket.uri(f"train/{s}") for s in SHARDS]
    assert remote["exact"] == local["exact"] == {"groups": 1, "documents": 2, "duplicates": 1}   # rows 8, 9
    assert (remote["near"], remote["kept"]) == (local["near"], local["kept"])
    keep = [pq.read_table(tmp_path / f"d-{n}" / "keep.parquet") for n in ("local", "s3")]
    assert [(r["shard"].rpartition("train/")[2], r["row"]) for r in keep[1].to_pylist()] == \
        [(r["shard"].rpartition("train/")[2], r["row"]) for r in keep[0].to_pylist()]
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"q": pq.read_table(corpus / "a.parquet").column("text")[20].as_py()}) + "\n")
    code, text = cli("contamination", "--train", bucket.uri("train/*.parquet"), "--benchmark", f"b={bench}:q",
                     "--out", tmp_path / "c", "--engine", "local")
    assert code == 1, text
    report = json.loads((tmp_path / "c" / "contamination.json").read_text())
    assert report["totals"]["contaminated"] == 1 and report["totals"]["train_records"] == 60


def test_an_out_in_a_bucket_that_does_not_exist_is_one_line(tmp_path, bucket, corpus):
    out = f"s3://{bucket.name}-missing/out/"
    code, text = cli("audit", bucket.uri("train/a.parquet"), "--out", out)
    assert code == 2
    assert text.strip() == f"Error: {out}: cannot create output folder: Bucket '{bucket.name}-missing' not found. " \
                           "To create buckets, enable the allow_bucket_creation option."


def test_an_audit_into_s3_killed_mid_run_resumes_to_the_bytes_of_an_undisturbed_run(tmp_path, bucket, moto_server):
    import os
    import signal
    import subprocess
    import sys
    import time

    import numpy as np
    import pyarrow as pa

    from dataaudit.io import changed
    from tests.paths import REPO

    rng = np.random.default_rng(3)
    data = tmp_path / "data"
    data.mkdir()
    for s in range(4):
        texts = [f"shard {s} row {i} " + " ".join(map(str, rng.integers(0, 1000, 30))) for i in range(10_000)]
        texts[7] = ""
        pq.write_table(pa.table({"text": texts}), data / f"part-{s}.parquet", row_group_size=5_000)
    bucket.put(data, "train")
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def audit(out: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "dataaudit.cli", "audit", bucket.uri("train/"), "--out", out,
                                 "--engine", "local"], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)

    run = audit(bucket.uri("killed"))
    deadline = time.monotonic() + 60
    while not [k for k in bucket.keys("killed/parts") if k.endswith(".json")] and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    markers = [k for k in bucket.keys("killed/parts") if k.endswith(".json")]
    assert 1 <= len(markers) < 4 and "killed/report.json" not in bucket.keys("killed")   # stopped mid-run
    finished = [json.loads(bucket.get(k))["summary"] for k in markers]   # what the killed run recorded
    assert run.returncode == -signal.SIGKILL
    # the rerun in a process like the killed one's (this process's registry and settings may hold what other tests
    # left: a part names the job's settings and code); the reference in this process
    rerun = audit(bucket.uri("killed"))
    err = rerun.communicate(timeout=120)[1]
    assert rerun.returncode == 0, err.decode()[-2000:]
    assert cli("audit", bucket.uri("train/"), "--out", bucket.uri("undisturbed"), "--engine", "local")[0] == 0

    assert bucket.get("killed/flags.parquet") == bucket.get("undisturbed/flags.parquet")
    resumed = json.loads(bucket.get("killed/report.json"))["run"]["resumed_shards"]
    # (twice, under a loaded full run, no part was taken: say why if it happens again; job: the parts' digests of
    # the job's settings and code, the killed run's and the rerun's)
    jobs = sorted({json.loads(bucket.get(k))["job"] for k in bucket.keys("killed/parts") if k.endswith(".json")})
    assert resumed == len(markers), (jobs, [(s["path"], s.get("fingerprint"), changed(s["path"], s.get("fingerprint")))
                                            for s in finished])
    assert not [k for k in bucket.keys() if k.endswith(".tmp")]


def test_array_job_slices_and_merge_in_a_bucket_write_the_report_of_one_job(tmp_path, bucket, corpus):
    code, _ = cli("audit", corpus, "--out", tmp_path / "single", "--engine", "local")
    assert code == 1
    out = bucket.uri("array/")
    for i in range(2):
        code, text = cli("audit", corpus, "--out", out, "--engine", "local", "--shard-index", i, "--num-shards", 2)
        assert code == 0, text
        assert f"slice {i} of 2" in text
    assert {"array/parts/slices/00000-of-00002.json", "array/parts/slices/00001-of-00002.json"} <= \
        set(bucket.keys("array"))
    code, text = cli("merge", out)
    assert code == 1, text           # the audit's exit rule: errors found
    one, two = json.loads((tmp_path / "single" / "report.json").read_text()), json.loads(bucket.get("array/report.json"))
    assert two["run"]["engine"] == "merge" and two["run"]["merged_shards"] == 3
    one.pop("run"), two.pop("run")
    assert two == one
    assert bucket.get("array/flags.parquet") == (tmp_path / "single" / "flags.parquet").read_bytes()
    code, text = cli("merge", bucket.uri("nothing-here/"))
    assert code == 2 and "no slice manifest" in text


def test_media_a_shard_in_a_store_names_resolve_inside_its_prefix_as_beside_a_local_shard(tmp_path, bucket):
    """A JSONL shard in a bucket naming images beside it: they are read from the bucket (never taken for missing
    local files, which `clean` would drop as errors), a path that leaves the shard's prefix is refused unread, the
    flags are those of the same files on local disk, and `clean` copies the images its kept records name."""
    from tests.images.image_shards import picture, write_jsonl

    data = tmp_path / "local" / "train"
    (data / "imgs").mkdir(parents=True)
    (data / "imgs" / "ok.jpg").write_bytes(picture(seed=3))
    (tmp_path / "local" / "secret.jpg").write_bytes(picture(seed=4))   # in the bucket, outside the shard's prefix
    write_jsonl(data / "pairs.jsonl", [{"image": "imgs/ok.jpg", "text": "fine"},
                                       {"image": "imgs/../imgs/ok.jpg", "text": "the same, another way"},
                                       {"image": "../secret.jpg", "text": "dot-dot"},
                                       {"image": "imgs/gone.jpg", "text": "missing"}])
    bucket.put(tmp_path / "local", "")
    flags = {}
    for name, shard in (("local", data / "pairs.jsonl"), ("s3", bucket.uri("train/pairs.jsonl"))):
        code, out = cli("audit", shard, "--out", tmp_path / name, "--engine", "local")
        assert code == 1, out
        flags[name] = flag_rows(pq.read_table(tmp_path / name / "flags.parquet"))
        report = json.loads((tmp_path / name / "report.json").read_text())
        assert report["images"]["image"]["decoded"] == 2, name
    assert [(row, check) for _, row, check, *_ in flags["s3"]] == [(2, "image_path_outside"),
                                                                  (3, "image_missing_file")]
    assert flags["s3"] == flags["local"]
    # clean copies the images its kept records name from the bucket, as from a local folder
    code, out = cli("clean", bucket.uri("train/pairs.jsonl"), "--audit", tmp_path / "s3", "--out", tmp_path / "clean",
                    "--engine", "local")
    assert code == 0, out
    kept = [json.loads(line)["image"] for line in (tmp_path / "clean" / "pairs.jsonl").read_text().splitlines()]
    assert kept == ["imgs/ok.jpg", "imgs/../imgs/ok.jpg"]
    assert (tmp_path / "clean" / "imgs" / "ok.jpg").read_bytes() == (data / "imgs" / "ok.jpg").read_bytes()


def test_clean_of_shards_in_a_store_writes_the_registry_beside_them_naming_the_files_written(tmp_path, bucket):
    """LLaMA-Factory's dataset_info.json beside shards in a bucket is copied into the cleaned folder as beside local
    shards: only the entries whose file was written, one removed entry said why."""
    from tests.images.image_shards import write_jsonl

    data = tmp_path / "local" / "train"
    data.mkdir(parents=True)
    write_jsonl(data / "a.jsonl", [{"instruction": f"say {w}", "output": f"{w} it is"} for w in ("one", "two")])
    (data / "dataset_info.json").write_text(json.dumps({"a": {"file_name": "a.jsonl"},
                                                         "gone": {"file_name": "gone.jsonl"}}))
    bucket.put(tmp_path / "local", "")
    outs = {}
    for name, shard in (("local", data / "a.jsonl"), ("s3", bucket.uri("train/a.jsonl"))):
        assert cli("audit", shard, "--out", tmp_path / f"audit-{name}", "--engine", "local")[0] in (0, 1)
        code, out = cli("clean", shard, "--audit", tmp_path / f"audit-{name}", "--out", tmp_path / f"clean-{name}",
                        "--engine", "local")
        assert code == 0, out
        outs[name] = json.loads((tmp_path / f"clean-{name}" / "dataset_info.json").read_text())
    assert outs["s3"] == outs["local"] == {"a": {"file_name": "a.jsonl"}}
