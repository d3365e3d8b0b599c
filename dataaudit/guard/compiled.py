"""A guard's per-step tensor work through torch.compile, with eager as the fallback (`compile=True`).

Eagerly each small op is a kernel launch, and on a GPU a step's checks (about 80 launches for an image tensor,
labels and token ids with their mask) or its loss test (about 50) cost more in launches than in bandwidth.
`CompiledCall(fn, backend, what)` runs the same function fused by torch.compile instead:

- its first call runs eagerly (it settles what the function reads: the plan resolved, the state allocated, fill
  values refused with their own errors); later calls go through `torch.compile(fn, fullgraph=True)`;
- a compiled call that fails (no Triton, no C++ compiler, a graph break) is run eagerly, and so is every later
  call: the reason is logged once and kept in `failure`. A real error of the data or the settings is then raised
  by the eager run, as it would have been without compile.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

import torch

log = logging.getLogger("dataaudit.guard")


def backend_of(compile: Any):
    """The torch.compile backend a guard's `compile` option names (None: eager)."""
    return None if compile is False else ("inductor" if compile is True else compile)


class CompiledCall:
    """fn(*args), eagerly on the first call and compiled after (see the module doc). backend: None (always
    eager), a torch.compile backend name or callable. what: named in the warning when compiling fails."""

    def __init__(self, fn: Callable, backend: Any, what: str):
        self.fn, self.backend, self.what = fn, backend, what
        self.calls = self.compiled_calls = 0
        self.failure: str | None = None
        self._compiled = None

    def __call__(self, *args):
        self.calls += 1
        if self.backend is None or self.calls == 1 or self.failure is not None:
            return self.fn(*args)
        if self._compiled is None:
            self._compiled = torch.compile(self.fn, backend=self.backend, fullgraph=True)
        try:
            out = self._compiled(*args)
        except Exception as e:  # noqa: BLE001 (any failure to compile: the eager run gives the real error, if any)
            self.failure = _reason(e)
            log.warning("guard: torch.compile of %s failed (%s); it runs eagerly", self.what, self.failure)
            return self.fn(*args)
        self.compiled_calls += 1
        return out

    def summary(self) -> Any:
        """False (eager by choice), True (compiled), or why compiling was given up."""
        return False if self.backend is None else (self.failure or True)


def _reason(e: BaseException) -> str:
    """One line: the innermost error's type and first line (torch wraps a backend's error in its own)."""
    while getattr(e, "inner_exception", None) is not None or e.__cause__ is not None:
        e = getattr(e, "inner_exception", None) or e.__cause__
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0][:200]}" if lines else type(e).__name__


__all__ = ["CompiledCall", "backend_of"]
