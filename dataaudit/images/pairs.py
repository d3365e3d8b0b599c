"""Per record, its images and what should go with them: the "pairs" target of the pairing checks.

An image-text record pairs its images with a caption (the flat text fields beside the images: `txt` of a
WebDataset sample, `text`, `caption`) or with a conversation whose turns hold one `<image>` placeholder per
image (multimodal SFT: `messages` and `images`). An image inside a content part is its own placeholder (the
processor puts its tokens where the part is): it counts as one placeholder and one image, so a record whose images
are all parts has as many as it needs, unless its text holds `<image>` tokens besides.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.fields import Column
from dataaudit.texts import conversation

from .batch import ImageBatch

# A record's caption (Pairs.caption)
NO_FIELD, PRESENT, BLANK, MISSING = range(4)


@dataclass
class Pairs:
    images: np.ndarray          # int64 per record: its images (every image field; a zero-byte one counts)
    image_field: str            # the image field(s) a flag names
    caption: np.ndarray         # int8 per record: NO_FIELD, PRESENT, BLANK or MISSING
    caption_field: str | None   # the caption field(s) a flag names
    turn_text: pa.Array         # the text of every conversation turn of the batch ...
    turn_rows: np.ndarray       # ... and its record
    conversation_field: str | None
    has_list: bool              # some image field is a list (images of a conversation)
    part_images: np.ndarray | None = None   # int64 per record: its images inside content parts (own placeholders)

    @classmethod
    def of(cls, batch: pa.RecordBatch, text: tuple[Column, ...], images: ImageBatch) -> "Pairs":
        n = batch.num_rows
        counts = np.bincount(images.rows, minlength=n).astype(np.int64)
        in_parts = [f for f, c in enumerate(images.fields) if c.parts_of is not None]
        part_rows = images.rows[np.isin(images.field, in_parts)]
        part_images = np.bincount(part_rows, minlength=n).astype(np.int64)
        captions = [c for c in text if c.caption]
        state = np.full(n, NO_FIELD, np.int8)
        if captions:
            present = np.zeros(n, bool)
            given = np.zeros(n, bool)
            for c in captions:
                values = batch.column(c.name)
                given |= values.is_valid().to_numpy(zero_copy_only=False)
                blank = pc.equal(pc.utf8_trim_whitespace(values), "")
                present |= ~pc.fill_null(blank, True).to_numpy(zero_copy_only=False)
            state[:] = MISSING
            state[given] = BLANK
            state[present] = PRESENT
        texts, rows = [], []
        convs = [c for c in text if c.kind == "conversation"]
        for c in convs:
            conv, turn_text, _ = conversation(batch, c)
            texts.append(turn_text)
            rows.append(conv.rows)
        return cls(
            images=counts, image_field=", ".join(c.name for c in images.fields), caption=state,
            caption_field=", ".join(c.name for c in captions) or None,
            turn_text=pa.concat_arrays(texts) if texts else pa.array([], pa.string()),
            turn_rows=np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64),
            conversation_field=", ".join(c.name for c in convs) or None,
            has_list=any(c.many for c in images.fields), part_images=part_images)

    def placeholders(self, token: str) -> np.ndarray:
        """Per record, how many times `token` occurs in its conversation turns."""
        parts = self.part_images if self.part_images is not None else np.zeros(self.images.size, np.int64)
        return count_placeholders(self.turn_text, self.turn_rows, self.images.size, token) + parts


def count_placeholders(turn_text: pa.Array, turn_rows: np.ndarray, records: int, token: str) -> np.ndarray:
    """Per record, how many times `token` occurs in its turns (`turn_text`, of records `turn_rows`): the one count
    of `<image>`, `<video>` and `<audio>` placeholders."""
    if len(turn_text) == 0:
        return np.zeros(records, np.int64)
    per_turn = pc.fill_null(pc.count_substring(turn_text, token), 0).to_numpy(zero_copy_only=False)
    return np.bincount(turn_rows, weights=per_turn, minlength=records).astype(np.int64)
