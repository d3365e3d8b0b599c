"""Audit one shard: the unit of work, of failure and of resume.

Returns a small mergeable summary plus the shard's flags. An unreadable shard is a result too (status
`unreadable` with the reader's error), never an exception: the job goes on with the other shards.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa

from dataaudit.audit.batch import FLAG_SCHEMA, audit_batch, flag_table
from dataaudit.audit.plan import FieldPlan, resolve_plan
from dataaudit.checks import REGISTRY
from dataaudit.config import AuditConfig
from dataaudit.sources import ShardReadError, iter_shard, read_schema
from dataaudit.stats.lengths import LengthStats
from dataaudit.stats.token_lengths import load_tokenizer
from dataaudit.tokenization.audit_drift import cached_bundle, drift_batch, empty_state, merge_state


@dataclass
class ShardResult:
    path: str
    samples: int = 0
    flagged: int = 0
    status: str = "ok"
    error: str | None = None
    checks: Counter = field(default_factory=Counter)       # check -> flagged samples
    lengths: dict[str, LengthStats] = field(default_factory=dict)
    examples: dict[str, list[dict]] = field(default_factory=dict)
    fields: dict[str, list[str]] = field(default_factory=dict)   # role -> columns the checks ran on
    skipped: dict[str, str] = field(default_factory=dict)        # check -> why it did not run here
    problems: list[str] = field(default_factory=list)            # wrong-typed configured columns
    # Stored token ids vs the inference tokenizer ([data] inference_tokenizer); None when not configured.
    tokenizer_drift: dict | None = None

    def summary(self) -> dict:
        return {
            "path": self.path, "samples": self.samples, "flagged": self.flagged, "status": self.status,
            "error": self.error, "checks": dict(sorted(self.checks.items())),
            "lengths": {k: v.state() for k, v in sorted(self.lengths.items())},
            "examples": self.examples, "fields": self.fields, "skipped": dict(sorted(self.skipped.items())),
            "problems": self.problems, "tokenizer_drift": self.tokenizer_drift,
        }


def _note_plan(result: ShardResult, plan: FieldPlan) -> None:
    roles = {"text": [plan.text], "numeric": list(plan.numeric), "label": [plan.label],
             "input_ids": [plan.input_ids], "attention_mask": [plan.attention_mask]}
    for role, cols in roles.items():
        for col in cols:
            if col and col not in result.fields.setdefault(role, []):
                result.fields[role].append(col)
    for name, why in plan.skipped.items():
        result.skipped.setdefault(name, why)
    result.problems += [p for p in plan.problems if p not in result.problems]


def _context_for(stat_key: str, plan: FieldPlan, config: AuditConfig) -> int | None:
    if stat_key.endswith(".tokens") or stat_key == plan.input_ids:
        return config.data.get("context_length")
    return None


def audit_shard(path: str, config: AuditConfig, batch_rows: int = 4096, examples_per_check: int = 5,
                device=None, on_batch: Callable[[int], None] | None = None) -> tuple[ShardResult, pa.Table]:
    """Audit every record of one shard; `on_batch(rows)` is told after each batch (for progress bars)."""
    result = ShardResult(path)
    flag_tables: list[pa.Table] = []
    tokenizer = load_tokenizer(config.data["tokenizer"]) if config.data.get("tokenizer") else None
    drift = config.check("tokenizer_drift")
    drift_tok = None
    if drift.enabled and drift.params.get("inference_tokenizer"):
        drift_tok = cached_bundle(drift.params["inference_tokenizer"])
        result.tokenizer_drift = empty_state()
        drift_quota = drift.params.get("sample") or None     # 0: every record
        drift_pad = drift.params.get("pad_id")
        if drift_pad is None:
            drift_pad = drift_tok.special["pad"].id
    plans: dict[pa.Schema, FieldPlan] = {}
    try:
        schema = read_schema(path)
        # Parquet: read only the columns some check needs (the footer tells us which exist). A shard none of
        # whose columns is checked is still read in full, so its integrity is verified.
        columns = None
        if schema is not None:
            footer_plan = resolve_plan(schema, config)
            result.problems += list(footer_plan.problems)
            columns = footer_plan.columns() or None
        for batch in iter_shard(path, columns=columns, batch_rows=batch_rows):
            plan = plans.get(batch.schema)
            if plan is None:
                plan = plans[batch.schema] = resolve_plan(batch.schema, config)
                _note_plan(result, plan)
            out = audit_batch(batch, plan, config, path, tokenizer, device, examples_per_check)
            result.samples += batch.num_rows
            if on_batch is not None:
                on_batch(batch.num_rows)
            result.flagged += int(np.count_nonzero(out.flagged_rows))
            if out.flags.num_rows:
                flag_tables.append(out.flags)
                per_check = out.flags.group_by("check").aggregate([("row", "count_distinct")])
                for name, count in zip(per_check["check"].to_pylist(), per_check["row_count_distinct"].to_pylist()):
                    result.checks[name] += count
            if drift_tok is not None and "tokenizer_drift" not in plan.skipped:
                state = result.tokenizer_drift
                left = None if drift_quota is None else drift_quota - state["checked"]
                if left is None or left > 0:
                    part, rows, first = drift_batch(batch, plan.text, plan.input_ids, plan.attention_mask,
                                                    drift_tok, path, left, drift_pad, examples_per_check)
                    merge_state(state, part, examples_per_check)
                    if rows.size:
                        details = [REGISTRY["tokenizer_drift"].detail.format(value=v) for v in first]
                        flag_tables.append(flag_table(batch, rows, path, plan.input_ids, "tokenizer_drift",
                                                      drift.severity, first, details))
                        result.checks["tokenizer_drift"] += int(rows.size)
                        result.flagged += int(np.count_nonzero(~out.flagged_rows[rows]))
            for name, examples in out.examples.items():
                kept = result.examples.setdefault(name, [])
                kept.extend(examples[: examples_per_check - len(kept)])
            for key, lengths in out.lengths.items():
                unit = "tokens" if key.endswith(".tokens") or key == plan.input_ids else "chars"
                stat = result.lengths.setdefault(key, LengthStats(unit))
                stat.add(lengths, _context_for(key, plan, config))
    except ShardReadError as exc:
        result.status, result.error = "unreadable", str(exc)
    flags = pa.concat_tables(flag_tables) if flag_tables else FLAG_SCHEMA.empty_table()
    return result, flags
