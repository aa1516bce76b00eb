#!/usr/bin/env python3
"""Writes the golden tensor files that cases/tensor_file_test.cc reads, with the real libraries
users save their tensors with (numpy, ml_dtypes, safetensors from PyPI), and manifest.json: for
every file the dtype, shape and little-endian C-order bytes (hex) that the C++ reader must
produce, and how the file was made.

    .venv/bin/python cases/testdata/tensors/make_golden.py [OUT_DIR]   # default: this folder

Everything is deterministic (fixed bit patterns from a small LCG, no timestamps), so running it
again with the same library versions gives the same bytes; the live test
(tensor_file_live_check.py) runs it into a temporary folder and compares, so a numpy or
ml_dtypes release that writes something different is caught.

How each file is made is in its manifest entry ("made_by"):
  np.save                 numpy's own writer (format 1.0 unless the header needs more).
  write_array (M, 0)      np.lib.format.write_array(f, a, version=(M, 0)).
  np.save + descr patch   np.save's bytes with the descr string replaced by hand, for descrs
                          numpy accepts but never writes ('=f4', '|i2', '|V2', 'bfloat16').
  save_file               safetensors.numpy.save_file.
  by hand                 bytes assembled here (and checked to load with safetensors).
Note: numpy 2.x np.save of an ml_dtypes float8_e5m2 array writes descr '<f1', which np.load
rejects ("descr is not a valid dtype descriptor"); np.save still writes it, and that is how the
float8_e5m2 file here is made (checked below by parsing the header, not with np.load).
"""

import io
import json
import os
import struct
import sys

import ml_dtypes
import numpy as np
import safetensors
import safetensors.numpy

OUT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
os.makedirs(OUT, exist_ok=True)
entries = []


def lcg_bytes(n, seed):
    """n pseudo-random bytes, the same on every numpy version."""
    out = bytearray()
    x = seed & 0xFFFFFFFF
    for _ in range(n):
        x = (1103515245 * x + 12345) & 0x7FFFFFFF
        out.append((x >> 16) & 0xFF)
    return bytes(out)


def pattern(dtype, shape, seed):
    """An array of `dtype` (little-endian) whose bits are fixed: for 1-byte dtypes of 256
    elements, every bit pattern; otherwise zero, -0 (sign bit only), all ones, then LCG bytes."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    size = dtype.itemsize
    if size == 1 and n == 256:
        raw = bytes(range(256))
    else:
        special = [bytes(size), bytes(size - 1) + b"\x80", b"\xff" * size]
        raw = b"".join(special)[: n * size] + lcg_bytes(max(0, n * size - 3 * size), seed)
        raw = raw[: n * size]
    return np.frombuffer(raw, dtype=np.uint8).view(dtype).reshape(shape).copy()


def c_bytes_le(a):
    """The bytes the C++ reader must produce: little-endian, C order."""
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">":
        a = a.byteswap().view(a.dtype.newbyteorder("<"))
    return a.tobytes()


def add(name, data_bytes, dtype, shape, made_by, read_dtype="", tensor="", canonical=False,
        metadata=None, note=""):
    entries.append({
        "file": name,
        "tensor": tensor,
        "read_dtype": read_dtype,
        "dtype": dtype,
        "shape": list(shape),
        "hex": data_bytes.hex(),
        "made_by": made_by,
        # Our writer must reproduce the file byte for byte (np.save / save_file of a
        # little-endian C-order array).
        "canonical": canonical,
        "metadata": metadata or [],
        "note": note,
    })


def write(name, blob):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(blob)


def npy_bytes(a, version=None, fortran=False):
    if fortran:
        a = np.asfortranarray(a)
    b = io.BytesIO()
    if version is None:
        np.save(b, a)
    else:
        np.lib.format.write_array(b, a, version=version)
    return b.getvalue()


def patch_descr(blob, old, new):
    """Replaces the descr in a version 1.0 header, keeping the header length (padding absorbs
    a length change) and numpy's 64-byte alignment."""
    hlen = struct.unpack("<H", blob[8:10])[0]
    header = blob[10:10 + hlen].decode("latin1")
    key = "'descr': '%s'" % old
    assert key in header, header
    header = header.replace(key, "'descr': '%s'" % new)
    body = header.rstrip("\n").rstrip(" ")
    header = body + " " * (hlen - 1 - len(body)) + "\n"
    assert len(header) == hlen
    return blob[:10] + header.encode("latin1") + blob[10 + hlen:]


# ---- .npy: the numpy dtypes, every byte order. ----
NUMPY_CODES = {"f8": "float64", "f4": "float32", "f2": "float16", "i1": "int8", "u1": "uint8",
               "i2": "int16", "u2": "uint16", "i4": "int32", "u4": "uint32", "i8": "int64"}
for seed, (code, ours) in enumerate(NUMPY_CODES.items(), start=1):
    size = int(code[1])
    shape = (16, 16) if size == 1 else (2, 3)
    a = pattern("<" + code, shape, seed)
    blob = npy_bytes(a)
    name = "npy_%s_le.npy" % code
    write(name, blob)
    add(name, c_bytes_le(a), ours, shape, "np.save", canonical=True,
        metadata=[["descr", ("|" if size == 1 else "<") + code]])
    # '=' (native): numpy accepts it, never writes it.
    first = ("|" if size == 1 else "<") + code
    name = "npy_%s_eq.npy" % code
    write(name, patch_descr(blob, first, "=" + code))
    add(name, c_bytes_le(a), ours, shape, "np.save + descr patch", metadata=[["descr", "=" + code]])
    if size > 1:
        be = a.byteswap().view(a.dtype.newbyteorder(">"))
        name = "npy_%s_be.npy" % code
        bblob = npy_bytes(be)
        assert (">" + code).encode() in bblob
        write(name, bblob)
        add(name, c_bytes_le(a), ours, shape, "np.save", metadata=[["descr", ">" + code]])
        name = "npy_%s_pipe.npy" % code
        write(name, patch_descr(blob, "<" + code, "|" + code))
        add(name, c_bytes_le(a), ours, shape, "np.save + descr patch",
            metadata=[["descr", "|" + code]])

# ---- .npy: format versions, Fortran order, ranks. ----
a = pattern("<f4", (2, 3), 101)
for v in [(1, 0), (2, 0), (3, 0)]:
    name = "npy_f4_v%d.npy" % v[0]
    blob = npy_bytes(a, version=v)
    assert blob[6:8] == bytes(v)
    write(name, blob)
    add(name, c_bytes_le(a), "float32", a.shape, "write_array %s" % (v,), canonical=v == (1, 0),
        metadata=[["format", "npy %d.0" % v[0]]])
a = pattern("<f4", (2, 3, 4), 102)
for v in [(1, 0), (2, 0), (3, 0)]:
    name = "npy_f4_fortran_v%d.npy" % v[0]
    blob = npy_bytes(a, version=v, fortran=True)
    assert b"'fortran_order': True" in blob
    write(name, blob)
    add(name, c_bytes_le(a), "float32", a.shape, "write_array %s, Fortran order" % (v,),
        metadata=[["fortran_order", "True"]])
a = pattern("<i2", (3, 5), 103)
be = np.asfortranarray(a.byteswap().view(a.dtype.newbyteorder(">")))
write("npy_i2_be_fortran.npy", npy_bytes(be))
add("npy_i2_be_fortran.npy", c_bytes_le(a), "int16", a.shape, "np.save, Fortran order",
    metadata=[["descr", ">i2"], ["fortran_order", "True"]])
a = pattern("<f8", (1, 2, 1, 3, 2), 104)
write("npy_f8_rank5_fortran.npy", npy_bytes(a, fortran=True))
add("npy_f8_rank5_fortran.npy", c_bytes_le(a), "float64", a.shape, "np.save, Fortran order")
write("npy_f8_rank5.npy", npy_bytes(a))
add("npy_f8_rank5.npy", c_bytes_le(a), "float64", a.shape, "np.save", canonical=True)
a = np.array(1.5, dtype="<f4")
write("npy_f4_0d.npy", npy_bytes(a))
add("npy_f4_0d.npy", c_bytes_le(a), "float32", (), "np.save", canonical=True)
a = np.zeros((0, 3), dtype="<f4")
write("npy_f4_empty.npy", npy_bytes(a))
add("npy_f4_empty.npy", b"", "float32", (0, 3), "np.save", canonical=True)
a = np.zeros((2, 0), dtype="<i4")
write("npy_i4_empty_fortran.npy", npy_bytes(a, fortran=True))
add("npy_i4_empty_fortran.npy", b"", "int32", (2, 0), "np.save, Fortran order")
a = pattern("<f2", (7,), 105)
write("npy_f2_rank1.npy", npy_bytes(a))
add("npy_f2_rank1.npy", c_bytes_le(a), "float16", (7,), "np.save", canonical=True)

# ---- .npy: ml_dtypes arrays (the descr does not name the format: the reader needs --dtype). ----
ML = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
      "float8_e4m3", "float8_e8m0fnu"]
for seed, ml in enumerate(ML, start=200):
    t = np.dtype(getattr(ml_dtypes, ml))
    shape = (16, 16) if t.itemsize == 1 else (4, 6)
    raw = pattern("<u%d" % t.itemsize, shape, seed)
    a = raw.view(t)
    blob = npy_bytes(a)
    expected_descr = {"bfloat16": "<V2", "float8_e5m2": "<f1"}.get(ml, "<V1")
    assert ("'descr': '%s'" % expected_descr).encode() in blob, (ml, blob[:80])
    name = "npy_ml_%s.npy" % ml
    write(name, blob)
    add(name, c_bytes_le(raw), ml, shape, "np.save", read_dtype=ml, canonical=True,
        metadata=[["descr", expected_descr]], note="read as %s" % ml)
a = pattern("<u2", (4, 6), 300)
bf = a.view(ml_dtypes.bfloat16)
blob = npy_bytes(bf)
write("npy_ml_bfloat16_pipeV2.npy", patch_descr(blob, "<V2", "|V2"))
add("npy_ml_bfloat16_pipeV2.npy", c_bytes_le(a), "bfloat16", (4, 6), "np.save + descr patch",
    read_dtype="bfloat16", metadata=[["descr", "|V2"]])
write("npy_ml_bfloat16_descr.npy", patch_descr(blob, "<V2", "bfloat16"))
add("npy_ml_bfloat16_descr.npy", c_bytes_le(a), "bfloat16", (4, 6), "np.save + descr patch",
    metadata=[["descr", "bfloat16"]])
write("npy_ml_bfloat16_fortran_v3.npy", npy_bytes(bf, version=(3, 0), fortran=True))
add("npy_ml_bfloat16_fortran_v3.npy", c_bytes_le(a), "bfloat16", (4, 6),
    "write_array (3, 0), Fortran order", read_dtype="bfloat16")
write("npy_bf16_as_u2.npy", npy_bytes(a))
add("npy_bf16_as_u2.npy", c_bytes_le(a), "bfloat16", (4, 6), "np.save of a uint16 view",
    read_dtype="bfloat16", note="their bits are read as bfloat16")
a = pattern("<u1", (16, 16), 301)
blob = npy_bytes(a.view(ml_dtypes.float8_e4m3fn))
write("npy_ml_float8_e4m3fn_pipeV1.npy", patch_descr(blob, "<V1", "|V1"))
add("npy_ml_float8_e4m3fn_pipeV1.npy", c_bytes_le(a), "float8_e4m3fn", (16, 16),
    "np.save + descr patch", read_dtype="float8_e4m3fn", metadata=[["descr", "|V1"]])
write("npy_u1_as_e4m3.npy", npy_bytes(a))
add("npy_u1_as_e4m3.npy", c_bytes_le(a), "float8_e4m3", (16, 16), "np.save of a uint8 view",
    read_dtype="float8_e4m3", note="their bits are read as float8_e4m3")

# ---- .safetensors: every supported dtype, written by the reference library. ----
ST = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": ml_dtypes.bfloat16,
      "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2,
      "F8_E8M0": ml_dtypes.float8_e8m0fnu, "I8": "|i1", "U8": "|u1", "I16": "<i2",
      "I32": "<i4", "I64": "<i8"}
OURS = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
        "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "F8_E8M0": "float8_e8m0fnu",
        "I8": "int8", "U8": "uint8", "I16": "int16", "I32": "int32", "I64": "int64"}
for seed, (st, t) in enumerate(ST.items(), start=400):
    t = np.dtype(t)
    shape = (16, 16) if t.itemsize == 1 else (2, 3)
    raw = pattern("<u%d" % t.itemsize, shape, seed)
    name = "st_%s.safetensors" % st
    path = os.path.join(OUT, name)
    safetensors.numpy.save_file({"x": raw.view(t)}, path, metadata={"format": "np"})
    with open(path, "rb") as f:
        assert ('"dtype":"%s"' % st).encode() in f.read()
    add(name, c_bytes_le(raw), OURS[st], shape, "save_file", canonical=True,
        metadata=[["dtype", st], ["metadata.format", "np"]])

# Several tensors (a name is needed), 0-d and 0-size ones among them.
w = pattern("<f4", (2, 3), 500)
b = pattern("<u2", (3,), 501)
s = pattern("<f8", (), 502)
e = np.zeros((0, 4), dtype="|i1")
path = os.path.join(OUT, "st_multi.safetensors")
safetensors.numpy.save_file({"w": w, "b": b.view(ml_dtypes.bfloat16), "s": s, "e": e}, path,
                            metadata={"producer": "make_golden.py"})
for tname, arr, dt in [("w", w, "float32"), ("b", b, "bfloat16"), ("s", s, "float64"),
                       ("e", e, "int8")]:
    add("st_multi.safetensors", c_bytes_le(arr), dt, arr.shape, "save_file", tensor=tname,
        metadata=[["tensor", tname], ["metadata.producer", "make_golden.py"]])

# Misaligned data (a 3-byte tensor, then float32 at data offset 3), several metadata keys in a
# known order, tensors listed out of offset order, no padding: assembled by hand, checked with
# the reference reader.
u = pattern("|u1", (3,), 600)
f = pattern("<f4", (2,), 601)
header = ('{"b":{"dtype":"F32","shape":[2],"data_offsets":[3,11]},'
          '"__metadata__":{"zeta":"1","alpha":"2","mid":"x y"},'
          '"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}}').encode()
blob = struct.pack("<Q", len(header)) + header + u.tobytes() + f.tobytes()
write("st_misaligned.safetensors", blob)
loaded = safetensors.numpy.load(blob)
assert loaded["a"].tobytes() == u.tobytes() and loaded["b"].tobytes() == f.tobytes()
md = [["metadata.zeta", "1"], ["metadata.alpha", "2"], ["metadata.mid", "x y"]]
add("st_misaligned.safetensors", c_bytes_le(u), "uint8", (3,), "by hand", tensor="a", metadata=md)
add("st_misaligned.safetensors", c_bytes_le(f), "float32", (2,), "by hand", tensor="b", metadata=md)

# A raw dump (harnesses write these): read with --dtype bfloat16 --shape 4,6.
a = pattern("<u2", (4, 6), 700)
write("raw_bf16_4x6.bin", a.tobytes())
entries.append({"file": "raw_bf16_4x6.bin", "tensor": "", "read_dtype": "bfloat16",
                "read_shape": [4, 6], "dtype": "bfloat16", "shape": [4, 6],
                "hex": a.tobytes().hex(), "made_by": "ndarray.tobytes", "canonical": False,
                "metadata": [["format", "raw"]], "note": ""})

manifest = {
    "generator": "cases/testdata/tensors/make_golden.py",
    "versions": {"numpy": np.__version__, "ml_dtypes": ml_dtypes.__version__,
                 "safetensors": safetensors.__version__},
    "entries": entries,
}
with open(os.path.join(OUT, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1, sort_keys=True)
    f.write("\n")
print("make_golden.py: %d entries in %s" % (len(entries), OUT))
