#!/usr/bin/env bash
# ResNet-18 and MobileNet v1 quantized by `anvil quantize`, timed against their float models and
# against ONNX Runtime running the same QDQ files, then checked against ONNX's definition of the
# QDQ graph on random inputs (qdq_agreement.py) and against the float model (cosine of the logits).
#
#     bench/models/int8_zoo.sh [OUT_DIR=build/int8] [INPUTS=50]     (SKIP_BENCH=1: agreement only)
#
# Run from the repository root after `make build` and scripts/setup_bench.sh (ONNX Runtime in
# build/bench-deps). The bench compares outputs with --tolerance 0.05: a quantized model's
# outputs may differ from ONNX Runtime's by a few steps of the output scale (qdq_agreement.py
# counts them); the float models agree far closer.
set -euo pipefail
OUT=${1:-build/int8}
INPUTS=${2:-50}
ANVIL=${ANVIL:-build/bin/anvil}
PY=/usr/bin/python3
mkdir -p "$OUT"

for m in resnet18 mobilenet_v1; do
  [ -f "$OUT/$m.onnx" ] || "$ANVIL" zoo export "$m" -o "$OUT/$m.onnx"
  [ -f "$OUT/$m.int8.onnx" ] ||
    "$ANVIL" quantize "$OUT/$m.onnx" -o "$OUT/$m.int8.onnx" --calibration random --samples 8
done

[ -n "${SKIP_BENCH:-}" ] || "$ANVIL" bench "$OUT/resnet18.int8.onnx" "$OUT/resnet18.onnx" \
  "$OUT/mobilenet_v1.int8.onnx" "$OUT/mobilenet_v1.onnx" \
  --baselines onnxruntime --threads 1,2 --processes 3 --tolerance 0.05 \
  --summary-json "$OUT/summary.json"

# Agreement: the same random inputs through Anvil (int8 and float) and ONNX Runtime (int8).
$PY -c "
import numpy as np, os
rng = np.random.default_rng(7)
os.makedirs('$OUT/inputs', exist_ok=True)
for k in range($INPUTS):
    np.save('$OUT/inputs/x%02d.npy' % k, rng.standard_normal((1, 3, 224, 224)).astype(np.float32))
"
for m in resnet18 mobilenet_v1; do
  "$ANVIL" compile "$OUT/$m.int8.onnx" -o "$OUT/$m.int8.so" >/dev/null
  "$ANVIL" compile "$OUT/$m.onnx" -o "$OUT/$m.so" >/dev/null
  rm -rf "$OUT/$m.anvil" "$OUT/$m.float" "$OUT/$m.ort"
  mkdir -p "$OUT/$m.anvil" "$OUT/$m.float" "$OUT/$m.ort"
  requests=()
  for f in "$OUT"/inputs/x*.npy; do
    k=$(basename "$f" .npy)
    k=${k#x}
    "$ANVIL" run "$OUT/$m.int8.so" --input data="$f" --output-dir "$OUT/$m.anvil/a$k" >/dev/null
    "$ANVIL" run "$OUT/$m.so" --input data="$f" --output-dir "$OUT/$m.float/a$k" >/dev/null
    requests+=("{\"op\":\"load\",\"model\":\"$(realpath "$OUT/$m.int8.onnx")\",\"threads\":1,\"inputs\":{\"data\":\"$(realpath "$f")\"}}")
    requests+=("{\"op\":\"run\",\"outputs_dir\":\"$(realpath -m "$OUT/$m.ort/o$k")\"}")
  done
  printf '%s\n' "${requests[@]}" | node tools/bench/onnxruntime_worker.js build/bench-deps \
    >"$OUT/$m.ort.log"
  if grep -q '"ok":false' "$OUT/$m.ort.log"; then
    grep -m1 '"ok":false' "$OUT/$m.ort.log" >&2
    exit 1
  fi
  echo "$m:"
  $PY bench/models/qdq_agreement.py "$OUT/$m.int8.onnx" "$OUT/inputs" "$OUT/$m.anvil" "$OUT/$m.ort"
  $PY -c "
import glob, numpy as np
c = []
for d in sorted(glob.glob('$OUT/$m.anvil/a*')):
    k = d.rsplit('/a', 1)[1]
    a = np.load(d + '/logits.npy').ravel().astype(np.float64)
    f = np.load('$OUT/$m.float/a%s/logits.npy' % k).ravel().astype(np.float64)
    c.append(a @ f / np.linalg.norm(a) / np.linalg.norm(f))
print('int8 against float logits: cosine min %.5f, median %.5f over %d inputs'
      % (min(c), np.median(c), len(c)))
"
done
