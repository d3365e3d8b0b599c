"""A real Ray cluster of two raylets on this machine, for the cluster tests and benchmarks/ray_cluster.py.

`ray start --head` and `ray start --address` as subprocesses, each in a process group of its own (Ray's daemons
stay in it after `ray start` returns), with their own temporary folder and every port chosen free here, so they
never meet another Ray on the machine (the tests' local `ray_session`, another checkout's tests). Every wait is
bounded; `stop()` kills only the process groups started here (`ray stop` would end every Ray of this user).
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY_MISSING = "ray is not installed (pip install 'dataaudit[ray]')"
START_SECONDS = 90.0   # one `ray start` on a loaded 2-core machine: imports, GCS, raylet, agents


class ClusterError(RuntimeError):
    """The cluster did not come up in time: what `ray start` said."""


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _ray_cli() -> str:
    return str(Path(sys.executable).with_name("ray"))


class RayCluster:
    """Two raylets of `num_cpus` CPUs each; `address` is the head's HOST:PORT."""

    def __init__(self, num_cpus: int = 1, nodes: int = 2, object_store_mb: int = 256):
        self.temp = tempfile.mkdtemp(prefix="da-ray-", dir="/tmp")   # short: Ray's socket paths have a length limit
        self.groups: list[int] = []
        self.num_cpus = num_cpus
        self.object_store = str(object_store_mb * 2**20)
        try:
            port = _free_ports(1)[0]
            self.address = f"127.0.0.1:{port}"
            self._start(0, ["--head", "--port", str(port), "--include-dashboard", "false"])
            for n in range(1, nodes):
                self._start(n, ["--address", self.address])
            self._wait_nodes(nodes)
        except BaseException:
            self.stop()
            raise

    def _start(self, n: int, role: list[str]) -> None:
        agent, grpc, runtime_env, metrics, manager, objects, dashboard = _free_ports(7)
        cmd = [_ray_cli(), "start", *role, "--num-cpus", str(self.num_cpus), "--node-ip-address", "127.0.0.1",
               "--temp-dir", os.path.join(self.temp, f"n{n}"), "--disable-usage-stats",
               "--object-store-memory", self.object_store, "--dashboard-agent-listen-port", str(agent),
               "--dashboard-agent-grpc-port", str(grpc), "--runtime-env-agent-port", str(runtime_env),
               "--metrics-export-port", str(metrics), "--node-manager-port", str(manager),
               "--object-manager-port", str(objects), "--dashboard-port", str(dashboard)]
        env = self.env()
        env.pop("RAY_ADDRESS")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
        self.groups.append(proc.pid)     # start_new_session: the group's id is this pid, kept by Ray's daemons
        try:
            out, _ = proc.communicate(timeout=START_SECONDS)
        except subprocess.TimeoutExpired:
            raise ClusterError(f"ray start ({' '.join(role)}) did not return within {START_SECONDS:.0f} s") from None
        if proc.returncode != 0:
            tail = out.decode(errors="replace").strip().splitlines()[-5:]
            raise ClusterError(f"ray start ({' '.join(role)}) exited {proc.returncode}: {' | '.join(tail)}")

    def env(self, **extra: str) -> dict:
        """The environment of a process that joins this cluster: RAY_ADDRESS is its address, and no other RAY_
        variable of this process goes along (a Ray started in this process sets some, RAY_AUTH_MODE among them).
        Ray 2.5x turns token authentication on for `ray start --head` unless told not to, and a token left in ~/.ray
        by another cluster would lock the second raylet out: these clusters listen on 127.0.0.1 only, without."""
        return {**{k: v for k, v in os.environ.items() if not k.startswith("RAY_")}, "RAY_AUTH_MODE": "disabled",
                "RAY_ADDRESS": self.address, **extra}

    def _wait_nodes(self, nodes: int) -> None:
        """`ray status` until it lists `nodes` active nodes (a worker node registers after its `ray start`)."""
        deadline = time.monotonic() + START_SECONDS
        text = ""
        while time.monotonic() < deadline:
            try:
                text = self.status()
            except subprocess.TimeoutExpired:
                text = ""
            if self.active_nodes(text) >= nodes:
                return
            time.sleep(0.5)
        raise ClusterError(f"the cluster at {self.address} has not {nodes} active nodes after {START_SECONDS:.0f} s: "
                           f"{' | '.join(text.strip().splitlines()[:8])}")

    @staticmethod
    def active_nodes(status: str) -> int:
        return len(RayCluster.node_ids(status))

    @staticmethod
    def node_ids(status: str) -> set[str]:
        """The ids of the nodes `ray status` lists under "Active:" (one `1 node_<id>` line each)."""
        lines = status.splitlines()
        try:
            start = next(i for i, line in enumerate(lines) if line.strip() == "Active:")
        except StopIteration:
            return set()
        ids = set()
        for line in lines[start + 1:]:
            word = line.split()[-1] if line.split() else ""
            if not word.startswith("node_"):
                break
            ids.add(word.removeprefix("node_"))
        return ids

    def owns_worker(self, pid: int) -> bool:
        """Whether `pid` is a worker process of this cluster: its parent, a raylet, is in a group started here
        (workers have process groups of their own)."""
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            parent = int(stat.rpartition(")")[2].split()[1])   # the field after the state, past the command name
            return os.getpgid(parent) in self.groups
        except (OSError, ValueError, IndexError):
            return False

    def status(self) -> str:
        return subprocess.run([_ray_cli(), "status", "--address", self.address], capture_output=True, text=True,
                              timeout=30, env=self.env()).stdout

    def stop(self) -> None:
        """SIGTERM to each group started here, SIGKILL to what is left after a bounded wait; the folder removed."""
        for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
            alive = []
            for group in self.groups:
                try:
                    os.killpg(group, sig)
                    alive.append(group)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait
            while alive and time.monotonic() < deadline:
                alive = [g for g in alive if _group_alive(g)]
                time.sleep(0.2)
            if not alive:
                break
        shutil.rmtree(self.temp, ignore_errors=True)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
