"""The split-K reduction compiles for sm_80 and sm_90a (no GPU needed) into plain fp32 adds.

Its PTX must read the fp32 partials, add them in fp32 and convert once to the output dtype, with
no atomics (the reduction is deterministic by construction: a fixed order, one thread per output).
"""

from __future__ import annotations

import pytest

from helpers import compile_in_child, needs_dsl

pytestmark = needs_dsl()

_CHILD = r"""
import json, re, sys
from cutematmul.kernels.splitk_reduce import compile_reduce

PATTERNS = {
    "load_f32": r"\bld\.global(?:\.\w+)*\.(?:f32|b32)",
    "add_f32": r"\badd(?:\.rn)?\.f32",
    "cvt_f16": r"\bcvt\.rn\.f16\.f32",
    "cvt_bf16": r"\bcvt\.rn\.bf16\.f32",
    "atom": r"\b(?:atom|red)\.",
    "local": r"\.local\b",
    "pdl_wait": r"\bgriddepcontrol\.wait\b",
    "pdl_launch": r"\bgriddepcontrol\.launch_dependents\b",
}
out = {}
dtypes, pdl = json.loads(sys.argv[1])
for dtype in dtypes:
    ptx = compile_reduce(dtype, pdl=pdl, keep_ptx=True).__ptx__
    out[dtype] = {k: len(re.findall(p, ptx)) for k, p in PATTERNS.items()}
print("COUNTS=" + json.dumps(out))
"""


@pytest.mark.parametrize("arch, pdl", [("sm_80", False), ("sm_90a", True)])
def test_reduce_compiles_to_fp32_adds_without_atomics(arch, pdl, tmp_path):
    """On sm_90a as the dispatcher builds it (``dispatch.reduce_key``): a dependent launch that
    waits once for the GEMM before it, then lets the next kernel launch."""
    dtypes = ["float16", "bfloat16", "float32"]
    counts = compile_in_child(arch, _CHILD, [dtypes, pdl], tmp_path)
    assert set(counts) == set(dtypes)
    for dtype, c in counts.items():
        assert (c["pdl_wait"], c["pdl_launch"]) == ((1, 1) if pdl else (0, 0)), f"{dtype}: {c}"
        assert c["load_f32"] >= 1, f"{dtype}: no fp32 loads of the partials: {c}"
        assert c["add_f32"] >= 1, f"{dtype}: no fp32 adds: {c}"
        assert c["atom"] == 0, f"{dtype}: atomics make the sum order nondeterministic: {c}"
        assert c["local"] == 0, f"{dtype}: {c}"
    assert counts["float16"]["cvt_f16"] >= 1 and counts["bfloat16"]["cvt_bf16"] >= 1, counts
