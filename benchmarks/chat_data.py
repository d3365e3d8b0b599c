#!/usr/bin/env python
"""Deterministic generator of chat / instruction datasets with planted defects, for the chat benchmarks.

Built from the real conversations in `../shared/data/chat/` (the folder is read where it is, never copied;
`DATAAUDIT_SHARED_DATA` points at another copy of `../shared/data`):

  glaive_toolcall_zh_demo.json   300 ShareGPT tool-calling conversations in Chinese (`conversations`, `tools`)
  v1_sft_demo.jsonl              500 messages-form SFT records, content as parts `{type, value}`

Every real record is converted into each of three forms, and generated records (real exchanges recombined
into multi-turn conversations, replies lengthened or cut, a system prompt now and then) bring each form to
`--records`:

  sharegpt   conversations: [{from, value}] (human / gpt / function_call / observation / system), tools (JSON
             string; absent for records without tool data)
  messages   id, messages: [{role, content}] (user / assistant / tool / system); a function call is an
             assistant turn with content null and `tool_calls` [{id, type, function {name, arguments}}], its
             result a `tool` turn; tools (JSON string). Two shards: `messages-000` with content strings,
             `messages-001` with content as parts [{type: "text", text}] (a few user turns lead with an
             image part, which has no text)
  alpaca     instruction, input, output (first user turn -> instruction, split at its first blank line into
             instruction + input when the rest is long; the first assistant reply -> output)

each written as Parquet, JSONL and a JSON array (`.json`): OUT/<format>/<form>/<shard>.<ext>.

Planted defects: in `--rate` of the records per kind (at least one), one kind per planted record, only in
generated records: the real records, converted and never planted, are the *clean set* on which false
positives are measured. Kinds (the check expected to fire, and the field it must name; k = turn, 0-based):

  empty_reply               empty_reply                 messages[k].content / conversations[k].value
  empty_user                empty_text                  same (a whitespace-only user turn)
  control_chars             control_chars               same
  mojibake                  mojibake                    same
  special_tokens            special_tokens              same (a literal `<|im_end|>`, `</s>`, ...)
  repetition                repetition                  same (one sentence repeated 8-12 times, assistant)
  long_unbroken_run         long_unbroken_run           same (a base64 or hex run of 120-300 chars)
  unknown_role              unknown_role                messages[k].role / conversations[k].from
  role_order                role_order                  same (two user turns in a row / a system turn after
                                                        the first)
  last_turn_not_assistant   last_turn_not_assistant     same (k = the last turn)
  no_assistant_turn         no_assistant_turn           messages / conversations
  json_invalid_tools        json_invalid                tools
  json_invalid_call         json_invalid                conversations[k].value (ShareGPT function_call turn)
                                                        / messages[k].tool_calls[0].function.arguments
  duplicate_id              duplicate_id                id (messages only: the record reuses an earlier id)
  alpaca: empty_output (empty_text, output), empty_instruction (empty_text, instruction), control_chars,
          mojibake, special_tokens, long_unbroken_run (instruction or output), repetition (output)

OUT/truth.json is the truth table: per form its shards, every record's origin (real / generated) and every
planted defect (shard, row, kind, check, field, turn, the turn's role as written, variant, and what was
inserted). Same arguments ->
byte-identical files.

    .venv/bin/python benchmarks/chat_data.py --out bench-data/chat --records 2000
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import os
import random
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA_ENV = "DATAAUDIT_SHARED_DATA"
GENERATOR_VERSION = 1

FORMS = ("sharegpt", "messages", "alpaca")
FORMATS = ("parquet", "jsonl", "json")
EXT = {"parquet": "parquet", "jsonl": "jsonl", "json": "json"}

# kind -> the check that must flag it
CHECK_OF = {
    "empty_reply": "empty_reply", "empty_user": "empty_text", "control_chars": "control_chars",
    "mojibake": "mojibake", "special_tokens": "special_tokens", "repetition": "repetition",
    "long_unbroken_run": "long_unbroken_run", "unknown_role": "unknown_role", "role_order": "role_order",
    "last_turn_not_assistant": "last_turn_not_assistant", "no_assistant_turn": "no_assistant_turn",
    "json_invalid_tools": "json_invalid", "json_invalid_call": "json_invalid", "duplicate_id": "duplicate_id",
    "empty_output": "empty_text", "empty_instruction": "empty_text",
}
CONV_KINDS = ("empty_reply", "empty_user", "control_chars", "mojibake", "special_tokens", "repetition",
              "long_unbroken_run", "unknown_role", "role_order", "last_turn_not_assistant", "no_assistant_turn",
              "json_invalid_tools", "json_invalid_call")
KINDS = {
    "sharegpt": CONV_KINDS,
    "messages": CONV_KINDS + ("duplicate_id",),
    "alpaca": ("empty_output", "empty_instruction", "control_chars", "mojibake", "special_tokens", "repetition",
               "long_unbroken_run"),
}
SHARDS = {"sharegpt": ("sharegpt-000",), "messages": ("messages-000", "messages-001"), "alpaca": ("alpaca-000",)}
CONV_COLUMN = {"sharegpt": "conversations", "messages": "messages"}
ROLE_KEY = {"sharegpt": "from", "messages": "role"}
TEXT_KEY = {"sharegpt": "value", "messages": "content"}

SPECIAL_TOKENS = ("<|im_end|>", "<|endoftext|>", "</s>", "<|eot_id|>", "[INST]", "<|im_start|>", "<s>")
CONTROL_CHARS = ("\x00", "\x1b[31m", "\x07", "\x08", "\x7f", "\x1f", "\x0e")
UNKNOWN_ROLES = {"sharegpt": ("narrator", "customer", "Human", "HUMAN"),
                 "messages": ("narrator", "customer", "USER", "Human")}
# Words whose UTF-8 bytes read as CP1252 give no C1 control (so only `mojibake` applies).
MOJIBAKE_WORDS = ("café", "naïve", "résumé", "déjà vu", "don’t", "it’s", "São Paulo", "Zürich", "–")
SYSTEM_PROMPTS = {
    "en": ("You are a helpful assistant.", "You are a concise assistant. Answer in plain English.",
           "You are an AI assistant that helps people find information."),
    "zh": ("你是一个乐于助人的助手。", "你是一个有用的AI助手，请用中文回答用户的问题。"),
}
# ShareGPT names of the internal roles (and back)
SHAREGPT_ROLE = {"user": "human", "assistant": "gpt", "system": "system", "function_call": "function_call",
                 "observation": "observation"}


def shared_data_dir() -> Path:
    """`$DATAAUDIT_SHARED_DATA`, else `../shared/data` beside the repository."""
    return Path(os.path.abspath(os.path.expanduser(os.environ.get(SHARED_DATA_ENV) or
                                                   REPO.parent / "shared" / "data")))


def chat_sources(shared: Path | None = None) -> tuple[Path, Path]:
    shared = shared_data_dir() if shared is None else Path(shared)
    chat = shared / "chat"
    glaive, sft = chat / "glaive_toolcall_zh_demo.json", chat / "v1_sft_demo.jsonl"
    for p in (glaive, sft):
        if not p.is_file():
            raise FileNotFoundError(f"{p}: missing (put ../shared/data beside the checkout or set {SHARED_DATA_ENV})")
    return glaive, sft


# ------------------------------------------------------------------------------------ the real conversations

def _turn(role: str, text, **extra) -> dict:
    return {"role": role, "text": text, **extra}


def load_real(shared: Path | None = None) -> list[dict]:
    """The real conversations in one internal form: {src, lang, turns [{role, text}], tools}; roles user /
    assistant / system / function_call / observation (function_call text: the glaive JSON {name, arguments})."""
    glaive_path, sft_path = chat_sources(shared)
    back = {v: k for k, v in SHAREGPT_ROLE.items()}
    out = []
    for rec in json.loads(glaive_path.read_text(encoding="utf-8")):
        turns = [_turn(back.get(t["from"], t["from"]), t["value"]) for t in rec["conversations"]]
        out.append({"src": "glaive", "lang": "zh", "turns": turns, "tools": rec.get("tools") or None})
    with open(sft_path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            turns = []
            for m in rec["messages"]:
                content = m["content"]
                if isinstance(content, list):
                    content = "\n".join(p.get("text", p.get("value")) or "" for p in content
                                        if p.get("type", "text") == "text")
                turns.append(_turn(m["role"], content))
            lang = "zh" if any(re.search(r"[\u4e00-\u9fff]", t["text"] or "") for t in turns) else "en"
            out.append({"src": "sft", "lang": lang, "turns": turns, "tools": None})
    return out


def exchanges(convs: list[dict]) -> list[dict]:
    """Every exchange of the real conversations: a user turn and the turns up to the next user turn (a plain
    reply, or a function call, its result and the reply), with the conversation's tools."""
    out = []
    for conv in convs:
        turns = conv["turns"]
        starts = [i for i, t in enumerate(turns) if t["role"] == "user"]
        for a, b in zip(starts, starts[1:] + [len(turns)]):
            ex = turns[a:b]
            if len(ex) < 2 or ex[-1]["role"] != "assistant":
                continue
            out.append({"src": conv["src"], "lang": conv["lang"], "turns": ex,
                        "tool": any(t["role"] == "function_call" for t in ex), "tools": conv["tools"]})
    return out


# ----------------------------------------------------------------------------------- generated conversations

_SENT_EN = re.compile(r"(?<=[.!?])\s+")
_SENT_ZH = re.compile(r"(?<=[。！？])")


def sentences(text: str) -> list[str]:
    parts = _SENT_ZH.split(text) if re.search(r"[。！？]", text) else _SENT_EN.split(text)
    return [p.strip() for p in parts if p.strip()]


def _vary(rng: random.Random, text: str, pool: list[str]) -> str:
    """A reply made longer (another reply appended) or shorter (its first sentences), or left as it is."""
    r = rng.random()
    if r < 0.15:
        return text + "\n\n" + rng.choice(pool)
    if r < 0.30:
        sents = sentences(text)
        if len(sents) > 2:
            joiner = "" if re.search(r"[。！？]", text) else " "
            return joiner.join(sents[: rng.randint(1, len(sents) - 1)])
    return text


def generate_conv(rng: random.Random, pool: dict, need: str | None = None) -> dict:
    """A generated conversation: 1-4 real exchanges of one source; `need`: "tools" (a tool exchange and tools),
    "plain" (no function call: every assistant turn is prose)."""
    lang = "zh" if (need == "tools" or rng.random() < 0.5) else "en"
    src = "glaive" if lang == "zh" else "sft"
    plain = pool["plain"][src]
    n = rng.randint(1, min(pool.get("max_exchanges", 4), 4 if src == "glaive" else 3))
    picked = [dict(rng.choice(plain)) for _ in range(n)]
    tools = None
    use_tool = need == "tools" or (need != "plain" and src == "glaive" and rng.random() < 0.4)
    if use_tool:
        tool_ex = rng.choice(pool["tool"])
        picked[rng.randrange(n)] = tool_ex
        tools = tool_ex["tools"]
    elif src == "glaive":
        tools = rng.choice(pool["tools"])
    replies = pool["replies"][src]
    turns = []
    if rng.random() < 0.15:
        turns.append(_turn("system", rng.choice(SYSTEM_PROMPTS[lang])))
    for ex in picked:
        for t in ex["turns"]:
            text = t["text"]
            if t["role"] == "assistant":
                text = _vary(rng, text, replies)
            turns.append(_turn(t["role"], text))
    return {"src": "generated", "lang": lang, "turns": turns, "tools": tools}


def build_pool(real: list[dict]) -> dict:
    exs = exchanges(real)
    pool = {"plain": {"glaive": [], "sft": []}, "tool": [], "replies": {"glaive": [], "sft": []},
            "tools": sorted({c["tools"] for c in real if c["tools"]})}
    for ex in exs:
        if ex["tool"]:
            pool["tool"].append(ex)
        else:
            pool["plain"][ex["src"]].append(ex)
        pool["replies"][ex["src"]].append(ex["turns"][-1]["text"])
    return pool


# ---------------------------------------------------------------------------------------------- planting

def _insert(rng: random.Random, text: str, piece: str, spaced: bool = True) -> str:
    """`piece` inserted at a word boundary (or between two characters of a text without spaces)."""
    text = text or ""
    cuts = [m.end() for m in re.finditer(r"\s", text)] or list(range(len(text) + 1))
    at = rng.choice(cuts) if cuts else 0
    sep = " " if spaced and " " in text else ""
    return text[:at] + piece + sep + text[at:] if at < len(text) else text + sep + piece


def _cp1252(b: bytes) -> str:
    out = []
    for x in b:
        try:
            out.append(bytes([x]).decode("cp1252"))
        except UnicodeDecodeError:
            out.append(chr(x))
    return "".join(out)


def garble(rng: random.Random, text: str) -> tuple[str, str]:
    """(text with one short span shown as UTF-8 read as CP1252, the garbled span)."""
    spans = [m for m in re.finditer(r"[\u4e00-\u9fff]{2,4}", text)]
    rng.shuffle(spans)
    for m in spans[:20]:
        bad = _cp1252(m.group().encode("utf-8"))
        if not re.search("[\x80-\x9f]", bad):
            return text[:m.start()] + bad + text[m.end():], bad
    if "'" in text and rng.random() < 0.5:
        i = rng.choice([m.start() for m in re.finditer("'", text)])
        bad = _cp1252("’".encode("utf-8"))
        return text[:i] + bad + text[i + 1:], bad
    bad = _cp1252(rng.choice(MOJIBAKE_WORDS).encode("utf-8"))
    return _insert(rng, text, bad), bad


def unbroken_run(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        run = base64.b64encode(rng.randbytes(rng.randint(90, 225))).decode()
        return run, "base64"
    return "".join(hashlib.sha512(rng.randbytes(16)).hexdigest() for _ in range(2))[: rng.randint(120, 256)], "hex"


def repeated(rng: random.Random, text: str) -> tuple[str, str, str]:
    """(a degenerate reply: its first sentence, then one sentence repeated 8-12 times; variant; sentence)."""
    sents = sentences(text) or [text]
    zh = bool(re.search(r"[\u4e00-\u9fff]", text))
    longish = [s for s in sents if len(s) >= (8 if zh else 20)] or sents
    sentence = rng.choice(longish)[:200]
    k = rng.randint(8, 12)
    lines = rng.random() < 0.5
    sep = "\n" if lines else ("" if zh else " ")
    body = sep.join([sentence] * k)
    head = sents[0] if sents[0] != sentence else ""
    variant = ("zh" if zh else "en") + ("-lines" if lines else "-inline")
    return (head + sep + body if head else body), variant, sentence


def _prose_turns(turns: list[dict], roles=("user", "assistant")) -> list[int]:
    return [i for i, t in enumerate(turns) if t["role"] in roles and isinstance(t["text"], str) and t["text"].strip()]


def plant_conv(rng: random.Random, conv: dict, kind: str, form: str, pool: dict) -> dict:
    """Plant `kind` into a generated conversation (in place); returns the truth entry's details: turn, variant,
    inserted. The conversation was generated for the kind (tools present where needed)."""
    turns = conv["turns"]
    info: dict = {"turn": None, "variant": None, "inserted": None}
    if kind == "empty_reply":
        k = rng.choice(_prose_turns(turns, ("assistant",)))
        variant = rng.choice(("empty", "whitespace", "null") if form == "messages" else ("empty", "whitespace"))
        turns[k]["text"] = {"empty": "", "whitespace": "  \n", "null": None}[variant]
        info.update(turn=k, variant=variant)
    elif kind == "empty_user":
        k = rng.choice(_prose_turns(turns, ("user",)))
        ws = rng.choice((" ", "\n\n", "\u3000", "\t "))
        turns[k]["text"] = ws
        info.update(turn=k, variant="whitespace-only", inserted=ws)
    elif kind == "control_chars":
        k = rng.choice(_prose_turns(turns))
        c = rng.choice(CONTROL_CHARS)
        turns[k]["text"] = _insert(rng, turns[k]["text"], c, spaced=False)
        info.update(turn=k, variant=turns[k]["role"], inserted=c)
    elif kind == "mojibake":
        k = rng.choice(_prose_turns(turns))
        turns[k]["text"], bad = garble(rng, turns[k]["text"])
        info.update(turn=k, variant=turns[k]["role"], inserted=bad)
    elif kind == "special_tokens":
        k = rng.choice(_prose_turns(turns))
        tok = rng.choice(SPECIAL_TOKENS)
        text = turns[k]["text"]
        turns[k]["text"] = text + tok if rng.random() < 0.5 else _insert(rng, text, tok)
        info.update(turn=k, variant=turns[k]["role"], inserted=tok)
    elif kind == "repetition":
        k = rng.choice(_prose_turns(turns, ("assistant",)))
        turns[k]["text"], variant, sentence = repeated(rng, turns[k]["text"])
        info.update(turn=k, variant=variant, inserted=sentence)
    elif kind == "long_unbroken_run":
        k = rng.choice(_prose_turns(turns))
        run, variant = unbroken_run(rng)
        turns[k]["text"] = _insert(rng, turns[k]["text"], " " + run, spaced=True)
        info.update(turn=k, variant=variant, inserted=run)
    elif kind == "unknown_role":
        k = rng.choice(_prose_turns(turns, ("user",)))
        role = rng.choice(UNKNOWN_ROLES[form])
        turns[k]["role"] = role
        turns[k]["raw_role"] = True
        info.update(turn=k, variant=role, inserted=role)
    elif kind == "role_order":
        lang = conv["lang"]
        users = [i for i, t in enumerate(turns) if t["role"] == "user"]
        if rng.random() < 0.5 or len(users) < 2:
            k = rng.choice(users) + 1
            other = rng.choice(pool["plain"]["glaive" if lang == "zh" else "sft"])["turns"][0]["text"]
            turns.insert(k, _turn("user", other))
            info.update(turn=k, variant="two user turns in a row")
        else:
            k = rng.choice(users[1:])
            turns.insert(k, _turn("system", rng.choice(SYSTEM_PROMPTS[lang])))
            info.update(turn=k, variant="system turn after the first")
    elif kind == "last_turn_not_assistant":
        tool_end = [i for i, t in enumerate(turns) if t["role"] == "observation"]
        if tool_end and rng.random() < 0.5:
            del turns[tool_end[-1] + 1:]
            info.update(turn=len(turns) - 1, variant="ends with a tool result")
        else:
            other = rng.choice(pool["plain"]["glaive" if conv["lang"] == "zh" else "sft"])["turns"][0]["text"]
            turns.append(_turn("user", other))
            info.update(turn=len(turns) - 1, variant="ends with a user turn")
    elif kind == "no_assistant_turn":
        first_user = next(i for i, t in enumerate(turns) if t["role"] == "user")
        del turns[first_user + 1:]
        info.update(variant="system + user" if first_user else "user only")
    elif kind == "json_invalid_tools":
        tools = conv["tools"]
        cut = rng.randint(1, min(20, len(tools) - 1))
        conv["tools"] = tools[:-cut]
        info.update(variant=f"cut {cut} chars")
    elif kind == "json_invalid_call":
        k = rng.choice([i for i, t in enumerate(turns) if t["role"] == "function_call"])
        call = json.loads(turns[k]["text"])
        args = json.dumps(call.get("arguments", {}), ensure_ascii=False)
        cut = rng.randint(1, min(8, len(args) - 1))
        turns[k]["text"] = turns[k]["text"].rstrip()[:-cut - 1]       # the call's JSON without its last chars
        turns[k]["bad_arguments"] = args[:-cut]
        info.update(turn=k, variant=f"cut {cut} chars")
    else:
        raise ValueError(f"unknown kind {kind!r}")
    return info


NEEDS = {"json_invalid_tools": "tools", "json_invalid_call": "tools"}


# -------------------------------------------------------------------------------------------- the forms

def to_sharegpt(conv: dict) -> dict:
    turns = [{"from": t["role"] if t.get("raw_role") else SHAREGPT_ROLE.get(t["role"], t["role"]),
              "value": t["text"]} for t in conv["turns"]]
    rec = {"conversations": turns}
    if conv["tools"] is not None:
        rec["tools"] = conv["tools"]
    return rec


def to_messages(conv: dict, rid: str, parts: bool, rng: random.Random) -> dict:
    msgs = []
    call_id = None
    for i, t in enumerate(conv["turns"]):
        role = t["role"]
        if role == "function_call":
            call_id = f"call_{rid[-8:]}_{i}"
            try:
                call = json.loads(t["text"])
                name, args = call.get("name"), json.dumps(call.get("arguments", {}), ensure_ascii=False)
            except ValueError:
                name, args = None, None
            if "bad_arguments" in t:
                name = re.search(r'"name":\s*"([^"]*)"', t["text"]).group(1)
                args = t["bad_arguments"]
            msgs.append({"role": "assistant", "content": None,
                         "tool_calls": [{"id": call_id, "type": "function",
                                         "function": {"name": name, "arguments": args}}]})
            continue
        if role == "observation":
            m = {"role": "tool", "content": t["text"], "tool_call_id": call_id}
        else:
            m = {"role": role, "content": t["text"]}
        if parts and isinstance(m["content"], str):
            content = [{"type": "text", "text": m["content"]}]
            if role == "user" and rng.random() < 0.1:
                content.insert(0, {"type": "image_url", "image_url": {"url": f"https://example.com/img/{rid}-{i}.png"}})
            m["content"] = content
        msgs.append(m)
    rec = {"id": rid, "messages": msgs}
    if conv["tools"] is not None:
        rec["tools"] = conv["tools"]
    return rec


def to_alpaca(conv: dict) -> dict:
    turns = conv["turns"]
    user = next(t["text"] for t in turns if t["role"] == "user")
    reply = next((t["text"] for t in turns if t["role"] == "assistant"), "")
    instruction, inp = user, ""
    if isinstance(user, str) and "\n\n" in user:
        head, rest = user.split("\n\n", 1)
        if len(rest) >= 40 and head.strip():
            instruction, inp = head, rest
    return {"instruction": instruction, "input": inp, "output": reply}


def plant_alpaca(rng: random.Random, rec: dict, kind: str) -> dict:
    info: dict = {"turn": None, "variant": None, "inserted": None}
    if kind == "empty_output":
        rec["output"] = rng.choice(("", " ", "\n"))
        info.update(field="output", variant="empty" if not rec["output"] else "whitespace-only", inserted=rec["output"])
    elif kind == "empty_instruction":
        rec["instruction"] = rng.choice((" ", "\n\n", "\u3000", "\t "))
        info.update(field="instruction", variant="whitespace-only", inserted=rec["instruction"])
    elif kind == "repetition":
        rec["output"], variant, sentence = repeated(rng, rec["output"])
        info.update(field="output", variant=variant, inserted=sentence)
    else:
        f = rng.choice(("instruction", "output"))
        text = rec[f]
        if kind == "control_chars":
            c = rng.choice(CONTROL_CHARS)
            rec[f] = _insert(rng, text, c, spaced=False)
            info.update(inserted=c)
        elif kind == "mojibake":
            rec[f], bad = garble(rng, text)
            info.update(inserted=bad)
        elif kind == "special_tokens":
            tok = rng.choice(SPECIAL_TOKENS)
            rec[f] = text + tok if rng.random() < 0.5 else _insert(rng, text, tok)
            info.update(inserted=tok)
        elif kind == "long_unbroken_run":
            run, variant = unbroken_run(rng)
            rec[f] = _insert(rng, text, " " + run)
            info.update(variant=variant, inserted=run)
        else:
            raise ValueError(f"unknown kind {kind!r}")
        info["field"] = f
    return info


def expected_field(form: str, kind: str, turn: int | None) -> str:
    col = CONV_COLUMN[form]
    if kind in ("unknown_role", "role_order", "last_turn_not_assistant"):
        return f"{col}[{turn}].{ROLE_KEY[form]}"
    if kind == "no_assistant_turn":
        return col
    if kind == "json_invalid_tools":
        return "tools"
    if kind == "duplicate_id":
        return "id"
    if kind == "json_invalid_call" and form == "messages":
        return f"{col}[{turn}].tool_calls[0].function.arguments"
    return f"{col}[{turn}].{TEXT_KEY[form]}"


# ---------------------------------------------------------------------------------------------- writing

def _arrow_schema(form: str, parts: bool = False):
    import pyarrow as pa

    s = pa.string()
    if form == "sharegpt":
        return pa.schema([("conversations", pa.list_(pa.struct([("from", s), ("value", s)]))), ("tools", s)])
    if form == "alpaca":
        return pa.schema([("instruction", s), ("input", s), ("output", s)])
    content = pa.list_(pa.struct([("type", s), ("text", s), ("image_url", pa.struct([("url", s)]))])) if parts else s
    call = pa.struct([("id", s), ("type", s), ("function", pa.struct([("name", s), ("arguments", s)]))])
    turn = pa.struct([("role", s), ("content", content), ("tool_calls", pa.list_(call)), ("tool_call_id", s)])
    return pa.schema([("id", s), ("messages", pa.list_(turn)), ("tools", s)])


def write_shard(records: list[dict], path: Path, fmt: str, schema=None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(records, schema=schema), path, row_group_size=1024)
    elif fmt == "jsonl":
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    elif fmt == "json":
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write("[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n]\n")
    else:
        raise ValueError(fmt)


def shard_path(out: Path, fmt: str, form: str, shard: str) -> Path:
    return Path(out) / fmt / form / f"{shard}.{EXT[fmt]}"


# ------------------------------------------------------------------------------------------------ main

def _plan(rng: random.Random, form: str, n_generated: int, per_kind: int, kinds) -> list[str | None]:
    plan = [k for k in kinds for _ in range(per_kind)]
    if len(plan) > n_generated:
        raise ValueError(f"{form}: {len(plan)} planted records need at least that many generated records "
                         f"(have {n_generated}): raise --records or lower --rate")
    plan += [None] * (n_generated - len(plan))
    rng.shuffle(plan)
    return plan


def build_form(form: str, real: list[dict], pool: dict, records: int, rate: float, seed: int,
               kinds=None) -> dict:
    """{shard: [records]}, truth entries, per-record origin for one form."""
    rng = random.Random(f"{seed}:{form}")
    kinds = tuple(KINDS[form] if kinds is None else [k for k in kinds if k in KINDS[form]])
    n_generated = records - len(real)
    if n_generated < 0:
        raise ValueError(f"--records {records} is below the {len(real)} real records")
    per_kind = max(1, math.ceil(rate * records)) if kinds else 0
    plan = _plan(rng, form, n_generated, per_kind, kinds)
    items = [{"conv": c, "origin": "real", "kind": None, "info": None, "ref": i} for i, c in enumerate(real)]
    for kind in plan:
        need = NEEDS.get(kind) if kind else None
        conv = generate_conv(rng, pool, need)
        items.append({"conv": conv, "origin": "generated", "kind": kind, "info": None, "ref": None})
    rng.shuffle(items)
    shards = SHARDS[form]
    per_shard = math.ceil(len(items) / len(shards))
    out = {s: [] for s in shards}
    origin, truth = [], []
    for i, it in enumerate(items):
        shard = shards[min(i // per_shard, len(shards) - 1)]
        row = len(out[shard])
        rid = f"conv-{hashlib.sha1(f'{seed}:{i}'.encode()).hexdigest()[:12]}"
        kind = it["kind"]
        entry = None
        if form == "alpaca":
            rec = to_alpaca(it["conv"])
            if kind:
                info = plant_alpaca(rng, rec, kind)
                entry = {"field": info.pop("field"), **info}
        else:
            conv = json.loads(json.dumps(it["conv"]))          # a copy: pools are shared
            if kind and kind != "duplicate_id":
                info = plant_conv(rng, conv, kind, form, pool)
                entry = {"field": expected_field(form, kind, info["turn"]), **info}
            if form == "sharegpt":
                rec = to_sharegpt(conv)
            else:
                rec = to_messages(conv, rid, parts=shard.endswith("001"), rng=rng)
        if entry is not None:
            if form != "alpaca" and entry.get("turn") is not None:
                # the role of the planted turn as written (the flag's `role`)
                entry["role"] = rec[CONV_COLUMN[form]][entry["turn"]][ROLE_KEY[form]]
            truth.append({"shard": shard, "row": row, "kind": kind, "check": CHECK_OF[kind], **entry})
        origin.append([shard, row, it["origin"], kind])
        out[shard].append(rec)
    # duplicate ids: each reuses the id of an earlier record of its shard (an unplanted generated one when there
    # is one), as the check defines a duplicate; a duplicate that would be its shard's first record trades places
    # with an unplanted generated record further on (only the id is planted, so the records stay as they are)
    unplanted = {(o[0], o[1]) for o in origin if o[2] == "generated" and o[3] is None}
    for o in origin:
        if o[3] == "duplicate_id" and o[1] == 0:
            swap = next((x for x in origin if x[0] == o[0] and (x[0], x[1]) in unplanted), None)
            if swap is None:
                raise ValueError(f"{o[0]}: no unplanted generated record to hold a duplicate id: raise --records")
            o[3], swap[3] = None, "duplicate_id"
            unplanted.discard((swap[0], swap[1]))
            unplanted.add((o[0], o[1]))
    used = set()
    kind_of = {(o[0], o[1]): o[3] for o in origin}
    for shard, row, _, kind in origin:
        if kind != "duplicate_id":
            continue
        earlier = [(shard, r) for r in range(row) if (shard, r) not in used and kind_of[(shard, r)] != "duplicate_id"]
        preferred = [k for k in earlier if k in unplanted]
        src = rng.choice(preferred or earlier)
        used.add(src)
        rid = out[shard][src[1]]["id"]
        out[shard][row]["id"] = rid
        truth.append({"shard": shard, "row": row, "kind": "duplicate_id", "check": CHECK_OF["duplicate_id"],
                      "field": "id", "turn": None, "variant": "a later record of the same shard", "inserted": rid,
                      "original": [src[0], src[1]]})
    truth.sort(key=lambda t: (t["shard"], t["row"]))
    return {"shards": out, "truth": truth, "origin": origin}


def generate(out: str | Path, records: int = 2000, rate: float = 0.02, seed: int = 0, forms=FORMS,
             formats=FORMATS, kinds=None, real_limit: int | None = None, shared: Path | None = None,
             max_chars: int | None = None, max_exchanges: int | None = None, log=print) -> dict:
    """Write the datasets and OUT/truth.json; returns the truth. real_limit: only that many real records (half
    from each source); max_chars: only real conversations (and exchanges) whose turns are all that short."""
    out = Path(out)
    real = load_real(shared)
    if max_chars is not None:
        real = [c for c in real if all(len(t["text"] or "") <= max_chars for t in c["turns"])
                and len(c["tools"] or "") <= 4 * max_chars]
    pool = build_pool(real)
    if max_exchanges is not None:
        pool["max_exchanges"] = max_exchanges
    if real_limit is not None:                       # an even share of both sources
        g = [c for c in real if c["src"] == "glaive"]
        s = [c for c in real if c["src"] == "sft"]
        real = g[: (real_limit + 1) // 2] + s[: real_limit // 2]
    truth = {"generator_version": GENERATOR_VERSION,
             "params": {"records": records, "rate": rate, "seed": seed, "real_limit": real_limit,
                        "max_chars": max_chars, "max_exchanges": max_exchanges,
                        "kinds": list(kinds) if kinds is not None else None},
             "forms": {}}
    for form in forms:
        built = build_form(form, real, pool, records, rate, seed, kinds)
        for fmt in formats:
            for shard, recs in built["shards"].items():
                schema = _arrow_schema(form, parts=shard.endswith("001")) if fmt == "parquet" else None
                write_shard(recs, shard_path(out, fmt, form, shard), fmt, schema)
        truth["forms"][form] = {"shards": {s: len(r) for s, r in built["shards"].items()},
                                "records": built["origin"], "planted": built["truth"]}
        counts = {k: sum(1 for t in built["truth"] if t["kind"] == k) for k in KINDS[form]}
        counts = {k: n for k, n in counts.items() if n}
        log(f"{form}: {sum(len(r) for r in built['shards'].values())} records "
            f"({sum(1 for o in built['origin'] if o[2] == 'real')} real), planted {counts}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "truth.json").write_text(json.dumps(truth, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return truth


# ------------------------------------------------------------------------------------------------ fixtures

FIXTURE_ARGS = {"records": 20, "rate": 0.05, "seed": 7, "real_limit": 8, "max_chars": 200, "max_exchanges": 2,
                "kinds": ("empty_reply", "empty_user", "control_chars", "special_tokens", "role_order",
                          "no_assistant_turn", "json_invalid_call", "duplicate_id", "empty_output",
                          "long_unbroken_run")}

FIXTURE_README = """# Chat fixtures with planted defects

Tiny chat and instruction datasets for docs and tests, written by `benchmarks/chat_data.py --fixtures
--out fixtures/chat` from the first short conversations of `../shared/data/chat/` (glaive tool calls in
Chinese, v1 SFT in English) plus generated ones: 20 records per form, the same records in three formats.

| form | files | records |
| --- | --- | --- |
| ShareGPT (`conversations: [{{from, value}}]`, `tools` JSON string) | `{{parquet,jsonl,json}}/sharegpt/sharegpt-000.*` | 20 |
| OpenAI messages (`id`, `messages: [{{role, content}}]`, tool calls as `tool_calls`, `tools`) | `{{parquet,jsonl,json}}/messages/messages-000.*` (content strings), `messages-001.*` (content as `[{{type: "text", text}}]` parts) | 10 + 10 |
| Alpaca (`instruction`, `input`, `output`) | `{{parquet,jsonl,json}}/alpaca/alpaca-000.*` | 20 |

```bash
.venv/bin/dataaudit audit fixtures/chat/parquet/messages --out out/chat-messages
.venv/bin/python -c "import pyarrow.parquet as pq; print(pq.read_table('out/chat-messages/flags.parquet').to_pandas())"
```

`truth.json` lists every record (`[shard, row, origin, planted kind]`; origin `real` = a real record,
converted, never planted) and every planted defect. Rows are 0-based record numbers in the shard; a turn is
0-based. What a correct audit reports for each plant (the check, at that row and field):

| form | shard | row | kind | check | field | what was planted |
| --- | --- | --- | --- | --- | --- | --- |
{rows}

Notes:
- A correct audit of these files reports exactly the rows of this table, nothing more
  (`tests/chat_bench/test_chat_bench.py` checks it).
- `json_invalid_call` in the messages form is a truncated `tool_calls[0].function.arguments` string: the
  arguments of tool calls are JSON segments of their turn, checked by `json_invalid`.
- Not defects, and not flagged: the messages form's tool-call turns have `content: null` (OpenAI's convention
  for an assistant turn that only calls a tool), and most Alpaca records have an empty `input`.
"""


def shown(s, limit: int = 48) -> str:
    """A planted string as the README shows it: JSON-quoted, control characters escaped, long ones cut."""
    n = len(s)
    if n > limit:
        s = s[:limit]
    s = json.dumps(s, ensure_ascii=False)
    s = re.sub("[\x00-\x1f\x7f-\x9f]", lambda m: f"\\u{ord(m.group()):04x}", s)
    if n > limit:
        s = s[:-1] + f'…" ({n} chars)'
    return s.replace("|", "\\|")


def write_fixtures(out: str | Path) -> dict:
    out = Path(out)
    a = FIXTURE_ARGS
    truth = generate(out, a["records"], a["rate"], a["seed"], kinds=a["kinds"], real_limit=a["real_limit"],
                     max_chars=a["max_chars"], max_exchanges=a["max_exchanges"], log=lambda s: None)
    rows = []
    for form, ft in truth["forms"].items():
        for t in ft["planted"]:
            what = (t.get("variant") or "").replace("|", "\\|")
            if t.get("inserted") is not None:
                what = f"{what}: {shown(t['inserted'])}" if what else shown(t["inserted"])
            rows.append(f"| {form} | {t['shard']} | {t['row']} | {t['kind']} | `{t['check']}` | `{t['field']}` | "
                        f"{what} |")
    (out / "README.md").write_text(FIXTURE_README.format(rows="\n".join(rows)), encoding="utf-8")
    return truth


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output folder (OUT/<format>/<form>/<shard>.<ext>, OUT/truth.json)")
    ap.add_argument("--records", type=int, default=2000, help="records per form (default 2000)")
    ap.add_argument("--rate", type=float, default=0.02, help="share of records planted per kind (default 0.02)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--forms", default=",".join(FORMS))
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--kinds", default=None, help="comma-separated kinds to plant (default: every kind of the form)")
    ap.add_argument("--real", type=int, default=None, help="use only this many real records (half per source)")
    ap.add_argument("--max-chars", type=int, default=None, help="only real conversations with turns this short")
    ap.add_argument("--fixtures", action="store_true",
                    help="write the committed fixture set (fixtures/chat: 20 records per form, a few plants, "
                         "README.md with the truth table) into --out; other options are ignored")
    args = ap.parse_args(argv)
    if args.fixtures:
        write_fixtures(args.out)
        return 0
    generate(args.out, args.records, args.rate, args.seed, tuple(args.forms.split(",")),
             tuple(args.formats.split(",")), args.kinds.split(",") if args.kinds else None, args.real,
             max_chars=args.max_chars)
    return 0


if __name__ == "__main__":
    sys.exit(main())
