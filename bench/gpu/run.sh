#!/usr/bin/env bash
# The GPU run (README.md here), on the machine with the GPU: unpacks the bundle prepare.sh made,
# then per workload runs `anvil bench --profile` (Anvil's CUDA build against PyTorch eager and
# PyTorch replaying a CUDA graph, same weights and inputs, outputs compared before timing) and
# merges the per-workload summaries into $OUT/summary.json. $OUT gets five files: summary.json,
# summary.txt, machine.txt, run.log and workloads.tar.gz.
#
# Settings (environment): OUT (default ./gpu-out), BUNDLE (build/gpu-bundle.tar.xz), TARGET
# ("cuda -arch=sm_90"), MODELS (the five workloads), BASELINES (empty: anvil's default for the
# target, torch_eager_cuda and torch_cuda_graph on a GPU), RUNS (50), PER_MODEL_S (a workload's
# time limit, 100), PYTHON (the python3 with torch, default the first on PATH).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-$PWD/gpu-out}
bundle=${BUNDLE:-$root/build/gpu-bundle.tar.xz}
target=${TARGET:-cuda -arch=sm_90}
models=${MODELS:-resnet18 mobilenet_v1 lstm_lm dqn dcgan}
baselines=${BASELINES:-}
runs=${RUNS:-50}
per_model_s=${PER_MODEL_S:-100}
python=${PYTHON:-$(command -v python3 || true)}
mkdir -p "$out"

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
                "available", torch.cuda.is_available())' || true
  "$anvil" --help | head -1
} > "$out/machine.txt" 2>&1
log "bundle unpacked; target '$target'; models: $models"

# Per workload NAME.txt (anvil's output) and NAME.json go into workloads.tar.gz: the device run
# brings back only a few files from $OUT.
each=$work/workloads
mkdir -p "$each"
jsons=()
failed=0
for m in $models; do
  name=$(basename "$m" .onnx)
  # In one process (--processes 0): the per-model time limit was sized for one load per side.
  args=(bench "$m" --target "$target" --runs "$runs" --block 10 --warmup 10 --pause-ms 0
    --processes 0 --strict --profile --summary-json "$each/$name.json")
  [ -n "$baselines" ] && args+=(--baselines "$baselines")
  timeout -k 5 "$per_model_s" "$anvil" "${args[@]}" > "$each/$name.txt" 2>&1
  code=$?
  case $code in
    0) log "$name: done" ;;
    124 | 137) log "$name: over its ${per_model_s} s" ;;
    *) log "$name: exit $code: $(tail -n 1 "$each/$name.txt")" ;;
  esac
  [ "$code" = 0 ] || failed=$((failed + 1))
  [ -f "$each/$name.json" ] && jsons+=("$each/$name.json")
done
tar -C "$each" -czf "$out/workloads.tar.gz" .
[ ${#jsons[@]} -gt 0 ] || fail "no workload finished (each one's output: workloads.tar.gz)"
"$python" "$here/merge_summary.py" "$out/summary.json" "${jsons[@]}" | tee "$out/summary.txt"
[ "$failed" = 0 ] || fail "$failed workload(s) failed (each one's output: workloads.tar.gz)"
