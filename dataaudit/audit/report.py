"""Merge per-shard summaries into the audit report (report.json's content).

Everything outside `run` depends only on the input and the config, so two runs on the same input give the
same report whatever the engine or worker count.
"""
from __future__ import annotations

import os

from dataaudit.atomic import write_json
from dataaudit.audit import FILES
from dataaudit.audit.plan import SHARD_WORDS
from dataaudit.checks import REGISTRY
from dataaudit.config import AuditConfig
from dataaudit.images.probe import REMOTE, STATUS_NAMES
from dataaudit.io import join
from dataaudit.stats.images import merge_states
from dataaudit.stats.media import merge_states as merge_media
from dataaudit.stats.lengths import LengthStats

SCHEMA_VERSION = 1
SHORT_FRACTION = 0.25   # warn when 90% of samples use less than a quarter of the context


def _lengths(summaries: list[dict], config: AuditConfig) -> dict:
    merged: dict[str, LengthStats] = {}
    for s in summaries:
        for key, state in s["lengths"].items():
            stat = LengthStats.from_state(state)
            merged[key] = merged[key].merge(stat) if key in merged else stat
    context = config.data.get("context_length")
    return {k: v.to_json(context if v.unit == "tokens" else None) for k, v in sorted(merged.items())}


RENDERINGS = {
    "chat_template": "conversations rendered with the tokenizer's chat template, then counted in tokens",
    "role_prefixed": "the tokenizer has no chat template: conversations counted as a role-prefixed join "
                     "('<role>: <text>' per turn, one line each)",
}


def _conversation_notes(key: str, stat: dict) -> list[str]:
    """How a conversation field's tokens were counted, and what failed to render."""
    return [f"{key}: {RENDERINGS.get(stat['rendering'], stat['rendering'])}"]


def _render_notes(lengths: dict) -> list[str]:
    """Conversations the chat template failed on: their lengths are not checked (--strict fails on these; the
    trainer's template would fail on them too)."""
    return [f"{key}: {stat['render_errors']} conversations could not be rendered with the chat template and are "
            f"not counted (e.g. {stat['render_error']})"
            for key, stat in lengths.items() if stat.get("rendering") is not None and stat["render_errors"]]


def _over_context_note(key: str, stat: dict, ctx: int) -> str:
    share = stat["over_context"] / stat["count"]
    if key.endswith(REASONING_TOKENS):
        return (f"{key}: the reasoning alone of {stat['over_context']} records ({share:.1%}) is longer than the "
                f"context length {ctx}: where the chat template keeps the reasoning, the answer after it is cut away")
    if stat.get("truncated_replies") is None:
        return (f"{key}: {stat['over_context']} samples ({share:.1%}) are longer than the context length {ctx} "
                "and will be truncated")
    note = (f"{key}: {stat['over_context']} conversations ({share:.1%}) are longer than the context length {ctx}; "
            f"{stat['truncated_replies']} of them lose part of their last assistant reply to truncation")
    if stat["replies_unknown"]:
        note += f" ({stat['replies_unknown']} more could not be told: the template fails on the conversation cut " \
                "after its reply)"
    return note


REASONING_TOKENS = ".reasoning.tokens"


def _notes(lengths: dict, totals: dict) -> list[str]:
    notes = []
    for key, stat in lengths.items():
        if key.endswith(".reasoning") and (answer := lengths.get(key[:-len(".reasoning")] + ".answer")):
            notes.append(f"{key[:-len('.reasoning')]}: {stat['count']} records carry reasoning: a median of "
                         f"{stat['quantiles']['p50']:.0f} characters of reasoning for {answer['quantiles']['p50']:.0f} "
                         "of answer")
        if stat.get("rendering") is not None:
            notes += _conversation_notes(key, stat)
        ctx = stat["context_length"]
        if not ctx or not stat["count"]:
            continue
        p90 = stat["quantiles"]["p90"]
        if p90 is not None and p90 < SHORT_FRACTION * ctx and not key.endswith(REASONING_TOKENS):
            notes.append(f"{key}: 90% of samples have at most {p90:.0f} tokens, under a quarter of the context "
                         f"length {ctx}: most of each sequence is padding unless samples are packed")
        if stat["over_context"]:
            notes.append(_over_context_note(key, stat, ctx))
    return notes


def _unreadable_notes(summaries: list[dict]) -> list[str]:
    """Each shard that could not be read to the end, with the reader's error (its records read before the break
    are counted)."""
    return [f"unreadable shard {s['path']}: {s['error']} (the records read before the break are counted)"
            for s in summaries if s["status"] != "ok"]


def _field_notes(summaries: list[dict], config: AuditConfig) -> list[str]:
    """Never a silent pass: a read shard whose text no check saw, and every column no check reads."""
    notes = []
    configured = config.fields.get("text")
    for s in summaries:
        if not s["records"] and s["status"] == "ok":
            notes.append(f"{s['path']}: warning: no records in it (nothing was checked; in a tar, members without "
                         "an extension belong to no sample, as for webdataset)")
        if s["records"] and not s["fields"].get("text"):
            why = (f"none of the configured text fields ({', '.join(configured)}) is in it" if configured else
                   "no string, list of strings or conversation column")
            notes.append(f"{s['path']}: warning: no text field ({why}): the text checks did not run")
        if s["unchecked"]:
            cols = ", ".join(f"{name} ({kind})" for name, kind in s["unchecked"].items())
            notes.append(f"{s['path']}: warning: not checked by any check: {cols}")
        for kind, section in (("image", "images"), ("media", "media")):
            for name, stats in (s.get(section) or {}).items():
                remote = stats["formats"].get(f"({STATUS_NAMES[REMOTE]})", 0)
                if remote:
                    notes.append(f"{s['path']}: warning: {remote} {kind} reference(s) in {name} are URLs: not "
                                 "fetched, not checked")
    return notes


def _read_notes(summaries: list[dict], config: AuditConfig) -> list[str]:
    """Never a silent all-clear: the Parquet columns `--read checked-columns` did not decode, whose integrity the
    audit therefore did not verify."""
    skipped = {s["path"]: s.get("not_decoded") or [] for s in summaries}
    skipped = {path: cols for path, cols in skipped.items() if cols}
    if not skipped:
        return []
    names = list(dict.fromkeys(c for cols in skipped.values() for c in cols))
    shown = ", ".join(names[:10]) + (f", ... ({len(names) - 10} more)" if len(names) > 10 else "")
    return [f"{len(names)} column(s) not decoded (--read {config.read}) in {len(skipped)} shard(s): {shown}; "
            "whether a loader can decode them was not verified (--read all-columns decodes every "
            "column); see shards[].not_decoded"]


def not_decoded_columns(report: dict) -> int:
    """How many distinct columns the audit did not decode (--read checked-columns), over every shard."""
    return len({c for s in report["shards"] for c in s.get("not_decoded") or []})


def _sections(summaries: list[dict], config: AuditConfig) -> dict[str, dict]:
    """The report sections of the stateful checks (report.json key = the check's name, in registry order): each
    check's shard states merged with its own merge, then shaped by its own section function."""
    out = {}
    for name, spec in REGISTRY.items():
        if spec.state is None:
            continue
        shards = [(s["path"], s.get(name)) for s in summaries]
        total = spec.state.start()
        for _, state in shards:
            if state is not None:
                spec.state.merge(total, state)
        section = spec.state.section(total, shards, config.check(name), config.data)
        if section is not None:
            out[name] = section
    return out


SWEEPING_SHARE = 0.9     # a check with thresholds flagging this share of the records (of at least SWEEPING_MIN)
SWEEPING_MIN = 20


def _sweeping_notes(checks: dict, samples: int) -> list[str]:
    """A check with thresholds that flags nearly every record: its thresholds usually do not fit this data (28-pixel
    MNIST digits are all image_too_small); the note names the settings to change."""
    notes = []
    for name, c in checks.items():
        limits = {k: v for k, v in c["params"].items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if samples < SWEEPING_MIN or not limits or c["flagged"] < SWEEPING_SHARE * samples:
            continue
        settings = ", ".join(f"{k} = {v}" for k, v in list(limits.items())[:4])
        notes.append(f"{name}: flags {c['flagged']} of {samples} records ({c['flagged'] / samples:.0%}): a check "
                     f"that flags nearly everything usually has thresholds that do not fit this data; its settings "
                     f"are per dataset: [checks.{name}] {settings}")
    return notes


def build_report(summaries: list[dict], config: AuditConfig, run: dict, gates: list | None = None) -> dict:
    """report.json from the shards' summaries; `gates`: the --fail-on rules (`dataaudit.audit.gates`), evaluated
    into its `gates`. A sampled audit (config.sample) has its `sample`: what was sampled and each check's rate."""
    samples = sum(s["records"] for s in summaries)
    flagged = sum(s["flagged"] for s in summaries)
    totals = {"samples": samples, "flagged": flagged, "passed": samples - flagged, "shards": len(summaries),
              "unreadable_shards": sum(s["status"] == "unreadable" for s in summaries)}
    checks = {}
    for name, spec in REGISTRY.items():
        settings = config.check(name)
        ran_somewhere = any(name not in s["skipped"] for s in summaries if s["status"] == "ok" or s["records"])
        # a shard's reason says "this shard"; said of the whole job, it names what holds for every shard
        whole = "any shard" if len(summaries) > 1 else "the shard"
        reasons = sorted({s["skipped"][name].replace(SHARD_WORDS, whole) for s in summaries if name in s["skipped"]})
        checks[name] = {
            "severity": settings.severity,
            "flagged": sum(s["checks"].get(name, 0) for s in summaries),
            "ran": ran_somewhere,
            "skipped": None if ran_somewhere else (reasons[0] if reasons else "no readable shard"),
            "params": settings.params,
            "description": spec.description,
        }
    examples: dict[str, list] = {}
    for s in summaries:
        for name, items in s["examples"].items():
            kept = examples.setdefault(name, [])
            kept.extend(items[: 5 - len(kept)])
    lengths = _lengths(summaries, config)
    sections = _sections(summaries, config)
    # wrong-typed configured fields, shards without text, columns no check reads, conversations the template failed
    # on: --strict fails on these
    field_notes = [f"{s['path']}: {p}" for s in summaries for p in s["problems"]] + _field_notes(summaries, config) \
        + _render_notes(lengths)
    totals["field_warnings"] = len(field_notes)
    notes = _notes(lengths, totals) + _unreadable_notes(summaries) + _read_notes(summaries, config) + field_notes \
        + _sweeping_notes(checks, samples)
    for name, section in sections.items():
        notes += REGISTRY[name].state.notes(section)
    report = {
        "schema_version": SCHEMA_VERSION,
        "totals": totals,
        "checks": checks,
        "shards": [{"path": s["path"], "samples": s["records"], "flagged": s["flagged"], "status": s["status"],
                    "error": s["error"], "checks": s["checks"], "fields": s["fields"], "formats": s["formats"],
                    "unchecked": s["unchecked"], "problems": s["problems"], "fingerprint": s.get("fingerprint"),
                    "not_decoded": s.get("not_decoded") or [], "trained_example": s.get("trained_example")}
                   for s in summaries],
        "lengths": lengths,
        "images": merge_states([s.get("images", {}) for s in summaries]),
        "media": merge_media([s.get("media", {}) for s in summaries]),
        "notes": notes,
        "examples": {k: examples[k] for k in REGISTRY if k in examples},   # report order = check order
        "config": config.fingerprint(),
        "run": run,
    }
    report.update(sections)
    severities: dict[str, int] = {}
    for s in summaries:
        for sev, n in (s.get("severities") or {}).items():
            severities[sev] = severities.get(sev, 0) + n
    if config.sample is not None:
        from dataaudit.audit.sample import sample_section

        report["sample"] = sample_section(report, config.sample, summaries)
        notes.insert(0, report["sample"]["note"])
    if gates:
        from dataaudit.audit.gates import evaluate

        report["gates"] = evaluate(gates, report, severities)
    return report



def write_report(out_dir: str | os.PathLike, report: dict) -> None:
    """The record and its page."""
    from dataaudit.report.pages import write_report_html   # rendering loads Jinja2

    write_json(join(out_dir, FILES.record), report)
    write_report_html(join(out_dir, FILES.page), report)


def has_errors(report: dict) -> bool:
    """Exit-code rule: anything at error severity, or a shard that could not be read."""
    if report["totals"]["unreadable_shards"]:
        return True
    return any(c["severity"] == "error" and c["flagged"] for c in report["checks"].values())
