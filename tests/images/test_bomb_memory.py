"""A 40,000 x 40,000 PNG (1.6 billion pixels, 1.6 GB decoded) in the input: flagged image_bomb from its header,
never decoded; the whole audit stays far below 2 GB of memory."""
from __future__ import annotations

import json
import subprocess
import sys

from fixtures.image_data import write_png_bomb
from tests.builders import make_tar
from tests.images.image_shards import picture


def test_a_40000_px_png_is_flagged_without_decoding_it(tmp_path):
    bomb = tmp_path / "bomb.png"
    write_png_bomb(bomb, 40_000, 40_000, bit_depth=8)
    shard = make_tar(tmp_path / "s.tar", [("a.png", bomb.read_bytes()), ("a.txt", b"a bomb"),
                                          ("b.jpg", picture(seed=1)), ("b.txt", b"fine")])
    # VmHWM is the child's own peak: ru_maxrss would carry over the pytest parent's high-water mark through the
    # spawn (Linux keeps the larger of the old and new address space's at exec), 3 GB late in a full run.
    code = ("import sys; from dataaudit.cli import main; "
            "sys.argv = ['dataaudit', 'audit', sys.argv[1], '--out', sys.argv[2], '--engine', 'local'];\n"
            "try: main()\nexcept SystemExit as e: code = e.code\n"
            "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1];"
            "print('PEAK', hwm); sys.exit(code)")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", code, str(shard), str(out)], capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 1, proc.stderr[-2000:]
    peak_kib = int(proc.stdout.rsplit("PEAK", 1)[1].split()[0])
    assert peak_kib < 2 * 1024 * 1024, f"peak RSS {peak_kib} KiB"
    report = json.loads((out / "report.json").read_text())
    assert report["checks"]["image_bomb"]["flagged"] == 1 and report["totals"]["flagged"] == 1
    [example] = report["examples"]["image_bomb"]
    assert example["key"] == "a" and example["value"] == 1.6e9
    assert "thumbnail" in example and example["thumbnail"] is None     # never decoded, not even for the report
