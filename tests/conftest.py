"""Shared test fixtures: the generated fixture shards, the real data folder, one Ray instance per session."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

# Test modules import helpers as `tests.paths`, `tests.builders`: the repo root must be importable however pytest
# was started (`python -m pytest` puts the current folder first; a bare `pytest` does not).
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.paths import REPO, SHARED_DATA, SHARED_MISSING  # noqa: E402,F401  (REPO: one name for the repo root)

# The twin tests compare numba with numpy on small inputs, which by default take the numpy twin on both sides:
# here numba serves every size unless a test says otherwise (tests/textops/test_numba_small_inputs.py).
os.environ.setdefault("DATAAUDIT_NUMBA_MIN_WORK", "0")
# The suite compares numba's kernels with the twins whatever a `make` left in the user's cache folder; the kernels
# compiled ahead of time are compared with numba's in tests/textops/test_compiled_kernels.py, from a build of its own.
os.environ.setdefault("DATAAUDIT_NO_AOT", "1")

# Property tests draw the same examples on every run (a seed derived from each test): a run never fails on an
# example drawn for the first time, as a CI run did. A case they find is added to its test as an @example.
try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:      # the dev extra is not installed: the property tests cannot run anyway
    pass
else:
    _hypothesis_settings.register_profile("dataaudit", derandomize=True)
    _hypothesis_settings.load_profile("dataaudit")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data folder (../shared/data or $DATAAUDIT_SHARED_DATA); skips the test when it is missing."""
    if not SHARED_DATA.is_dir():
        pytest.skip(SHARED_MISSING)
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
