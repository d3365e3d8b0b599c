"""Behavioural diff: encode the same texts with both tokenizers and compare what the model would receive.

Texts are encoded in chunks with the library's parallel `encode_batch_fast` / `decode_batch`; every per-text
figure is then computed with whole-array numpy over the flat ids. The only per-text Python work is pulling
the id lists out of the library's Encoding objects, and the alignment of the few examples shown in the report.

Per text: identical ids (with the special tokens the post-processor adds: the model input), first differing
position, token-count delta (infer - train), round trip decode(encode(x)) == x on each side (the text's own
tokens, without the post-processor's, decoded keeping special tokens), unknown-token, byte-fallback and
special-token-inside-text counts.
"""
from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.tokenization.loading import TokenizerBundle
from dataaudit.tokenization.ragged import Ragged, compare

CHUNK = 8192
TEXT_CHARS = 2000           # text kept per example in the JSON
SEGMENTS_BEFORE, SEGMENTS_SHOWN = 4, 60


@dataclass
class TextSet:
    texts: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)    # "probe" or "sample"
    labels: list[str] = field(default_factory=list)   # probe name, or "shard#key"
    text_fields: dict[str, str] = field(default_factory=dict)   # sample shard -> the column its texts came from

    def add(self, text: str, kind: str, label: str) -> None:
        self.texts.append(text)
        self.kinds.append(kind)
        self.labels.append(label)

    def __len__(self) -> int:
        return len(self.texts)


@dataclass
class SideFigures:
    tokens: np.ndarray          # ids per text, post-processor tokens included
    content: np.ndarray         # the text's own tokens
    unk: np.ndarray
    byte_fallback: np.ndarray
    special_in_text: np.ndarray  # control (special) tokens matched inside the text itself
    roundtrip: np.ndarray        # bool


class _SideEncoder:
    def __init__(self, bundle: TokenizerBundle):
        self.bundle = bundle
        tok = bundle.tokenizer
        size = tok.get_vocab_size(with_added_tokens=True)
        max_id = max([size - 1, *tok.get_vocab(with_added_tokens=True).values()])
        unk = bundle.spec.get("model", {}).get("unk_token")
        self.unk_id = tok.token_to_id(unk) if unk else None
        self.byte_fallback = bool(bundle.spec.get("model", {}).get("byte_fallback"))
        self.is_byte = np.zeros(max_id + 1, dtype=bool)
        self.is_byte[bundle.byte_fallback_ids()] = True
        self.is_special = np.zeros(max_id + 1, dtype=bool)
        self.is_special[sorted(bundle.special_ids())] = True

    def encode(self, texts: list[str]) -> tuple[Ragged, SideFigures]:
        tok = self.bundle.encoder
        encs = tok.encode_batch_fast(texts, add_special_tokens=True)
        ids = Ragged.from_lists([e.ids for e in encs])
        added = Ragged.from_lists([e.special_tokens_mask for e in encs]).flat.astype(bool)
        own = ~added
        content = ids.filter(own)
        decoded = tok.decode_batch(content.to_lists(), skip_special_tokens=False)
        roundtrip = pc.equal(pa.array(decoded, pa.string()), pa.array(texts, pa.string()))
        roundtrip = roundtrip.to_numpy(zero_copy_only=False)
        in_range = ids.flat < len(self.is_byte)
        flat = np.where(in_range, ids.flat, 0)
        unk = ids.count(own & (ids.flat == self.unk_id)) if self.unk_id is not None else np.zeros(len(texts), np.int64)
        figs = SideFigures(ids.lengths, content.lengths, unk, ids.count(own & in_range & self.is_byte[flat]),
                           ids.count(own & in_range & self.is_special[flat]), roundtrip.astype(bool))
        return ids, figs


def _concat(parts: list[SideFigures]) -> SideFigures:
    return SideFigures(*(np.concatenate([getattr(p, f) for p in parts]) for f in SideFigures.__dataclass_fields__))


def _rate(num: np.ndarray, den: np.ndarray) -> float:
    total = int(den.sum())
    return round(float(num.sum()) / total, 6) if total else 0.0


def _side_summary(f: SideFigures, enc: _SideEncoder) -> dict:
    return {
        "tokens": int(f.tokens.sum()), "content_tokens": int(f.content.sum()),
        "roundtrip_failures": int((~f.roundtrip).sum()),
        "unk_tokens": int(f.unk.sum()), "unk_rate": _rate(f.unk, f.content), "texts_with_unk": int((f.unk > 0).sum()),
        "byte_fallback_tokens": int(f.byte_fallback.sum()) if enc.byte_fallback else None,
        "byte_fallback_rate": _rate(f.byte_fallback, f.content) if enc.byte_fallback else None,
        "texts_with_special_in_text": int((f.special_in_text > 0).sum()),
    }


def behavioural_diff(train: TokenizerBundle, infer: TokenizerBundle, texts: TextSet, examples: int = 20,
                     on_chunk=None) -> dict:
    """The behaviour section of tokenizer_drift.json; `on_chunk(texts_done)` is told after each chunk."""
    started = time.perf_counter()
    enc_a, enc_b = _SideEncoder(train), _SideEncoder(infer)
    n = len(texts)
    equal_parts, first_parts, figs_a, figs_b = [], [], [], []
    for lo in range(0, n, CHUNK):
        chunk = texts.texts[lo:lo + CHUNK]
        ids_a, fa = enc_a.encode(chunk)
        ids_b, fb = enc_b.encode(chunk)
        equal, first = compare(ids_a, ids_b)
        equal_parts.append(equal)
        first_parts.append(first)
        figs_a.append(fa)
        figs_b.append(fb)
        if on_chunk:
            on_chunk(min(n, lo + CHUNK))
    if n == 0:
        empty = np.zeros(0, np.int64)
        equal, first = empty.astype(bool), empty
        fa = fb = SideFigures(empty, empty, empty, empty, empty, empty.astype(bool))
    else:
        equal, first = np.concatenate(equal_parts), np.concatenate(first_parts)
        fa, fb = _concat(figs_a), _concat(figs_b)
    delta = fb.tokens - fa.tokens
    kinds = np.array(texts.kinds, dtype=object)
    by_source = {}
    for kind in ("probe", "sample"):
        sel = np.asarray(kinds == kind, dtype=bool)
        by_source[kind] = {"texts": int(sel.sum()), "differing": int((~equal & sel).sum())}
    differing = ~equal
    out = {
        "texts": n, "identical": int(equal.sum()), "differing": int(differing.sum()),
        "identical_share": round(float(equal.mean()), 6) if n else 1.0,
        "by_source": by_source,
        "token_count": {"train": int(fa.tokens.sum()), "infer": int(fb.tokens.sum()),
                        "ratio": round(float(fb.tokens.sum()) / max(1, int(fa.tokens.sum())), 6),
                        "delta_mean": round(float(delta.mean()), 4) if n else 0.0,
                        "delta_min": int(delta.min()) if n else 0, "delta_max": int(delta.max()) if n else 0,
                        "texts_longer_at_inference": int((delta > 0).sum()),
                        "texts_shorter_at_inference": int((delta < 0).sum())},
        "first_diff": {"at_position_0": int((first == 0).sum()),
                       "median": float(np.median(first[differing])) if differing.any() else None},
        "train": _side_summary(fa, enc_a), "infer": _side_summary(fb, enc_b),
    }
    is_probe = np.asarray(kinds == "probe", dtype=bool)
    probe_idx = np.flatnonzero(is_probe)
    cand = np.flatnonzero(differing & ~is_probe)
    # Sample texts worth showing: the largest token-count change first, then the earliest difference.
    cand = cand[np.lexsort((cand, first[cand], -np.abs(delta[cand])))]
    differing_probes = probe_idx[differing[probe_idx]]
    n_samples = min(len(cand), examples - min(len(differing_probes), examples // 2))
    chosen = np.concatenate([differing_probes[: examples - n_samples], cand[:n_samples]]).astype(np.int64)
    out["probes"] = _rows(texts, probe_idx, equal, first, fa, fb)
    out["examples"] = _examples(train, infer, texts, _rows(texts, chosen, equal, first, fa, fb))
    seconds = time.perf_counter() - started
    out["seconds"] = round(seconds, 4)
    out["texts_per_second"] = round(n / seconds, 1) if seconds > 0 else None
    return out


def _rows(texts: TextSet, idx: np.ndarray, equal, first, fa: SideFigures, fb: SideFigures) -> list[dict]:
    """Per-text figures as dicts, for the probes and the examples."""
    rows = []
    for i in idx.tolist():
        rows.append({
            "index": i, "kind": texts.kinds[i], "label": texts.labels[i], "identical": bool(equal[i]),
            "first_diff": int(first[i]), "train_tokens": int(fa.tokens[i]), "infer_tokens": int(fb.tokens[i]),
            "delta": int(fb.tokens[i] - fa.tokens[i]),
            "roundtrip": {"train": bool(fa.roundtrip[i]), "infer": bool(fb.roundtrip[i])},
            "unk": {"train": int(fa.unk[i]), "infer": int(fb.unk[i])},
            "byte_fallback": {"train": int(fa.byte_fallback[i]), "infer": int(fb.byte_fallback[i])},
            "special_in_text": {"train": int(fa.special_in_text[i]), "infer": int(fb.special_in_text[i])},
        })
    return rows


def _examples(train, infer, texts: TextSet, chosen: list[dict]) -> list[dict]:
    """The chosen differing texts (up to half of them probes, in probe order; then the sample texts with the
    largest token-count change), each with the two tokenizations aligned."""
    if not chosen:
        return []
    chunk = [texts.texts[r["index"]] for r in chosen]
    encs_a = train.encoder.encode_batch(chunk, add_special_tokens=True)
    encs_b = infer.encoder.encode_batch(chunk, add_special_tokens=True)
    out = []
    for r, text, ea, eb in zip(chosen, chunk, encs_a, encs_b):
        segments, shown_from, truncated = align(text, ea, eb)
        out.append({**r, "text": text[:TEXT_CHARS], "text_truncated": len(text) > TEXT_CHARS,
                    "aligned": segments, "aligned_from_segment": shown_from, "aligned_truncated": truncated})
    return out


def _side_tokens(enc) -> tuple[list, list, dict[int, list]]:
    """(prefix specials, suffix specials, {end offset: tokens}) of one encoding; a token is (piece, id)."""
    prefix, suffix, body = [], [], []
    seen_content = False
    for piece, tid, (s, e), added in zip(enc.tokens, enc.ids, enc.offsets, enc.special_tokens_mask):
        if added:
            (suffix if seen_content else prefix).append([piece, tid])
        else:
            seen_content = True
            body.append((e, [piece, tid]))
    return prefix, suffix, body


def align(text: str, enc_a, enc_b) -> tuple[list[dict], int, bool]:
    """Cut the text at the character offsets where both tokenizations have a token boundary; each segment lists
    the tokens of each side that end inside it. Returns (segments shown, index of the first shown, truncated)."""
    pre_a, suf_a, body_a = _side_tokens(enc_a)
    pre_b, suf_b, body_b = _side_tokens(enc_b)
    cuts = sorted({e for e, _ in body_a} & {e for e, _ in body_b})
    n_seg = len(cuts) + 1
    seg_a: list[list] = [[] for _ in range(n_seg)]
    seg_b: list[list] = [[] for _ in range(n_seg)]
    for body, segs in ((body_a, seg_a), (body_b, seg_b)):
        for e, tok in body:
            segs[bisect.bisect_left(cuts, e)].append(tok)
    segments = []
    if pre_a or pre_b:
        segments.append({"text": None, "train": pre_a, "infer": pre_b, "same": pre_a == pre_b})
    bounds = [0] + cuts + [len(text)]
    for i in range(n_seg):
        if not seg_a[i] and not seg_b[i]:
            continue
        ids_same = [t[1] for t in seg_a[i]] == [t[1] for t in seg_b[i]]
        segments.append({"text": text[bounds[i]:max(bounds[i], bounds[i + 1])], "train": seg_a[i],
                         "infer": seg_b[i], "same": ids_same})
    if suf_a or suf_b:
        segments.append({"text": None, "train": suf_a, "infer": suf_b, "same": suf_a == suf_b})
    first = next((i for i, s in enumerate(segments) if not s["same"]), 0)
    start = max(0, first - SEGMENTS_BEFORE)
    shown = segments[start:start + SEGMENTS_SHOWN]
    return shown, start, start > 0 or start + SEGMENTS_SHOWN < len(segments)
