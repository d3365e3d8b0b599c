"""Special-token spellings of common model families, defined once.

Written literally inside raw text, most training stacks encode these strings as the real control token (end
of turn, end of text, a new role), silently cutting or re-rolling a conversation. Two users:

- the `special_tokens` check (dataaudit/checks/special_tokens.py) flags texts holding one of CHAT_SPECIAL_TOKENS
  (its default `tokens`), plus the special tokens of the configured tokenizer;
- the tokenizer-drift probes (dataaudit/tokenization/probes.py) write every one of SPECIAL_TOKEN_STRINGS
  inside plain text to see how each tokenizer encodes it.

Pure constants: importing this module loads nothing else of the package.
"""
from __future__ import annotations

# Decoder / chat models: the strings that end or start a turn, a text or a role.
CHAT_SPECIAL_TOKENS: tuple[str, ...] = (
    # ChatML (Qwen, OpenAI-style chat), GPT-2 / GPT-NeoX / Llama-3 end of text, Phi-3 / Phi-4
    "<|im_start|>", "<|im_end|>", "<|im_sep|>", "<|endoftext|>", "<|end_of_text|>", "<|endofprompt|>",
    # SentencePiece (Llama-1/2, Mistral, T5 ...)
    "<s>", "</s>", "<unk>", "<pad>",
    # Llama-3
    "<|begin_of_text|>", "<|eot_id|>", "<|eom_id|>", "<|start_header_id|>", "<|end_header_id|>",
    # Llama-2 / Mistral chat
    "[INST]", "[/INST]", "<<SYS>>", "<</SYS>>",
    # Zephyr / Phi-3 / TinyLlama chat
    "<|system|>", "<|user|>", "<|assistant|>", "<|end|>",
    # Gemma
    "<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>",
    # fill-in-the-middle (StarCoder, Qwen-Coder, DeepSeek-Coder use these spellings)
    "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
    # padding tokens added by fine-tuning recipes
    "<|pad|>",
)

# Encoder (BERT-style) models: probed by tokenizer-drift, not flagged by the check by default (a decoder's
# training text may legitimately say "[MASK]" in a fill-in-the-blank exercise).
ENCODER_SPECIAL_TOKENS: tuple[str, ...] = ("[CLS]", "[SEP]", "[MASK]")

SPECIAL_TOKEN_STRINGS: tuple[str, ...] = CHAT_SPECIAL_TOKENS + ENCODER_SPECIAL_TOKENS

__all__ = ["CHAT_SPECIAL_TOKENS", "ENCODER_SPECIAL_TOKENS", "SPECIAL_TOKEN_STRINGS"]
