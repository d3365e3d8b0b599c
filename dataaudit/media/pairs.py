"""Per record, its video and audio files and the text that should go with them: the "media_pairs" target
(placeholder counts, transcript rate). The text is a conversation's turns (`<video>` / `<audio>` placeholders;
the assistant's reply as transcript) or, without one, the flat text fields (a caption)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.fields import ASSISTANT_ROLES, Column
from dataaudit.images.pairs import count_placeholders
from dataaudit.texts import conversation

from .batch import MediaBatch


@dataclass
class MediaPairs:
    videos: np.ndarray            # int64 per record: its video files
    audios: np.ndarray            # int64 per record: its audio files
    audio_seconds: np.ndarray     # float64 per record: declared duration of its audio files (nan: unknown)
    video_field: str | None
    audio_field: str | None
    turn_text: pa.Array           # every conversation turn's text ...
    turn_rows: np.ndarray         # ... its record
    conversation_field: str | None
    transcript_chars: np.ndarray  # int64 per record: its assistant replies' characters, else its flat text's
    transcript_field: str | None
    part_videos: np.ndarray | None = None   # int64 per record: its videos inside content parts (own placeholders)
    part_audios: np.ndarray | None = None

    @classmethod
    def of(cls, batch: pa.RecordBatch, text: tuple[Column, ...], mb: MediaBatch) -> "MediaPairs":
        n = batch.num_rows
        video = mb.is_video
        videos = np.bincount(mb.rows[video], minlength=n).astype(np.int64)
        audios = np.bincount(mb.rows[~video], minlength=n).astype(np.int64)
        dur = mb.array("duration")
        known = ~video & np.isfinite(dur)
        seconds = np.bincount(mb.rows[known], weights=dur[known], minlength=n).astype(np.float64)
        unknown = np.bincount(mb.rows[~video & ~np.isfinite(dur)], minlength=n) > 0
        seconds[unknown] = np.nan
        texts, rows, chars = [], [], np.zeros(n, np.int64)
        convs = [c for c in text if c.kind == "conversation"]
        for c in convs:
            conv, turn_text, _ = conversation(batch, c)
            texts.append(turn_text)
            rows.append(conv.rows)
            roles = pc.fill_null(pc.is_in(pc.utf8_lower(conv.roles), pa.array(ASSISTANT_ROLES)), False)
            lengths = pc.fill_null(pc.utf8_length(turn_text), 0).to_numpy(zero_copy_only=False)
            mine = roles.to_numpy(zero_copy_only=False).astype(bool)
            chars += np.bincount(conv.rows[mine], weights=lengths[mine], minlength=n).astype(np.int64)
        flat = [c for c in text if c.kind == "string"]
        if not convs:
            for c in flat:
                chars += pc.fill_null(pc.utf8_length(batch.column(c.name)), 0).to_numpy(zero_copy_only=False)
        names = lambda kind: ", ".join(dict.fromkeys(nm for nm, k in zip(mb.names, mb.kinds) if k == kind)) or None  # noqa: E731
        return cls(videos, audios, seconds, names("video"), names("audio"),
                   pa.concat_arrays(texts) if texts else pa.array([], pa.string()),
                   np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64),
                   ", ".join(c.name for c in convs) or None, chars,
                   ", ".join(c.name for c in (convs or flat)) or None,
                   np.bincount(mb.rows[mb.in_parts("video")], minlength=n).astype(np.int64),
                   np.bincount(mb.rows[mb.in_parts("audio")], minlength=n).astype(np.int64))

    def placeholders(self, token: str, kind: str | None = None) -> np.ndarray:
        """Per record, how many times `token` occurs in its conversation turns, plus its files of `kind` inside
        content parts: a part is its own placeholder (as for images)."""
        count = count_placeholders(self.turn_text, self.turn_rows, self.videos.size, token)
        parts = self.part_videos if kind == "video" else self.part_audios if kind == "audio" else None
        return count if parts is None else count + parts
