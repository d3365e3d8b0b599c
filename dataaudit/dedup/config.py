"""Every setting of a dedup run, in one frozen dataclass shared by all its stages."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from dataaudit.text_records import TEXT_UNITS

from .lsh import optimal_params

SHINGLE_KINDS = ("word", "char")
# LSH weights with `estimate`: false positives cost one comparison of two signatures, so the bands favour
# recall (16 x 8 at 0.8 and 128 permutations: a pair at Jaccard 0.75 is a candidate with probability 0.82).
ESTIMATE_WEIGHTS = (0.05, 0.95)


@dataclass(frozen=True)
class DedupSpec:
    """Every setting of a dedup run. Signature parts depend only on `signature_fingerprint()`, so a rerun
    with another threshold (or with verification turned on) reuses the signatures already computed."""
    text_field: tuple[str, ...] | None = None   # default: every text field of the rule (dataaudit.fields)
    nfc: bool = True
    lowercase: bool = True
    strip_punct: bool = False
    collapse_ws: bool = True
    shingles: str = "word"             # "word": word n-grams; "char": character n-grams
    ngram: int = 5
    num_perm: int = 128
    seed: int = 1
    threshold: float = 0.8
    verify: bool = False               # exact Jaccard of candidate pairs before clustering
    estimate: bool = False             # signatures' estimated Jaccard of candidate pairs before clustering
    batch_rows: int = 4096
    text_unit: str = "line"            # plain-text shards: one record per line or per paragraph
    with_images: bool = False          # identity = text + its images' bytes (dataaudit.dedup.joint)

    def __post_init__(self):
        if self.shingles not in SHINGLE_KINDS:
            raise ValueError(f"shingles must be one of {', '.join(SHINGLE_KINDS)}, got {self.shingles!r}")
        if self.ngram < 1:
            raise ValueError(f"ngram must be >= 1, got {self.ngram}")
        if not 1 <= self.num_perm <= 1024:
            raise ValueError(f"num_perm must be between 1 and 1024, got {self.num_perm}")
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"threshold must be between 0 and 1 (exclusive), got {self.threshold}")
        if self.batch_rows < 1:
            raise ValueError(f"batch_rows must be >= 1, got {self.batch_rows}")
        if self.text_unit not in TEXT_UNITS:
            raise ValueError(f"text_unit must be one of {', '.join(TEXT_UNITS)}, got {self.text_unit!r}")

    def bands(self) -> tuple[int, int]:
        if self.estimate:
            return optimal_params(self.threshold, self.num_perm, *ESTIMATE_WEIGHTS)
        return optimal_params(self.threshold, self.num_perm)

    def normalization(self) -> dict:
        return {"nfc": self.nfc, "lowercase": self.lowercase, "strip_punct": self.strip_punct,
                "collapse_ws": self.collapse_ws}

    def signature_fingerprint(self) -> dict:
        d = asdict(self)
        for k in ("threshold", "verify", "estimate", "batch_rows"):
            d.pop(k)
        d["version"] = 3   # 2: `sig` stored as fixed-size binary; 3: the parts carry each record's line
        return d

    def as_dict(self) -> dict:
        b, r = self.bands()
        return {**asdict(self), "bands": b, "rows": r}
