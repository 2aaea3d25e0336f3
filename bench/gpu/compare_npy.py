"""Compares two float32 .npy files of one shape: prints the largest difference and fails (exit 1)
when it exceeds 1e-4 of the first file's largest magnitude. Standard library only.

Usage: python3 compare_npy.py WANT.npy GOT.npy LABEL
"""

import array
import ast
import struct
import sys


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        sys.exit("%s: not a .npy file" % path)
    major = data[6]
    if major == 1:
        (length,) = struct.unpack("<H", data[8:10])
        start = 10
    else:
        (length,) = struct.unpack("<I", data[8:12])
        start = 12
    header = ast.literal_eval(data[start:start + length].decode("latin1"))
    if header["descr"] != "<f4" or header["fortran_order"]:
        sys.exit("%s: %s, expected little-endian float32 in C order" % (path, header["descr"]))
    values = array.array("f")
    values.frombytes(data[start + length:])
    return tuple(header["shape"]), values


def main():
    want_path, got_path, label = sys.argv[1:4]
    want_shape, want = load(want_path)
    got_shape, got = load(got_path)
    if want_shape != got_shape:
        sys.exit("%s: shape %s, expected %s" % (label, got_shape, want_shape))
    err = max((abs(a - b) for a, b in zip(want, got)), default=0.0)
    scale = max((abs(a) for a in want), default=0.0)
    print("%s: max |GPU - CPU| = %.3g, max |CPU| = %.3g" % (label, err, scale))
    if not err <= 1e-4 * max(scale, 1e-30):  # NaN fails too
        sys.exit("%s: the GPU's outputs differ from the CPU's" % label)


if __name__ == "__main__":
    main()
