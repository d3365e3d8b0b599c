"""The validators. Importing this package registers every check in REGISTRY."""
from dataaudit.checks.base import (REGISTRY, SEVERITIES, CheckOutput, CheckSpec, SettingError, ShardState, Target,
                                   TextAndTokens, register)
# Import order is report order: numeric, image tensors, labels and tokens, trained tokens, missing values, text,
# special tokens, the pretraining quality rules (off by default), personal data and secrets, conversations, language,
# JSON, tool calls and reasoning, record ids, images and their pairing, video and audio, pairs, truncation, reader findings.
from dataaudit.checks import (numeric, image_tensor, tokens, trained_tokens, missing, text,  # noqa: F401,E402
                              special_tokens, quality_gopher, quality_c4, quality_fineweb, quality_basic, pii,
                              secrets, conversation, language, json_text, tool_calls, reasoning, record_ids, image, media,
                              drift, pairs, pair_dataset, rankings, truncation, reader)  # (registration)

__all__ = ["REGISTRY", "SEVERITIES", "CheckOutput", "CheckSpec", "SettingError", "ShardState", "Target",
           "TextAndTokens", "register"]
