#!/usr/bin/env bash
# Install the benchmark-only peers (datatrove + the spaCy tokenizer its English Gopher filters use) into
# .bench-deps/ at the repo root. They are NOT project dependencies: only benchmarks/text_checks_vs_datatrove.py
# puts .bench-deps on sys.path.
#
# Offline note: datatrove's English word tokenizer is `spacy.blank("en")` (see datatrove's
# assets/tokenizer_assignment.csv: eng -> SpaCyTokenizer), which needs no downloaded model or NLTK data, so
# nothing beyond PyPI is needed. Shared packages (numpy, fsspec, ...) are pinned to the versions already in the
# project venv and then removed from .bench-deps so they never shadow the venv's copies.
#
# Usage: bash benchmarks/setup_bench.sh [--force]     (env: PY=.venv/bin/python, DATATROVE_SPEC=datatrove)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PY:-.venv/bin/python}"
TARGET="${BENCH_DEPS:-.bench-deps}"
DATATROVE_SPEC="${DATATROVE_SPEC:-datatrove}"
SPACY_SPEC="${SPACY_SPEC:-spacy}"
# regex: imported by datatrove.utils.text (in datatrove's [processing] extra, not its core deps)
EXTRA_SPECS="${EXTRA_SPECS:-regex}"

if [[ "${1:-}" != "--force" ]] && [[ -f "$TARGET/.installed" ]]; then
  echo "setup_bench: $TARGET already set up (pass --force to reinstall)"
  exit 0
fi
rm -rf "$TARGET"
mkdir -p "$TARGET"

constraints="$(mktemp)"
trap 'rm -f "$constraints"' EXIT
# Pin every package the venv already has, so the copies pip drops into $TARGET are identical to the venv's.
"$PY" -m pip freeze --exclude-editable 2>/dev/null | grep -E '^[A-Za-z0-9_.-]+==' > "$constraints" || true

piplog="$(mktemp)"
trap 'rm -f "$constraints" "$piplog"' EXIT
if ! "$PY" -m pip install --quiet --disable-pip-version-check --target "$TARGET" -c "$constraints" \
     "$DATATROVE_SPEC" "$SPACY_SPEC" $EXTRA_SPECS >"$piplog" 2>&1; then
  grep -v "^WARNING: Location" "$piplog" >&2 || true
  echo "setup_bench: pip install into $TARGET failed" >&2
  exit 1
fi

# Drop from $TARGET every distribution the venv already provides (same version, by the constraints above).
"$PY" - "$TARGET" <<'PYEOF'
import importlib.metadata as md, pathlib, re, shutil, sys
target = pathlib.Path(sys.argv[1]).resolve()
norm = lambda s: re.sub(r"[-_.]+", "-", s).lower()
venv = {}
for d in md.distributions():
    loc = pathlib.Path(str(d.locate_file(""))).resolve()
    if target not in (loc, *loc.parents):
        venv[norm(d.metadata["Name"])] = d.version
removed = []
for info in sorted(target.glob("*.dist-info")):
    dist = md.PathDistribution(info)
    name = norm(dist.metadata["Name"])
    if name in venv and name not in ("datatrove", "spacy"):
        for f in dist.files or []:
            p = (target / f).resolve()
            if p.is_file() and target in p.parents:
                p.unlink()
        shutil.rmtree(info, ignore_errors=True)
        removed.append(f"{name}=={dist.version}")
# remove now-empty package folders
for p in sorted(target.rglob("*"), key=lambda p: len(p.parts), reverse=True):
    if p.is_dir() and not any(p.iterdir()):
        p.rmdir()
print(f"setup_bench: pruned {len(removed)} packages the venv already has")
PYEOF

# Smoke test: the two filters import and run offline on one document.
PYTHONPATH="$TARGET${PYTHONPATH:+:$PYTHONPATH}" "$PY" - <<'PYEOF'
from datatrove.data import Document
from datatrove.pipeline.filters import GopherQualityFilter, GopherRepetitionFilter
import datatrove, spacy
d = Document(text="The cat sat on the mat and that was the end of it. " * 20, id="0")
print("setup_bench: datatrove", datatrove.__version__ if hasattr(datatrove, "__version__") else "?",
      "spacy", spacy.__version__, "| quality:", GopherQualityFilter().filter(d),
      "| repetition:", GopherRepetitionFilter().filter(d))
PYEOF
touch "$TARGET/.installed"
echo "setup_bench: ok ($TARGET)"
