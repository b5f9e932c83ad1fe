"""GPU: a hostile caller cannot write outside ``out``, reach an illegal address, or poison the
CUDA context, and gets a sentence for every bad input.

Every refused input is followed by a valid call on the same process whose result must be right
(``_still_works``): a sticky CUDA error would make it fail.  Guard regions around ``out`` are
filled with a sentinel and must come back unchanged.  The property test draws shapes, strides,
offsets, transposes, broadcasts and ``out`` layouts (hypothesis) and compares each product with
float64.
"""

from __future__ import annotations

import mmap
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cutematmul
from conftest import require_module
from helpers import TOLERANCE, Maker, check_matmul, layout_operands, relative_error, to_numpy

pytestmark = pytest.mark.gpu

SENTINEL = 12345.0


def _still_works(lib: str = "torch"):
    """A valid product right after a refused one: the process's CUDA context is healthy."""
    mk = Maker(lib, seed=99)
    a, b = mk.randn((37, 19), "float32"), mk.randn((19, 23), "float32")
    check_matmul(cutematmul.matmul(a, b), a, b, "float32")
    a, b = mk.randn((64, 48), "float16"), mk.randn((48, 40), "float16")
    check_matmul(cutematmul.matmul(a, b), a, b, "float16")
    # A small M over a long N (Hopper: swapped tiles as wide as M, C stored through its
    # transpose), and one-pass TF32 of a narrow N (narrow tiles, split along K).
    a, b = mk.randn((24, 256), "float16"), mk.randn((256, 3000), "float16")
    check_matmul(cutematmul.matmul(a, b), a, b, "float16")
    a, b = mk.randn((300, 520), "float32"), mk.randn((16, 520), "float32").T
    check_matmul(cutematmul.matmul(a, b, precision="tf32"), a, b, "tf32")
    if lib == "torch":
        require_module("torch").cuda.synchronize()
    else:
        require_module("cupy").cuda.Device().synchronize()


def _guarded(torch, shape, strides, dtype, pad=64):
    """An ``out`` view with the given element strides inside a buffer full of SENTINEL."""
    reach = sum((n - 1) * s for n, s in zip(shape, strides)) + 1 if all(shape) else 1
    buf = torch.full((pad + reach + pad,), SENTINEL, dtype=getattr(torch, dtype), device="cuda")
    view = torch.as_strided(buf, shape, strides, storage_offset=pad)
    return buf, view


def _guards_intact(torch, buf, view) -> bool:
    mask = torch.ones(buf.numel(), dtype=torch.bool, device=buf.device)
    idx = torch.as_strided(torch.arange(buf.numel(), device=buf.device), view.shape, view.stride(),
                           view.storage_offset())
    mask[idx.reshape(-1)] = False
    return bool((buf[mask] == SENTINEL).all())


# ----------------------------------------------------------------------------- the reported classes


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_1d_operand_with_offset_into_strided_out(dtype):
    torch = require_module("torch")
    mk = Maker("torch", seed=1)
    big = mk.randn((70,), dtype)
    a = big[3:3 + 45]                       # a 1-D operand at an offset
    b = mk.randn((45, 31), dtype)
    buf, out = _guarded(torch, (31,), (3,), dtype)
    res = cutematmul.matmul(a, b, out=out)
    assert res is out
    check_matmul(out, a, b, dtype)
    assert _guards_intact(torch, buf, out)
    v = mk.randn((40,), dtype)[5:36]            # (31,) at an offset, as b this time
    c = mk.randn((45, 31), dtype)
    buf, out = _guarded(torch, (45,), (2,), dtype)
    cutematmul.matmul(c, v, out=out)
    check_matmul(out, c, v, dtype)
    assert _guards_intact(torch, buf, out)


@pytest.mark.parametrize("lib", ["torch", "cupy"])
def test_stride_zero_out_is_refused(lib):
    mk = Maker(lib, seed=2)
    a, b = mk.randn((8, 4), "float32"), mk.randn((4, 6), "float32")
    if lib == "torch":
        out = mk.poisoned((6,), "float32").expand(8, 6)
    else:
        cupy = require_module("cupy")
        out = cupy.lib.stride_tricks.as_strided(mk.poisoned((6,), "float32"), (8, 6), (0, 4))
    with pytest.raises(ValueError, match="out has stride 0 along dimension 0"):
        cutematmul.matmul(a, b, out=out)
    _still_works(lib)


@pytest.mark.parametrize("lib", ["torch", "cupy"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_repeated_signatures_keep_every_check(lib, dtype):
    """The device route's fast path for a repeated call signature (``launch._run_repeat``): new
    operands at other addresses are right, an overlapping ``out`` is still refused, operands 2 or
    4 bytes off a 16-byte boundary fall back to the full path (staging) and stay right, and a
    guarded ``out`` keeps its guards."""
    from cutematmul import launch

    mk = Maker(lib, seed=7)
    n = 192
    for _ in range(3):  # the first call plans, the next ones repeat
        a, b, out = mk.randn((n, n), dtype), mk.randn((n, n), dtype), mk.poisoned((n, n), dtype)
        assert cutematmul.matmul(a, b, out=out) is out
        check_matmul(out, a, b, dtype)
        check_matmul(cutematmul.matmul(a, b), a, b, dtype)
    assert launch._repeats, "the repeats did not take the fast path"
    with pytest.raises(ValueError, match="out overlaps a"):
        cutematmul.matmul(a, b, out=a)
    _still_works(lib)
    flat = mk.randn((n * n + 1,), dtype)
    shifted = flat[1:].reshape(n, n)  # the signature of `a`, an unaligned pointer
    out = mk.poisoned((n, n), dtype)
    cutematmul.matmul(shifted, b, out=out)
    check_matmul(out, shifted, b, dtype)
    if lib == "torch":
        torch = require_module("torch")
        buf, out = _guarded(torch, (n, n), (n, 1), dtype)
        cutematmul.matmul(a, b, out=out)
        check_matmul(out, a, b, dtype)
        assert _guards_intact(torch, buf, out)


@pytest.mark.parametrize("layout", ["nn", "nt"])
def test_swapped_wide_tiles_write_inside_a_guarded_out(layout):
    """A mid product the dispatcher runs on swapped 128-row tiles (``configs.sm90._swapped_wide``:
    C stored through its transpose, an M tail inside the last tile column, N and K tails) into a
    row-strided ``out`` inside a sentinel buffer: the guards come back unchanged, a refused call
    after it leaves the context healthy."""
    torch = require_module("torch")
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    mk = Maker("torch", seed=11)
    m, n, k, dtype = 1100, 2000, 3000, "float16"
    a, b = layout_operands(mk, m, n, k, layout, dtype)
    buf, out = _guarded(torch, (m, n), (n + 24, 1), dtype)
    if not getattr(launch.planned_launch(adapter_for(a), a, b).key.config, "swap", False):
        pytest.skip("this GPU's plan does not run the product swapped")
    assert cutematmul.matmul(a, b, out=out) is out
    check_matmul(out, a, b, dtype)
    assert _guards_intact(torch, buf, out)
    with pytest.raises(ValueError, match="out"):
        cutematmul.matmul(a, b, out=out[:, :-1])
    _still_works()


@pytest.mark.parametrize("case", ["K=2**62 stride 0", "batch 2**40 broadcast", "2**19 outer"])
def test_sizes_beyond_64_bit_or_memory(case):
    torch = require_module("torch")
    one = torch.ones(1, 1, device="cuda")
    if case == "K=2**62 stride 0":
        a, b = one.expand(1, 2**62), one.expand(2**62, 1)
        with pytest.raises(ValueError, match="K = [0-9]+ exceeds"):
            cutematmul.matmul(a, b)
    elif case == "batch 2**40 broadcast":
        a = torch.ones(1, 4, 5, device="cuda").expand(2**40, 4, 5)
        b = torch.ones(5, 6, device="cuda")
        out = torch.empty(1, 4, 6, device="cuda").expand(2**40, 4, 6)
        with pytest.raises(ValueError, match="out has stride 0"):
            cutematmul.matmul(a, b, out=out)
        with pytest.raises((RuntimeError, MemoryError)):  # the library's own allocation error
            cutematmul.matmul(a, b)
    else:
        a = one.expand(2**19, 1)
        b = one.expand(1, 2**19)
        with pytest.raises((RuntimeError, MemoryError)):
            cutematmul.matmul(a, b)  # 2**38 outputs: the allocator refuses, nothing is launched
        out = torch.empty(1, 1, device="cuda").expand(2**19, 2**19)
        with pytest.raises(ValueError, match="out has stride 0"):
            cutematmul.matmul(a, b, out=out)
    _still_works()


@pytest.mark.parametrize("stream", [2**64, -1, 2**48 + 8, 0x7F0000000003, "s", 1.0])
def test_impossible_stream_handles(stream):
    mk = Maker("torch", seed=3)
    a, b = mk.randn((8, 4), "float32"), mk.randn((4, 6), "float32")
    with pytest.raises((ValueError, TypeError), match="stream"):
        cutematmul.matmul(a, b, stream=stream)
    _still_works()


def test_numpy_read_only_outs(tmp_path):
    a = np.random.default_rng(4).standard_normal((5, 3)).astype(np.float32)
    b = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    ro = np.zeros((5, 4), np.float32)
    ro.flags.writeable = False
    from_bytes = np.frombuffer(bytes(80), dtype=np.float32).reshape(5, 4)
    path = tmp_path / "ro.bin"
    path.write_bytes(bytes(80))
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        mapped = np.frombuffer(mm, dtype=np.float32).reshape(5, 4)
        for out in (ro, from_bytes, mapped, np.broadcast_to(np.zeros(4, np.float32), (5, 4))):
            with pytest.raises(ValueError, match="out is read-only"):
                cutematmul.matmul(a, b, out=out)
        del mapped
        mm.close()
    assert path.read_bytes() == bytes(80)
    _still_works()


def test_numpy_follows_numpy_matmul():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((6, 5)).astype(">f4")     # big-endian inputs
    b = rng.standard_normal((5, 7)).astype(">f4")
    res = cutematmul.matmul(a, b)
    np.testing.assert_allclose(res, np.matmul(a.astype(np.float64), b.astype(np.float64)),
                               rtol=1e-5)
    out = np.zeros((6, 7), ">f4")                     # big-endian out
    cutematmul.matmul(a, b, out=out)
    np.testing.assert_allclose(out, res, rtol=0)
    v = rng.standard_normal(9).astype(np.float32)
    s = cutematmul.matmul(v, v)                       # 1-D @ 1-D: a NumPy scalar
    assert isinstance(s, np.float32) and not isinstance(s, np.ndarray)
    assert abs(float(s) - float(np.dot(v.astype(np.float64), v))) <= 1e-5 * float(np.dot(v, v))
    with pytest.raises(ValueError, match="at least 1 dimension"):
        cutematmul.matmul(np.float32(2.0), v)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = x.copy()
    cutematmul.matmul(x, np.eye(4, dtype=np.float32), out=x)  # out is a: NumPy allows it
    np.testing.assert_allclose(x, y, rtol=1e-6)
    _still_works()


def test_numpy_out_with_odd_byte_strides():
    base = np.zeros(6 * 32 + 8, np.uint8)
    out = np.ndarray((6, 7), np.float32, buffer=base, offset=1, strides=(30, 4))
    a = np.random.default_rng(7).standard_normal((6, 5)).astype(np.float32)
    b = np.random.default_rng(8).standard_normal((5, 7)).astype(np.float32)
    cutematmul.matmul(a, b, out=out)
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-5, atol=1e-6)


def test_zero_size_broadcast_batch_with_strided_out():
    torch = require_module("torch")
    mk = Maker("torch", seed=9)
    a = mk.randn((1, 4, 5), "float16").expand(0, 4, 5)
    b = mk.randn((5, 6), "float16")
    out = torch.empty(0, 6, 4, dtype=torch.float16, device="cuda").transpose(1, 2)
    res = cutematmul.matmul(a, b, out=out)
    assert tuple(res.shape) == (0, 4, 6)
    _still_works()


@pytest.mark.parametrize("which", ["N", "M", "batch"])
def test_sizes_past_int32_are_split(which):
    """N, M or the batch beyond 2**31 - 1: the product is split into launches that fit."""
    torch = require_module("torch")
    big = 2**31 + 64
    g = torch.Generator(device="cuda").manual_seed(10)
    if which == "batch":  # fp32 with K = 1: every stride is 4-byte aligned, nothing is staged
        a = torch.randn(big, 1, 1, device="cuda", generator=g)
        b = torch.randn(1, 1, device="cuda", generator=g)
        dtype = "float32"
    elif which == "N":
        a = torch.randn(1, 8, device="cuda", generator=g, dtype=torch.float16)
        b = torch.randn(8, big, device="cuda", generator=g, dtype=torch.float16)
        dtype = "float16"
    else:
        a = torch.randn(big, 8, device="cuda", generator=g, dtype=torch.float16)
        b = torch.randn(8, 1, device="cuda", generator=g, dtype=torch.float16)
        dtype = "float16"
    c = cutematmul.matmul(a, b)
    assert _chunked_error(torch, a, b, c) <= TOLERANCE[dtype]
    del a, b, c
    torch.cuda.empty_cache()
    _still_works()


def _chunked_error(torch, a, b, c, chunk=2**27) -> float:
    """Relative Frobenius error of ``c`` against float64, a slice of the long mode at a time
    (torch.matmul itself refuses sizes past 2**31, and float64 copies would not fit at once)."""
    num = den = 0.0
    long_dim = max(range(c.ndim), key=lambda d: c.shape[d])
    for start in range(0, c.shape[long_dim], chunk):
        sl = slice(start, start + chunk)
        if long_dim == c.ndim - 1:  # N
            want = a.double() @ b[:, sl].double()
            got = c[..., sl]
        else:  # M (2-D) or the batch (3-D)
            index = (sl,) if long_dim == 0 else (slice(None), sl)
            want = a[index].double() @ b.double()
            got = c[index]
        num += float(torch.linalg.vector_norm((got.double() - want).reshape(-1)) ** 2)
        den += float(torch.linalg.vector_norm(want.reshape(-1)) ** 2)
    return (num / den) ** 0.5


# ----------------------------------------------------------------------------- the property run


@st.composite
def _problem(draw):
    dtype = draw(st.sampled_from(["float32", "float16", "bfloat16"]))
    m, n, k = (draw(st.sampled_from([1, 2, 3, 7, 8, 16, 17, 33, 64, 65, 130])) for _ in range(3))
    nb = draw(st.integers(0, 2))
    batch = [draw(st.integers(1, 3)) for _ in range(nb)]
    ba = tuple(d if draw(st.booleans()) else 1 for d in batch)[draw(st.integers(0, nb)):]
    bb = tuple(d if draw(st.booleans()) else 1 for d in batch)[draw(st.integers(0, nb)):]
    layout = draw(st.sampled_from(["nn", "tn", "nt", "tt"]))
    offsets = (draw(st.integers(0, 9)), draw(st.integers(0, 9)))
    steps = (draw(st.sampled_from([1, 1, 2])), draw(st.sampled_from([1, 1, 3])))
    out_kind = draw(st.sampled_from(["none", "row", "col", "padded", "strided", "offset"]))
    one_d = draw(st.sampled_from([None, None, None, "a", "b", "both"]))
    return dtype, (m, n, k), ba, bb, layout, offsets, steps, out_kind, one_d


def _operand(torch, mk, batch, rows, cols, dtype, transposed, offset, step):
    """A (batch..., rows, cols) view at an element offset, possibly transposed and strided."""
    store = (cols, rows) if transposed else (rows, cols)
    full = mk.randn(batch + (store[0], store[1] * step + offset), dtype)
    view = full[..., offset: offset + store[1] * step: step]
    return view.transpose(-1, -2) if transposed else view


@settings(max_examples=1000, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_problem())
def test_property_layouts_against_float64(p):
    torch = require_module("torch")
    dtype, (m, n, k), ba, bb, layout, offsets, steps, out_kind, one_d = p
    mk = Maker("torch", seed=zlib.crc32(repr(p).encode()))  # hash() of str varies by process
    if one_d in ("a", "both"):
        a = mk.randn((k * steps[0] + offsets[0],), dtype)[offsets[0]::steps[0]][:k]
    else:
        a = _operand(torch, mk, ba, m, k, dtype, layout[0] == "t", offsets[0], steps[0])
    if one_d in ("b", "both"):
        b = mk.randn((k * steps[1] + offsets[1],), dtype)[offsets[1]::steps[1]][:k]
    else:
        b = _operand(torch, mk, bb, k, n, dtype, layout[1] == "t", offsets[1], steps[1])
    shape = tuple(np.matmul(np.zeros(a.shape, np.int8), np.zeros(b.shape, np.int8)).shape)
    if out_kind == "none":
        res = cutematmul.matmul(a, b)
        check_matmul(res, a, b, dtype)
        return
    dense = [1] * len(shape)
    acc = 1
    order = list(range(len(shape)))
    if out_kind == "col" and len(shape) >= 2:
        order[-1], order[-2] = order[-2], order[-1]
    for d in reversed(order):
        dense[d] = acc
        acc *= max(shape[d], 1) + (3 if out_kind == "padded" and d == order[-1] else 0)
        if out_kind == "strided" and d == order[-1]:
            dense[d] *= 2
            acc *= 2
    pad = 5 if out_kind == "offset" else 64
    buf, out = _guarded(torch, shape, tuple(dense), dtype, pad=pad)
    res = cutematmul.matmul(a, b, out=out)
    assert res is out
    if all(shape):
        # Normalized by ||(|A| |B|)|| rather than ||A B||: the forward error bound of a sum.
        # Outputs of a few elements (1-D @ 1-D gives one dot product) can cancel, and relative to
        # their own size any rounding is then unbounded (a 64-term fp32 dot product measured
        # 2.1e-5).
        a64, b64 = _np64(a), _np64(b)
        want = np.matmul(a64, b64)
        relative_error(out, want)  # its shape and NaN (unwritten element) checks
        scale = np.linalg.norm(np.matmul(np.abs(a64), np.abs(b64)))
        err = float(np.linalg.norm(to_numpy(out) - want) / scale) if scale else 0.0
        assert err <= TOLERANCE[dtype], f"relative error {err:.3g} for {p}"
    assert _guards_intact(torch, buf, out), f"bytes outside out changed for {p}"


def _np64(x):
    return x.detach().double().cpu().numpy()
