#!/usr/bin/env bash
# The fusion and layout ablation of the graph compiler: each built-in model compiled with fusion
# on/off and layout alteration on/off, the kernel count of each, and the median latency of each
# measured in rounds that alternate between the four builds (so that the machine's noise falls on
# all of them alike).
#
#   scripts/ablation.sh [MODEL...]    (default: the five workloads and mobilenet_v2)
#   THREADS=1 ROUNDS=3 REPEAT=20 scripts/ablation.sh dqn
set -euo pipefail
ANVIL=${ANVIL:-build/bin/anvil}
THREADS=${THREADS:-1}
ROUNDS=${ROUNDS:-3}
REPEAT=${REPEAT:-20}
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(resnet18 mobilenet_v1 mobilenet_v2 lstm_lm dqn dcgan)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
configs=("fuse+layout:" "layout only:--no-fuse" "fuse only:--no-layout" "neither:--no-fuse --no-layout")

printf '| model | configuration | kernels | median ms (%s thread(s)) | vs fuse+layout |\n' "$THREADS"
printf '|---|---|---|---|---|\n'
for m in "${models[@]}"; do
  declare -A kernels=() samples=()
  for i in "${!configs[@]}"; do
    flags=${configs[$i]#*:}
    # shellcheck disable=SC2086
    out=$("$ANVIL" compile "zoo:$m" $flags -o "$work/$m-$i.so")
    kernels[$i]=$(sed -n 's/.*: \([0-9]*\) kernels.*/\1/p' <<<"$out")
  done
  for ((r = 0; r < ROUNDS; r++)); do
    for i in "${!configs[@]}"; do
      ms=$("$ANVIL" run "$work/$m-$i.so" --fill-mode random --output-dir "$work/out" \
             --repeat "$REPEAT" --threads "$THREADS" | sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p')
      samples[$i]="${samples[$i]:-} $ms"
    done
  done
  base=""
  for i in "${!configs[@]}"; do
    # The median of the rounds' medians.
    med=$(tr ' ' '\n' <<<"${samples[$i]}" | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    [ -z "$base" ] && base=$med
    printf '| %s | %s | %s | %s | %.2fx |\n' "$m" "${configs[$i]%%:*}" "${kernels[$i]}" "$med" \
      "$(awk -v a="$med" -v b="$base" 'BEGIN {print a / b}')"
  done
  unset kernels samples
done
