"""The validators. Importing this package registers every check in REGISTRY."""
from dataaudit.checks.base import (REGISTRY, SEVERITIES, CheckOutput, CheckSpec, SettingError, ShardState, Target,
                                   TextAndTokens, register)
# Import order is report order: numeric, labels and tokens, text, conversations, JSON, record ids, images and their
# pairing, reader findings.
from dataaudit.checks import (numeric, tokens, text, special_tokens, conversation, json_text, record_ids,  # noqa: F401,E402
                              image, drift, reader)  # (registration side effects)

__all__ = ["REGISTRY", "SEVERITIES", "CheckOutput", "CheckSpec", "SettingError", "ShardState", "Target",
           "TextAndTokens", "register"]
