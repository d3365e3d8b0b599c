"""What counting conversation tokens costs, on 2,000 real conversations (the 300 ShareGPT tool-calling
conversations of ../shared/data/chat, repeated) with the Llama-style test tokenizer:

    python -m tests.stats.measure_conversation_cost

Prints the best of 5 runs of: the chat template's per-conversation Jinja render alone (ChatML, and a
Llama-2-style template that refuses non-alternating roles); the token counts with a template and with the
role-prefixed join, without and with a context length (the reply ends located); the encoding alone; and the
former count (the turns' texts joined, encoded) for comparison.
"""
from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from dataaudit.fields import arrow_columns
from dataaudit.stats.conversation_lengths import TEMPLATE_ROLES, conversation_tokens, load_length_tokenizer
from dataaudit.stats.token_lengths import token_lengths
from dataaudit.texts import conversation, record_text
from tests.stats.conversation_helpers import CHATML, tokenizer_folder
from tests.paths import SHARED_DATA

N = 2000
LLAMA2 = ("{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
          "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
          "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
          "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
          "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
          "{% if loop.index0 == 0 and system_message != false %}"
          "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
          "{% else %}{% set content = message['content'] %}{% endif %}"
          "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
          "{% elif message['role'] == 'assistant' %}{{ ' ' + content.strip() + ' ' + eos_token }}{% endif %}"
          "{% endfor %}")


def best(fn, runs: int = 5):
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    if not (SHARED_DATA / "chat").is_dir():   # a fresh clone may have no ../shared: skip with the reason
        raise SystemExit(f"skipped: {SHARED_DATA / 'chat'} not found (set DATAAUDIT_SHARED_DATA)")
    records = json.loads((SHARED_DATA / "chat/glaive_toolcall_zh_demo.json").read_text(encoding="utf-8"))
    conversations = [r["conversations"] for r in records]
    conversations = (conversations * (N // len(conversations) + 1))[:N]
    batch = pa.RecordBatch.from_pydict({"conversations": conversations})
    col = next(c for c in arrow_columns(batch.schema) if c.name == "conversations")
    llama = SHARED_DATA / "tokenizers/llama-test-tokenizer.json"
    with tempfile.TemporaryDirectory() as tmp:
        chatml = load_length_tokenizer(str(tokenizer_folder(Path(tmp) / "chatml", CHATML, tokenizer_file=llama)))
        llama2 = load_length_tokenizer(str(tokenizer_folder(Path(tmp) / "llama2", LLAMA2, tokenizer_file=llama)))
    plain = load_length_tokenizer(str(llama))
    conv, text, _ = conversation(batch, col)
    starts = np.concatenate([[0], np.cumsum(conv.counts)]).tolist()
    messages = [{"role": TEMPLATE_ROLES.get(r, r), "content": t} for r, t in zip(conv.roles.to_pylist(),
                                                                                 text.to_pylist())]
    print(f"{N} conversations, {len(messages)} turns, tokenizer {llama.name}")
    def renderer(lt):
        template = lt.compiled()

        def render_all():
            out = []
            for i in range(N):
                try:
                    out.append(template.render(messages=messages[starts[i]:starts[i + 1]],
                                               add_generation_prompt=False, **lt.variables))
                except Exception:
                    pass
            return out
        return render_all

    for name, lt in (("ChatML", chatml), ("Llama-2", llama2)):
        t, rendered = best(renderer(lt))
        print(f"  {name} template: Jinja render alone {t * 1e3:.1f} ms ({t / N * 1e6:.1f} us per conversation, "
              f"{len(rendered)} rendered)")
    rendered = renderer(chatml)()
    t_enc, _ = best(lambda: chatml.tokenizer.encode_batch(rendered, add_special_tokens=False))
    for name, lt in (("chat template (ChatML)", chatml), ("role-prefixed join", plain)):
        for ctx in (None, 512):
            t, out = best(lambda: conversation_tokens(lt.with_context(ctx), batch, col))
            over = int((out.tokens > ctx).sum()) if ctx else 0
            print(f"  {name}, context {ctx}: {t * 1e3:.1f} ms in all (mean {out.tokens.mean():.0f} tokens; "
                  f"{over} over the context)")
    t_old, _ = best(lambda: token_lengths(plain.tokenizer, record_text(batch, (col,))))
    print(f"  encode_batch of the ChatML renderings alone: {t_enc * 1e3:.1f} ms; "
          f"former count (texts joined, encoded): {t_old * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
