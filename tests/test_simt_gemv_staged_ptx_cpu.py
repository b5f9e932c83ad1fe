"""The staged row-streaming kernel (``kernels/simt_gemv_staged.py``) run on this CPU: its PTX, as
the DSL builds it for sm_90a, executed by ``tests/ptxsim.py`` CTA by CTA over small products.

Each product checks, exactly, that every output of every split equals the float64 product of
its run of K (the inputs are small integers, so the fp32 FMAs are exact), that every element
of C is stored once and nothing else is, and (``ptxsim.SimError``) that no load or store
leaves its array or lands on padding, that every ``cp.async`` reads only elements (a zero
source count still addresses one), and that shared memory has no race between barriers (a
copy's bytes count as written both when it is issued and when its group lands).  The
variants cover both row counts, several column counts, A K- and M-major, A and B read by
16-byte vectors and element by element, fp32 partials and C itself.  The products cover
tails in M (fewer rows than a tile, several row tiles), N (a last partial column tile) and K
(a partial stage, K not a multiple of 4), several stages, splits with an empty last one,
batches with a broadcast B, padded leading dimensions, B at an odd element, and inf and NaN
in A's last row and B's last column, which rows past M and columns past N must not store.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import compile_ptx, needs_dsl

pytestmark = needs_dsl()

#: (rows, columns, A major, align_a, align_b, fp32 partials): the compiled variants (PDL on).
VARIANTS = [(32, 128, "k", 4, 4, True), (16, 128, "k", 1, 1, False),
            (16, 64, "m", 1, 4, True), (32, 64, "m", 4, 1, False)]

_CHILD = r"""
import dataclasses, json, sys
from cutematmul.configs import simt
from cutematmul.kernels.compile import compile_gemm
from cutematmul.kernels.simt_gemv_staged import SimtGemvStaged
names = []
for rows, cols, a_major, align_a, align_b, partials in json.loads(sys.argv[1]):
    config = simt.staged_config(rows, cols)
    assert config.pdl
    config = dataclasses.replace(config, partials=partials)
    # C's alignment as the dispatcher compiles it: a workspace of partials has rows of whole
    # 16-byte vectors (``dispatch.schedule``), C itself is stored element by element.
    kernel = SimtGemvStaged(config, "float32", a_major, "k", align_a, align_b,
                            4 if partials else 1, 132)
    name = f"{rows}x{cols}{a_major}{align_a}{align_b}{int(partials)}.ptx"
    open(name, "w").write(compile_gemm(kernel, keep_ptx=True).__ptx__)
    names.append(name)
print("NAMES=" + json.dumps({"names": names}))
"""


def _run(ptxsim, ptx, variant, m, n, k, batch, splits, pad=(0, 0, 0), shared=(False, False),
         at=0, poison_a=None, poison_b=None, seed=0):
    """Every CTA of one product; returns the number of wrong or missing outputs."""
    from cutematmul.configs import simt

    rows, cols, a_major, align_a, align_b, partials = variant
    config = simt.staged_config(rows, cols)
    rng = np.random.default_rng(seed)
    reg_a, full_a, st_a, _ = ptxsim.operand("A", 0x10000000, m, k, batch, a_major == "m",
                                            pad[0], shared[0], rng, "float32", align_a,
                                            poison=poison_a)
    reg_b, full_b, st_b, _ = ptxsim.operand("B", 0x20000000, n, k, batch, False, pad[1],
                                            shared[1], rng, "float32", align_b, at, poison_b)
    _, wrong = ptxsim.row_streaming(
        ptx, (reg_a, full_a, st_a), (reg_b, full_b, st_b), m, n, k, batch, splits, rows, cols,
        config.threads, config.smem_bytes(), "float32", "float32", simt._GEMV_GRANULE,
        align_c=4 if partials else 1, pad_c=pad[2])
    return wrong


def _products(ptxsim, variant):
    """(M, N, K, batch, splits, keyword arguments) for ``variant``: one to three CTAs each
    (the interpreter runs a few seconds of Python per CTA)."""
    rows, cols, align_b = variant[0], variant[1], variant[4]
    odd = dict(at=1) if align_b == 1 else {}  # B at an odd element where it is read by scalars
    return [
        # Tails in M and N (3 columns in the second, last tile); K = 45: one partial stage,
        # its last vector one element long.
        (rows - 3, cols + 3, 45, 1, 1, odd),
        # Two row tiles (the second of one row); N inside one partial tile; K = 165: two
        # whole stages and a partial one (three stages: the ring wraps); padded lines; NaN
        # in A's last row and B's last column (rows past M, columns past N: never stored).
        (rows + 1, 36, 165, 1, 1, dict(pad=(1, 4, 2), poison_a=ptxsim.nan_in_last_line,
                                       poison_b=ptxsim.nan_in_last_line)),
        # A batch of 2 with B broadcast.
        (rows, 20, 33, 2, 1, dict(shared=(False, True), pad=(3, 5, 2))),
        # 3 splits of K = 129: 128 k, 1 and none; inf at K's end.
        (rows - 7, 20, 129, 1, 3, dict(poison_a=ptxsim.inf_at_k_end,
                                       poison_b=ptxsim.inf_at_k_end, **odd)),
    ]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    return compile_ptx(tmp_path_factory, _CHILD, VARIANTS)[0]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v[0]}x{v[1]}{v[2]}"
                         f"-align{v[3]}{v[4]}{'-partials' if v[5] else '-c'}")
def test_every_output_exact_and_every_access_inside_its_array(compiled, variant):
    import ptxsim

    for i, (m, n, k, batch, splits, extra) in enumerate(_products(ptxsim, variant)):
        wrong = _run(ptxsim, compiled[variant], variant, m, n, k, batch, splits, seed=i,
                     **extra)
        assert wrong == 0, (variant, (m, n, k, batch, splits), wrong)
