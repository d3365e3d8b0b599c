"""The audit config (TOML): which fields hold what, the data's facts, and per-check overrides.

The same file drives the batch audit and the training guard. Every name is validated, so a typo in a check
name or a parameter is one clear error naming the file, never a silently ignored setting.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dataaudit.checks import REGISTRY, SEVERITIES


class ConfigError(ValueError):
    """A config that cannot be used; the message names the file and the setting."""


FIELD_KEYS = ("text", "numeric", "label", "input_ids", "attention_mask")
DATA_KEYS = ("num_classes", "vocab_size", "pad_id", "context_length", "tokenizer", "numeric_dtype",
             "inference_tokenizer", "drift_sample")
DEFAULT_DRIFT_SAMPLE = 1000   # records per shard re-encoded with the inference tokenizer (0: all)
CHECK_KEYS = ("enabled", "severity")

# Facts about the data that fill check parameters: [data] key -> [(check, param)].
DATA_TO_PARAMS = {
    "num_classes": [("label_out_of_range", "num_classes")],
    "vocab_size": [("token_id_out_of_range", "vocab_size")],
    "context_length": [("too_long", "context_length")],
    "pad_id": [("all_padding", "pad_id"), ("mask_mismatch", "pad_id"), ("tokenizer_drift", "pad_id")],
    "numeric_dtype": [("dtype_mismatch", "expected")],
    "inference_tokenizer": [("tokenizer_drift", "inference_tokenizer")],
    "drift_sample": [("tokenizer_drift", "sample")],
}


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

    def check(self, name: str) -> CheckSettings:
        return self.checks[name]

    def fingerprint(self) -> dict[str, Any]:
        """Everything that changes results, for reports and for resuming a job with the same settings."""
        return {
            "fields": self.fields,
            "data": self.data,
            "checks": {n: {"enabled": c.enabled, "severity": c.severity, "params": c.params}
                       for n, c in sorted(self.checks.items())},
        }


def skip_reason(name: str, config: "AuditConfig", has_target: dict[str, bool], where: str) -> str | None:
    """Why check `name` cannot run on data that has the targets in `has_target` (None: it can run).

    Shared by the audit's and the guard's plans: disabled, no field of its target, or a required setting
    missing. `where` names the data in the message ("this shard", "the batch")."""
    spec, settings = REGISTRY[name], config.check(name)
    if not settings.enabled:
        return "disabled in config"
    if not has_target.get(spec.target, False):
        return f"no {spec.target} field in {where}"
    missing = [p for p in spec.required if settings.params.get(p) is None]
    if name == "out_of_range" and settings.params.get("min") is None and settings.params.get("max") is None:
        missing = ["min or max"]
    return "not configured: " + ", ".join(missing) if missing else None


def _fail(source: str, msg: str) -> ConfigError:
    return ConfigError(f"{source}: {msg}")


def _expect_keys(source: str, section: str, table: dict, allowed: tuple[str, ...]) -> None:
    for key in table:
        if key not in allowed:
            raise _fail(source, f"unknown key {key!r} in [{section}] (allowed: {', '.join(allowed)})")


def _tokenizer_vocab_size(source: str, path: Path) -> int:
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_file(str(path)).get_vocab_size(with_added_tokens=True)
    except Exception as exc:  # the library raises its own untyped errors for a bad file
        raise _fail(source, f"[data] tokenizer {path} cannot be loaded: {exc}") from None


def _validate_inference_tokenizer(source: str, data: dict[str, Any]) -> None:
    """[data] inference_tokenizer (a tokenizer.json or a folder with it) and drift_sample (records per shard)."""
    if "drift_sample" in data:
        n = data["drift_sample"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise _fail(source, f"[data] drift_sample must be a non-negative integer (0: every record), got {n!r}")
        if "inference_tokenizer" not in data:
            raise _fail(source, "[data] drift_sample needs [data] inference_tokenizer")
    if "inference_tokenizer" not in data:
        return
    if not isinstance(data["inference_tokenizer"], str):
        raise _fail(source, f"[data] inference_tokenizer must be a path, got {data['inference_tokenizer']!r}")
    tok = Path(data["inference_tokenizer"])
    if not tok.is_absolute() and source not in ("<config>", "<defaults>"):
        tok = Path(source).parent / tok
    if not tok.exists():
        raise _fail(source, f"[data] inference_tokenizer not found: {tok}")
    from dataaudit.tokenization.audit_drift import cached_bundle
    from dataaudit.tokenization.loading import TokenizerLoadError

    try:
        cached_bundle(str(tok))
    except TokenizerLoadError as exc:
        raise _fail(source, f"[data] inference_tokenizer cannot be loaded: {exc}") from None
    data["inference_tokenizer"] = str(tok)
    data.setdefault("drift_sample", DEFAULT_DRIFT_SAMPLE)


def build_config(raw: dict[str, Any], source: str = "<config>") -> AuditConfig:
    """Validate a parsed TOML document and resolve every check's parameters."""
    for section in raw:
        if section not in ("fields", "data", "checks"):
            raise _fail(source, f"unknown section [{section}] (allowed: fields, data, checks)")
    fields = dict(raw.get("fields", {}))
    data = dict(raw.get("data", {}))
    _expect_keys(source, "fields", fields, FIELD_KEYS)
    _expect_keys(source, "data", data, DATA_KEYS)
    if "numeric" in fields:
        if isinstance(fields["numeric"], str):
            fields["numeric"] = [fields["numeric"]]
        if not all(isinstance(f, str) for f in fields["numeric"]):
            raise _fail(source, "[fields] numeric must be a list of column names")
    for key in ("num_classes", "vocab_size", "context_length"):
        if key in data and (not isinstance(data[key], int) or data[key] <= 0):
            raise _fail(source, f"[data] {key} must be a positive integer, got {data[key]!r}")
    if "tokenizer" in data:
        tok = Path(data["tokenizer"])
        if not tok.is_absolute() and source not in ("<config>", "<defaults>"):
            tok = Path(source).parent / tok
        if not tok.is_file():
            raise _fail(source, f"[data] tokenizer file not found: {tok}")
        data["tokenizer"] = str(tok)
        if "vocab_size" not in data:
            data["vocab_size"] = _tokenizer_vocab_size(source, tok)

    _validate_inference_tokenizer(source, data)

    overrides = raw.get("checks", {})
    checks: dict[str, CheckSettings] = {}
    for name, spec in REGISTRY.items():
        params = dict(spec.params)
        for data_key, targets in DATA_TO_PARAMS.items():
            for check_name, param in targets:
                if check_name == name and data_key in data:
                    params[param] = data[data_key]
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
                settings.params[key] = value
            else:
                allowed = CHECK_KEYS + tuple(REGISTRY[name].params)
                raise _fail(source, f"unknown parameter {key!r} in [checks.{name}] (allowed: {', '.join(allowed)})")
    return AuditConfig(fields=fields, data=data, checks=checks, source=source)


def load_config(path: str | Path | None) -> AuditConfig:
    """Read a TOML config; None gives the defaults."""
    if path is None:
        return build_config({}, "<defaults>")
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return build_config(raw, str(path))
