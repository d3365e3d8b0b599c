"""Each guard test runs in its own tmp_path: a guard writes its snapshots to `guard_snapshots/` under the working
folder by default (a skip writes one too), and spawned ranks inherit the folder, so no test leaves files in the
checkout."""
import pytest


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
