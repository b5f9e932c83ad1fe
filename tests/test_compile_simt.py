"""The SIMT SGEMM compiles for every operand major and alignment as true-fp32 FMA code.

CPU only: the CuTe DSL fixes its target architecture when it is imported, so each target is
compiled in a child Python with ``CUTE_DSL_ARCH`` set, which prints PTX instruction counts as
JSON.  Nothing is launched.
"""

from __future__ import annotations

from helpers import compile_in_child, needs_dsl

pytestmark = needs_dsl()

# Runs in the child: compile each (a_major, b_major, align) of argv[1] and count instructions.
_CHILD = r"""
import json, re, sys
from cutematmul.kernels.compile import compile_gemm
from cutematmul.kernels.simt_sgemm import SimtConfig, SimtSgemm

PATTERNS = {
    "cp_async": r"\bcp\.async\.c[ag]\.shared\.global\b",
    "cp_async_cg16": r"\bcp\.async\.cg\.shared\.global \[[^\]]+\], \[[^\]]+\], 16\b",
    "fma": r"\bfma\.rn\.f32\b",
    "ld_shared": r"\bld\.shared\.",
    "ld_shared_v4": r"\bld\.shared\.v4\.",
    "st_global_v4": r"\bst\.global\.v4\.",
    "tf32": r"tf32",
    "mma": r"\b(wg)?mma\.",
    "local": r"\.local\b",
    "pdl_wait": r"\bgriddepcontrol\.wait\b",
    "pdl_launch": r"\bgriddepcontrol\.launch_dependents\b",
}
out = {}
for a_major, b_major, align, *tile in json.loads(sys.argv[1]):
    config = SimtConfig(*tile) if tile else SimtConfig()
    kernel = SimtSgemm(config, "float32", a_major, b_major, align, align, align, 132)
    ptx = compile_gemm(kernel, keep_ptx=True).__ptx__
    counts = {k: len(re.findall(p, ptx)) for k, p in PATTERNS.items()}
    counts["micro_tile"] = config.micro_tile
    counts["tile_k"] = config.tile_k
    counts["pdl"] = config.pdl
    out[f"{a_major}{b_major}{align}" + "".join(f"_{v}" for v in tile)] = counts
print("COUNTS=" + json.dumps(out))
"""

COMBOS = [(a, b, align) for a in ("k", "m") for b in ("k", "n") for align in (4, 1)]



def _check(name: str, counts: dict) -> None:
    a_major, b_major, align = name[0], name[1], int(name[2:].split("_")[0])
    micro_m, micro_n = counts["micro_tile"]
    tile_k = counts["tile_k"]
    # One fma per accumulator and k-slice of the (unrolled) k-tile.
    assert counts["fma"] == micro_m * micro_n * tile_k, f"{name}: {counts['fma']} fma.rn.f32"
    assert counts["tf32"] == 0 and counts["mma"] == 0, f"{name}: tensor-core / TF32 instructions"
    # One 128-bit load per 4 values of each operand and k-slice: the k-tile's slices in the
    # loop plus the first one before it.
    lds_v4 = (micro_m // 4 + micro_n // 4) * (tile_k + 1)
    assert counts["ld_shared_v4"] == lds_v4, f"{name}: {counts['ld_shared_v4']} ld.shared.v4"
    assert counts["ld_shared"] == counts["ld_shared_v4"], f"{name}: scalar shared loads"
    assert counts["cp_async"] > 0, f"{name}: no cp.async"
    # Only an M-major A is copied in 16-byte pieces: B's rows land pair-swapped in shared
    # memory, one element per copy.
    if align == 4 and a_major == "m":
        assert 0 < counts["cp_async_cg16"] < counts["cp_async"], f"{name}: want A's copies 16-byte"
    else:
        assert counts["cp_async_cg16"] == 0, f"{name}: unexpected 16-byte cp.async"
    if align == 4:
        assert counts["st_global_v4"] > 0, f"{name}: no 128-bit stores of C"
    else:
        assert counts["st_global_v4"] == 0, f"{name}: 128-bit stores without alignment"
    assert counts["local"] == 0, f"{name}: local memory in the PTX"
    # A programmatic dependent launch waits once before its first global access and lets the
    # next kernel launch once, after its last k-tile landed.
    want = 1 if counts["pdl"] else 0
    assert counts["pdl_wait"] == counts["pdl_launch"] == want, f"{name}: grid dependency {counts}"


def test_simt_compiles_all_majors_and_alignments_sm80(tmp_path):
    counts = compile_in_child("sm_80", _CHILD, COMBOS, tmp_path)
    assert sorted(counts) == sorted(f"{a}{b}{al}" for a, b, al in COMBOS)
    for name, c in counts.items():
        _check(name, c)


def test_simt_compiles_for_sm90a(tmp_path):
    # The default tile (8 x 8 accumulators per thread) and the two 16 x 8 ones of the ladder
    # (tile_m, tile_n, tile_k, stages, threads, raster_group, min_blocks): 128x256 in 8-deep
    # k-tiles (configs/simt._K_TILING), both operands K-major too, and 128x128.
    combos = [("k", "n", 4), ("m", "k", 1), ("k", "n", 4, 128, 256, 8, 6, 256, 8, 1),
              ("m", "k", 1, 128, 256, 8, 6, 256, 8, 1), ("k", "k", 4, 128, 256, 8, 6, 256, 8, 1),
              ("k", "k", 4, 128, 128, 16, 3, 128, 8, 2),
              ("k", "k", 4, 128, 256, 8, 6, 256, 8, 1, False, True)]  # PDL (sm_90 only)
    counts = compile_in_child("sm_90a", _CHILD, combos, tmp_path)
    assert len(counts) == len(combos)
    assert counts["kn4_128_256_8_6_256_8_1"]["micro_tile"] == [16, 8]
    for name, c in counts.items():
        _check(name, c)


_CHILD_CONFIGS = r"""
import json
from cutematmul.kernels.simt_sgemm import SimtConfig, choose_config, supports

bad = [
    dict(threads=100), dict(tile_k=12), dict(stages=1), dict(raster_group=0), dict(min_blocks=9),
    dict(tile_m=96), dict(tile_m=256, tile_n=256),
    dict(tile_n=32, tile_k=8, threads=128, min_blocks=4),
]
errors = []
for kw in bad:
    try:
        SimtConfig(**kw).validate()
        errors.append(None)
    except ValueError as e:
        errors.append(str(e))
chosen = {}
for m, n, k, l in [(1, 1, 1, 1), (4096, 4096, 4096, 1), (1024, 1024, 1024, 1), (16, 8192, 512, 1),
                   (33, 17, 5, 3)]:
    cfg = choose_config(m, n, k, l, 132)
    cfg.validate()
    chosen[f"{m}x{n}x{k}x{l}"] = [cfg.tile_m, cfg.tile_n, cfg.threads]
from cutematmul.configs.simt import choose_schedule
scheduled = {}
for m, n, k in [(1024, 1024, 1024), (16, 8192, 8192), (4096, 4096, 4096)]:
    cfg, splits, _ = choose_schedule(m, n, k, 1, 132)
    cfg.validate()
    scheduled[f"{m}x{n}x{k}"] = [cfg.tile_m, cfg.tile_n, splits]
print("RESULT=" + json.dumps({
    "scheduled": scheduled,
    "errors": errors,
    "default": SimtConfig().name,
    "chosen": chosen,
    "supports_ok": supports(5, 7, 0, 1, "float32", "k", "n", 1, 4, 1),
    "supports_major": supports(5, 7, 3, 1, "float32", "n", "n", 4, 4, 4),
    "supports_align": supports(5, 7, 3, 1, "float32", "k", "n", 4, 8, 4),
    "supports_empty": supports(0, 7, 3, 1, "float32", "k", "n", 4, 4, 4),
    "supports_batch": supports(2**20, 2**20, 3, 4096, "float32", "k", "n", 4, 4, 4),
}))
"""


def test_simt_config_rules(tmp_path):
    result = compile_in_child("sm_80", _CHILD_CONFIGS, None, tmp_path, prefix="RESULT=")
    assert all(isinstance(e, str) and e.endswith(".") for e in result["errors"]), result["errors"]
    assert result["default"] == "simt_128x128x16_s3_t256_g8_b2"
    assert result["chosen"]["4096x4096x4096x1"] == [128, 256, 256]  # 16 x 8 accumulators each
    tm, tn, _ = result["chosen"]["1024x1024x1024x1"]  # unsplit: enough CTAs for every SM
    assert (1024 // tm) * (1024 // tn) >= 132, result["chosen"]
    # Split-K: big tiles with K split when the tiles alone cannot fill the machine; none when
    # they can.
    assert result["scheduled"]["1024x1024x1024"][2] > 1, result["scheduled"]
    assert result["scheduled"]["16x8192x8192"][2] > 1, result["scheduled"]
    assert result["scheduled"]["4096x4096x4096"] == [128, 256, 1], result["scheduled"]
    assert result["chosen"]["16x8192x512x1"][0] == 32  # thin tile for a skinny M
    assert result["supports_ok"] is None
    assert "a_major" in result["supports_major"]
    assert "align_b" in result["supports_align"]
    assert "empty" in result["supports_empty"]
    assert "batch" in result["supports_batch"]


def test_simt_sixteen_row_tiles_compile_for_sm90a(tmp_path):
    # The ladder's 16-row tiles (one warp row: 4 x 16 or 4 x 8 accumulators per thread): a
    # 16-row M/N-major copy spans two k-rows per warp.
    combos = [("k", "n", 4, 16, 128, 16, 3, 32, 8, 7), ("m", "k", 4, 16, 256, 16, 3, 64, 8, 4),
              ("m", "n", 1, 16, 64, 16, 3, 32, 8, 13)]
    counts = compile_in_child("sm_90a", _CHILD, combos, tmp_path)
    assert counts["kn4_16_128_16_3_32_8_7"]["micro_tile"] == [4, 16]
    for name, c in counts.items():
        _check(name, c)


# Runs in the child: compile the row-streaming kernel for each (rows, a_major, b_major, align).
_CHILD_GEMV = r"""
import dataclasses, json, re, sys
from cutematmul.configs import simt
from cutematmul.kernels.compile import compile_gemm
from cutematmul.kernels.simt_sgemm import Kernel
from cutematmul.kernels.simt_gemv import SimtGemv

PATTERNS = {
    "fma": r"\bfma\.rn\.f32\b",
    "ld_global_v4": r"\bld\.global(\.[a-z0-9]+)*\.v4\.",
    "ld_shared": r"\bld\.shared\.",
    "shfl": r"\bshfl\.sync\.bfly\b",
    "bar": r"\bbar(rier)?\.sync\b",
    "tf32": r"tf32",
    "mma": r"\b(wg)?mma\.",
    "cp_async": r"\bcp\.async\b",
    "local": r"\.local\b",
    "pdl_wait": r"\bgriddepcontrol\.wait\b",
    "pdl_launch": r"\bgriddepcontrol\.launch_dependents\b",
    "cvt": r"\bcvt\.f32\.b?f16\b",
    "ld16": r"\bld\.global(\.[a-z0-9]+)*\.b16\b",
    "ld_vec16": r"\bld\.global(\.[a-z0-9]+)*\.v4\.b16\b",
    "st16": r"\bst\.global(\.[a-z0-9]+)*\.b16\b",
    "st32": r"\bst\.global(\.[a-z0-9]+)*\.(f32|b32)\b",
}
out = []
for rows, dtype, a_major, b_major, align, align_c, pdl, partials in json.loads(sys.argv[1]):
    config = dataclasses.replace(simt.gemv_config(rows), pdl=pdl, partials=partials)
    kernel = Kernel(config, dtype, a_major, b_major, align, align, align_c, 132)
    assert isinstance(kernel, SimtGemv)
    ptx = compile_gemm(kernel, keep_ptx=True).__ptx__
    out.append({k: len(re.findall(p, ptx)) for k, p in PATTERNS.items()})
print("COUNTS=" + json.dumps(out))
"""


def test_simt_gemv_compiles_every_variant(tmp_path):
    """The row-streaming kernel for each row count, both B majors (N-major: lanes along N,
    sums through shared memory; K-major: lanes along K, butterfly shuffles) and A majors, 16-byte
    and 4-byte aligned: fp32 FMA only, 128-bit loads exactly where alignment allows, no local
    memory; as a programmatic dependent launch (the schedule's default on sm_90) one
    ``griddepcontrol.wait`` and one ``launch_dependents``, and none without."""
    combos = [[1, "k", "n", 4, True], [2, "m", "n", 1, True], [4, "k", "k", 4, True],
              [8, "m", "k", 1, True], [8, "k", "n", 4, False], [1, "k", "k", 1, False]]
    counts = compile_in_child(
        "sm_90a", _CHILD_GEMV,
        [[rows, "float32", am, bm, align, align, pdl, False]
         for rows, am, bm, align, pdl in combos],
        tmp_path)
    assert len(counts) == len(combos)
    for (rows, a_major, b_major, align, pdl), c in zip(combos, counts):
        name = f"{rows}{a_major}{b_major}{align}{'p' if pdl else ''}"
        assert c["fma"] > 0 and c["tf32"] == 0 and c["mma"] == 0, (name, c)
        assert c["cp_async"] == 0 and c["local"] == 0, (name, c)
        want = 1 if pdl else 0
        assert c["pdl_wait"] == c["pdl_launch"] == want, (name, c)
        assert (c["ld_global_v4"] > 0) == (align == 4), (name, c)
        if b_major == "n":
            assert c["bar"] > 0 and c["ld_shared"] > 0 and c["shfl"] == 0, (name, c)
        else:
            assert c["shfl"] > 0 and c["bar"] == 0, (name, c)


def test_simt_gemv_compiles_for_16_bit_inputs(tmp_path):
    """The row-streaming kernel over fp16 and bf16 (``configs.simt.streams_in_place``): every
    element converted to fp32 and summed by fp32 FMA (no tensor-core instruction), B read one
    16-bit element per load where its rows are no whole vectors and 8 bytes per load where
    they are, C stored as fp32 partials or as 16-bit values, no local memory."""
    combos = [[1, "float16", "k", "n", 1, True], [8, "bfloat16", "m", "n", 1, True],
              [8, "bfloat16", "k", "n", 1, False], [4, "float16", "k", "k", 1, True],
              [8, "float16", "m", "n", 8, True], [2, "bfloat16", "k", "k", 8, False]]
    # C is fp32 partials (its rows 16-byte aligned, as the workspace's are) or the inputs'
    # dtype.
    counts = compile_in_child(
        "sm_90a", _CHILD_GEMV,
        [[rows, dtype, am, bm, align, 8 if partials else align, True, partials]
         for rows, dtype, am, bm, align, partials in combos], tmp_path)
    assert len(counts) == len(combos)
    for name, c in zip(combos, counts):
        aligned, partials = name[4] == 8, name[5]
        assert c["fma"] > 0 and c["cvt"] > 0 and c["ld16"] > 0, (name, c)
        assert c["mma"] == 0 and c["local"] == 0, (name, c)
        assert (c["ld_vec16"] > 0) == aligned, (name, c)
        assert (c["st32"] > 0, c["st16"] > 0) == (partials, not partials), (name, c)


_CHILD_GEMV_MMA = r"""
import dataclasses, json, re, sys
from cutematmul.configs import simt
from cutematmul.kernels.compile import compile_gemm
from cutematmul.kernels.simt_sgemm import Kernel
from cutematmul.kernels.simt_gemv_mma import SimtGemvMma

PATTERNS = {
    "mma": r"\bmma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.(f16|bf16)\.(f16|bf16)\.f32\b",
    "wgmma": r"\bwgmma\.", "fma": r"\bfma\.rn\.f32\b", "cp_async": r"\bcp\.async\b",
    "ld_shared": r"\bld\.shared\.", "local": r"\.local\b",
    "ld16": r"\bld\.global(\.[a-z0-9]+)*\.[bu]16\b",
    "ld_wide": r"\bld\.global(\.[a-z0-9]+)*\.(v[24]|[bu](32|64))\b",
    "ldmatrix": r"\bldmatrix\.sync\.aligned\.m8n8\.x[24](\.trans)?\.shared\.b16\b",
    "ldmatrix_trans": r"\bldmatrix\.sync\.aligned\.m8n8\.x[24]\.trans\b",
    "st_shared32": r"\bst\.shared\.(b32|v2\.b16)\b", "bar": r"\bbar(rier)?\.sync\b",
    "prefetch": r"\bprefetch\.global\.L2\b",
    "st16": r"\bst\.global(\.[a-z0-9]+)*\.b16\b",
    "st32": r"\bst\.global(\.[a-z0-9]+)*\.(f32|b32)\b",
    "pdl_wait": r"\bgriddepcontrol\.wait\b",
}
out = []
for arch_rows, dtype, a_major, b_major, pdl, partials in json.loads(sys.argv[1]):
    config = dataclasses.replace(simt.mma_config(arch_rows), pdl=pdl, partials=partials)
    kernel = Kernel(config, dtype, a_major, b_major, 1, 1, 4 if partials else 1, 132)
    assert isinstance(kernel, SimtGemvMma)
    ptx = compile_gemm(kernel, keep_ptx=True).__ptx__
    with open(f"mma{len(out)}.ptx", "w") as f:
        f.write(ptx)
    out.append({k: len(re.findall(p, ptx)) for k, p in PATTERNS.items()})
print("COUNTS=" + json.dumps(out))
"""


def test_simt_gemv_on_tensor_cores_compiles_with_mma_sync_and_2_byte_loads(tmp_path):
    """The row-streaming kernel on tensor cores (``Config.mma``: 16-bit products of up to 128
    rows, ``kernels/simt_gemv_mma.py``) for each of its row counts, both dtypes and every
    major: ``mma.sync.m16n8k16`` with fp32 accumulators and no FMA; B and A read one 2-byte
    element per global load (no wider load, no cp.async), stored to shared memory as 32-bit
    pairs behind barriers and read with ``ldmatrix`` (transposing exactly for an N-major B or
    an M-major A), B's chunks ahead prefetched into L2; no local memory, and none added by
    ptxas's register allocation at the configuration's CTAs per SM (``_MMA_BLOCKS``) but up to
    256 bytes at 64 rows; C
    stored as fp32 partials or 16-bit values; one ``griddepcontrol.wait`` as a programmatic
    dependent launch, none without."""
    import shutil

    from helpers import load_tool

    combos = [[8, "float16", "k", "k", True, True], [16, "bfloat16", "k", "n", True, False],
              [32, "float16", "m", "n", True, True], [32, "bfloat16", "k", "k", False, False],
              [16, "float16", "m", "n", False, True], [64, "float16", "k", "n", True, True],
              [64, "bfloat16", "m", "k", True, False], [64, "float16", "k", "k", False, True],
              [128, "bfloat16", "k", "n", True, True], [128, "float16", "m", "k", False, False]]
    counts = compile_in_child("sm_90a", _CHILD_GEMV_MMA, combos, tmp_path)
    if shutil.which("ptxas"):
        ptxas_report = load_tool("codegen_audit").ptxas_report
        for i, name in enumerate(combos):
            report, log = ptxas_report((tmp_path / f"mma{i}.ptx").read_text(), "sm_90a", tmp_path)
            assert not report["ptxas_failed"], f"{name}: ptxas failed:\n{log}"
            # 64 rows at two CTAs per SM spill a little (``configs.simt._MMA_BLOCKS``: measured
            # faster than one CTA without); fewer rows none.
            most = 256 if name[0] == 64 else 0
            spills = report["spills"]
            assert spills and all(s <= most and l <= most for s, l in spills), \
                f"{name}: spills {spills}"
    # mma.sync is sm_80's: the family's kernels build for Ampere too (no PDL there).
    ampere = [[16, "bfloat16", "m", "n", False, True]]
    counts += compile_in_child("sm_80", _CHILD_GEMV_MMA, ampere, tmp_path)
    combos += ampere
    assert len(counts) == len(combos)
    for name, c in zip(combos, counts):
        pdl, partials = name[4], name[5]
        a_major, b_major = name[2], name[3]
        assert c["mma"] > 0 and c["ld16"] > 0 and c["ldmatrix"] > 0, (name, c)
        assert c["st_shared32"] > 0 and c["bar"] > 0 and c["prefetch"] > 0, (name, c)
        assert (c["ldmatrix_trans"] > 0) == (a_major == "m" or b_major == "n"), (name, c)
        assert c["wgmma"] == c["fma"] == c["cp_async"] == c["ld_shared"] == 0, (name, c)
        assert c["ld_wide"] == 0 and c["local"] == 0, (name, c)
        assert (c["st32"] > 0, c["st16"] > 0) == (partials, not partials), (name, c)
        assert c["pdl_wait"] == (1 if pdl else 0), (name, c)


_CHILD_REFUSALS = r"""
import json
from cutematmul.configs import simt
from cutematmul.kernels.simt_gemv import SimtGemv
from cutematmul.kernels.simt_gemv_mma import SimtGemvMma
args = ("k", "n", 1, 1, 1, 132)
mma, fma = simt.mma_config(8), simt.gemv_config(8)
out = {"mma_name": mma.name, "fma_name": fma.name}
for label, kernel, config, dtype in (("fma_of_mma", SimtGemv, mma, "float16"),
                                     ("mma_of_fma", SimtGemvMma, fma, "float16"),
                                     ("mma_of_fp32", SimtGemvMma, mma, "float32"),
                                     ("mma", SimtGemvMma, mma, "bfloat16"),
                                     ("fma", SimtGemv, fma, "float16")):
    try:
        out[label] = kernel(config, dtype, *args).SMEM_CARVEOUT
    except ValueError as error:
        out[label] = str(error)
print("OUT=" + json.dumps(out))
"""


def test_row_streaming_kernels_refuse_each_others_configurations(tmp_path):
    """Each row-streaming kernel says what it cannot run, naming the configuration: the FMA
    kernel a tensor-core (mma) configuration, the tensor-core kernel an FMA one or fp32
    inputs; each builds its own (no compile: the checks run in the constructor)."""
    out = compile_in_child("sm_90a", _CHILD_REFUSALS, None, tmp_path, prefix="OUT=")
    assert out["fma_of_mma"] == f"SimtGemv runs gemv configurations on FMA, got {out['mma_name']}."
    assert out["mma_of_fma"] == f"SimtGemvMma runs gemv mma configurations, got {out['fma_name']}."
    assert out["mma_of_fp32"] == "SimtGemvMma computes float16 or bfloat16, got float32."
    assert (out["mma"], out["fma"]) == (100, 25)
