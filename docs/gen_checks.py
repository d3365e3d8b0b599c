"""Write docs/checks.md, the checks reference, from the check registry (`dataaudit.checks.REGISTRY`).

    .venv/bin/python docs/gen_checks.py           # rewrite docs/checks.md
    .venv/bin/python docs/gen_checks.py --check   # exit 1 when docs/checks.md differs from what it would write

The page is never edited by hand: a check's name, targets, severity, parameters and description live in its
`@register(...)` call, and tests/docs/test_checks_page.py fails while the committed page differs from `render()`.
Nothing else imports this file (the CLI never loads it).
"""
from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "checks.md"
WIDTH = 116

# What each target kind is called on the page (dataaudit/checks/base.py documents the kinds).
TARGETS = {
    "numeric": "numeric fields",
    "label": "labels",
    "tokens": "token ids (+ mask)",
    "token_ids": "token ids",
    "trained": "trained tokens",
    "image_tensor": "image tensors",
    "text": "text",
    "json": "JSON fields and turns",
    "conversation": "conversations",
    "tool_use": "tool calls",
    "ids": "record ids",
    "image": "images",
    "pairs": "image-text pairs",
    "media": "video and audio files",
    "media_pairs": "records with video or audio",
    "text_tokens": "text + token ids",
    "reader": "reader",
    "samples": "samples (collate guard)",
    "pair": "preference pairs",
    "kto": "KTO records",
    "ranked": "ranked responses",
    "rendered": "rendered records",
    "rendered_pair": "preference pairs, rendered",
}
TURNS = {"assistant": "assistant turns", "other": "text but assistant turns",
         "trained": "text (assistant turns and flat text)"}
# A wrapped line must not start a Markdown block inside a paragraph (a heading, a quote, a list, a setext line).
_BLOCK_START = re.compile(r"^(#|>|[-+*=|]|\d+[.)](\s|$))")
_CODE = re.compile(r"(`[^`]*`)")


def _escape(text: str) -> str:
    """Markdown-safe prose: what is outside code spans gets `<`, `>` and `*` escaped (tags such as <think> are
    text here, not HTML)."""
    if text.count("`") % 2:
        raise ValueError(f"unbalanced backticks in: {text[:80]}...")
    parts = _CODE.split(text)
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("*", r"\*")
    return "".join(parts)


def _wrap(text: str) -> list[str]:
    lines = textwrap.wrap(text, WIDTH, break_long_words=False, break_on_hyphens=False)
    out: list[str] = []
    for line in lines:
        while out and _BLOCK_START.match(line):
            word, _, line = line.partition(" ")
            out[-1] += " " + word
            if not line:
                break
        if line:
            out.append(line)
    return out


def _param(name: str, default) -> str:
    """A parameter with its default as the page shows it; a long list as its elements, each its own code span."""
    if isinstance(default, (list, tuple)) and len(default) > 4:
        return f"`{name}` = [" + ", ".join(f"`{x}`" for x in default) + "]"
    if isinstance(default, tuple):
        default = list(default)
    return f"`{name}={default!r}`"


def _runs_on(spec) -> str:
    kinds = []
    for target in spec.targets:
        name = TARGETS.get(target.kind, target.kind)
        if target.kind == "text" and spec.turns:
            name = TURNS[spec.turns]
        if name not in kinds:
            kinds.append(name)
    return ", ".join(kinds)


def _needs(required) -> str:
    return " and ".join(" or ".join(f"`{p}`" for p in ((r,) if isinstance(r, str) else r)) for r in required)


def _facts(spec) -> list[str]:
    """The check's facts as list items: where it runs, its parameters with their defaults (and the `[data]` keys
    that fill them), what must be set before it runs, the parameters a target fixes."""
    first = f"**Runs on** {_runs_on(spec)}. **Severity** {spec.severity}."
    if not spec.default_enabled:
        first += " **Off by default**: `--profile pretrain` or `[checks.NAME] enabled = true` turns it on."
    if spec.guard_default is not None:
        first += " *Guard default.*"
    items = [first]
    filled = {param: key for key, param in spec.data.items()}
    params = []
    for name, default in spec.params.items():
        item = _param(name, default)
        if name in filled:
            item += f" (from `[data] {filled[name]}`)"
        params.append(item)
    if params:
        items.append("**Parameters**: " + ", ".join(params) + ".")
    needs = []
    if spec.required:
        needs.append(f"needs {_needs(spec.required)}")
    for target in spec.targets:
        if target.required:
            needs.append(f"on {TARGETS.get(target.kind, target.kind)} it needs {_needs(target.required)}")
    if needs:
        items.append("**Required**: " + "; ".join(needs) + " (else it is skipped, with the reason).")
    for target in spec.targets:
        for k, v in target.params.items():
            items.append(f"**On {TARGETS.get(target.kind, target.kind)}**: `{k}={v!r}`, whatever the config says.")
    out = []
    for item in items:
        lines = _wrap(item)
        out.append("- " + lines[0])
        out += ["  " + line for line in lines[1:]]
    return out


def render() -> str:
    from dataaudit.checks import REGISTRY

    head = [
        "# Checks",
        "",
        "<!-- Generated by docs/gen_checks.py from dataaudit.checks.REGISTRY: do not edit by hand. -->",
        "",
        "Every check of the audit and the training guard, in report order. Severities: `error` fails the run (exit 1),",
        "`warning` and `info` are reported only. Every check's severity and parameters can be changed in the",
        "[config](config.md) (`[checks.NAME] severity = \"error\"`, `enabled = false`, its parameters), and a check",
        "whose required setting is missing is reported as skipped with the reason, never silently passed. A `value`",
        "is what the check measured on the flagged sample (a count, a length, a ratio), as `flags.parquet` and the",
        "report show it. Checks marked *guard default* also run in the [training guard](guard.md) by default.",
        "",
        "| check | runs on | severity |",
        "| --- | --- | --- |",
    ]
    body = []
    for name, spec in REGISTRY.items():
        off = "" if spec.default_enabled else " (off by default)"
        head.append(f"| [`{name}`](#{name}) | {_runs_on(spec)} | {spec.severity}{off} |")
        body += ["", f"## `{name}` {{#{name}}}", ""]
        body += _facts(spec)
        body.append("")
        body += _wrap(_escape(" ".join(spec.description.split())))
    return "\n".join(head + body) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        same = PAGE.is_file() and PAGE.read_text(encoding="utf-8") == text
        print("docs/checks.md is up to date" if same else "docs/checks.md differs: run docs/gen_checks.py")
        return 0 if same else 1
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    raise SystemExit(main(sys.argv[1:]))
