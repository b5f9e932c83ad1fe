"""The split-K reduction compiles for sm_80 and sm_90a (no GPU needed) into plain fp32 adds.

Its PTX must read the fp32 partials, add them in fp32 and convert once to the output dtype, with
no atomics (the reduction is deterministic by construction: a fixed order, whether one thread
sums an output or several lanes share its splits and add their sums in a fixed butterfly of warp
shuffles).  ``dispatch.reduce_lanes``, the host's choice of lanes, is checked here too.  Its
16-bit variant (``dispatch.copied_c``: W of C's own dtype) reads 16-bit values and writes them
back unchanged.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from helpers import compile_in_child, needs_dsl

pytestmark = needs_dsl()

_CHILD = r"""
import json, re, sys
from cutematmul.kernels.splitk_reduce import compile_reduce

PATTERNS = {
    "load_f32": r"\bld\.global(?:\.\w+)*\.(?:f32|b32)",
    "load_b16": r"\bld\.global(?:\.\w+)*\.(?:b16|u16|s16|f16|bf16)\b",
    "div": r"\b(?:div|rem)\.",
    "store_b16": r"\bst\.global(?:\.\w+)*\.(?:b16|u16|s16|f16|bf16)\b",
    "add_f32": r"\badd(?:\.rn)?\.f32",
    "cvt_f16": r"\bcvt\.rn\.f16\.f32",
    "cvt_bf16": r"\bcvt\.rn\.bf16\.f32",
    "atom": r"\b(?:atom|red)\.",
    "shfl_bfly": r"\bshfl\.sync\.bfly\.b32",
    "local": r"\.local\b",
    "pdl_wait": r"\bgriddepcontrol\.wait\b",
    "pdl_launch": r"\bgriddepcontrol\.launch_dependents\b",
}
out = {}
dtypes, pdl, copy = json.loads(sys.argv[1])
for dtype in dtypes:
    ptx = compile_reduce(dtype, pdl=pdl, w_dtype=dtype if copy else "float32",
                         keep_ptx=True).__ptx__
    out[dtype] = {k: len(re.findall(p, ptx)) for k, p in PATTERNS.items()}
print("COUNTS=" + json.dumps(out))
"""


@pytest.mark.parametrize("arch, pdl", [("sm_80", False), ("sm_90a", True)])
def test_reduce_compiles_to_fp32_adds_without_atomics(arch, pdl, tmp_path):
    """On sm_90a as the dispatcher builds it (``dispatch.reduce_key``): a dependent launch that
    waits once for the GEMM before it, then lets the next kernel launch."""
    dtypes = ["float16", "bfloat16", "float32"]
    counts = compile_in_child(arch, _CHILD, [dtypes, pdl, False], tmp_path)
    assert set(counts) == set(dtypes)
    for dtype, c in counts.items():
        assert (c["pdl_wait"], c["pdl_launch"]) == ((1, 1) if pdl else (0, 0)), f"{dtype}: {c}"
        assert c["load_f32"] >= 1, f"{dtype}: no fp32 loads of the partials: {c}"
        assert c["add_f32"] >= 1, f"{dtype}: no fp32 adds: {c}"
        assert c["atom"] == 0, f"{dtype}: atomics make the sum order nondeterministic: {c}"
        assert c["shfl_bfly"] == 5, f"{dtype}: the lanes' butterfly, one shuffle per stage: {c}"
        assert c["local"] == 0, f"{dtype}: {c}"
    assert counts["float16"]["cvt_f16"] >= 1 and counts["bfloat16"]["cvt_bf16"] >= 1, counts


def test_reduce_of_16_bit_c_copies_rows_without_divisions(tmp_path):
    """The copy of an unsplit product's C from our padded rows (``dispatch.copied_c``), as the
    dispatcher builds it on sm_90a: ``_COPY_UNROLL`` 16-bit loads of W then as many 16-bit
    stores into C per step, no fp32 loads, no atomics, no local memory, divisions only for the
    thread's row and column (none per element), and one dependent-launch wait; a W of another
    dtype than C's (or fp32) is refused."""
    from cutematmul.dispatch import copied_c, reduce_key
    from cutematmul.kernels.splitk_reduce import _COPY_UNROLL

    dtypes = ["float16", "bfloat16"]
    counts = compile_in_child("sm_90a", _CHILD, [dtypes, True, True], tmp_path)
    for dtype, c in counts.items():
        assert c["load_b16"] == _COPY_UNROLL and c["load_f32"] == 0, f"{dtype}: {c}"
        assert c["store_b16"] == _COPY_UNROLL, f"{dtype}: {c}"
        assert c["div"] <= 2, f"{dtype}: {c}"
        assert c["atom"] == 0 and c["local"] == 0, f"{dtype}: {c}"
        assert (c["pdl_wait"], c["pdl_launch"]) == (1, 1), f"{dtype}: {c}"
    assert reduce_key((9, 0), "float16", "float16").w_dtype == "float16"
    with pytest.raises(ValueError, match="fp32 partials or C's own dtype"):
        from cutematmul.kernels.splitk_reduce import SplitKReduce

        SplitKReduce("float16", w_dtype="bfloat16")
    from cutematmul.configs.sm90 import Config
    from cutematmul.dispatch import KernelKey

    # A swapped tile cannot store such a C itself: our padded rows, then the copy.
    swapped = Config(tile_m=128, tile_n=192, swap=True)
    key = KernelKey("sm90", "sm_90a", "bfloat16", "k", "n", 8, 8, 1, swapped, 132)
    gemm, reduce = copied_c((9, 0), key)
    assert gemm.align_c == 8 and gemm.config == key.config
    assert (reduce.dtype, reduce.w_dtype, reduce.pdl) == ("bfloat16", "bfloat16", True)
    # A data-parallel unswapped tile stores it itself: the kernel alone.
    plain = replace(key, config=Config())
    assert copied_c((9, 0), plain) == (plain,)


def test_reduce_lanes_share_splits_only_among_few_outputs():
    """One lane per output where the outputs fill the machine; a power of two up to 32 (and up
    to the split count) where a few outputs sum many splits."""
    from cutematmul.dispatch import REDUCE_THREADS, reduce_lanes

    assert reduce_lanes(REDUCE_THREADS, 64) == 1
    assert reduce_lanes(32 * 4096, 16) == 1
    assert reduce_lanes(28 * 68, 64) == 32
    assert reduce_lanes(28 * 68, 6) == 4  # no more lanes than splits
    assert reduce_lanes(1, 1) == 1
    for outputs in (1, 7, 1000, 5000, 40000, 70000):
        for splits in (2, 3, 16, 64, 512):
            lanes = reduce_lanes(outputs, splits)
            assert lanes & (lanes - 1) == 0 and 1 <= lanes <= min(32, splits), (outputs, splits)
            assert lanes == min(32, 1 << (splits.bit_length() - 1)) or (
                outputs * lanes >= REDUCE_THREADS), (outputs, splits, lanes)
