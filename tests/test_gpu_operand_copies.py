"""16-bit operands TMA cannot address, copied by the operand prep inside the launch (GPU).

An operand whose rows are no whole 16-byte vectors (a few columns N = 9, an odd K or M) is
copied by ``kernels/operand_prep.py`` in its own major into padded rows of a workspace
(``configs.sm90.operand_copies``), on the caller's stream; the library stages nothing.  A C
of such rows is written by the reduction from fp32 partials where the schedule goes through
the workspace, by the kernel itself, element by element, from a data-parallel unswapped tile
(``Config.stores_any_c``), else copied by the reduction from the kernel's own C in padded rows
of ours (``dispatch.copied_c``).  Each case first asks the planner that the launch holds the
copies it is meant to test, then checks the product against float64 in a NaN-poisoned
``out``, that the operands were only read, and that nothing outside ``out`` was written.
"""

from __future__ import annotations

import pytest

import cutematmul
from conftest import require_module
from helpers import Maker, check_matmul, layout_operands

pytestmark = pytest.mark.gpu

LAYOUTS = ["nn", "tn", "nt", "tt"]
# (M, N, K): a long K over a few rows and columns (split, C by the reduction), a 70 x 66 result
# (past the 64 rows or columns that SIMT's row-streaming kernel reads in place instead:
# tests/test_gpu_row_streaming16.py), a few columns over many rows, and a mid-size product
# whose C is copied (unsplit, 333 columns).
SHAPES = [(80, 98, 15985), (70, 66, 29473), (1000, 12, 3000), (301, 333, 1001)]


@pytest.fixture
def mk():
    require_module("torch")
    return Maker("torch", seed=11)


def _planned(a, b, **call):
    """The launch ``matmul(a, b, **call)`` would run; None where it is not one launch (an
    operand or C staged)."""
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    return launch.planned_launch(adapter_for(a), a, b, **call)


def _copied(a, b):
    """Which of the kernel's (A, B) the planned launch copies: None where nothing is planned
    as one launch (an operand or C staged)."""
    work = _planned(a, b)
    if work is None:
        return None
    return tuple(p is not None for p in (work.prep or (None, None)))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_unaligned_operands_are_copied_and_correct(mk, dtype, layout, shape):
    import torch

    m, n, k = shape
    a, b = layout_operands(mk, m, n, k, layout, dtype)
    a_unit = m if layout[0] == "t" else k
    b_unit = k if layout[1] == "t" else n
    copied = _copied(a, b)
    assert copied == (a_unit % 8 != 0, b_unit % 8 != 0), f"{shape} {layout}: {copied}"
    # Both copies, where both are made, in one launch.
    from cutematmul import dispatch
    paired = _planned(a, b).prep is not None and dispatch.paired(_planned(a, b).prep)
    assert bool(paired) == all(copied), f"{shape} {layout}: {paired}"
    a0, b0 = a.clone(), b.clone()
    wide = mk.poisoned((m, n + 9), dtype)
    out = wide[:, 4:n + 4]
    check_matmul(cutematmul.matmul(a, b, out=out), a, b, dtype)
    assert torch.equal(a, a0) and torch.equal(b, b0), "an operand was written"
    assert torch.isnan(wide[:, :4]).all() and torch.isnan(wide[:, n + 4:]).all(), \
        "a product wrote outside the out view"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_copies_with_a_broadcast_batch_a_misaligned_pointer_and_bitwise_repeats(mk, dtype):
    """A stack of 3 against one shared B of 9 columns (copied once, batch stride 0), A a view
    one element into its buffer (a base pointer 2 bytes past 16-byte alignment, rows of K + 1);
    repeats (the second takes the fast path where the pointers allow) are bitwise equal."""
    import torch

    m, n, k = 77, 9, 20001
    base = mk.randn((3, m, k + 1), dtype)
    a = base[..., 1:]
    b = mk.randn((k, n), dtype)
    assert a.data_ptr() % 16 != 0
    assert _copied(a, b) == (True, True)
    first = cutematmul.matmul(a, b, out=mk.poisoned((3, m, n), dtype))
    check_matmul(first, a, b, dtype)
    aligned = mk.randn((3, m, k), dtype)
    again = [cutematmul.matmul(aligned, b) for _ in range(3)]
    check_matmul(again[0], aligned, b, dtype)
    for other in again[1:]:
        assert torch.equal(other.view(torch.int16), again[0].view(torch.int16))
    for other in (cutematmul.matmul(a, b) for _ in range(2)):
        assert torch.equal(other.view(torch.int16), first.view(torch.int16))


# (M, N, K, batch) of a small M's M-major A on a wave or less of swapped narrow tiles: 24 and 8
# rows (with B's K-major rows, in tt, of no whole 16-byte vectors: both copied in one launch),
# and a batch whose tiles together fill the SMs enough.
ACROSS = [(24, 4096, 12288, ()), (8, 3000, 12290, ()), (8, 2048, 12288, (2,))]


@pytest.mark.parametrize("shape", ACROSS, ids=lambda s: "x".join(map(str, s[3] + s[:3])))
@pytest.mark.parametrize("layout", ["tn", "tt"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_small_m_read_across_is_copied_k_major(mk, dtype, layout, shape):
    """An M-major A of a few rows whose product runs on few swapped narrow tiles is read
    through a K-major copy (``configs.sm90.copies_across``): the planned launch carries it, the
    GEMM reads a K-major A, and the product is right in a NaN-poisoned ``out``, with the
    operands only read and a repeat bitwise equal."""
    import torch

    m, n, k, batch = shape
    a, b = layout_operands(mk, m, n, k, layout, dtype, batch)
    work = _planned(a, b)
    assert work is not None and work.prep is not None, work
    copy = work.prep[0]
    assert copy is not None and copy.to_major == "k" and work.key.a_major == "k", work
    a0, b0 = a.clone(), b.clone()
    out = mk.poisoned(batch + (m, n), dtype)
    check_matmul(cutematmul.matmul(a, b, out=out), a, b, dtype)
    assert torch.equal(a, a0) and torch.equal(b, b0), "an operand was written"
    again = cutematmul.matmul(a, b)
    assert torch.equal(again.view(torch.int16), out.view(torch.int16))


# (M, N, K) with rows of C no whole 16-byte vectors (odd N) on unsplit tiles: every side odd
# (A and B copied too), aligned operands, a 128 x 128 tile over a short K, a C of 4.2M
# elements.
C_SHAPES = [(595, 851, 545), (1024, 1001, 2048), (300, 301, 302), (1020, 1027, 256),
            (2050, 2047, 512)]


@pytest.mark.parametrize("shape", C_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_an_unaligned_c_is_stored_by_the_kernel_itself(mk, dtype, layout, shape):
    """Not staged, not copied: the unsplit kernel stores C element by element
    (``Config.stores_any_c``), here a column slice of a wider NaN-poisoned buffer (4 columns
    in, row stride N + 9); a repeat (the fast path) is bitwise equal."""
    import torch

    m, n, k = shape
    a, b = layout_operands(mk, m, n, k, layout, dtype)
    work = _planned(a, b)
    assert work is not None and work.splits == 1 and not work.transposed, work
    assert work.key.config.stores_any_c and work.key.align_c == 1, work.key
    assert work.reduce is None, work.reduce
    wide = mk.poisoned((m, n + 9), dtype)
    out = wide[:, 4:n + 4]
    check_matmul(cutematmul.matmul(a, b, out=out), a, b, dtype)
    assert torch.isnan(wide[:, :4]).all() and torch.isnan(wide[:, n + 4:]).all(), \
        "a product wrote outside the out view"
    first = cutematmul.matmul(a, b)
    for _ in range(2):
        again = cutematmul.matmul(a, b)
        assert torch.equal(again.view(torch.int16), first.view(torch.int16))
    assert torch.equal(first.view(torch.int16), out.view(torch.int16))


def test_an_unaligned_c_with_a_broadcast_batch_and_in_fp32(mk):
    """A stack of 3 against one shared B of 77 columns (batch stride 0), fp16, stored by the
    kernel itself; and fp32 "tf32" (stored by the kernel too) and "high" (split: the fp32
    reduction writes C) of 1001 columns on the TF32 kernels (a K of 2048: at 1024 "high" runs
    unsplit since the reduction's 6 us price, ``configs.sm90._RATES``)."""
    a = mk.randn((3, 640, 1000), "float16")
    b = mk.randn((1000, 77), "float16")
    work = _planned(a, b)
    assert work is not None and work.reduce is None and work.key.align_c == 1, work
    check_matmul(cutematmul.matmul(a, b, out=mk.poisoned((3, 640, 77), "float16")), a, b,
                 "float16")
    a = mk.randn((640, 2048), "float32")
    b = mk.randn((2048, 1001), "float32")
    for precision in ("tf32", "high"):
        work = _planned(a, b, precision=precision, kernel="sm90")
        assert work is not None, precision
        if precision == "tf32":  # unsplit, B copied K-major, unswapped: C stored by the kernel
            assert work.splits == 1 and work.reduce is None and work.key.align_c == 1, work
        else:  # "high" splits K here: the fp32 reduction writes C
            assert work.reduce.w_dtype == "float32", work
        result = cutematmul.matmul(a, b, out=mk.poisoned((640, 1001), "float32"),
                                   precision=precision, kernel="sm90")
        # One TF32 pass keeps 10 mantissa bits: the fp16 bound.
        check_matmul(result, a, b, "float32" if precision == "high" else "float16")


def test_copies_through_cupy():
    """CuPy arrays: the copies' workspaces come from CuPy's pool, on its current stream."""
    require_module("cupy")
    mk = Maker("cupy", seed=5)
    for layout in ("nn", "tt"):
        a, b = layout_operands(mk, 21, 43, 15989, layout, "float16")
        check_matmul(cutematmul.matmul(a, b), a, b, "float16")


# The prep kernel launched by itself: (parts, dtype, batch, rows, K, width of each part, X's
# first element in its rows: 1 starts X off every 16-byte boundary).
PREP_CASES = [
    (1, "float16", 70000, 3, 9, 16, 0),  # a batch past the grid's 65535, rows of 9 padded to 16
    (1, "bfloat16", 2, 211, 37, 40, 0),  # several rows per CTA, a tail CTA
    (1, "float32", 1, 3, 5000, 5120, 0),  # rows longer than a CTA's vectors: walked in steps
    (2, "float32", 3, 5, 1000, 1024, 0),  # the 3xTF32 split: big | small
    (1, "float16", 2, 3, 4500, 4544, 1),  # 16-bit rows longer than a pass, X at an odd element
    (1, "bfloat16", 1, 600, 3, 8, 1),  # rows of 3 elements: many rows per CTA, any start
]


@pytest.mark.parametrize("case", PREP_CASES,
                         ids=lambda c: f"{c[1]}-parts{c[0]}-{c[2]}x{c[3]}x{c[4]}-at{c[6]}")
def test_straight_prep_kernel_writes_exactly_its_rows(case):
    """``kernels/operand_prep.py``'s straight copy from a K-major X of rows with no whole
    16-byte vectors (its row pitch K + 3, its first element at 0 or 1): D holds X then zeros
    up to each part's width (with two parts, big = tf32(x) and small = tf32(x - big)), and
    nothing past D is written."""
    require_module("torch")
    import torch

    from cutematmul import cache, dispatch

    parts, dtype, batch, rows, k, width, at = case
    t = getattr(torch, dtype)
    src = torch.randn(batch, rows, k + 3, device="cuda").to(t)
    x = src[..., at:at + k]  # row pitch k + 3: unaligned rows
    guard = 64
    buf = torch.full((batch * rows * parts * width + guard,), float("nan"), device="cuda",
                     dtype=t)
    key = dispatch.prep_key((9, 0), parts, True, dtype)
    fn = cache.get_compiled(key)
    stream = torch.cuda.current_stream().cuda_stream
    fn(x.data_ptr(), buf.data_ptr(), rows, k, batch, parts * width, k + 3, 1, rows * (k + 3),
       parts * width, rows * parts * width, stream)
    torch.cuda.synchronize()
    _check_copy(torch, buf, guard, x, parts, width)


def _check_copy(torch, buf, guard, x, parts, width):
    """The prep's destination at the start of ``buf``, (batch, rows, parts, width) for X
    (batch, rows, K): X then zeros up to each part's width (with two parts, big = tf32(x) and
    small = tf32(x - big) carrying x), every element written, the ``guard`` NaNs after it
    untouched."""
    batch, rows, k = x.shape
    d = buf[:-guard].view(batch, rows, parts, width)
    assert torch.isnan(buf[-guard:]).all(), "the prep wrote past its destination"
    assert not torch.isnan(d).any(), "the prep left destination elements unwritten"
    assert (d[..., k:] == 0).all(), "the padding past K is not zeros"
    if parts == 1:
        assert torch.equal(d[:, :, 0, :k], x), "the copy changed values"
    else:
        big, small = d[:, :, 0, :k], d[:, :, 1, :k]
        assert (big.view(torch.int32) & 0x1FFF == 0).all() and (
            small.view(torch.int32) & 0x1FFF == 0).all(), "big and small are not TF32 values"
        assert torch.equal(big + small, x) or (
            (big.double() + small.double() - x.double()).abs() <= x.double().abs() * 2.0**-21
        ).all(), "big + small does not carry x"


# The pair (``dispatch.paired``) launched by itself: (parts, dtype, per operand (straight?,
# batch, rows, K, width of each part)).
PAIR_CASES = [
    # A transposing past the grid's 65535 matrices (the batch walked on y), B straight, one.
    (1, "float32", ((False, 70000, 3, 5, 8), (True, 1, 37, 5, 8))),
    # The 3xTF32 split: A straight, B transposing in 3 matrices of a 33-row tail block.
    (2, "float32", ((True, 1, 211, 70, 96), (False, 3, 33, 70, 96))),
    # 16-bit straight copies of both, batches 2 and 70000 (B's CTAs on every y, A's on two).
    (1, "float16", ((True, 2, 300, 9, 16), (True, 70000, 2, 9, 16))),
]


def _pair_operand(torch, t, straight, batch, rows, k):
    """X (batch, rows, K) of no whole 16-byte rows: K-major (row pitch K + 3) for the straight
    copy, else rows-major (pitch rows + 3, what the transposing copy reads)."""
    if straight:
        x = torch.randn(batch, rows, k + 3, device="cuda").to(t)[..., :k]
        return x, (k + 3, 1, rows * (k + 3))
    x = torch.randn(batch, k, rows + 3, device="cuda").to(t)[..., :rows].transpose(1, 2)
    return x, (1, rows + 3, k * (rows + 3))


@pytest.mark.parametrize("case", PAIR_CASES,
                         ids=lambda c: f"{c[1]}-parts{c[0]}-{c[2][0][0]}-{c[2][1][0]}")
def test_pair_prep_kernel_writes_exactly_both_copies(case):
    """``kernels/operand_prep.py``'s pair: A's and B's copies in one launch, each into its own
    NaN-poisoned destination with a guard after it; each holds its X then zeros (with two parts,
    TF32 big and small carrying x), and nothing past either is written."""
    require_module("torch")
    import torch

    from cutematmul import cache, dispatch

    parts, dtype, operands = case
    t = getattr(torch, dtype)
    guard = 64
    keys, xs, bufs, args = [], [], [], []
    for straight, batch, rows, k, width in operands:
        x, strides = _pair_operand(torch, t, straight, batch, rows, k)
        buf = torch.full((batch * rows * parts * width + guard,), float("nan"), device="cuda",
                         dtype=t)
        keys.append(dispatch.prep_key((9, 0), parts, straight, dtype))
        xs.append(x)
        bufs.append(buf)
        args += [x.data_ptr(), buf.data_ptr(), rows, k, batch, parts * width, *strides,
                 parts * width, rows * parts * width]
    pair = dispatch.paired(tuple(dispatch.OperandCopy(key, "k") for key in keys))
    assert pair is not None and pair.k_major_b == operands[1][0], pair
    cache.get_compiled(pair)(*args, torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    for (*_, width), x, buf in zip(operands, xs, bufs):
        _check_copy(torch, buf, guard, x, parts, width)


# The copy of a 16-bit C launched by itself: (dtype, batch, M, N).
COPY_CASES = [
    ("float16", 70000, 2, 3),  # a batch past the grid's 65535, rows of 3 (85 per CTA)
    ("bfloat16", 3, 211, 37),  # several rows per CTA (6 of 37 threads), a tail CTA of one row
    ("float16", 2, 3, 9001),  # rows longer than a CTA's threads x unroll: walked in 9 steps
    ("bfloat16", 1, 700, 4097),  # one row per CTA, a last step of one element
]


@pytest.mark.parametrize("case", COPY_CASES, ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}x{c[3]}")
def test_copy_kernel_writes_exactly_c(case):
    """``kernels/splitk_reduce.py``'s copy (``dispatch.copied_c``) launched by itself: W's
    padded rows (random values in the padding too) into C, a view of a NaN-poisoned buffer
    whose rows start one element in (2-byte aligned) and are 5 elements longer than C's:
    C equals W's first N columns and nothing else of the buffer is written."""
    require_module("torch")
    import torch

    from cutematmul import cache, dispatch

    dtype, batch, m, n = case
    t = getattr(torch, dtype)
    ldw = -(-n // 8) * 8
    w = torch.randn(batch, m, ldw, device="cuda").to(t)
    buf = torch.full((batch, m, n + 5), float("nan"), device="cuda", dtype=t)
    c = buf[..., 1:n + 1]
    key = dispatch.reduce_key((9, 0), dtype, w_dtype=dtype)
    stream = torch.cuda.current_stream().cuda_stream
    cache.get_compiled(key)(w.data_ptr(), c.data_ptr(), m, n, batch, 1,
                            dispatch.reduce_lanes(m * n * batch, 1), ldw, 1, m * ldw, n + 5,
                            m * (n + 5), stream)
    torch.cuda.synchronize()
    assert torch.equal(c.view(torch.int16), w[..., :n].view(torch.int16)), \
        "the copy changed or missed values"
    assert torch.isnan(buf[..., 0]).all() and torch.isnan(buf[..., n + 1:]).all(), \
        "the copy wrote outside C"
