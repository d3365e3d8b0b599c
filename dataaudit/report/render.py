"""The one place HTML is rendered: a single Jinja2 environment over dataaudit/report/templates/.

Autoescaping is on for every template, so every string that comes from data (text snippets, keys, file names,
errors, tokens) is escaped; only what a page marks safe itself (the audit's SVG charts) is not. The `visible`
filter shows control and invisible characters so a person sees what a check saw.
"""
from __future__ import annotations

import functools
import json
import os
import re

from jinja2 import Environment, FileSystemBytecodeCache, PackageLoader

from dataaudit.cache import cache_folder
from dataaudit.atomic import write_text

_INVISIBLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\ufeff]")


def visible(text) -> str:
    """Control and invisible characters shown as \\xNN / \\uNNNN so a person sees what the check saw."""
    if text is None:
        return ""
    return _INVISIBLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                          else f"\\u{ord(m.group()):04x}", str(text))


_WHITESPACE_SHOWN = {" ": "\u2420", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def token(text) -> str:
    """A token as a person can see it: `visible`, and a token made only of whitespace spelled out (␠ for a space,
    \\t, \\n, ...) instead of a blank cell; the empty string as (empty)."""
    if text is None:
        return ""
    text = str(text)
    if text == "":
        return "(empty)"
    if not text.strip():
        return "".join(_WHITESPACE_SHOWN.get(c, f"\\u{ord(c):04x}") for c in text)
    return visible(text)


def dumps(value) -> str:
    """A value as compact JSON, keys sorted, non-ASCII kept (tokenizer settings shown as they are stored)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class _CompiledTemplates(FileSystemBytecodeCache):
    """Jinja2's compiled templates kept in the cache folder (compiling report.html takes ~0.04 s, a tenth of a small
    command), keyed by Jinja2 on each template's source. A cache that cannot be read or written is no error: the
    template is compiled again."""

    def load_bytecode(self, bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # noqa: BLE001 - a damaged or unreadable file: compile the template instead
            bucket.reset()

    def dump_bytecode(self, bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


@functools.cache
def _environment() -> Environment:
    folder = cache_folder() / "templates"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        cache = _CompiledTemplates(str(folder))
    except OSError:
        cache = None
    env = Environment(loader=PackageLoader("dataaudit.report", "templates"), autoescape=True, bytecode_cache=cache)
    env.filters["visible"] = visible
    env.filters["token"] = token
    env.filters["dumps"] = dumps
    return env


def render(template_name: str, **context) -> str:
    """The page `template_name` (a file in report/templates/) rendered with `context`."""
    return _environment().get_template(template_name).render(**context)


def write_page(path: str | os.PathLike, **context) -> None:
    """Render a page and write it atomically (a reader never sees half a page). A page's template has the page's
    own file name (report.html renders templates/report.html), so the name is spelled once, by the job."""
    write_text(path, render(os.path.basename(os.fspath(path)), **context))
