"""An audit on a running Ray cluster whose stage, on its first attempt at one shard, writes its worker's PID to a
file and waits to be killed (the test SIGKILLs it from outside); every other attempt audits as usual.

    python tests/pipelines/ray_kill_driver.py ADDRESS OUT PID_FILE VICTIM_SHARD CONFIG SHARD...
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

WAIT_SECONDS = 60.0   # a stage never killed gives up: the job fails instead of hanging


@dataclass(frozen=True)
class WaitToBeKilled:
    """The audit stage (audit_shard's signature). Defined in __main__, so Ray's cloudpickle ships it by value."""

    pid_file: str
    victim: str

    def __call__(self, path, config, **kwargs):
        from dataaudit.audit.shard import audit_shard

        if path == self.victim and not os.path.exists(self.pid_file):
            tmp = f"{self.pid_file}.tmp"
            with open(tmp, "w") as f:
                f.write(str(os.getpid()))
            os.replace(tmp, self.pid_file)   # the test sees the whole PID or nothing
            deadline = time.monotonic() + WAIT_SECONDS
            while time.monotonic() < deadline:
                time.sleep(0.05)
            raise RuntimeError(f"worker {os.getpid()} was not killed within {WAIT_SECONDS:.0f} s")
        return audit_shard(path, config, **kwargs)


def main(address, out, pid_file, victim, config_path, *shards) -> None:
    from dataaudit.config import load_config
    from dataaudit.pipelines.audit import run_audit
    from dataaudit.pipelines.engine import EngineOptions

    run_audit(list(shards), load_config(config_path), out, options=EngineOptions("ray", address),
              stage=WaitToBeKilled(pid_file, victim))


if __name__ == "__main__":
    main(*sys.argv[1:])
