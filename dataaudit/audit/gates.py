"""`--fail-on CHECK>RATE`: the exit code for CI from rates instead of "anything at error severity".

A rule names a check (`empty_reply>0.1%`) or a severity (`error>0`, `warning>5%`: the records with at least one flag
of it); it is exceeded when the share of audited records flagged is above the rate. Rates are written as a
fraction (0.001), a percentage (0.1%) or 0.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from dataaudit.errors import DataAuditError

_RULE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*>\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(%?)\s*$")


class GateError(DataAuditError):
    """A malformed --fail-on rule or one naming no check (exit 2, one line)."""


@dataclass(frozen=True)
class Gate:
    text: str      # the rule as given
    name: str      # a check or a severity
    limit: float   # the rate it may reach, as a fraction


def parse_gate(text: str) -> Gate:
    """One rule; GateError naming it when it is malformed, its rate is not in 0..100%, or its name is neither a
    registered check nor a severity."""
    from dataaudit.checks import REGISTRY
    from dataaudit.checks.base import SEVERITIES

    m = _RULE.match(text)
    if m is None:
        raise GateError(f"--fail-on {text!r}: expected CHECK>RATE, e.g. empty_reply>0.1%, error>0, warning>5%")
    name, number, percent = m.groups()
    limit = float(number) / (100 if percent else 1)
    if not 0 <= limit <= 1:
        raise GateError(f"--fail-on {text!r}: the rate must be between 0 and 100%")
    if name not in REGISTRY and name not in SEVERITIES:
        raise GateError(f"--fail-on {text!r}: {name!r} is neither a check (`dataaudit` docs: checks) nor a severity "
                        f"({', '.join(SEVERITIES)})")
    return Gate(text.strip(), name, limit)


def evaluate(gates: list[Gate], report: dict, severities: dict[str, int]) -> list[dict]:
    """report.json's `gates`: each rule with the records flagged, the rate measured and whether it is exceeded
    (on a sample, also the rate's 95% interval: the rule is judged on the measured rate)."""
    from dataaudit.audit.sample import wilson

    n = report["totals"]["samples"]
    out = []
    for g in gates:
        check = report["checks"].get(g.name)
        flagged = check["flagged"] if check else severities.get(g.name, 0)
        rate = flagged / n if n else 0.0
        # a rule on a check that ran on no shard measured nothing: said so (--strict fails on it), never a pass
        row = {"rule": g.text, "name": g.name, "limit": g.limit, "flagged": flagged, "samples": n,
               "rate": round(rate, 6), "exceeded": rate > g.limit, "ran": check["ran"] if check else True}
        if "sample" in report:     # the sample's interval of the check (or severity): its design's
            sampled = report["sample"]["rates"].get(g.name) or report["sample"].get("severities", {}).get(g.name)
            row["ci95"] = sampled["ci95"] if sampled else wilson(flagged, n)
        out.append(row)
    return out


def gates_failed(report: dict, strict: bool = False) -> bool:
    """Exit rule with --fail-on: a rule exceeded, or a shard that could not be read (its records were not audited:
    never an all-clear); with `strict`, also a rule whose check ran on no shard."""
    return bool(report["totals"]["unreadable_shards"]) or any(
        g["exceeded"] or (strict and not g["ran"]) for g in report["gates"])
