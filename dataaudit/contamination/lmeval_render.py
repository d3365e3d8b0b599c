"""An lm-eval task's query, answer and choices rendered over a local benchmark file's records.

The harness's conventions (its `ConfigurableTask.doc_to_*` and `utils.apply_template`): a spec that is one of the
record's fields is that field's value; otherwise a Jinja template rendered with the record's fields as variables
(StrictUndefined, trailing newline kept, the `regex_replace` filter). The input is `doc_to_decontamination_query`
when `should_decontaminate` is set, else `doc_to_text` (the harness also runs `ast.literal_eval` on a rendered
decontamination query, which fails on plain text such as `{{question.stem}}`; its rendering is used as it is). `doc_to_target` is a field, an int, a list, or a template
whose digits index `doc_to_choice`, and a `[...]` rendering is a literal list; `doc_to_choice` is a list, a dict
(its values), a field, or a template rendering a list literal (`ast.literal_eval`, never eval). The templates and the
data are untrusted: they render in the bounded immutable sandbox of the chat templates (`tokenization.render`),
never a plain Environment. A spec that is `!function` Python code is not run: a query refuses the task, a target
or choices leave the answer not checked (a note). A plain field name missing from a record, or an undefined
variable, is an error naming the task, the template and the field.

The input matched is the query without the template's literal text before its first and after its last tag
(`Question: {{question}}\nAnswer:` -> the question), which copies of an item often lack; `render_query` gives
the harness's whole query. The answer is the harness's target as text (the correct choice's text when the target indexes the choices). When
every choice is a bare label (`A`..`D`: MMLU's prompt lists the options itself) the choices are not checked and
the answer is looked for as `Answer: C` / `answer is C`, as the presets do.
"""
from __future__ import annotations

import ast
import re
from typing import Any

from .answers import label_answers
from .fields import value_text
from .lmeval_tasks import Entry, Function, LmEvalError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TAG = re.compile(r"\{\{|\{%|\{#|\}\}|%\}|#\}")


def scaffolding(template: str) -> tuple[str, str]:
    """The template's literal text before its first and after its last Jinja tag (`Question: `, `\nAnswer:`)."""
    tags = list(_TAG.finditer(template))
    if not tags:
        return "", ""
    return template[:tags[0].start()], template[tags[-1].end():]


def _regex_replace(string, pattern, repl, count: int = 0):
    return re.sub(pattern, repl, string, count=count)


def _finalize(value):
    """A `{{ }}` that prints an object: the record is not in the task dataset's schema (the AI2 ARC file's
    `question` is an object, the HF export's a string); its repr would be matched as the item's text."""
    if isinstance(value, dict):
        raise LmEvalError(f"prints an object (keys: {', '.join(map(str, list(value)[:8]))}), not text: the "
                          "file is not in the task dataset's schema")
    return value


_ENV = None


def _env():
    global _ENV
    if _ENV is None:
        from jinja2 import StrictUndefined

        from dataaudit.tokenization.render import BoundedSandbox

        _ENV = BoundedSandbox(undefined=StrictUndefined, keep_trailing_newline=True, finalize=_finalize)
        _ENV.filters["regex_replace"] = _regex_replace
    return _ENV


class _Task:
    """One task's specs, compiled once, rendered record by record."""

    def __init__(self, entry: Entry):
        self.name, self.cfg = entry.name, entry.config or {}
        decon = self.cfg.get("should_decontaminate") and self.cfg.get("doc_to_decontamination_query") is not None
        self.query_key = "doc_to_decontamination_query" if decon else "doc_to_text"
        self.query = self.cfg.get(self.query_key)
        if isinstance(self.query, Function):
            raise LmEvalError(f"lm-eval task {self.name!r}: {self.query_key} is {self.query} (Python code, not "
                              f"imported): it cannot be rendered; give the fields: {self.name}=FILE:FIELD")
        if self.query is None or isinstance(self.query, (dict, list, bool)):
            raise LmEvalError(f"lm-eval task {self.name!r}: no {self.query_key} that names a field or a template "
                              f"(found {self.query!r})")
        self.target, self.choice = self.cfg.get("doc_to_target"), self.cfg.get("doc_to_choice")
        self.notes = [f"lm-eval task {self.name!r}: {k} is {v} (Python code, not run): {what}"
                      for k, v, what in (
                          ("process_docs", self.cfg.get("process_docs"), "the file's records are rendered as "
                           "they are"),
                          ("doc_to_target", self.target, "the answer is not checked"),
                          ("doc_to_choice", self.choice, "the choices are not checked"))
                      if isinstance(v, Function)]
        self._compiled: dict[str, Any] = {}

    def _where(self, key: str, spec: str, where: str, doc: dict) -> str:
        have = ", ".join(list(map(str, doc))[:20]) or "none"
        pre = " (the task's process_docs, not run, makes its fields)" if isinstance(
            self.cfg.get("process_docs"), Function) else ""
        return f"lm-eval task {self.name!r}: {key} {spec!r}: {where}{pre}; the record has fields: {have}"

    def _value(self, key: str, spec: Any, doc: dict, where: str) -> tuple[Any, bool]:
        """(value, rendered): the field's value, or the template's rendering (a string)."""
        if isinstance(spec, str) and spec in doc:
            return doc[spec], False
        if not isinstance(spec, str):
            return spec, False
        if _NAME.match(spec):       # a field name the record lacks (the harness would print it as text)
            raise LmEvalError(self._where(key, spec, f"{where}: field {spec!r} not found", doc))
        from jinja2 import TemplateError, UndefinedError

        try:
            tmpl = self._compiled.get(spec) or self._compiled.setdefault(spec, _env().from_string(spec))
            return tmpl.render(**doc), True
        except UndefinedError as exc:
            raise LmEvalError(self._where(key, spec, f"{where}: missing field: {exc.message}", doc)) from None
        except LmEvalError as exc:
            raise LmEvalError(self._where(key, spec, f"{where}: {exc}", doc)) from None
        except (TemplateError, Exception) as exc:     # the template is data: any failure is its error, one line
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise LmEvalError(self._where(key, spec, f"{where}: {msg}", doc)) from None

    def text(self, doc: dict, where: str, full: bool = False) -> str:
        """The query as the harness renders it (`full`), else without the template's literal scaffolding around
        it (copies of an item often lack `Question:` / `Answer:`; an item that is one n-gram would miss them)."""

        v, rendered = self._value(self.query_key, self.query, doc, where)
        try:
            text = value_text(v, self.query_key)
        except Exception as exc:
            raise LmEvalError(self._where(self.query_key, self.query, f"{where}: {exc}", doc)) from None
        if rendered and not full:
            head, tail = scaffolding(self.query)
            if text.startswith(head) and text.endswith(tail) and len(text) >= len(head) + len(tail):
                text = text[len(head):len(text) - len(tail)]
        return text

    def choices(self, doc: dict, where: str) -> list[str] | None:
        spec = self.choice
        if spec is None or isinstance(spec, Function):
            return None
        if isinstance(spec, dict):
            return [str(v) for v in spec.values()]
        v, rendered = self._value("doc_to_choice", spec, doc, where)
        if rendered:
            try:
                v = ast.literal_eval(v)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise LmEvalError(self._where("doc_to_choice", spec, f"{where}: renders {v[:80]!r}, not a list",
                                              doc)) from None
        if not isinstance(v, (list, tuple)):
            raise LmEvalError(self._where("doc_to_choice", spec, f"{where}: is {type(v).__name__}, not a list",
                                          doc))
        return ["" if c is None else str(c) for c in v]

    def targets(self, doc: dict, where: str) -> list[Any]:
        spec = self.target
        if spec is None or isinstance(spec, Function):
            return []
        v, rendered = self._value("doc_to_target", spec, doc, where)
        if rendered:
            if v.isdigit() and self.choice is not None:
                v = int(v)
            elif len(v) >= 2 and v[0] == "[" and v[-1] == "]":
                try:
                    v = ast.literal_eval(v)
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    pass
        return list(v) if isinstance(v, (list, tuple)) else [v]


def _answers(targets: list[Any], choices: list[str] | None) -> list[str]:
    out = []
    for t in targets:
        if isinstance(t, int) and not isinstance(t, bool) and choices is not None:
            if 0 <= t < len(choices):
                out.append(choices[t])
        elif t is not None:
            out.append(str(t))
    return out


def render_query(entry: Entry, doc: dict, where: str = "record") -> str:
    """One record's query exactly as the harness renders it (scaffolding included)."""
    return _Task(entry).text(doc, where, full=True)


def render_task(entry: Entry, records: list[dict], wheres: list[str]
                ) -> tuple[list[str], list[list[str]], list[list[str] | None], list[str]]:
    """(input texts, answers, choices, notes) of every record under the task's specs: the input is the query
    without its scaffolding (`_Task.text`)."""
    task = _Task(entry)
    texts, answers, choices = [], [], []
    labels_only = False
    for doc, where in zip(records, wheres):
        if not isinstance(doc, dict):
            raise LmEvalError(f"lm-eval task {entry.name!r}: {where}: not a record with fields")
        texts.append(task.text(doc, where))
        ch = task.choices(doc, where)
        ans = _answers(task.targets(doc, where), ch)
        if ch is not None and ch and all(len(c.strip()) <= 1 for c in ch):   # bare labels: A, B, C, D
            labels_only = True
            ans = [a for x in ans for a in label_answers(x)]
            ch = None
        answers.append([a for a in ans if a.strip()])
        choices.append([c for c in ch if c.strip()] if ch else None)
    notes = list(task.notes)
    if labels_only:
        notes.append(f"lm-eval task {entry.name!r}: its choices are bare labels: the answer is looked for as "
                     "'Answer: X', the choices are not checked")
    return texts, answers, choices, notes
