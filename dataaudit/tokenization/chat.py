"""Render each side's chat template on a fixed conversation and compare what the model would receive.

Templates are rendered in Jinja2's immutable sandbox (as transformers does: trim_blocks, lstrip_blocks), so a
template from a downloaded folder cannot reach Python objects or files, within a time and size budget
(dataaudit.tokenization.render).
"""
from __future__ import annotations

from dataaudit.tokenization.loading import TokenizerBundle
from dataaudit.tokenization.ragged import Ragged, compare
from dataaudit.tokenization.render import TemplateError, sandbox  # noqa: F401  (the conversation lengths' too)

PROBE_CONVERSATION = (
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is 2 + 2?"},
    {"role": "assistant", "content": "2 + 2 = 4."},
    {"role": "user", "content": "And in words?"},
)
RENDERED_CHARS = 2000


def special_tokens(bundle: TokenizerBundle) -> dict[str, str | None]:
    """The template variables naming the special tokens: bos_token, eos_token, pad_token, unk_token."""
    return {f"{role}_token": sp.token for role, sp in bundle.special.items()}


def render(bundle: TokenizerBundle) -> str:
    return sandbox().from_string(bundle.chat_template).render(messages=[dict(m) for m in PROBE_CONVERSATION],
                                                              add_generation_prompt=True, **special_tokens(bundle))


def _side(bundle: TokenizerBundle) -> tuple[dict, list[int] | None, str | None]:
    if bundle.chat_template is None:
        return {"present": False}, None, None
    try:
        text = render(bundle)
    except Exception as exc:   # a template error of any kind is a finding, not a crash
        return {"present": True, "error": " ".join(str(exc).split()) or type(exc).__name__}, None, None
    ids = bundle.encoder.encode(text, add_special_tokens=True).ids
    bos = bundle.special["bos"].id
    doubled = bos is not None and len(ids) >= 2 and ids[0] == ids[1] == bos
    return {"present": True, "rendered": text[:RENDERED_CHARS], "tokens": len(ids), "doubled_bos": doubled,
            "ids_head": ids[:32]}, ids, text


def chat_diff(train: TokenizerBundle, infer: TokenizerBundle) -> dict:
    """Both sides' rendering of the probe conversation, encoded with add_special_tokens=True."""
    a, ids_a, text_a = _side(train)
    b, ids_b, text_b = _side(infer)
    out = {"train": a, "infer": b, "same_text": None, "same_ids": None, "first_diff": None}
    if ids_a is not None and ids_b is not None:
        equal, first = compare(Ragged.from_lists([ids_a]), Ragged.from_lists([ids_b]))
        out.update(same_text=text_a == text_b, same_ids=bool(equal[0]), first_diff=int(first[0]))
    return out
