"""From array shapes and strides to GEMM launches: NumPy ``matmul`` semantics, in pure Python.

Everything here works on integers only (shapes and strides in elements), so it is the same for every
array library and is tested without a GPU.  The steps:

1. 1-D operands are promoted (``a`` to a row, ``b`` to a column) and the added dimension is dropped
   from the result shape.
2. Batch dimensions broadcast as in NumPy; a broadcast dimension gets stride 0.
3. Batch dimensions that are contiguous in all three operands are merged, so most stacks become one
   launch with a single batch mode; what cannot be merged is enumerated (one launch per leading
   index).
4. Each matrix is classified by which of its two modes has unit stride (its *major* mode).  A matrix
   with no unit stride is reported as ``strided`` and must be copied by the caller.
5. The output is always written with unit stride along N.  When C has unit stride along M instead,
   the product is computed as C^T = B^T A^T, which swaps the roles of A and B.

Imports: nothing of ours (a leaf: shape and stride arithmetic, no GPU, no DSL).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

Shape = tuple[int, ...]

#: An operand's major once the product is computed as C^T = B^T A^T.
_TRANSPOSED_MAJOR = {"k": "k", "n": "m", "m": "n", "strided": "strided"}


def unit_extents(a_major: str, b_major: str, m: int, n: int, k: int) -> tuple[int, int]:
    """The extents of A's and B's unit-stride modes (the length of their rows): M for an
    M-major A, N for an N-major B, else K."""
    return (m if a_major == "m" else k), (n if b_major == "n" else k)


def whole_vectors(extents: tuple[int, ...], size: int,
                  padded: tuple[bool, ...] | None = None) -> tuple[bool, ...]:
    """Whether rows of these ``extents`` (elements of ``size`` bytes) end on whole 16-byte
    vectors: their length is a multiple of 16 bytes, or they end in ``padded`` rows of ours."""
    padded = padded or (False,) * len(extents)
    return tuple(pad or extent * size % 16 == 0 for pad, extent in zip(padded, extents))


def vector_rows(majors: tuple[str, str], aligns: tuple[int, int], m: int, n: int, k: int,
                size: int, padded: tuple[bool, bool] = (False, False)) -> tuple[bool, bool]:
    """Whether A's and B's rows (of these ``majors``, elements of ``size`` bytes, ``padded``
    as in ``whole_vectors``) are whole 16-byte vectors at byte ``aligns``: what
    ``dispatch.problem_order`` is told."""
    whole = whole_vectors(unit_extents(*majors, m, n, k), size, padded)
    return tuple(align >= 16 and ok for align, ok in zip(aligns, whole))


def transposed_majors(a_major: str, b_major: str) -> tuple[str, str]:
    """The (A, B) majors of C^T = B^T A^T for an A of ``a_major`` and a B of ``b_major``: B^T
    takes A's place (an N-major B is an M-major B^T), A^T takes B's."""
    return _TRANSPOSED_MAJOR[b_major], _TRANSPOSED_MAJOR[a_major]


@dataclass(frozen=True)
class MatrixLayout:
    """How one operand of a GEMM sits in memory (all in elements, relative to its base pointer).

    ``major`` names the unit-stride mode: "k" or "m" for A, "k" or "n" for B, "n" for C;
    "strided" when neither mode has unit stride.  ``ld`` is the stride of the other mode and
    ``batch_stride`` the stride of the merged batch mode (0 for a broadcast operand).
    """

    major: str
    ld: int
    batch_stride: int


@dataclass(frozen=True)
class Gemm:
    """One kernel launch: C[m, n, l] = sum_k A[m, k, l] * B[k, n, l].

    ``offsets`` lists, per launch, the element offsets of (A, B, C) from their base pointers (more
    than one entry when batch dimensions could not be merged).  ``swapped`` records that A and B
    were exchanged to compute C^T = B^T A^T, so ``a`` describes the caller's B.
    """

    m: int
    n: int
    k: int
    batch: int
    a: MatrixLayout
    b: MatrixLayout
    c: MatrixLayout
    offsets: tuple[tuple[int, int, int], ...]
    swapped: bool


def result_shape(a_shape: Shape, b_shape: Shape) -> Shape:
    """Shape of ``matmul(a, b)``; raises ValueError with a sentence on mismatch."""
    if len(a_shape) == 0 or len(b_shape) == 0:
        which = "a" if len(a_shape) == 0 else "b"
        raise ValueError(
            f"matmul: operand {which} must have at least 1 dimension, got a 0-dimensional array."
        )
    a2 = (1,) + a_shape if len(a_shape) == 1 else a_shape
    b2 = b_shape + (1,) if len(b_shape) == 1 else b_shape
    if a2[-1] != b2[-2]:
        raise ValueError(
            f"matmul: the contracted dimensions differ: a has shape {a_shape} (K={a2[-1]}) "
            f"but b has shape {b_shape} (K={b2[-2]}); expected a.shape[-1] == b.shape[-2]."
        )
    batch = broadcast_shapes(a2[:-2], b2[:-2], a_shape, b_shape)
    shape = batch + (a2[-2], b2[-1])
    if len(a_shape) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(b_shape) == 1:
        shape = shape[:-1]
    return shape


def problem_size(a_shape: Shape, b_shape: Shape) -> tuple[int, int, int, int]:
    """(M, N, K, batch) of ``matmul(a, b)`` for valid shapes (1-D operands promoted)."""
    m = a_shape[-2] if len(a_shape) > 1 else 1
    n = b_shape[-1] if len(b_shape) > 1 else 1
    batch = 1
    for d in broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2])):
        batch *= d
    return m, n, a_shape[-1], batch


def broadcast_shapes(x: Shape, y: Shape, a_shape: Shape = (), b_shape: Shape = ()) -> Shape:
    """NumPy broadcasting of two batch shapes (JAX symbolic dimensions allowed)."""
    n = max(len(x), len(y))
    x = (1,) * (n - len(x)) + tuple(x)
    y = (1,) * (n - len(y)) + tuple(y)
    out = []
    for i, (p, q) in enumerate(zip(x, y)):
        if _is_one(p):
            out.append(q)
        elif _is_one(q) or dims_equal(p, q):
            out.append(p)
        else:
            raise ValueError(
                f"matmul: batch dimensions do not broadcast: a has shape {a_shape} and b has shape "
                f"{b_shape}; batch dimension {i} is {p} in one and {q} in the other."
            )
    return tuple(out)


def _is_one(d) -> bool:
    return isinstance(d, int) and d == 1


def dims_equal(p, q) -> bool:
    """p == q for ints and JAX symbolic dimensions; False when it cannot be decided."""
    try:
        return bool(p == q)
    except Exception:  # symbolic dimensions whose equality cannot be decided
        return False


def _promote(shape: Shape, strides: Shape, is_a: bool) -> tuple[Shape, Shape]:
    if len(shape) != 1:
        return shape, strides
    if is_a:  # (K,) -> (1, K)
        return (1, shape[0]), (0, strides[0])
    return (shape[0], 1), (strides[0], 0)  # (K,) -> (K, 1)


def _batch_strides(shape: Shape, strides: Shape, batch: Shape) -> list[int]:
    """Strides of an operand over the broadcast batch shape (0 where it is broadcast)."""
    lead = len(batch) - (len(shape) - 2)
    out = [0] * lead
    for size, stride in zip(shape[:-2], strides[:-2]):
        out.append(stride if size != 1 else 0)
    return out


def _merge_batch(batch: Shape, per_operand: list[list[int]]) -> tuple[Shape, list[list[int]]]:
    """Drop unit batch dims and merge neighbours that are contiguous in every operand."""
    dims = [(size, [s[i] for s in per_operand]) for i, size in enumerate(batch) if size != 1]
    merged: list[tuple[int, list[int]]] = []
    for size, strides in dims:
        if merged:
            psize, pstrides = merged[-1]
            if all(ps == s * size for ps, s in zip(pstrides, strides)):
                merged[-1] = (psize * size, strides)
                continue
        merged.append((size, strides))
    shape = tuple(size for size, _ in merged)
    strides_out = [[st[j] for _, st in merged] for j in range(len(per_operand))]
    return shape, strides_out


def _classify(rows: int, cols: int, s_rows: int, s_cols: int, row_name: str, col_name: str):
    """(major, ld) of a rows x cols matrix with the given strides.

    The stride of a mode of extent 1 is never used to address memory, so such a mode takes whatever
    value keeps the layout canonical and 16-element aligned.  A matrix with no unit-stride mode, or
    whose rows overlap, is "strided".
    """
    if rows == 1 and cols == 1:
        return col_name, 16
    if rows == 1:
        if s_cols == 1:
            return col_name, _round16(cols)
        return (row_name, s_cols) if s_cols > 0 else ("strided", 0)
    if cols == 1:
        if s_rows == 1:
            return row_name, _round16(rows)
        return (col_name, s_rows) if s_rows > 0 else ("strided", 0)
    if s_cols == 1 and s_rows >= cols:
        return col_name, s_rows
    if s_rows == 1 and s_cols >= rows:
        return row_name, s_cols
    return "strided", 0


def _round16(x: int) -> int:
    return round_up(x, 16)


#: Bytes per row of an operand copy the pointer route's operand prep makes
#: (``launch._prep_plan``; the XLA route still pads rows to whole 16-byte vectors only): a whole
#: number of 128-byte lines, so that every row starts on a line.  In rows padded only to 16
#: bytes (a 4097-row fp16 copy is 8208 bytes a row) each 128-byte row of a TMA box spans two
#: lines: the sm90 kernel over two such copies ran 386 us, over line-aligned ones 210 us (H100,
#: fp16 4097 x 4095 x 4093 with A M-major; docs/performance.md, 47th session).
COPY_ROW_BYTES = 128


def round_up(x: int, multiple: int) -> int:
    """The smallest multiple of ``multiple`` that is >= ``x``."""
    return -(-x // multiple) * multiple


@lru_cache(maxsize=4096)
def plan_gemm(a_shape: Shape, a_strides: Shape, b_shape: Shape, b_strides: Shape,
              c_strides: Shape | None = None) -> Gemm:
    """Plan ``c = matmul(a, b)`` for the given shapes and strides (in elements).

    ``c_strides`` are the strides of a caller-provided output (of shape ``result_shape``); None
    means a fresh row-major output.  Shapes must be valid (``result_shape`` is called first).
    """
    result_shape(a_shape, b_shape)  # validates
    a_1d, b_1d = len(a_shape) == 1, len(b_shape) == 1
    a_shape, a_strides = _promote(a_shape, a_strides, True)
    b_shape, b_strides = _promote(b_shape, b_strides, False)
    m, k = a_shape[-2:]
    n = b_shape[-1]
    batch = broadcast_shapes(a_shape[:-2], b_shape[:-2])

    # Output strides over (batch..., M, N), with the dims dropped for 1-D operands restored.
    full = batch + (m, n)
    if c_strides is None:
        c_full = row_major_strides(full)
    else:
        c_full = tuple(c_strides)
        if a_1d and b_1d:
            c_full = c_full + (0, 0)
        elif a_1d:
            c_full = c_full[:-1] + (0,) + c_full[-1:]
        elif b_1d:
            c_full = c_full + (0,)

    per_op = [
        _batch_strides(a_shape, a_strides, batch),
        _batch_strides(b_shape, b_strides, batch),
        list(c_full[:-2]),
    ]
    bshape, bstrides = _merge_batch(batch, per_op)
    launch_batch = bshape[-1] if bshape else 1
    outer = bshape[:-1]
    outer_strides = [st[:-1] for st in bstrides]
    last = [st[-1] if bshape else 0 for st in bstrides]

    a_major, lda = _classify(m, k, a_strides[-2], a_strides[-1], "m", "k")
    b_major, ldb = _classify(k, n, b_strides[-2], b_strides[-1], "k", "n")
    c_major, ldc = _classify(m, n, c_full[-2], c_full[-1], "m", "n")

    offsets = []
    for idx in itertools.product(*(range(s) for s in outer)):
        offsets.append(tuple(sum(i * s for i, s in zip(idx, st)) for st in outer_strides))
    offsets = tuple(offsets) if offsets else ((0, 0, 0),)

    a = MatrixLayout(a_major, lda, last[0])
    b = MatrixLayout(b_major, ldb, last[1])
    c = MatrixLayout(c_major, ldc, last[2])
    if c_major == "m":
        # C^T (N x M, unit stride along M) = B^T A^T: B^T is N x K, A^T is K x M.
        bt_major, at_major = transposed_majors(a_major, b_major)
        return Gemm(n, m, k, launch_batch,
                    MatrixLayout(bt_major, ldb, last[1]),
                    MatrixLayout(at_major, lda, last[0]),
                    MatrixLayout("n", ldc, last[2]),
                    tuple((ob, oa, oc) for oa, ob, oc in offsets), True)
    return Gemm(m, n, k, launch_batch, a, b, c, offsets, False)


def row_major_strides(shape: Shape) -> Shape:
    strides, acc = [], 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= max(size, 1)
    return tuple(reversed(strides))


def alignment(itemsize: int, *values: int) -> int:
    """Largest of 16, 8, 4, 2, 1 bytes dividing every value (addresses or byte strides)."""
    bits = 0
    for v in values:
        bits |= v
    for align in (16, 8, 4, 2):
        if bits % align == 0:
            return align
    return 1


#: The largest M, N or L one launch takes; larger problems are split into pieces this size (a
#: power of two, so every piece keeps the base pointer's alignment).
PIECE = 1 << 30


def pieces(gemm: Gemm, piece: int = PIECE):
    """The kernel launches of ``gemm``: ``((oa, ob, oc), (m, n, batch))`` in elements.

    One launch per entry of ``gemm.offsets`` normally; M, N and the batch L are additionally cut
    into pieces of at most ``piece``, so every launch size fits the kernels' 32-bit indices.  K is
    never cut (the kernels do not accumulate into C).
    """
    a, b, c = gemm.a, gemm.b, gemm.c
    a_row = a.ld if a.major == "k" else 1  # elements between rows of A (step along M)
    b_row = b.ld if b.major == "k" else 1  # between rows of B as stored (N, K): step along N
    out = []
    for oa, ob, oc in gemm.offsets:
        for m0 in range(0, gemm.m, piece):
            for n0 in range(0, gemm.n, piece):
                for l0 in range(0, gemm.batch, piece):
                    offsets = (
                        oa + m0 * a_row + l0 * a.batch_stride,
                        ob + n0 * b_row + l0 * b.batch_stride,
                        oc + m0 * c.ld + n0 + l0 * c.batch_stride,
                    )
                    sizes = (min(piece, gemm.m - m0), min(piece, gemm.n - n0),
                             min(piece, gemm.batch - l0))
                    out.append((offsets, sizes))
    return tuple(out)


def pitched_rows(dst_shape, dst_strides, src_shape, src_strides, itemsize: int):
    """(height, width, dst pitch, src pitch) in rows and bytes when ``dst[...] = src`` is one 2-D
    copy: equal shapes of 2 or 3 dimensions, unit-stride rows, row pitches at least a row wide,
    and a leading dimension (if any) that stacks whole matrices (stride = rows x pitch) in both.
    None otherwise (an empty shape too)."""
    if tuple(dst_shape) != tuple(src_shape) or len(dst_shape) not in (2, 3) or 0 in dst_shape:
        return None
    *batch, rows, cols = dst_shape
    width = cols * itemsize
    pitches = []
    for strides in (dst_strides, src_strides):
        *batch_stride, pitch, unit = strides
        if (unit != itemsize and cols > 1) or (rows > 1 and pitch < width):
            return None
        pitch = pitch if rows > 1 else width
        if batch and batch[0] > 1 and batch_stride[0] != rows * pitch:
            return None
        pitches.append(pitch)
    return (batch[0] if batch else 1) * rows, width, pitches[0], pitches[1]
