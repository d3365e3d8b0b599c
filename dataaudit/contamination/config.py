"""The contamination config (TOML): methods and their thresholds, the training text field, per-benchmark fields.

```toml
[train]
text_field = "text"        # or a list; default: every text field of a record (turns of a conversation), joined
text_records = "line"      # plain-text (.txt) shards: one record per "line" or per "paragraph" (--text-records)
batch_rows = 2048

[methods.ngram]
enabled = true
n = 13                     # --ngram overrides
threshold = 0.5            # contaminated when >= this fraction of the item's n-grams occur in training
                           # (0 = any shared n-gram, as GPT-3 / lm-evaluation-harness; PaLM: n = 8, 0.7)
score = "fraction"         # or "longest": when one record holds a contiguous copy of >= threshold of the
                           # item's words (--score)
[methods.exact]
enabled = true             # contaminated when the whole normalized item occurs inside one training record

[methods.minhash]
enabled = true
threshold = 0.8            # estimated Jaccard similarity of item and training record (word shingles)
ngram = 5                  # word shingle size
num_perm = 128
seed = 1                   # (LSH bands x rows are chosen for the threshold as datasketch's MinHashLSH does)

[items]
min_item_words = 8         # shorter items: matched only as a whole sentence or turn with their own final mark,
                           # reported as "short items", not counted (--min-item-words)
count_short_items = false  # count them in the verdict, the exit code and the drop list (--count-short-items)

[images]
max_distance = 6           # image benchmarks: pHash bits a near or mirrored copy may differ by (of 64)

[report]
max_matches = 5            # training records kept per item in items.parquet (best first)

[benchmarks.mmlu]          # optional, per benchmark NAME given with --benchmark
preset = "mmlu"            # a preset other than the one the name implies
fields = ["question", "choices"]
id_field = "id"
header = false             # CSV only: whether the first row is a header (default: detected)
```

Every name is validated: a typo is one error naming the file and the key (exit 2), never a silently ignored
setting.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from dataaudit.text_records import TEXT_UNITS
from dataaudit.errors import DataAuditError
from dataaudit.tomlfile import read_toml


class ContaminationConfigError(DataAuditError, ValueError):
    """A config that cannot be used; the message names the file and the setting."""


@dataclass(frozen=True)
class NgramSettings:
    enabled: bool = True
    n: int = 13
    threshold: float = 0.5
    score: str = "fraction"    # or "longest": the longest contiguous copy in one record, over the item's words


@dataclass(frozen=True)
class ExactSettings:
    enabled: bool = True


@dataclass(frozen=True)
class MinhashSettings:
    enabled: bool = True
    threshold: float = 0.8
    ngram: int = 5
    num_perm: int = 128
    seed: int = 1


@dataclass(frozen=True)
class BenchmarkSettings:
    preset: str | None = None
    fields: tuple[str, ...] | None = None
    id_field: str | None = None
    header: bool | None = None


@dataclass(frozen=True)
class ContaminationConfig:
    ngram: NgramSettings = NgramSettings()
    exact: ExactSettings = ExactSettings()
    minhash: MinhashSettings = MinhashSettings()
    text_field: tuple[str, ...] | None = None
    text_unit: str = "line"            # plain-text training shards: one record per line or per paragraph
    batch_rows: int = 2048
    max_matches: int = 5
    min_item_words: int = 8
    count_short_items: bool = False
    image_max_distance: int = 6        # image benchmarks: pHash bits a near or mirrored copy may differ by
    benchmarks: dict[str, BenchmarkSettings] = field(default_factory=dict)
    source: str = "<defaults>"

    def methods(self) -> dict[str, dict[str, Any]]:
        """Each method's resolved settings, as recorded in the report."""
        return {"ngram": asdict(self.ngram), "exact": asdict(self.exact), "minhash": asdict(self.minhash)}

    def enabled_methods(self) -> list[str]:
        return [m for m, s in (("ngram", self.ngram), ("exact", self.exact), ("minhash", self.minhash))
                if s.enabled]

    def fingerprint(self) -> dict[str, Any]:
        """What changes per-shard results (resuming reuses parts only when this is unchanged)."""
        return {"methods": self.methods(), "text_field": self.text_field, "text_records": self.text_unit,
                "max_matches": self.max_matches, "min_item_words": self.min_item_words}

    def with_overrides(self, *, ngram: int | None = None, text_unit: str | None = None,
                       min_item_words: int | None = None, count_short_items: bool | None = None,
                       score: str | None = None) -> "ContaminationConfig":
        """The command line's settings over the file's (`--ngram`, `--text-records`, `--min-item-words`,
        `--count-short-items`)."""
        cfg = self if text_unit is None else replace(self, text_unit=text_unit)
        if min_item_words is not None:
            if min_item_words < 1:
                raise ContaminationConfigError(f"--min-item-words must be >= 1, got {min_item_words}")
            cfg = replace(cfg, min_item_words=min_item_words)
        if count_short_items:
            cfg = replace(cfg, count_short_items=True)
        if score is not None:
            if score not in SCORES:
                raise ContaminationConfigError(f"--score must be one of {', '.join(SCORES)}, got {score!r}")
            cfg = replace(cfg, ngram=replace(cfg.ngram, score=score))
        if ngram is None:
            return cfg
        if ngram < 1:
            raise ContaminationConfigError(f"--ngram must be >= 1, got {ngram}")
        return replace(cfg, ngram=replace(cfg.ngram, n=ngram))


SCORES = ("fraction", "longest")
_SECTIONS = ("train", "methods", "items", "images", "report", "benchmarks")
_ITEM_KEYS = ("min_item_words", "count_short_items")
_TRAIN_KEYS = ("text_field", "text_records", "batch_rows")
_REPORT_KEYS = ("max_matches",)
_BENCH_KEYS = ("preset", "fields", "id_field", "header")


def _fail(source: str, msg: str) -> ContaminationConfigError:
    return ContaminationConfigError(f"{source}: {msg}")


def _check_keys(source: str, section: str, table: Any, allowed: tuple[str, ...]) -> dict:
    if not isinstance(table, dict):
        raise _fail(source, f"[{section}] must be a table")
    for key in table:
        if key not in allowed:
            raise _fail(source, f"unknown key {key!r} in [{section}] (allowed: {', '.join(allowed)})")
    return table


def _int(source: str, where: str, value: Any, lo: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < lo:
        raise _fail(source, f"{where} must be an integer >= {lo}, got {value!r}")
    return value


def _fraction(source: str, where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise _fail(source, f"{where} must be a number from 0 to 1, got {value!r}")
    return float(value)


def _bool(source: str, where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _fail(source, f"{where} must be true or false, got {value!r}")
    return value


def build_contamination_config(raw: dict[str, Any], source: str = "<config>") -> ContaminationConfig:
    for section in raw:
        if section not in _SECTIONS:
            raise _fail(source, f"unknown section [{section}] (allowed: {', '.join(_SECTIONS)})")
    cfg = ContaminationConfig(source=source)
    train = _check_keys(source, "train", raw.get("train", {}), _TRAIN_KEYS)
    if "text_field" in train:
        given = train["text_field"]
        names = [given] if isinstance(given, str) else given
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise _fail(source, f"[train] text_field must be a field name or a list of them, got {given!r}")
        cfg = replace(cfg, text_field=tuple(names))
    if "text_records" in train:
        if train["text_records"] not in TEXT_UNITS:
            raise _fail(source, f"[train] text_records must be one of {', '.join(TEXT_UNITS)}, "
                                f"got {train['text_records']!r}")
        cfg = replace(cfg, text_unit=train["text_records"])
    if "batch_rows" in train:
        cfg = replace(cfg, batch_rows=_int(source, "[train] batch_rows", train["batch_rows"], 1))
    report = _check_keys(source, "report", raw.get("report", {}), _REPORT_KEYS)
    if "max_matches" in report:
        cfg = replace(cfg, max_matches=_int(source, "[report] max_matches", report["max_matches"], 1))

    items = _check_keys(source, "items", raw.get("items", {}), _ITEM_KEYS)
    if "min_item_words" in items:
        cfg = replace(cfg, min_item_words=_int(source, "[items] min_item_words", items["min_item_words"], 1))
    if "count_short_items" in items:
        cfg = replace(cfg, count_short_items=_bool(source, "[items] count_short_items", items["count_short_items"]))

    images = _check_keys(source, "images", raw.get("images", {}), ("max_distance",))
    if "max_distance" in images:
        k = _int(source, "[images] max_distance", images["max_distance"], 0)
        if k > 32:
            raise _fail(source, f"[images] max_distance must be at most 32, got {k}")
        cfg = replace(cfg, image_max_distance=k)

    methods = _check_keys(source, "methods", raw.get("methods", {}), ("ngram", "exact", "minhash"))
    if "ngram" in methods:
        t = _check_keys(source, "methods.ngram", methods["ngram"], ("enabled", "n", "threshold", "score"))
        s = cfg.ngram
        if "enabled" in t:
            s = replace(s, enabled=_bool(source, "[methods.ngram] enabled", t["enabled"]))
        if "n" in t:
            s = replace(s, n=_int(source, "[methods.ngram] n", t["n"], 1))
        if "threshold" in t:
            s = replace(s, threshold=_fraction(source, "[methods.ngram] threshold", t["threshold"]))
        if "score" in t:
            if t["score"] not in SCORES:
                raise _fail(source, f"[methods.ngram] score must be one of {', '.join(SCORES)}, got {t['score']!r}")
            s = replace(s, score=t["score"])
        cfg = replace(cfg, ngram=s)
    if "exact" in methods:
        t = _check_keys(source, "methods.exact", methods["exact"], ("enabled",))
        if "enabled" in t:
            cfg = replace(cfg, exact=ExactSettings(_bool(source, "[methods.exact] enabled", t["enabled"])))
    if "minhash" in methods:
        t = _check_keys(source, "methods.minhash", methods["minhash"],
                        ("enabled", "threshold", "ngram", "num_perm", "seed"))
        s = cfg.minhash
        if "enabled" in t:
            s = replace(s, enabled=_bool(source, "[methods.minhash] enabled", t["enabled"]))
        if "threshold" in t:
            s = replace(s, threshold=_fraction(source, "[methods.minhash] threshold", t["threshold"]))
        for key in ("ngram", "num_perm"):
            if key in t:
                s = replace(s, **{key: _int(source, f"[methods.minhash] {key}", t[key], 1)})
        if "seed" in t:
            s = replace(s, seed=_int(source, "[methods.minhash] seed", t["seed"], 0))
        if s.threshold <= 0:
            raise _fail(source, "[methods.minhash] threshold must be above 0")
        cfg = replace(cfg, minhash=s)

    benches = raw.get("benchmarks", {})
    if not isinstance(benches, dict):
        raise _fail(source, "[benchmarks] must hold one table per benchmark name")
    settings = {}
    for name, t in benches.items():
        t = _check_keys(source, f"benchmarks.{name}", t, _BENCH_KEYS)
        b = BenchmarkSettings()
        if "preset" in t:
            from .presets import preset_by_name
            try:
                preset_by_name(str(t["preset"]))
            except KeyError as exc:
                raise _fail(source, f"[benchmarks.{name}] {exc.args[0]}") from None
            b = replace(b, preset=str(t["preset"]))
        if "fields" in t:
            f = t["fields"]
            if isinstance(f, str):
                f = f.split("+")
            if not isinstance(f, list) or not f or not all(isinstance(x, str) and x for x in f):
                raise _fail(source, f"[benchmarks.{name}] fields must be a list of field names, got {f!r}")
            b = replace(b, fields=tuple(f))
        if "id_field" in t:
            if not isinstance(t["id_field"], str) or not t["id_field"]:
                raise _fail(source, f"[benchmarks.{name}] id_field must be a field name")
            b = replace(b, id_field=t["id_field"])
        if "header" in t:
            b = replace(b, header=_bool(source, f"[benchmarks.{name}] header", t["header"]))
        settings[name] = b
    return replace(cfg, benchmarks=settings)


def load_contamination_config(path: str | Path | None) -> ContaminationConfig:
    """Read a TOML config; None gives the defaults."""
    if path is None:
        return ContaminationConfig()
    path = Path(path)
    return build_contamination_config(read_toml(path, ContaminationConfigError), str(path))

