"""The FMA row-streaming kernel (``kernels/simt_gemv.py``) run on this CPU: its PTX, as the DSL
builds it for sm_90a, executed by ``tests/ptxsim.py`` CTA by CTA over small products.

Each product checks, exactly, that every output of every split equals the float64 product of
its run of K (the inputs are small integers, so the fp32 FMAs are exact), that every element
of C is stored once and nothing else is, and (``ptxsim.SimError``) that no load or store
leaves its array or lands on padding (every element of a vector load on an element), and that
shared memory has no race between barriers.  The variants cover every row count, fp32 (most)
and one fp16 and one bf16, A K- and M-major, B N-major (lanes along N, sums meeting in shared
memory) and K-major (lanes along K, butterfly shuffles), fp32 partials and C itself, and B
(and a K-major A) read by 4-element vectors and by scalars.  The products cover tails in M
(fewer rows than a tile, several row tiles), N (a last partial column tile, N odd and N a
multiple of 4) and K (not a multiple of 4), splits with an empty last one, batches with a
broadcast A or B, padded leading dimensions, B at an odd element, and inf and NaN in the last
row of A and column of B, which the kernel's clamped reads repeat into the rows past M and
columns past N whose sums it must not store.  Where N-major B is read by vectors and N is a
multiple of 4, the lanes of the last column tile past N read N's last vector: B's rows there
are padded, so a vector read past N lands on padding, and the test checks that that last
vector was indeed read by them.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import compile_ptx, needs_dsl

pytestmark = needs_dsl()

#: (rows, dtype, A major, B major, fp32 partials, align_a, align_b): the compiled variants (PDL
#: on).  Never an M-major A with a K-major B (``configs.simt.gemv_reads``).  An alignment of 4
#: elements reads B by vectors (and a K-major A too where B is K-major and read by vectors).
VARIANTS = [(1, "float32", "k", "n", False, 4, 4), (2, "float32", "m", "n", True, 1, 4),
            (4, "float32", "k", "n", True, 1, 1), (8, "float32", "m", "n", False, 1, 1),
            (8, "float32", "k", "n", True, 4, 4),
            (1, "float16", "k", "k", True, 4, 4), (2, "bfloat16", "k", "k", False, 1, 1),
            (4, "float32", "k", "k", True, 1, 4), (8, "float32", "k", "k", False, 4, 4)]

_CHILD = r"""
import dataclasses, json, sys
from cutematmul.configs import simt
from cutematmul.kernels.compile import compile_gemm
from cutematmul.kernels.simt_gemv import SimtGemv
names = []
for rows, dtype, a_major, b_major, partials, align_a, align_b in json.loads(sys.argv[1]):
    config = dataclasses.replace(simt.gemv_config(rows), pdl=True, partials=partials)
    # C's alignment as the dispatcher compiles it: a workspace of partials has rows of whole
    # 16-byte vectors (``dispatch.schedule``), C itself is stored element by element.
    align_c = 16 // {"float32": 4}.get(dtype, 2) if partials else 1
    kernel = SimtGemv(config, dtype, a_major, b_major, align_a, align_b, align_c, 132)
    name = f"{rows}{dtype}{a_major}{b_major}{int(partials)}{align_a}{align_b}.ptx"
    open(name, "w").write(compile_gemm(kernel, keep_ptx=True).__ptx__)
    names.append(name)
print("NAMES=" + json.dumps({"names": names}))
"""


def _run(ptxsim, ptx, variant, m, n, k, batch, splits, pad=(0, 0, 0), shared=(False, False),
         at=0, poison_a=None, poison_b=None, seed=0):
    """Every CTA of one product; returns the number of wrong or missing outputs."""
    from cutematmul.configs import simt

    rows, dtype, a_major, b_major, partials, align_a, align_b = variant
    config = simt.gemv_config(rows)
    rng = np.random.default_rng(seed)
    reg_a, full_a, st_a, _ = ptxsim.operand("A", 0x10000000, m, k, batch, a_major == "m",
                                            pad[0], shared[0], rng, dtype, align_a,
                                            poison=poison_a)
    reg_b, full_b, st_b, offset_b = ptxsim.operand("B", 0x20000000, n, k, batch,
                                                   b_major == "n", pad[1], shared[1], rng,
                                                   dtype, align_b, at, poison_b)
    # fp32 partials: in a workspace whose strides are whole vectors of the inputs' dtype
    # (what the compiled kernel assumes: ``_CHILD``).
    c_dtype, align_c = ("float32", 16 // ptxsim.ELEMENT_BYTES[dtype]) if partials else (dtype, 1)
    # The N-major variant's allocation: every warp's (rows, tile_n) fp32 sums.
    smem = 4 * config.tile_n * rows * (config.threads // 32)
    _, wrong = ptxsim.row_streaming(
        ptx, (reg_a, full_a, st_a), (reg_b, full_b, st_b), m, n, k, batch, splits, rows,
        config.tile_n, config.threads, smem, dtype, c_dtype, simt._GEMV_GRANULE, align_c=align_c,
        pad_c=pad[2])
    if b_major == "n" and align_b >= 4 and n % 4 == 0 and n % config.tile_n:
        # Lanes past N in the last column tile read N's last vector instead: more often than
        # the vector before it, which only its own lane reads.
        last, before = (reg_b.loads.get(ptxsim.ELEMENT_BYTES[dtype] * offset_b(n - d, 0, 0), 0)
                        for d in (4, 8))
        assert last > before > 0, ("the clamped vector reads did not run", last, before)
    return wrong


def _products(ptxsim, variant):
    """(M, N, K, batch, splits, keyword arguments) for ``variant``; each product runs two or
    three CTAs (the interpreter runs about a second of Python per CTA)."""
    rows, b_major, align_b = variant[0], variant[3], variant[6]
    odd = dict(at=1) if align_b == 1 else {}  # B at an odd element where it is read by scalars
    return [
        # Tails in M, N (odd: 3 columns in the second, last tile) and K = 45 (B N-major: the
        # warps' runs of 16 k-rows, the third 13 long, the rest empty; K-major: one predicated
        # step, less than 128).
        (max(1, rows - 3), 131, 45, 1, 1, odd),
        # Two row tiles (the second of one row); N a multiple of 4, its only tile partial;
        # K = 165 (B N-major: runs of 32 k-rows, the sixth 5 long; K-major: a whole step of
        # 128 and a predicated one); padded lines (B's by at least one vector: a read past N
        # lands on padding); NaN in A's last row and B's last column, which the clamped reads
        # repeat into the rows past M and columns past N (never stored).
        (rows + 1, 36, 165, 1, 1, dict(pad=(1, 4, 2), poison_a=ptxsim.nan_in_last_line,
                                       poison_b=ptxsim.nan_in_last_line)),
        # A batch of 2 with A (B N-major) or B (B K-major) broadcast.
        (rows, 20, 33, 2, 1, dict(shared=(True, False) if b_major == "n" else (False, True),
                                  pad=(3, 5, 2))),
        # 3 splits of K = 129: 128 k, 1 and none; inf at K's end.
        (max(1, rows - 1), 20, 129, 1, 3, dict(poison_a=ptxsim.inf_at_k_end,
                                               poison_b=ptxsim.inf_at_k_end, **odd)),
    ]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    return compile_ptx(tmp_path_factory, _CHILD, VARIANTS)[0]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v[0]}{v[1][0]}{v[1][-2:]}"
                         f"{v[2]}{v[3]}{'-partials' if v[4] else '-c'}-align{v[5]}{v[6]}")
def test_every_output_exact_and_every_access_inside_its_array(compiled, variant):
    import ptxsim

    for i, (m, n, k, batch, splits, extra) in enumerate(_products(ptxsim, variant)):
        wrong = _run(ptxsim, compiled[variant], variant, m, n, k, batch, splits, seed=i,
                     **extra)
        assert wrong == 0, (variant, (m, n, k, batch, splits), wrong)
