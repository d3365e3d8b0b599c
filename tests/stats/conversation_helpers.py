"""Helpers of the conversation-length tests: a tiny word-level tokenizer whose token counts are known by hand,
tokenizer folders with a chat template, conversation shards and one audit run over them."""
from __future__ import annotations

from dataaudit.pipelines.engine import EngineOptions

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

WORDS = ("[UNK]", "user", "assistant", "system", "tool", ":", "a", "b", "c", "bad", "x")
SPECIAL = ("<|im_start|>", "<|im_end|>")
VOCAB_SIZE = len(WORDS) + len(SPECIAL)

# ChatML, as Qwen and others ship it; a role a template does not know is refused, as real templates do.
CHATML = ("{% for m in messages %}"
          "{% if m['role'] not in ['system', 'user', 'assistant', 'tool'] %}"
          "{{ raise_exception('unexpected role ' + m['role']) }}{% endif %}"
          "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n' }}"
          "{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
# ChatML that refuses a turn holding the word "bad" (the message names the turn).
CHATML_REFUSING = ("{% for m in messages %}"
                   "{% if 'bad' in m['content'] %}{{ raise_exception('bad content in turn ' ~ loop.index0) }}"
                   "{% endif %}"
                   "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n' }}"
                   "{% endfor %}")
# ChatML that tries to reach Python objects when a turn holds "x": the sandbox refuses.
CHATML_ESCAPING = ("{% for m in messages %}"
                   "{% if 'x' in m['content'] %}{{ ''.__class__.__mro__[1].__subclasses__() }}{% endif %}"
                   "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n' }}"
                   "{% endfor %}")


def word_tokenizer(padding: bool = False):
    """Words of WORDS are one token each (others are [UNK]), punctuation runs too, whitespace none; the ChatML
    markers are added special tokens. A ChatML turn costs 3 tokens + its words; a role-prefixed turn
    `"<role>: <text>\\n"` 2 + its words. `padding`: padding and truncation switched on in tokenizer.json (lengths
    must not see them)."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens([AddedToken(t, special=True) for t in SPECIAL])
    if padding:
        tok.enable_padding(length=64, pad_id=0, pad_token="[UNK]")
        tok.enable_truncation(max_length=3)
    return tok


def tokenizer_folder(folder: Path, template: str | None = CHATML, padding: bool = False,
                     tokenizer_file: Path | None = None) -> Path:
    """A tokenizer folder: tokenizer.json (the word tokenizer, or a copy of `tokenizer_file`) and, with a
    template, a tokenizer_config.json holding it."""
    folder.mkdir(parents=True, exist_ok=True)
    if tokenizer_file is not None:
        (folder / "tokenizer.json").write_bytes(Path(tokenizer_file).read_bytes())
    else:
        word_tokenizer(padding).save(str(folder / "tokenizer.json"))
    if template is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps(
            {"chat_template": template, "bos_token": "<s>", "eos_token": "<|im_end|>"}))
    return folder


def turns(*pairs: tuple[str, str], role_key: str = "role", text_key: str = "content") -> list[dict]:
    return [{role_key: r, text_key: t} for r, t in pairs]


def write_shard(path: Path, columns: dict[str, list]) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


def audit(tmp_path: Path, shards: list[Path], data: dict, **raw) -> dict:
    """report.json of one local audit of `shards` with `[data]` = data."""
    from dataaudit.config import build_config
    from dataaudit.pipelines.audit import run_audit

    config = build_config({"data": data, **raw})
    return run_audit([str(s) for s in shards], config, tmp_path / "out", options=EngineOptions("local"))


def stat_without_histogram(report: dict, key: str) -> dict:
    return {k: v for k, v in report["lengths"][key].items() if k != "histogram"}
