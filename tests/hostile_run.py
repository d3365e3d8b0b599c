"""Run the command line on a hostile input in a child process, bounded: its exit code, output, seconds and peak
memory, for the hostile-input suite (tests/e2e/test_hostile_*.py).

Each run is a fresh interpreter, so its peak RSS is its own (the pytest process's high-water mark would carry
over), and a hang is a failed assertion after `timeout` seconds, never a stuck suite.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.paths import REPO

# The bounds for every hostile input: a finished report within 60 s, peak RSS under 2 GB.
SECONDS = 60
PEAK_MIB = 2048

# Runs the command in a child and prints its peak RSS (KiB) and CPU seconds last on stderr: RUSAGE_CHILDREN after
# the wait is the largest peak among the children this wrapper waited for (the command and the workers it reaped),
# and their CPU time. A small wrapper spawns the command, not pytest: Linux carries the spawner's high-water mark
# into ru_maxrss at exec, and pytest's own is ~3 GB late in a full run.
_WRAPPER = (
    "import resource, subprocess, sys\n"
    "rc = subprocess.run(sys.argv[1:]).returncode\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "sys.stderr.write('\\n@peak_kib %d %.3f\\n' % (u.ru_maxrss, u.ru_utime + u.ru_stime))\n"
    "sys.exit(rc)\n"
)


@dataclass
class Outcome:
    rc: int
    stdout: str
    stderr: str
    seconds: float
    peak_mib: int
    cpu_seconds: float = -1.0

    def report(self, out: Path, name: str = "report.json") -> dict:
        """The JSON report the command wrote in `out`."""
        return json.loads((Path(out) / name).read_text())

    def assert_bounded(self, seconds: float = SECONDS, peak_mib: int = PEAK_MIB) -> None:
        """No traceback, within the time and memory bounds. The time is the CPU time the command spent (its workers'
        too): the work an input costs, the same on a quiet machine and on one shared with other jobs (a hang is
        caught by `run_cli`'s timeout)."""
        assert "Traceback" not in self.stderr, self.stderr[-3000:]
        assert 0 <= self.cpu_seconds < seconds, (self.cpu_seconds, self.seconds, self.stderr[-2000:])
        assert self.peak_mib < peak_mib, self.peak_mib


def run_cli(*args, cwd: Path | str = REPO, timeout: float = SECONDS + 30, env: dict | None = None,
            python: list[str] | None = None) -> Outcome:
    """`python -m dataaudit.cli ARGS` in a child, killed (a failed test, not a hang) after `timeout` seconds.
    `python` replaces the interpreter invocation (e.g. `[sys.executable, "-c", code]` to run Python code)."""
    import signal
    import time

    command = python or [sys.executable, "-m", "dataaudit.cli"]
    environment = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    start = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", _WRAPPER, *command, *map(str, args)], cwd=str(cwd),
                         env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)   # its own process group: a hang is killed with its workers
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise AssertionError(f"hung: no exit within {timeout} s: {args}") from None
    seconds = time.perf_counter() - start
    stderr, _, peak = stderr.rpartition("\n@peak_kib ")
    kib, cpu = (peak.split() + ["-1", "-1"])[:2]
    return Outcome(p.returncode, stdout, stderr, seconds, int(kib) // 1024, float(cpu))

