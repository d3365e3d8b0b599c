"""Compare a training and an inference tokenizer: static diff + behavioural diff -> verdict with reasons.

Verdict rules:
- `breaking`: the ids differ on some text (built-in probes or sample texts), or a difference that changes the
  ids or the model inputs built from them: model type/settings, vocabulary, merges, added tokens, normalizer,
  pre-tokenizer, post-processor, BOS/EOS/PAD/UNK token or id, whether BOS/EOS are added, tokenizer.json padding
  or truncation settings, model_max_length, special tokens declared in the config, a chat template that gives
  other ids for the probe conversation, and a padding side that differs while a pad token exists on either side
  (a truncation side that differs while a maximum length is set).
- `compatible`: the same ids on every text, and only differences that do not change them: the decoder,
  decode-only or loader-metadata config keys, a chat template present on one side only or whose text differs but
  renders the same ids, and a padding (truncation) side that differs while no side can pad (truncate).
- `identical`: the same ids on every text and no difference at all.
"""
from __future__ import annotations

import platform
import time

from dataaudit.tokenization.behaviour import TextSet, behavioural_diff
from dataaudit.tokenization.chat import chat_diff
from dataaudit.tokenization.loading import TokenizerBundle, load_bundle
from dataaudit.tokenization.probes import probe_texts
from dataaudit.tokenization.static import BREAKING, COMPATIBLE, Reason, static_diff, static_hazards

SCHEMA_VERSION = 1
IDENTICAL = "identical"


def build_texts(train: TokenizerBundle, infer: TokenizerBundle, sample: TextSet | None = None) -> TextSet:
    texts = TextSet()
    for name, text in probe_texts(train, infer):
        texts.add(text, "probe", name)
    if sample is not None:
        texts.texts += sample.texts
        texts.kinds += sample.kinds
        texts.labels += sample.labels
    return texts


def _chat_reasons(chat: dict, same_template_text: bool) -> list[Reason]:
    a, b = chat["train"], chat["infer"]
    if not a["present"] and not b["present"]:
        return []
    if a["present"] != b["present"]:
        side = "inference" if b["present"] else "training"
        return [Reason(COMPATIBLE, "chat_template", f"chat template only on the {side} side (nothing to compare; "
                                                    "the other side's prompts are built by the caller)")]
    if chat["same_ids"] is None:   # a template did not render
        if same_template_text:
            return []
        return [Reason(BREAKING, "chat_template", "chat templates differ and at least one does not render")]
    if not chat["same_ids"]:
        what = "renders the probe conversation to other text" if not chat["same_text"] else \
            "gives the same text but other ids"
        return [Reason(BREAKING, "chat_template",
                       f"chat template {what}: model inputs first differ at token {chat['first_diff']}")]
    if not same_template_text:
        return [Reason(COMPATIBLE, "chat_template",
                       "chat template text differs but renders the probe conversation to the same ids")]
    return []


def _behaviour_reason(beh: dict) -> Reason | None:
    if not beh["differing"]:
        return None
    src = beh["by_source"]
    first = next((e for e in beh["examples"]), None)
    example = f"; e.g. {first['label']!r} first differs at token {first['first_diff']}" if first else ""
    return Reason(BREAKING, "ids_differ",
                  f"ids differ on {beh['differing']} of {beh['texts']} texts ({src['probe']['differing']} of "
                  f"{src['probe']['texts']} probes, {src['sample']['differing']} of {src['sample']['texts']} "
                  f"sample texts){example}")


def _behaviour_hazards(beh: dict, side: str, bundle: TokenizerBundle) -> list[dict]:
    out = []
    probes = beh["probes"]
    specials = [p["label"].split(":", 1)[1] for p in probes
                if p["label"].startswith("special_in_text:") and p["special_in_text"][side]]
    if specials:
        out.append({"code": "special_in_text", "message": f"special-token strings written in plain text are encoded "
                    f"as control tokens: {', '.join(repr(s) for s in specials[:8])}"
                    f"{' ...' if len(specials) > 8 else ''} (user text can inject them)"})
    lossy = [p["label"] for p in probes if not p["roundtrip"][side]]
    if lossy:
        out.append({"code": "roundtrip", "message": f"decode(encode(x)) != x on {len(lossy)} probes: "
                    f"{', '.join(lossy[:8])}{' ...' if len(lossy) > 8 else ''}"})
    # The unk token's own string written in a probe is matched as the token: not an unknown character.
    literal = sum(1 for p in probes if p["label"].startswith("special_in_text:") and p["unk"][side])
    with_unk = beh[side]["texts_with_unk"] - literal
    if with_unk:
        out.append({"code": "unknown_tokens", "message": f"{with_unk} texts hold unknown tokens (information lost; "
                    f"unk rate {beh[side]['unk_rate']:.4%} of all tokens)"})
    return out


def compare_bundles(train: TokenizerBundle, infer: TokenizerBundle, sample: TextSet | None = None,
                    examples: int = 20, on_chunk=None) -> dict:
    started = time.time()
    static, reasons = static_diff(train, infer)
    texts = build_texts(train, infer, sample)
    beh = behavioural_diff(train, infer, texts, examples=examples, on_chunk=on_chunk)
    chat = chat_diff(train, infer)
    chat["template"] = static.pop("chat_template")
    reasons += _chat_reasons(chat, chat["template"]["same_text"])
    ids_reason = _behaviour_reason(beh)
    if ids_reason is not None:
        reasons.insert(0, ids_reason)
    hazards = {}
    for side, bundle in (("train", train), ("infer", infer)):
        hazards[side] = static_hazards(bundle) + _behaviour_hazards(beh, side, bundle)
        info = chat[side]
        if info.get("doubled_bos"):
            hazards[side].append({"code": "doubled_bos", "message": "the chat template writes the BOS token and "
                                  "encoding adds another: the rendered conversation starts with two BOS"})
        if info.get("error"):
            hazards[side].append({"code": "chat_template_error",
                                  "message": f"chat template does not render: {info['error']}"})
    reasons.sort(key=lambda r: r.level != BREAKING)   # breaking first, order otherwise kept
    if any(r.level == BREAKING for r in reasons):
        verdict = BREAKING
    elif reasons:
        verdict = COMPATIBLE
    else:
        verdict = IDENTICAL
    return {
        "schema_version": SCHEMA_VERSION,
        "verdict": verdict,
        "reasons": [r.to_json() for r in reasons],
        "train": train.summary(), "infer": infer.summary(),
        "hazards": hazards,
        "static": static,
        "chat_template": chat,
        "behaviour": beh,
        "run": {"started": started, "seconds": round(time.time() - started, 3), "host": platform.node(),
                "python": platform.python_version(), "tokenizers": _version("tokenizers"),
                "dataaudit": _version("dataaudit")},
    }


def compare_tokenizers(train_path, infer_path, sample: TextSet | None = None, examples: int = 20) -> dict:
    """Load both (tokenizer.json or folder) and compare them; raises TokenizerLoadError for a bad input."""
    return compare_bundles(load_bundle(train_path), load_bundle(infer_path), sample, examples)


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"
