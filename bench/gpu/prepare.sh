#!/usr/bin/env bash
# Prepares the GPU run (README.md here) on this machine: builds anvil (Release) and packs it into
# build/gpu-bundle.tar.xz with every shared library it loads except the C and C++ runtimes, which
# the GPU machine has in newer versions (it has no LLVM, XGBoost, protobuf or ICU of Debian's).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# anvil alone (the tests are not part of the bundle).
make configure
cmake --build build -j "$(nproc)" --target anvil_cli
bundle=build/gpu-bundle
rm -rf "$bundle" "$bundle.tar.xz"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/share/anvil/bench"
cp build/bin/anvil "$bundle/bin/"
# An RPATH (not a RUNPATH: the loader follows it for the libraries' own dependencies, and for the
# artifacts anvil loads) to the bundle's lib/, so that nothing else there, the C compiler that
# anvil runs and PyTorch among them, sees these libraries.
if ! command -v patchelf >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get install -y -qq patchelf >/dev/null
fi
patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$bundle/bin/anvil"
cp tools/bench/torch_worker.py "$bundle/share/anvil/bench/"
# The libraries an executable loads, but the C and C++ runtimes.
bundled_libs() {
  env -i ldd "$1" | awk '$3 ~ /^\// { print $3 }' | while read -r path; do
    case $(basename "$path") in
      libc.so.* | libm.so.* | libdl.so.* | librt.so.* | libpthread.so.* | libstdc++.so.* | \
        libgcc_s.so.* | ld-linux*) ;;
      *) echo "$path" ;;
    esac
  done
}
bundled_libs build/bin/anvil | while read -r path; do cp -L "$path" "$bundle/lib/"; done
# Every library but the C and C++ runtimes must now load from the bundle: what would come from
# this machine instead shows here, before the GPU machine is borrowed.
lib=$(cd "$bundle/lib" && pwd -P)
outside=$(bundled_libs "$bundle/bin/anvil" | while read -r path; do
  [ "$(dirname "$(realpath "$path")")" = "$lib" ] || echo "$path"
done)
if [ -n "$outside" ] || env -i ldd "$bundle/bin/anvil" | grep -q "not found"; then
  echo "prepare: the bundle does not hold: $outside $(env -i ldd "$bundle/bin/anvil" |
    grep "not found")" >&2
  exit 1
fi
tar -C build -cf - gpu-bundle | xz -T2 -6 > "$bundle.tar.xz"
size=$(stat -c %s "$bundle.tar.xz")
echo "prepare: $bundle.tar.xz, $((size / 1048576)) MiB (carry it: run's carry [\"$bundle.tar.xz\"])"
# The device run carries at most 64 MiB, the working tree included.
if [ "$size" -gt $((56 * 1048576)) ]; then
  echo "prepare: the bundle is over 56 MiB; with the working tree it would not fit in 64" >&2
  exit 1
fi
