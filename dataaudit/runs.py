"""Consecutive items in runs that hold at most a byte budget together: what a reader hands on at once."""
from __future__ import annotations

from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


def runs_within(sized: Iterable[tuple[T, int]], budget: int) -> Iterator[list[T]]:
    """The items of (item, size) pairs, in order, in runs of total size <= budget (an item larger than the budget
    is a run alone)."""
    run: list[T] = []
    held = 0
    for item, size in sized:
        if run and held + size > budget:
            yield run
            run, held = [], 0
        run.append(item)
        held += size
    if run:
        yield run
