"""The TF32 kernels compile for sm_90a (no GPU needed) with the instructions they rest on.

* sm90 with math "tf32" and "tf32x3": TF32 wgmma (``wgmma...k8.f32.tf32.tf32``), TMA loads and
  stores, no 16-bit wgmma, no stmatrix (fp32 output), no spills; split-K partials too.
* One-pass TF32 with an M-major A or an N-major B: wgmma takes A from registers (four per k8),
  loaded by ``ld.shared.b32`` two k-blocks ahead of their wgmma (``wgmma.wait_group 2``).
* The operand prep: ``cvt.rna.tf32.f32`` twice per element for the 3xTF32 split and never for
  the plain copy; the transposing variant goes through shared memory with one barrier, the
  straight one stores only 16-byte vectors; the 16-bit copies (operands TMA cannot address)
  load 16-bit elements.
"""

from __future__ import annotations

from helpers import compile_in_child, needs_dsl

pytestmark = needs_dsl()

_GEMM = r"""
import json, re, sys
from cutematmul.kernels.compile import compile_gemm
from cutematmul.kernels.sm90_hgemm import Sm90Config, Sm90Hgemm

PATTERNS = {
    "wgmma_tf32": r"\bwgmma\.mma_async\.sync\.aligned\.m64n\d+k8\.f32\.tf32\.tf32",
    "wgmma_16": r"\bwgmma\.mma_async\.sync\.aligned\.m64n\d+k16",
    "tma_load": r"\bcp\.async\.bulk\.tensor\.\dd\.shared::(?:cta|cluster)\.global",
    "tma_store": r"\bcp\.async\.bulk\.tensor\.\dd\.global\.shared::cta",
    "stmatrix": r"\bstmatrix\.sync\.aligned",
    "setmaxnreg": r"\bsetmaxnreg\.(?:inc|dec)\.sync\.aligned",
    "local": r"\.local\b",
    # A from registers: {4 registers}, then B's shared-memory descriptor.
    "wgmma_rs": r"\bwgmma\.mma_async[^;]*\}, \{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd\d+",
    "ld_shared_b32": r"\bld\.shared\.b32",
    "wait_2": r"\bwgmma\.wait_group\.sync\.aligned\s+2;",
}
out = {}
for math, cfg, majors in json.loads(sys.argv[1]):
    kernel = Sm90Hgemm(Sm90Config(**cfg), math, *majors, 4, 4, 4, 132)
    ptx = compile_gemm(kernel, keep_ptx=True).__ptx__
    out[f"{math}-{''.join(majors)}-{kernel.config.name}"] = {
        k: len(re.findall(p, ptx)) for k, p in PATTERNS.items()}
print("COUNTS=" + json.dumps(out))
"""

_PREP = r"""
import json, re, sys
from cutematmul.kernels.operand_prep import compile_prep

PATTERNS = {
    "cvt_rna": r"\bcvt\.rna\.tf32\.f32",
    "st_global": r"\bst\.global",
    "st_shared": r"\bst\.shared",
    "barrier": r"\b(?:bar|barrier)\.sync",
    "local": r"\.local\b",
    "ld_global_16": r"\bld\.global(?:\.\w+)*\.(?:b16|u16|s16|f16|bf16)\b",
    "st_global_16": r"\bst\.global(?:\.\w+)*\.(?:b16|u16|s16|f16|bf16)\b",
    "ld_global_32": r"\bld\.global(?:\.\w+)*\.(?:b32|u32|f32)\b",
    "st_global_v4": r"\bst\.global(?:\.\w+)*\.v4\.(?:b32|u32|f32)\b",
    "pdl_wait": r"\bgriddepcontrol\.wait\b",
    "pdl_launch": r"\bgriddepcontrol\.launch_dependents\b",
    "entry": r"\.entry\b",
}
out = {}
for parts, k_major, dtype, pdl, k_major_b in json.loads(sys.argv[1]):
    ptx = compile_prep(parts, k_major, dtype, pdl=pdl, k_major_b=k_major_b, keep_ptx=True).__ptx__
    out[f"{parts}-{k_major}-{dtype}-{pdl}-{k_major_b}"] = {
        k: len(re.findall(p, ptx)) for k, p in PATTERNS.items()}
print("COUNTS=" + json.dumps(out))
"""

TF32 = {"tile_k": 32, "epi_stages": 2}
CONFIGS = [
    ("tf32", {"tile_m": 128, "tile_n": 256, **TF32}),
    ("tf32", {"tile_m": 128, "tile_n": 192, **TF32}),
    ("tf32", {"tile_m": 128, "tile_n": 256, "cluster_m": 2, **TF32}),
    ("tf32x3", {"tile_m": 128, "tile_n": 192, **TF32}),
    ("tf32x3", {"tile_m": 128, "tile_n": 128, "partials": True, **TF32}),
    ("tf32", {"tile_m": 128, "tile_n": 32, "partials": True, **TF32}),
    # The 64-row narrow tiles of transposed small-M products.
    ("tf32", {"tile_m": 64, "tile_n": 32, "partials": True, "pdl": True, **TF32}),
    ("tf32x3", {"tile_m": 64, "tile_n": 16, "epi_n": 16, "partials": True, "pdl": True,
                **TF32}),
    # Small-N products on the narrow tiles untransposed (``configs.sm90.narrow_n``): unsplit,
    # C stored by the kernel, 64 rows and 128 rows in 2x1 clusters.
    ("tf32", {"tile_m": 64, "tile_n": 16, "epi_n": 16, "pdl": True, **TF32}),
    ("tf32", {"tile_m": 128, "tile_n": 32, "cluster_m": 2, "pdl": True, **TF32}),
    # Unsplit 64 x 128 in 2x1 clusters (``configs.sm90._TF32_CLUSTER_SHORT``).
    ("tf32", {"tile_m": 64, "tile_n": 128, "cluster_m": 2, "pdl": True, **TF32}),
]


def test_sm90_tf32_compiles_to_tf32_wgmma(tmp_path):
    counts = compile_in_child("sm_90a", _GEMM, [(m, c, "kk") for m, c in CONFIGS], tmp_path)
    assert len(counts) == len(CONFIGS)
    for name, c in counts.items():
        assert c["wgmma_tf32"] >= 4, f"{name}: no TF32 wgmma: {c}"
        assert c["wgmma_16"] == 0, f"{name}: 16-bit wgmma in a TF32 kernel: {c}"
        assert c["tma_load"] >= 2 and c["tma_store"] >= 1, f"{name}: {c}"
        assert c["stmatrix"] == 0, f"{name}: fp32 output through stmatrix: {c}"
        assert c["setmaxnreg"] == 2, name
        assert c["local"] == 0, f"{name}: local memory (register spills): {c}"
        assert c["wgmma_rs"] == 0, f"{name}: K-major operands are both read from shared memory"
    # 3xTF32 runs its three products per stage (12 wgmma of k8 over a 32-wide K-tile, against
    # one pass's 4) on both parts of A and B, loaded together (twice one pass's TMA loads).
    one_pass = counts["tf32-kk-" + _name(CONFIGS[1])]
    for math, cfg in CONFIGS:
        if math == "tf32x3":
            c = counts[f"{math}-kk-{_name((math, cfg))}"]
            assert c["wgmma_tf32"] == 3 * one_pass["wgmma_tf32"], c
            assert c["tma_load"] == 2 * one_pass["tma_load"], (c, one_pass)


#: One-pass TF32 with a register operand: (config, majors); "kn" computes C^T = B^T A^T, which
#: its configuration records (``Config.swap``).
REGISTER_CONFIGS = [
    ({"tile_m": 128, "tile_n": 256, "cluster_m": 2, "swap": True, **TF32}, "kn"),
    ({"tile_m": 128, "tile_n": 256, **TF32}, "mk"),
    ({"tile_m": 128, "tile_n": 128, "streamk": True, "swap": True, **TF32}, "kn"),
    ({"tile_m": 64, "tile_n": 32, "partials": True, "pdl": True, **TF32}, "mk"),
    # A small-N product's unsplit narrow tile storing C (``configs.sm90.narrow_n``).
    ({"tile_m": 64, "tile_n": 16, "epi_n": 16, "pdl": True, **TF32}, "mk"),
    ({"tile_m": 128, "tile_n": 32, "cluster_m": 2, "pdl": True, **TF32}, "mk"),
    # The unsplit 64 x 128 tile in 2x1 clusters (``configs.sm90._TF32_CLUSTER_SHORT``).
    ({"tile_m": 64, "tile_n": 128, "cluster_m": 2, "pdl": True, **TF32}, "mk"),
    # A 64-wide swapped tile (measured by ``tools/sweep_schedule.py --widths``, not planned).
    ({"tile_m": 64, "tile_n": 64, "pdl": True, "swap": True, **TF32}, "kn"),
]


def test_sm90_tf32_register_operand(tmp_path):
    counts = compile_in_child("sm_90a", _GEMM, [("tf32", c, m) for c, m in REGISTER_CONFIGS],
                              tmp_path)
    assert len(counts) == len(REGISTER_CONFIGS)
    for name, c in counts.items():
        # 32-wide K-tiles: four wgmma of k8, each with its four A registers.
        assert c["wgmma_tf32"] == c["wgmma_rs"] == 4, f"{name}: {c}"
        # 16 values of A per thread and K-tile (64 rows x 32 / 128 threads), plus the 8 loaded
        # ahead of the first K-tile.
        assert c["ld_shared_b32"] == 24, f"{name}: {c}"
        assert c["wait_2"] >= 1, f"{name}: the register loads do not run ahead: {c}"
        assert c["tma_load"] >= 2 and c["tma_store"] >= 1, f"{name}: {c}"
        assert c["local"] == 0 and c["stmatrix"] == 0, f"{name}: {c}"


def _name(entry) -> str:
    from cutematmul.configs.sm90 import Config
    return Config(**entry[1]).name


def test_prep_rounds_only_when_splitting_and_transposes_through_shared_memory(tmp_path):
    """The operand prep: TF32 rounding only in the split, a shared-memory transpose only in the
    transposing variant, the straight copy storing 16-byte vectors only (one per part), and
    the 16-bit copies (operands TMA cannot address) reading 16-bit elements, not 32-bit
    ones.  As a dependent launch (``pdl``, sm_90: ``dispatch.prep_key``) each variant waits
    once for the kernel ahead and lets the next one launch once; otherwise neither.  The pair
    (``k_major_b``: A's and B's copies, ``dispatch.paired``) is one kernel with both variants'
    code, as the single copies check it."""
    variants = [(1, True, "float32", True, None), (1, False, "float32", True, None),
                (2, True, "float32", False, None), (2, False, "float32", True, None),
                (1, True, "float16", True, None), (1, True, "bfloat16", False, None),
                (1, False, "bfloat16", True, None),
                (1, True, "float16", True, True), (1, True, "bfloat16", True, True),
                (2, False, "float32", True, True), (2, True, "float32", True, False),
                (1, False, "float32", False, False)]
    counts = compile_in_child("sm_90a", _PREP, variants, tmp_path)
    assert len(counts) == len(variants)
    for name, c in counts.items():
        parts, k_major, dtype, pdl, k_major_b = name.split("-")
        majors = {k_major} | ({k_major_b} if k_major_b != "None" else set())
        dependent = int(pdl == "True")
        assert c["entry"] == 1, f"{name}: one kernel per launch: {c}"
        assert (c["pdl_wait"], c["pdl_launch"]) == (dependent, dependent), f"{name}: {c}"
        if dtype == "float32":
            assert c["ld_global_32"] >= 1 and c["ld_global_16"] == 0, f"{name}: {c}"
        else:
            assert c["ld_global_16"] >= 1, f"{name}: {c}"
            assert c["ld_global_32"] == 0, f"{name}: 16-bit data read as 32-bit: {c}"
        if majors == {"True"}:  # straight only: 16-byte vector stores only
            assert c["st_global_v4"] == c["st_global"] >= int(parts), f"{name}: {c}"
        elif majors == {"False"}:
            assert c["st_global_v4"] == 0 and c["st_global"] >= 1, f"{name}: {c}"
        else:  # both variants
            assert c["st_global"] > c["st_global_v4"] >= int(parts), f"{name}: {c}"
        if "False" in majors and dtype != "float32":
            assert c["st_global_16"] >= 1, f"{name}: {c}"
        if parts == "1":
            assert c["cvt_rna"] == 0, f"{name}: the tf32 copy must keep the bits: {c}"
        else:
            assert c["cvt_rna"] >= 2, f"{name}: big and small are rounded to TF32: {c}"
        if "False" not in majors:
            assert c["st_shared"] == 0 and c["barrier"] == 0, f"{name}: {c}"
        else:  # the tile is filled, then read out before the next matrix refills it
            assert c["st_shared"] >= 1 and c["barrier"] >= 2, f"{name}: no smem transpose: {c}"
        assert c["local"] == 0, f"{name}: {c}"
