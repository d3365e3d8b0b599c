"""Which column is what: the ONE field-resolution rule of every command (audit, guard, dedup, contamination,
tokenizer-drift samples).

Pure Python over a description of the columns: an Arrow schema (`arrow_columns`) or a training batch (the guard
describes its tensors with `Column`s itself, so importing this module loads neither pyarrow nor torch).

Column kinds: a string; a list of strings; a conversation (a list of turns: structs with a role key `role` or
`from` and a text key `content`, `value` or `text`, the text possibly a list of parts `{type, text|value}`);
numbers; anything else ("other": named in notes as unchecked). A sample of a string column's values marks it as
an identifier (no whitespace, nearly unique) or as JSON documents.

The rule, for each role (a name the user configured always wins; a configured name of the wrong type is a
problem, reported, and never silently replaced by another column):
  text            configured (one or more names; dotted paths reach into structs, `messages.content` means the
                  conversation), else every string, list-of-strings and conversation column that is not an
                  identifier (`id`, `*_id`, `uuid`, `key`, or by its values) nor JSON; "text"/"content" first.
                  Beside other text, a flat `input`, `context`, `system` or `system_prompt` is optional: a null or
                  empty value there is no text (Alpaca's empty `input`), not an empty text
  json            string columns whose values are JSON documents (a `tools` column), unless configured as text
  label           configured, else (only when the data has classes) "label", "labels", "cls"
  input_ids       configured, else "input_ids"
  attention_mask  configured, else "attention_mask"
  token_labels    configured, else (only beside input_ids) "labels" when it holds a list of integers per sample
                  (HF causal-LM labels: aligned with input_ids, -100 = not trained); a scalar "labels" stays a class
                  label
  train_mask      configured, else (only beside input_ids) the first of "assistant_masks", "assistant_mask",
                  "loss_mask" holding a list of numbers per sample (1 = trained token, 0 = not)
  image_tensor    configured, else the first of "pixel_values", "image", "images", "img", "pixels" that is an image
                  tensor: float or uint8, 3 dims per sample ([C, H, W]; a guard tensor of 4 dims). An Arrow column's
                  dims are those stored beside it in `<name>.shape` (WebDataset .npy; the first sample's when the
                  rule sees a sample batch): a nested Parquet list has none and is never an image tensor. A float
                  image tensor is numeric too
  numeric         configured, else every floating-point column (scalars, lists, tensors) not used above
  id              the first column named like an identifier (checked for duplicate ids)
  image           configured, else every image column: binary (WebDataset image members arrive as binary
                  columns named by their extension; a binary column whose sampled values are not images is not
                  one), a struct with `bytes` (and `path`: the Hugging Face image layout), or image paths: a
                  string column named `image`/`image_path`/... or whose values all end in an image extension,
                  and a list of paths (`images` next to `messages`); lists of any of these too. Beside images,
                  a flat text field is a caption: its null, empty or blank value is the pairing checks' to report
  media           every video or audio column (Column.media "video" or "audio"), in the image forms: paths (a
                  string or list-of-strings column named `videos`/`audios`/`video`/`audio`/... or whose values all
                  end in a video or an audio extension), binary (WebDataset .mp4/.wav/... members, named by their
                  extension; a Parquet binary column whose sampled values have a media signature), or structs
                  with `bytes` holding such bytes. Never text: no text check or length histogram reads them
Provenance columns (dataaudit.provenance) are never data. A configured name that no shard has is a usage
error: `missing_fields` finds those.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

from dataaudit.provenance import RESERVED_NAMES

TEXT_NAMES = ("text", "content")
LABEL_NAMES = ("label", "labels", "cls")
DTYPE_SUFFIX = ".dtype"   # WebDataset .npy members carry their per-sample dtype in "<name>.dtype"
SHAPE_SUFFIX = ".shape"
ROLES = ("text", "image", "numeric", "label", "input_ids", "attention_mask", "image_tensor", "token_labels",
         "train_mask")
# What is trained in tokenized data (beside input_ids): per-token labels, or a 0/1 mask of the trained tokens.
TOKEN_LABEL_NAMES = ("labels",)
TRAIN_MASK_NAMES = ("assistant_masks", "assistant_mask", "loss_mask")
IMAGE_TENSOR_NAMES = ("pixel_values", "image", "images", "img", "pixels")
# string: one text per record; strings: a list of texts; conversation: a list of turns (structs with a role and a
# text, the text possibly a list of parts); other: nothing a check reads (struct, binary, list of structs, ...)
KINDS = ("string", "strings", "conversation", "image", "media", "float", "int", "bool", "other")
TEXT_KINDS = ("string", "strings", "conversation")

# Conversations: the keys a turn's role and text go by (OpenAI messages, ShareGPT conversations), the key of a
# part's text when the text is a list of parts, and the roles on the assistant's side.
ROLE_KEYS = ("role", "from")
TURN_TEXT_KEYS = ("content", "value", "text")
PART_TEXT_KEYS = ("text", "value")
ASSISTANT_ROLES = ("assistant", "gpt", "model", "bot", "chatbot")
# Turns whose text is a JSON document (a function call and its result, ShareGPT tool data): checked as JSON.
JSON_ROLES = ("function_call", "observation")
# The column declaring the tools a conversation may call (dataaudit.tool_turns): a JSON string or a list of structs.
TOOLS_NAMES = ("tools", "functions")

# Flat text fields often left empty on purpose next to other text fields (Alpaca's `input`, Dolly's `context`, an
# empty system prompt): their null and empty values are no text, so they are not flagged as empty text (a
# whitespace-only value still is).
OPTIONAL_TEXT_NAMES = ("input", "context", "system", "system_prompt")

# Images: file extensions (WebDataset members, paths), the names of path columns, and the image forms a column
# holds (raw bytes, a struct {bytes, path}, a path to a file next to the shard).
IMAGE_EXTENSIONS = ("jpg", "jpeg", "png", "webp", "gif", "bmp", "tif", "tiff")
IMAGE_PATH_NAMES = ("image", "images", "image_path", "image_paths", "image_file", "image_files", "img", "img_path")
IMAGE_FORMS = ("bytes", "struct", "path")
# Video and audio: the extensions of their files (WebDataset members, paths) and the names of the fields that hold
# them (LLaMA-Factory's `videos`/`audios`, a single `video`/`audio`), and the content-part types that carry them.
VIDEO_EXTENSIONS = ("mp4", "webm", "avi", "mkv", "mov")
AUDIO_EXTENSIONS = ("wav", "flac", "mp3", "ogg", "opus", "m4a")
VIDEO_PATH_NAMES = ("video", "videos", "video_path", "video_paths", "video_file", "video_files")
AUDIO_PATH_NAMES = ("audio", "audios", "audio_path", "audio_paths", "audio_file", "audio_files")
MEDIA_EXTENSIONS = IMAGE_EXTENSIONS + VIDEO_EXTENSIONS + AUDIO_EXTENSIONS

# Where a content part holds an image, a video or an audio clip, in the chat formats that put media inside
# messages: OpenAI's {"type": "image_url", "image_url": {"url": ...}} and {"type": "input_audio", "input_audio":
# {"data": base64, "format": "wav"}}, LLaMA-Factory v1's {"type": "image_url", "value": ...} (the part's text key, so
# only parts of those types), Qwen-VL's {"type": "image", "image": ...} and {"type": "video", "video": ...}.
# kind -> ((key path, part types or None: any part whose key holds a string), ...). The value is a path, a data:
# URL or a URL (never fetched); input_audio's base64 is read as a data: URL of its format.
PART_SOURCES = {
    "image": (("image_url.url", None), ("image_url", None), ("image", None), ("value", ("image_url", "image"))),
    "video": (("video_url.url", None), ("video_url", None), ("video", None), ("value", ("video_url", "video"))),
    "audio": (("audio_url.url", None), ("audio_url", None), ("audio", None), ("input_audio.data", None),
              ("value", ("audio_url", "audio", "input_audio"))),
}

# Beside images, strings that describe the file, not the picture (a WebDataset sample's .json metadata member, an
# img2dataset parquet): never a caption, not prose, unless configured as text.
METADATA_NAMES = ("key", "url", "source", "status", "license", "sha256", "md5", "hash", "error_message", "filename",
                  "file_name", "path", "uid", "exif", "mime", "mimetype", "format", "original_url", "site", "domain")

ID_NAMES = ("id", "uuid", "guid", "key", "idx")
ID_SUFFIXES = ("_id", "_uuid", "_key")


@dataclass(frozen=True)
class Column:
    """What resolution needs to know of one column: its name, the kind of its (leaf) values, the type to show in
    messages, and whether it holds one value per sample only (a 0-dim tensor does not: it is no field).

    A conversation also names its keys: each turn's role and text, and a part's text when turns hold lists of
    parts. `hint` is what a sample of a string column's values looked like: "identifier" (no whitespace, nearly
    unique) or "json" (JSON documents); such columns are not audited as prose. `nested`: a string inside a
    struct column, named by its dotted path ("question.stem"): used when configured, never picked by itself.
    `optional`: a text field whose null or empty values are no text (OPTIONAL_TEXT_NAMES beside other text)."""

    name: str
    kind: str          # one of KINDS
    type_name: str
    per_sample: bool = True
    role_key: str | None = None
    text_key: str | None = None
    part_key: str | None = None
    hint: str | None = None
    nested: bool = False
    optional: bool = False
    image: str | None = None       # an image or media column's form (IMAGE_FORMS); many: a list per record
    many: bool = False
    # the form its values would have as images (binary, string, ...), for a column the user names as images
    can_image: tuple[str, bool] | None = field(default=None, compare=False, repr=False)
    caption: bool = False          # a text field beside images: blank values are the pairing checks' to report
    # A tensor's dims per sample and element dtype name, when known: a guard tensor's (after the batch dim), an
    # Arrow column's from the `<name>.shape` / `<name>.dtype` columns beside it in a sample batch (image tensors).
    ndim: int | None = None
    dtype: str | None = None
    single: bool = False           # a conversation of one turn stored as a struct (LLaMA-Factory's `chosen`)
    # Media inside a conversation's content parts (PART_SOURCES): the conversation column, its turn and part
    # keys, and where a part holds its image (a key path, with the part types that mark it, or None for any part).
    # The column is then no column of the schema: `top` is the conversation, and a flag names its part.
    parts_of: str | None = None
    part_sources: tuple = ()
    media: str | None = None       # a media column (kind "media"): "video" or "audio"

    @property
    def numeric(self) -> bool:
        return self.kind in ("float", "int", "bool")

    @property
    def sequence(self) -> bool:
        """One flat list of values per sample: a guard tensor [B, T], an Arrow list of scalars (not a list of lists),
        a stored `.shape` of one dim."""
        if self.ndim is not None:
            return self.ndim == 1
        t = self.type_name
        return t.startswith(("list<", "large_list<", "fixed_size_list<")) and t.count("list<") == 1

    @property
    def top(self) -> str:
        """The top-level column a reader must read for this one."""
        if self.parts_of is not None:
            return self.parts_of
        return self.name.split(".", 1)[0] if self.nested else self.name

    def describe(self) -> str:
        """The format as the summary and report show it."""
        if self.kind == "conversation":
            text = f"{self.text_key}[].{self.part_key}" if self.part_key else self.text_key
            return f"{'turn' if self.single else 'conversation'} ({self.role_key}, {text})"
        if self.kind == "strings":
            return "list of texts"
        if self.hint == "json":
            return "JSON text"
        if self.kind == "media":
            if self.parts_of is not None:
                return f"{self.media} in content parts of {self.parts_of} (paths, data: URLs, URLs)"
            form = {"bytes": "bytes", "struct": "{bytes, path}", "path": "path"}[self.image]
            return f"{'list of ' if self.many else ''}{self.media} {form}{'s' if self.many else ''}"
        if self.kind == "image":
            if self.parts_of is not None:
                return f"images in content parts of {self.parts_of} (paths, data: URLs, URLs)"
            if self.many:
                return {"bytes": "list of image bytes", "struct": "list of images {bytes, path}",
                        "path": "list of image paths"}[self.image]
            return {"bytes": f"image bytes{_suffix_note(self.name)}", "struct": "image {bytes, path}",
                    "path": "image path"}[self.image]
        return "text" if self.kind == "string" else self.type_name


def is_identifier_name(name: str) -> bool:
    low = name.lower()
    return low in ID_NAMES or low.endswith(ID_SUFFIXES)


@dataclass(frozen=True)
class FieldSpec:
    """What the user named ([fields] of the audit config, --text-field, the guard's overrides); None = automatic.
    text: one or more fields, top-level columns or dotted paths (`question.stem`, `messages.content`).
    auto_label: pick a label column by its name only when the data has classes ([data] num_classes)."""

    text: tuple[str, ...] | None = None
    image: tuple[str, ...] | None = None
    numeric: tuple[str, ...] | None = None
    label: str | None = None
    input_ids: str | None = None
    attention_mask: str | None = None
    auto_label: bool = False
    image_tensor: str | None = None
    pairs: Mapping | None = field(default=None, compare=False)   # a dataset_info.json entry for this shard
    token_labels: str | None = None
    train_mask: str | None = None

    def __post_init__(self):
        for role in ("text", "image"):
            if isinstance(getattr(self, role), str):   # one name given as a string
                object.__setattr__(self, role, (getattr(self, role),))

    @classmethod
    def from_config(cls, fields: Mapping, data: Mapping = {}) -> "FieldSpec":  # noqa: B006 (read only)
        numeric = fields.get("numeric")
        if isinstance(numeric, str):
            numeric = (numeric,)
        text = fields.get("text")
        image = fields.get("image")
        return cls(text=None if text is None else tuple([text] if isinstance(text, str) else text),
                   image=None if image is None else tuple([image] if isinstance(image, str) else image),
                   numeric=None if numeric is None else tuple(numeric),
                   label=fields.get("label"), input_ids=fields.get("input_ids"),
                   attention_mask=fields.get("attention_mask"), auto_label="num_classes" in data,
                   image_tensor=fields.get("image_tensor"), token_labels=fields.get("token_labels"),
                   train_mask=fields.get("train_mask"))

    def configured(self) -> dict[str, tuple[str, ...]]:
        """role -> the names the user gave for it."""
        out = {role: (getattr(self, role),) for role in ("label", "input_ids", "attention_mask", "image_tensor",
                                                         "token_labels", "train_mask")
               if getattr(self, role) is not None}
        if self.image:
            out = {"image": self.image, **out}
        if self.text:
            out = {"text": self.text, **out}
        if self.numeric:
            out["numeric"] = self.numeric
        return out


@dataclass(frozen=True)
class Fields:
    """The columns of one schema, by role, and the configured columns that could not be used (with why).

    text: every field of text the model trains on (flat strings, lists of strings, conversations), the primary
    one first (the text token ids were made from; shown next to numeric findings). json: string columns holding
    JSON documents (checked for validity, not as prose). id: the record id column (checked for duplicates).
    identifiers: columns read as identifiers, not prose. unchecked: columns no check reads (named in notes)."""

    text: tuple[Column, ...] = ()
    numeric: tuple[str, ...] = ()
    label: str | None = None
    input_ids: str | None = None
    attention_mask: str | None = None
    json: tuple[Column, ...] = ()
    id: str | None = None
    identifiers: tuple[str, ...] = ()
    unchecked: tuple[Column, ...] = ()
    problems: tuple[str, ...] = field(default_factory=tuple)
    images: tuple[Column, ...] = ()
    image_tensor: str | None = None   # decoded images ([C, H, W] per sample); also numeric when float
    pairs: "PairLayout | None" = None  # preference pairs or KTO records (dataaudit.fields, pair block)
    tools: str | None = None          # the tools declared beside a conversation (read by the tool-call checks)
    token_labels: str | None = None   # per-token labels beside input_ids (-100: not trained)
    train_mask: str | None = None     # per-token 0/1 mask of the trained tokens beside input_ids
    media: tuple[Column, ...] = ()    # video and audio fields (Column.media), probed by dataaudit.media

    @property
    def primary_text(self) -> str | None:
        """The first flat text field (None when the text is only in conversations or lists)."""
        return next((c.name for c in self.text if c.kind == "string"), None)

    def roles(self) -> dict[str, list[str]]:
        """role -> columns (every role, possibly empty): what a report says was resolved."""
        single = lambda c: [c] if c else []  # noqa: E731
        return {"text": [c.name for c in self.text], "image": [c.name for c in self.images],
                **({"media": [c.name for c in self.media]} if self.media else {}),   # only media data has it
                "json": [c.name for c in self.json],
                "numeric": list(self.numeric), "label": single(self.label), "input_ids": single(self.input_ids),
                "attention_mask": single(self.attention_mask), "id": single(self.id),
                "image_tensor": single(self.image_tensor), "token_labels": single(self.token_labels),
                "train_mask": single(self.train_mask),
                **({"pairs": [self.pairs.describe()]} if self.pairs else {})}   # only pair data has the role

    def formats(self) -> dict[str, str]:
        """field -> its format, for the text and JSON fields and the identifiers."""
        out = {c.name: c.describe() for c in (*self.text, *self.json, *self.images, *self.media)}
        out.update({name: "metadata (not audited as prose)" if self.images and name.lower() in METADATA_NAMES
                    else "identifier (not audited as prose)" for name in self.identifiers if name not in out})
        return out

    def columns(self) -> list[str]:
        """Every top-level column some role uses, plus the per-sample dtype companions of numeric columns."""
        cols = [c.top for c in self.text] + [c.name for c in self.json] + [c.top for c in self.images]
        cols += [c.top for c in self.media]
        cols += [*self.numeric, self.label, self.input_ids, self.attention_mask, self.token_labels, self.train_mask,
                 self.id]
        cols += [c + DTYPE_SUFFIX for c in self.numeric]
        if self.pairs is not None:
            cols += list(self.pairs.reads)
        if self.image_tensor:
            cols += [self.image_tensor, self.image_tensor + SHAPE_SUFFIX, self.image_tensor + DTYPE_SUFFIX]
        cols.append(self.tools)
        return [c for c in dict.fromkeys(cols) if c]


_EXPECTED = {"text": ("text (a string, a list of strings or a conversation)", lambda c: c.kind in TEXT_KINDS),
             "image": ("images (binary, a struct with bytes, or paths)", lambda c: c.kind == "image"),
             "numeric": ("numbers", lambda c: c.numeric and c.per_sample),
             "label": ("numbers", lambda c: c.numeric),
             "input_ids": ("numbers", lambda c: c.numeric),
             "attention_mask": ("numbers", lambda c: c.numeric),
             "token_labels": ("a list of integers per sample (token labels)",
                              lambda c: c.kind == "int" and c.per_sample and c.sequence),
             "train_mask": ("a list of 0/1 numbers per sample (a mask of the trained tokens)",
                            lambda c: c.numeric and c.per_sample and c.sequence)}


def _image_tensor(cols: dict[str, Column], configured: str | None, problems: list[str]) -> str | None:
    """The image tensor field: the configured column (a problem when it is not one), else the first column named
    in IMAGE_TENSOR_NAMES that is one (a column so named that is not, e.g. `image` bytes or paths, is left alone)."""

    def fits(c: Column) -> bool:
        if not c.per_sample or c.kind not in ("float", "int") or (c.kind == "int" and c.dtype not in (None, "uint8")):
            return False
        if c.ndim is None:  # an Arrow column without a sample batch: shaped when its shapes are stored beside it
            return c.name + SHAPE_SUFFIX in cols
        return c.ndim == 3

    if configured is None:
        return next((n for n in IMAGE_TENSOR_NAMES if n in cols and fits(cols[n])), None)
    col = cols.get(configured)
    if col is not None and not fits(col):
        problems.append(f"column {configured!r} (image_tensor) is {col.type_name}, expected an image tensor (float "
                        "or uint8, [C, H, W] per sample): its checks are skipped")
        return None
    return configured if col is not None else None


def _configured_text(name: str, cols: dict[str, Column]) -> Column | None:
    """The column a configured text name means: a column, a struct's string (`question.stem`), or a
    conversation named by its text (`messages.content`)."""
    if name in cols:
        return cols[name]
    head, _, rest = name.partition(".")
    conv = cols.get(head)
    if conv is not None and conv.kind == "conversation" and rest in (conv.text_key, f"{conv.text_key}.{conv.part_key}"):
        return conv
    return None


def _configured_image(col: Column | None) -> Column | None:
    """A column the user named as images: as it is when its type can hold images (a string column is then read
    as paths, a binary one as image bytes, whatever its values looked like)."""
    if col is None or col.kind == "image" or col.can_image is None:
        return col
    return replace(col, kind="image", image=col.can_image[0], many=col.can_image[1])


def _suffix_note(name: str) -> str:
    ext = name.rsplit(".", 1)[-1].lower()
    return f" (.{ext})" if ext in IMAGE_EXTENSIONS else ""


def _auto_text(cols: dict[str, Column]) -> list[Column]:
    """Every text column that is not an identifier or JSON, "text"/"content" first."""
    found = [c for c in cols.values() if c.kind in TEXT_KINDS and not c.nested and c.hint is None
             and not c.name.endswith(DTYPE_SUFFIX) and not is_identifier_name(c.name)]
    return sorted(found, key=lambda c: TEXT_NAMES.index(c.name) if c.name in TEXT_NAMES else len(TEXT_NAMES))


def _trained(cols: dict[str, Column], spec: FieldSpec, ids: str | None, pick) -> tuple[str | None, str | None]:
    """(token labels, train mask): the configured columns (a problem when not a list per sample), else, beside
    input_ids, a "labels" list of integers per sample (a scalar one is a class label: left to `label`) and the
    first train-mask name holding a list of numbers per sample. A column the user configured as the class label
    is never token labels."""
    labels = pick("token_labels", spec.token_labels) if spec.token_labels is not None else None
    mask = pick("train_mask", spec.train_mask) if spec.train_mask is not None else None
    if ids is None:
        return labels, mask
    fits_labels, fits_mask = _EXPECTED["token_labels"][1], _EXPECTED["train_mask"][1]
    if spec.token_labels is None:
        labels = next((n for n in TOKEN_LABEL_NAMES if n in cols and n != spec.label and fits_labels(cols[n])), None)
    if spec.train_mask is None:
        mask = next((n for n in TRAIN_MASK_NAMES if n in cols and fits_mask(cols[n])), None)
    return labels, mask


def resolve(columns: Iterable[Column], spec: FieldSpec) -> Fields:
    """The fields of one schema (or batch) under `spec`."""
    cols = {c.name: c for c in columns if c.name not in RESERVED_NAMES}
    problems: list[str] = []

    def check(role: str, name: str, col: Column | None) -> bool:
        if col is None:
            return False
        expected, fits = _EXPECTED[role]
        if fits(col):
            return True
        problems.append(f"column {name!r} ({role}) is {col.type_name}, expected {expected}: its checks are skipped")
        return False

    def pick(role: str, configured: str | None, defaults: tuple[str, ...] = ()) -> str | None:
        name = configured if configured is not None else next((n for n in defaults if n in cols), None)
        return name if name is not None and check(role, name, cols.get(name)) else None

    if spec.text is not None:
        text = [c for n in spec.text if check("text", n, c := _configured_text(n, cols))]
    else:
        text = _auto_text(cols)
    text = list({c.name: c for c in text}.values())
    if spec.image is not None:
        images = [c for n in spec.image if check("image", n, c := _configured_image(cols.get(n)))]
    else:
        images = [c for c in cols.values() if c.kind == "image" and c.name not in {t.top for t in text}]
    media = [c for c in cols.values() if c.kind == "media" and c.name not in {t.top for t in text}
             and c.name not in {i.name for i in images}]
    if images and spec.text is None:
        text = [c for c in text if c.top not in {i.name for i in images}
                and not (c.kind == "string" and c.name.lower() in METADATA_NAMES)]
    if images:
        # Captions: whether a caption is missing or blank is the pairing checks' finding, not empty text's.
        text = [replace(c, caption=True) if c.kind == "string" else c for c in text]
    if len(text) > 1:
        # Bug fix: Alpaca's empty `input` (most records) was flagged empty_text in every record that has none.
        text = [replace(c, optional=True) if c.kind == "string" and c.name.lower() in OPTIONAL_TEXT_NAMES else c
                for c in text]
    ids = pick("input_ids", spec.input_ids, ("input_ids",))
    token_labels, train_mask = _trained(cols, spec, ids, pick)
    label = pick("label", spec.label, tuple(n for n in LABEL_NAMES if n != token_labels) if spec.auto_label else ())
    mask = pick("attention_mask", spec.attention_mask, ("attention_mask",))
    image_tensor = _image_tensor(cols, spec.image_tensor, problems)
    if spec.numeric is not None:
        numeric = tuple(n for n in spec.numeric if pick("numeric", n) is not None)
    else:
        special = {label, ids, mask, token_labels, train_mask}
        numeric = tuple(n for n, c in cols.items() if n not in special and not n.endswith(SHAPE_SUFFIX)
                        and c.kind == "float" and c.per_sample)
    pairs = pair_layout(cols, spec, text, problems) if not images else None
    if spec.text is None:   # a one-turn struct is text as a pair's side only (else, as before, not checked)
        text = [c for c in text if not c.single or (pairs is not None and c.name in pairs.columns)]
    taken = {c.top for c in text} | (set(pairs.reads) if pairs else set())
    json = tuple(c for c in cols.values() if c.hint == "json" and not c.nested and c.name not in taken)
    identifiers = tuple(n for n, c in cols.items() if n not in taken and not c.nested and c.kind == "string"
                        and (c.hint == "identifier" or is_identifier_name(n)
                             or (images and n.lower() in METADATA_NAMES)))
    record_id = next((n for n, c in cols.items() if not c.nested and is_identifier_name(n)
                      and c.kind in ("string", "int") and n not in (label, ids, mask, token_labels, train_mask)),
                     None)
    tools = _tools_column(cols, text)
    used = taken | {c.name for c in json} | {c.name for c in images} | {c.name for c in media} | set(numeric) | \
        set(identifiers) | {label, ids, mask, record_id, image_tensor, tools, token_labels, train_mask}
    unchecked = tuple(c for n, c in cols.items() if n not in used and not c.nested and (c.kind == "other" or c.single)
                      and not n.endswith((DTYPE_SUFFIX, SHAPE_SUFFIX)))
    return Fields(tuple(text), numeric, label, ids, mask, json, record_id, identifiers, unchecked, tuple(problems),
                  tuple(images), image_tensor=image_tensor, pairs=pairs, tools=tools, token_labels=token_labels,
                  train_mask=train_mask, media=tuple(media))


# ---- Preference pairs and KTO (issue 30). A pair is one record: a prompt and two replies, each side checked as
# a reply to that prompt; a KTO record is one reply and a bool label. Recognised by column names and kinds (or by
# LLaMA-Factory's dataset_info.json, passed as FieldSpec.pairs); anything else is not a pair layout.
PAIR_LAYOUTS = {"ranking": "LLaMA-Factory ranking", "explicit": "explicit prompt", "implicit": "implicit prompt",
                "v1": "v1 chosen_messages/rejected_messages", "kto": "KTO", "ranked": "ranked responses"}
PROMPT_NAMES = ("prompt", "conversations", "messages", "instruction", "question")
KTO_LABELS = ("label", "kto_tag")
# Reward-model data with more than two responses ("ranked"): a list of responses and, per response, a number.
# Either a list of strings beside a list of numbers (`responses` + `scores`/`ranks`), or UltraFeedback's list of
# structs, each holding its response and its number (`completions[].response` + `completions[].overall_score`).
# Ranks (RANK_NAMES): lower is better; any other number: higher is better.
RESPONSE_NAMES = ("responses", "completions")
SCORE_NAMES = ("scores", "ratings", "rewards", "ranks", "rankings", "ranking")
RESPONSE_TEXT_KEYS = ("response", "text", "content", "output", "completion")
RESPONSE_SCORE_KEYS = ("overall_score", "score", "rating", "reward", "rank")
RANK_NAMES = ("ranks", "rankings", "ranking", "rank")


@dataclass(frozen=True)
class PairLayout:
    """Which columns are the prompt, the two sides (or, for KTO, the reply) and the label.
    layout: a key of PAIR_LAYOUTS. prompt: None when each side carries its own (implicit, v1: the turns before
    the last). completion: KTO's reply column (None: the reply is the last turn of `prompt`, a conversation)."""

    layout: str
    prompt: Column | None = None
    chosen: Column | None = None
    rejected: Column | None = None
    completion: Column | None = None
    label: str | None = None
    # ranked: the responses column (a list of strings, or of structs whose `text_key` holds the response), and
    # the number of each response: the column `scores` (a list beside it) or the struct key `score_key`.
    responses: Column | None = None
    text_key: str | None = None
    scores: str | None = None
    score_key: str | None = None

    @property
    def sides(self) -> tuple[Column, ...]:
        return tuple(c for c in (self.chosen, self.rejected) if c is not None)

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in (self.prompt, *self.sides, self.completion, self.responses) if c is not None)

    @property
    def reads(self) -> tuple[str, ...]:
        """Columns the pair checks read that no other role may: the label, a ranked layout's responses and scores."""
        return tuple(n for n in (self.label, self.responses.name if self.responses else None, self.scores) if n)

    @property
    def ranks(self) -> bool:
        """A ranked layout's numbers are ranks (lower is better), not scores."""
        return (self.scores or self.score_key or "") in RANK_NAMES

    def describe(self) -> str:
        lead = "conversation" if self.layout == "kto" and self.completion is None else "prompt"
        if self.responses is not None:
            r = self.responses.name
            shown = (f"responses {r}[].{self.text_key}", f"{'ranks' if self.ranks else 'scores'} {r}[].{self.score_key}") \
                if self.text_key else (f"responses {r}", f"{'ranks' if self.ranks else 'scores'} {self.scores}")
        else:
            shown = ()
        parts = [f"{lead} {self.prompt.name}" if self.prompt else None,
                 *(f"{c.name}" for c in self.sides), f"completion {self.completion.name}" if self.completion else None,
                 f"label {self.label}" if self.label else None, *shown]
        return f"{PAIR_LAYOUTS[self.layout]} ({', '.join(p for p in parts if p)})"


def _side(c: Column | None) -> bool:
    return c is not None and c.kind in ("string", "conversation") and not c.nested


def _hinted_layout(cols: dict[str, Column], hint: Mapping) -> PairLayout | None:
    """The layout dataset_info.json describes ({formatting, ranking, columns, tags}), when its columns are here."""
    names = dict(hint.get("columns") or {})
    if hint.get("ranking"):
        chosen, rejected = cols.get(names.get("chosen", "chosen")), cols.get(names.get("rejected", "rejected"))
        prompt = cols.get(names.get("messages") or names.get("prompt") or
                          ("conversations" if hint.get("formatting") == "sharegpt" else "instruction"))
        if _side(chosen) and _side(rejected):
            return PairLayout("ranking", prompt if _side(prompt) else None, chosen, rejected)
    if names.get("kto_tag") in cols:
        reply, prompt = cols.get(names.get("response", "")), cols.get(names.get("prompt", ""))
        if _side(reply):
            return PairLayout("kto", prompt if _side(prompt) else None, completion=reply, label=names["kto_tag"])
        conv = cols.get(names.get("messages", "conversations"))
        if _side(conv):
            return PairLayout("kto", conv, label=names["kto_tag"])
    return None


_LISTED = ("list<", "large_list<", "fixed_size_list<")
_NUMBER_TYPE = r"^(u?int(8|16|32|64)|halffloat|float|double|decimal.*)$"


def _list_struct_fields(type_name: str) -> dict[str, str] | None:
    """The fields (name -> type name) of a list of structs, read from its Arrow type name
    (`list<item: struct<model: string, response: string, overall_score: double>>`), else None. The rule sees
    Columns, not Arrow types: the type name is the struct's description."""
    head = next((p for p in _LISTED if type_name.startswith(p)), None)
    if head is None:
        return None
    inner = type_name[len(head):]
    inner = inner.split(": ", 1)[1] if ": " in inner.split("<", 1)[0] else inner   # `item: ` (the element's name)
    if not inner.startswith("struct<"):
        return None
    body = inner[len("struct<"):]
    out, depth, start = {}, 0, 0
    for i, ch in enumerate(body):
        if ch == "<":
            depth += 1
        elif ch == ">":
            if depth == 0:
                part = body[start:i]
                if ": " in part:
                    name, t = part.strip().split(": ", 1)
                    out[name] = t
                return out
            depth -= 1
        elif ch == "," and depth == 0:
            name, t = body[start:i].strip().split(": ", 1)
            out[name] = t
            start = i + 1
    return None


def _listed(c: Column | None) -> bool:
    return c is not None and c.type_name.startswith(_LISTED) and not c.nested


def _ranked_layout(cols: dict[str, Column], problems: list[str]) -> PairLayout | None:
    """A list of responses with a number each (RESPONSE_NAMES, SCORE_NAMES), else None. A responses column
    beside a score column the rule cannot pair with it, or structs without a response or a number, is named
    in `problems` as not checked (never flags)."""
    import re

    name = next((n for n in RESPONSE_NAMES if n in cols and not cols[n].nested), None)
    if name is None:
        return None
    col = cols[name]
    prompt = next((cols[n] for n in PROMPT_NAMES if _side(cols.get(n))), None)
    scores = next((n for n in SCORE_NAMES if n in cols and not cols[n].nested), None)
    if col.kind == "strings":
        if scores is None:
            return None    # a list of texts (several samples of a reply): text, not reward data
        if _listed(cols[scores]):
            return PairLayout("ranked", prompt, responses=col, scores=scores)
        problems.append(f"columns {name!r} ({col.type_name}) and {scores!r} ({cols[scores].type_name}) look like "
                        f"reward data, but {scores!r} is not a list (one number per response): the ranked "
                        "responses were not checked")
        return None
    fields = _list_struct_fields(col.type_name) if _listed(col) else None
    if fields is None:
        return None
    text_key = next((k for k in RESPONSE_TEXT_KEYS if fields.get(k) in ("string", "large_string")), None)
    score_key = next((k for k in RESPONSE_SCORE_KEYS if k in fields and re.match(_NUMBER_TYPE, fields[k])), None)
    if text_key is not None and score_key is not None:
        return PairLayout("ranked", prompt, responses=col, text_key=text_key, score_key=score_key)
    if text_key is not None or any(k in fields for k in RESPONSE_SCORE_KEYS):
        problems.append(f"column {name!r} ({col.type_name}) looks like reward data, but its items have no "
                        f"{'number (' + ', '.join(RESPONSE_SCORE_KEYS) + ')' if text_key else 'response text (' + ', '.join(RESPONSE_TEXT_KEYS) + ')'}"
                        f": the ranked responses were not checked")
    return None


def _pair_columns_note(cols: dict[str, Column]) -> str | None:
    """A note for `chosen`/`rejected` (or v1's `*_messages`) columns whose shape is no pair layout."""
    for a, b in (("chosen", "rejected"), ("chosen_messages", "rejected_messages")):
        if a in cols and b in cols and not (_side(cols[a]) and _side(cols[b])):
            return (f"columns {a!r} ({cols[a].type_name}) and {b!r} ({cols[b].type_name}) look like a preference "
                    "pair but are not a layout the pair checks read (each side a string, a turn or a list of "
                    "messages): the pair was not checked")
    return None


def pair_layout(cols: dict[str, Column], spec: FieldSpec, text: list[Column],
                problems: list[str] | None = None) -> PairLayout | None:
    """The preference, KTO or ranked layout of a schema, else None (configured text fields: none, the user
    chose). Pair-like columns the rule cannot read are named in `problems` (never a silent all-clear)."""
    problems = [] if problems is None else problems
    hinted = _hinted_layout(cols, spec.pairs) if spec.pairs is not None else None
    if hinted is not None:
        return hinted
    if spec.text is not None:
        return None
    get = cols.get
    if _side(get("chosen_messages")) and _side(get("rejected_messages")):
        return PairLayout("v1", None, get("chosen_messages"), get("rejected_messages"))
    chosen, rejected = get("chosen"), get("rejected")
    if _side(chosen) and _side(rejected):
        prompt = next((get(n) for n in PROMPT_NAMES if _side(get(n))), None)
        if prompt is None:
            return PairLayout("implicit", None, chosen, rejected)
        return PairLayout("ranking" if chosen.single else "explicit", prompt, chosen, rejected)
    note = _pair_columns_note(cols)
    if note is not None:
        problems.append(note)
        return None
    ranked = _ranked_layout(cols, problems)
    if ranked is not None:
        return ranked
    label = next((n for n in KTO_LABELS if n in cols), None)
    if label is None:
        return None
    completion = get("completion")
    if _side(completion):   # TRL unpaired: any label type (kto_label reports a non-bool one)
        prompt = get("prompt")
        return PairLayout("kto", prompt if _side(prompt) else None, completion=completion, label=label)
    conv = next((get(n) for n in ("messages", "conversations") if get(n) is not None), None)
    if cols[label].kind == "bool" and conv is not None and conv.kind == "conversation":
        return PairLayout("kto", conv, label=label)
    return None


def _tools_column(cols: dict[str, Column], text: list[Column]) -> str | None:
    """The tools column beside a conversation: the first of TOOLS_NAMES holding JSON text or structs (an OpenAI
    `tools` list in Parquet), unless it is read as text."""
    if not any(c.kind == "conversation" for c in text):
        return None
    taken = {c.top for c in text}
    return next((n for n in TOOLS_NAMES if n in cols and n not in taken and not cols[n].nested
                 and (cols[n].hint == "json" or cols[n].kind == "other")), None)


def missing_fields(spec: FieldSpec, schemas: Iterable[Iterable[Column]]) -> list[str]:
    """Configured names that none of `schemas` has, as "role 'name'" strings (empty: all found somewhere)."""
    seen: set[str] = set()
    texts: set[str] = set()
    for columns in schemas:
        cols = {c.name: c for c in columns}
        seen.update(cols)
        texts.update(n for n in spec.text or () if _configured_text(n, cols) is not None)
    return [f"{role} {name!r}" for role, names in spec.configured().items() for name in names
            if name not in seen and name not in texts]


IDENTIFIER_MIN_VALUES = 16     # fewer sampled values say too little about uniqueness
IDENTIFIER_MAX_CHARS = 256
IDENTIFIER_DISTINCT = 0.9


# Python's str.isspace() characters (what `str.strip()` removes), as an RE2 class
_PY_SPACE = (r"[\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}"
             r"\x{3000}]")


def _value_hint(values) -> str | None:
    """"json" or "identifier" from a sample of a string column's values (a pa.Array), else None. Values that are
    whitespace alone (`str.isspace`) do not count. Read with Arrow: only a column whose every value starts with "{"
    or "[" (after its whitespace) is read in Python, where `json.loads` says whether one of them is JSON."""
    import json

    import pyarrow.compute as pc

    arr = values.drop_null()
    spaced = pc.any(pc.match_substring_regex(arr, r"\s")).as_py()
    # with a space, only JSON is left, where each value is blank or starts with a brace: prose fails at its first
    if spaced and not pc.all(pc.match_substring_regex(arr.slice(0, 64), "^" + _PY_SPACE + "*(?:[\\[{]|$)")).as_py():
        return None
    present = arr.filter(pc.match_substring_regex(arr, "[^" + _PY_SPACE[1:]))
    if len(present) == 0:
        return None
    if pc.all(pc.match_substring_regex(present, "^" + _PY_SPACE + "*[\\[{]")).as_py():
        for v in present.to_pylist():
            try:
                json.loads(v)
                return "json"
            except ValueError:
                continue
    if len(present) < IDENTIFIER_MIN_VALUES:
        return None
    if spaced or pc.max(pc.utf8_length(present)).as_py() > IDENTIFIER_MAX_CHARS:
        return None
    return "identifier" if pc.count_distinct(present).as_py() >= IDENTIFIER_DISTINCT * len(present) else None


def _conversation_keys(t) -> tuple[str, str, str | None] | None:
    """(role key, text key, part key) when `t` is a list of turns (or one turn: a struct), else None."""
    import pyarrow as pa

    if pa.types.is_struct(t):
        turn = {f.name: f.type for f in t}
    elif not (pa.types.is_list(t) or pa.types.is_large_list(t)) or not pa.types.is_struct(t.value_type):
        return None
    else:
        turn = {f.name: f.type for f in t.value_type}
    textual = lambda x: pa.types.is_string(x) or pa.types.is_large_string(x) or pa.types.is_null(x)  # noqa: E731
    role = next((k for k in ROLE_KEYS if k in turn and textual(turn[k])), None)
    for key in TURN_TEXT_KEYS:
        if role is None or key not in turn:
            continue
        if textual(turn[key]):
            return role, key, None
        parts = turn[key]
        if (pa.types.is_list(parts) or pa.types.is_large_list(parts)) and pa.types.is_struct(parts.value_type):
            part = {f.name: f.type for f in parts.value_type}
            found = next((k for k in PART_TEXT_KEYS if k in part and textual(part[k])), None)
            if found is not None:
                return role, key, found
    return None


def _part_struct(t):
    """The struct type of a conversation's content parts (list<struct<role, content: list<struct>>>)."""
    return t.value_type.field(t.value_type.get_field_index(_turn_text_key(t))).type.value_type


def _turn_text_key(t) -> str:
    names = [f.name for f in t.value_type]
    return next(k for k in TURN_TEXT_KEYS if k in names)


def _media_parts(f, keys, sample) -> list[Column]:
    """A Column per kind (image, video, audio) of the media inside a conversation's content parts
    (PART_SOURCES), for the kinds it has: a source keyed by its own name (`image_url`, `video`) is there when the
    parts have that key as a string or {url}; one marked by part types (v1's `value`) when a sample shows such a
    part holding a value (else the key is text)."""
    out = []
    for kind, sources in PART_SOURCES.items():
        found = _part_sources(f, keys, sample, sources)
        if found:
            out.append(Column(f"{f.name}.{keys[1]}[].{kind}", "image" if kind == "image" else "media", str(f.type),
                              image="path", many=True, role_key=keys[0], text_key=keys[1], part_key=keys[2],
                              parts_of=f.name, part_sources=tuple(found),
                              media=None if kind == "image" else kind))
    return out


def _part_sources(f, keys, sample, sources) -> list:
    import pyarrow as pa
    import pyarrow.compute as pc

    part = _part_struct(f.type)
    found = []
    for path, types in sources:
        head, _, sub = path.partition(".")
        i = part.get_field_index(head)
        if i < 0:
            continue
        t = part.field(i).type
        if sub:
            if not pa.types.is_struct(t) or t.get_field_index(sub) < 0:
                continue
            t = t.field(t.get_field_index(sub)).type
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            continue
        if types is not None:
            if part.get_field_index("type") < 0 or sample is None or f.name not in sample.schema.names:
                continue
            turns = pc.list_flatten(sample.column(f.name))
            parts = pc.list_flatten(pc.struct_field(turns, keys[1]))
            typed = pc.and_(pc.is_in(pc.struct_field(parts, "type"), pa.array(types)),
                            pc.is_valid(pc.struct_field(parts, head)))
            if not pc.any(typed).as_py():
                continue
        found.append((path, types))
    return found


def _kind(t) -> str:
    import pyarrow as pa

    leaf = t
    while pa.types.is_list(leaf) or pa.types.is_large_list(leaf) or pa.types.is_fixed_size_list(leaf):
        leaf = leaf.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and (pa.types.is_string(leaf) or pa.types.is_large_string(leaf)):
        return "strings"
    if pa.types.is_floating(leaf):
        return "float"
    if pa.types.is_integer(leaf):
        return "int"
    if pa.types.is_boolean(leaf):
        return "bool"
    return "other"


def _struct_strings(name: str, t, out: list[Column]) -> None:
    """The strings inside a struct column, by dotted path (addressable when configured)."""
    import pyarrow as pa

    for f in t:
        path = f"{name}.{f.name}"
        if pa.types.is_struct(f.type):
            _struct_strings(path, f.type, out)
        elif _kind(f.type) in ("string", "strings"):
            out.append(Column(path, _kind(f.type), str(f.type), nested=True))


IMAGE_MAGIC = ((b"\xff\xd8\xff", "JPEG"), (b"\x89PNG\r\n\x1a\n", "PNG"), (b"GIF8", "GIF"), (b"BM", "BMP"),
               (b"II*\x00", "TIFF"), (b"MM\x00*", "TIFF"))


def sniff_image_format(data: bytes) -> str | None:
    """The image format named by a file's magic bytes (WebP: RIFF....WEBP), else None."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    return next((fmt for magic, fmt in IMAGE_MAGIC if data.startswith(magic)), None)


_IMAGE_PATH_RE = r"(?i)^[^\n]*\.(" + "|".join(IMAGE_EXTENSIONS) + r")$"
_MEDIA_PATH_RE = {kind: r"(?i)^[^\n]*\.(" + "|".join(exts) + r")$"
                  for kind, exts in (("video", VIDEO_EXTENSIONS), ("audio", AUDIO_EXTENSIONS))}


def sniff_media_format(data: bytes) -> tuple[str, str] | None:
    """(kind, container) named by a media file's magic bytes: ("audio", "WAV"), ("video", "MP4"), ...; else None.
    An MP4/MOV (`ftyp`) or Matroska/WebM (EBML) file is taken for video, its usual content (an audio-only .m4a
    says `M4A ` in its brand)."""
    head = data[:16]
    if head[:4] == b"RIFF":
        return {b"WAVE": ("audio", "WAV"), b"AVI ": ("video", "AVI")}.get(head[8:12])
    if head[4:8] == b"ftyp":
        return ("audio", "M4A") if head[8:12] in (b"M4A ", b"M4B ") else ("video", "MP4")
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "video", "MKV"
    if head[:4] == b"fLaC":
        return "audio", "FLAC"
    if head[:4] == b"OggS":
        return "audio", "OGG"
    if head[:3] == b"ID3" or (len(head) > 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0 and head[1] & 0x06
                              and head[2] >> 4 != 0xF and (head[2] >> 2) & 3 != 3):
        return "audio", "MP3"   # an ID3 tag, or an MPEG audio frame header (sync, a layer, a valid bitrate and rate)
    return None


def _looks_like_media(name: str, form: str, values) -> str | None:
    """"video" or "audio" when an image-capable column holds media: by its name (a WebDataset member's extension, a
    path column's name), else by a sample of its values (paths that all end in a video, or all in an audio,
    extension; bytes of which at least half have a media signature and none an image one)."""
    import pyarrow.compute as pc

    low = name.lower()
    suffix = low.rsplit(".", 1)[-1]
    for kind, exts, names in (("video", VIDEO_EXTENSIONS, VIDEO_PATH_NAMES), ("audio", AUDIO_EXTENSIONS,
                                                                           AUDIO_PATH_NAMES)):
        if (suffix in exts and form != "path") or low in names:
            return kind
    if values is None:
        return None
    present = _sampled(values, form)
    if form == "path":
        if len(present) == 0 or pc.any(pc.match_substring(present, "://")).as_py():
            return None
        return next((kind for kind, rx in _MEDIA_PATH_RE.items()
                     if pc.all(pc.match_substring_regex(present, rx)).as_py()), None)
    present = [v for v in present.to_pylist() if v]
    if any(sniff_image_format(v) is not None for v in present):
        return None
    kinds = [k[0] for v in present if (k := sniff_media_format(v)) is not None]
    # most sampled values signed as media (a few broken files do not unmake the column; a stray match does not
    # make one: a binary column of other data is not condemned as broken audio)
    return kinds[0] if kinds and 2 * len(kinds) >= len(present) else None


def _sampled(values, form: str):
    """The first 64 present leaf values of a sample column (lists flattened, a struct's `bytes`; paths not empty):
    what the image and media rules look at."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        values = pc.list_flatten(values)
    if form == "struct":
        values = pc.struct_field(values, "bytes")
    present = values.drop_null()[:64]
    return present.filter(pc.not_equal(present, "")) if form == "path" else present


def _image_form(t) -> tuple[str, bool] | None:
    """(form, many) when a column of type `t` can hold images (IMAGE_FORMS), else None."""
    import pyarrow as pa

    many = pa.types.is_list(t) or pa.types.is_large_list(t)
    v = t.value_type if many else t
    if pa.types.is_binary(v) or pa.types.is_large_binary(v):
        return "bytes", many
    if pa.types.is_struct(v) and v.get_field_index("bytes") >= 0 and \
            (pa.types.is_binary(v.field("bytes").type) or pa.types.is_large_binary(v.field("bytes").type)):
        return "struct", many
    if pa.types.is_string(v) or pa.types.is_large_string(v):
        return "path", many
    return None


def _looks_like_images(name: str, form: str, values) -> bool:
    """Whether an image-capable column holds images: by its name (an image extension, a path column's name), else
    by a sample of its values (`values`: a pa.Array or None; the magic bytes of image files, or paths that all end
    in an image extension). Binary columns count as images until a sample says otherwise."""
    import pyarrow.compute as pc

    low = name.lower()
    if low.rsplit(".", 1)[-1] in IMAGE_EXTENSIONS or low in IMAGE_PATH_NAMES:
        return form != "path" or low in IMAGE_PATH_NAMES
    if values is None:
        return form != "path"
    present = _sampled(values, form)
    if form == "path":
        return len(present) > 0 and pc.all(pc.match_substring_regex(present, _IMAGE_PATH_RE)).as_py() and \
            not pc.any(pc.match_substring(present, "://")).as_py()
    present = [v for v in present.to_pylist() if v]
    if not present:
        return True
    return any(sniff_image_format(v) is not None for v in present)


def _stored_shape(name: str, kind: str, schema, sample) -> dict:
    """ndim and dtype of a numeric column's first sample whose shape is stored in `<name>.shape` (WebDataset .npy),
    read from a sample batch; {} when there is none."""
    shape, dtype = name + SHAPE_SUFFIX, name + DTYPE_SUFFIX
    if sample is None or kind not in ("float", "int") or shape not in schema.names:
        return {}
    import pyarrow.compute as pc

    ranks = pc.list_value_length(sample.column(shape)).drop_null()
    if not len(ranks):
        return {}
    first = pc.index(pc.is_valid(sample.column(shape)), True).as_py()
    stored = sample.column(dtype)[first].as_py() if dtype in schema.names else None
    return {"ndim": ranks[0].as_py(), "dtype": stored or str(_leaf(schema.field(name).type))}


def _leaf(t):
    import pyarrow as pa

    while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        t = t.value_type
    return t


def arrow_columns(schema, sample=None) -> list[Column]:
    """The Columns of an Arrow schema: the kind is that of the leaf values of (nested) lists. `sample`: a record
    batch of that schema whose values tell identifiers and JSON among string columns, and images among binary
    and string columns."""
    import pyarrow as pa

    out = []
    for f in schema:
        keys = _conversation_keys(f.type)
        if keys is not None:
            out.append(Column(f.name, "conversation", str(f.type), role_key=keys[0], text_key=keys[1],
                              part_key=keys[2], single=pa.types.is_struct(f.type)))
            if keys[2] is not None and not pa.types.is_struct(f.type):
                out.extend(_media_parts(f, keys, sample))
            continue
        kind = _kind(f.type)
        hint = None
        image = _image_form(f.type) if f.name not in RESERVED_NAMES else None
        values = sample.column(f.name) if sample is not None and f.name in sample.schema.names else None
        media = _looks_like_media(f.name, image[0], values) if image is not None else None
        if media is not None:
            out.append(Column(f.name, "media", str(f.type), image=image[0], many=image[1], media=media))
            continue
        if image is not None and _looks_like_images(f.name, image[0], values):
            out.append(Column(f.name, "image", str(f.type), image=image[0], many=image[1]))
            continue
        if kind == "string" and values is not None and f.name not in RESERVED_NAMES:
            hint = _value_hint(values)
        out.append(Column(f.name, kind, str(f.type), hint=hint, can_image=image,
                          **_stored_shape(f.name, kind, schema, sample)))
        if pa.types.is_struct(f.type):
            _struct_strings(f.name, f.type, out)
    return out


def resolve_schema(schema, spec: FieldSpec, sample=None) -> Fields:
    """`resolve` over an Arrow schema (and a sample batch for the hints of its string columns)."""
    return resolve(arrow_columns(schema, sample), spec)
