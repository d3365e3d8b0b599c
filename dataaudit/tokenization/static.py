"""Static diff of two tokenizers: everything that can be compared without encoding text.

Each difference becomes a reason with a level: `breaking` (it changes the ids or the model inputs built from
them) or `compatible` (it changes something else: decoding, metadata). Hazards are properties of one side that
are risky whatever the other side does (PAD == EOS, a configured special token missing from the vocabulary).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from dataaudit.tokenization.jsondiff import describe, json_diff, short
from dataaudit.tokenization.loading import SPECIAL_ROLES, TokenizerBundle

BREAKING, COMPATIBLE = "breaking", "compatible"
COMPONENTS = ("normalizer", "pre_tokenizer", "post_processor", "decoder")
ADDED_TOKEN_FIELDS = ("id", "special", "normalized", "lstrip", "rstrip", "single_word")
MAX_EXAMPLES = 20
NAMED_TOKENS = 5          # tokens named in one reason line
# Config keys compared on their own (the rest are compared generically as metadata).
HANDLED_CONFIG_KEYS = {"padding_side", "truncation_side", "model_max_length", "add_bos_token", "add_eos_token",
                       "chat_template", "additional_special_tokens", "added_tokens_decoder",
                       *(f"{r}_token" for r in SPECIAL_ROLES)}
DECODE_ONLY_KEYS = {"clean_up_tokenization_spaces", "spaces_between_special_tokens"}


@dataclass
class Reason:
    level: str
    code: str
    message: str

    def to_json(self) -> dict:
        return {"level": self.level, "code": self.code, "message": self.message}


def _vocab_diff(a: TokenizerBundle, b: TokenizerBundle) -> dict:
    va = a.tokenizer.get_vocab(with_added_tokens=True)
    vb = b.tokenizer.get_vocab(with_added_tokens=True)
    only_a = sorted((i, t) for t, i in va.items() if t not in vb)
    only_b = sorted((i, t) for t, i in vb.items() if t not in va)
    moved = sorted((va[t], vb[t], t) for t in va.keys() & vb.keys() if va[t] != vb[t])
    return {
        "size": {"train": len(va), "infer": len(vb)},
        "model_size": {"train": a.tokenizer.get_vocab_size(with_added_tokens=False),
                       "infer": b.tokenizer.get_vocab_size(with_added_tokens=False)},
        "shared": len(va.keys() & vb.keys()),
        "only_train": len(only_a), "only_infer": len(only_b), "id_differs": len(moved),
        "same_id": len(va.keys() & vb.keys()) - len(moved),
        "examples": {
            "only_train": [{"token": t, "id": i} for i, t in only_a[:MAX_EXAMPLES]],
            "only_infer": [{"token": t, "id": i} for i, t in only_b[:MAX_EXAMPLES]],
            "id_differs": [{"token": t, "train": i, "infer": j} for i, j, t in moved[:MAX_EXAMPLES]],
        },
    }


def _merges(model: dict) -> list[tuple[str, str]]:
    out = []
    for m in model.get("merges") or []:
        if isinstance(m, str):
            left, _, right = m.partition(" ")
            out.append((left, right))
        else:
            out.append((m[0], m[1]))
    return out


def _merges_diff(a: TokenizerBundle, b: TokenizerBundle) -> dict:
    ma, mb = _merges(a.spec.get("model", {})), _merges(b.spec.get("model", {}))
    ra = {m: i for i, m in enumerate(ma)}
    rb = {m: i for i, m in enumerate(mb)}
    only_a = [m for m in ma if m not in rb]
    only_b = [m for m in mb if m not in ra]
    rank = [(ra[m], rb[m], m) for m in ma if m in rb and ra[m] != rb[m]]
    first = next((i for i, (x, y) in enumerate(zip(ma, mb)) if x != y), None)
    if first is None and len(ma) != len(mb):
        first = min(len(ma), len(mb))
    return {
        "count": {"train": len(ma), "infer": len(mb)},
        "only_train": len(only_a), "only_infer": len(only_b), "rank_differs": len(rank),
        "first_differing_rank": first, "same": ma == mb,
        "examples": {
            "only_train": [" ".join(m) for m in only_a[:MAX_EXAMPLES]],
            "only_infer": [" ".join(m) for m in only_b[:MAX_EXAMPLES]],
            "rank_differs": [{"merge": " ".join(m), "train": i, "infer": j} for i, j, m in rank[:MAX_EXAMPLES]],
        },
    }


def _added_tokens_diff(a: TokenizerBundle, b: TokenizerBundle) -> dict:
    ta = {t["content"]: {f: t.get(f) for f in ADDED_TOKEN_FIELDS} for t in a.spec.get("added_tokens", [])}
    tb = {t["content"]: {f: t.get(f) for f in ADDED_TOKEN_FIELDS} for t in b.spec.get("added_tokens", [])}
    changed = []
    for content in ta.keys() & tb.keys():
        fields = {f: {"train": ta[content][f], "infer": tb[content][f]}
                  for f in ADDED_TOKEN_FIELDS if ta[content][f] != tb[content][f]}
        if fields:
            changed.append({"content": content, "id": ta[content]["id"], "fields": fields})
    return {
        "count": {"train": len(ta), "infer": len(tb)},
        "only_train": [{"content": c, **ta[c]} for c in sorted(ta.keys() - tb.keys(), key=lambda c: ta[c]["id"])],
        "only_infer": [{"content": c, **tb[c]} for c in sorted(tb.keys() - ta.keys(), key=lambda c: tb[c]["id"])],
        "changed": sorted(changed, key=lambda c: c["id"]),
    }


def _token_desc(t: dict) -> str:
    kind = "special" if t.get("special") else "non-special"
    return f"{short(t['content'], 40)} (id {t['id']}, {kind})"


def post_processor_adds(bundle: TokenizerBundle) -> dict:
    """Ids the post-processor puts before and after a single text (e.g. BOS, EOS)."""
    enc = bundle.encoder.encode("hello", add_special_tokens=True)
    ids, mask = enc.ids, enc.special_tokens_mask
    lead = 0
    while lead < len(ids) and mask[lead]:
        lead += 1
    trail = 0
    while trail < len(ids) - lead and mask[len(ids) - 1 - trail]:
        trail += 1
    return {"prefix": ids[:lead], "suffix": ids[len(ids) - trail:] if trail else []}


def effective_add(bundle: TokenizerBundle, role: str) -> bool:
    """add_bos_token / add_eos_token as a loader honouring the config would apply it (else the post-processor)."""
    value = bundle.setting(f"add_{role}_token")
    if value is not None:
        return bool(value)
    adds = post_processor_adds(bundle)
    tok_id = bundle.special[role].id
    part = adds["prefix"] if role == "bos" else adds["suffix"]
    return bool(part) if tok_id is None else tok_id in part


def can_pad(bundle: TokenizerBundle) -> bool:
    return bundle.special["pad"].id is not None


def can_truncate(bundle: TokenizerBundle) -> bool:
    return bundle.setting("model_max_length") is not None or bundle.setting("truncation") is not None


def _strip_direction(d: dict | None) -> dict | None:
    return None if d is None else {k: v for k, v in d.items() if k != "direction"}


def _config_tokens(bundle: TokenizerBundle) -> dict:
    cfg = bundle.config
    extra = [t if isinstance(t, str) else (t or {}).get("content")
             for t in cfg.get("additional_special_tokens") or []]
    decoder = {str(k): {"content": v.get("content"), "special": v.get("special")}
               for k, v in (cfg.get("added_tokens_decoder") or {}).items() if isinstance(v, dict)}
    return {"additional_special_tokens": extra, "added_tokens_decoder": decoder}


def static_diff(a: TokenizerBundle, b: TokenizerBundle) -> tuple[dict, list[Reason]]:
    """(the static section of tokenizer_drift.json, reasons). a = training side, b = inference side."""
    reasons: list[Reason] = []
    add = lambda level, code, msg: reasons.append(Reason(level, code, msg))  # noqa: E731

    model_a = {k: v for k, v in a.spec.get("model", {}).items() if k not in ("vocab", "merges")}
    model_b = {k: v for k, v in b.spec.get("model", {}).items() if k not in ("vocab", "merges")}
    model = {"type": {"train": a.model_type, "infer": b.model_type}, "params": json_diff(model_a, model_b)}
    if a.model_type != b.model_type:
        add(BREAKING, "model_type", f"model type differs: {a.model_type} -> {b.model_type}")
    elif not model["params"]["same"]:
        add(BREAKING, "model_params", f"model settings differ: {describe(model['params'])}")

    vocab = _vocab_diff(a, b)
    if vocab["only_train"] or vocab["only_infer"] or vocab["id_differs"]:
        add(BREAKING, "vocab",
            f"vocabulary differs: {vocab['size']['train']} vs {vocab['size']['infer']} tokens, "
            f"{vocab['only_train']} only in train, {vocab['only_infer']} only in infer, "
            f"{vocab['id_differs']} shared tokens with a different id")
    merges = _merges_diff(a, b)
    if not merges["same"]:
        add(BREAKING, "merges",
            f"merges differ: {merges['count']['train']} vs {merges['count']['infer']}, "
            f"{merges['only_train']} only in train, {merges['only_infer']} only in infer, "
            f"{merges['rank_differs']} shared merges ranked differently (first difference at rank "
            f"{merges['first_differing_rank']})")

    added = _added_tokens_diff(a, b)
    for key, where in (("only_train", "missing at inference"), ("only_infer", "only at inference")):
        tokens = added[key]
        if tokens:
            named = ", ".join(_token_desc(t) for t in tokens[:NAMED_TOKENS])
            more = f" and {len(tokens) - NAMED_TOKENS} more" if len(tokens) > NAMED_TOKENS else ""
            noun = "added token" if len(tokens) == 1 else f"{len(tokens)} added tokens"
            add(BREAKING, "added_tokens", f"{noun} {where}: {named}{more}")
    changed = added["changed"]
    if changed:
        parts = [f"{short(c['content'], 40)} (" + ", ".join(f"{f} {v['train']} -> {v['infer']}"
                                                         for f, v in c["fields"].items()) + ")"
                 for c in changed[:NAMED_TOKENS]]
        more = f" and {len(changed) - NAMED_TOKENS} more" if len(changed) > NAMED_TOKENS else ""
        noun = "added token" if len(changed) == 1 else f"{len(changed)} added tokens"
        add(BREAKING, "added_tokens", f"{noun} changed: {'; '.join(parts)}{more}")

    components = {name: json_diff(a.spec.get(name), b.spec.get(name)) for name in COMPONENTS}
    for name in ("normalizer", "pre_tokenizer", "post_processor"):
        if not components[name]["same"]:
            add(BREAKING, name, f"{name} differs: {describe(components[name])}")
    if not components["decoder"]["same"]:
        add(COMPATIBLE, "decoder", f"decoder differs (generated ids decode to other text; inputs unchanged): "
                                   f"{describe(components['decoder'])}")

    settings = {}
    for key in ("padding_side", "truncation_side", "model_max_length", "padding", "truncation"):
        sa, sb = a.settings[key], b.settings[key]
        settings[key] = {"train": sa["value"], "infer": sb["value"], "train_source": sa["source"],
                         "infer_source": sb["source"], "same": sa["value"] == sb["value"]}
    for role in ("bos", "eos"):
        ea, eb = effective_add(a, role), effective_add(b, role)
        settings[f"add_{role}_token"] = {"train": ea, "infer": eb,
                                         "train_source": a.settings[f"add_{role}_token"]["source"]
                                         if a.setting(f"add_{role}_token") is not None else "post_processor",
                                         "infer_source": b.settings[f"add_{role}_token"]["source"]
                                         if b.setting(f"add_{role}_token") is not None else "post_processor",
                                         "same": ea == eb}
        if ea != eb:
            add(BREAKING, f"add_{role}_token",
                f"{role.upper()} is {'added' if ea else 'not added'} in training but "
                f"{'added' if eb else 'not added'} at inference (add_{role}_token {ea} -> {eb})")

    # Padding-side rule: breaking when some side has a pad token (a padded batch can be built, and it then puts
    # the real tokens at other positions); compatible when neither side can pad.
    if not settings["padding_side"]["same"]:
        pad_sides = [s for s, bb in (("train", a), ("infer", b)) if can_pad(bb)]
        change = f"{settings['padding_side']['train']} -> {settings['padding_side']['infer']}"
        if pad_sides:
            add(BREAKING, "padding_side",
                f"padding side differs ({change}) and {' and '.join(pad_sides)} "
                f"{'have' if len(pad_sides) > 1 else 'has'} a pad token: padded batches "
                "place the real tokens at other positions (input_ids, attention_mask and mask-unaware position "
                "ids change; last-token pooling and batched generation read other positions)")
        else:
            add(COMPATIBLE, "padding_side",
                f"padding side differs ({change}), but neither side has a pad token, so no batch can be padded")
    if not settings["truncation_side"]["same"]:
        change = f"{settings['truncation_side']['train']} -> {settings['truncation_side']['infer']}"
        if can_truncate(a) or can_truncate(b):
            add(BREAKING, "truncation_side",
                f"truncation side differs ({change}): over-long texts keep the other end")
        else:
            add(COMPATIBLE, "truncation_side",
                f"truncation side differs ({change}), but no maximum length is set on either side")
    if not settings["model_max_length"]["same"]:
        add(BREAKING, "model_max_length",
            f"model_max_length differs: {settings['model_max_length']['train']} -> "
            f"{settings['model_max_length']['infer']} (texts between the two lengths are truncated on one side only)")
    pad_a, pad_b = _strip_direction(a.setting("padding")), _strip_direction(b.setting("padding"))
    if pad_a != pad_b:
        add(BREAKING, "padding", f"tokenizer.json padding differs: {describe(json_diff(pad_a, pad_b))}")
    trunc_a, trunc_b = _strip_direction(a.setting("truncation")), _strip_direction(b.setting("truncation"))
    if trunc_a != trunc_b:
        add(BREAKING, "truncation", f"tokenizer.json truncation differs: {describe(json_diff(trunc_a, trunc_b))}")

    special = {}
    for role in SPECIAL_ROLES:
        ta, tb = a.special[role], b.special[role]
        same = (ta.token, ta.id) == (tb.token, tb.id)
        special[role] = {"train": ta.to_json(), "infer": tb.to_json(), "same": same}
        if not same:
            add(BREAKING, f"{role}_token",
                f"{role.upper()} token differs: {short(ta.token, 40)} (id {ta.id}) -> "
                f"{short(tb.token, 40)} (id {tb.id})")

    cta, ctb = _config_tokens(a), _config_tokens(b)
    for key in ("additional_special_tokens", "added_tokens_decoder"):
        if cta[key] != ctb[key]:
            add(BREAKING, key, f"config {key} differs: {describe(json_diff(cta[key], ctb[key]))}")

    chat = {"train": a.chat_template_source, "infer": b.chat_template_source,
            "same_text": a.chat_template == b.chat_template,
            "diff": "\n".join(difflib.unified_diff((a.chat_template or "").splitlines(),
                                                  (b.chat_template or "").splitlines(),
                                                  fromfile="train", tofile="infer", lineterm="", n=2))}

    other = []
    for key in sorted((a.config.keys() | b.config.keys()) - HANDLED_CONFIG_KEYS):
        va, vb = a.config.get(key), b.config.get(key)
        if va != vb:
            other.append({"key": key, "train": va, "infer": vb})
            what = "decoding only" if key in DECODE_ONLY_KEYS else "metadata for the loader"
            add(COMPATIBLE, f"config:{key}", f"config {key} differs ({what}): {short(va, 40)} -> {short(vb, 40)}")

    static = {"model": model, "vocab": vocab, "merges": merges, "added_tokens": added, "components": components,
              "settings": settings, "special_tokens": special, "config_special_tokens": {"train": cta, "infer": ctb},
              "chat_template": chat, "config_other": other}
    return static, reasons


def static_hazards(bundle: TokenizerBundle) -> list[dict]:
    """Risky properties of one tokenizer on its own."""
    out = []
    sp = bundle.special
    if sp["pad"].id is not None and sp["pad"].id == sp["eos"].id:
        out.append({"code": "pad_is_eos", "message": f"PAD == EOS (id {sp['pad'].id}): a loss or collator that "
                    "masks pad ids also masks every EOS, so the model may never learn to stop"})
    if sp["pad"].id is None:
        out.append({"code": "no_pad", "message": "no pad token: batches cannot be padded until one is set "
                    "(setting pad = eos brings the PAD == EOS hazard)"})
    for role in SPECIAL_ROLES:
        t = sp[role]
        if t.token is not None and t.id is None:
            out.append({"code": f"{role}_not_in_vocab",
                        "message": f"{role}_token {short(t.token, 40)} ({t.source}) is not in the vocabulary"})
    adds = post_processor_adds(bundle)
    for role in ("bos", "eos"):
        cfg = bundle.setting(f"add_{role}_token")
        part = adds["prefix"] if role == "bos" else adds["suffix"]
        pp = bool(part) if sp[role].id is None else sp[role].id in part
        if cfg is not None and bool(cfg) != pp:
            out.append({"code": f"add_{role}_mismatch",
                        "message": f"config add_{role}_token={cfg} but tokenizer.json's post-processor "
                        f"{'adds' if pp else 'does not add'} {role.upper()}: the ids depend on the loader "
                        "(transformers' Llama-family classes rebuild the post-processor, others do not)"})
    return out
