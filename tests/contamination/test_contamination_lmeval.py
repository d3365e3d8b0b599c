"""lm-eval task presets: each built-in preset's text against lm-eval's rendering of the same task's YAML (real
GSM8K and ARC-Challenge items, small HF-schema records for the others), `--benchmark lm-eval:TASK`, and the
refusals (groups, tags, `!function` queries, missing fields, sandbox escapes). Run over the task YAMLs vendored in
fixtures/lm_eval_tasks (lm-eval 0.4.13, MIT) and, when the `lmeval` extra is installed, over the installed ones."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("yaml", reason="PyYAML not installed: pip install 'dataaudit[lmeval]'")

from dataaudit.cli import main  # noqa: E402
from dataaudit.contamination.lmeval_render import render_query, render_task  # noqa: E402
from dataaudit.contamination.lmeval_tasks import LmEvalError, installed_tasks_dir, task_config  # noqa: E402
from dataaudit.contamination.load import load_benchmark  # noqa: E402
from tests.paths import needs_shared, shared_file  # noqa: E402

VENDORED = str(Path(__file__).parent / "fixtures" / "lm_eval_tasks")
INSTALLED = installed_tasks_dir()
ROOTS = [pytest.param(VENDORED, id="vendored"),
         pytest.param(INSTALLED, id="installed", marks=pytest.mark.skipif(
             INSTALLED is None, reason="lm-eval not installed: pip install 'dataaudit[lmeval]'"))]


def _jsonl(path: Path, recs: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return str(path)


def _lines(rel: str, n: int) -> list[dict]:
    with shared_file(rel).open(encoding="utf-8") as fh:
        return [json.loads(next(fh)) for _ in range(n)]


def _ai2_to_hf(rec: dict) -> dict:
    q = rec["question"]
    return {"id": rec["id"], "question": q["stem"], "answerKey": rec["answerKey"],
            "choices": {"text": [c["text"] for c in q["choices"]], "label": [c["label"] for c in q["choices"]]}}


# ------------------------------------------------------------------------------ built-in presets vs lm-eval

@needs_shared
@pytest.mark.parametrize("root", ROOTS)
def test_gsm8k_preset_is_the_question_lm_eval_queries(root, tmp_path):
    recs = _lines("benchmarks/gsm8k_test.jsonl", 3)
    preset = load_benchmark("gsm8k", _jsonl(tmp_path / "g.jsonl", recs))
    entry = task_config("gsm8k", root)
    for rec, text in zip(recs, preset.texts):
        assert render_query(entry, rec) == f"Question: {text}\nAnswer:"
    assert render_query(entry, recs[1]) == ("Question: A robe takes 2 bolts of blue fiber and half that much white "
                                            "fiber.  How many bolts in total does it take?\nAnswer:")
    texts, answers, choices, notes = render_task(entry, recs, ["1", "2", "3"])
    assert texts == preset.texts and choices == [None] * 3 and notes == []
    assert answers[1] == ["It takes 2/2=<<2/2=1>>1 bolt of white fiber\nSo the total amount of fabric is "
                          "2+1=<<2+1=3>>3 bolts of fabric\n#### 3"]


@needs_shared
@pytest.mark.parametrize("root", ROOTS)
def test_arc_preset_is_the_stem_lm_eval_decontaminates_on(root, tmp_path):
    recs = _lines("benchmarks/arc_challenge_test.jsonl", 3)
    preset = load_benchmark("arc_challenge", _jsonl(tmp_path / "a.jsonl", recs))     # AI2 schema
    entry = task_config("arc_challenge", root)
    hf = [_ai2_to_hf(r) for r in recs]
    for rec, text in zip(hf, preset.texts):
        assert render_query(entry, rec) == f"Question: {text}\nAnswer:"
    assert render_query(entry, hf[0]) == ("Question: An astronomer observes that a planet rotates faster after a "
                                          "meteorite impact. Which is the most likely effect of this increase in "
                                          "rotation?\nAnswer:")
    texts, answers, choices, _ = render_task(entry, hf, ["1", "2", "3"])
    assert texts == preset.texts
    assert answers[0] == ["Planetary days will become shorter."]
    assert choices[0] == ["Planetary density will decrease.", "Planetary years will become longer.",
                          "Planetary days will become shorter.", "Planetary gravity will become stronger."]


MMLU = {"question": "Which of the following is the body cavity that contains the pituitary gland?",
        "subject": "anatomy", "choices": ["Abdominal", "Cranial", "Pleural", "Spinal"], "answer": 1}
TQA = {"question": "What happens if you eat watermelon seeds?",
       "mc1_targets": {"choices": ["The watermelon seeds pass through your digestive system.",
                                   "You grow watermelons in your stomach."], "labels": [1, 0]}}
HUMANEVAL = {"task_id": "HumanEval/0", "prompt": "def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n",
             "canonical_solution": "    return a + b\n", "test": "def check(f):\n    assert f(1, 2) == 3\n",
             "entry_point": "add"}
MBPP = {"task_id": 11, "text": "Write a python function to remove first and last occurrence of a given character "
        "from the string.", "code": "def remove_Occ(s,ch): return s",
        "test_list": ["assert remove_Occ(\"hello\",\"l\") == \"heo\"", "assert remove_Occ(\"abcda\",\"a\") == \"bcd\"",
                      "assert remove_Occ(\"PHP\",\"P\") == \"H\""]}
HELLASWAG = {"ind": 24, "activity_label": "Roof shingle removal", "ctx_a": "A man is sitting on a roof.",
             "ctx_b": "he", "ctx": "A man is sitting on a roof. he", "label": "3",
             "endings": ["is using wrap to wrap a pair of skis.", "is ripping level tiles off.",
                         "is holding a rubik's cube.", "starts pulling up roofing on a roof."]}


@pytest.mark.parametrize("root", ROOTS)
def test_mmlu_preset_is_the_question_lm_eval_lists_choices_after(root, tmp_path):
    preset = load_benchmark("mmlu", _jsonl(tmp_path / "m.jsonl", [MMLU]))
    entry = task_config("mmlu_anatomy", root)
    q = "Which of the following is the body cavity that contains the pituitary gland?"
    assert preset.texts == [q]
    assert render_query(entry, MMLU) == f"{q}\nA. Abdominal\nB. Cranial\nC. Pleural\nD. Spinal\nAnswer:"
    texts, answers, choices, notes = render_task(entry, [MMLU], ["line 1"])
    assert texts == [f"{q}\nA. Abdominal\nB. Cranial\nC. Pleural\nD. Spinal"]
    assert (answers, choices) == ([["Answer: B", "answer is B"]], [None])
    assert notes == ["lm-eval task 'mmlu_anatomy': its choices are bare labels: the answer is looked for as "
                     "'Answer: X', the choices are not checked"]


@pytest.mark.parametrize("root", ROOTS)
def test_truthfulqa_preset_is_the_question_lm_eval_decontaminates_on(root, tmp_path):
    preset = load_benchmark("truthfulqa", _jsonl(tmp_path / "t.jsonl", [TQA]))
    entry = task_config("truthfulqa_mc1", root)
    assert render_query(entry, TQA) == preset.texts[0] == "What happens if you eat watermelon seeds?"
    _, answers, choices, _ = render_task(entry, [TQA], ["line 1"])
    assert answers == [["The watermelon seeds pass through your digestive system."]]
    assert choices == [TQA["mc1_targets"]["choices"]]


@pytest.mark.parametrize("root", ROOTS)
def test_humaneval_preset_is_the_prompt_lm_eval_renders(root, tmp_path):
    preset = load_benchmark("humaneval", _jsonl(tmp_path / "h.jsonl", [HUMANEVAL]))
    entry = task_config("humaneval", root)
    assert render_query(entry, HUMANEVAL) == preset.texts[0] == "def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n"
    _, answers, _, _ = render_task(entry, [HUMANEVAL], ["line 1"])
    assert answers == [["def check(f):\n    assert f(1, 2) == 3\n\ncheck(add)"]]    # the harness's target: tests


@pytest.mark.parametrize("root", ROOTS)
def test_mbpp_preset_is_the_task_text_inside_lm_eval_prompt(root, tmp_path):
    preset = load_benchmark("mbpp", _jsonl(tmp_path / "p.jsonl", [MBPP]))
    entry = task_config("mbpp", root)
    tests = "\n".join(MBPP["test_list"])
    assert render_query(entry, MBPP) == (f"You are an expert Python programmer, and here is your task: "
                                         f"{preset.texts[0]} Your code should pass these tests:\n\n{tests}\n[BEGIN]\n")
    texts, answers, _, _ = render_task(entry, [MBPP], ["line 1"])
    assert texts == [f"{MBPP['text']} Your code should pass these tests:\n\n{tests}"] and answers == [[tests]]


def _hellaswag_process_doc(doc: dict) -> dict:
    """lm-eval 0.4.13's tasks/hellaswag/utils.py process_docs, for one record (the harness runs it; we never do)."""
    def pre(text):
        text = text.strip().replace(" [title]", ". ")
        return re.sub("\\[.*?\\]", "", text).replace("  ", " ")
    ctx = doc["ctx_a"] + " " + doc["ctx_b"].capitalize()
    return {"query": pre(doc["activity_label"] + ": " + ctx), "choices": [pre(e) for e in doc["endings"]],
            "gold": int(doc["label"]), "label": doc["label"]}


@pytest.mark.parametrize("root", ROOTS)
def test_hellaswag_preset_is_the_context_lm_eval_prefixes_with_the_activity(root, tmp_path):
    preset = load_benchmark("hellaswag", _jsonl(tmp_path / "s.jsonl", [HELLASWAG]))
    entry = task_config("hellaswag", root)
    assert preset.texts == ["A man is sitting on a roof. he"]
    assert render_query(entry, _hellaswag_process_doc(HELLASWAG)) == \
        "Roof shingle removal: A man is sitting on a roof. He"
    _, answers, choices, notes = render_task(entry, [_hellaswag_process_doc(HELLASWAG)], ["line 1"])
    assert answers == [["starts pulling up roofing on a roof."]] and choices == [HELLASWAG["endings"]]
    assert notes == ["lm-eval task 'hellaswag': process_docs is !function utils.process_docs (Python code, not "
                     "run): the file's records are rendered as they are"]
    with pytest.raises(LmEvalError) as exc:        # the raw HF record: process_docs makes `query`
        render_task(entry, [HELLASWAG], ["h.jsonl: line 1"])
    assert str(exc.value) == (
        "lm-eval task 'hellaswag': doc_to_text '{{query}}': h.jsonl: line 1: missing field: 'query' is undefined "
        "(the task's process_docs, not run, makes its fields); the record has fields: ind, activity_label, ctx_a, "
        "ctx_b, ctx, label, endings")


# ------------------------------------------------------------------------------ the option and its refusals

def test_lm_eval_task_by_name_when_no_preset_matches(tmp_path):
    rec = {"id": "7-980", "question_stem": "The sun is responsible for", "answerKey": "D",
           "choices": {"text": ["puppies learning new tricks", "children growing up and getting old",
                                "flowers wilting in a vase", "plants sprouting, blooming and wilting"],
                       "label": ["A", "B", "C", "D"]}}
    bench = load_benchmark("openbookqa", _jsonl(tmp_path / "o.jsonl", [rec]), lm_eval_tasks=VENDORED)
    assert (bench.preset, bench.fields, bench.ids, bench.texts) == ("lm-eval:openbookqa", (), ["7-980"],
                                                                   ["The sun is responsible for"])
    assert bench.answers == [["plants sprouting, blooming and wilting"]] and bench.choices == [rec["choices"]["text"]]
    plain = load_benchmark("openbookqa", str(tmp_path / "o.jsonl"), fields=("question_stem",), lm_eval_tasks=VENDORED)
    assert (plain.preset, plain.answers) == (None, None)      # fields given: no task


@pytest.mark.parametrize("name, msg", [
    ("mmlu", "lm-eval task 'mmlu' is a group of tasks (mmlu_stem, mmlu_other, mmlu_social_sciences, "
             "mmlu_humanities): name one task"),
    ("ai2_arc", "lm-eval task 'ai2_arc' is a tag of tasks (arc_easy, arc_challenge): name one task"),
    ("meqsum", "lm-eval task 'meqsum': doc_to_text is !function utils.doc_to_text (Python code, not imported): it "
               "cannot be rendered; give the fields: meqsum=FILE:FIELD"),
])
def test_groups_tags_and_function_queries_are_refused(tmp_path, name, msg):
    path = _jsonl(tmp_path / "b.jsonl", [{"text": "x"}])
    with pytest.raises(LmEvalError) as exc:
        load_benchmark(name, path, lm_eval=True, lm_eval_tasks=VENDORED)
    assert str(exc.value) == msg


def test_cli_exit_2_one_line_for_a_missing_field_and_an_unknown_task(tmp_path):
    bench = _jsonl(tmp_path / "g.jsonl", [{"question": "What is 2 + 2?", "answer": "#### 4"}, {"q": "x"}])
    (tmp_path / "t.jsonl").write_text(json.dumps({"text": "hello"}) + "\n")
    args = ["contamination", "--train", str(tmp_path / "t.jsonl"), "--out", str(tmp_path / "out"),
            "--lm-eval-tasks", VENDORED, "--engine", "local", "--benchmark"]
    res = CliRunner().invoke(main, args + [f"lm-eval:gsm8k={bench}"])
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == [
        f"Error: lm-eval task 'gsm8k': doc_to_text 'Question: {{{{question}}}}\\nAnswer:': {bench}: line 2: missing "
        "field: 'question' is undefined; the record has fields: q"]
    res = CliRunner().invoke(main, args + [f"lm-eval:nosuchtask={bench}"])
    assert (res.exit_code, res.output.strip()) == (
        2, f"Error: lm-eval task 'nosuchtask': no task YAML under {VENDORED} declares it")


def test_cli_lm_eval_task_finds_the_leak(tmp_path):
    bench = _jsonl(tmp_path / "g.jsonl", [
        {"question": "Tom has three boxes with twelve red apples in each box and gives away seven apples to Ann. "
                     "How many apples are left?", "answer": "36 - 7 = 29\n#### 29"},
        {"question": "A train leaves the station at noon and travels sixty miles every hour for four hours. How "
                     "far does it go?", "answer": "#### 240"}])
    train = tmp_path / "t.jsonl"
    train.write_text(json.dumps({"text": "tom has three boxes with twelve red apples in each box and gives away "
                                         "seven apples to ann how many apples are left? It is 29."}) + "\n")
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["contamination", "--train", str(train), "--out", str(out), "--engine", "local",
                                    "--lm-eval-tasks", VENDORED, "--benchmark", f"lm-eval:gsm8k={bench}"])
    assert res.exit_code == 1, res.output
    b = json.loads((out / "contamination.json").read_text())["benchmarks"]["gsm8k"]
    assert (b["preset"], b["contaminated"], b["clean"], b["leaks"]) == (
        "lm-eval:gsm8k", 1, 1, {"input": 1, "answer": 0, "choices": None})


def _task_dir(tmp_path: Path, yaml_text: str) -> str:
    d = tmp_path / "tasks" / "t"
    d.mkdir(parents=True)
    (d / "t.yaml").write_text(yaml_text)
    return str(tmp_path / "tasks")


@pytest.mark.parametrize("template, msg", [
    ("{{ ''.__class__.__mro__ }}", "access to attribute '__class__' of 'str' object is unsafe."),
    ("{{ question * 100000000 }}", "chat template rendering over 16777216 characters (not tokenized)"),
])
def test_templates_render_in_the_sandbox(tmp_path, template, msg):
    root = _task_dir(tmp_path, f"task: evil\ndoc_to_text: \"{template}\"\n")
    with pytest.raises(LmEvalError) as exc:
        render_task(task_config("evil", root), [{"question": "q"}], ["line 1"])
    assert str(exc.value) == f"lm-eval task 'evil': doc_to_text {template!r}: line 1: {msg}; the record has " \
                             "fields: question"


def test_include_outside_the_tasks_folder_is_not_read(tmp_path):
    (tmp_path / "secret.yaml").write_text("doc_to_text: '{{question}}'\n")
    root = _task_dir(tmp_path, "task: t1\ninclude: ../../secret.yaml\n")
    with pytest.raises(LmEvalError) as exc:
        task_config("t1", root)
    assert str(exc.value) == f"lm-eval task 't1': no task YAML under {root} declares it"   # it did not load


def test_include_is_merged_under_the_tasks_own_keys(tmp_path):
    root = _task_dir(tmp_path, "task: t2\ninclude: base.yaml\ndoc_to_target: '{{answer}}'\n")
    (Path(root) / "t" / "base.yaml").write_text("doc_to_text: 'Q: {{question}}'\ndoc_to_target: nope\n")
    entry = task_config("t2", root)
    assert render_task(entry, [{"question": "Why?", "answer": "Because."}], ["line 1"]) == (
        ["Why?"], [["Because."]], [None], [])


def test_a_task_name_without_lm_eval_prefix_hints_at_fields_when_it_fails(tmp_path):
    path = _jsonl(tmp_path / "o.jsonl", [{"text": "The sun is responsible for"}])
    with pytest.raises(LmEvalError) as exc:
        load_benchmark("openbookqa", path, lm_eval_tasks=VENDORED)
    assert str(exc.value) == (
        f"lm-eval task 'openbookqa': doc_to_decontamination_query 'question_stem': {path}: line 1: field "
        "'question_stem' not found; the record has fields: text (the name 'openbookqa' is an lm-eval task; to "
        "match fields instead: openbookqa=PATH:FIELD)")
    assert load_benchmark("openbookqa", path, fields=("text",), lm_eval_tasks=VENDORED).texts == \
        ["The sun is responsible for"]


@pytest.mark.parametrize("specs, want", [
    ("doc_to_target: 1\ndoc_to_choice: ['no', 'yes']", ([["yes"]], [["no", "yes"]])),               # int index
    ("doc_to_target: '{{label}}'\ndoc_to_choice: '{{opts}}'", ([["ruby"]], [["opal", "ruby"]])),     # digits index
    ("doc_to_target: '{{[0, 1]}}'\ndoc_to_choice: {a: opal, b: ruby}", ([["opal", "ruby"]], [["opal", "ruby"]])),
    ("doc_to_target: gold", ([["a ruby"]], [None])),                                                 # a field
    ("doc_to_target: !function utils.gold", ([[]], [None])),
])
def test_target_and_choice_conventions(tmp_path, specs, want):
    root = _task_dir(tmp_path, f"task: conv\ndoc_to_text: '{{{{q}}}}'\n{specs}\n")
    doc = {"q": "Which gem is red?", "label": "1", "opts": ["opal", "ruby"], "gold": "a ruby"}
    texts, answers, choices, notes = render_task(task_config("conv", root), [doc], ["line 1"])
    assert (texts, answers, choices) == (["Which gem is red?"], *want)
    assert notes == (["lm-eval task 'conv': doc_to_target is !function utils.gold (Python code, not run): the "
                      "answer is not checked"] if "!function" in specs else [])


def test_lm_eval_prefix_takes_no_fields(tmp_path):
    path = _jsonl(tmp_path / "g.jsonl", [{"question": "q"}])
    with pytest.raises(Exception) as exc:
        load_benchmark("gsm8k", path, fields=("question",), lm_eval=True, lm_eval_tasks=VENDORED)
    assert str(exc.value) == "--benchmark lm-eval:gsm8k: the task names the text; give no fields or preset"


def test_without_lm_eval_the_option_names_the_extra(tmp_path, monkeypatch):
    import dataaudit.contamination.lmeval_tasks as tasks

    monkeypatch.setattr(tasks, "installed_tasks_dir", lambda: None)
    path = _jsonl(tmp_path / "g.jsonl", [{"question": "q"}])
    with pytest.raises(LmEvalError) as exc:
        load_benchmark("gsm8k", path, lm_eval=True)
    assert str(exc.value) == ("--benchmark lm-eval:TASK needs lm-eval, which is not installed: pip install "
                              "'dataaudit[lmeval]' (or name a folder of task YAMLs with --lm-eval-tasks DIR)")
