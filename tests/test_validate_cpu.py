"""CPU tests of the validation layer and of the launches a plan makes, against a NumPy model.

The model executes every launch of a plan (``plan.pieces``) element by element, exactly as a
kernel would address memory, and records each address it reads and writes.  For random shapes,
strides, offsets, broadcasts and ``out`` layouts it checks that

* every address read lies in the address set of the operand view it belongs to,
* the addresses written are exactly the ``out`` view's (nothing outside it, nothing missed),
* the values equal ``numpy.matmul``'s,
* ``validate.check_launches`` (the run-time proof) accepts the launches, and rejects a launch
  that reaches one element too far.

The route-level tests run the device route with a stand-in adapter over host memory: every bad
input must be refused before the first CUDA call.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cutematmul import validate
from cutematmul.operand import ArrayAdapter, Operand
from cutematmul.plan import pieces, plan_gemm, result_shape

F = np.float64


# ----------------------------------------------------------------------------- the NumPy model


def _addresses(view: np.ndarray, base: np.ndarray) -> set[int]:
    """Element indices (from ``base``'s start) of every element of ``view``."""
    start = ((view.__array_interface__["data"][0] - base.__array_interface__["data"][0])
             // base.itemsize)
    strides = [s // base.itemsize for s in view.strides]
    out = set()
    for idx in itertools.product(*(range(n) for n in view.shape)):
        out.add(start + sum(i * s for i, s in zip(idx, strides)))
    return out


def _root(x: np.ndarray) -> np.ndarray:
    """The array that owns ``x``'s memory (through as_strided's wrapper object too)."""
    while True:
        base = x.base
        if not isinstance(base, np.ndarray):
            base = getattr(base, "base", None)  # as_strided wraps its source in a plain object
        if not isinstance(base, np.ndarray):
            return x
        x = base


def _offset(view: np.ndarray, base: np.ndarray) -> int:
    return ((view.__array_interface__["data"][0] - base.__array_interface__["data"][0])
            // base.itemsize)


def _estrides(x: np.ndarray):
    return tuple(s // x.itemsize for s in x.strides)


def run_model(a, b, out, bufs, piece=None):
    """Execute the plan's launches on host memory; returns (reads_a, reads_b, writes)."""
    buf_a, buf_b, buf_c = bufs
    g = plan_gemm(a.shape, _estrides(a), b.shape, _estrides(b), _estrides(out))
    if any(lay.major == "strided" or lay.ld < 0 or lay.batch_stride < 0 for lay in (g.a, g.b)):
        # The launch path stages such operands into compact copies first.
        a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)  # as the staging copies do
        buf_a, buf_b = _root(a), _root(b)
        g = plan_gemm(a.shape, _estrides(a), b.shape, _estrides(b), _estrides(out))
    assert g.c.major == "n", "an out view that needs staging is not modelled here"
    first, second = (b, a) if g.swapped else (a, b)
    fbuf, sbuf = (buf_b, buf_a) if g.swapped else (buf_a, buf_b)
    flat_f, flat_s, flat_c = fbuf.reshape(-1), sbuf.reshape(-1), buf_c.reshape(-1)
    base_f, base_s, base_c = _offset(first, fbuf), _offset(second, sbuf), _offset(out, buf_c)
    reads_f, reads_s, writes = set(), set(), []
    launches = pieces(g) if piece is None else pieces(g, piece)
    for (oa, ob, oc), (m, n, batch) in launches:
        for l, i, j in itertools.product(range(batch), range(m), range(n)):
            acc = 0.0
            for k in range(g.k):
                ia = base_f + oa + l * g.a.batch_stride + (i * g.a.ld + k if g.a.major == "k"
                                                           else i + k * g.a.ld)
                ib = base_s + ob + l * g.b.batch_stride + (j * g.b.ld + k if g.b.major == "k"
                                                           else j + k * g.b.ld)
                reads_f.add(ia)
                reads_s.add(ib)
                acc += flat_f[ia] * flat_s[ib]
            ic = base_c + oc + l * g.c.batch_stride + i * g.c.ld + j
            writes.append(ic)
            flat_c[ic] = acc
    reads_a, reads_b = (reads_s, reads_f) if g.swapped else (reads_f, reads_s)
    return (a, b), (reads_a, reads_b), writes, g, launches


# ----------------------------------------------------------------------------- strategies


@st.composite
def operand_views(draw, shape):
    """A view of ``shape`` with arbitrary element strides (zero and negative included) and a
    random offset into a fresh buffer that has guard elements on both sides."""
    strides = [draw(st.sampled_from([-5, -3, -1, 0, 1, 1, 1, 2, 3, 4, 7, 12, 30])) for _ in shape]
    if draw(st.booleans()):  # mostly plain layouts: row-major or transposed
        strides = list(_dense_strides(shape, draw(st.booleans())))
    low = sum(max(0, -(n - 1) * s) for n, s in zip(shape, strides))
    high = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    offset = low + draw(st.integers(0, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    buf = rng.standard_normal(offset + high + 1 + 4)
    view = np.lib.stride_tricks.as_strided(buf[offset:], shape, [s * 8 for s in strides])
    return view, buf


def _dense_strides(shape, transposed_last_two: bool):
    order = list(range(len(shape)))
    if transposed_last_two and len(shape) >= 2:
        order[-1], order[-2] = order[-2], order[-1]
    strides = [0] * len(shape)
    acc = 1
    for d in reversed(order):
        strides[d] = acc
        acc *= max(shape[d], 1)
    return strides


@st.composite
def problems(draw):
    m, n, k = (draw(st.integers(1, 5)) for _ in range(3))
    nb = draw(st.integers(0, 2))
    batch = [draw(st.integers(1, 3)) for _ in range(nb)]
    ba = [d if draw(st.booleans()) else 1 for d in batch]
    bb = [d if draw(st.booleans()) else 1 for d in batch]
    sa = tuple(ba[draw(st.integers(0, nb)):]) + (m, k)
    sb = tuple(bb[draw(st.integers(0, nb)):]) + (k, n)
    if draw(st.integers(0, 4)) == 0:
        sa = (k,)
    if draw(st.integers(0, 4)) == 0:
        sb = (k,)
    a, buf_a = draw(operand_views(sa))
    b, buf_b = draw(operand_views(sb))
    oshape = result_shape(a.shape, b.shape)
    o, buf_c = draw(operand_views(oshape))
    return a, b, o, (buf_a, buf_b, buf_c)


# ----------------------------------------------------------------------------- the model tests


def _run_and_check(a, b, out, bufs, piece=None):
    expected = np.matmul(a, b)
    guard = bufs[2].copy()
    out_set = _addresses(out, bufs[2]) if out.size else set()
    (sa, sb), (ra, rb), writes, g, launches = run_model(a, b, out, bufs, piece)
    # Reads stay inside the operand views (or their staged copies).
    for view, reads in ((sa, ra), (sb, rb)):
        root = _root(view)
        allowed = _addresses(view, root) if view.size else set()
        assert reads <= allowed, f"reads outside the view: {sorted(reads - allowed)[:5]}"
    # Writes: exactly the out view, each once.
    assert len(writes) == len(set(writes)), "an element was written twice"
    assert set(writes) == out_set, "writes differ from the out view"
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    untouched = np.ones(bufs[2].size, bool)
    untouched[list(out_set)] = False
    assert np.array_equal(bufs[2].reshape(-1)[untouched], guard.reshape(-1)[untouched])
    # The run-time proof accepts these launches.
    itemsize = 8
    spans = []
    for view in ((sb, sa, out) if g.swapped else (sa, sb, out)):
        spans.append(validate.span(view.shape, _estrides(view), itemsize, "x"))
    calls = [
        (tuple(o * itemsize for o in offs),
         (m, n, g.k, l, 1, g.a.ld, g.a.batch_stride, g.b.ld, g.b.batch_stride, g.c.ld,
          g.c.batch_stride),
         (g.a.major, g.b.major))
        for offs, (m, n, l) in launches
    ]
    if g.k:
        validate.check_launches(calls, spans, itemsize)
        (offs, sizes, majors) = calls[-1]  # the last launch reaches the far end
        too_far = (offs, (sizes[0] + 1,) + sizes[1:], majors)
        with pytest.raises(RuntimeError, match="outside its span"):
            validate.check_launches([too_far], spans, itemsize)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_launches_match_numpy_model(p):
    a, b, out, bufs = p
    if out.size and validate.self_overlap(out.shape, _estrides(out)) is None:
        g = plan_gemm(a.shape, _estrides(a), b.shape, _estrides(b), _estrides(out))
        if g.c.major == "n":
            _run_and_check(a, b, out, bufs)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.integers(1, 3))
def test_split_launches_match_numpy_model(p, piece):
    """M, N and the batch cut into pieces (as for sizes past 2**31) give the same product."""
    a, b, out, bufs = p
    if out.size and validate.self_overlap(out.shape, _estrides(out)) is None:
        g = plan_gemm(a.shape, _estrides(a), b.shape, _estrides(b), _estrides(out))
        if g.c.major == "n":
            _run_and_check(a, b, out, bufs, piece)


# ----------------------------------------------------------------------------- pure checks


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(-6, 6)), min_size=1, max_size=4))
def test_self_overlap_matches_enumeration(dims):
    shape = tuple(n for n, _ in dims)
    strides = tuple(s for _, s in dims)
    offsets = [sum(i * s for i, s in zip(idx, strides))
               for idx in itertools.product(*(range(n) for n in shape))]
    overlapping = len(offsets) != len(set(offsets))
    assert (validate.self_overlap(shape, strides) is not None) == overlapping


@pytest.mark.parametrize("shape,strides", [
    ((2**62,), (4,)),
    ((3, 2**61), (2**61, 4)),
    ((2**40, 2**40), (2**23, 1)),
])
def test_span_overflow_is_refused(shape, strides):
    with pytest.raises(ValueError, match="cannot be computed in 64 bits"):
        validate.span(shape, strides, 4, "a")


def test_span_of_broadcast_and_negative_strides():
    assert validate.span((2**62, 3), (0, 1), 2, "a") == (0, 6)
    assert validate.span((4, 3), (-3, 1), 4, "a") == (-36, 12)
    assert validate.span((0, 3), (3, 1), 4, "a") == (0, 0)


def test_address_range():
    op = Operand(None, 2**64 - 8, (4,), (1,), "float32", 4, 0)
    with pytest.raises(ValueError, match="outside the 64-bit address space"):
        validate.check_address_range(op, "b", (0, 16))
    op = Operand(None, 16, (4,), (-8,), "float32", 4, 0)
    with pytest.raises(ValueError, match="outside the 64-bit address space"):
        validate.check_address_range(op, "b", validate.span((4,), (-8,), 4, "b"))


def test_contraction_limit():
    """K up to ``MAX_K`` (2**31 - 2**20: room for the kernels' int32 K positions past a
    split's end); past it a ValueError names K and the limit."""
    validate.check_contraction(validate.MAX_K)
    for k in (validate.MAX_K + 1, 2**31 - 1, 2**62):
        with pytest.raises(ValueError, match=f"K = {k} exceeds {validate.MAX_K}"):
            validate.check_contraction(k)


def test_pieces_cover_large_sizes():
    """N past 2**31 becomes several launches whose sizes fit int32 and whose offsets tile C."""
    g = plan_gemm((1, 8), (8, 1), (8, 2**31 + 5), (2**31 + 5, 1), None)
    launches = pieces(g)
    assert all(max(sizes) <= 2**30 for _, sizes in launches)
    assert sum(sizes[1] for _, sizes in launches) == 2**31 + 5 if not g.swapped else True
    covered = sum(s[0] * s[1] * s[2] for _, s in launches)
    assert covered == (2**31 + 5)


# ----------------------------------------------------------------------------- the device route


class HostAsDevice(ArrayAdapter):
    """Stand-in adapter: NumPy arrays described as if they were on GPU 0 (nothing is launched)."""

    name = "fake-device"

    def describe(self, x, argument, stream=None):
        if isinstance(x, Huge):
            return Operand(x, 1 << 20, x.shape, x.strides, "float32", 4, 0)
        isz = x.itemsize
        strides = None if any(s % isz for s in x.strides) else tuple(s // isz for s in x.strides)
        return Operand(x, x.__array_interface__["data"][0], x.shape, strides, x.dtype.name, isz, 0,
                       not x.flags.writeable)

    def current_stream(self, device):
        return 0


class Huge:
    """An array description NumPy cannot make (sizes past 2**62): shape and element strides."""

    def __init__(self, shape, strides):
        self.shape, self.strides = shape, strides


@pytest.fixture
def no_cuda(monkeypatch):
    """Fail the test if the route reaches its first CUDA call."""
    from cutematmul import device

    def touched(*args, **kwargs):
        raise AssertionError("the route reached CUDA before refusing the input")

    monkeypatch.setattr(device, "device_info", touched)


def _run(a, b, out=None, stream=None):
    from cutematmul.launch import run_device

    return run_device(HostAsDevice(), a, b, out=out, stream=stream, kernel="auto")


def _f32(*shape):
    return np.ones(shape, np.float32)


@pytest.mark.parametrize("case,exc,msg", [
    ("broadcast out", ValueError, "out has stride 0 along dimension 0"),
    ("overlapping out", ValueError, "map several elements to one address"),
    ("read-only out", ValueError, "out is read-only"),
    ("out overlaps a", ValueError, "out overlaps a"),
    ("out byte strides", TypeError, "out has byte strides that are not multiples"),
    ("K beyond int32", ValueError, "K = [0-9]+ exceeds 2146435072"),
    ("size times stride beyond 2**63", ValueError, "cannot be computed in 64 bits"),
    ("stream 2**64", ValueError, "cannot be a CUDA stream"),
    ("stream misaligned", ValueError, "cannot be a CUDA stream"),
])
def test_device_route_refuses_before_cuda(no_cuda, case, exc, msg):
    a, b, out, stream = _f32(3, 4), _f32(4, 5), None, None
    if case == "broadcast out":
        out = np.broadcast_to(_f32(5), (3, 5)).copy()
        out = np.lib.stride_tricks.as_strided(out, (3, 5), (0, 4))
    elif case == "overlapping out":
        out = np.lib.stride_tricks.as_strided(_f32(64), (3, 5), (8, 4))  # rows overlap by 3
    elif case == "read-only out":
        out = _f32(3, 5)
        out.flags.writeable = False
    elif case == "out overlaps a":
        big = _f32(3, 9)
        a, out = big[:, :4], big[:, 4:]
    elif case == "out byte strides":
        raw = np.zeros(128, np.float32)
        out = np.lib.stride_tricks.as_strided(raw, (3, 5), (21, 4))
    elif case == "K beyond int32":
        a, b = Huge((3, 2**62), (0, 0)), Huge((2**62, 5), (0, 0))
    elif case == "size times stride beyond 2**63":
        a, b = Huge((2**40, 4), (2**30, 1)), Huge((4, 5), (5, 1))
    elif case == "stream 2**64":
        stream = 2**64
    elif case == "stream misaligned":
        stream = 0x7F0000001234 + 3
    with pytest.raises(exc, match=msg):
        _run(a, b, out, stream)
