#!/usr/bin/python3
"""np.sum of float32 arrays, for numpy_sum_test (run with Debian's /usr/bin/python3).

Usage: numpy_sum.py IN OUT
IN:  little-endian uint32 count, then per array: uint32 n, n float32 values.
OUT: little-endian uint32 bit pattern of np.sum(array) (a float32) per array.
"""
import struct
import sys

import numpy as np


def main():
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    (count,) = struct.unpack_from("<I", data, 0)
    pos = 4
    out = []
    for _ in range(count):
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4
        x = np.frombuffer(data, dtype="<f4", count=n, offset=pos)
        pos += 4 * n
        s = np.sum(x)
        assert s.dtype == np.float32
        out.append(int(np.array(s, dtype="<f4").view("<u4")))
    with open(sys.argv[2], "wb") as f:
        f.write(struct.pack("<%dI" % len(out), *out))


if __name__ == "__main__":
    main()
