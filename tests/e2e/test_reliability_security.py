"""Untrusted data: nothing unpickled or eval'd, every data string escaped in HTML, outputs stay in --out."""
from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path

from click.testing import CliRunner

from dataaudit.cli import main
from tests.paths import REPO

PAYLOAD = "<script>alert('x')</script>"


def _evil_tar(folder: Path) -> Path:
    path = folder / f"evil{PAYLOAD.replace('/', '_')}.tar"
    with tarfile.open(path, "w") as tf:
        for name, data in [(f"{PAYLOAD}.txt", f"{PAYLOAD} with a \x00 control char".encode()),
                           ("plain.txt", f"an innocent caption, then {PAYLOAD}\x07".encode()),
                           ("plain.pkl", b"cos\nsystem\n(S'touch /tmp/pwned-by-dataaudit'\ntR.")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def test_script_payloads_in_text_keys_and_file_names_are_escaped(tmp_path):
    shard = _evil_tar(tmp_path)
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["audit", str(shard), "--out", str(out), "--engine", "local"])
    assert res.exit_code in (0, 1), res.output
    html = (out / "report.html").read_text()
    assert "<script" not in html.lower()
    assert html.count("&lt;script&gt;") >= 3        # in a text snippet, a key and the shard file name
    assert not Path("/tmp/pwned-by-dataaudit").exists()


def test_outputs_stay_inside_out(tmp_path):
    shard = _evil_tar(tmp_path)
    before = {p for p in tmp_path.rglob("*")}
    out = tmp_path / "out"
    CliRunner().invoke(main, ["audit", str(shard), "--out", str(out), "--engine", "local"])
    created = {p for p in tmp_path.rglob("*")} - before
    assert created and all(out == p or out in p.parents for p in created)


def test_no_unpickling_or_eval_where_data_flows():
    pattern = re.compile(r"pickle\.loads?\(|torch\.load\(|\beval\(|\bexec\(|allow_pickle\s*=\s*True|"
                         r"yaml\.load\(|marshal\.loads?\(")
    hits = [f"{p}:{i}" for folder in ("dataaudit", "pipelines") for p in (REPO / folder).rglob("*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert hits == []
