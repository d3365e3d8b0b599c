"""Shared test fixtures: the generated fixture shards, the real data folder, one Ray instance per session."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"real test data folder missing: {SHARED_DATA} (the repo expects ../shared/data beside it)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def fixture_dir(tmp_path_factory) -> Path:
    from fixtures.generate import generate

    out = tmp_path_factory.mktemp("fixtures")
    generate(out)
    return out


@pytest.fixture(scope="session")
def manifest(fixture_dir) -> dict:
    return json.loads((fixture_dir / "manifest.json").read_text())


@pytest.fixture(scope="session")
def ray_session():
    ray = pytest.importorskip("ray")
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()
