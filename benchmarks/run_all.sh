#!/usr/bin/env bash
# Run every benchmark with its default sizes; each one's output goes to bench-data/results/<name>.txt
# (and to the terminal). Exit status: 0 if all ran, 1 if any failed (the others still run).
#
#   bash benchmarks/run_all.sh                      # defaults: 200 MB corpus, datatrove on 20k rows, 100 MB vs 1 GB
#   MB=20 DATATROVE_ROWS=2000 MEM_SIZES=10,20 bash benchmarks/run_all.sh   # quick smoke run
#
# Env: PY (.venv/bin/python), MB (corpus MB for the throughput benchmarks, 200), DATATROVE_ROWS (20000),
#      MEM_SIZES (100,1000), RESULTS (bench-data/results), SEED (1234), EXTRA_ARGS (passed to all three).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PY:-.venv/bin/python}"
MB="${MB:-200}"
DATATROVE_ROWS="${DATATROVE_ROWS:-20000}"
MEM_SIZES="${MEM_SIZES:-100,1000}"
RESULTS="${RESULTS:-bench-data/results}"
SEED="${SEED:-1234}"
EXTRA_ARGS="${EXTRA_ARGS:-}"
mkdir -p "$RESULTS"
failed=()

step() {  # step NAME CMD...
  local name="$1"; shift
  echo "=== $name: $*"
  { echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ)  $*"; "$@" 2>&1; } | tee "$RESULTS/$name.txt"
  local rc=${PIPESTATUS[0]}
  if [[ $rc -ne 0 ]]; then
    echo "=== $name FAILED (exit $rc)"
    failed+=("$name")
  fi
}

step setup_bench bash benchmarks/setup_bench.sh
step setup_dedup_bench bash benchmarks/setup_dedup_bench.sh
step setup_contamination_bench bash benchmarks/setup_contamination_bench.sh
# shellcheck disable=SC2086
step make_corpus "$PY" benchmarks/make_corpus.py --mb "$MB" --seed "$SEED" $EXTRA_ARGS
# shellcheck disable=SC2086
step text_checks_vs_datatrove "$PY" benchmarks/text_checks_vs_datatrove.py --mb "$MB" --seed "$SEED" \
  --datatrove-rows "$DATATROVE_ROWS" --json "$RESULTS/text_checks_vs_datatrove.json" $EXTRA_ARGS
# shellcheck disable=SC2086
step parquet_read "$PY" benchmarks/parquet_read.py --mb "$MB" --seed "$SEED" \
  --json "$RESULTS/parquet_read.json" $EXTRA_ARGS
step clean_rewrite "$PY" benchmarks/clean_rewrite.py --mb "$MB" --json "$RESULTS/clean_rewrite.json"
# shellcheck disable=SC2086
step integrity_read_cost "$PY" benchmarks/integrity_read_cost.py --mb "$MB" --seed "$SEED" \
  --json "$RESULTS/integrity_read_cost.json" $EXTRA_ARGS
# shellcheck disable=SC2086
step memory_scaling "$PY" benchmarks/memory_scaling.py --sizes "$MEM_SIZES" --seed "$SEED" \
  --json "$RESULTS/memory_scaling.json" $EXTRA_ARGS

# shellcheck disable=SC2086
step dedup_signatures "$PY" benchmarks/dedup_signatures.py --docs "${DEDUP_DOCS:-50000}" --threshold 0.5 \
  --json "$RESULTS/dedup_signatures.json" $EXTRA_ARGS
# shellcheck disable=SC2086
step dedup_lsh_scale "$PY" benchmarks/dedup_lsh_scale.py --signatures "${DEDUP_SIGNATURES:-1000000}" \
  --json "$RESULTS/dedup_lsh_scale.json" $EXTRA_ARGS
step dedup_end_to_end "$PY" benchmarks/dedup_end_to_end.py --docs-1m --json "$RESULTS/dedup_end_to_end.json"
# shellcheck disable=SC2086
step contamination_vs_janitor "$PY" benchmarks/contamination_vs_janitor.py --mb "$MB" --seed "$SEED" \
  --janitor-docs "${JANITOR_DOCS:-20000}" --json "$RESULTS/contamination_vs_janitor.json" $EXTRA_ARGS
step startup "$PY" benchmarks/startup.py --json "$RESULTS/startup.json"
# shellcheck disable=SC2086
step guard_overhead "$PY" benchmarks/guard_overhead.py --threads 1 --json "$RESULTS/guard_overhead.json" $EXTRA_ARGS

# Chat data: needs the real conversations in ../shared/data/chat (or $DATAAUDIT_SHARED_DATA/chat)
SHARED="${DATAAUDIT_SHARED_DATA:-$ROOT/../shared/data}"
if [[ -d "$SHARED/chat" ]]; then
  step chat_recall "$PY" benchmarks/chat_recall.py --json "$RESULTS/chat_recall.json"
  step chat_throughput "$PY" benchmarks/chat_throughput.py --json "$RESULTS/chat_throughput.json"
else
  echo "=== chat_recall, chat_throughput: skipped ($SHARED/chat missing)"
fi

# Image-text data: needs the real photos in ../shared/data/images (or $DATAAUDIT_SHARED_DATA/images)
if [[ -d "$SHARED/images" ]]; then
  step image_recall "$PY" benchmarks/image_recall.py --json "$RESULTS/image_recall.json"
  step image_throughput "$PY" benchmarks/image_throughput.py --json "$RESULTS/image_throughput.json"
  step image_dedup_recall "$PY" benchmarks/image_dedup_recall.py --json "$RESULTS/image_dedup_recall.json"
  step joint_dedup "$PY" benchmarks/joint_dedup.py --json "$RESULTS/joint_dedup.json"
else
  echo "=== image_recall, image_throughput, image_dedup_recall, joint_dedup: skipped ($SHARED/images missing)"
fi

# Post-training data: the pair plants are built from ../shared/data/posttrain; the tool plants are generated
if [[ -d "$SHARED/posttrain" ]]; then
  step pair_recall "$PY" benchmarks/pair_recall.py
  step media_recall "$PY" benchmarks/media_recall.py
else
  echo "=== pair_recall, media_recall: skipped ($SHARED/posttrain missing)"
fi
step tool_recall "$PY" benchmarks/tool_recall.py --strict

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "run_all: FAILED: ${failed[*]} (outputs in $RESULTS/)"
  exit 1
fi
echo "run_all: ok (outputs in $RESULTS/)"
