"""The stage function: run every planned check over one Arrow batch and return its flags and statistics.

Checks are whole-batch kernels; the only Python loops here are over checks and over the few flagged rows
whose detail strings are formatted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from dataaudit.audit.plan import FieldPlan
from dataaudit.fields import DTYPE_SUFFIX
from dataaudit.checks.base import CheckSpec, Target, TextAndTokens
from dataaudit.checks import REGISTRY, CheckOutput
from dataaudit.config import AuditConfig
from dataaudit.provenance import ERROR, KEY, ROW
from dataaudit.stats.token_lengths import token_lengths
from dataaudit.tensors import NumericField, from_arrow, tokens_from_arrow

FLAG_SCHEMA = pa.schema([
    ("shard", pa.string()), ("key", pa.string()), ("row", pa.int64()), ("field", pa.string()),
    ("check", pa.string()), ("severity", pa.string()), ("value", pa.float64()), ("detail", pa.string()),
])
SNIPPET_CHARS = 300


@dataclass
class BatchResult:
    flags: pa.Table
    flagged_rows: np.ndarray                      # bool per row: at least one flag
    lengths: dict[str, np.ndarray] = field(default_factory=dict)   # stats key -> lengths of usable rows
    examples: dict[str, list[dict]] = field(default_factory=dict)


def _to_numpy(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, (pa.Array, pa.ChunkedArray)):
        return x.to_numpy(zero_copy_only=False)
    return np.asarray(x)


def _details(spec: CheckSpec, out: CheckOutput, idx: np.ndarray, values: np.ndarray, params: dict) -> list[str]:
    if out.detail is not None:
        detail = out.detail
        if isinstance(detail, (pa.Array, pa.ChunkedArray)):
            return detail.take(pa.array(idx)).to_pylist()
        return [str(detail[i]) for i in idx]
    return [spec.detail.format(value=values[i], **params) for i in idx]


def flag_table(batch: pa.RecordBatch, idx: np.ndarray, shard: str, field_name: str | None, check: str,
               severity: str, values: np.ndarray, details: list) -> pa.Table:
    """flags.parquet rows for the batch rows `idx` flagged by one check."""
    take = pa.array(idx)
    n = idx.size
    return pa.table({
        "shard": pa.repeat(pa.scalar(shard, pa.string()), n),
        "key": batch.column(KEY).take(take), "row": batch.column(ROW).take(take),
        "field": pa.repeat(pa.scalar(field_name, pa.string()), n),
        "check": pa.repeat(pa.scalar(check, pa.string()), n),
        "severity": pa.repeat(pa.scalar(severity, pa.string()), n),
        "value": pa.array(np.asarray(values, dtype=np.float64)), "detail": pa.array(details, pa.string()),
    }, schema=FLAG_SCHEMA)


def _numeric(batch: pa.RecordBatch, column: str, device) -> NumericField:
    dtype_col = column + DTYPE_SUFFIX
    dtypes = batch.column(dtype_col) if dtype_col in batch.schema.names else None
    return from_arrow(batch.column(column), dtypes=dtypes, device=device)


def _fields(batch: pa.RecordBatch, plan: FieldPlan, device, shard: str):
    """(target kind, field name, argument) for every field of the batch, in the order the checks visit them:
    reader findings, text, numeric columns, label, tokens, token ids, text with its token ids."""
    yield "reader", None, batch
    if plan.text is not None:
        yield "text", plan.text, batch.column(plan.text)
    for column in plan.numeric:
        yield "numeric", column, _numeric(batch, column, device)
    if plan.label is not None:
        yield "label", plan.label, _numeric(batch, plan.label, device)
    if plan.input_ids is not None:
        mask = batch.column(plan.attention_mask) if plan.attention_mask else None
        tf = tokens_from_arrow(batch.column(plan.input_ids), mask, device)
        yield "tokens", plan.input_ids, tf
        yield "token_ids", plan.input_ids, tf.ids
        if plan.text is not None:
            yield "text_tokens", plan.input_ids, TextAndTokens(batch, plan.text, plan.input_ids,
                                                                plan.attention_mask, shard)


def _planned_calls(batch: pa.RecordBatch, plan: FieldPlan, config: AuditConfig, device, shard: str):
    """(check, target kind, field name, first argument, params) for every check that runs on this batch."""
    on: dict[str, list[tuple[CheckSpec, Target]]] = {}
    for name, spec in REGISTRY.items():
        if name not in plan.skipped:
            for target in spec.targets:
                on.setdefault(target.kind, []).append((spec, target))
    for kind, field_name, arg in _fields(batch, plan, device, shard):
        for spec, target in on.get(kind, ()):
            params = spec.params_for(target, config.check(spec.name).params)
            # A target whose parameters are incomplete is left out; the check runs on its other targets.
            if not spec.missing(params):
                yield spec, kind, field_name, arg, params


def _run(spec: CheckSpec, arg, params: dict, states: dict) -> CheckOutput:
    """One call; a stateful check gets its shard state and its part from this batch is merged into it."""
    if spec.state is None:
        return spec.fn(arg, **params)
    state = states.get(spec.name)
    if state is None:   # a caller that keeps no shard state: this batch's alone
        state = states[spec.name] = spec.state.start()
    out = spec.fn(arg, state, **params)
    spec.state.merge(state, out.state)
    return out


def audit_batch(batch: pa.RecordBatch, plan: FieldPlan, config: AuditConfig, shard: str,
                tokenizer=None, device=None, examples_per_check: int = 5,
                states: dict[str, Any] | None = None) -> BatchResult:
    """Every planned check on one batch. `states`: the shard's state of each stateful check (updated in place)."""
    n = batch.num_rows
    # A record the reader could not decode has no data to check: only its reader error is reported.
    usable = ~_to_numpy(pc.is_valid(batch.column(ERROR)))
    flagged_rows = np.zeros(n, dtype=bool)
    tables, examples = [], {}
    keys, rows = batch.column(KEY), batch.column(ROW)
    text = batch.column(plan.text) if plan.text is not None else None
    states = {} if states is None else states
    for spec, kind, field_name, arg, params in _planned_calls(batch, plan, config, device, shard):
        name = spec.name
        out = _run(spec, arg, params, states)
        flagged = _to_numpy(out.flagged).astype(bool, copy=False)
        if kind != "reader":
            flagged = flagged & usable
        idx = np.flatnonzero(flagged)
        if idx.size == 0:
            continue
        flagged_rows[idx] = True
        values = _to_numpy(out.value).astype(np.float64, copy=False)
        details = _details(spec, out, idx, values, params)
        tables.append(flag_table(batch, idx, shard, field_name, name, config.check(name).severity, values[idx],
                                 details))
        if spec.state is not None and not spec.state.examples:
            continue   # its report section shows its own examples
        first = idx[:examples_per_check]
        snippets = text.take(pa.array(first)).to_pylist() if text is not None else [None] * first.size
        # One list per check and batch: a check on several fields keeps the last flagged field's examples.
        examples[name] = [
            {"shard": shard, "key": keys[i].as_py(), "row": rows[i].as_py(), "field": field_name,
             "value": float(values[i]), "detail": details[j],
             "snippet": None if s is None else s[:SNIPPET_CHARS]}
            for j, (i, s) in enumerate(zip(first.tolist(), snippets))
        ]
    flags = pa.concat_tables(tables) if tables else FLAG_SCHEMA.empty_table()
    return BatchResult(flags, flagged_rows, _lengths(batch, plan, config, usable, tokenizer), examples)


def _lengths(batch, plan: FieldPlan, config: AuditConfig, usable: np.ndarray, tokenizer) -> dict[str, np.ndarray]:
    out = {}
    keep = pa.array(usable)
    if plan.text is not None:
        texts = pc.drop_null(batch.column(plan.text).filter(keep))
        out[plan.text] = _to_numpy(pc.utf8_length(texts))
        if tokenizer is not None:
            out[plan.text + ".tokens"] = token_lengths(tokenizer, texts)
    if plan.input_ids is not None:
        ids = batch.column(plan.input_ids).filter(keep)
        if plan.attention_mask is not None:
            # Real tokens are those the mask marks, which is what the model sees.
            mask = batch.column(plan.attention_mask).filter(keep)
            parents = _to_numpy(pc.list_parent_indices(mask))
            weights = _to_numpy(pc.list_flatten(mask)).astype(np.float64)
            out[plan.input_ids] = np.bincount(parents, weights=weights, minlength=len(mask)).astype(np.int64)
        else:
            out[plan.input_ids] = _to_numpy(pc.fill_null(pc.list_value_length(ids), 0))
    return out
