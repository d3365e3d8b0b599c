"""One representation for numeric data in both worlds: the NumericField / TokenFields dataclasses and the
cached layout (dense, grouped or scatter) that decides how a field is reduced.

Ragged Arrow lists, fixed-shape tensors and padded+masked training batches all become a flat vector of
element values plus, for each element, the index of the sample it belongs to (and optionally whether it is a
real element or padding). Checks reduce over samples with `scatter_reduce`, so one torch implementation serves
the CPU audit and the GPU guard. The constructors are in arrow.py and torch_batch.py, the reductions in
reductions.py and rows.py.
"""
from __future__ import annotations

from dataclasses import dataclass

from dataaudit.extras import LazyModule

torch = LazyModule("torch", globals())   # imported on first use: the audit of text never loads it


@dataclass
class NumericField:
    """A numeric field of a batch of `num_samples` samples.

    values:  1-D tensor of every element of every sample (float or integer dtype).
    sample:  1-D int64 tensor, same length: the sample each element belongs to (0 <= sample < num_samples).
    valid:   optional 1-D bool tensor, same length: False marks padding that checks must ignore.
    dtypes:  1-D int8 tensor [num_samples]: storage dtype code per sample (index into DTYPE_NAMES).
    present: optional 1-D bool tensor [num_samples]: False where the sample has no value (null / missing).
    shape:   optional int64 tensor [num_samples, ndim]: each sample's dims, when the data has them (a batch
             tensor's dims after the batch's; WebDataset .npy shapes for image tensors); a row of -1 where the
             sample has no value or another number of dims. None: unknown.
    """

    values: torch.Tensor
    sample: torch.Tensor
    num_samples: int
    dtypes: torch.Tensor
    valid: torch.Tensor | None = None
    present: torch.Tensor | None = None
    shape: torch.Tensor | None = None

    @property
    def device(self) -> torch.device:
        return self.values.device


class TensorField(NumericField):
    """What `from_tensor` returns: a NumericField whose per-element `sample` index (and per-sample `dtypes`, all
    the same code) are built only when something reads them. The dense layout (reshape to [B, per]) never needs
    the index, so wrapping a training batch costs no per-element work; `field.sample` and `field.dtypes` still
    give the full tensors on demand (it is an ordinary NumericField)."""

    @property
    def dtypes(self) -> torch.Tensor:
        d = self.__dict__.get("_dtypes")
        if d is None:
            d = torch.full((self.num_samples,), self.__dict__["_dtype_code"], dtype=torch.int8,
                           device=self.values.device)
            self.__dict__["_dtypes"] = d
        return d

    @dtypes.setter
    def dtypes(self, value) -> None:
        self.__dict__["_dtypes"] = value

    @property
    def sample(self) -> torch.Tensor:
        s = self.__dict__.get("_sample")
        if s is None:
            b = self.num_samples
            per = self.values.shape[0] // b if b else 0
            s = torch.arange(b, device=self.values.device).unsqueeze(1).expand(b, per).reshape(-1)
            self.__dict__["_sample"] = s
            lay = self.__dict__.get("_layout")
            if lay is not None and lay.sample is LAZY:
                lay.sample = s
        return s

    @sample.setter
    def sample(self, value) -> None:
        self.__dict__["_sample"] = value

    @property
    def shape(self) -> torch.Tensor:
        """[num_samples, ndim]: the tensor's dims after the batch's, the same for every sample (built on demand;
        `uniform_shape` gives them without a tensor)."""
        s = self.__dict__.get("_shape")
        if s is None:
            dims = self.__dict__["_dims"]
            s = torch.tensor(dims, dtype=torch.int64, device=self.values.device).expand(self.num_samples, len(dims))
            self.__dict__["_shape"] = s
        return s

    @shape.setter
    def shape(self, value) -> None:
        self.__dict__["_shape"] = value
        if value is not None:  # per-sample dims given: no longer the tensor's uniform ones
            self.__dict__.pop("_dims", None)


LAZY = object()  # stands for a TensorField's sample index that has not been built yet


def _sample_ref(field: NumericField):
    """The field's sample tensor, or LAZY for a TensorField that has not built it (without building it)."""
    if "_sample" in field.__dict__:
        s = field.__dict__["_sample"]
        return LAZY if s is None else s
    return field.sample


_LAZY_SLOTS = {"sample": "_sample", "dtypes": "_dtypes", "shape": "_shape"}   # TensorField's lazy properties


def _replace(field: NumericField, **changes) -> NumericField:
    """A copy of the field with some attributes changed; keeps a lazy sample index lazy."""
    if not isinstance(field, TensorField):
        kw = dict(values=field.values, sample=field.sample, num_samples=field.num_samples, dtypes=field.dtypes,
                  valid=field.valid, present=field.present, shape=field.shape)
        kw.update(changes)
        return type(field)(**kw)
    # Written straight into __dict__, as from_tensor does (torch.compile's tracer follows these writes, not the
    # ones a property setter makes from the dataclass __init__).
    out = TensorField.__new__(type(field))
    src, d = field.__dict__, out.__dict__
    for k in ("values", "_sample", "num_samples", "_dtypes", "valid", "present", "_shape", "_dtype_code", "_dims"):
        if k in src:
            d[k] = src[k]
    for k, v in changes.items():
        d[_LAZY_SLOTS.get(k, k)] = v
        if k == "shape" and v is not None:  # per-sample dims given: no longer the tensor's uniform ones
            d.pop("_dims", None)
    return out


@dataclass
class TokenFields:
    """Token ids of a batch and, when the data has one, its attention mask (same element layout)."""

    ids: NumericField
    mask: NumericField | None = None


@dataclass
class TrainedTokens:
    """What is trained in a batch of tokenized records: its token ids (and attention mask) and, per token, either
    its label (`labels`: trained where != ignore_index, HF's -100) or a train mask (`labels` False: trained where
    != 0). The labels / mask are aligned with the ids: element i of a sample is token i (HF causal-LM labels are
    shifted inside the model, not in the data)."""

    tokens: TokenFields
    trained: NumericField
    labels: bool = True


# ---------------------------------------------------------------------------------------------------------
# Layout invariant of every field the constructors (arrow.py, torch_batch.py) build: elements are grouped by
# sample in ascending sample order (sample is non-decreasing). Segment reductions do not need it;
# `element_position` / `aligned_index` do.
# ---------------------------------------------------------------------------------------------------------

@dataclass
class Layout:
    """How a field's elements are laid out, cached on the field (keyed by its `sample` tensor); the reductions
    pick their execution path from it (see reductions.py)."""

    sample: torch.Tensor           # the field.sample this describes (identity-checked)
    num_samples: int
    kind: str                      # "dense" | "grouped" | "scatter"
    per: int = 0                   # dense: elements per sample
    offsets: torch.Tensor | None = None  # grouped (and dense, lazily, on CPU): [B + 1] segment starts


def set_layout(field: NumericField, kind: str, per: int = 0, offsets: torch.Tensor | None = None) -> None:
    field.__dict__["_layout"] = Layout(_sample_ref(field), field.num_samples, kind, per, offsets)


def layout_of(field: NumericField) -> Layout:
    lay = field.__dict__.get("_layout")
    n = field.values.shape[0]  # == len(sample) by contract; read without building a lazy sample index
    if (lay is not None and lay.sample is _sample_ref(field) and lay.num_samples == field.num_samples
            and (lay.kind != "dense" or lay.per * lay.num_samples == n)):
        return lay
    kind, offsets = "scatter", None
    s = field.sample
    if s.device.type == "cpu":  # verifying the order is a host read: only where that costs no sync
        if n == 0 or bool((s[1:] >= s[:-1]).all()):
            kind = "grouped"
            offsets = torch.searchsorted(s, torch.arange(field.num_samples + 1, dtype=s.dtype))
    set_layout(field, kind, 0, offsets)
    return field.__dict__["_layout"]


def with_valid(field: NumericField, valid: torch.Tensor | None) -> NumericField:
    """The same field with `valid` replaced (None: every element counts); keeps the cached layout."""
    out = _replace(field, valid=valid)
    lay = field.__dict__.get("_layout")
    if lay is not None:  # a copy: building one field's lazy sample index must not touch the other's layout
        out.__dict__["_layout"] = Layout(lay.sample, lay.num_samples, lay.kind, lay.per, lay.offsets)
    return out
