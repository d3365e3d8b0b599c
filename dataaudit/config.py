"""The audit config (TOML): which fields hold what, the data's facts, and per-check overrides.

The same file drives the batch audit and the training guard. Every name is validated, so a typo in a check
name or a parameter is one clear error naming the file, never a silently ignored setting.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dataaudit.errors import DataAuditError
from dataaudit.extras import available, missing_message
from dataaudit.fields import ROLES
from dataaudit.io import exists, is_dir, is_file, special
from dataaudit.text_records import TEXT_UNITS
from dataaudit.tomlfile import read_toml


class ConfigError(DataAuditError, ValueError):
    """A config that cannot be used; the message names the file and the setting."""


FIELD_KEYS = ROLES   # [fields] keys: the roles of the one field rule
# [data] keys of the config itself: facts about the data that field resolution, the length statistics and the
# checks read. A check declares which [data] keys fill its parameters and may own more keys, which it validates
# itself (CheckSpec.data, CheckSpec.resolve_data).
DATA_FACTS = ("dataset_info", "num_classes", "vocab_size", "pad_id", "context_length", "tokenizer", "numeric_dtype", "max_image_pixels",
              "max_image_bytes", "image_threads", "text_records", "media_root", "max_media_bytes", "max_media_pixels",
              "max_media_frames", "max_media_seconds", "media_threads")
CHECK_KEYS = ("enabled", "severity")
# How much of a Parquet shard the audit decodes (`dataaudit audit --read`): every column of every row group, as a
# training loader does (a column that cannot be decoded makes the shard unreadable), or only the columns the
# checks read (faster when the shard has wide columns no check reads; those columns' integrity is not verified).
READ_MODES = ("all-columns", "checked-columns")


# The range of every integer fact: beyond these, a value is a typo or an attack (2**63-1 bytes, 100000 threads), and
# would crash or stall the job instead of being refused here.
INT32_MAX = 2**31 - 1
DATA_RANGES = {"num_classes": (1, INT32_MAX), "vocab_size": (1, INT32_MAX), "context_length": (1, INT32_MAX),
               "pad_id": (0, INT32_MAX), "max_image_pixels": (1, 2**34), "max_image_bytes": (1, 2**32),
               "image_threads": (1, 256), "max_media_bytes": (1, 2**40), "max_media_pixels": (1, 2**34),
               "max_media_frames": (1, 2**40), "max_media_seconds": (1, 2**40), "media_threads": (1, 256)}
# Check parameters unset by default (None), by the kind they must be, and the numeric ones' ranges.
PARAM_TYPES = {"num_classes": (int, "an integer"), "vocab_size": (int, "an integer"),
               "context_length": (int, "an integer"), "pad_id": (int, "an integer"),
               "min": ((int, float), "a number"), "max": ((int, float), "a number"),
               "inference_tokenizer": (str, "a path (a string)"), "tokenizer": (str, "a path (a string)"),
               "end_token_ids": (list, "a list of token ids"),
               "languages": (list, "a list of ISO 639-1 codes")}
PARAM_RANGES = {k: DATA_RANGES[k] for k in ("num_classes", "vocab_size", "context_length", "pad_id")}


def data_keys() -> tuple[str, ...]:
    """Every key [data] accepts: the facts, then those the registered checks own."""
    from dataaudit.checks import REGISTRY   # the checks load only when a config is built (not for `--help`)

    return tuple(dict.fromkeys((*DATA_FACTS, *(k for spec in REGISTRY.values() for k in spec.data))))


@dataclass
class CheckSettings:
    enabled: bool
    severity: str
    params: dict[str, Any]


@dataclass
class AuditConfig:
    fields: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, CheckSettings] = field(default_factory=dict)
    source: str = "<defaults>"
    read: str = READ_MODES[0]   # one of READ_MODES (set by `--read`, not by the TOML file)
    profile: str = "sft"        # the profile (dataaudit.profiles) applied under the [checks.*] tables
    explicit_enabled: set[str] = field(default_factory=set)   # checks whose `enabled` the file's [checks.*] sets
    # `--sample`/`--sample-fraction`: the records audited (dataaudit.audit.sample); None: every record
    sample: dict[str, Any] | None = None

    def check(self, name: str) -> CheckSettings:
        return self.checks[name]

    def with_read(self, read: str) -> "AuditConfig":
        """This config with another read mode (ValueError for one not in READ_MODES)."""
        if read not in READ_MODES:
            raise ValueError(f"read mode must be one of {', '.join(READ_MODES)}, got {read!r}")
        return replace(self, read=read)

    def fingerprint(self) -> dict[str, Any]:
        """Everything that changes results, for reports and for resuming a job with the same settings."""
        return {
            "fields": self.fields,
            "data": self.data,
            "checks": {n: {"enabled": c.enabled, "severity": c.severity, "params": c.params}
                       for n, c in sorted(self.checks.items())},
            "read": self.read,
            "profile": self.profile,
            **({"sample": self.sample} if self.sample is not None else {}),
        }

    @classmethod
    def from_fingerprint(cls, fp: dict[str, Any], source: str = "<parts>") -> "AuditConfig":
        """The config a `fingerprint` describes (what an array job's merge rebuilds the report with)."""
        return cls(fields=fp["fields"], data=fp["data"], source=source, read=fp["read"], profile=fp["profile"],
                   checks={n: CheckSettings(c["enabled"], c["severity"], c["params"]) for n, c in fp["checks"].items()},
                   sample=fp.get("sample"))


def _fail(source: str, msg: str) -> ConfigError:
    return ConfigError(f"{source}: {msg}")


def _expect_keys(source: str, section: str, table: dict, allowed: tuple[str, ...]) -> None:
    for key in table:
        if key not in allowed:
            raise _fail(source, f"unknown key {key!r} in [{section}] (allowed: {', '.join(allowed)})")


def _tokenizer_vocab_size(source: str, path: Path) -> int:
    """Load [data] tokenizer now (a file, or a folder with its config files and chat template: a bad one is a
    config error, not a failed shard) and give its vocabulary size."""
    from dataaudit.stats.conversation_lengths import load_length_tokenizer

    if not available("tokenizers"):
        raise _fail(source, missing_message("tokenizers", "[data] tokenizer"))
    try:
        return load_length_tokenizer(str(path)).tokenizer.get_vocab_size(with_added_tokens=True)
    except Exception as exc:  # the library raises its own untyped errors for a bad file
        raise _fail(source, f"[data] tokenizer {path} cannot be loaded: {' '.join(str(exc).split())}") from None


def build_config(raw: dict[str, Any], source: str = "<config>", profile: str | None = None) -> AuditConfig:
    """Validate a parsed TOML document and resolve every check's parameters. `profile`: the profile named on the
    command line (it wins over the document's top-level `profile` key); its check settings apply under the
    document's [checks.*] tables."""
    from dataaudit.checks import REGISTRY, SEVERITIES, SettingError   # the checks load only when a config is built
    from dataaudit.profiles import DEFAULT, PROFILES, profile_settings

    for section in raw:
        if section == "profile":
            continue
        if section not in ("fields", "data", "checks"):
            raise _fail(source, f"unknown section [{section}] (allowed: fields, data, checks)")
    if profile is None:
        profile = raw.get("profile", DEFAULT)
        if not isinstance(profile, str) or profile not in PROFILES:
            raise _fail(source, f"unknown profile {profile!r} (known: {', '.join(PROFILES)})")
    elif profile not in PROFILES:
        raise ConfigError(f"--profile: unknown profile {profile!r} (known: {', '.join(PROFILES)})")
    fields = dict(raw.get("fields", {}))
    data = dict(raw.get("data", {}))
    _expect_keys(source, "fields", fields, FIELD_KEYS)
    _expect_keys(source, "data", data, data_keys())
    if "numeric" in fields:
        if isinstance(fields["numeric"], str):
            fields["numeric"] = [fields["numeric"]]
        if not isinstance(fields["numeric"], list) or not all(isinstance(f, str) and f for f in fields["numeric"]):
            raise _fail(source, "[fields] numeric must be a list of column names")
    for key in ("text", "image"):
        if key in fields:
            names = [fields[key]] if isinstance(fields[key], str) else fields[key]
            if not isinstance(names, list) or not names or not all(isinstance(f, str) and f for f in names):
                raise _fail(source, f"[fields] {key} must be a field name or a list of them, got {fields[key]!r}")
            fields[key] = names
    for key in ("label", "input_ids", "attention_mask", "image_tensor", "token_labels", "train_mask"):
        if key in fields and (not isinstance(fields[key], str) or not fields[key]):
            raise _fail(source, f"[fields] {key} must be one column name, got {fields[key]!r}")
    for key, (low, high) in DATA_RANGES.items():
        if key in data:
            data[key] = _integer(source, f"[data] {key}", data[key], low, high)
    if "text_records" in data and data["text_records"] not in TEXT_UNITS:
        raise _fail(source, f"[data] text_records must be one of {', '.join(TEXT_UNITS)}, got {data['text_records']!r}")
    if "numeric_dtype" in data:
        data["numeric_dtype"] = _dtype_names(source, "[data] numeric_dtype", data["numeric_dtype"])
    if "tokenizer" in data and (not isinstance(data["tokenizer"], str) or not data["tokenizer"]):
        raise _fail(source, f"[data] tokenizer must be a path (a string), got {data['tokenizer']!r}")
    folder = None if source in ("<config>", "<defaults>") else Path(source).parent   # relative paths' base
    if "tokenizer" in data:
        tok = Path(data["tokenizer"])
        if not tok.is_absolute() and folder is not None:
            tok = folder / tok
        # a tokenizer.json, or a folder holding one with tokenizer_config.json (its chat template renders the
        # conversations whose token lengths are counted)
        if is_dir(tok) and not is_file(tok / "tokenizer.json"):
            raise _fail(source, f"[data] tokenizer folder has no tokenizer.json: {tok}")
        if special(tok):   # a FIFO or device would hang or fill memory when the tokenizer is read
            raise _fail(source, f"[data] tokenizer is not a regular file ({special(tok)}): {tok}")
        if not exists(tok):
            raise _fail(source, f"[data] tokenizer file not found: {tok}")
        data["tokenizer"] = str(tok)
        vocab_size = _tokenizer_vocab_size(source, tok)
        data.setdefault("vocab_size", vocab_size)

    if "media_root" in data:   # where referenced media paths resolve (instead of each shard's folder)
        root = data["media_root"]
        if not isinstance(root, str) or not root:
            raise _fail(source, f"[data] media_root must be a folder (a string), got {root!r}")
        root = Path(root) if Path(root).is_absolute() or folder is None else folder / root
        if not is_dir(root):
            raise _fail(source, f"[data] media_root is not a folder: {root}")
        data["media_root"] = str(root)

    for spec in REGISTRY.values():
        if spec.resolve_data is not None:
            try:
                spec.resolve_data(data, folder)
            except SettingError as exc:
                raise _fail(source, str(exc)) from None

    overrides = raw.get("checks", {})
    if not isinstance(overrides, dict):
        raise _fail(source, "[checks] must be a table of [checks.NAME] tables")
    explicit = {name for name, table in overrides.items() if isinstance(table, dict) and "enabled" in table}
    # the profile's settings first, the config's own tables over them (a key the config sets wins)
    merged: dict[str, Any] = profile_settings(profile)
    for name, table in overrides.items():
        merged[name] = {**merged.get(name, {}), **table} if isinstance(table, dict) else table
    overrides = merged
    checks: dict[str, CheckSettings] = {}
    for name, spec in REGISTRY.items():
        params = dict(spec.params)
        params.update((param, data[key]) for key, param in spec.data.items() if key in data)
        checks[name] = CheckSettings(spec.default_enabled, spec.severity, params)
    for name, table in overrides.items():
        if name not in REGISTRY:
            raise _fail(source, f"unknown check [checks.{name}] (known: {', '.join(sorted(REGISTRY))})")
        if not isinstance(table, dict):
            raise _fail(source, f"[checks.{name}] must be a table")
        settings = checks[name]
        for key, value in table.items():
            if key == "enabled":
                if not isinstance(value, bool):      # "false" is a string, and a true one
                    raise _fail(source, f"[checks.{name}] enabled must be true or false, got {value!r}")
                settings.enabled = value
            elif key == "severity":
                if value not in SEVERITIES:
                    raise _fail(source, f"[checks.{name}] severity must be one of {SEVERITIES}, got {value!r}")
                settings.severity = value
            elif key in REGISTRY[name].params:
                settings.params[key] = _param_value(source, name, key, REGISTRY[name].params[key], value)
            else:
                allowed = CHECK_KEYS + tuple(REGISTRY[name].params)
                raise _fail(source, f"unknown parameter {key!r} in [checks.{name}] (allowed: {', '.join(allowed)})")
    for name, settings in checks.items():
        lo, hi = settings.params.get("min"), settings.params.get("max")
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
            raise _fail(source, f"[checks.{name}] min ({lo!r}) must not be above max ({hi!r})")
    return AuditConfig(fields=fields, data=data, checks=checks, source=source, profile=profile,
                       explicit_enabled=explicit)


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "an integer" if isinstance(value, int) else "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _integer(source: str, where: str, value: Any, low: int, high: int) -> int:
    """An integer setting within [low, high]: one line naming it and the range otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        kind = f"a positive integer up to {high:,}" if low == 1 else f"an integer from {low:,} to {high:,}"
        raise _fail(source, f"{where} must be {kind}, got {value!r}")
    return value


def _dtype_names(source: str, where: str, value: Any) -> Any:
    """[data] numeric_dtype / dtype_mismatch's expected: int, float, bool or exact dtype names (or a list of them)."""
    from dataaudit.checks.numeric import expected_dtype_codes

    if not (isinstance(value, str) or (isinstance(value, list) and value and all(isinstance(v, str) for v in value))):
        raise _fail(source, f"{where} must be a dtype name or a list of them, got {value!r}")
    try:
        expected_dtype_codes(value)
    except ValueError as exc:
        raise _fail(source, f"{where}: {str(exc).removeprefix('dtype_mismatch: ')}") from None
    return value


def _number_in_range(source: str, check: str, key: str, default: Any, value: Any) -> None:
    """A number must be finite (nan would turn a check off, inf make it meaningless); a limit whose default is not
    negative must not be (it would flag everything); a fraction stays within [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    where = f"[checks.{check}] {key}"
    if not math.isfinite(value):
        raise _fail(source, f"{where} must be a finite number, got {value!r}")
    if key in PARAM_RANGES:
        low, high = PARAM_RANGES[key]
        if not low <= value <= high:
            raise _fail(source, f"{where} must be from {low:,} to {high:,}, got {value!r}")
    elif _is_fraction(key) and not 0 <= value <= 1:
        raise _fail(source, f"{where} must be a fraction from 0 to 1, got {value!r}")
    elif isinstance(default, (int, float)) and not isinstance(default, bool) and default >= 0 and value < 0:
        raise _fail(source, f"{where} must be 0 or more, got {value!r}")


def _is_fraction(key: str) -> bool:
    return key.endswith(("_frac", "_ratio")) or (key.startswith(("top_", "dup_")) and key.endswith("_gram"))


def _param_value(source: str, check: str, key: str, default: Any, value: Any) -> Any:
    """A check parameter from the config, of its default's type (a number where a number is expected, ...), in its
    range (`_number_in_range`)."""
    value = _typed_param(source, check, key, default, value)
    for v in value if isinstance(value, list) else [value]:
        _number_in_range(source, check, key, default[0] if isinstance(default, (list, tuple)) and default else default,
                         v)
    if key == "end_token_ids" and not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        raise _fail(source, f"[checks.{check}] {key} must be a list of token ids (integers), got {value!r}")
    if key == "expected" and check == "dtype_mismatch":
        _dtype_names(source, f"[checks.{check}] {key}", value)
    return value


def _typed_param(source: str, check: str, key: str, default: Any, value: Any) -> Any:
    if key in PARAM_TYPES:    # an unset setting with a known kind (vocab_size, pad_id, a tokenizer path, ...)
        kind, what = PARAM_TYPES[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise _fail(source, f"[checks.{check}] {key} must be {what}, got {value!r}")
        return value
    if default is None:      # an unset setting (min, max, ...): any scalar
        ok = isinstance(value, (bool, int, float, str))
    elif isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif isinstance(default, (list, tuple)):
        kinds = {_kind_of(v) for v in default}
        ok = isinstance(value, list) and all(_kind_of(v) in kinds for v in value) if kinds else isinstance(value, list)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        expected = "a scalar" if default is None else _kind_of(default)
        if isinstance(default, (list, tuple)) and default:
            expected = f"a list of {_kind_of(default[0]).removeprefix('a ').removeprefix('an ')}s"
        raise _fail(source, f"[checks.{check}] {key} must be {expected}, got {value!r}")
    return value


def load_config(path: str | Path | None, data: dict[str, Any] | None = None,
                profile: str | None = None) -> AuditConfig:
    """Read a TOML config; None gives the defaults. `data`: [data] values given on the command line (they win;
    relative paths in them are the caller's to resolve). `profile`: `--profile` (wins over the file's)."""
    if path is None:
        raw, source = {}, "<defaults>"
    else:
        path = Path(path)
        raw = read_toml(path, ConfigError)
        source = str(path)
    if data:
        raw = {**raw, "data": {**raw.get("data", {}), **data}}
    return build_config(raw, source, profile)
