#!/usr/bin/env bash
# Installs the Debian packages Anvil needs. Idempotent and quiet when everything
# is already there: it only calls apt-get for packages that are missing.
set -euo pipefail

packages=(
  cmake ninja-build g++ make
  clang-14 libclang-rt-14-dev clang-format-14
  libgtest-dev libgmock-dev libbenchmark-dev
  llvm-15-dev libdlpack-dev libomp-14-dev
  libopenblas-dev   # the GEMM benchmark's baseline
  libdnnl-dev ocl-icd-opencl-dev  # bench_ops' baseline (its CMake config requires OpenCL)
  opencl-c-headers pocl-opencl-icd  # the runtime's OpenCL types; PoCL, the CPU device its tests use
  libonnx-dev libprotobuf-dev protobuf-compiler  # the ONNX importer
  libonnx-testdata  # its conformance test (the ONNX backend node tests)
  nlohmann-json3-dev  # the artifact's graph JSON (compiler and runtime)
  libcli11-dev  # the anvil command line
  libxgboost-dev xgboost  # the cost model (its CMake package needs /usr/bin/xgboost)
  python3 xz-utils  # the GPU run script's test (bench/gpu: its Python helpers, the bundle)
  python3-dev pybind11-dev  # the Python package's native module (python/)
  python3-numpy python3-pytest python3-onnx python3-torch  # and its tests
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
