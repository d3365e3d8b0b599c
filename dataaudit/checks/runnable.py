"""Whether a registered check can run on some data, decided from its CheckSpec alone (no runner names a check).

The audit's plan (per shard) and the guard's plan (per batch) ask `skip_reason`; the audit's shard stage asks
`configured` before it starts a stateful check's state. A check runs when it is enabled and on at least one of
its targets the data has that field and every required parameter is set (the target's fixed ones included).
"""
from __future__ import annotations

from typing import Mapping, Sequence

from dataaudit.checks.base import REGISTRY, CheckSpec, Target
from dataaudit.extras import PACKAGES, available, install_hint

# Token ids are the ids of a tokens field: data has them exactly when it has tokens.
_SAME_FIELD = {"token_ids": "tokens"}


def _has(has_target: Mapping[str, bool], kind: str) -> bool:
    if kind in has_target:
        return bool(has_target[kind])
    return bool(has_target.get(_SAME_FIELD.get(kind), False))


def configured(spec: CheckSpec, settings) -> bool:
    """Enabled, with every required parameter set on at least one target (whatever fields the data has)."""
    return settings.enabled and any(not spec.missing(spec.params_for(t, settings.params), t) for t in spec.targets)


def _target_reason(spec: CheckSpec, target: Target, params: Mapping, has_target: Mapping[str, bool],
                   where: str) -> str | None:
    if not _has(has_target, target.kind):
        if target.kind == "samples":   # the samples a dataset yielded exist only in the collate guard
            return "runs in the collate guard only"
        return f"no {target.kind} field in {where}"
    missing = spec.missing(spec.params_for(target, params), target)
    return "not configured: " + ", ".join(missing) if missing else None


def needs_message(module: str) -> str:
    """"needs detect-secrets, which is not installed: pip install 'dataaudit[secrets]'"""
    return f"needs {PACKAGES.get(module, module)}, which is not installed: {install_hint(module)}"


def _explicit(config) -> set[str]:
    """The checks whose `enabled` the config's own file set (kept by build_config)."""
    return getattr(config, "explicit_enabled", set())


def skip_reason(name: str, config, has_target: Mapping[str, bool], where: str,
                targets: Sequence[Target] | None = None) -> str | None:
    """Why check `name` cannot run on data that has the targets in `has_target` (None: it can run).

    Disabled, or on every target (`targets`, default all of the check's) no such field or a required setting
    missing; the reason given is that of the first target whose field the data has, else the first target's.
    `where` names the data in the message ("this shard", "the batch")."""
    spec, settings = REGISTRY[name], config.check(name)
    if not settings.enabled:
        if not spec.default_enabled and getattr(config, "profile", None) == "sft" and \
                name not in _explicit(config):
            from dataaudit.profiles import PROFILES

            on = [p for p, table in PROFILES.items() if table.get(name, {}).get("enabled")]
            return f"off by default; --profile {on[0]} enables it" if on else \
                "off by default; [checks.NAME] enabled = true turns it on"
        return "disabled in config"
    if spec.needs is not None and not available(spec.needs):
        return needs_message(spec.needs)
    targets = targets or spec.targets
    reasons = [_target_reason(spec, t, settings.params, has_target, where) for t in targets]
    if None in reasons:
        return None
    # a target whose field is there says what is missing ("not configured: tokenizer"), else the first target's
    return next((r for t, r in zip(targets, reasons) if _has(has_target, t.kind)), reasons[0])
