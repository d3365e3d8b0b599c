"""A real two-raylet Ray cluster, started once per test session for the tests that ask for it, stopped after."""
from __future__ import annotations

import importlib.util

import pytest

from tests.pipelines.ray_cluster import RAY_MISSING, RayCluster


@pytest.fixture(scope="session")
def ray_cluster():
    """Two raylets of 1 CPU each (`ray start --head`, `ray start --address`), subprocesses with their own temporary
    folder and ports. The pytest process may be connected to a local Ray (the `ray_session` fixture), and one
    process joins one Ray: the tests drive this cluster from subprocesses only."""
    if importlib.util.find_spec("ray") is None:
        pytest.skip(RAY_MISSING)
    cluster = RayCluster(num_cpus=1, nodes=2)
    yield cluster
    cluster.stop()
