#!/usr/bin/env bash
# The GPU run (README.md here), on the machine with the GPU: unpacks the bundle prepare.sh made,
# runs a smoke stage, then per workload runs `anvil bench --profile` (Anvil's CUDA build against
# PyTorch eager and PyTorch replaying a CUDA graph, same weights and inputs, outputs compared
# before timing) and merges the summaries into $OUT/summary.json after each workload, so that a
# run cut short still returns what it measured. $OUT gets six files: summary.json, summary.txt,
# machine.txt, smoke.txt, run.log and workloads.tar.gz (and records.tar.gz when tuning).
#
# The smoke stage (SMOKE_S, 60 s): `anvil env` (NVRTC, driver, C compiler, device), DQN compiled
# for the target and for this CPU, run on one input with blocking launches kernel by kernel
# (CUDA_LAUNCH_BLOCKING=1, ANVIL_DEVICE_GRAPHS=0: a fault names its kernel), and run again
# recording and replaying its graph; both compared with the CPU build. A failed smoke stage stops
# the run: nothing after it would work.
#
# Tuning (TUNE_MIN > 0): before its bench, each workload is tuned on the device for TUNE_MIN
# minutes (anvil tune --time-budget; the xgb tuner, 16 candidates compiled at once), and the bench
# then times the tuned build against the baselines and against the untuned build. The records
# (NAME.records.json) come back as records.tar.gz; RECORDS_IN names a directory of earlier ones to
# resume from (a GPU's records apply whatever the host's CPU: --records-any-cpu).
#
# Settings (environment): OUT (default ./gpu-out), BUNDLE (build/gpu-bundle.tar.xz), TARGET
# ("cuda -arch=sm_90"), MODELS (the five workloads, smallest first), BASELINES (empty: anvil's
# default for the target, torch_eager_cuda and torch_cuda_graph on a GPU), RUNS (50), PER_MODEL_S
# (a workload's time limit, 90, tuning not included), SMOKE_S (60), TUNE_MIN (0: no tuning),
# PYTHON (the python3 the baselines run under, default the first on PATH; the script itself
# needs only its standard library).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-$PWD/gpu-out}
bundle=${BUNDLE:-$root/build/gpu-bundle.tar.xz}
target=${TARGET:-cuda -arch=sm_90}
models=${MODELS:-dqn dcgan mobilenet_v1 lstm_lm resnet18}
baselines=${BASELINES:-}
runs=${RUNS:-50}
per_model_s=${PER_MODEL_S:-90}
smoke_s=${SMOKE_S:-60}
tune_min=${TUNE_MIN:-0}
records_in=${RECORDS_IN:-}
python=${PYTHON:-$(command -v python3 || true)}
mkdir -p "$out"
rm -f "$out"/summary.json "$out"/summary.txt "$out"/smoke.txt "$out"/run.log "$out"/records.tar.gz

log() { echo "[$(date -u +%T)] $*" | tee -a "$out/run.log"; }
fail() {
  log "run: $*"
  exit 2
}

[ -f "$bundle" ] || fail "no bundle at $bundle (run bench/gpu/prepare.sh where anvil builds)"
[ -n "$python" ] || fail "no python3 on PATH (set PYTHON)"
work=$(mktemp -d /tmp/anvil-gpu-XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xJf "$bundle" || fail "cannot unpack $bundle"
anvil=$work/gpu-bundle/bin/anvil
export ANVIL_BENCH_PYTHON=$python
{
  nvidia-smi || true
  "$python" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda,
                "cuDNN", torch.backends.cudnn.version(), "available", torch.cuda.is_available())' ||
    true
  echo "C compilers: $(command -v cc gcc clang | tr '\n' ' ')"
  "$anvil" --version
  "$anvil" env
} > "$out/machine.txt" 2>&1
log "bundle unpacked; target '$target'; models: $models"

# ---- the smoke stage
smoke() {
  local d=$work/smoke
  mkdir -p "$d/cpu" "$d/blocking" "$d/replay"
  "$anvil" env || return 1
  "$anvil" compile zoo:dqn --target "$target" -v -o "$d/dqn_gpu.so" || return 1
  "$anvil" compile zoo:dqn -o "$d/dqn_cpu.so" || return 1
  # --fill-mode random draws the same input in every run (a fixed seed).
  "$anvil" run "$d/dqn_cpu.so" --fill-mode random --output-dir "$d/cpu" || return 1
  CUDA_LAUNCH_BLOCKING=1 ANVIL_DEVICE_GRAPHS=0 "$anvil" run "$d/dqn_gpu.so" --fill-mode random \
    --output-dir "$d/blocking" || return 1
  # Five runs: the outputs written are the last one's, a replay of the graph recorded by the second.
  "$anvil" run "$d/dqn_gpu.so" --fill-mode random --output-dir "$d/replay" --repeat 5 || return 1
  "$python" "$here/compare_npy.py" "$d/cpu/q_values.npy" "$d/blocking/q_values.npy" \
    "dqn, blocking launches" || return 1
  "$python" "$here/compare_npy.py" "$d/cpu/q_values.npy" "$d/replay/q_values.npy" \
    "dqn, graph replay" || return 1
}
export -f smoke
export work anvil target python here
if timeout -k 5 "$smoke_s" bash -c smoke > "$out/smoke.txt" 2>&1; then
  log "smoke: done ($(grep -c 'max |GPU - CPU|' "$out/smoke.txt") comparisons passed)"
else
  fail "smoke stage failed or ran out of its ${smoke_s} s: $(tail -n 2 "$out/smoke.txt" | tr '\n' ' ')"
fi

# ---- the workloads, smallest first
# Per workload NAME.txt (anvil's output) and NAME.json go into workloads.tar.gz: the device run
# brings back only a few files from $OUT.
each=$work/workloads
records=$work/records
mkdir -p "$each" "$records"
if [ -n "$records_in" ]; then
  cp "$records_in"/*.records.json "$records/" 2>/dev/null || log "no records in $records_in"
fi
jsons=()
failed=0
for m in $models; do
  name=$(basename "$m" .onnx)
  model_arg=$m
  [ -f "$m" ] || model_arg=zoo:$name
  if [ "$tune_min" != 0 ]; then
    limit=$(awk -v m="$tune_min" 'BEGIN { printf "%d", m * 60 + 90 }')
    timeout -k 5 "$limit" "$anvil" tune "$model_arg" --target "$target" --time-budget "$tune_min" \
      --trials 400 --batch 16 --records-any-cpu --tuning-records "$records/$name.records.json" \
      > "$each/$name.tune.txt" 2>&1
    log "$name: tuned ($(tail -n 1 "$each/$name.tune.txt"))"
    tar -C "$records" -czf "$out/records.tar.gz" .
  fi
  # In one process (--processes 0): the per-model time limit was sized for one load per side.
  args=(bench "$m" --target "$target" --runs "$runs" --block 10 --warmup 10 --pause-ms 0
    --processes 0 --strict --profile --summary-json "$each/$name.json")
  [ -n "$baselines" ] && args+=(--baselines "$baselines")
  [ -s "$records/$name.records.json" ] &&
    args+=(--tuning-records "$records/$name.records.json" --records-any-cpu)
  timeout -k 5 "$per_model_s" "$anvil" "${args[@]}" > "$each/$name.txt" 2>&1
  code=$?
  case $code in
    0) log "$name: done" ;;
    124 | 137) log "$name: over its ${per_model_s} s" ;;
    *) log "$name: exit $code: $(tail -n 1 "$each/$name.txt")" ;;
  esac
  [ "$code" = 0 ] || failed=$((failed + 1))
  [ -f "$each/$name.json" ] && jsons+=("$each/$name.json")
  # What is measured so far, in $OUT at once.
  tar -C "$each" -czf "$out/workloads.tar.gz" .
  if [ ${#jsons[@]} -gt 0 ]; then
    "$python" "$here/merge_summary.py" "$out/summary.json" "${jsons[@]}" > "$out/summary.txt"
  fi
done
[ ${#jsons[@]} -gt 0 ] || fail "no workload finished (each one's output: workloads.tar.gz)"
cat "$out/summary.txt"
[ "$failed" = 0 ] || fail "$failed workload(s) failed (each one's output: workloads.tar.gz)"
