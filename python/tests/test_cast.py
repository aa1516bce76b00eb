"""fpconform.cast, formats, ulp, ulp_distance: against ml_dtypes on every 16-bit and 8-bit value
and 10^6 random float32 (ml_dtypes' one mode, astype = round to nearest even, no saturation), and
against `fpconform calc` (cvt) in every mode fpconform has, bit for bit."""

import ml_dtypes
import numpy as np
import pytest

import fpconform
from conftest import random_seed

# ml_dtypes' astype warns on overflow and NaN; those values are what is being compared.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

FLOAT_TARGETS = ["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                 "float8_e5m2fnuz", "float8_e4m3", "float8_e8m0fnu"]
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def np_dtype(name):
    return np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) else np.dtype(name)


def all_values(name):
    dt = np_dtype(name)
    return np.arange(2 ** (8 * dt.itemsize), dtype=np.uint64).astype(UINT[dt.itemsize]).view(dt)


def assert_same_bits(got, want, what):
    """Bits equal, NaNs equal by class (DESIGN.md: NaNs compare by class)."""
    assert got.dtype == want.dtype, what
    gb, wb = got.view(UINT[got.itemsize]), want.view(UINT[want.itemsize])
    nan = np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32))
    bad = np.flatnonzero((gb != wb) & ~nan)
    assert bad.size == 0, (f"{what}: {bad.size} differ; first at {bad[0]}: got {hex(int(gb.flat[bad[0]]))}, "
                           f"ml_dtypes {hex(int(wb.flat[bad[0]]))}")


def random_float32(n, seed):
    """n float32: uniform bit patterns (every binade, NaN, Inf), plus values around each FP8's range."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, size=n // 2, dtype=np.uint64).astype(np.uint32).view(np.float32)
    vals = (rng.standard_normal(n - n // 2) * np.exp2(rng.integers(-30, 20, n - n // 2))).astype(np.float32)
    return np.concatenate([bits, vals])


@pytest.mark.parametrize("source", ["bfloat16", "float16"] + FLOAT_TARGETS[3:])
def test_every_value_against_ml_dtypes(source):
    x = all_values(source)
    for to in FLOAT_TARGETS:
        want = x.astype(np.float32).astype(np_dtype(to)) if source not in ("float32",) else x.astype(np_dtype(to))
        assert_same_bits(fpconform.cast(x, to), want, f"{source} -> {to}")


def test_random_float32_against_ml_dtypes():
    seed = random_seed(1)
    x = random_float32(10**6, seed)
    for to in FLOAT_TARGETS[1:]:
        assert_same_bits(fpconform.cast(x, to), x.astype(np_dtype(to)), f"float32 -> {to}")
    # float64 -> float32 too (one rounding on both sides).
    y = np.random.default_rng(seed + 1).standard_normal(10**5) * \
        np.exp2(np.random.default_rng(seed + 2).integers(-160, 140, 10**5))
    assert_same_bits(fpconform.cast(y, "float32"), y.astype(np.float32), "float64 -> float32")


MODES = ["rne", "rna", "rtz", "rup", "rdn", "rto"]


@pytest.mark.parametrize("to", ["bfloat16", "float16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                                "float8_e4m3", "float8_e8m0fnu", "int8", "int32"])
def test_every_mode_against_calc(fpc, to):
    x = random_float32(3000, random_seed(7))
    x[:6] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-42]
    xb = x.view(np.uint32)
    for mode in MODES:
        for sat, ftz in [(False, False), (True, False), (False, True)]:
            if to.startswith("int") and ftz:
                continue
            opts = (":sat" if sat else "") + (":ftz" if ftz else "")
            want = fpc.calc([f"cvt float32 {to}{opts} {mode} {hex(int(b))}" for b in xb])
            got = fpconform.cast(x, to, mode, sat=sat, ftz=ftz)
            gb = np.asarray(got).view(UINT[np.asarray(got).itemsize]).astype(np.uint64)
            if to.startswith("int"):
                gb = gb & ((1 << (8 * np.asarray(got).itemsize)) - 1)
            assert gb.tolist() == want, f"float32 -> {to} {mode} sat={sat} ftz={ftz}"


@pytest.mark.parametrize("to", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_stochastic_rounding_against_calc(fpc, to):
    seed = random_seed(9)
    x = random_float32(2000, seed)
    r = np.random.default_rng(seed + 1).integers(0, 256, x.size, dtype=np.uint64)
    want = fpc.calc([f"cvt float32 {to} sr8 {hex(int(b))} {hex(int(k))}" for b, k in zip(x.view(np.uint32), r)])
    got = fpconform.cast(x, to, "sr8", random_bits=r)
    assert got.view(UINT[got.itemsize]).astype(np.uint64).tolist() == want


def test_cast_returns_ml_dtypes_and_keeps_shape():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for to in FLOAT_TARGETS:
        y = fpconform.cast(x, to)
        assert y.dtype == np_dtype(to) and y.shape == x.shape
    assert fpconform.cast(x, "tfloat32").dtype == np.float32
    assert fpconform.cast(x, ml_dtypes.bfloat16).dtype == np_dtype("bfloat16")
    # Non-contiguous input is copied, not misread.
    assert_same_bits(fpconform.cast(x[:, ::2, 1], "bfloat16"), x[:, ::2, 1].astype(ml_dtypes.bfloat16), "strided")
    assert fpconform.cast(np.float32(3.0), "float16").shape == ()


def test_round_trip_every_dtype():
    """Every format through numpy/ml_dtypes: cast to itself is the identity on every bit pattern
    (NaNs by class), and the result dtype is the one numpy/ml_dtypes has."""
    for name in ["bfloat16", "float16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                 "float8_e4m3", "float8_e8m0fnu", "int8", "uint8"]:
        x = all_values(name)
        y = fpconform.cast(x, name)
        assert y.dtype == x.dtype
        if x.dtype.kind in "iu":
            assert (y == x).all()
        else:
            assert_same_bits(y, x, name)
        # And through float32 and back: every non-NaN value is exact in float32.
        z = fpconform.cast(fpconform.cast(x, "float32"), name) if name not in ("int8", "uint8") else y
        assert_same_bits(z, x, f"{name} -> float32 -> {name}") if x.dtype.kind not in "iu" else None
    x = random_float32(10000, random_seed(4))
    assert_same_bits(fpconform.cast(fpconform.cast(x, "float64"), "float32"), x, "float32 -> float64 -> float32")


def test_formats_against_cli(fpc):
    text = fpc.run("formats").stdout
    lines = text.split("\n\n")[0].splitlines()[1:]  # The table, up to the limits section.
    names = [ln.split()[0] for ln in lines]
    table = fpconform.formats()
    assert [f["name"] for f in table] == names
    by = {f["name"]: f for f in table}
    for ln in lines:
        cols = ln.split()
        f = by[cols[0]]
        assert f["width"] == int(cols[2]) and (f["kind"] == "float") == cols[1].endswith("float")
        if f["kind"] == "float":
            assert (f["exponent_bits"], f["fraction_bits"], f["bias"], f["precision"], f["emin"], f["emax"]) == \
                tuple(int(c) for c in cols[3:9])
            assert f["has_inf"] == (cols[9] == "yes")


def test_ulp_and_distance_against_definitions():
    x = np.float32([1.0, 1.5, 2.0, 0.0, 1e-45, -3.0, np.inf, np.nan])
    u = fpconform.ulp(x)
    # At an exact power of two the lower binade's ulp (DESIGN.md): ulp(1) = 2^-24, ulp(2) = 2^-23.
    assert u[:6].tolist() == [2.0**-24, 2.0**-23, 2.0**-23, 2.0**-149, 2.0**-149, 2.0**-22]
    assert np.isnan(u[6:]).all()
    # The ulp of float64 values in bfloat16 (p = 8); the lower binade at a power of two.
    assert fpconform.ulp(np.float64([1.0, 3.0, 2.0**-140]), "bfloat16").tolist() == [2.0**-8, 2.0**-6, 2.0**-133]
    a = np.float32([1.0, -0.0, 1.0, -1e-45, 3.4028235e38])
    b = np.float32([np.nextafter(np.float32(1), np.float32(2)), 0.0, 0.5, 1e-45, np.inf])
    assert fpconform.ulp_distance(a, b).tolist() == [1, 0, -(2**23), 2, 1]
    fp8 = all_values("float8_e4m3fn")
    finite = fp8[~np.isnan(fp8.astype(np.float32))]
    d = fpconform.ulp_distance(np.zeros_like(finite), finite)
    order = np.argsort(finite.astype(np.float32), kind="stable")
    assert sorted(set(d.tolist())) == list(range(-126, 127))  # 253 values, -0 == +0
    assert (np.diff(d[order]) >= 0).all()
    with pytest.raises(ValueError, match="NaN"):
        fpconform.ulp_distance(np.float32([np.nan]), np.float32([1.0]))
    with pytest.raises(ValueError, match="one format"):
        fpconform.ulp_distance(np.float32([1.0]), np.float16([1.0]))
