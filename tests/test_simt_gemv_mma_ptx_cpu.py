"""The tensor-core row-streaming kernel (``kernels/simt_gemv_mma.py``) run on this CPU: its PTX,
as the DSL builds it for sm_90a, executed by ``tests/ptxsim.py`` CTA by CTA over small products.

Each product checks, exactly, that every output of every split equals the float64 product of
its run of K (the inputs are small integers, so fp32 sums are exact), that every element of C
is stored once and nothing else is, and (``ptxsim.SimError``) that no load, prefetch or store
leaves its array or lands on padding, and that shared memory has no race between barriers.
The products cover every row count and operand major, fp16 and bf16, fp32 partials and C
itself, tails in M, N and K, splits with an empty last one, batches with a broadcast operand,
padded leading dimensions, B at an odd element, and inf and NaN past the products' ends (in
rows past M and columns past N that the kernel reads but must not store, and at K's end).
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import compile_ptx, needs_dsl

pytestmark = needs_dsl()

#: (rows, dtype, A major, B major, fp32 partials): the compiled variants (PDL on).
VARIANTS = [(8, "float16", "k", "k", True), (8, "bfloat16", "m", "n", True),
            (16, "float16", "k", "n", False), (16, "bfloat16", "m", "k", True),
            (32, "float16", "m", "n", True), (32, "bfloat16", "k", "n", False),
            (64, "float16", "k", "n", True), (128, "bfloat16", "k", "n", True),
            (128, "float16", "m", "k", False)]

_CHILD = r"""
import dataclasses, json, sys
from cutematmul.configs import simt
from cutematmul.kernels.compile import compile_gemm
from cutematmul.kernels.simt_sgemm import Kernel
names = []
for rows, dtype, a_major, b_major, partials in json.loads(sys.argv[1]):
    config = dataclasses.replace(simt.mma_config(rows), pdl=True, partials=partials)
    kernel = Kernel(config, dtype, a_major, b_major, 1, 1, 4 if partials else 1, 132)
    name = f"{rows}{dtype}{a_major}{b_major}{int(partials)}.ptx"
    open(name, "w").write(compile_gemm(kernel, keep_ptx=True).__ptx__)
    names.append(name)
from cutematmul.kernels import simt_gemv_mma as K
# Shared bytes per row of a tile: the chunk's 2-byte elements in every stage.
print("NAMES=" + json.dumps({"names": names, "row_bytes": K._CHUNK_K * K._STAGES * 2}))
"""


def _run(ptxsim, ptx, row_bytes, variant, m, n, k, batch, splits, pad=(0, 0, 0),
         shared=(False, False), at=0, poison_a=None, poison_b=None, seed=0):
    """Every CTA of one product (``row_bytes`` of shared memory per row of the CTA's tiles);
    returns the number of wrong or missing outputs."""
    rows, dtype, a_major, b_major, partials = variant
    rng = np.random.default_rng(seed)
    reg_a, full_a, st_a, _ = ptxsim.operand("A", 0x10000000, m, k, batch, a_major == "m",
                                            pad[0], shared[0], rng, dtype, poison=poison_a)
    reg_b, full_b, st_b, _ = ptxsim.operand("B", 0x20000000, n, k, batch, b_major == "n",
                                            pad[1], shared[1], rng, dtype, at=at,
                                            poison=poison_b)
    from cutematmul.configs import simt

    # Both operands' stages (the kernel's allocation): 128 columns of B^T and the rows of A.
    sim, wrong = ptxsim.row_streaming(
        ptx, (reg_a, full_a, st_a), (reg_b, full_b, st_b), m, n, k, batch, splits, rows, 128,
        simt.mma_config(rows).threads, (128 + rows) * row_bytes, dtype,
        "float32" if partials else dtype, 128, pad_c=pad[2])
    assert set(sim.prefetches) <= {"B"}, sim.prefetches
    return wrong


def _products(ptxsim, rows):
    """(M, N, K, batch, splits, keyword arguments) for a CTA of ``rows`` rows; each product
    runs at most a few CTAs (the interpreter runs ~1 s of Python per CTA)."""
    return [
        (max(1, rows - 3), 37, 45, 1, 1, dict(at=1)),  # tails in M, N and K; B at an odd element
        (rows + 3, 130, 40, 1, 1, dict(pad=(1, 3, 2))),  # two row and two column tiles
        (rows, 20, 33, 2, 1, dict(shared=(True, False), pad=(3, 5, 2), at=1)),
        (2, 20, 260, 1, 3, dict(poison_a=ptxsim.inf_at_k_end, poison_b=ptxsim.inf_at_k_end)),
        # 4 splits of K = 129, the last empty; NaN in A's last row and B's last column, which
        # the clamped reads repeat into the rows past M and columns past N (never stored).
        (rows - 1, 9, 129, 1, 4, dict(poison_a=ptxsim.nan_in_last_line,
                                      poison_b=ptxsim.nan_in_last_line)),
    ]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    ptx, out = compile_ptx(tmp_path_factory, _CHILD, VARIANTS)
    return ptx, out["row_bytes"]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v[0]}{v[1][:2]}{v[2]}{v[3]}"
                         f"{'-partials' if v[4] else '-c'}")
def test_every_output_exact_and_every_access_inside_its_array(compiled, variant):
    import ptxsim

    ptx, row_bytes = compiled
    for i, (m, n, k, batch, splits, extra) in enumerate(_products(ptxsim, variant[0])):
        wrong = _run(ptxsim, ptx[variant], row_bytes, variant, m, n, k, batch, splits, seed=i,
                     **extra)
        assert wrong == 0, (variant, (m, n, k, batch, splits), wrong)
