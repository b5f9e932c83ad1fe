"""The workload compute-sanitizer runs: every kernel family on the shapes that stress addressing.

Each family (simt fp32, sm80 and sm90 fp16/bf16, and "tf32": the sm90 kernel in the TF32 and
3xTF32 modes with the operand prep of ``kernels/operand_prep.py``) runs tails in M, N and K,
all four operand layouts (each twice: the repeat takes the device route's fast path),
unaligned and strided views (which go through staging), broadcast batches, 1-D operands,
the sm90 tiles of widths that are no power of two (128 x 160 and 224; 80, 96 and 112 in every
layout, split and swapped too), 16-bit operands TMA cannot address (copied
by the operand prep in their own major), the sm90 pingpong schedule (forced: two
warpgroups on alternate tiles, an order barrier between them) in every layout, skinny products
the sm90 kernel computes swapped (C^T = B^T A^T, C stored through its transpose, data-parallel
and stream-K), products in 2x2 clusters and the 64 x 64 tile in 2x1 ones, every SIMT tile, the
SIMT row-streaming kernels (untransposed and transposed, and staged) and the one-pass TF32
schedules with a register operand in every layout (forced),
split-K products (fp32 partials and the reduction kernel) and a column-major ``out``; "streamk"
is the sm90 kernel's stream-K schedule (forced), whose CTAs exchange partial tiles; "cupy" runs
CuPy arrays whose staging goes through the adapter's pitched ``cudaMemcpy2DAsync`` (odd row
pitches, stacked matrices, an unaligned ``out``) with CuPy's memory pool off; "jax" runs jitted
products (the XLA route: split, C^T, SIMT and sm80 kernels over operands XLA pads) with XLA's
"platform" allocator, each buffer its own allocation.  Every result is
checked against float64, so a run that "passes" the sanitizer with wrong numbers still fails.
Run through ``tools/sanitize.sh``; by itself it is a plain correctness check.

    python tools/sanitize_cases.py [--families simt,sm80,sm90,tf32,streamk,cupy,jax] [--quick]
    python tools/sanitize_cases.py --families sm90 --list            # its groups
    python tools/sanitize_cases.py --families sm90 --groups swapped  # one of them
"""

from __future__ import annotations

import argparse
import functools
import sys
from dataclasses import replace

import numpy as np
import torch

import cutematmul

TOL = {("float32", "highest"): 2e-5, ("float32", "high"): 2e-5, ("float32", "tf32"): 4e-3,
       ("float16", "highest"): 1e-3, ("bfloat16", "highest"): 8e-3}
#: (dtype, precision) per family; "tf32" is the sm90 kernel on float32 through the TF32 modes.
FAMILY_MODES = {"simt": (("float32", "highest"),),
                "sm80": (("float16", "highest"), ("bfloat16", "highest")),
                "sm90": (("float16", "highest"), ("bfloat16", "highest")),
                "tf32": (("float32", "tf32"), ("float32", "high"))}
#: What kernel= each family is reached with (the TF32 modes are the sm90 kernel's).  sm90 is
#: forced: the dispatcher sends 16-bit products no side of which passes 128 to sm80.
KERNEL = {"simt": "simt", "sm80": "sm80", "sm90": "sm90", "tf32": "auto"}
# Families that split K on skinny products (5 x 300 x 1000 is split on an H100/H200).
SPLIT_FAMILIES = ("simt", "sm90", "tf32")
SHAPES = [(1, 1, 1), (7, 5, 3), (33, 17, 65), (129, 67, 31), (64, 128, 64), (200, 136, 257),
          (48, 200, 300)]


def _randn(shape, dtype, gen):
    return torch.randn(shape, generator=gen, device="cuda",
                       dtype=torch.float32).to(getattr(torch, dtype))


def _check(res, a, b, mode, what):
    want = torch.matmul(a.double(), b.double())
    num = torch.linalg.vector_norm((res.double() - want).reshape(-1))
    den = torch.linalg.vector_norm(want.reshape(-1))
    err = float(num / den) if float(den) else float(num)
    if not err <= TOL[mode]:
        raise AssertionError(f"{what}: relative error {err:.3g} > {TOL[mode]}")


def _operands(m, n, k, layout, dtype, gen, a_batch=(), b_batch=()):
    """A (a_batch + (m, k)) and B (b_batch + (k, n)), each stored transposed where ``layout``
    ("nn", "tn", ...) says "t"."""
    def operand(batch, rows, cols, transposed):
        if transposed:
            return _randn(batch + (cols, rows), dtype, gen).transpose(-1, -2)
        return _randn(batch + (rows, cols), dtype, gen)

    return (operand(a_batch, m, k, layout[0] == "t"), operand(b_batch, k, n, layout[1] == "t"))


def _out(shape, dtype, poison: bool):
    """The output buffer: NaN-poisoned (initialized), or fresh (only the kernel writes it)."""
    if poison:
        return torch.full(shape, float("nan"), device="cuda", dtype=dtype)
    return torch.empty(shape, device="cuda", dtype=dtype)


#: Stream-K products, forced through the tuned tier: (M, N, K, dtype, precision, tile, cluster).
STREAMK_CASES = [(1000, 1000, 1000, "float16", "highest", (128, 128), 2),
                 (257, 392, 4104, "bfloat16", "highest", (128, 256), 2),
                 (130, 200, 20000, "float16", "highest", (64, 128), 2),
                 (300, 200, 3000, "float32", "tf32", (128, 128), 1)]


def _forced(a, b, choice, precision: str, poison: bool, holds, what: str, kernel: str = "auto"):
    """``a @ b`` into a fresh (m, n) ``out`` with ``choice`` (config, splits, transposed) forced as
    the product's schedule through the tuned tier (what ``cutematmul.tune`` records); an
    AssertionError unless the planned launch ``holds`` the forced choice."""
    from cutematmul import cache, launch
    from cutematmul.adapters import adapter_for

    work = launch.planned_launch(adapter_for(a), a, b, precision=precision, kernel=kernel)
    with cache.trial_tuned(work.problem, choice):
        if not holds(launch.planned_launch(adapter_for(a), a, b, precision=precision,
                                           kernel=kernel)):
            raise AssertionError(f"{what}: the forced schedule is not the planned one")
        out = _out((a.shape[0], b.shape[1]), a.dtype, poison)
        return cutematmul.matmul(a, b, out=out, precision=precision, kernel=kernel)


#: Skinny 16-bit products the dispatcher runs swapped (``configs.sm90._swapped_skinny``: C^T =
#: B^T A^T in the kernel, C stored through its transpose): (M, N, K, dtype, layout).  64-row
#: tiles, 128-row tiles, stream-K (few tiles, a long K) and 2x1 clusters (A M-major; at M = 184
#: in rows of no whole 32-byte sectors), with tails in M (inside the tile's width), N and K;
#: then M of 65-127 on 128 x 128 tiles (``_SWAP_ONE_ROW``), A K-major in rows of no whole
#: 128-byte lines (2x1), M of 33-63 on 64-wide tiles of 64 and 128 rows (``_SWAP_NARROW``),
#: M of 65-96 on 64-row tiles 80 wide (2x1) and 96 wide (``_SWAP_ODD_ROWS``), and M of
#: 129-144 and 193-208 on tiles 144 and 208 wide (``_FINE_N``, the second in 2x1 clusters),
#: and a long K over A's rows of no whole lines on 128-row stream-K tiles (``_SWAP_LONG_K_TILES``);
#: and M of 32 or less on the narrow tiles (``_swapped_small_m``): 64 rows with the deeper ring
#: (few tiles, ``_NARROW_RING_STAGES``; the second case, so ``--quick`` runs it), and 128 rows;
#: last, mid products on swapped 128-row tiles 144 and 208 wide (``_swapped_wide``), tails in M,
#: N and K, the second over an odd count of tile rows in 2x1 clusters (their batches below).
SWAP_CASES = [(160, 4104, 1000, "float16", "nn"), (24, 4104, 8200, "bfloat16", "tn"),
              (13, 3000, 6000, "float16", "nn"), (8, 9000, 2056, "float16", "nt"),
              (200, 4096, 8200, "bfloat16", "nn"),
              (176, 8200, 1000, "float16", "tn"), (192, 10000, 512, "float16", "nt"),
              (224, 5000, 8200, "float16", "nt"), (184, 5000, 8200, "float16", "tt"),
              (104, 9000, 2000, "float16", "tn"), (160, 6000, 6008, "float16", "nn"),
              (48, 6000, 3000, "float16", "nn"), (40, 16000, 2056, "bfloat16", "tn"),
              (69, 4104, 1000, "float16", "nn"), (90, 3904, 2056, "bfloat16", "nt"),
              (140, 6000, 3000, "float16", "nn"), (200, 6000, 2056, "bfloat16", "nt"),
              (150, 7000, 10000, "float16", "nn"),
              (1376, 3208, 2912, "float16", "nn"), (2848, 3352, 2760, "bfloat16", "nt")]
#: Batches of mid products on the swapped wide tiles (``_swapped_wide`` at every batch since the
#: 60th session): (batch, M, N, K, dtype, layout, shared), ``shared`` "a" for an A broadcast over
#: the batch (batch stride 0), else ""; tails in M (inside the width), N and K, 2x1 clusters.
SWAP_BATCH_CASES = [(5, 336, 1352, 1480, "float16", "nn", ""),
                    (4, 520, 744, 656, "bfloat16", "nn", ""),
                    (4, 520, 744, 656, "bfloat16", "nn", "a")]


def _swapped(gen, quick: bool, poison: bool) -> int:
    """The sm90 kernel computing C^T = B^T A^T (``Config.swap``) as the dispatcher picks it."""
    count = 0
    for m, n, k, dtype, layout in SWAP_CASES[:2] if quick else SWAP_CASES:
        count += _as_dispatched(gen, m, n, k, dtype, layout, poison,
                                lambda work: work is not None and work.key.config.swap,
                                f"swapped {dtype} {m}x{n}x{k} {layout}")
    batch_cases = SWAP_BATCH_CASES[:1] if quick else SWAP_BATCH_CASES
    for batch, m, n, k, dtype, layout, shared in batch_cases:
        count += _as_dispatched(gen, m, n, k, dtype, layout, poison,
                                lambda work: work is not None and work.key.config.swap,
                                f"swapped batch {batch}{' shared A' if shared else ''} {dtype} "
                                f"{m}x{n}x{k} {layout}",
                                batches=(() if shared == "a" else (batch,), (batch,)))
    return count


def _as_dispatched(gen, m: int, n: int, k: int, dtype: str, layout: str, poison: bool, holds,
                   what: str, batches: tuple[tuple[int, ...], tuple[int, ...]] = ((), ()),
                   **call) -> int:
    """A fresh ``layout`` product (A's and B's batch shapes ``batches``) as the dispatcher plans
    it (``call``: ``matmul``'s keywords, e.g. ``kernel``), an AssertionError unless the planned
    launch (None: staged) ``holds``; checked against float64.  Returns 1."""
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    a, b = _operands(m, n, k, layout, dtype, gen, *batches)
    work = launch.planned_launch(adapter_for(a), a, b, **call)
    if not holds(work):
        raise AssertionError(f"{what}: the dispatcher planned "
                             f"{'a staged product' if work is None else work.key.config.name}")
    out = _out(max(batches, key=len) + (m, n), a.dtype, poison)
    _check(cutematmul.matmul(a, b, out=out, **call), a, b, (dtype, "highest"), what)
    return 1


#: Products the dispatcher runs in 2x2 clusters (``configs.sm90._QUAD``: A and B multicast),
#: and the 64 x 64 tile of N <= 64 in 2x1 clusters; odd tile rows, tails, every layout.
CLUSTER_CASES = [(200, 1000, 999, "float16", "nn", (2, 2)),
                 (1537, 1531, 1000, "bfloat16", "tn", (2, 2)),
                 (2816, 256, 2496, "float16", "nt", (2, 2)),
                 (648, 968, 2784, "float16", "tt", (2, 2)),
                 (4097, 64, 1000, "float16", "nn", (2, 1)),
                 (3000, 57, 2000, "bfloat16", "nt", (2, 1))]


def _clusters(gen, quick: bool, poison: bool) -> int:
    """The sm90 kernel in the clusters the dispatcher picks beyond the 2x1 ones of wide tiles."""
    from cutematmul.configs.sm90 import Config

    count = 0
    for m, n, k, dtype, layout, cluster in CLUSTER_CASES[::3] if quick else CLUSTER_CASES:
        # A staged product (odd rows) plans its launch on the copies: not checked here.
        count += _as_dispatched(
            gen, m, n, k, dtype, layout, poison,
            lambda work, cluster=cluster: work is None
            or (work.key.config.cluster_m, work.key.config.cluster_n) == cluster,
            f"{cluster[0]}x{cluster[1]} clusters {dtype} {m}x{n}x{k} {layout}")
    # Several waves of 2x2 clusters, as the tuner may record them (``_quad_shape``): the grid
    # holds only resident clusters, each walking several tiles.

    for m, n, k, layout, tile in ((1000, 1000, 1000, "tn", (64, 128)),
                                  (2056, 2056, 520, "nt", (128, 256)))[:1 if quick else 2]:
        choice = (Config(tile_m=tile[0], tile_n=tile[1], cluster_m=2, cluster_n=2, pdl=True), 1,
                  False)
        count += _forced_exactly(gen, m, n, k, layout, choice, ("float16", "highest"), "auto",
                                 poison, f"2x2 clusters over several waves {m}x{n}x{k} {layout}")
    return count


def _forced_exactly(gen, m: int, n: int, k: int, layout: str, choice, mode, kernel: str,
                    poison: bool, what: str) -> int:
    """A fresh ``layout`` product with ``choice`` (config, splits, transposed) forced as its
    schedule (``_forced``), held to be exactly the planned launch, checked against float64;
    ``mode`` is (dtype, precision).  Returns 1, the products it ran."""
    dtype, precision = mode
    a, b = _operands(m, n, k, layout, dtype, gen)

    def holds(work):
        return (work.key.config, work.splits, work.transposed) == choice

    res = _forced(a, b, choice, precision, poison, holds, what, kernel=kernel)
    _check(res, a, b, mode, what)
    return 1


def _streamk(gen, quick: bool, poison: bool) -> int:
    """The sm90 kernel's stream-K schedule (partial tiles through a workspace, flags between
    CTAs) on products whose tiles straddle CTAs."""
    from cutematmul.configs.sm90 import Config, epilogue_width, tf32_fields

    count = 0
    for m, n, k, dtype, precision, (tm, tn), cluster in (STREAMK_CASES[:2] if quick
                                                         else STREAMK_CASES):
        a, b = _operands(m, n, k, "nn", dtype, gen)
        # TF32 tiles; the kernel swaps (C^T = B^T A^T) as B is N-major here ("nn").
        extra = {**tf32_fields("tf32"), "swap": True} if dtype == "float32" else {}
        config = Config(tile_m=tm, tile_n=tn, cluster_m=cluster, epi_n=epilogue_width(tn),
                        streamk=True, **extra)
        what = f"streamk {dtype} {precision} {m}x{n}x{k}"
        res = _forced(a, b, (config, 1, False), precision, poison,
                      lambda work: work.streamk is not None, what)
        _check(res, a, b, (dtype, precision), what)
        count += 1
    return count


def _cupy(quick: bool, poison: bool) -> int:
    """CuPy operands and outputs that the adapter stages with pitched 2-D copies: row pitches that
    are no multiple of 16 bytes, a stack of whole matrices, an unaligned ``out`` view (copied back),
    and a transposed view and a 4-D broadcast (``cupy.copyto``).  CuPy's pool is off, so an access
    past a staging buffer lands outside any live allocation."""
    import cupy

    cupy.cuda.set_allocator(None)
    rng = cupy.random.default_rng(1)
    count = 0
    for dtype, precision in (("float16", "highest"), ("float32", "highest"), ("float32", "tf32")):
        def randn(*shape):
            return rng.standard_normal(shape, dtype=cupy.float32).astype(dtype)

        big, stack = randn(70, 91), randn(3, 40, 51)
        cases = [(big[1:34, 3:48], randn(45, 31), None),
                 (randn(200, 257), randn(257, 136), None),
                 (stack[:, :, 1:46], randn(45, 29), None),
                 (randn(2, 29, 45)[:, :, 1:41], stack[:2, :, 2:50], None),
                 (randn(33, 45), randn(45, 31), (34, 47)),
                 (big[3:60, 2:50].T, randn(57, 20), None),
                 (randn(3, 1, 21, 13), randn(4, 13, 9), None)]
        for a, b, backing in cases[:4] if quick else cases:
            shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
            rows, cols = shape[-2:]
            if backing is None:
                out = cupy.empty(shape, dtype) if not poison else cupy.full(shape, cupy.nan, dtype)
            else:  # a view one column in: its row pitch is no multiple of 16 bytes
                out = cupy.full(backing, cupy.nan, dtype)[:rows, 1:cols + 1]
            res = cutematmul.matmul(a, b, out=out, precision=precision)
            if res is not out:
                raise AssertionError("cupy: the result is not the out= array")
            want = cupy.matmul(a.astype(cupy.float64), b.astype(cupy.float64))
            err = float(cupy.linalg.norm((res.astype(cupy.float64) - want).ravel())
                        / cupy.linalg.norm(want.ravel()))
            tol = TOL[(dtype, precision)]
            if not err <= tol:
                raise AssertionError(f"cupy {dtype} {precision} {a.shape}@{b.shape}: "
                                     f"relative error {err:.3g} > {tol}")
            count += 1
    cupy.cuda.get_current_stream().synchronize()
    return count


#: Jitted products (the XLA route): (dtype, precision, A's stored shape, B's, A stored
#: transposed, B stored transposed, what the plan does: "sm80", "split", "transposed" (C^T) or
#: "padded").  Each B is a parameter of the jitted function that XLA
#: hands the kernel as it is (rows of whole 16-byte vectors), in an allocation of its own under
#: the "platform" allocator, so a read past it is reported; the sm80 ones are those whose C or
#: A XLA pads (the forty-first session's bug read up to 7 rows past such a B).
JAX_CASES = [
    ("float16", "highest", (100, 64), (37, 64), False, True, "sm80"),  # C padded past B's rows
    ("float16", "highest", (100, 37), (37, 64), False, False, "sm80"),  # A's K padded past B's
    ("bfloat16", "highest", (70, 48), (99, 48), False, True, "sm80"),  # C padded past B's rows
    ("float16", "highest", (16, 20000), (20000, 40), False, False, "split"),  # partials of 40
    ("bfloat16", "highest", (9000, 64), (9000, 96), True, False, "split"),  # A M-major
    ("float16", "highest", (24, 2048), (2048, 1024), False, False, "transposed"),
    ("float32", "highest", (20, 5000), (5000, 30), False, False, "split"),  # SIMT, rows in 32
    ("float32", "highest", (256, 512), (6, 512), False, True, "transposed"),  # SIMT C^T
    ("float32", "tf32", (8, 3000), (3000, 1000), False, False, "transposed"),  # TF32 C^T
    ("float16", "highest", (33, 45), (45, 31), False, False, "padded"),  # rows XLA pads
    # SIMT's row-streaming kernel on 16-bit rows of no whole vectors, as they are:
    ("bfloat16", "highest", (4, 201), (201, 20001), False, False, "in place"),  # C itself
    ("float16", "highest", (2049, 4), (2049, 1027), True, False, "in place"),  # partials
]


def _jax(quick: bool) -> int:
    """``JAX_CASES`` through ``jax.jit``, each checked against float64."""
    import os

    # Before JAX starts its backend: one allocation per buffer, nothing preallocated.
    os.environ.setdefault("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(3)
    count = 0
    for dtype, precision, a_shape, b_shape, ta, tb, _ in JAX_CASES[:4] if quick else JAX_CASES:
        a = jnp.asarray(rng.standard_normal(a_shape, dtype=np.float32)).astype(dtype)
        b = jnp.asarray(rng.standard_normal(b_shape, dtype=np.float32)).astype(dtype)

        def f(x, y, ta=ta, tb=tb, precision=precision):
            return cutematmul.matmul(x.T if ta else x, y.T if tb else y, precision=precision)

        got = np.asarray(jax.jit(f)(a, b).astype(jnp.float32), np.float64)
        ea, eb = (np.asarray(x.astype(jnp.float32), np.float64) for x in (a, b))
        want = (ea.T if ta else ea) @ (eb.T if tb else eb)
        err = np.linalg.norm(got - want) / np.linalg.norm(want)
        if not err <= TOL[(dtype, precision)]:
            raise AssertionError(f"jax {dtype} {precision} {a_shape}@{b_shape}: relative error "
                                 f"{err:.3g} > {TOL[(dtype, precision)]}")
        count += 1
    return count


#: Tiles of widths that are no power of two, forced (the dispatcher gives them to larger
#: products): (M, N, K, dtype, tile, splits), odd tile rows and tails in M, N and K (every
#: extent a multiple of 8, so that no operand is staged); last, the tall 256 x 160 and
#: 256 x 192 tiles (built, not offered), an odd count of tile rows in 2x1 clusters, one split.
WIDE_CASES = [(296, 400, 104, "float16", (128, 160), 1), (200, 248, 304, "bfloat16", (128, 224), 1),
              (152, 168, 704, "float16", (128, 224), 2),
              (600, 328, 520, "float16", (256, 160), 1),
              (520, 400, 1032, "bfloat16", (256, 192), 2)]


def _wide(gen, quick: bool, poison: bool) -> int:
    """The sm90 kernel at 128 x 160 and 128 x 224 (an N-major B tile 64-byte swizzled) and
    256 x 160 / 256 x 192 in every layout, clustered, some split-K."""
    from cutematmul.configs.sm90 import Config

    count = 0
    for m, n, k, dtype, (tm, tn), splits in WIDE_CASES[:1] if quick else WIDE_CASES:
        config = Config(tile_m=tm, tile_n=tn, cluster_m=2, partials=splits > 1, pdl=True)
        for layout in ("nn", "tn", "nt", "tt"):
            a, b = _operands(m, n, k, layout, dtype, gen)
            what = f"wide {tm}x{tn} {dtype} {m}x{n}x{k} {layout}"
            res = _forced(a, b, (config, splits, False), "highest", poison,
                          lambda work: work.key.config.tile_n == tn
                          and work.key.config.tile_m == tm, what, kernel="sm90")
            _check(res, a, b, (dtype, "highest"), what)
            count += 1
    return count


#: Tiles 80, 96 and 112 wide (``configs.sm90._ODD_N``), forced in every layout: (M, N, K,
#: dtype, (tile_m, tile_n), cluster_m, splits, swap).  The short side a tail inside the width,
#: odd tile rows, K tails (every extent a multiple of 8: read in place in every layout);
#: unsplit in 1x1 and 2x1 clusters, split (fp32 partials), swapped.
ODD_CASES = [(1000, 72, 1000, "float16", (128, 80), 2, 1, False),
             (392, 104, 2056, "bfloat16", (64, 112), 1, 3, False),
             (200, 96, 520, "float16", (64, 96), 2, 1, False),
             (88, 904, 776, "bfloat16", (128, 112), 2, 1, True)]


def _odd_widths(gen, quick: bool, poison: bool) -> int:
    """The sm90 kernel on tiles 80, 96 and 112 wide (an N-major B tile 32- or 64-byte swizzled,
    epilogue sub-tiles 16 wide at 80 and 112) in every layout."""
    from cutematmul.configs.sm90 import Config, epilogue_width

    count = 0
    for m, n, k, dtype, (tm, tn), cluster, splits, swap in ODD_CASES[:2] if quick else ODD_CASES:
        config = Config(tile_m=tm, tile_n=tn, epi_n=epilogue_width(tn), cluster_m=cluster,
                        partials=splits > 1, swap=swap, pdl=True)
        for layout in ("nn", "tn", "nt", "tt"):
            count += _forced_exactly(gen, m, n, k, layout, (config, splits, False),
                                     (dtype, "highest"), "sm90", poison,
                                     f"{tm}x{tn} c{cluster} s{splits}{' swap' if swap else ''} "
                                     f"{dtype} {m}x{n}x{k} {layout}")
    return count


#: Pingpong schedules forced in every layout: (M, N, K, dtype, (tile_m, tile_n), cluster_m,
#: splits).  Tails in every mode, several tiles per warpgroup, one warpgroup left with nothing
#: but skipped stages, a K shorter than one K-tile, and a split; every operand 16-byte aligned
#: in every layout (read in place: a staged one would not be the forced launch).
PINGPONG_CASES = [(1000, 1000, 200, "float16", (128, 128), 2, 1),
                  (264, 392, 136, "bfloat16", (128, 128), 1, 1),
                  (304, 520, 8, "float16", (64, 256), 1, 1),
                  (136, 704, 1104, "bfloat16", (128, 128), 2, 3)]


def _pingpong(gen, quick: bool, poison: bool) -> int:
    """The sm90 kernel's pingpong schedule (``Config.pingpong``) in every layout."""
    from cutematmul.configs.sm90 import Config

    count = 0
    for m, n, k, dtype, (tm, tn), cluster, splits in (PINGPONG_CASES[:2] if quick
                                                      else PINGPONG_CASES):
        config = Config(tile_m=tm, tile_n=tn, cluster_m=cluster, pingpong=True, pdl=True,
                        partials=splits > 1)
        for layout in ("nn", "tn", "nt", "tt"):
            count += _forced_exactly(gen, m, n, k, layout, (config, splits, False),
                                     (dtype, "highest"), "sm90", poison,
                                     f"pingpong {tm}x{tn}c{cluster} {dtype} {m}x{n}x{k} {layout}")
    return count


#: One-pass TF32 schedules forced in every layout (an M-major A, or an N-major B through
#: C^T = B^T A^T, is the wgmma register operand): (M, N, K, Config fields, splits, transposed).
TF32_CASES = [(300, 520, 1000, {"tile_m": 128, "tile_n": 256, "cluster_m": 2, "pdl": True},
               1, False),
              (200, 264, 3000, {"tile_m": 128, "tile_n": 128, "partials": True, "pdl": True},
               3, False),
              (300, 200, 3000, {"tile_m": 128, "tile_n": 128, "streamk": True}, 1, False),
              (300, 1032, 1000, {"tile_m": 64, "tile_n": 128, "cluster_m": 2, "pdl": True},
               1, False),
              (40, 1032, 1000, {"tile_m": 64, "tile_n": 64, "pdl": True}, 1, False),
              (56, 1032, 3000, {"tile_m": 64, "tile_n": 64, "partials": True, "pdl": True},
               2, False),
              (24, 1032, 2000, {"tile_m": 64, "tile_n": 32, "partials": True, "pdl": True},
               2, True)]


def tf32_forced_config(m: int, n: int, k: int, layout: str, fields: dict, transposed: bool):
    """The one-pass TF32 ``Config`` of ``fields`` for an (m, n, k) product in ``layout``: it
    swaps (C^T = B^T A^T in the kernel) exactly when the operands it reads, after the launch's
    K-major copy of one of an (m, n) pair (the smaller: ``dispatch.operand_copies``) and C^T's
    exchange where ``transposed``, are (k, n) (``configs.sm90.swaps``)."""
    from cutematmul import dispatch
    from cutematmul.configs.sm90 import Config, swaps, tf32_fields
    from cutematmul.plan import transposed_majors

    stored = ("m" if layout[0] == "t" else "k", "k" if layout[1] == "t" else "n")
    copies = dispatch.operand_copies(dispatch.FAMILIES["sm90"], "tf32", *stored, m, n, k, 1,
                                     132)
    majors = tuple(copy or major for copy, major in zip(copies, stored))
    if transposed:
        majors = transposed_majors(*majors)
    return Config(**tf32_fields("tf32"), swap=swaps("tf32", *majors), **fields)


def _tf32_registers(gen, quick: bool, poison: bool) -> int:
    """The sm90 kernel's one-pass TF32 with A from registers: unsplit clustered products with
    odd tile rows (128 and 64 rows), split-K partials, stream-K (its workspace), the 64 x 64
    tile unsplit and split, and a transposed small-M product, each in all four layouts."""
    count = 0
    for m, n, k, fields, splits, transposed in TF32_CASES[:1] if quick else TF32_CASES:
        for layout in ("nn", "tn", "nt", "tt"):
            config = tf32_forced_config(m, n, k, layout, fields, transposed)
            count += _forced_exactly(gen, m, n, k, layout, (config, splits, transposed),
                                     ("float32", "tf32"), "sm90", poison,
                                     f"tf32 {m}x{n}x{k} {fields} {layout}")
    return count


def _simt_tiles(gen, quick: bool, poison: bool) -> int:
    """Every tile of the SIMT ladder (``configs/simt._LADDER``: the 16 x 8 micro-tiles of the
    largest ones only run on large products under "auto"), forced on a product one tile plus
    a tail in M and N, with K = 37 (a partial first k-tile), unsplit and with 2 splits."""
    from cutematmul.configs import simt

    count = 0
    ladder = simt._LADDER[:2] if quick else simt._LADDER
    for tm, tn, threads in ladder:
        m, n, k = tm + 3, tn + 5, 37
        for layout, splits in (("nn", 1), ("tn", 2), ("nt", 1), ("tt", 2)):
            config = replace(simt._config(tm, tn, threads), partials=splits > 1)
            count += _forced_exactly(gen, m, n, k, layout, (config, splits, False),
                                     ("float32", "highest"), "simt", poison,
                                     f"simt {tm}x{tn}/{threads} {m}x{n}x{k} {layout} s{splits}")
    return count


def _simt_gemv(gen, quick: bool, poison: bool) -> int:
    """The SIMT family's row-streaming kernel (``configs/simt.gemv_config``) for every row
    count, forced in all four layouts on products with tails in M, N and K (K = 1 in 3 splits:
    empty splits), untransposed and transposed (C^T = B^T A^T through the workspace); N of
    whole 4-column vectors short of a whole tile (260), whose last tile's lanes past N read
    N's last vector of an N-major B."""
    from cutematmul.configs import simt

    count = 0
    cases = [(1, 1, 130, 300, 1, False), (2, 5, 77, 1001, 2, False), (4, 3, 1030, 1, 3, False),
             (8, 7, 129, 2049, 1, False), (8, 301, 6, 777, 2, True), (1, 129, 1, 130, 1, True),
             (8, 6, 260, 515, 2, False)]
    for rows, m, n, k, splits, transposed in cases[:2] if quick else cases:
        config = replace(simt.gemv_config(rows), partials=splits > 1 or transposed)
        for layout in ("nn", "tn", "nt", "tt"):
            count += _forced_exactly(
                gen, m, n, k, layout, (config, splits, transposed), ("float32", "highest"),
                "simt", poison,
                f"simt gemv r{rows} {m}x{n}x{k} {layout} s{splits}{' T' if transposed else ''}")
    return count


#: The staged row-streaming kernel (fp32 over a K-major B, ``configs.simt.staged_config``),
#: forced: (rows, columns, M, N, K, splits).  Tails in M (two row tiles past the CTA's; one
#: row), N and K, K whole 16-byte vectors (A's and B's 16-byte copies) and not, K = 3 (one
#: partial vector), empty splits, stages that wrap the ring, every column count.
STAGED_CASES = [(16, 128, 9, 130, 300, 1), (32, 128, 27, 260, 1001, 2),
                (32, 64, 33, 77, 129, 3), (16, 256, 13, 300, 3, 1),
                (32, 128, 32, 129, 512, 1), (16, 128, 1, 200, 260, 2)]


def _simt_staged(gen, quick: bool, poison: bool) -> int:
    """The SIMT family's staged row-streaming kernel (``STAGED_CASES``), forced in both
    layouts whose B is K-major (nt, tt: A K- and M-major)."""
    from cutematmul.configs import simt

    count = 0
    for rows, cols, m, n, k, splits in STAGED_CASES[:1] if quick else STAGED_CASES:
        config = replace(simt.staged_config(rows, cols), partials=splits > 1)
        for layout in ("nt", "tt"):
            count += _forced_exactly(
                gen, m, n, k, layout, (config, splits, False), ("float32", "highest"), "simt",
                poison, f"simt staged {rows}x{cols} {m}x{n}x{k} {layout} s{splits}")
    return count


#: 16-bit products of few rows over a long operand of no whole 16-byte rows, which the
#: dispatcher runs on the row-streaming kernel reading it as it is
#: (``configs.simt.streams_in_place``): (M, N, K, dtype, layout).  Every CTA row count of
#: both kernels (FMA: 1-2 rows over a K-major B, ``configs.simt.HALF_FMA_MAX_M``; tensor
#: cores: the rest) and tails; B N-major (odd N) and K-major (odd K), A K- and M-major;
#: unsplit (K short) and split; then few columns over such an A (C^T through the workspace).
GEMV16_CASES = [(1, 3001, 2049, "float16", "nn"), (3, 1027, 129, "bfloat16", "tn"),
                (1, 515, 3001, "float16", "nt"), (7, 2053, 1025, "bfloat16", "nn"),
                (2, 1031, 77, "float16", "nt"), (3, 8191, 9001, "bfloat16", "nt"),
                (3001, 7, 1024, "float16", "tn"), (2048, 2, 1025, "bfloat16", "nt"),
                # On tensor cores (``Config.mma``): 8 rows over a K-major B, 16, 32, C^T, unsplit.
                (7, 2053, 2049, "bfloat16", "nt"), (12, 2051, 1025, "float16", "nn"),
                (24, 1027, 777, "bfloat16", "tn"), (32, 515, 3001, "float16", "nt"),
                (3001, 20, 1024, "float16", "tn"), (24, 8001, 100, "bfloat16", "nn"),
                # 64-row CTAs: a tail row, every B major, C^T, split and unsplit.
                (33, 2051, 3001, "float16", "nn"), (64, 1027, 4097, "bfloat16", "tn"),
                (57, 515, 2049, "float16", "nt"), (64, 4099, 777, "bfloat16", "nn"),
                (1025, 60, 2048, "float16", "tn"), (50, 8001, 100, "float16", "nn"),
                # 128-row CTAs where they fill the SMs (``configs.simt.STREAM_FILL``): a tail
                # row, split, an N-major and a K-major B.
                (100, 4099, 8193, "float16", "nn"), (97, 4096, 4097, "bfloat16", "nt"),
                # Deep products of a tile or a few, split past 64 ways up to the CTA slots
                # (``configs.simt._gemv_ranked``): 264 splits of a 16-row CTA, 66 of 128 rows.
                (9, 70, 50001, "float16", "nt"), (100, 130, 60001, "bfloat16", "nn")]


#: The tensor-core row-streaming kernel's 128-row CTAs (sixteen warps) where the dispatcher
#: would copy the operand instead (grids short of ``configs.simt.STREAM_FILL`` of the SMs, or
#: M past ``HALF_GEMV_MAX_M``), on ``kernel="simt"``: (M, N, K, dtype, layout).  A tail row,
#: every B major, C^T, three row tiles, split and unsplit.
GEMV16_WIDE_CASES = [(100, 2051, 3001, "float16", "nn"), (128, 1027, 777, "bfloat16", "tn"),
                     (97, 515, 2049, "float16", "nt"), (1025, 120, 2048, "bfloat16", "tn"),
                     (300, 515, 100, "float16", "nn")]


def _simt_gemv16(gen, quick: bool, poison: bool) -> int:
    """The row-streaming kernel over 16-bit inputs as the dispatcher picks it, then its
    128-row CTAs as ``kernel="simt"`` runs them."""
    count = 0
    for m, n, k, dtype, layout in GEMV16_CASES[:2] if quick else GEMV16_CASES:
        count += _as_dispatched(
            gen, m, n, k, dtype, layout, poison,
            lambda work: work is not None and work.key.family == "simt"
            and work.key.config.gemv and work.prep is None,
            f"simt gemv {dtype} {m}x{n}x{k} {layout}")
    for m, n, k, dtype, layout in GEMV16_WIDE_CASES[:1] if quick else GEMV16_WIDE_CASES:
        count += _as_dispatched(
            gen, m, n, k, dtype, layout, poison,
            lambda work: work is not None and work.key.config.mma and work.key.config.tile_m == 128
            and work.prep is None,
            f"simt gemv 128 rows {dtype} {m}x{n}x{k} {layout}", kernel="simt")
    return count


def _simt_copies(gen, quick: bool, poison: bool) -> int:
    """fp32 "highest" reading K-major operands through copies (``configs.simt.operand_copies``,
    the prep kernel transposing): A M-major (both operands K-major), B N-major; and an N-major
    B of 5 columns copied K-major for the row-streaming kernel (C^T); M and N not multiples of
    4 (the copies' padded rows), a K tail, one matrix, a batch and a broadcast copied operand."""
    from cutematmul import launch
    from cutematmul.adapters import adapter_for
    from cutematmul.configs import simt

    gemv_k = simt.COPY_B_GEMV_MIN_K + 37
    copies = [("nt", simt.COPY_A_MIN_M + 3, simt.COPY_A_MIN_N + 5, 37, 0, "m"),
              ("nt", simt.COPY_B_MIN_M + 3, simt.COPY_B_MIN_N + 5, 37, 1, "n"),
              ("tt", simt.COPY_B_MIN_M + 3, simt.COPY_B_MIN_N + 5, 37, 1, "n"),
              ("nn", -(-simt.COPY_B_GEMV_MIN_MK // gemv_k) + 3, 5, gemv_k, 1, "k")]
    batches = [((), False), ((2,), False), ((2,), True)]
    count = 0
    for layout, m, n, k, which, major in copies:
        for batch, shared in batches[:1] if quick else batches:
            a_batch = () if shared and which == 0 else batch
            b_batch = () if shared and which == 1 else batch
            a, b = _operands(m, n, k, layout, "float32", gen, a_batch, b_batch)
            work = launch.planned_launch(adapter_for(a), a, b, precision="highest", kernel="simt")
            shared_text = "shared " if shared else ""
            what = f"simt {'AB'[which]} copy {m}x{n}x{k} {batch} {shared_text}{layout}"
            if work.prep is None or work.prep[which] is None or work.prep[which].to_major != major:
                raise AssertionError(f"{what}: not read through a {major}-major copy")
            out = _out(torch.matmul(a.to("meta"), b.to("meta")).shape, a.dtype, poison)
            _check(cutematmul.matmul(a, b, out=out, kernel="simt"), a, b,
                   ("float32", "highest"), what)
            count += 1
    return count


#: 16-bit products whose operands TMA cannot address, copied by the operand prep in their own
#: major (``configs.sm90.operand_copies``): (M, N, K, dtype); every layout, and a broadcast batch.
#: M and N above ``configs.simt.HALF_GEMV_MAX_M``: fewer rows stream on SIMT's row kernel.
COPY_CASES = [(80, 98, 15985, "float16"), (73, 76, 20001, "bfloat16"), (1000, 12, 3000, "float16")]
#: A small M's M-major A on a wave or less of swapped narrow tiles, copied K-major (``configs
#: .sm90.copies_across``): (M, N, K, batch, dtype), in tn and tt (B's K-major rows of no whole
#: 16-byte vectors in the second: both copied).
ACROSS_CASES = [(24, 4096, 12288, (), "bfloat16"), (8, 3000, 12290, (), "float16"),
                (8, 2048, 12288, (2,), "bfloat16")]


def _sm90_copies(gen, quick: bool, poison: bool) -> int:
    """The operand prep's 16-bit copies: A and/or B with rows of no whole 16-byte vectors
    (M, N or K not a multiple of 8), in every layout, then against a shared B in a batch of 3
    (a batch stride of 0); then a small M's M-major A copied K-major (``ACROSS_CASES``); each
    launch is asserted to hold the copies."""
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    count = 0
    for m, n, k, dtype in COPY_CASES[:1] if quick else COPY_CASES:
        for layout, batch in (("nn", ()), ("tn", ()), ("nt", ()), ("tt", ()), ("nn", (3,))):
            a, b = _operands(m, n, k, layout, dtype, gen, batch)
            what = f"sm90 copies {dtype} {batch}{m}x{n}x{k} {layout}"
            work = launch.planned_launch(adapter_for(a), a, b)
            want = ((m if layout[0] == "t" else k) % 8 != 0,
                    (k if layout[1] == "t" else n) % 8 != 0)
            if work is None or tuple(p is not None for p in work.prep or (None, None)) != want:
                raise AssertionError(f"{what}: the launch does not copy {want}: {work}")
            out = _out(torch.matmul(a.to("meta"), b.to("meta")).shape, a.dtype, poison)
            _check(cutematmul.matmul(a, b, out=out), a, b, (dtype, "highest"), what)
            count += 1
    for m, n, k, batch, dtype in ACROSS_CASES[:1] if quick else ACROSS_CASES:
        for layout in ("tn", "tt"):
            a, b = _operands(m, n, k, layout, dtype, gen, batch, batch)
            what = f"sm90 A copied K-major {dtype} {batch}{m}x{n}x{k} {layout}"
            work = launch.planned_launch(adapter_for(a), a, b)
            copy = work.prep[0] if work is not None and work.prep else None
            if copy is None or copy.to_major != "k":
                raise AssertionError(f"{what}: the launch does not copy A K-major: {work}")
            out = _out(torch.matmul(a.to("meta"), b.to("meta")).shape, a.dtype, poison)
            _check(cutematmul.matmul(a, b, out=out), a, b, (dtype, "highest"), what)
            count += 1
    return count


#: 16-bit products whose C rows are no whole 16-byte vectors (odd N) on unsplit tiles: the
#: kernel stores C itself, element by element (``Config.stores_any_c``, ``dispatch.copied_c``).
DIRECT_C_CASES = [(595, 851, 545, "float16"), (1024, 1001, 2048, "bfloat16"),
                  (2050, 2047, 512, "float16")]


def _sm90_direct_c(gen, quick: bool, poison: bool) -> int:
    """Each ``DIRECT_C_CASES`` product in every layout, into a column slice of a wider buffer
    (2 columns in, C's row stride N + 5), each launch asserted to store C itself (no
    reduction, no workspace)."""
    from cutematmul import launch
    from cutematmul.adapters import adapter_for

    count = 0
    for m, n, k, dtype in DIRECT_C_CASES[:1] if quick else DIRECT_C_CASES:
        for layout in ("nn", "tn", "nt", "tt"):
            a, b = _operands(m, n, k, layout, dtype, gen)
            what = f"sm90 direct C {dtype} {m}x{n}x{k} {layout}"
            work = launch.planned_launch(adapter_for(a), a, b)
            if work is None or work.reduce is not None or work.key.align_c != 1:
                raise AssertionError(f"{what}: the kernel does not store C itself: {work}")
            out = _out((m, n + 5), a.dtype, poison)[:, 2:n + 2]
            _check(cutematmul.matmul(a, b, out=out), a, b, (dtype, "highest"), what)
            count += 1
    return count


def _modes(family: str, gen, quick: bool, poison: bool) -> int:
    """The family's kernel in each of its modes (``FAMILY_MODES``) on ``SHAPES`` in every layout
    (each twice), unaligned and strided views, a broadcast batch, 1-D operands, split-K products
    (``SPLIT_FAMILIES``) and a column-major ``out``."""
    count = 0
    shapes = SHAPES[:3] if quick else SHAPES
    kernel = KERNEL[family]
    for mode in FAMILY_MODES[family]:
        dtype, precision = mode

        def product(a, b, out):
            return cutematmul.matmul(a, b, out=out, kernel=kernel, precision=precision)

        for m, n, k in shapes:
            for layout in ("nn", "tn", "nt", "tt"):
                # Twice: a repeated signature takes the device route's fast path (new
                # operands and out at other addresses).
                for repeat in (False, True):
                    a, b = _operands(m, n, k, layout, dtype, gen)
                    out = _out((m, n), a.dtype, poison)
                    _check(product(a, b, out), a, b, mode,
                           f"{family} {mode} {m}x{n}x{k} {layout}{' repeat' if repeat else ''}")
                    count += 1
        # Unaligned and strided views (staging), a broadcast batch, 1-D operands, column-major out.
        big = _randn((70, 90), dtype, gen)
        cases = [
            (big[1:34, 3:48], _randn((45, 31), dtype, gen)),
            (big[:, ::2], _randn((45, 29), dtype, gen)),
            (_randn((3, 1, 21, 13), dtype, gen), _randn((4, 13, 9), dtype, gen)),
            (_randn((13,), dtype, gen), _randn((2, 13, 9), dtype, gen)),
            (_randn((5, 13), dtype, gen), _randn((13,), dtype, gen)),
        ]
        for a, b in cases:
            shape = torch.matmul(a.to("meta"), b.to("meta")).shape
            out = _out(shape, a.dtype, poison)
            _check(product(a, b, out), a, b, mode,
                   f"{family} {dtype} views")
            count += 1
        if family in SPLIT_FAMILIES:  # split-K: fp32 partials in a workspace, then the reduction
            for a, b in ((_randn((5, 1000), dtype, gen), _randn((1000, 300), dtype, gen)),
                         (_randn((1000, 5), dtype, gen).T, _randn((300, 1000), dtype, gen).T),
                         (_randn((2, 5, 1000), dtype, gen), _randn((1000, 300), dtype, gen)),
                         # 17 <= M <= 32: transposed on a 32-wide tile (sm90).
                         (_randn((27, 1000), dtype, gen), _randn((1000, 304), dtype, gen)),
                         # Small N: narrow tiles untransposed, unsplit or split (sm90),
                         # B N-major and K-major, tails in M, N and K.
                         (_randn((700, 1000), dtype, gen), _randn((1000, 9), dtype, gen)),
                         (_randn((301, 333), dtype, gen), _randn((27, 333), dtype, gen).T),
                         # Small N over many rows (sm90): unsplit narrow tiles in 2x1
                         # clusters, an odd count of tile rows; C stored by the kernel (N =
                         # 24) or, rows of 18 bytes, through the workspace (N = 9).
                         (_randn((8300, 1000), dtype, gen), _randn((1000, 24), dtype, gen)),
                         (_randn((8300, 1000), dtype, gen), _randn((24, 1000), dtype, gen).T),
                         (_randn((8300, 1000), dtype, gen), _randn((9, 1000), dtype, gen).T),
                         # A few output tiles and a long K: many more than 16 splits.
                         (_randn((64, 16384), dtype, gen), _randn((16384, 8), dtype, gen))):
                out = _out(torch.matmul(a.to("meta"), b.to("meta")).shape, a.dtype, poison)
                _check(product(a, b, out), a, b, mode,
                       f"{family} {dtype} split-K")
                count += 1
        a, b = _randn((37, 21), dtype, gen), _randn((21, 45), dtype, gen)
        out = _out((45, 37), a.dtype, poison).T
        _check(product(a, b, out), a, b, mode, f"{family} col-major out")
        count += 1
    return count


#: The workload's groups: (family, group) -> its function of (gen, quick, poison), in the order
#: they run.  ``--groups`` runs some of them, so that a slow tool (racecheck over sm90, which
#: ran past whole device calls) can run one group per process: ``tools/sanitize.sh`` does so
#: for the tools in ``SANITIZE_SPLIT``.
GROUPS = {("streamk", "streamk"): _streamk,
          ("cupy", "cupy"): lambda gen, quick, poison: _cupy(quick, poison),
          ("jax", "jit"): lambda gen, quick, poison: _jax(quick),
          ("sm90", "wide"): _wide,
          ("sm90", "odd_widths"): _odd_widths,
          ("sm90", "pingpong"): _pingpong,
          ("sm90", "swapped"): _swapped,
          ("sm90", "clusters"): _clusters,
          ("sm90", "copies"): _sm90_copies,
          ("sm90", "direct_c"): _sm90_direct_c,
          ("sm90", "modes"): functools.partial(_modes, "sm90"),
          ("simt", "tiles"): _simt_tiles,
          ("simt", "gemv"): _simt_gemv,
          ("simt", "staged"): _simt_staged,
          ("simt", "gemv16"): _simt_gemv16,
          ("simt", "copies"): _simt_copies,
          ("simt", "modes"): functools.partial(_modes, "simt"),
          ("tf32", "registers"): _tf32_registers,
          ("tf32", "modes"): functools.partial(_modes, "tf32"),
          ("sm80", "modes"): functools.partial(_modes, "sm80")}


def selected(families, groups=None) -> list[tuple[str, str]]:
    """The (family, group) pairs of ``families`` (each group where ``groups`` is None, else only
    those named), in ``GROUPS``' order; a ValueError for an unknown family, or for a named
    group that none of ``families`` has."""
    unknown = sorted(set(families) - {family for family, _ in GROUPS})
    if unknown:
        raise ValueError(f"--families: unknown {unknown}; known: "
                         f"{sorted({family for family, _ in GROUPS})}")
    pairs = [(f, g) for f, g in GROUPS if f in families and (groups is None or g in groups)]
    missing = sorted(set(groups or ()) - {g for _, g in pairs})
    if missing:
        raise ValueError(f"--groups: {missing} in none of the families {list(families)}; theirs: "
                         f"{sorted({g for f, g in GROUPS if f in families})}")
    return pairs


def run(families, quick: bool, poison: bool = True, groups=None) -> int:
    gen = torch.Generator(device="cuda").manual_seed(0)
    count = sum(GROUPS[pair](gen, quick, poison) for pair in selected(families, groups))
    torch.cuda.synchronize()
    return count


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--families", default="simt,sm80,sm90,tf32,streamk,cupy,jax")
    p.add_argument("--quick", action="store_true", help="fewer shapes (racecheck is slow)")
    p.add_argument("--unpoisoned", action="store_true",
                   help="fresh (uninitialized) outputs instead of NaN-poisoned ones: shows which "
                        "kernel writes initcheck tracks")
    p.add_argument("--groups", default=None,
                   help="only these groups of the families (default: all; see --list)")
    p.add_argument("--list", action="store_true",
                   help="print the families' groups, one per line, and run nothing")
    args = p.parse_args(argv)
    families = [f for f in args.families.split(",") if f]
    groups = None if args.groups is None else [g for g in args.groups.split(",") if g]
    try:
        pairs = selected(families, groups)
    except ValueError as exc:
        p.error(str(exc))
    if args.list:
        print("\n".join(group for _, group in pairs))
        return 0
    count = run(families, args.quick, poison=not args.unpoisoned, groups=groups)
    what = ", ".join(families) + (f": {', '.join(groups)}" if groups is not None else "")
    print(f"sanitize_cases: {count} products correct ({what})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
