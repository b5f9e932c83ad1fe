"""The operand copy's straight variant (``kernels/operand_prep.py``, ``k_major``) run on this CPU:
its PTX, as the DSL builds it for sm_90a, executed by ``tests/ptxsim.py`` CTA by CTA.

Each copy checks that D holds X's bits row by row, zeros past K up to D's width, and that
nothing else of D changed (its row and batch padding keep their poison), and
(``ptxsim.SimError``) that no load leaves X's rows (every element of a vector load inside
one), no store leaves D's rows, and shared memory has no race between barriers.  The copies
cover rows starting at every alignment (X at an odd element, rows of an odd length, a row
stride past K), rows of a few elements (many rows per CTA), rows longer than a pass (one row
walked in passes), a batch walked by the grid's y and by one CTA, fp16 and fp32 elements; the
pair with B straight or transposed.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import compile_in_child, needs_dsl

pytestmark = needs_dsl()

#: (dtype, pdl, parts) of the compiled single copies (K-major): copies, and the 3xTF32 split.
VARIANTS = [("float16", True, 1), ("float32", False, 1), ("float32", True, 2)]
#: B's variant (``k_major_b``) of the compiled fp16 pairs, A straight.
PAIRS = [True, False]

_CHILD = r"""
import json, sys
from cutematmul.kernels import operand_prep as K
names = []
for dtype, pdl, parts in json.loads(sys.argv[1]):
    name = f"{dtype}{int(pdl)}{parts}.ptx"
    open(name, "w").write(K.compile_prep(parts, True, dtype, pdl=pdl, keep_ptx=True).__ptx__)
    names.append(name)
pairs = []
for k_major_b in (True, False):
    name = f"pair{int(k_major_b)}.ptx"
    ptx = K.compile_prep(1, True, "float16", pdl=True, k_major_b=k_major_b, keep_ptx=True).__ptx__
    open(name, "w").write(ptx)
    pairs.append([name, K.OperandPrep(1, True, "float16", k_major_b=k_major_b)._smem_bytes()])
print("NAMES=" + json.dumps({"names": names, "pairs": pairs, "threads": K._THREADS,
                             "per_cta": K._VECTORS_PER_CTA,
                             "smem": K.OperandPrep(1, True, "float16")._smem_bytes(),
                             "smem32": K.OperandPrep(1, True, "float32")._smem_bytes()}))
"""


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ptx")
    out = compile_in_child("sm_90a", _CHILD, [list(v) for v in VARIANTS], tmp, prefix="NAMES=")
    ptx = {v: (tmp / name).read_text() for v, name in zip(VARIANTS, out["names"])}
    ptx.update({("pair", b): ((tmp / name).read_text(), smem)
                for b, (name, smem) in zip(PAIRS, out["pairs"])})
    return ptx, out


class _Operand:
    """One operand's X (rows, k, batch), rows ``stride`` apart (K-major) or columns ``stride``
    apart (``k_major`` False: unit stride along rows), starting at element ``at``, and its D
    (rows, width, batch): rows padded to whole 128-byte lines, then one 16-byte vector more
    between rows and between matrices that nothing may write."""

    def __init__(self, ptxsim, name, base, dtype, rows, k, batch, stride=None, at=0,
                 k_major=True, seed=0, parts=1):
        size = np.dtype(dtype).itemsize
        vec = 16 // size
        self.rows, self.k, self.batch, self.at, self.size = rows, k, batch, at, size
        self.parts = parts
        stride = stride or (k if k_major else rows)
        self.strides = (stride, 1) if k_major else (1, stride)
        extent = rows * k if k_major else k * stride
        self.x_batch = extent + 3
        count = at + (batch - 1) * self.x_batch + (rows - 1) * self.strides[0] + (
            k - 1) * self.strides[1] + 1
        rng = np.random.default_rng(seed)
        if parts == 1:  # any bits: the copy moves them unchanged
            self.bits = rng.integers(0, 1 << (8 * size), count, dtype=np.uint64).astype(
                np.uint16 if size == 2 else np.uint32)
        else:  # the 3xTF32 split of Gaussian values, an Inf and a NaN among them
            values = rng.standard_normal(count).astype(np.float32)
            values[-1], values[count // 2] = np.inf, np.nan
            self.bits = values.view(np.uint32)
        valid = {size * self._x(e, r, c) for e in range(batch) for r in range(rows)
                 for c in range(k)}
        self.x = ptxsim.Region("X" + name, base, size * count, valid, element=size)
        self.x.data[:] = self.bits.tobytes()
        # Per part: rows of whole 128-byte lines (a copy), or whole TF32 K-tiles (the split).
        self.part = -(-k // 32) * 32 if parts == 2 else -(-k * size // 128) * 128 // size
        self.width = parts * self.part
        self.ld = self.width + vec
        self.d_batch = rows * self.ld + vec
        valid = {size * (e * self.d_batch + r * self.ld + c)
                 for e in range(batch) for r in range(rows) for c in range(self.width)}
        self.d = ptxsim.Region("D" + name, base + 0x8000000, size * batch * self.d_batch, valid,
                               writable=True, element=size)
        self.d.data[:] = b"\xa5" * len(self.d.data)
        self.vectors = self.part // vec  # per row and part

    def _x(self, e, r, c):
        return self.at + e * self.x_batch + r * self.strides[0] + c * self.strides[1]

    def params(self, ptxsim):
        """X's and D's kernel parameters."""
        return [ptxsim.tensor_param(self.x.base + self.size * self.at,
                                    (self.rows, self.k, self.batch), (*self.strides, self.x_batch)),
                ptxsim.tensor_param(self.d.base, (self.rows, self.width, self.batch),
                                    (self.ld, self.d_batch))]

    def geometry(self, per_cta, k_major):
        """(CTAs per matrix, the two sizes), as ``OperandPrep._geometry`` computes them."""
        if k_major:
            rows_per_cta = max(per_cta // self.vectors, 1)
            return -(-self.rows // rows_per_cta), self.vectors, rows_per_cta
        k_blocks, row_blocks = -(-self.width // 32), -(-self.rows // 32)
        return k_blocks * row_blocks, k_blocks, row_blocks

    def wrong(self):
        """D's elements that differ from X's bits (zeros past K), or that are no longer the
        poison in D's padding."""
        got = np.frombuffer(bytes(self.d.data), self.bits.dtype)
        poison = np.frombuffer(b"\xa5" * self.size, self.bits.dtype)[0]
        wrong = 0
        for i in range(len(got)):
            e, rest = divmod(i, self.d_batch)
            r, c = divmod(rest, self.ld)
            if r < self.rows and c < self.width:
                part, c = divmod(c, self.part)
                want = self.bits[self._x(e, r, c)] if c < self.k else 0
                if self.parts == 2 and c < self.k:
                    want = _split(want)[part]
            else:
                want = poison
            wrong += int(got[i] != want)
        return wrong


def _tf32(bits: int) -> int:
    """fp32 bits rounded to TF32, nearest with ties away from zero; Inf and NaN kept."""
    return bits if bits & 0x7F800000 == 0x7F800000 else (bits + 0x1000) & 0xFFFFE000


def _split(bits) -> tuple[int, int]:
    """The 3xTF32 parts of fp32 ``bits``: big = tf32(x), small = tf32(x - big), 0 where big is
    Inf or NaN."""
    big = _tf32(int(bits))
    if big & 0x7F800000 == 0x7F800000:
        return big, 0
    x, b = np.array([bits, big], np.uint32).view(np.float32)
    return big, _tf32(int(np.array([x - b], np.float32).view(np.uint32)[0]))


def _u32(x: int) -> bytes:
    return int(x).to_bytes(4, "little")


def _copy(ptxsim, ptx, info, dtype, rows, k, batch, stride=None, at=0, grid_y=None, seed=0,
          parts=1):
    """One straight copy, every CTA of the launch; returns the number of wrong elements of D."""
    op = _Operand(ptxsim, "", 0x10000000, dtype, rows, k, batch, stride, at, seed=seed,
                  parts=parts)
    blocks, vectors, rows_per_cta = op.geometry(info["per_cta"], True)
    grid_y = batch if grid_y is None else grid_y
    params = dict(enumerate(op.params(ptxsim) + [_u32(vectors), _u32(rows_per_cta)]))
    smem = info["smem"] if op.size == 2 else info["smem32"]
    sim = ptxsim.Sim(ptx, params, [op.x, op.d], smem, threads=info["threads"])
    for y in range(grid_y):
        for cta in range(blocks):
            sim.run_cta(cta, y, (blocks, grid_y))
    return op.wrong()


#: (rows, k, batch, keyword arguments): see the module docstring.
COPIES = [
    (5, 9, 1, dict(at=1)),  # 9-element rows from an odd element: every row start differs
    (3, 37, 2, dict(stride=41, at=3)),  # a row stride past K; a batch on the grid's y
    (70, 3, 2, dict(at=1, grid_y=1)),  # rows of a few elements; one CTA walks the batch
    (2, 1, 1, dict(at=1)),  # one element per row
    (2, 4200, 1, dict(at=1)),  # fp16 rows of 4224 (528 vectors): a pass and a run of a pass
]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v[0]}-parts{v[2]}")
def test_the_straight_copy_reads_inside_x_and_writes_d_whole(compiled, variant):
    """Copies keep X's bits; the 3xTF32 split writes big = tf32(x) and small = tf32(x - big)
    (an Inf or NaN: itself and 0), each part zero past K up to its whole TF32 K-tiles."""
    import ptxsim

    ptx, info = compiled
    for i, (rows, k, batch, extra) in enumerate(COPIES):
        if variant[0] == "float32" and k > 2048:
            k = 2100  # fp32 rows past a pass: 2112 wide, 528 vectors
        wrong = _copy(ptxsim, ptx[variant], info, variant[0], rows, k, batch, seed=i,
                      parts=variant[2], **extra)
        assert wrong == 0, (variant, (rows, k, batch, extra), wrong)


@pytest.mark.parametrize("k_major_b", PAIRS, ids=lambda b: "straight" if b else "transposed")
def test_the_pair_copies_both_operands_in_one_launch(compiled, k_major_b):
    """A straight (9-element rows from an odd element) and B straight or transposed (unit
    stride along its 40 rows, columns 43 apart), both batched, A's CTAs first along x."""
    import ptxsim

    ptx, info = compiled
    code, smem = ptx[("pair", k_major_b)]
    a = _Operand(ptxsim, "a", 0x10000000, "float16", 70, 9, 2, at=1, seed=1)
    b = _Operand(ptxsim, "b", 0x40000000, "float16", 40, 37, 2,
                 stride=None if k_major_b else 43, at=3, k_major=k_major_b, seed=2)
    blocks_a, a0, a1 = a.geometry(info["per_cta"], True)
    blocks_b, b0, b1 = b.geometry(info["per_cta"], k_major_b)
    params = dict(enumerate(a.params(ptxsim) + b.params(ptxsim)
                            + [_u32(x) for x in (blocks_a, a0, a1, b0, b1)]))
    sim = ptxsim.Sim(code, params, [a.x, a.d, b.x, b.d], smem, threads=info["threads"])
    for y in range(2):
        for cta in range(blocks_a + blocks_b):
            sim.run_cta(cta, y, (blocks_a + blocks_b, 2))
    assert (a.wrong(), b.wrong()) == (0, 0)
