#!/usr/bin/env bash
# Installs what the baselines of `anvil bench` need: Debian packages for PyTorch and the chart,
# and ONNX Runtime from npm into DEPS_DIR. Idempotent and quiet when everything is already there.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 DEPS_DIR" >&2
  exit 2
fi
deps_dir=$1
ort_version=1.30.0

packages=(
  python3-torch python3-onnx python3-numpy  # the torch_eager and torch_jit baselines
  python3-torchvision  # the model suite (make models)
  libopenblas0-pthread  # Debian's default reference BLAS makes PyTorch 2-15x slower
  gnuplot-nox  # the speedup chart
)
# Node may come from elsewhere than Debian; only install Debian's when there is none.
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup_bench: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
      echo "setup_bench: need root (or sudo) to install: ${missing[*]}" >&2
      exit 1
    fi
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The version that a previous run installed, if any.
installed=""
pkg_json="$deps_dir/node_modules/onnxruntime-node/package.json"
if [ -f "$pkg_json" ]; then
  get_version='console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).version)'
  installed=$(node -e "$get_version" "$pkg_json" 2>/dev/null || true)
fi
if [ "$installed" != "$ort_version" ]; then
  echo "setup_bench: installing onnxruntime-node@$ort_version into $deps_dir"
  mkdir -p "$deps_dir"
  # --ignore-scripts: the package's install script tries to download GPU files; the CPU library
  # is already inside the package.
  npm install --prefix "$deps_dir" --ignore-scripts --no-audit --no-fund --silent \
    "onnxruntime-node@$ort_version" >/dev/null
fi
