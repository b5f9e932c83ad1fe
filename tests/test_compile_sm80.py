"""The sm80 HGEMM compiles for every dtype and operand major, with the instructions it is built on.

CPU only: the CuTe DSL fixes its target architecture when it is imported, so each target is
compiled in a child Python with ``CUTE_DSL_ARCH`` set, which prints PTX instruction counts as
JSON.  Nothing is launched.
"""

from __future__ import annotations

from helpers import compile_in_child, needs_dsl

pytestmark = needs_dsl()

# Runs in the child: compile each (dtype, a_major, b_major) of argv[1] and count instructions.
_CHILD = r"""
import json, re, sys
import cutlass
from cutematmul.kernels.compile import compile_gemm
from cutematmul.kernels.sm80_hgemm import Sm80Config, Sm80Hgemm

PATTERNS = {
    "mma_f16": r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32",
    "mma_bf16": r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32",
    "ldmatrix": r"\bldmatrix\.sync\.aligned\.m8n8\.x4\.",
    "ldmatrix_trans": r"\bldmatrix\.sync\.aligned\.m8n8\.x4\.trans\.",
    "cp_async_any": r"\bcp\.async\.c[ag]\.shared\.global\b",
    "cp_async_cg16": r"\bcp\.async\.cg\.shared\.global \[[^\]]+\], \[[^\]]+\], 16\b",
    "st_global_v4": r"\bst\.global\.v4\.",
    "local": r"\.local\b",
}
cfg = Sm80Config()
out = {}
for dtype, a_major, b_major in json.loads(sys.argv[1]):
    kernel = Sm80Hgemm(cfg, dtype.lower(), a_major, b_major, 8, 8, 8, 132)
    ptx = compile_gemm(kernel, keep_ptx=True).__ptx__
    out[f"{dtype}-{a_major}{b_major}"] = {k: len(re.findall(p, ptx)) for k, p in PATTERNS.items()}
print("COUNTS=" + json.dumps(out))
"""

COMBOS = [
    (dtype, a_major, b_major)
    for dtype in ("Float16", "BFloat16")
    for a_major in ("k", "m")
    for b_major in ("k", "n")
]

# MMAs in one k-slice of the default 128x128x32 tile over 4 warps: (128/16) * (128/8) * (32/16) / 4.
MMA_PER_SLICE = 64


def _compile_in_child(arch: str, combos, tmp_path) -> dict:
    return compile_in_child(arch, _CHILD, combos, tmp_path)


def _check(name: str, counts: dict) -> None:
    dtype, majors = name.split("-")
    a_major, b_major = majors
    mma = counts["mma_bf16" if dtype == "BFloat16" else "mma_f16"]
    other = counts["mma_f16" if dtype == "BFloat16" else "mma_bf16"]
    assert mma > 0 and mma % MMA_PER_SLICE == 0, f"{name}: {mma} m16n8k16 MMAs"
    assert other == 0, f"{name}: MMAs of the wrong input type"
    assert counts["ldmatrix"] > 0, f"{name}: no ldmatrix.x4"
    trans = counts["ldmatrix_trans"]
    if a_major == "k" and b_major == "k":
        assert trans == 0, f"{name}: K-major operands need no transposed ldmatrix"
    elif a_major == "m" and b_major == "n":
        assert trans == counts["ldmatrix"], f"{name}: every ldmatrix should transpose"
    else:
        assert 0 < trans < counts["ldmatrix"], f"{name}: one operand's ldmatrix should transpose"
    assert counts["cp_async_any"] > 0, f"{name}: no cp.async"
    assert counts["cp_async_cg16"] == counts["cp_async_any"], (
        f"{name}: a cp.async is not 16-byte .cg")
    assert counts["st_global_v4"] > 0, f"{name}: no 128-bit stores of C"
    assert counts["local"] == 0, f"{name}: local memory (register spills) in the PTX"


def test_sm80_compiles_all_dtypes_and_majors(tmp_path):
    counts = _compile_in_child("sm_80", COMBOS, tmp_path)
    assert sorted(counts) == sorted(f"{d}-{a}{b}" for d, a, b in COMBOS)
    for name, c in counts.items():
        _check(name, c)


def test_sm80_kernel_compiles_for_sm90a(tmp_path):
    combos = [("Float16", "k", "k"), ("BFloat16", "m", "n")]
    for name, c in _compile_in_child("sm_90a", combos, tmp_path).items():
        _check(name, c)


_CHILD_CONFIGS = r"""
import json
from cutematmul.kernels.sm80_hgemm import Sm80Config, choose_config, supports

bad = [
    dict(tile_k=16), dict(tile_m=96), dict(stages=1), dict(warps_m=3),
    dict(tile_m=256, tile_n=256), dict(tile_m=32, warps_m=4),
    dict(tile_k=64, stages=8, tile_n=256, warps_n=4),
]
errors = []
for kw in bad:
    try:
        Sm80Config(**kw).validate()
        errors.append(None)
    except ValueError as e:
        errors.append(str(e))
chosen = {}
for m, n, k, l in [(1, 1, 1, 1), (8192, 8192, 8192, 1), (4096, 4096, 4096, 1), (128, 4096, 64, 1),
                   (33, 17, 5, 3)]:
    cfg = choose_config(m, n, k, l, 132)
    cfg.validate()
    chosen[f"{m}x{n}x{k}x{l}"] = cfg.name
print("RESULT=" + json.dumps({
    "errors": errors,
    "default": Sm80Config().name,
    "default_smem": Sm80Config().smem_bytes,
    "chosen": chosen,
    "supports_ok": supports(5, 7, 3, 1, "bfloat16", "m", "n", 8, 8, 8),
    "supports_dtype": supports(5, 7, 3, 1, "float32", "k", "k", 8, 8, 8),
    "supports_align": supports(5, 7, 3, 1, "float16", "k", "k", 8, 4, 8),
}))
"""


def test_sm80_config_rules(tmp_path):
    result = compile_in_child("sm_80", _CHILD_CONFIGS, None, tmp_path, prefix="RESULT=")
    assert all(isinstance(e, str) and e.endswith(".") for e in result["errors"]), result["errors"]
    assert result["default"] == "128x128x32_s4_w2x2_g8"
    assert result["default_smem"] <= 99 * 1024  # fits sm_86 / sm_89 as well as sm_80 and sm_90
    assert result["chosen"]["1x1x1x1"] == "64x64x32_s4_w2x2_g8"
    assert result["chosen"]["4096x4096x4096x1"] == "128x128x32_s4_w2x2_g8"
    assert result["supports_ok"] is None
    assert "float32" in result["supports_dtype"]
    assert "B" in result["supports_align"]
