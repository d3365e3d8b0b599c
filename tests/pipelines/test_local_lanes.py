"""The local engine with --workers N: this process and N - 1 spawned workers share the items, each taking the
next when free; every item is done once, errors from either side come through."""
from __future__ import annotations

import os

import pytest

from dataaudit.pipelines.engine import EngineOptions
from dataaudit.pipelines.tasks import run_tasks


def square(x, add=0):
    return os.getpid(), x * x + add


def fail_on(x, bad):
    if x == bad:
        raise ValueError(f"item {x} failed")
    return os.getpid(), x


def test_every_item_once_across_this_process_and_the_workers():
    got = {}

    def on_done(index, item, result):
        assert index not in got
        got[index] = result

    run_tasks(list(enumerate(range(9))), square, (), on_done, engine="local", options=EngineOptions("local", workers=3),
              processes=True, add=1)
    assert [got[i][1] for i in range(9)] == [i * i + 1 for i in range(9)]
    pids = {pid for pid, _ in got.values()}
    assert os.getpid() in pids and len(pids) >= 2   # this process took items, and at least one worker did


@pytest.mark.parametrize("bad", [0, 1])   # workers=2: item 0 goes to the worker, item 1 to this process
def test_an_error_in_either_lane_comes_through(bad):
    done = []
    with pytest.raises(ValueError, match=f"item {bad} failed"):
        run_tasks(list(enumerate(range(6))), fail_on, (bad,), lambda i, item, r: done.append(i), engine="local",
                  options=EngineOptions("local", workers=2), processes=True)
    assert bad not in done
