"""The sm90 HGEMM compiles for sm_90a (no GPU needed) with TMA, wgmma, stmatrix and setmaxnreg.

Each dtype x operand-major combination and the tile/cluster configurations the dispatcher can
choose are compiled in a child Python with ``CUTE_DSL_ARCH=sm_90a``; the PTX is checked for the
instructions the design rests on and for register spills.
"""

from __future__ import annotations

import pytest
from helpers import compile_in_child, needs_dsl

pytestmark = needs_dsl()

_CHILD = r"""
import json, re, sys
import cutlass
from cutematmul.kernels.compile import compile_gemm
from cutematmul.kernels.sm90_hgemm import Sm90Config, Sm90Hgemm

PATTERNS = {
    "wgmma": r"\bwgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.(?:bf16|f16)\.(?:bf16|f16)",
    "wgmma_fence": r"\bwgmma\.fence\.sync\.aligned",
    "tma_load": r"\bcp\.async\.bulk\.tensor\.\dd\.shared::(?:cta|cluster)\.global",
    "tma_store": r"\bcp\.async\.bulk\.tensor\.\dd\.global\.shared::cta",
    "stmatrix": r"\bstmatrix\.sync\.aligned",
    "stmatrix_trans": r"\bstmatrix\.sync\.aligned\.m8n8\.x4\.trans\.",
    "setmaxnreg": r"\bsetmaxnreg\.(?:inc|dec)\.sync\.aligned",
    "mbarrier_wait": r"\bmbarrier\.try_wait",
    "local": r"\.local\b",
    "multicast": r"\bcp\.async\.bulk\.tensor\.[^;]*\.multicast::cluster",
    "acquire": r"\bld\.acquire\.gpu\.global",
    "release": r"\bst\.release\.gpu\.global",
    "pdl_wait": r"\bgriddepcontrol\.wait\b",
    "pdl_launch": r"\bgriddepcontrol\.launch_dependents\b",
    "wgmma_n16": r"\bwgmma\.mma_async\.sync\.aligned\.m64n16k16\.",
    "wgmma_n32": r"\bwgmma\.mma_async\.sync\.aligned\.m64n32k16\.",
    "wgmma_n64": r"\bwgmma\.mma_async\.sync\.aligned\.m64n64k16\.",
    "wgmma_n160": r"\bwgmma\.mma_async\.sync\.aligned\.m64n160k16\.",
    "wgmma_n224": r"\bwgmma\.mma_async\.sync\.aligned\.m64n224k16\.",
    "wgmma_n144": r"\bwgmma\.mma_async\.sync\.aligned\.m64n144k16\.",
    "wgmma_n176": r"\bwgmma\.mma_async\.sync\.aligned\.m64n176k16\.",
    "wgmma_n208": r"\bwgmma\.mma_async\.sync\.aligned\.m64n208k16\.",
    "wgmma_n80": r"\bwgmma\.mma_async\.sync\.aligned\.m64n80k16\.",
    "wgmma_n96": r"\bwgmma\.mma_async\.sync\.aligned\.m64n96k16\.",
    "wgmma_n112": r"\bwgmma\.mma_async\.sync\.aligned\.m64n112k16\.",
    "wgmma_n128": r"\bwgmma\.mma_async\.sync\.aligned\.m64n128k16\.",
    "wgmma_n256": r"\bwgmma\.mma_async\.sync\.aligned\.m64n256k16\.",
    "wgmma_n192": r"\bwgmma\.mma_async\.sync\.aligned\.m64n192k16\.",
    "barrier_by_register": r"\bbar\.sync\s+%r\d+,\s*128;",
    "mbarrier_init": r"\bmbarrier\.init\.shared",
    "st_global_b16": r"\bst\.global\.b16\b",
    "st_global": r"\bst\.global\b",
}
out = {}
for dtype, a_major, b_major, cfg in json.loads(sys.argv[1]):
    align_c = cfg.pop("align_c", 8)
    kernel = Sm90Hgemm(Sm90Config(**cfg), dtype.lower(), a_major, b_major, 8, 8, align_c, 132)
    ptx = compile_gemm(kernel, keep_ptx=True).__ptx__
    out[f"{dtype}-{a_major}{b_major}-{kernel.config.name}"] = {
        k: len(re.findall(p, ptx)) for k, p in PATTERNS.items()
    }
print("COUNTS=" + json.dumps(out))
"""

CONFIGS = [
    {"tile_m": 128, "tile_n": 256},
    {"tile_m": 128, "tile_n": 192},
    {"tile_m": 128, "tile_n": 128},
    {"tile_m": 64, "tile_n": 128},
    # 2x1 clusters (B multicast), as the dispatcher picks them for 16-bit products of two or
    # more tile rows: every tile shape.
    {"tile_m": 128, "tile_n": 256, "cluster_m": 2},
    {"tile_m": 128, "tile_n": 192, "cluster_m": 2},
    {"tile_m": 128, "tile_n": 128, "cluster_m": 2},
    {"tile_m": 64, "tile_n": 128, "cluster_m": 2},
    # The one-row tile of 16-bit products with 32 < M <= 64 (configs.sm90._ONE_ROW_TILE).
    {"tile_m": 64, "tile_n": 64},
]


def test_sm90_compiles_with_tma_and_wgmma(tmp_path):
    combos = [(d, am, bm, CONFIGS[0]) for d in ("Float16", "BFloat16")
              for am in ("k", "m") for bm in ("k", "n")]
    combos += [("Float16", "k", "n", cfg) for cfg in CONFIGS[1:]]
    counts = compile_in_child("sm_90a", _CHILD, combos, tmp_path)
    assert len(counts) == len(combos)
    for name, c in counts.items():
        assert c["wgmma"] >= 4, f"{name}: no wgmma.mma_async in the PTX: {c}"
        assert c["wgmma_fence"] >= 1, name
        assert c["tma_load"] >= 2, f"{name}: no TMA (cp.async.bulk.tensor) loads: {c}"
        assert c["tma_store"] >= 1, f"{name}: the epilogue does not store with TMA: {c}"
        assert c["stmatrix"] >= 1 and c["stmatrix_trans"] == 0, f"{name}: {c}"
        assert c["setmaxnreg"] == 2, f"{name}: producer/consumer register split missing: {c}"
        assert c["mbarrier_wait"] >= 1, name
        assert c["local"] == 0, f"{name}: local memory (register spills) in the PTX: {c}"
        clustered = "_c2x1_" in name
        assert (c["multicast"] >= 1) == clustered, f"{name}: TMA multicast {c['multicast']}"
        assert c["acquire"] == c["release"] == 0, f"{name}: inter-CTA flags outside stream-K: {c}"
        assert c["pdl_wait"] == c["pdl_launch"] == 0, f"{name}: grid dependency control: {c}"


def _tile_n(name: str) -> int:
    """tile_n of a ``COUNTS`` key, ``<dtype>-<majors>-sm90_<m>x<n>x<k>_...``."""
    return int(name.split("-")[2].split("_")[1].split("x")[1])


#: The widths that are no power of two (configs.sm90._WIDE_EFFICIENCY): both B majors (an
#: N-major B tile of 160 or 224 is 64-byte swizzled), both A majors, unclustered, and split.
_WIDE = [
    ("Float16", "k", "n", {"tile_m": 128, "tile_n": 160, "cluster_m": 2, "pdl": True}),
    ("BFloat16", "m", "k", {"tile_m": 128, "tile_n": 160, "cluster_m": 2, "pdl": True}),
    ("Float16", "m", "n", {"tile_m": 128, "tile_n": 224, "cluster_m": 2, "pdl": True}),
    ("BFloat16", "k", "k", {"tile_m": 128, "tile_n": 224}),
    ("Float16", "k", "n", {"tile_m": 128, "tile_n": 224, "cluster_m": 2, "partials": True,
                           "pdl": True}),
]


def test_sm90_wide_tiles_issue_wgmma_of_their_width(tmp_path):
    """128 x 160 and 128 x 224 tiles: the same pipeline, wgmma n160 / n224, no spills (224 fp32
    accumulators per row of a consumer warpgroup's 64 rows fit in its registers)."""
    counts = compile_in_child("sm_90a", _CHILD, _WIDE, tmp_path)
    assert len(counts) == len(_WIDE)
    for name, c in counts.items():
        width = _tile_n(name)
        assert width in (160, 224), name
        assert c[f"wgmma_n{width}"] >= 4, f"{name}: no m64n{width}k16 wgmma: {c}"
        assert c["tma_load"] >= 2 and c["tma_store"] >= 1 and c["setmaxnreg"] == 2, f"{name}: {c}"
        assert c["local"] == 0, f"{name}: local memory (register spills) in the PTX: {c}"
        assert (c["multicast"] >= 1) == ("_c2x1_" in name), f"{name}: {c}"
        assert c["pdl_wait"] == (1 if name.endswith("_pdl") else 0), f"{name}: {c}"


#: Widths of 80, 96 and 112 (configs.sm90._ODD_N: N of 65-127, or a swapped M): both B majors
#: (an N-major B tile of 96 is 64-byte swizzled, of 80 and 112 32-byte), both A majors,
#: unclustered and in 2x1 clusters, 64 and 128 rows, split (fp32 partials), swapped.
_ODD = [
    ("Float16", "k", "n", {"tile_m": 128, "tile_n": 80, "epi_n": 16, "cluster_m": 2, "pdl": True}),
    ("BFloat16", "k", "k", {"tile_m": 128, "tile_n": 96, "cluster_m": 2, "pdl": True}),
    ("Float16", "m", "n", {"tile_m": 64, "tile_n": 112, "epi_n": 16, "pdl": True}),
    ("BFloat16", "m", "k", {"tile_m": 128, "tile_n": 112, "epi_n": 16, "cluster_m": 2}),
    ("Float16", "k", "n", {"tile_m": 128, "tile_n": 96, "partials": True, "pdl": True}),
    ("Float16", "k", "k", {"tile_m": 128, "tile_n": 80, "epi_n": 16, "cluster_m": 2,
                           "swap": True, "pdl": True}),
    ("BFloat16", "m", "k", {"tile_m": 128, "tile_n": 96, "cluster_m": 2, "swap": True,
                            "pdl": True}),
]


def test_sm90_odd_width_tiles_issue_wgmma_of_their_width(tmp_path):
    """Tiles 80, 96 and 112 wide: wgmma n80 / n96 / n112, TMA loads and stores, no spills,
    multicast exactly in 2x1 clusters, swapped ones storing C through the transposing
    ``stmatrix``."""
    counts = compile_in_child("sm_90a", _CHILD, _ODD, tmp_path)
    assert len(counts) == len(_ODD)
    for name, c in counts.items():
        width = _tile_n(name)
        assert width in (80, 96, 112), name
        assert c[f"wgmma_n{width}"] >= 4, f"{name}: no m64n{width}k16 wgmma: {c}"
        assert c["tma_load"] >= 2 and c["tma_store"] >= 1 and c["setmaxnreg"] == 2, f"{name}: {c}"
        assert c["local"] == 0, f"{name}: local memory (register spills) in the PTX: {c}"
        assert (c["multicast"] >= 1) == ("_c2x1_" in name), f"{name}: {c}"
        swapped = "_swap" in name
        assert (c["stmatrix_trans"] >= 1) == (swapped and "_partials" not in name), f"{name}: {c}"


#: Clusters beyond 2x1: 2x2 (configs.sm90._QUAD: one wave of them, even tile columns) in every
#: (A, B) major and both dtypes, on the tiles of 64 and 128 rows the dispatcher puts in them;
#: and the 64 x 64 tile in 2x1 (configs.sm90._ONE_ROW_TILE: N of at most 64).
_CLUSTERS = [
    ("Float16", "k", "n", {"tile_m": 128, "tile_n": 128, "cluster_m": 2, "cluster_n": 2,
                           "pdl": True}),
    ("BFloat16", "m", "n", {"tile_m": 64, "tile_n": 128, "cluster_m": 2, "cluster_n": 2,
                            "pdl": True}),
    ("Float16", "k", "k", {"tile_m": 128, "tile_n": 192, "cluster_m": 2, "cluster_n": 2,
                           "pdl": True}),
    ("BFloat16", "m", "k", {"tile_m": 128, "tile_n": 160, "cluster_m": 2, "cluster_n": 2,
                            "pdl": True}),
    ("Float16", "k", "n", {"tile_m": 128, "tile_n": 256, "cluster_m": 2, "cluster_n": 2,
                           "pdl": True}),
    ("Float16", "k", "n", {"tile_m": 64, "tile_n": 64, "cluster_m": 2, "pdl": True}),
    ("BFloat16", "k", "k", {"tile_m": 64, "tile_n": 64, "cluster_m": 2, "pdl": True}),
]


def test_sm90_2x2_clusters_multicast_both_operands(tmp_path):
    """In 2x2 clusters every TMA load is multicast (A along the cluster's rows, B along its
    columns); in 2x1 only B's are (the 64 x 64 tile too).  No spills."""
    counts = compile_in_child("sm_90a", _CHILD, _CLUSTERS, tmp_path)
    assert len(counts) == len(_CLUSTERS)
    for name, c in counts.items():
        assert c["wgmma"] >= 4 and c["tma_store"] >= 1 and c["setmaxnreg"] == 2, f"{name}: {c}"
        assert c["local"] == 0, f"{name}: local memory (register spills) in the PTX: {c}"
        assert c["tma_load"] >= 2, f"{name}: {c}"
        if "_c2x2_" in name:
            assert c["multicast"] == c["tma_load"], f"{name}: a TMA load not multicast: {c}"
        else:
            assert "_c2x1_" in name and 1 <= c["multicast"] < c["tma_load"], f"{name}: {c}"
            assert c["wgmma_n64"] >= 4, f"{name}: {c}"
        assert c["pdl_wait"] == 1, f"{name}: {c}"


_PARTIALS = [
    ("Float16", "k", "n", {"tile_m": 128, "tile_n": 128, "partials": True}),
    ("BFloat16", "m", "k", {"tile_m": 64, "tile_n": 128, "partials": True}),
    ("Float16", "k", "k", {"tile_m": 128, "tile_n": 256, "partials": True}),
    # A clustered split (B multicast into both CTAs' partial sums).
    ("BFloat16", "k", "n", {"tile_m": 64, "tile_n": 128, "cluster_m": 2, "partials": True}),
    # Narrow tiles of transposed small-M products (C^T = B^T A^T): both B majors.
    ("Float16", "m", "k", {"tile_m": 128, "tile_n": 16, "epi_n": 16, "partials": True}),
    ("BFloat16", "k", "n", {"tile_m": 128, "tile_n": 16, "epi_n": 16, "partials": True}),
    ("Float16", "k", "k", {"tile_m": 128, "tile_n": 32, "partials": True}),
    ("BFloat16", "m", "n", {"tile_m": 128, "tile_n": 64, "partials": True}),
    # 64-row narrow tiles (one consumer warpgroup), as transposed products use them (PDL on).
    ("Float16", "m", "k", {"tile_m": 64, "tile_n": 16, "epi_n": 16, "partials": True,
                           "pdl": True}),
    ("BFloat16", "m", "n", {"tile_m": 64, "tile_n": 32, "partials": True, "pdl": True}),
    # The one-row tile, split (long K, little N).
    ("Float16", "k", "n", {"tile_m": 64, "tile_n": 64, "partials": True}),
]


def test_sm90_split_k_partials_store_fp32_with_tma(tmp_path):
    """The split-K variant keeps the mainloop and stores fp32 partial sums by TMA, no stmatrix
    (a 16-bit instruction) and no spills."""
    counts = compile_in_child("sm_90a", _CHILD, _PARTIALS, tmp_path)
    assert len(counts) == len(_PARTIALS)
    for name, c in counts.items():
        assert name.endswith(("_partials", "_partials_pdl")), name
        assert c["wgmma"] >= 4 and c["tma_load"] >= 2, f"{name}: {c}"
        assert c["tma_store"] >= 1, f"{name}: partial sums not stored with TMA: {c}"
        assert c["stmatrix"] == 0, f"{name}: fp32 partials went through stmatrix: {c}"
        assert c["setmaxnreg"] == 2, name
        assert c["local"] == 0, f"{name}: local memory (register spills) in the PTX: {c}"
        assert (c["multicast"] >= 1) == ("_c2x1_" in name), f"{name}: {c}"


#: Narrow tiles of small-N products storing a 16-bit C themselves (unsplit, ``narrow_n``): in
#: 2x1 clusters as the dispatcher runs them, both B majors, 64- and 128-row, and unclustered.
_NARROW_DIRECT = [
    ("Float16", "k", "n", {"tile_m": 128, "tile_n": 16, "epi_n": 16, "cluster_m": 2, "pdl": True}),
    ("BFloat16", "k", "n", {"tile_m": 128, "tile_n": 32, "cluster_m": 2, "pdl": True}),
    ("Float16", "m", "k", {"tile_m": 64, "tile_n": 16, "epi_n": 16, "cluster_m": 2, "pdl": True}),
    ("BFloat16", "k", "k", {"tile_m": 64, "tile_n": 32, "cluster_m": 2, "pdl": True}),
    ("Float16", "k", "n", {"tile_m": 128, "tile_n": 32}),
]


def test_sm90_narrow_tiles_store_a_16bit_c_with_stmatrix_and_tma(tmp_path):
    """An unsplit narrow tile (16 or 32 wide) converts its accumulators to C's dtype, writes
    them with stmatrix and stores them by TMA, as the wide tiles do; clustered, B multicast;
    no spills."""
    counts = compile_in_child("sm_90a", _CHILD, _NARROW_DIRECT, tmp_path)
    assert len(counts) == len(_NARROW_DIRECT)
    for name, c in counts.items():
        assert "_partials" not in name and _tile_n(name) in (16, 32), name
        assert c["wgmma"] >= 4 and c["tma_load"] >= 2, f"{name}: {c}"
        assert c["stmatrix"] >= 1 and c["tma_store"] >= 1, f"{name}: no 16-bit TMA epilogue: {c}"
        assert c["setmaxnreg"] == 2, name
        assert c["local"] == 0, f"{name}: local memory (register spills) in the PTX: {c}"
        assert (c["multicast"] >= 1) == ("_c2x1_" in name), f"{name}: {c}"
        assert c["pdl_wait"] == (1 if name.endswith("_pdl") else 0), f"{name}: {c}"


#: ``Config.swap`` on 16-bit inputs (C^T = B^T A^T: skinny products whose short M spans the
#: tile's width): every (A, B) major, widths that are and are not powers of two, 2x1 clusters
#: (the multicast tile is then A's), stream-K, and fp32 partials of a split.
_SWAPPED = [
    ("Float16", "k", "n", {"tile_m": 128, "tile_n": 160, "cluster_m": 2, "pdl": True,
                           "swap": True}),
    ("BFloat16", "m", "k", {"tile_m": 128, "tile_n": 192, "streamk": True, "swap": True}),
    ("Float16", "m", "n", {"tile_m": 64, "tile_n": 224, "cluster_m": 2, "streamk": True,
                           "swap": True}),
    ("BFloat16", "k", "k", {"tile_m": 128, "tile_n": 256, "pdl": True, "swap": True}),
    ("Float16", "k", "n", {"tile_m": 128, "tile_n": 128, "partials": True, "pdl": True,
                           "swap": True}),
    # M of 65-127 (configs.sm90._SWAP_ONE_ROW), A M-major.
    ("BFloat16", "m", "n", {"tile_m": 128, "tile_n": 128, "cluster_m": 2, "pdl": True,
                            "swap": True}),
    # M of 33-63 (configs.sm90._SWAP_NARROW): 64-wide tiles of 64 and 128 rows, 2x1.
    ("Float16", "k", "n", {"tile_m": 64, "tile_n": 64, "cluster_m": 2, "pdl": True,
                           "swap": True}),
    ("BFloat16", "m", "k", {"tile_m": 128, "tile_n": 64, "cluster_m": 2, "pdl": True,
                            "swap": True}),
    # M of 129-144, 161-176 and 193-208 with A K-major (configs.sm90._FINE_N), 1x1 and 2x1.
    ("Float16", "k", "n", {"tile_m": 64, "tile_n": 208, "epi_n": 16, "pdl": True, "swap": True}),
    ("BFloat16", "k", "k", {"tile_m": 128, "tile_n": 176, "epi_n": 16, "cluster_m": 2,
                            "pdl": True, "swap": True}),
    ("Float16", "k", "n", {"tile_m": 64, "tile_n": 144, "epi_n": 16, "cluster_m": 2,
                           "pdl": True, "swap": True}),
    # M <= 32 over a long N (configs.sm90._swapped_small_m): all of M in a 16- or 32-wide tile.
    ("Float16", "k", "n", {"tile_m": 64, "tile_n": 16, "epi_n": 16, "pdl": True, "swap": True}),
    ("BFloat16", "m", "k", {"tile_m": 128, "tile_n": 32, "cluster_m": 2, "pdl": True,
                            "swap": True}),
    ("Float16", "m", "n", {"tile_m": 128, "tile_n": 16, "epi_n": 16, "cluster_m": 2,
                           "pdl": True, "swap": True}),
    # Few of them: the deeper ring (configs.sm90._NARROW_RING_STAGES).
    ("BFloat16", "m", "n", {"tile_m": 64, "tile_n": 32, "cluster_m": 2, "pdl": True,
                            "swap": True, "stages": 12}),
]


def test_sm90_swapped_16bit_kernels_store_c_through_its_transpose(tmp_path):
    """A 16-bit kernel that computes C^T = B^T A^T writes its accumulators with the transposing
    ``stmatrix`` into M-major shared sub-tiles and stores them by TMA (fp32 partials by plain
    stores, no stmatrix); wgmma of the tile's width; no spills."""
    counts = compile_in_child("sm_90a", _CHILD, _SWAPPED, tmp_path)
    assert len(counts) == len(_SWAPPED)
    for name, c in counts.items():
        assert "_swap" in name, name
        width = _tile_n(name)
        assert c["wgmma"] >= 4 and c["tma_load"] >= 2 and c["tma_store"] >= 1, f"{name}: {c}"
        if "_partials" in name:
            assert c["stmatrix"] == 0, f"{name}: fp32 partials went through stmatrix: {c}"
        else:
            assert c["stmatrix"] == c["stmatrix_trans"] >= 1, f"{name}: {c}"
        assert c[f"wgmma_n{width}"] >= 4, f"{name}: no m64n{width}k16 wgmma: {c}"
        assert (c["release"] == 1 and c["acquire"] >= 1) == ("_streamk" in name), f"{name}: {c}"
        assert c["setmaxnreg"] == 2, name
        assert c["local"] == 0, f"{name}: local memory (register spills) in the PTX: {c}"
        assert (c["multicast"] >= 1) == ("_c2x1_" in name), f"{name}: {c}"


_STREAMK = [
    ("Float16", "k", "n", {"tile_m": 128, "tile_n": 256, "cluster_m": 2, "streamk": True}),
    ("BFloat16", "m", "k", {"tile_m": 64, "tile_n": 128, "streamk": True}),
    ("Float16", "k", "k", {"tile_m": 128, "tile_n": 128, "cluster_m": 2, "streamk": True}),
    ("BFloat16", "k", "n", {"tile_m": 128, "tile_n": 192, "streamk": True}),
]


def test_sm90_streamk_signals_partial_tiles_between_ctas(tmp_path):
    """Stream-K keeps the TMA/wgmma pipeline and the TMA epilogue, and adds the fixup: partial
    tiles through global memory, a GPU-scope release store of the flag and acquire loads of
    the peers' flags; no spills (the fixup adds into the accumulator registers)."""
    counts = compile_in_child("sm_90a", _CHILD, _STREAMK, tmp_path)
    assert len(counts) == len(_STREAMK)
    for name, c in counts.items():
        assert name.endswith("_streamk"), name
        assert c["wgmma"] >= 4 and c["tma_load"] >= 2 and c["tma_store"] >= 1, f"{name}: {c}"
        assert c["release"] == 1 and c["acquire"] >= 1, f"{name}: {c}"
        assert c["local"] == 0, f"{name}: local memory (register spills) in the PTX: {c}"
        assert (c["multicast"] >= 1) == ("_c2x1_" in name), f"{name}: {c}"


_PDL = [
    ("Float16", "k", "n", {"tile_m": 128, "tile_n": 256, "cluster_m": 2, "pdl": True}),
    ("BFloat16", "m", "k", {"tile_m": 64, "tile_n": 128, "pdl": True, "partials": True}),
]


# The launch attribute, read from the host code's IR (``CUTE_DSL_KEEP=ir``, set before the DSL
# is imported): programmatic stream serialization allowed (1) or not (0).
_LAUNCH_CHILD = r"""
import json, os, pathlib, re, sys
os.environ["CUTE_DSL_KEEP"] = "ir"
from cutematmul.kernels.compile import compile_gemm
from cutematmul.kernels.sm90_hgemm import Sm90Config, Sm90Hgemm
out = {}
for pdl in (False, True):
    for f in pathlib.Path(".").glob("*.mlir"):
        f.unlink()
    compile_gemm(Sm90Hgemm(Sm90Config(tile_m=128, tile_n=128, pdl=pdl), "float16", "k", "n",
                           8, 8, 8, 132))
    ir = "".join(f.read_text() for f in pathlib.Path(".").glob("*.mlir"))
    out[str(pdl)] = re.findall(
        r"programmatic_stream_serialization_allowed\[[^\]]*\] %c(\d)_i32", ir)
print("COUNTS=" + json.dumps(out))
"""


def test_sm90_programmatic_dependent_launch(tmp_path):
    """``Config.pdl``: one grid-dependency wait (every thread, before global memory) and one
    launch-dependents hint (the producer, after its last load), the rest of the kernel as
    without it, and a launch that allows programmatic stream serialization (only then)."""
    counts = compile_in_child("sm_90a", _CHILD, _PDL, tmp_path)
    assert len(counts) == len(_PDL)
    for name, c in counts.items():
        assert name.endswith("_pdl"), name
        assert c["pdl_wait"] == 1 and c["pdl_launch"] == 1, f"{name}: {c}"
        assert c["wgmma"] >= 4 and c["tma_load"] >= 2 and c["tma_store"] >= 1, f"{name}: {c}"
        assert c["setmaxnreg"] == 2 and c["local"] == 0, f"{name}: {c}"
    launch = compile_in_child("sm_90a", _LAUNCH_CHILD, None, tmp_path)
    assert launch == {"False": ["0"], "True": ["1"]}, launch


#: Pingpong (configs.sm90._PINGPONG_TILE): the 128 x 128 tile the wave model picks, clustered and
#: not, every operand major, 16-bit dtypes; the 64-row tiles the kernel also builds; and a split.
_PINGPONG = [
    ("Float16", "k", "n", {"tile_m": 128, "tile_n": 128, "cluster_m": 2, "pingpong": True,
                           "pdl": True}),
    ("BFloat16", "m", "k", {"tile_m": 128, "tile_n": 128, "cluster_m": 2, "pingpong": True,
                            "pdl": True}),
    ("Float16", "m", "n", {"tile_m": 128, "tile_n": 128, "pingpong": True, "pdl": True}),
    ("BFloat16", "k", "k", {"tile_m": 128, "tile_n": 128, "pingpong": True}),
    ("Float16", "k", "n", {"tile_m": 64, "tile_n": 256, "pingpong": True}),
    ("Float16", "k", "k", {"tile_m": 128, "tile_n": 128, "pingpong": True, "partials": True}),
]


def test_sm90_pingpong_runs_a_whole_tile_per_warpgroup(tmp_path):
    """Each consumer warpgroup computes a whole tile: a 128-row tile issues two m64 wgmma per
    k-block, each warpgroup meets at its own epilogue barrier (its id in a register) and the
    turn passes through two more mbarriers; no spills (a whole tile's 128 fp32 accumulators per
    thread)."""
    counts = compile_in_child("sm_90a", _CHILD, _PINGPONG, tmp_path)
    cooperative = compile_in_child("sm_90a", _CHILD, [
        ("Float16", "k", "n", {"tile_m": 128, "tile_n": 128, "cluster_m": 2, "pdl": True})],
        tmp_path)
    coop = next(iter(cooperative.values()))
    assert len(counts) == len(_PINGPONG)
    for name, c in counts.items():
        assert "_pingpong" in name, name
        width = _tile_n(name)
        assert c[f"wgmma_n{width}"] >= 4 and c["tma_load"] >= 2 and c["tma_store"] >= 1, name
        assert c["setmaxnreg"] == 2 and c["local"] == 0, f"{name}: {c}"
        assert c["barrier_by_register"] >= 1, f"{name}: no per-warpgroup epilogue barrier: {c}"
        assert (c["multicast"] >= 1) == ("_c2x1_" in name), f"{name}: {c}"
        if "_partials" in name:
            assert c["stmatrix"] == 0, f"{name}: fp32 partials went through stmatrix: {c}"
        else:
            assert c["stmatrix"] >= 1, name
    assert coop["barrier_by_register"] == 0, coop
    c = counts[next(n for n in counts if n.startswith("Float16-kn-sm90_128x128x64_c2x1"))]
    assert c["mbarrier_init"] == coop["mbarrier_init"] + 2, (c, coop)
    assert c["wgmma_n128"] >= 2 * coop["wgmma_n128"], "two m64 wgmma rows per warpgroup"


#: Tall tiles (256 x 64-192, 16-bit): each consumer warpgroup issues two m64 wgmma rows (128
#: rows of the tile); clustered or not, both A majors, both B majors (an N-major B 160 wide is
#: 64-byte swizzled), and a split.  Built, not offered by the wave model.
_TALL = [
    ("Float16", "k", "n", {"tile_m": 256, "tile_n": 128, "pdl": True}),
    ("BFloat16", "m", "k", {"tile_m": 256, "tile_n": 128, "cluster_m": 2, "pdl": True}),
    ("Float16", "k", "k", {"tile_m": 256, "tile_n": 128, "partials": True}),
    ("BFloat16", "m", "n", {"tile_m": 256, "tile_n": 64}),
    ("Float16", "k", "n", {"tile_m": 256, "tile_n": 160, "cluster_m": 2, "pdl": True}),
    ("BFloat16", "m", "n", {"tile_m": 256, "tile_n": 160, "pdl": True}),
    ("BFloat16", "k", "k", {"tile_m": 256, "tile_n": 192, "partials": True}),
    ("Float16", "m", "n", {"tile_m": 256, "tile_n": 192, "cluster_m": 2, "pdl": True}),
]


def test_sm90_tall_tiles_issue_two_wgmma_rows_per_warpgroup(tmp_path):
    """A 256-row tile: two consumer warpgroups of 128 rows each (two m64 wgmma per k-block),
    epilogue sub-tiles of 128 rows, one epilogue barrier (no per-warpgroup one), no spills."""
    counts = compile_in_child("sm_90a", _CHILD, _TALL, tmp_path)
    one_row = compile_in_child("sm_90a", _CHILD, [
        ("Float16", "k", "n", {"tile_m": 128, "tile_n": 128, "pdl": True})], tmp_path)
    base = next(iter(one_row.values()))
    assert len(counts) == len(_TALL)
    for name, c in counts.items():
        assert "_256x" in name, name
        width = _tile_n(name)
        assert c["tma_load"] >= 2 and c["tma_store"] >= 1 and c["setmaxnreg"] == 2, f"{name}: {c}"
        assert c["local"] == 0, f"{name}: local memory (register spills) in the PTX: {c}"
        assert c["barrier_by_register"] == 0, f"{name}: {c}"
        assert (c["multicast"] >= 1) == ("_c2x1_" in name), f"{name}: {c}"
        if width == 128:
            assert c["wgmma_n128"] >= 2 * base["wgmma_n128"], f"{name}: {c} against {base}"
        if width in (160, 192):  # the tile's own width only, two rows per warpgroup
            own = c[f"wgmma_n{width}"]
            assert own >= 2 * base["wgmma_n128"] and own == c["wgmma"], f"{name}: {c}"



#: A C whose rows are no whole 16-byte vectors (``Config.stores_any_c``): cooperative tiles in
#: 1x1 and 2x1 clusters, pingpong, both A majors and dtypes.
_DIRECT_C = [
    ("Float16", "k", "n", {"tile_m": 128, "tile_n": 128, "cluster_m": 2, "pdl": True,
                           "align_c": 1}),
    ("BFloat16", "m", "k", {"tile_m": 128, "tile_n": 128, "cluster_m": 2, "pingpong": True,
                            "pdl": True, "align_c": 1}),
    ("Float16", "k", "k", {"tile_m": 64, "tile_n": 128, "pdl": True, "align_c": 1}),
    ("BFloat16", "k", "n", {"tile_m": 128, "tile_n": 256, "align_c": 1}),
]


def test_an_unaligned_c_is_stored_element_by_element_without_tma(tmp_path):
    """C rows of no whole 16-byte vectors: the epilogue keeps its stmatrix sub-tiles in shared
    memory and the tile's threads store them with 16-bit global stores (no TMA store, which
    needs 16-byte rows), the mainloop unchanged (TMA loads, wgmma), no spills."""
    counts = compile_in_child("sm_90a", _CHILD, _DIRECT_C, tmp_path)
    assert len(counts) == len(_DIRECT_C)
    for name, c in counts.items():
        assert c["tma_store"] == 0 and c["st_global_b16"] >= 1, f"{name}: {c}"
        assert c["st_global"] == c["st_global_b16"], f"{name}: other global stores: {c}"
        assert c["stmatrix"] >= 1 and c["tma_load"] >= 2 and c["wgmma"] >= 4, f"{name}: {c}"
        assert c["local"] == 0, f"{name}: local memory (register spills) in the PTX: {c}"


def test_an_unaligned_c_is_refused_where_the_tile_cannot_store_it():
    """Swapped, split (partials) and stream-K tiles store C by TMA only; the planner copies
    their C (``dispatch.copied_c``), and the kernel refuses to be built for such a C."""
    from cutematmul.kernels.sm90_hgemm import Sm90Config, Sm90Hgemm

    for cfg in ({"tile_m": 128, "tile_n": 192, "swap": True},
                {"tile_m": 128, "tile_n": 128, "partials": True},
                {"tile_m": 128, "tile_n": 128, "cluster_m": 2, "streamk": True}):
        with pytest.raises(ValueError, match="data-parallel, unswapped"):
            Sm90Hgemm(Sm90Config(**cfg), "float16", "k", "n", 8, 8, 1, 132)


# ----------------------------------------------------------------------------- wgmma pipelining
# ptxas serializes every wgmma of a kernel (each one waited for before the next issues) when
# code reading or defining the accumulators lands inside the pipeline, and says so only in an
# advisory (C7510-C7519, "Potential Performance Loss").  LLVM may move such code across
# ``wgmma.wait_group`` unless the accumulators are pinned (``fence_accumulators``); the bf16
# build of the 64 x 32 swapped tile ran 35% slower than its fp16 twin that way.  The child
# writes each kernel's PTX; the local ptxas assembles it (``tools/codegen_audit.ptxas_report``).

_PTX_CHILD = r"""
import json, os, sys
os.environ["CUTE_DSL_KEEP"] = "ptx,cubin"  # read when the DSL is imported
from cutematmul.kernels.compile import compile_gemm
from cutematmul.kernels.sm90_hgemm import Sm90Config, Sm90Hgemm
names = []
for i, (dtype, a_major, b_major, cfg) in enumerate(json.loads(sys.argv[1])):
    align = 4 if dtype.startswith("tf32") else 8
    kernel = Sm90Hgemm(Sm90Config(**cfg), dtype, a_major, b_major, align, align, align, 132)
    name = f"{dtype}-{a_major}{b_major}-{kernel.config.name}"
    compiled = compile_gemm(kernel, keep_ptx=True)
    with open(f"k{i}.ptx", "w") as f:
        f.write(compiled.__ptx__)
    with open(f"k{i}.cubin", "wb") as f:
        f.write(compiled.__cubin__)
    names.append(name)
print("NAMES=" + json.dumps(names))
"""

# The narrow tiles of both 16-bit types (where LLVM moved the bf16 conversion), a wide tile,
# the widest tall tile (192 accumulators per thread), pingpong, stream-K, and the TF32 kernels:
# narrow, A from registers, 3xTF32.
_PIPELINED = [
    ("bfloat16", "k", "n", {"tile_m": 64, "tile_n": 32, "swap": True, "pdl": True}),
    ("bfloat16", "m", "n", {"tile_m": 64, "tile_n": 16, "epi_n": 16, "cluster_m": 2, "swap": True,
                            "pdl": True}),
    ("bfloat16", "k", "n", {"tile_m": 128, "tile_n": 16, "epi_n": 16, "cluster_m": 2, "pdl": True}),
    ("float16", "k", "n", {"tile_m": 64, "tile_n": 32, "swap": True, "pdl": True}),
    ("bfloat16", "k", "k", {"tile_m": 128, "tile_n": 256, "cluster_m": 2, "pdl": True}),
    ("float16", "k", "n", {"tile_m": 256, "tile_n": 192, "cluster_m": 2, "pdl": True}),
    ("float16", "k", "k", {"tile_m": 128, "tile_n": 128, "pingpong": True, "pdl": True}),
    ("bfloat16", "m", "k", {"tile_m": 64, "tile_n": 128, "streamk": True}),
    ("tf32", "k", "k", {"tile_m": 64, "tile_n": 16, "tile_k": 32, "epi_n": 16, "partials": True,
                        "pdl": True}),
    ("tf32", "m", "k", {"tile_m": 64, "tile_n": 16, "tile_k": 32, "epi_n": 16, "pdl": True}),
    ("tf32x3", "k", "k", {"tile_m": 128, "tile_n": 128, "tile_k": 32, "partials": True}),
]


@pytest.fixture(scope="module")
def pipelined_builds(tmp_path_factory):
    """(names, folder): the ``_PIPELINED`` kernels' PTX and cubins, ``k{i}.ptx``/``.cubin``."""
    folder = tmp_path_factory.mktemp("pipelined")
    names = compile_in_child("sm_90a", _PTX_CHILD, _PIPELINED, folder, prefix="NAMES=")
    assert len(names) == len(_PIPELINED)
    return names, folder


def test_sm90_wgmma_pipelines_are_not_serialized_and_nothing_spills(pipelined_builds, tmp_path):
    """No kernel draws a ptxas advisory that it serialized its wgmma, and none spills registers
    (the PTX checks above see no local memory, but ptxas's register allocation can add it)."""
    import shutil

    from helpers import load_tool

    if shutil.which("ptxas") is None:
        pytest.skip("no ptxas on PATH: the wgmma serialization advisories come from ptxas")
    ptxas_report = load_tool("codegen_audit").ptxas_report
    names, folder = pipelined_builds
    for i, name in enumerate(names):
        report, log = ptxas_report((folder / f"k{i}.ptx").read_text(), "sm_90a", tmp_path)
        assert not report["ptxas_failed"], f"{name}: ptxas failed:\n{log}"
        assert not report["advisories"], f"{name}: {report['advisories']}"
        spills = report["spills"]
        assert spills and all(s == (0, 0) for s in spills), f"{name}: spills {spills}"


def test_sm90_machine_code_keeps_wgmma_pipelined_and_descriptors_uniform(pipelined_builds,
                                                                        tmp_path):
    """The DSL's own cubins, read by nvdisasm: no local memory, no wgmma waited out, and no
    R2UR in the wgmma mainloop.  A descriptor computed from a value ptxas cannot prove
    warp-uniform (the MMA slice taken from the thread index) is moved from vector to uniform
    registers before every wgmma: 69 instructions per K-tile of the 128 x 256 mainloop against
    51 (``kernels/sm90_hgemm``, 2026-12-04)."""
    from helpers import load_tool

    audit = load_tool("codegen_audit")
    nvdisasm = audit.find_nvdisasm()
    if nvdisasm is None:
        pytest.skip("no nvdisasm (pip install nvidia-cuda-nvdisasm, in the test extra)")
    names, folder = pipelined_builds
    for i, name in enumerate(names):
        report = audit.nvdisasm_report((folder / f"k{i}.cubin").read_bytes(), tmp_path, nvdisasm)
        assert report["stl"] == report["ldl"] == 0, f"{name}: {report}"
        assert not report["serialized"], f"{name}: {report}"
        assert report["mainloop"] > 0 and report["mainloop_r2ur"] == 0, f"{name}: {report}"
