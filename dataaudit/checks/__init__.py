"""The validators. Importing this package registers every check in REGISTRY."""
from dataaudit.checks.base import REGISTRY, SEVERITIES, CheckOutput, CheckSpec, register
from dataaudit.checks import numeric, reader, text, tokens  # noqa: F401  (registration side effects)

__all__ = ["REGISTRY", "SEVERITIES", "CheckOutput", "CheckSpec", "register"]
