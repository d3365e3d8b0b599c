"""Every command example of README.md runs as written, from a folder holding only what a clone ships (`fixtures/`,
`examples/`): each `dataaudit ...` line of its bash blocks, in order (the clean example reads the audit and dedup
before it), exits 0 or 1 (data findings), never 2 (a usage error: a path or option that does not exist) or with a
traceback. The tokenizer-drift example first runs docs/tokenizer-drift.md's script, which builds its two tokenizers.
The replay example names a snapshot of the reader's own training run: it is only checked to be a replay command."""
from __future__ import annotations

import importlib.util
import re
import shlex

import pytest

from tests.paths import REPO
from tests.report.chromium import run_as_a_user, tokenizer_script

NEEDS = ("torch", "PIL", "tokenizers")


def _bash_commands(text: str) -> list[str]:
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for command in block.replace("\\\n", " ").splitlines():
            command = command.split("  #")[0].strip()
            if command.startswith("dataaudit "):
                commands.append(command)
    return commands


def test_readme_commands_run_on_the_shipped_files(tmp_path):
    absent = [m for m in NEEDS if importlib.util.find_spec(m) is None]
    if absent:
        pytest.skip(f"the README's examples need {', '.join(absent)}: pip install -e '.[all]'")
    for name in ("fixtures", "examples"):
        (tmp_path / name).symlink_to(REPO / name, target_is_directory=True)
    commands = _bash_commands((REPO / "README.md").read_text(encoding="utf-8"))
    names = [shlex.split(c)[1] for c in commands]
    assert {"audit", "dedup", "dedup-images", "contamination", "clean", "tokenizer-drift", "replay"} <= set(names)
    (tmp_path / "make_tokenizers.py").write_text(tokenizer_script(), encoding="utf-8")
    run_as_a_user(tmp_path, "make_tokenizers.py")
    for command in commands:
        args = shlex.split(command)[1:]
        if args[0] == "replay":
            assert "--model" in args
            continue
        run_as_a_user(tmp_path, "-m", "dataaudit.cli", *args, timeout=240)
