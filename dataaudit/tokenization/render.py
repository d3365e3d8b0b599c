"""Chat templates rendered within a time and a size budget: a template is code from the tokenizer's folder, and
nested `range(100000)` loops would render for hours, a 300 MB rendering would abort the tokenizers library.

The environment is Jinja2's immutable sandbox (as transformers uses: no Python objects, no files). On top of it
every step the template takes is counted against the render's deadline: each call, attribute or item lookup,
intercepted operator and each item of a `range`; and the output is streamed (`Template.generate`) and measured
chunk by chunk. String and list repetition (`'x' * n`) and a namespace attribute holding more than the size
budget are refused before they are built. Past a budget the render raises RenderBudgetError (a TemplateError:
the conversation, or the drift probe, fails with its one-line reason, never the process). A template that ran
out of time on GIVE_UP_AFTER conversations is not rendered again (each later one fails at once): the
template, not the data, is what is slow, and the job must end.
"""
from __future__ import annotations

import threading
import time
from datetime import datetime, timezone

from jinja2 import Template
from jinja2.sandbox import ImmutableSandboxedEnvironment, safe_range
from jinja2.utils import Namespace


# Budgets of one rendering. Constants (a [data] key would be a new config setting): a chat conversation renders
# in milliseconds and in about its own size; 16 Mi characters is ~4 M tokens, far over any context length.
RENDER_SECONDS = 1.0
RENDER_MAX_CHARS = 16 << 20
GIVE_UP_AFTER = 3
_TICKS = 256          # steps between two looks at the clock


class TemplateError(Exception):
    """What a template's `raise_exception(message)` raises, and a rendering past its budget."""


def _raise(message):
    raise TemplateError(message)


def sandbox() -> "BoundedSandbox":
    """The environment every chat template is rendered in (here and in the audit's conversation lengths): Jinja2's
    immutable sandbox with transformers' settings (trim_blocks, lstrip_blocks, loop controls), rendering within
    the budgets above, its `raise_exception` (raises TemplateError) and a fixed `strftime_now` (a rendering never
    depends on the day)."""
    from jinja2.ext import loopcontrols

    env = BoundedSandbox(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: datetime(2024, 1, 1, tzinfo=timezone.utc).strftime(fmt)
    return env


class RenderBudgetError(TemplateError):
    """A rendering that ran past its time or size budget (its message says which)."""


class RenderTimeout(RenderBudgetError):
    """A rendering that ran past RENDER_SECONDS."""


def _too_long() -> RenderBudgetError:
    return RenderBudgetError(f"chat template rendering over {RENDER_MAX_CHARS} characters (not tokenized)")


class _Budget(threading.local):
    deadline: float | None = None
    ticks: int = 0


class BoundedTemplate(Template):
    """A template whose `render` streams its output within RENDER_SECONDS and RENDER_MAX_CHARS."""

    timeouts: int = 0       # renders of this template that ran out of time (per template: set on the instance)

    def render(self, *args, **kwargs) -> str:
        env: BoundedSandbox = self.environment      # type: ignore[assignment]
        if self.timeouts >= GIVE_UP_AFTER:
            raise RenderBudgetError(f"chat template ran over {RENDER_SECONDS:g} s on {self.timeouts} conversations: "
                                    "not rendered again")
        budget = env.budget
        outer = budget.deadline
        budget.deadline = time.monotonic() + RENDER_SECONDS if outer is None else outer
        try:
            out, size = [], 0
            for chunk in self.generate(*args, **kwargs):
                size += len(chunk)
                if size > RENDER_MAX_CHARS:
                    raise _too_long()
                out.append(chunk)
                env.tick()
            return "".join(out)
        except RenderTimeout:
            self.timeouts += 1
            raise
        finally:
            budget.deadline = outer


class _BoundedNamespace(Namespace):
    """`namespace()`: an attribute may not hold more than the size budget (a value doubled in a loop)."""

    def __setitem__(self, name, value):
        if isinstance(value, (str, list, tuple)) and len(value) > RENDER_MAX_CHARS:
            raise _too_long()
        super().__setitem__(name, value)


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, counting the template's steps against the current render's deadline."""

    template_class = BoundedTemplate
    intercepted_binops = frozenset(("*", "**", "+"))

    def __init__(self, **options):
        super().__init__(**options)
        self.budget = _Budget()
        self.globals["range"] = self._range
        self.globals["namespace"] = _BoundedNamespace

    def tick(self) -> None:
        b = self.budget
        b.ticks += 1
        if b.ticks % _TICKS == 0 and b.deadline is not None and time.monotonic() > b.deadline:
            raise RenderTimeout(f"chat template rendering ran over {RENDER_SECONDS:g} s (stopped)")

    def _range(self, *args) -> "_Range":
        return _Range(safe_range(*args), self.tick)     # the sandbox's own MAX_RANGE

    def call_binop(self, context, operator, left, right):
        self.tick()
        if operator == "*":             # 'x' * n, [..] * n: refused before it is built
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > RENDER_MAX_CHARS:
                    raise _too_long()
        if operator == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)) \
                and len(left) + len(right) > RENDER_MAX_CHARS:
            raise _too_long()
        if operator == "**" and isinstance(right, int) and abs(right) > 4096:   # a number of millions of digits
            raise RenderBudgetError(f"chat template computes a power of {right} (refused)")
        return super().call_binop(context, operator, left, right)

    def getattr(self, obj, attribute):
        self.tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj, argument):
        self.tick()
        return super().getitem(obj, argument)

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (jinja2's signature)
        __self.tick()
        return super().call(__context, __obj, *args, **kwargs)


class _Range:
    """A range whose every item taken is a step of the render (len, indexing and `in` as a range's)."""

    def __init__(self, rng: range, tick):
        self._rng, self._tick = rng, tick

    def __iter__(self):
        for i in self._rng:
            self._tick()
            yield i

    def __reversed__(self):
        return iter(_Range(self._rng[::-1], self._tick))

    def __len__(self) -> int:
        return len(self._rng)

    def __getitem__(self, key):
        item = self._rng[key]
        return _Range(item, self._tick) if isinstance(item, range) else item

    def __contains__(self, item) -> bool:
        return item in self._rng

    def __repr__(self) -> str:
        return repr(self._rng)
