"""Audit one shard: the unit of work, of failure and of resume.

Returns a small mergeable summary plus the shard's flags. An unreadable shard is a result too (status
`unreadable` with the reader's error), never an exception: the job goes on with the other shards.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from dataaudit.audit.batch import FLAG_SCHEMA, audit_batch, flag_table
from dataaudit.audit.coalesce import coalesced
from dataaudit.audit.plan import FieldPlan, resolve_plan
from dataaudit.audit.trained_example import rendered_example, trained_example
from dataaudit.checks import REGISTRY
from dataaudit.checks.runnable import configured
from dataaudit.config import AuditConfig
from dataaudit.handlers import report_unreadable
from dataaudit.provenance import ERROR, KEY, LINE, ROW
from dataaudit.sources import PROVENANCE_COLUMNS
from dataaudit.sources.fingerprint import shard_fingerprint
from dataaudit.stage import ShardStage
from dataaudit.stats.images import ImageStats
from dataaudit.stats.media import MediaStats
from dataaudit.stats.lengths import LengthStats
from dataaudit.stats.conversation_lengths import ConversationTokens, load_length_tokenizer


# Records a check may fail on in one shard before the failure is taken for the shard's (see AuditShard._isolate).
MAX_FAILED_RECORDS = 16
EXAMPLES_PER_CHECK = 5   # flagged records a shard keeps as examples of each check
# Batches read smaller than `batch_rows` (a Parquet shard's small row groups) are joined up to this (`coalesce`): each
# batch pays every check's fixed cost
JOIN_BYTES = 4 << 20
JOIN_ROWS = 65536


@dataclass
class ShardResult:
    path: str
    records: int = 0
    flagged: int = 0
    status: str = "ok"
    error: str | None = None
    checks: Counter = field(default_factory=Counter)       # check -> flagged samples
    severities: dict[str, int] = field(default_factory=dict)   # severity -> records with a flag of it (--fail-on)
    lengths: dict[str, LengthStats] = field(default_factory=dict)
    examples: dict[str, list[dict]] = field(default_factory=dict)
    fields: dict[str, list[str]] = field(default_factory=dict)   # role -> columns the checks ran on
    skipped: dict[str, str] = field(default_factory=dict)        # check -> why it did not run here
    problems: list[str] = field(default_factory=list)            # wrong-typed configured columns
    formats: dict[str, str] = field(default_factory=dict)        # text / JSON / identifier field -> its format
    unchecked: dict[str, str] = field(default_factory=dict)      # column no check reads -> its type
    images: dict[str, ImageStats] = field(default_factory=dict)  # image field -> its images' statistics
    media: dict[str, MediaStats] = field(default_factory=dict)   # video / audio field -> its files' statistics
    not_decoded: list[str] = field(default_factory=list)  # Parquet columns not decoded (--read checked-columns)
    fingerprint: dict | None = None   # the file as read (dataaudit.io.fingerprint: what `clean` checks it against)
    # its first record with trained tokens, decoded with [data] tokenizer (dataaudit.audit.trained_example)
    trained_example: dict | None = None
    # a cluster sample's counts in this shard's clusters: "records" per cluster, "flagged": name -> per cluster
    sample_clusters: dict | None = None
    # Stateful check -> its state over this shard (None: the check is not configured), in registry order.
    states: dict[str, Any] = field(default_factory=dict)
    # a piece of the shard (some of its row groups): what the merge of the pieces checks (dataaudit.audit.pieces)
    piece: dict | None = None

    def summary(self) -> dict:
        return {
            "path": self.path, "records": self.records, "flagged": self.flagged, "status": self.status,
            "error": self.error, "checks": dict(sorted(self.checks.items())), "severities": self.severities,
            "lengths": {k: v.state() for k, v in sorted(self.lengths.items())},
            "examples": self.examples, "fields": self.fields, "skipped": dict(sorted(self.skipped.items())),
            "problems": self.problems, "formats": self.formats, "unchecked": self.unchecked,
            "images": {k: v.state() for k, v in sorted(self.images.items())},
            "media": {k: v.state() for k, v in sorted(self.media.items())}, "fingerprint": self.fingerprint,
            "not_decoded": self.not_decoded, "trained_example": self.trained_example,
            **({"sample_clusters": self.sample_clusters} if self.sample_clusters is not None else {}),
            **self.states,
            **({"piece": self.piece} if self.piece is not None else {}),
        }


def _note_plan(result: ShardResult, plan: FieldPlan) -> None:
    """Fold a batch schema's plan into the shard's: the columns each role used, the first reason a check was
    skipped, the problems."""
    for role, cols in plan.roles().items():
        for col in cols:
            if col not in result.fields.setdefault(role, []):
                result.fields[role].append(col)
    for name, why in plan.skipped.items():
        result.skipped.setdefault(name, why)
    result.problems += [p for p in plan.problems if p not in result.problems]
    for name, fmt in plan.formats().items():
        result.formats.setdefault(name, fmt)
    for col in plan.unchecked:
        result.unchecked.setdefault(col.name, col.type_name)


def _context_for(stat_key: str, plan: FieldPlan, config: AuditConfig) -> int | None:
    if stat_key.endswith(".tokens") or stat_key == plan.input_ids:
        return config.data.get("context_length")
    return None


@dataclass
class _Work:
    """One shard in progress: its result, its flags so far, the plan of each batch schema met, the tokenizer."""

    result: ShardResult
    tokenizer: Any = None
    flags: list[pa.Table] = field(default_factory=list)
    plans: dict[pa.Schema, FieldPlan] = field(default_factory=dict)
    failed_records: int = 0     # records a check raised on (each an unreadable_record)
    spans: list | None = None   # a cluster sample's clusters in this shard, and the records audited in each
    cluster_records: Any = None
    registry: Any = field(default=None, repr=False)   # (the shard's dataset_info entry,) once looked up


class AuditShard(ShardStage):
    """Every planned check on every batch of a shard, merged into one ShardResult and one flags table. Batches of
    `batch_rows` records: each batch pays every planned check's fixed cost (3.5-7 ms in all for text); 8192
    short records (chat turns) are 2.5 MB. Against 4096, the audit of 100 MB of them takes 15% less time
    (4% on long records); peak RSS is within the run-to-run spread (a Parquet row group is decoded whole either
    way; medians of 5 on a 100 MiB shard of 2 KB records: 464 against 461 MiB). Smaller batches than that, which
    small row groups give, are joined up to JOIN_BYTES (`_joined`)."""

    def __init__(self, config: AuditConfig, batch_rows: int = 8192, examples_per_check: int = EXAMPLES_PER_CHECK,
                 device=None, row_groups: tuple[int, ...] | None = None):
        self.config, self.batch_rows, self.examples_per_check, self.device = \
            config, batch_rows, examples_per_check, device
        self.row_groups = row_groups   # a piece of a Parquet shard: only these row groups (dataaudit.audit.pieces)
        self.decode_all = config.read == "all-columns"   # Parquet: decode the columns no check reads too
        self.text_unit = config.data.get("text_records", "line")

    def start(self, path: str) -> _Work:
        cfg = self.config
        # A stateful check gets its state wherever it is configured, so every shard reports it (0 when the shard
        # lacks its field).
        states = {name: spec.state.start() if configured(spec, cfg.check(name)) else None
                  for name, spec in REGISTRY.items() if spec.state is not None}
        # the tokenizer of the token lengths, with the context length conversations are cut to
        tokenizer = load_length_tokenizer(cfg.data["tokenizer"]).with_context(cfg.data.get("context_length")) \
            if cfg.data.get("tokenizer") else None
        try:
            # a sample reads a few row groups: hashing every byte of the shard would read it all (a rerun of a
            # sample redoes its shards: without a hash, a part is never taken for the same shard's)
            # (a piece: the one holding the first row group records it for the shard)
            fingerprint = shard_fingerprint(path, content=cfg.sample is None) \
                if self.row_groups is None or self.row_groups[0] == 0 else None
        except OSError:
            fingerprint = None     # the reader reports why the shard cannot be read
        work = _Work(ShardResult(path, states=states, fingerprint=fingerprint), tokenizer)
        if cfg.sample is not None and cfg.sample.get("design") == "clusters":
            work.spans = cfg.sample["clusters"].get(path) or []
            work.cluster_records = np.zeros(len(work.spans), np.int64)
        return work

    def _batches(self, work: _Work, path: str):
        sample = self.config.sample
        if self.row_groups is not None:
            from dataaudit.sources.parquet import iter_parquet_row_groups

            columns = self.columns(work, self.schema(work, path))   # (every row as declared, or a read error)
            yield from self._joined(iter_parquet_row_groups(path, list(self.row_groups), columns, self.batch_rows,
                                                            decode_all=self.decode_all))
            return
        if sample is None:
            yield from self._joined(super()._batches(work, path))
            return
        from dataaudit.audit.sample import sampled_batches   # --sample: only the sampled records (and row groups)

        columns = self.columns(work, self.schema(work, path))
        yield from sampled_batches(sample, path, columns, self.batch_rows, self.decode_all, self.text_unit)

    def _joined(self, batches):
        """Batches of fewer than `batch_rows` records (a Parquet shard's small row groups) joined up to JOIN_BYTES;
        the first alone, as read: the fields are read from it (`add`)."""
        return coalesced(batches, JOIN_ROWS, JOIN_BYTES, small_rows=self.batch_rows, first_alone=True)

    def _registry(self, work: _Work) -> dict | None:
        """The shard's dataset_info.json entry (given or beside it), when it describes a pair or KTO layout; looked
        up once a shard (beside an object in a store, a HEAD and a listing)."""
        from dataaudit.dataset_info import entry_for

        if work.registry is None:
            work.registry = (entry_for(work.result.path, self.config.data.get("dataset_info")),)
        return work.registry[0]

    def columns(self, work: _Work, schema: pa.Schema | None) -> list[str] | None:
        # Parquet: the checks get only the columns some check needs (the footer tells us which exist). With the
        # default read mode (all-columns) the reader decodes every other column too and drops it at once, so a
        # column a loader cannot decode makes the shard unreadable; with checked-columns the others are not
        # decoded at all, and are named (`not_decoded`). A shard none of whose columns is checked is read in full.
        if schema is None:
            return None
        footer_plan = resolve_plan(schema, self.config, pairs=self._registry(work))
        work.result.problems += list(footer_plan.problems)
        for col in footer_plan.unchecked:     # columns the checks do not get: named here
            work.result.unchecked.setdefault(col.name, col.type_name)
        read = footer_plan.columns() or None
        if not self.decode_all:
            work.result.not_decoded = [n for n in schema.names
                                       if n in PROVENANCE_COLUMNS or (read is not None and n not in read)]
        return read

    def add(self, work: _Work, batch: pa.RecordBatch) -> None:
        result, cfg = work.result, self.config
        plan = work.plans.get(batch.schema)
        if plan is None:
            # the first batch of a schema also shows what its string columns hold (identifiers, JSON)
            plan = work.plans[batch.schema] = resolve_plan(batch.schema, cfg, batch, self._registry(work))
            _note_plan(result, plan)
        try:
            out = audit_batch(batch, plan, cfg, result.path, work.tokenizer, self.device, self._lacking(result),
                              result.states)
        except Exception as exc:   # noqa: BLE001  (a check broke on some record: find it, keep the others)
            self._isolate(work, batch, exc)
            return
        result.records += batch.num_rows
        result.flagged += int(np.count_nonzero(out.flagged_rows))
        self._count_clusters(work, batch)
        if result.trained_example is None and work.tokenizer is not None:
            result.trained_example = self._example(batch, plan, out, work)
        if out.flags.num_rows:
            work.flags.append(out.flags)
            per_check = out.flags.group_by("check").aggregate([("row", "count_distinct")])
            for name, count in zip(per_check["check"].to_pylist(), per_check["row_count_distinct"].to_pylist()):
                result.checks[name] += count
        for name, examples in out.examples.items():
            kept = result.examples.setdefault(name, [])
            kept.extend(examples[: self.examples_per_check - len(kept)])
        if out.images is not None:
            for f, col in enumerate(plan.images):
                result.images.setdefault(col.name, ImageStats()).add(out.images, f)
        if out.media is not None:
            for col in plan.media:
                result.media.setdefault(col.name, MediaStats()).add(out.media, col.name)
        for key, lengths in out.lengths.items():
            unit = "tokens" if key.endswith(".tokens") or key == plan.input_ids else "chars"
            stat = result.lengths.setdefault(key, LengthStats(unit))
            if isinstance(lengths, ConversationTokens):   # a conversation's tokens, and where its reply ends
                lengths.add_to(stat, _context_for(key, plan, cfg))
            else:
                stat.add(lengths, _context_for(key, plan, cfg))

    def _lacking(self, result: ShardResult) -> Callable[[str], int]:
        """How many examples of a check the shard still lacks (a batch builds no more than that)."""
        return lambda name: self.examples_per_check - len(result.examples.get(name, ()))

    @staticmethod
    def _count_clusters(work: _Work, batch: pa.RecordBatch) -> None:
        """A cluster sample: the batch's audited records, counted in their clusters (the intervals' n_j)."""
        if work.spans is not None:
            from dataaudit.audit.sample_clusters import records_per_cluster

            work.cluster_records += records_per_cluster(work.spans, batch.column(ROW).to_numpy(zero_copy_only=False))

    def _example(self, batch: pa.RecordBatch, plan: FieldPlan, out, work: _Work) -> dict | None:
        """The shard's decoded example from this batch, if it has one: tokenized records first, else the rendered
        ones. An example is an illustration: whatever breaks it (a decode, a template) leaves none, never the
        shard unread."""
        try:
            usable = ~batch.column(ERROR).is_valid().to_numpy(zero_copy_only=False)
            found = trained_example(batch, plan, work.tokenizer.tokenizer,
                                    self.config.check("no_trainable_tokens").params["ignore_index"], usable)
            if found is None and out.rendered is not None:
                found = rendered_example(batch, out.rendered, work.tokenizer)
            return found
        except Exception:   # noqa: BLE001 (see the docstring)
            return None

    def _isolate(self, work: _Work, batch: pa.RecordBatch, exc: Exception) -> None:
        """A batch on which a check raised (audit_batch changed nothing): its halves are checked again, down to the
        records that fail alone, each an `unreadable_record` naming the error. Past MAX_FAILED_RECORDS in a shard
        the failure is the shard's (re-raised: the shard is `unreadable`), not a record's: a check broken on every
        record would otherwise be retried twice per record."""
        if work.failed_records >= MAX_FAILED_RECORDS:
            raise exc
        if batch.num_rows == 1:
            work.failed_records += 1
            result = work.result
            severity = self.config.check("unreadable_record").severity
            detail = f"a check failed on this record: {report_unreadable(exc, result.path)}"
            work.flags.append(flag_table(batch, np.zeros(1, np.int64), result.path, [None], [None],
                                         "unreadable_record", severity, np.zeros(1), [detail]))
            result.records += 1
            result.flagged += 1
            self._count_clusters(work, batch)
            result.checks["unreadable_record"] += 1
            kept = result.examples.setdefault("unreadable_record", [])
            if len(kept) < self.examples_per_check:
                kept.append({"shard": result.path, "key": batch.column(KEY)[0].as_py(),
                             "row": batch.column(ROW)[0].as_py(), "line": batch.column(LINE)[0].as_py(),
                             "field": None, "value": 0.0, "detail": detail, "snippet": None})
            return
        half = batch.num_rows // 2
        self.add(work, batch.slice(0, half))
        self.add(work, batch.slice(half))

    def finish(self, work: _Work, error: str | None) -> tuple[ShardResult, pa.Table]:
        if error is not None:
            work.result.status, work.result.error = "unreadable", error
        flags = pa.concat_tables(work.flags) if work.flags else FLAG_SCHEMA.empty_table()
        if flags.num_rows:
            per = flags.group_by("severity").aggregate([("row", "count_distinct")])
            work.result.severities = dict(sorted(zip(per["severity"].to_pylist(),
                                                     per["row_count_distinct"].to_pylist())))
        if self.row_groups is not None:
            from dataaudit.audit.pieces import plan_digest, ran_stateful

            plans = list(work.plans.values())
            # mergeable: no record a check failed on, no stateful check run (a read error: the status says it)
            work.result.piece = {"plans": [plan_digest(p) for p in plans],
                                 "mergeable": not work.failed_records and
                                 not any(ran_stateful(p, self.config) for p in plans)}
        if work.spans is not None:
            from dataaudit.audit.sample_clusters import flagged_per_cluster

            work.result.sample_clusters = {"records": work.cluster_records.tolist(),
                                           "flagged": flagged_per_cluster(work.spans, flags)}
        return work.result, flags


def audit_shard(path: str, config: AuditConfig, *, on_batch: Callable[[int], None] | None = None,
                handler: Callable[[BaseException, str], str] = report_unreadable,
                **kw) -> tuple[ShardResult, pa.Table]:
    """Audit every record of one shard; `on_batch(rows)` is told after each batch (for progress bars), `handler`
    decides what a shard that cannot be read becomes (dataaudit.handlers). kw: AuditShard's batch_rows,
    examples_per_check, device, row_groups (a piece of the shard)."""
    return AuditShard(config, **kw)(path, on_batch=on_batch, handler=handler)
