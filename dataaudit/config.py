"""The audit config (TOML): which fields hold what, the data's facts, and per-check overrides.

The same file drives the batch audit and the training guard. Every name is validated, so a typo in a check
name or a parameter is one clear error naming the file, never a silently ignored setting.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dataaudit.errors import DataAuditError
from dataaudit.extras import available, missing_message
from dataaudit.fields import ROLES
from dataaudit.io import exists, is_dir, is_file
from dataaudit.tomlfile import read_toml


class ConfigError(DataAuditError, ValueError):
    """A config that cannot be used; the message names the file and the setting."""


FIELD_KEYS = ROLES   # [fields] keys: the roles of the one field rule
# [data] keys of the config itself: facts about the data that field resolution, the length statistics and the
# checks read. A check declares which [data] keys fill its parameters and may own more keys, which it validates
# itself (CheckSpec.data, CheckSpec.resolve_data).
DATA_FACTS = ("num_classes", "vocab_size", "pad_id", "context_length", "tokenizer", "numeric_dtype", "max_image_pixels",
              "max_image_bytes", "image_threads")
CHECK_KEYS = ("enabled", "severity")
# How much of a Parquet shard the audit decodes (`dataaudit audit --read`): every column of every row group, as a
# training loader does (a column that cannot be decoded makes the shard unreadable), or only the columns the
# checks read (faster when the shard has wide columns no check reads; those columns' integrity is not verified).
READ_MODES = ("all-columns", "checked-columns")


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
        }


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


def build_config(raw: dict[str, Any], source: str = "<config>") -> AuditConfig:
    """Validate a parsed TOML document and resolve every check's parameters."""
    from dataaudit.checks import REGISTRY, SEVERITIES, SettingError   # the checks load only when a config is built

    for section in raw:
        if section not in ("fields", "data", "checks"):
            raise _fail(source, f"unknown section [{section}] (allowed: fields, data, checks)")
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
    for key in ("label", "input_ids", "attention_mask", "image_tensor"):
        if key in fields and (not isinstance(fields[key], str) or not fields[key]):
            raise _fail(source, f"[fields] {key} must be one column name, got {fields[key]!r}")
    for key in ("num_classes", "vocab_size", "context_length", "max_image_pixels", "max_image_bytes", "image_threads"):
        if key in data and (not isinstance(data[key], int) or data[key] <= 0):
            raise _fail(source, f"[data] {key} must be a positive integer, got {data[key]!r}")
    folder = None if source in ("<config>", "<defaults>") else Path(source).parent   # relative paths' base
    if "tokenizer" in data:
        tok = Path(data["tokenizer"])
        if not tok.is_absolute() and folder is not None:
            tok = folder / tok
        # a tokenizer.json, or a folder holding one with tokenizer_config.json (its chat template renders the
        # conversations whose token lengths are counted)
        if is_dir(tok) and not is_file(tok / "tokenizer.json"):
            raise _fail(source, f"[data] tokenizer folder has no tokenizer.json: {tok}")
        if not exists(tok):
            raise _fail(source, f"[data] tokenizer file not found: {tok}")
        data["tokenizer"] = str(tok)
        vocab_size = _tokenizer_vocab_size(source, tok)
        data.setdefault("vocab_size", vocab_size)

    for spec in REGISTRY.values():
        if spec.resolve_data is not None:
            try:
                spec.resolve_data(data, folder)
            except SettingError as exc:
                raise _fail(source, str(exc)) from None

    overrides = raw.get("checks", {})
    checks: dict[str, CheckSettings] = {}
    for name, spec in REGISTRY.items():
        params = dict(spec.params)
        params.update((param, data[key]) for key, param in spec.data.items() if key in data)
        checks[name] = CheckSettings(True, spec.severity, params)
    for name, table in overrides.items():
        if name not in REGISTRY:
            raise _fail(source, f"unknown check [checks.{name}] (known: {', '.join(sorted(REGISTRY))})")
        if not isinstance(table, dict):
            raise _fail(source, f"[checks.{name}] must be a table")
        settings = checks[name]
        for key, value in table.items():
            if key == "enabled":
                settings.enabled = bool(value)
            elif key == "severity":
                if value not in SEVERITIES:
                    raise _fail(source, f"[checks.{name}] severity must be one of {SEVERITIES}, got {value!r}")
                settings.severity = value
            elif key in REGISTRY[name].params:
                settings.params[key] = _param_value(source, name, key, REGISTRY[name].params[key], value)
            else:
                allowed = CHECK_KEYS + tuple(REGISTRY[name].params)
                raise _fail(source, f"unknown parameter {key!r} in [checks.{name}] (allowed: {', '.join(allowed)})")
    return AuditConfig(fields=fields, data=data, checks=checks, source=source)


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


def _param_value(source: str, check: str, key: str, default: Any, value: Any) -> Any:
    """A check parameter from the config, of its default's type (a number where a number is expected, ...)."""
    if default is None:      # an unset setting (min, max, vocab_size, ...): any scalar
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


def load_config(path: str | Path | None, data: dict[str, Any] | None = None) -> AuditConfig:
    """Read a TOML config; None gives the defaults. `data`: [data] values given on the command line (they win;
    relative paths in them are the caller's to resolve)."""
    if path is None:
        raw, source = {}, "<defaults>"
    else:
        path = Path(path)
        raw = read_toml(path, ConfigError)
        source = str(path)
    if data:
        raw = {**raw, "data": {**raw.get("data", {}), **data}}
    return build_config(raw, source)
