#!/usr/bin/env bash
# Install lm-evaluation-harness (lm_eval) into .bench-deps/lm-eval/ for benchmarks/contamination_vs_janitor.py
# only. It is NOT a project dependency, and only that benchmark puts the folder on sys.path.
#
# Its decontamination Janitor (lm_eval/decontamination/janitor.py) imports only the standard library, so lm_eval is
# installed with --no-deps: its own dependency set (torch, transformers, datasets, evaluate, ...) is not needed to
# run the Janitor. The Janitor's optional C++ helper `janitor_util` is not on PyPI (lm_eval's
# scripts/clean_training_data/ compiles it from source with pybind11), so the Janitor runs in its Python mode,
# which is what `pip install lm_eval` gives a user.
#
# Usage: bash benchmarks/setup_contamination_bench.sh [--force]
#        (env: PY=.venv/bin/python, LM_EVAL_SPEC=lm_eval, LM_EVAL_DEPS=.bench-deps/lm-eval)
# Note: benchmarks/setup_bench.sh --force deletes all of .bench-deps; run this script again after it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PY:-.venv/bin/python}"
TARGET="${LM_EVAL_DEPS:-.bench-deps/lm-eval}"
LM_EVAL_SPEC="${LM_EVAL_SPEC:-lm_eval}"

if [[ "${1:-}" != "--force" ]] && [[ -f "$TARGET/.installed" ]]; then
  echo "setup_contamination_bench: $TARGET already set up (pass --force to reinstall)"
  exit 0
fi
rm -rf "$TARGET"
mkdir -p "$TARGET"

piplog="$(mktemp)"
trap 'rm -f "$piplog"' EXIT
if ! "$PY" -m pip install --quiet --disable-pip-version-check --no-deps --target "$TARGET" "$LM_EVAL_SPEC" \
     >"$piplog" 2>&1; then
  grep -v "^WARNING: Location" "$piplog" >&2 || true
  echo "setup_contamination_bench: pip install $LM_EVAL_SPEC into $TARGET failed" >&2
  exit 1
fi

# Smoke test: the Janitor imports and flags a registered 13-gram, offline.
PYTHONPATH="$TARGET${PYTHONPATH:+:$PYTHONPATH}" "$PY" - <<'PYEOF'
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    from lm_eval.decontamination import janitor          # prints a warning when janitor_util (C++) is missing
import lm_eval
words = "one two three four five six seven eight nine ten eleven twelve thirteen".split()
j = janitor.Janitor()
j.register_contaminant_python(" ".join(words))
doc = "x " * 300 + " ".join(w.upper() for w in words) + " y" * 300
assert j.clean_python(doc) != [doc], "the Janitor did not flag a registered 13-gram"
print("setup_contamination_bench: lm_eval", lm_eval.__version__, "| Janitor mode:",
      "C++ janitor_util" if janitor.JANITOR_CPP else "python (janitor_util not installed)")
PYEOF
touch "$TARGET/.installed"
echo "setup_contamination_bench: ok ($TARGET)"
