"""What is trained in tokenized data: the token_labels / train_mask roles of the field rule, the four checks of
dataaudit.checks.trained_tokens (exact flags and values, ragged Arrow lists and padded tensors alike, no host
read on the meta device), the guard on [B, T] labels, and the end tokens of a real tokenizer."""
from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pytest
import torch

from dataaudit.checks import REGISTRY
from dataaudit.checks.trained_tokens import tokenizer_end_ids
from dataaudit.config import ConfigError, build_config
from dataaudit.fields import FieldSpec, resolve, resolve_schema
from dataaudit.guard import BadBatchError, DeviceGuard, GuardPlan
from dataaudit.guard.collate import CollateGuard
from dataaudit.guard.resolve import tensor_column
from dataaudit.tensors import TrainedTokens, from_arrow, from_tensor, tokens_from_arrow, tokens_from_tensor
from tests.paths import shared_file

CHECKS = ("no_trainable_tokens", "labels_misaligned", "label_id_out_of_range", "eos_never_trained")
PARAMS = {"label_id_out_of_range": {"vocab_size": 100}, "eos_never_trained": {"end_token_ids": [2, 99]}}
LLAMA = "tokenizers/llama-test-tokenizer.json"


def run(t: TrainedTokens) -> dict[str, tuple[list, list]]:
    out = {}
    for name in CHECKS:
        o = REGISTRY[name].fn(t, **PARAMS.get(name, {}))
        out[name] = (o.flagged.tolist(), o.value.tolist())
    return out


# ------------------------------------------------------------------------------------------- the field rule

def test_labels_list_beside_input_ids_is_token_labels_and_a_mask_is_the_train_mask():
    schema = pa.schema([("input_ids", pa.list_(pa.int32())), ("attention_mask", pa.list_(pa.int8())),
                        ("labels", pa.list_(pa.int64())), ("assistant_masks", pa.list_(pa.int8())),
                        ("loss_mask", pa.list_(pa.float32()))])
    f = resolve_schema(schema, FieldSpec.from_config({}, {"num_classes": 4}))
    assert (f.token_labels, f.train_mask, f.label) == ("labels", "assistant_masks", None)
    assert f.roles()["token_labels"] == ["labels"] and f.roles()["train_mask"] == ["assistant_masks"]
    assert f.unchecked == () and f.problems == ()
    assert f.numeric == ("loss_mask",)   # the first mask name is the train mask; a float one beside it is numeric
    assert f.columns() == ["loss_mask", "input_ids", "attention_mask", "labels", "assistant_masks", "loss_mask.dtype"]


def test_scalar_labels_stay_a_class_label_and_lists_without_input_ids_are_no_token_labels():
    scalar = pa.schema([("input_ids", pa.list_(pa.int32())), ("labels", pa.int64())])
    f = resolve_schema(scalar, FieldSpec.from_config({}, {"num_classes": 4}))
    assert (f.label, f.token_labels) == ("labels", None)
    alone = pa.schema([("text", pa.string()), ("labels", pa.list_(pa.int64()))])
    assert resolve_schema(alone, FieldSpec()).token_labels is None
    nested = pa.schema([("input_ids", pa.list_(pa.int32())), ("labels", pa.list_(pa.list_(pa.int64())))])
    assert resolve_schema(nested, FieldSpec()).token_labels is None
    # the user naming `labels` the class label wins over the automatic token labels
    listed = pa.schema([("input_ids", pa.list_(pa.int32())), ("labels", pa.list_(pa.int64()))])
    f = resolve_schema(listed, FieldSpec.from_config({"label": "labels"}))
    assert (f.label, f.token_labels) == ("labels", None)


def test_configured_token_labels_and_train_mask_and_a_wrong_type_is_a_problem():
    schema = pa.schema([("ids", pa.list_(pa.int32())), ("targets", pa.list_(pa.int64())),
                        ("trainable", pa.list_(pa.bool_())), ("score", pa.float64())])
    cfg = build_config({"fields": {"input_ids": "ids", "token_labels": "targets", "train_mask": "trainable"}})
    f = resolve_schema(schema, FieldSpec.from_config(cfg.fields, cfg.data))
    assert (f.input_ids, f.token_labels, f.train_mask) == ("ids", "targets", "trainable")
    f = resolve_schema(schema, FieldSpec(input_ids="ids", token_labels="score"))
    assert f.token_labels is None and f.problems == (
        "column 'score' (token_labels) is double, expected a list of integers per sample (token labels): its "
        "checks are skipped",)
    with pytest.raises(ConfigError, match=r"\[fields\] token_labels must be one column name"):
        build_config({"fields": {"token_labels": ["a", "b"]}})


def test_guard_columns_2d_labels_are_token_labels_1d_a_class_label():
    ids = torch.zeros(3, 5, dtype=torch.long)
    cols = lambda labels: [tensor_column("input_ids", ids), tensor_column("labels", labels)]  # noqa: E731
    f = resolve(cols(torch.zeros(3, 5, dtype=torch.long)), FieldSpec(auto_label=True))
    assert (f.token_labels, f.label) == ("labels", None)
    f = resolve(cols(torch.zeros(3, dtype=torch.long)), FieldSpec(auto_label=True))
    assert (f.token_labels, f.label) == (None, "labels")


# --------------------------------------------------------------------------------------------- the checks

IDS = [[5, 6, 7, 2], [5, 6], [1, 2, 3], [9, 9, 9], [4, 4, 2]]
MASK = [[1, 1, 1, 1], [1, 1], [1, 1, 0], [1, 1, 1], [1, 1, 1]]
LABELS = [[-100, -100, 7, 2],      # fine: trains 7 and eos
          [-100, -100],            # trains nothing
          [-100, 2, 3],            # 3 is under attention 0: one trained token, the eos
          [-100, 9, 500],          # 500 >= vocab 100, no end token trained
          [-100, 4, 99, -100]]     # one label too many; 99 is an end token
EXPECTED = {
    "no_trainable_tokens": ([False, True, False, False, False], [2.0, 0.0, 1.0, 2.0, 2.0]),
    "labels_misaligned": ([False, False, False, False, True], [0.0, 0.0, 0.0, 0.0, 1.0]),
    "label_id_out_of_range": ([False, False, False, True, False], [7.0, 0.0, 3.0, 500.0, 99.0]),
    "eos_never_trained": ([False, False, False, True, False], [2.0, 0.0, 1.0, 2.0, 2.0]),
}


def _padded(rows, fill, width=4):
    return torch.tensor([r + [fill] * (width - len(r)) for r in rows])


def test_exact_flags_on_ragged_arrow_lists():
    t = TrainedTokens(tokens_from_arrow(pa.array(IDS), pa.array(MASK)), from_arrow(pa.array(LABELS)))
    assert run(t) == EXPECTED


def test_exact_flags_on_padded_tensors_same_as_ragged():
    ids, mask = _padded(IDS, 0), _padded(MASK, 0)
    labels = _padded(LABELS[:4], -100)
    t = TrainedTokens(tokens_from_tensor(ids[:4], mask[:4]), from_tensor(labels))
    assert run(t) == {k: (f[:4], v[:4]) for k, (f, v) in EXPECTED.items()}
    # labels one position wider than the ids ([B, T + 1]): every record misaligned by +1
    wide = torch.cat([labels, torch.full((4, 1), -100)], 1)
    out = run(TrainedTokens(tokens_from_tensor(ids[:4], mask[:4]), from_tensor(wide)))
    assert out["labels_misaligned"] == ([True] * 4, [1.0] * 4)
    flags, values = EXPECTED["no_trainable_tokens"]
    assert out["no_trainable_tokens"] == (flags[:4], values[:4])


def test_train_mask_layout_trains_the_ids_under_the_mask():
    ids = [[5, 6, 7, 2], [5, 6, 7], [1, 200, 3], [9, 9]]
    attn = [[1, 1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1]]
    train = [[0, 0, 1, 1], [0, 0, 0], [0, 1, 1], [1]]
    ragged = TrainedTokens(tokens_from_arrow(pa.array(ids), pa.array(attn)), from_arrow(pa.array(train)), False)
    expected = {"no_trainable_tokens": ([False, True, False, False], [2.0, 0.0, 2.0, 1.0]),
                "labels_misaligned": ([False, False, False, True], [0.0, 0.0, 0.0, -1.0]),
                "label_id_out_of_range": ([False, False, True, False], [7.0, 0.0, 200.0, 9.0]),
                "eos_never_trained": ([False, False, True, True], [2.0, 0.0, 2.0, 1.0])}
    assert run(ragged) == expected
    padded = TrainedTokens(tokens_from_tensor(_padded(ids[:3], 0), _padded(attn[:3], 0)),
                           from_tensor(_padded(train[:3], 0)), False)
    assert run(padded) == {k: (f[:3], v[:3]) for k, (f, v) in expected.items()}


def test_null_rows_and_ignore_index_param():
    ids = pa.array([[1, 2], None, [3, 2]])
    labels = pa.array([None, [1], [0, 0]])
    t = TrainedTokens(tokens_from_arrow(ids, None), from_arrow(labels))
    out = run(t)
    # a null labels list trains nothing and is as long as nothing; a null ids row is no record to flag
    assert out["no_trainable_tokens"] == ([True, False, False], [0.0, 0.0, 2.0])
    assert out["labels_misaligned"] == ([True, False, False], [-2.0, 1.0, 0.0])
    o = REGISTRY["no_trainable_tokens"].fn(t, ignore_index=0)
    # (row 1's label has no token to train: its ids are null)
    assert (o.flagged.tolist(), o.value.tolist()) == ([True, False, True], [0.0, 0.0, 0.0])


def test_no_host_read_on_the_meta_device():
    """The guard path: dense [B, T] tensors on a device where any data-dependent read raises."""
    ids = torch.empty(4, 8, dtype=torch.long, device="meta")
    mask = torch.empty(4, 8, dtype=torch.long, device="meta")
    for labels, kind in ((torch.empty(4, 8, dtype=torch.long, device="meta"), True),
                         (torch.empty(4, 8, dtype=torch.bool, device="meta"), False)):
        t = TrainedTokens(tokens_from_tensor(ids, mask), from_tensor(labels), kind)
        for name in CHECKS:
            o = REGISTRY[name].fn(t, **PARAMS.get(name, {}))
            assert o.flagged.shape == (4,) and o.flagged.dtype == torch.bool and o.value.dtype == torch.float64


# ---------------------------------------------------------------------------------------------- the guard

def _batch():
    ids, mask = _padded(IDS[:4], 0), _padded(MASK[:4], 0)
    return {"input_ids": ids, "attention_mask": mask, "labels": _padded(LABELS[:4], -100)}


def test_guard_raises_on_a_2d_labels_batch_naming_the_labels_field():
    cfg = build_config({"data": {"vocab_size": 100, "eos_token_id": [2, 99]}})
    g = DeviceGuard([_batch()], cfg, policy="raise", profile=False, snapshot_dir=None)
    assert [c.label for c in g.plan.resolve(_batch()) for c in c.calls if c.field == "labels"] == [
        "no_trainable_tokens:labels", "labels_misaligned:labels", "label_id_out_of_range:labels"]
    with pytest.raises(BadBatchError) as ei:
        list(g)
    assert {(f.position, f.check, f.field) for f in ei.value.findings} == {
        (1, "no_trainable_tokens", "labels"), (3, "label_id_out_of_range", "labels")}


def test_guard_skip_and_mask_policies_and_the_eos_check_on_request():
    cfg = build_config({"data": {"vocab_size": 100, "eos_token_id": 2}})
    kept = list(DeviceGuard([_batch()], cfg, policy="skip", profile=False, snapshot_dir=None))
    assert kept == []   # the one batch holds error rows: skipped whole
    (masked,) = DeviceGuard([_batch()], cfg, policy="mask", profile=False, snapshot_dir=None)
    assert masked["loss_weight"].tolist() == [1.0, 0.0, 1.0, 0.0]
    assert (masked["labels"][[1, 3]] == -100).all()
    assert torch.equal(masked["labels"][[0, 2]], _batch()["labels"][[0, 2]])
    plan = GuardPlan(cfg, checks=["eos_never_trained"])
    res = plan.run(_batch())
    assert res.to_dict() == {"eos_never_trained:labels": {"flagged": [False, False, False, True],
                                                          "value": [2.0, 0.0, 1.0, 2.0]}}
    assert GuardPlan(build_config({}), checks=["eos_never_trained"]).run(_batch()).calls == ()
    plan = GuardPlan(build_config({}), checks=["eos_never_trained"])
    plan.resolve(_batch())
    assert plan.skipped == {"eos_never_trained": "not configured: end_token_ids"}


def test_collate_guard_ragged_samples_give_the_audit_values():
    cfg = build_config({"data": {"vocab_size": 100, "eos_token_id": [2, 99]}})
    samples = [{"input_ids": i, "attention_mask": m, "labels": lab} for i, m, lab in zip(IDS, MASK, LABELS)]
    res, *_ = CollateGuard(lambda s: s, cfg, checks="all").check(samples)
    got = res.to_dict()
    assert {n: (got[f"{n}:labels"]["flagged"], got[f"{n}:labels"]["value"]) for n in CHECKS} == EXPECTED


def test_class_labels_in_the_guard_are_untouched():
    cfg = build_config({"data": {"num_classes": 3, "vocab_size": 100}})
    plan = GuardPlan(cfg, checks="all")
    batch = {"input_ids": _padded(IDS[:4], 0), "labels": torch.tensor([0, 1, 2, 7])}
    res = plan.run(batch).to_dict()
    assert res["label_out_of_range:labels"]["flagged"] == [False, False, False, True]
    assert not any(k.startswith(CHECKS) for k in res)
    assert plan.skipped["no_trainable_tokens"] == "no trained field in the batch"


# ------------------------------------------------------------------------------------ a real tokenizer's end

def _folder(tmp_path, template: str | None):
    """The llama test tokenizer as a folder: </s> its eos; with a ChatML template, <|im_end|> added (id 32003)."""
    from tokenizers import Tokenizer

    src = shared_file(LLAMA)
    folder = tmp_path / "tok"
    folder.mkdir(parents=True)
    config = {"bos_token": "<s>", "eos_token": "</s>"}
    if template is None:
        shutil.copy(src, folder / "tokenizer.json")
    else:
        tok = Tokenizer.from_file(str(src))
        tok.add_special_tokens(["<|im_end|>"])
        tok.save(str(folder / "tokenizer.json"))
        config["chat_template"] = template
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


CHATML = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"


def test_end_tokens_of_a_real_tokenizer(tmp_path):
    lone = shared_file(LLAMA)
    assert tokenizer_end_ids(str(lone)) == ()   # a lone tokenizer.json names no eos (its post-processor adds bos only)
    assert tokenizer_end_ids(str(_folder(tmp_path / "a", None))) == (2,)
    chat = _folder(tmp_path / "b", CHATML)
    assert tokenizer_end_ids(str(chat)) == (2, 32003)
    cfg = build_config({"data": {"tokenizer": str(chat)}})
    assert cfg.data["eos_token_id"] == [2, 32003] and cfg.data["vocab_size"] == 32004
    assert cfg.check("eos_never_trained").params["end_token_ids"] == [2, 32003]
    assert build_config({"data": {"tokenizer": str(chat), "eos_token_id": 7}}).data["eos_token_id"] == [7]
    cfg = build_config({"data": {"tokenizer": str(lone)}})
    assert "eos_token_id" not in cfg.data and cfg.check("eos_never_trained").params["end_token_ids"] is None
    with pytest.raises(ConfigError, match=r"\[data\] eos_token_id must be a token id or a list of them"):
        build_config({"data": {"eos_token_id": "</s>"}})
    with pytest.raises(ConfigError, match=r"end_token_ids must be a list of token ids"):
        build_config({"checks": {"eos_never_trained": {"end_token_ids": ["</s>"]}}})


def test_device_guard_on_the_meta_device_reads_nothing_back():
    """mask / warn / raise with token labels on a device where any data-dependent read raises."""
    cfg = build_config({"data": {"vocab_size": 100, "eos_token_id": [2]}})
    batch = {"input_ids": torch.zeros(4, 8, dtype=torch.int64), "attention_mask": torch.ones(4, 8, dtype=torch.int64),
             "labels": torch.full((4, 8), -100, dtype=torch.int64)}
    for policy in ("mask", "warn", "raise"):
        g = DeviceGuard([batch], cfg, device=torch.device("meta"), policy=policy, checks="all", profile=False,
                        snapshot_dir=None)
        out, _ = g.process(dict(batch))
        assert out["labels"].device.type == "meta"
        assert [c.label for c in g.plan.calls if c.field == "labels"] == [
            "no_trainable_tokens:labels", "labels_misaligned:labels", "label_id_out_of_range:labels",
            "eos_never_trained:labels"]
