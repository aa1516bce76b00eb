#!/usr/bin/env python3
"""Writes the hand-made broken tensor files in broken/ (standard library only). Each one breaks
one rule; cases/tensor_file_test.cc (BrokenFiles) names the message fragment each must produce.

    python3 cases/testdata/tensors/make_broken.py [OUT_DIR]   # default: ./broken beside this
"""

import os
import struct
import sys

OUT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                      os.path.join(os.path.dirname(__file__), "broken"))
os.makedirs(OUT, exist_ok=True)


def write(name, blob):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(blob)


def npy(header, data=b"", version=1, hlen=None):
    """A .npy file with `header` (a str, padded to 64-byte alignment) and `data`."""
    prefix = 10 if version == 1 else 12
    text = header + " " * ((-(prefix + len(header) + 1)) % 64) + "\n"
    n = len(text) if hlen is None else hlen
    length = struct.pack("<H", n) if version == 1 else struct.pack("<I", n)
    return b"\x93NUMPY" + bytes([version, 0]) + length + text.encode("latin1") + data


def st(header, data=b"", n=None):
    h = header.encode("utf-8") if isinstance(header, str) else header
    return struct.pack("<Q", len(h) if n is None else n) + h + data


F4_23 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"

# ---- .npy ----
write("npy_bad_magic.npy", b"\x93NUMPX" + npy(F4_23, bytes(24))[6:])
write("npy_bad_version.npy", b"\x93NUMPY\x04\x00" + npy(F4_23, bytes(24))[8:])
write("npy_truncated_header.npy", npy(F4_23, bytes(24))[:60])
write("npy_header_past_end.npy", npy(F4_23, b"", hlen=4000))
write("npy_unknown_descr.npy",
      npy("{'descr': '<q7', 'fortran_order': False, 'shape': (2, 3), }", bytes(24)))
write("npy_bool.npy", npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }",
                          bytes(6)))
write("npy_uint64.npy", npy("{'descr': '<u8', 'fortran_order': False, 'shape': (2,), }",
                            bytes(16)))
write("npy_2p60.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % 2**60,
                          bytes(16)))
write("npy_overflow.npy",
      npy("{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d, %d), }" % ((2**30,) * 3),
          bytes(16)))
write("npy_data_truncated.npy", npy(F4_23, bytes(20)))
write("npy_extra_key.npy",
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}", bytes(24)))
write("npy_missing_shape.npy", npy("{'descr': '<f4', 'fortran_order': False, }", bytes(4)))
write("npy_negative_shape.npy",
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3), }", bytes(24)))
write("npy_structured.npy",
      npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", bytes(8)))
write("npy_garbage.npy",
      npy("{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3), }", bytes(24)))
write("npy_rank65.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" %
                            ", ".join(["1"] * 65), bytes(4)))
write("npy_shape_int.npy",
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3), }", bytes(12)))
write("npy_dup_key.npy",
      npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
          bytes(12)))
write("npy_empty.npy", b"")

# ---- .safetensors ----
X_F32_2 = '{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
write("st_short.safetensors", b"\x08\x00\x00\x00\x00")
write("st_header_past_end.safetensors", st(X_F32_2, bytes(8), n=200))
write("st_truncated_header.safetensors", st(X_F32_2, bytes(8))[:30])
write("st_header_too_big.safetensors", st("{}", n=100_000_001))
write("st_bad_json.safetensors", st('{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}   ',
                                    bytes(8)))
write("st_overlap.safetensors",
      st('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
         '"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', bytes(12)))
write("st_gap.safetensors",
      st('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
         '"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}}', bytes(20)))
write("st_size_mismatch.safetensors",
      st('{"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,10]}}', bytes(10)))
write("st_not_covered.safetensors", st(X_F32_2, bytes(12)))
write("st_data_truncated.safetensors", st(X_F32_2, bytes(6)))
write("st_2p60.safetensors",
      st('{"x":{"dtype":"F32","shape":[%d],"data_offsets":[0,%d]}}' % (2**60, 2**62), bytes(8)))
write("st_2p60_u8.safetensors",
      st('{"x":{"dtype":"U8","shape":[%d],"data_offsets":[0,%d]}}' % (2**60, 2**60), bytes(8)))
write("st_bool.safetensors", st('{"m":{"dtype":"BOOL","shape":[4],"data_offsets":[0,4]}}',
                                bytes(4)))
write("st_unknown_dtype.safetensors",
      st('{"x":{"dtype":"F7","shape":[4],"data_offsets":[0,4]}}', bytes(4)))
write("st_dup_key.safetensors",
      st('{"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},'
         '"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}', bytes(4)))
write("st_deep.safetensors",
      st('{"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4],"extra":' + "[" * 200 + "]" * 200 +
         "}}", bytes(4)))
write("st_meta_number.safetensors",
      st('{"__metadata__":{"k":1},' + X_F32_2[1:], bytes(8)))
write("st_float_offset.safetensors",
      st('{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8.0]}}', bytes(8)))
write("st_huge_number.safetensors",
      st('{"x":{"dtype":"F32","shape":[99999999999999999999999],"data_offsets":[0,8]}}',
         bytes(8)))
write("st_reversed_offsets.safetensors",
      st('{"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}', bytes(8)))
write("st_not_object.safetensors", st("[1, 2]   "))
write("st_missing_field.safetensors", st('{"x":{"dtype":"F32","shape":[2]}}', bytes(8)))
write("st_nul_padding.safetensors", st(X_F32_2.encode() + b"\x00" * 2, bytes(8)))
write("st_bad_utf8.safetensors",
      st(b'{"x\xff":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', bytes(8)))
print("make_broken.py: wrote", OUT)
