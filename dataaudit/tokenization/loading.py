"""Load a tokenizer as a user ships it: a `tokenizer.json`, or a folder with `tokenizer.json` plus the optional
`tokenizer_config.json`, `special_tokens_map.json` and `chat_template.jinja` / `chat_template.json`.

Only local files are read (no hub access) and only as JSON or text; nothing is unpickled or executed. The
settings that `transformers` would take from the config files (padding/truncation side, model_max_length,
add_bos/add_eos, the BOS/EOS/PAD/UNK tokens, the chat template) are resolved here with their source, so a
diff can say where a value came from.
"""
from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dataaudit.errors import DataAuditError

TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILE = "tokenizer_config.json"
SPECIAL_MAP_FILE = "special_tokens_map.json"
CHAT_JINJA_FILE = "chat_template.jinja"
CHAT_JSON_FILE = "chat_template.json"
UNLIMITED_LENGTH = 10**9          # model_max_length at or above this is transformers' "no limit" sentinel
# The largest tokenizer file read (the largest real tokenizer.json files are ~50 MB): a larger one is refused
# before it is read (parsing it would need several times its size).
MAX_FILE_BYTES = 256 << 20
SPECIAL_ROLES = ("bos", "eos", "pad", "unk")
_BYTE_TOKEN = re.compile(r"^<0x[0-9A-Fa-f]{2}>$")


class TokenizerLoadError(DataAuditError, ValueError):
    """A tokenizer that cannot be used; the message is one line naming the file."""


@dataclass
class SpecialToken:
    token: str | None
    id: int | None
    source: str | None          # which file/setting named it, None when the tokenizer has none

    def to_json(self) -> dict:
        return {"token": self.token, "id": self.id, "source": self.source}


@dataclass
class TokenizerBundle:
    path: str
    tokenizer: Any                                  # tokenizers.Tokenizer
    spec: dict                                      # canonical tokenizer.json (re-serialized by the library)
    files: list[str]
    config: dict = field(default_factory=dict)      # tokenizer_config.json over special_tokens_map.json
    config_sources: dict[str, str] = field(default_factory=dict)   # config key -> file it came from
    settings: dict = field(default_factory=dict)    # name -> {"value", "source"}
    special: dict[str, SpecialToken] = field(default_factory=dict)
    chat_template: str | None = None
    chat_template_source: str | None = None
    _unpadded: Any = field(default=None, repr=False)

    @property
    def encoder(self):
        """The tokenizer without batch padding: padding is compared as a setting, never as ids (a padded batch
        would make each text's ids depend on its neighbours). Truncation stays: it is part of the model input."""
        if self.tokenizer.padding is None:
            return self.tokenizer
        if self._unpadded is None:
            from tokenizers import Tokenizer

            self._unpadded = Tokenizer.from_str(self.tokenizer.to_str())
            self._unpadded.no_padding()
        return self._unpadded

    @property
    def model_type(self) -> str | None:
        return self.spec.get("model", {}).get("type")

    def setting(self, name: str):
        return self.settings[name]["value"]

    def special_ids(self) -> set[int]:
        """Ids of the added tokens marked special (control tokens)."""
        return {t["id"] for t in self.spec.get("added_tokens", []) if t.get("special")}

    def byte_fallback_ids(self) -> list[int]:
        """Ids of the `<0xNN>` byte tokens when the model falls back to bytes, else []."""
        model = self.spec.get("model", {})
        if not model.get("byte_fallback"):
            return []
        return sorted(i for t, i in _model_vocab(model).items() if _BYTE_TOKEN.match(t))

    def summary(self) -> dict:
        return {
            "path": self.path, "files": self.files, "model_type": self.model_type,
            "vocab_size": self.tokenizer.get_vocab_size(with_added_tokens=True),
            "model_vocab_size": self.tokenizer.get_vocab_size(with_added_tokens=False),
            "added_tokens": len(self.spec.get("added_tokens", [])),
            "settings": self.settings,
            "special_tokens": {r: self.special[r].to_json() for r in SPECIAL_ROLES},
            "chat_template": self.chat_template_source,
        }


def _model_vocab(model: dict) -> dict[str, int]:
    vocab = model.get("vocab") or {}
    if isinstance(vocab, list):     # Unigram: [[piece, score], ...], id = position
        return {piece[0]: i for i, piece in enumerate(vocab)}
    return dict(vocab)


def _present(path: Path) -> bool:
    """Whether a tokenizer file is there: a regular file (or a link to one). A FIFO, a device or a socket under
    that name is an error, never opened (a FIFO blocks its reader, /dev/zero never ends)."""
    from dataaudit.io import not_regular

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    what = not_regular(mode)
    if what is not None:
        raise TokenizerLoadError(f"{path}: not a regular file ({what})")
    return not stat.S_ISDIR(mode)


def _read_text(path: Path) -> str:
    """A tokenizer file as text: only a regular file is opened (dataaudit.io), at most MAX_FILE_BYTES."""
    from dataaudit.io import read_bytes

    try:
        data = read_bytes(path, MAX_FILE_BYTES)
    except OSError as exc:
        raise TokenizerLoadError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise TokenizerLoadError(f"{path}: larger than {MAX_FILE_BYTES} bytes (not read)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise TokenizerLoadError(f"{path}: not UTF-8 text") from None


def _read_json(path: Path) -> Any:
    return _parse_json(path, _read_text(path))


def _parse_json(path: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TokenizerLoadError(f"{path}: not valid JSON: {exc}") from None


def _token_content(value: Any) -> str | None:
    """Config files write a special token as a string or as an AddedToken dict {"content": ...}."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def _template_specials(post: dict | None) -> tuple[str | None, str | None]:
    """(BOS, EOS) a TemplateProcessing post-processor puts around a single sequence (also inside a Sequence)."""
    if not post:
        return None, None
    if post.get("type") == "Sequence":
        for p in post.get("processors", []):
            found = _template_specials(p)
            if found != (None, None):
                return found
        return None, None
    if post.get("type") == "TemplateProcessing":
        single = post.get("single", [])
        first = single[0].get("SpecialToken", {}).get("id") if single and "SpecialToken" in single[0] else None
        last = single[-1].get("SpecialToken", {}).get("id") if single and "SpecialToken" in single[-1] else None
        return first, (last if len(single) > 1 else None)
    if post.get("type") in ("BertProcessing", "RobertaProcessing"):
        return post.get("cls", [None])[0], post.get("sep", [None])[0]
    return None, None


def _load_tokenizer_json(path: Path):
    from tokenizers import Tokenizer

    text = _read_text(path)
    _parse_json(path, text)   # one clear error for a file that is not JSON at all
    try:
        tok = Tokenizer.from_str(text)    # the bytes read once, from the regular file checked
    except Exception as exc:   # the library raises its own untyped errors for a file it cannot use
        raise TokenizerLoadError(f"{path}: not a usable HF tokenizers file: {' '.join(str(exc).split())}") from None
    spec = json.loads(tok.to_str())
    model = spec.get("model", {})
    if isinstance(model.get("merges"), list):
        # Pairs as tuples: tens of thousands of small lists would otherwise slow every garbage collection.
        model["merges"] = [tuple(m) if isinstance(m, list) else m for m in model["merges"]]
    return tok, spec


def load_bundle(path: str | os.PathLike) -> TokenizerBundle:
    """A tokenizer.json file, or a folder holding one plus its optional config files."""
    p = Path(path)
    _present(p)      # a FIFO or a device: one line naming it
    if p.is_dir():
        tok_file = p / TOKENIZER_FILE
        if not _present(tok_file):
            raise TokenizerLoadError(f"{p}: folder has no {TOKENIZER_FILE} (only the HF tokenizers format is "
                                     "read; tokenizer.model / vocab.json + merges.txt are not)")
        folder = p
    elif p.is_file():
        tok_file, folder = p, None
    else:
        raise TokenizerLoadError(f"{p}: path not found (give a local tokenizer.json or a folder; "
                                 "hub names are not fetched)")
    tokenizer, spec = _load_tokenizer_json(tok_file)
    files = [str(tok_file)]
    config: dict = {}
    config_sources: dict[str, str] = {}
    chat, chat_source = None, None
    if folder is not None:
        for name in (SPECIAL_MAP_FILE, CONFIG_FILE):     # the config wins over the special tokens map
            f = folder / name
            if _present(f):
                data = _read_json(f)
                if not isinstance(data, dict):
                    raise TokenizerLoadError(f"{f}: expected a JSON object, got {type(data).__name__}")
                config.update(data)
                config_sources.update(dict.fromkeys(data, name))
                files.append(str(f))
        if _present(folder / CHAT_JINJA_FILE):
            f = folder / CHAT_JINJA_FILE
            chat, chat_source = _read_text(f), CHAT_JINJA_FILE
            files.append(str(f))
        elif _present(folder / CHAT_JSON_FILE):
            f = folder / CHAT_JSON_FILE
            data = _read_json(f)
            chat = data.get("chat_template") if isinstance(data, dict) else None
            chat_source = CHAT_JSON_FILE
            files.append(str(f))
    if chat is None and "chat_template" in config:
        chat, chat_source = config["chat_template"], CONFIG_FILE
    if isinstance(chat, list):   # [{"name": ..., "template": ...}]: the default one is what apply_chat_template uses
        named = {t.get("name"): t.get("template") for t in chat if isinstance(t, dict)}
        chat = named.get("default", next(iter(named.values()), None))
    if chat is not None and not isinstance(chat, str):
        raise TokenizerLoadError(f"{chat_source}: chat_template must be a string or a list of named templates")
    bundle = TokenizerBundle(str(p), tokenizer, spec, files, config, chat_template=chat,
                             chat_template_source=chat_source if chat is not None else None)
    bundle.config_sources = config_sources
    bundle.settings = _resolve_settings(spec, config, config_sources)
    bundle.special = _resolve_special(tokenizer, spec, config, config_sources)
    for key in ("padding_side", "truncation_side"):
        value = bundle.setting(key)
        if value not in ("left", "right"):
            where = Path(folder or p) / config_sources.get(key, TOKENIZER_FILE)
            raise TokenizerLoadError(f"{where}: {key} must be 'left' or 'right', got {value!r}")
    return bundle


def _setting(value, source) -> dict:
    return {"value": value, "source": source}


def _resolve_settings(spec: dict, config: dict, sources: dict[str, str]) -> dict:
    """What transformers' fast tokenizer would use: the config first, then tokenizer.json, then its defaults."""
    padding, truncation = spec.get("padding"), spec.get("truncation")
    s = {}
    if "padding_side" in config:
        s["padding_side"] = _setting(config["padding_side"], sources["padding_side"])
    elif padding:
        s["padding_side"] = _setting(str(padding.get("direction", "Right")).lower(), "tokenizer.json padding")
    else:
        s["padding_side"] = _setting("right", "default")
    if "truncation_side" in config:
        s["truncation_side"] = _setting(config["truncation_side"], sources["truncation_side"])
    elif truncation:
        s["truncation_side"] = _setting(str(truncation.get("direction", "Right")).lower(), "tokenizer.json truncation")
    else:
        s["truncation_side"] = _setting("right", "default")
    mml = config.get("model_max_length")
    if isinstance(mml, (int, float)) and mml < UNLIMITED_LENGTH:
        s["model_max_length"] = _setting(int(mml), sources["model_max_length"])
    elif truncation and truncation.get("max_length"):
        s["model_max_length"] = _setting(int(truncation["max_length"]), "tokenizer.json truncation")
    else:
        s["model_max_length"] = _setting(None, sources.get("model_max_length", "default"))
    for key in ("add_bos_token", "add_eos_token"):
        s[key] = _setting(config[key], sources[key]) if key in config else _setting(None, "default")
    s["padding"] = _setting(padding, "tokenizer.json")
    s["truncation"] = _setting(truncation, "tokenizer.json")
    return s


def _resolve_special(tokenizer, spec: dict, config: dict, sources: dict[str, str]) -> dict[str, SpecialToken]:
    bos_t, eos_t = _template_specials(spec.get("post_processor"))
    padding = spec.get("padding") or {}
    fallback = {"bos": (bos_t, "tokenizer.json post_processor"), "eos": (eos_t, "tokenizer.json post_processor"),
                "pad": (padding.get("pad_token"), "tokenizer.json padding"),
                "unk": (spec.get("model", {}).get("unk_token"), "tokenizer.json model")}
    out = {}
    for role in SPECIAL_ROLES:
        key = f"{role}_token"
        token, source = None, None
        if key in config and config[key] is not None:
            token, source = _token_content(config[key]), sources[key]
        elif fallback[role][0] is not None:
            token, source = fallback[role]
        out[role] = SpecialToken(token, tokenizer.token_to_id(token) if token is not None else None, source)
    return out
