#!/usr/bin/env bash
# bench/gpu/run.sh end to end on OpenCL (PoCL, this CPU as the device), as on a GPU machine: a
# bundle of this build's anvil, the smoke stage (DQN for the device and the CPU, compared), DQN
# benched, the merged summary; then a bundle whose anvil fails stops at the smoke stage with
# exit 2 and says so.
# Usage: gpu_script_test.sh ANVIL SOURCE_DIR
set -euo pipefail
anvil=$1
src=$2
work=$(mktemp -d /tmp/anvil-gpu-script-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

make_bundle() {  # make_bundle DIR ANVIL -> DIR/gpu-bundle.tar.xz
  mkdir -p "$1/gpu-bundle/bin" "$1/gpu-bundle/share/anvil/bench"
  cp "$2" "$1/gpu-bundle/bin/anvil"
  cp "$src/tools/bench/torch_worker.py" "$1/gpu-bundle/share/anvil/bench/"
  tar -C "$1" -cJf "$1/gpu-bundle.tar.xz" gpu-bundle
}

make_bundle "$work/good" "$anvil"
out=$work/out
if ! BUNDLE=$work/good/gpu-bundle.tar.xz TARGET=opencl MODELS=dqn BASELINES=none RUNS=4 \
  PYTHON=python3 OUT=$out bash "$src/bench/gpu/run.sh" > "$work/log" 2>&1; then
  cat "$work/log" "$out"/smoke.txt >&2 || true
  fail "run.sh failed on OpenCL"
fi
for f in summary.json summary.txt machine.txt smoke.txt run.log workloads.tar.gz; do
  [ -s "$out/$f" ] || fail "no $f in OUT"
done
[ "$(grep -c 'max |GPU - CPU|' "$out/smoke.txt")" = 2 ] || fail "the smoke stage compared less"
grep -q 'dqn: done' "$out/run.log" || fail "dqn did not finish: $(cat "$out/run.log")"
python3 - "$out/summary.json" <<'PY' || fail "summary.json lacks dqn's rows"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
names = {(r["name"], r.get("baseline")) for r in rows}
assert ("dqn", None) in names, names  # Anvil alone
assert ("dqn", "anvil_kernel_by_kernel") in names, names
assert all(r["anvil_ms"] > 0 for r in rows), rows
PY

# An anvil that fails: the run stops after the smoke stage, naming it.
printf '#!/bin/sh\necho "anvil: error: broken on purpose" >&2\nexit 1\n' > "$work/broken"
chmod +x "$work/broken"
make_bundle "$work/bad" "$work/broken"
set +e
BUNDLE=$work/bad/gpu-bundle.tar.xz TARGET=opencl MODELS=dqn BASELINES=none PYTHON=python3 \
  OUT=$work/out_bad bash "$src/bench/gpu/run.sh" > "$work/log_bad" 2>&1
code=$?
set -e
[ "$code" = 2 ] || fail "a broken anvil: exit $code, expected 2"
grep -q "smoke stage failed" "$work/out_bad/run.log" ||
  fail "a broken anvil: run.log does not name the smoke stage: $(cat "$work/out_bad/run.log")"
[ ! -e "$work/out_bad/summary.json" ] || fail "a broken anvil left a summary"
echo "PASS"
