#!/usr/bin/env bash
# Install rensa (Rust MinHash with Python bindings; the peer of benchmarks/dedup_signatures.py) into
# .bench-deps/. Not a project dependency. rensa has no Python dependencies, so nothing in the venv is
# shadowed. Run it after setup_bench.sh (which recreates .bench-deps when it is not set up yet).
#
# Usage: bash benchmarks/setup_dedup_bench.sh [--force]     (env: PY=.venv/bin/python, RENSA_SPEC=rensa)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PY:-.venv/bin/python}"
TARGET="${BENCH_DEPS:-.bench-deps}"
RENSA_SPEC="${RENSA_SPEC:-rensa}"

if [[ "${1:-}" != "--force" ]] && [[ -f "$TARGET/.rensa-installed" ]]; then
  echo "setup_dedup_bench: rensa already in $TARGET (pass --force to reinstall)"
  exit 0
fi
mkdir -p "$TARGET"
"$PY" -m pip install --quiet --disable-pip-version-check --no-deps --upgrade --target "$TARGET" "$RENSA_SPEC" 2>&1 \
  | grep -v "^WARNING: Target directory" || true
PYTHONPATH="$TARGET${PYTHONPATH:+:$PYTHONPATH}" "$PY" - <<'PYEOF'
import rensa
m = rensa.RMinHash(num_perm=16, seed=1)
m.update(["a b c", "b c d"])
print("setup_dedup_bench: rensa ok,", len(m.digest()), "values")
PYEOF
touch "$TARGET/.rensa-installed"
