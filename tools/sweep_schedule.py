"""Calibrate the wave model: time forced (tile, K-split) choices beside the model's pick and cuBLAS.

    python tools/sweep_schedule.py [fp16|bf16|fp32|tf32|high|both]
                                   [--clusters | --tuner [--max-splits N]
                                   | --occupancy | --ring | --streaming | --staged
                                   | --widths W,RxW,...]
                                   [--shapes MxNxK|LxMxNxK,...] [--cold]
                                   [--layout nt] [--precompile DIR [--jobs N]]

For each shape, the model's pick (``configs/<family>.choose_schedule``) and every forced candidate
run on the same Gaussian operands (float32 ones for ``tf32`` and ``high``, the
``precision="tf32"`` and ``"high"`` modes, beside cuBLAS TF32 and SGEMM respectively); each is
timed like the benchmark (a spin kernel hides the host's enqueue time, 5 bursts of 20 products,
the median).  With ``--cold`` consecutive products
rotate over copies of the operands that together exceed twice the L2 cache (at least three, at
most ``ROTATION_MOST``: the benchmark's rule, ``bench.shapes.rotation_sets``), so each product
reads A and B from DRAM, as a layer's weights are read in a real workload (the autotuner's
condition); without it a product whose operands fit in L2 is timed L2-warm.  The candidates are
a fixed menu (``CANDIDATES``: tile x split, transposed for small M; ``--clusters`` adds 2x1 and
1x2), or with ``--tuner`` every schedule ``cutematmul.tune`` may time for the product
(``dispatch.tunable``: the wave model's ranking, swapped skinny tiles in both heights and
cluster shapes, stream-K, 2x2 clusters; with ``--max-splits 1`` only the unsplit ones), or
with ``--occupancy`` (fp32 "highest") the SIMT pick
itself at each CTAs-per-SM budget it may ask ptxas for, from the rule's
(``configs/simt._min_blocks``) down to the one that leaves 255 registers per thread: fewer CTAs
per SM give each thread more registers, which the 8 x 8 micro-tiles need to run without
spilling (``tools/codegen_audit.py``), or with ``--streaming`` (fp32 "highest") the
row-streaming kernel (``configs/simt.gemv_config``) on the product's rows, in tiles of the
fewest ``GEMV_ROWS`` that hold them or, past 8 rows, of 8 (the later row tiles of a column
block read B from L2), at every split from 1 to 16: what it is worth beside the ladder's tiles
for products of a few dozen rows, or with ``--staged`` (fp32 "highest" over a K-major B) the
staged row-streaming kernel at each of its column counts (128 also 4 stages deep) and every split of
``STAGED_SPLITS``, beside the one-warp 32 x 32 ladder tile, or with ``--ring`` (sm90) the pick
itself at each depth of its shared-memory ring in ``RING_DEPTHS`` that fits (the split, orientation,
tile and cluster kept): a CTA's bytes in flight, which bound the few CTAs of a small-M product
(``configs/sm90._NARROW_RING_STAGES``), or with ``--widths`` (sm90, 16-bit or "tf32")
unsplit cooperative 128-row tiles of those widths (or 64- and 256-row ones: ``64x64``,
``256x160``) in both orientations (swapped: ``Config.swap``, the width along M; each where
built so; TF32 in its layout's) in 1x1 and 2x1 clusters: what a tile shape that fits the
SMs' waves is worth beside the wave model's (``width_candidates``).  ``docs/performance.md``
quotes its output.  Each candidate is made the shape's schedule in the cache's tuned tier for
its timing (``cache.trial_tuned``, which clears the plan caches around it), the mechanism
``cutematmul.tune`` uses, so it is a tool, not a library path.

``--precompile DIR`` needs no GPU: it builds the kernels of the picks and of every candidate the
same options name (contiguous operands in ``--layout``, an sm_90a / sm_80 GPU of 132 / 108
SMs) into DIR (``aot.build_keys``), so a GPU run of the sweep with
``CUTEMATMUL_CACHE_DIR=DIR`` spends no time compiling.  Imports: ``cutematmul``, and ``torch``
only to time.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import replace

from cutematmul import aot, dispatch, launch
from cutematmul.bench.shapes import Shape, parse_shape, rotation_sets
from cutematmul.configs import simt, sm90

SHAPES = [(16, 8192, 8192), (64, 8192, 8192), (128, 8192, 8192), (256, 8192, 8192),
          (16, 4096, 4096), (1, 4096, 4096), (16, 1024, 4096), (32, 14336, 4096),
          (1000, 1000, 1000), (1536, 1536, 1536), (768, 768, 768)]
# (tile_m, tile_n, transposed[, "pingpong"]) candidates per family; splits are crossed with
# them.  sm90 also has its pingpong schedule and its 256-row (tall) tile, which the wave model
# does not offer (measured slower than 128 x 256: docs/performance.md, twenty-first session).
CANDIDATES = {
    "float16": (sm90, [(128, 256, False), (128, 192, False), (128, 128, False), (64, 128, False),
                       (128, 128, False, "pingpong"), (256, 128, False),
                       (128, 16, True), (128, 32, True), (128, 64, True), (64, 16, True),
                       (64, 32, True), (128, 16, False), (128, 32, False), (128, 64, False),
                       (64, 16, False), (64, 32, False), (64, 64, False)], [1, 2, 4]),
    "float32": (simt, [(128, 256, False), (128, 128, False), (64, 128, False), (32, 128, False),
                       (32, 32, False), (16, 256, False), (16, 128, False), (16, 64, False)]
                + [(rows, 128, tr, "gemv") for rows in simt.GEMV_ROWS for tr in (False, True)],
                [1, 2, 4, 8, 16]),
}
#: Threads of each SIMT ladder tile (the ladder's own, so a forced tile is the scheduler's).
_SIMT_THREADS = {(tm, tn): threads for tm, tn, threads in simt._LADDER}


def time_us(fn, reps: int = 20, bursts: int = 5) -> float:
    """Median GPU time per call over ``bursts`` bursts, each behind a ~1.5 ms spin kernel."""
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(bursts):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(3_000_000)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / reps)
    return sorted(times)[len(times) // 2]


#: Cluster shapes tried with ``--clusters`` (sm90 only; the shared tile is TMA-multicast).
CLUSTERS = ((1, 1), (2, 1), (1, 2))


def _config(module, tm: int, tn: int, transposed: bool, splits: int, cluster=(1, 1),
            pingpong: bool = False, gemv: bool = False):
    if module is sm90:
        return sm90.Config(tile_m=tm, tile_n=tn, epi_n=sm90.epilogue_width(tn),
                           cluster_m=cluster[0], cluster_n=cluster[1],
                           partials=splits > 1 or transposed or tn < 64,
                           pingpong=pingpong)
    workspace = splits > 1 or transposed  # fp32 partials (``Config.partials``)
    if gemv:  # the row-streaming kernel (transposed: on C^T)
        return replace(simt.gemv_config(tm), partials=workspace)
    return replace(simt._config(tm, tn, _SIMT_THREADS[(tm, tn)]), partials=workspace)


def _label(tm: int, tn: int, splits: int, transposed: bool, cluster=(1, 1),
           pingpong: bool = False) -> str:
    """A configuration as the output prints it, e.g. ``64x128/s2``, ``128x256/s1/c2x1`` or
    ``128x128/s1/c2x1/pp`` (pingpong)."""
    return (f"{tm}x{tn}/s{splits}{'T' if transposed else ''}"
            + (f"/c{cluster[0]}x{cluster[1]}" if cluster != (1, 1) else "")
            + ("/pp" if pingpong else ""))


def candidates(dtype: str, m: int, n: int, clusters: bool):
    """(config, splits, transposed, label) of every forced candidate for an M x N product."""
    module, tiles, split_counts = CANDIDATES[dtype]
    shapes = CLUSTERS if clusters and module is sm90 else ((1, 1),)
    for (tm, tn, tr, *kind), s, c in itertools.product(tiles, split_counts, shapes):
        pingpong, gemv = kind == ["pingpong"], kind == ["gemv"]
        if (pingpong or tm > 128) and c == (1, 2):
            continue  # pingpong and the tall tile: run (pingpong) or compiled in 1x1 and 2x1 only
        if gemv:
            # Row-streaming CTAs hold all of M (or, transposed, all of N) and no more than the
            # next row count up.
            extent = n if tr else m
            if not tm >= extent > tm // 2:
                continue
        elif tr and (m > 64 or c != (1, 1)):
            continue
        elif module is sm90 and not tr and tn < 128 and not (tn >= n and c == (1, 1)):
            continue  # narrow tiles untransposed: small-N products (all of N in the tile)
        yield (_config(module, tm, tn, tr, s, c, pingpong, gemv), s, tr,
               _label(tm, tn, s, tr, c, pingpong))


#: dtype names of the command line.
DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "tf32": "tf32",
          "high": "tf32x3"}
#: The tensor-core fp32 modes: the math a sweep plans (``dispatch.PRECISIONS``' values) and the
#: ``precision`` its products are called with; their operands are float32 arrays.
_FP32_MODES = {math: precision for precision, math in dispatch.PRECISIONS.items()
               if math in dispatch.TF32_MATH}


def contiguous_launch(math: str, m: int, n: int, k: int, layout: str = "nn",
                      capability: tuple[int, int] = (9, 0), num_sms: int = 132, batch: int = 1):
    """What a call on contiguous operands of an M x N x K product (``batch`` of them) in
    ``layout`` launches, ``math`` its math type (no GPU): ``launch.contiguous_plan`` over the
    families a call with kernel "auto" may take, the wave model's pick."""
    names = tuple(f.name for f in dispatch.choose_families(math, capability, "auto"))
    return launch.contiguous_plan(names, capability, num_sms, math, m, n, k, batch,
                                  (layout[0] == "t", layout[1] == "t"))


def problem_of(dtype: str, m: int, n: int, k: int, layout: str = "nn",
               capability: tuple[int, int] = (9, 0), num_sms: int = 132,
               batch: int = 1) -> dispatch.Problem:
    """The ``dispatch.Problem`` of an M x N x K product (``batch`` of them, each operand a
    stack) of contiguous operands in ``layout`` (no GPU), as the launch planner makes it
    (``launch.contiguous_plan``) and the sweep's GPU run finds it: an operand the kernel reads
    through a copy (rows of no whole 16-byte vectors) counts in the copy's major and alignment.
    A ValueError where the launch has no schedule to sweep (staged, several launches, or a
    family without schedules such as sm80)."""
    work = contiguous_launch(dtype, m, n, k, layout, capability, num_sms, batch)
    problem = getattr(work, "problem", None)
    if problem is None:
        raise ValueError(f"{dtype} {layout} {_shape_name((batch, m, n, k))}: the launch has no "
                         "schedule to sweep")
    return problem


def parse_shapes(text: str) -> list[tuple[int, int, int, int]]:
    """``--shapes``: comma-separated MxNxK, or LxMxNxK for a batch of L products (the
    benchmark's spelling, ``bench.shapes.parse_shape``), as (batch, M, N, K)."""
    shapes = []
    for item in text.split(","):
        try:
            shape = parse_shape(item)
        except ValueError as exc:
            raise ValueError(f"--shapes: expected MxNxK or LxMxNxK of positive integers, "
                             f"got {item!r}") from exc
        shapes.append((shape.count, shape.m, shape.n, shape.k))
    return shapes


def _shape_name(shape: tuple[int, int, int, int]) -> str:
    batch, m, n, k = shape
    return Shape(m, n, k, batch if batch > 1 else None).label


def schedule_label(name: str, splits: int, transposed: bool = False) -> str:
    """A named schedule as the sweep prints it: ``config.name/sN``, ``T`` when transposed
    (``tools/replay_picks.py`` reads it back)."""
    return f"{name}/s{splits}{'T' if transposed else ''}"


def tuner_candidates(problem: dispatch.Problem, max_splits: int | None = None):
    """(config, splits, transposed, label) of every schedule ``cutematmul.tune`` may time; with
    ``max_splits``, those that split K at most that many ways (1: the unsplit tiles and
    clusters of a large product, without its long tail of splits)."""
    return [(config, splits, transposed, schedule_label(config.name, splits, transposed))
            for config, splits, transposed in dispatch.tunable(problem, dispatch.EVERY_CANDIDATE)
            if max_splits is None or splits <= max_splits]


def occupancy_candidates(problem: dispatch.Problem):
    """(config, splits, transposed, label): a SIMT problem's pick at each CTAs-per-SM budget
    from its own down to the first that leaves every thread 255 registers (ptxas's limit), the
    split and orientation kept; nothing for other families (one CTA per SM)."""
    if problem.family != "simt":
        return []
    pick, splits, transposed = simt.choose_schedule(
        problem.m, problem.n, problem.k, problem.batch, problem.num_sms,
        majors=(problem.a_major, problem.b_major))
    found = []
    for blocks in range(pick.min_blocks, 0, -1):
        config = replace(pick, min_blocks=blocks)
        found.append((config, splits, transposed,
                      schedule_label(config.name, splits, transposed)))
        if simt._REGISTER_FILE // (config.threads * blocks) >= 255:
            break
    return found


#: Ring depths (A/B stages) ``--ring`` times, each where it fits the tile's shared memory.
RING_DEPTHS = (4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32)
#: ``--cold``: the most operand copies a shape rotates over (``bench.shapes.rotation_sets``).
ROTATION_MOST = 64


#: ``--streaming``: the K-splits it times.
STREAMING_SPLITS = range(1, 17)


def streaming_candidates(problem: dispatch.Problem):
    """(config, splits, transposed, label): a SIMT fp32 problem untransposed on the
    row-streaming kernel (``--streaming``) at each of ``STREAMING_SPLITS``; nothing where it
    does not read the majors well (``simt.gemv_reads``) or for other families."""
    if (problem.family != "simt" or problem.math != "float32"
            or not simt.gemv_reads(problem.a_major, problem.b_major)):
        return []
    rows = next((r for r in simt.GEMV_ROWS if r >= problem.m), simt.GEMV_ROWS[-1])
    configs = [replace(simt.gemv_config(rows), partials=s > 1) for s in STREAMING_SPLITS]
    return [(config, s, False, schedule_label(config.name, s))
            for config, s in zip(configs, STREAMING_SPLITS)]


#: ``--staged``: the K-splits, and the ladder's one-warp 32 x 32 tile's, that it times.
STAGED_SPLITS = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16)
STAGED_LADDER_SPLITS = (8, 12, 16)


def staged_candidates(problem: dispatch.Problem):
    """(config, splits, transposed, label): an fp32 problem over a K-major B on the staged
    row-streaming kernel (``--staged``) in the fewest ``STAGED_ROWS`` that hold its rows, at
    each of its column counts and ``STAGED_SPLITS``, 128 columns also 4 stages deep, beside
    the one-warp 32 x 32 ladder tile (the pick before it) at ``STAGED_LADDER_SPLITS``;
    nothing for other problems."""
    if (problem.family != "simt" or problem.math != "float32" or problem.b_major != "k"):
        return []
    found = []
    for cols, stages in ((64, 3), (128, 3), (128, 4), (256, 3)):
        base = simt.staged_config(problem.m, cols, stages)
        try:
            base.validate()
        except ValueError:
            continue
        for s in STAGED_SPLITS:
            config = replace(base, partials=s > 1)
            found.append((config, s, False, schedule_label(config.name, s)))
    for s in STAGED_LADDER_SPLITS:
        config = replace(simt._config(32, 32, 32), partials=s > 1)
        found.append((config, s, False, schedule_label(config.name, s)))
    return found


def ring_candidates(problem: dispatch.Problem):
    """(config, splits, transposed, label): an sm90 problem's pick at each ring depth of
    ``RING_DEPTHS`` that fits beside its epilogue (``Config.fitting_stages``), the pick's own
    depth included; nothing for other families."""
    if problem.family != "sm90":
        return []
    pick, splits, transposed = dispatch.tunable(problem, 1)[0]
    parts = 2 if problem.math == "tf32x3" else 1  # 3xTF32 stages hold both split parts
    fit = pick.fitting_stages(128 // pick.tile_k, parts)
    depths = sorted({d for d in RING_DEPTHS if d <= fit}
                    | {pick.ab_stages(128 // pick.tile_k, parts)})
    return [(replace(pick, stages=d), splits, transposed,
             f"{pick.tile_m}x{pick.tile_n}/s{splits}{'T' if transposed else ''}/ring{d}")
            for d in depths]


def width_candidates(problem: dispatch.Problem, widths: list):
    """(config, splits, transposed, label): an sm90 16-bit or one-pass TF32 problem unsplit on
    cooperative tiles of each of ``widths`` (a width: 128 rows; (rows, width): 64 or 256 rows,
    the short and the tall tiles), as built (``Config.validate``: the ``_FINE_N`` widths
    swapped only, 256 rows unswapped and at most 192 wide), unswapped and swapped
    (``Config.swap``: the rows over N, the width over M; TF32 in its layout's orientation only,
    ``configs.sm90.swaps``, on 32-wide K-tiles), in 1x1 and 2x1 clusters; nothing for other
    families.  What a choice of tile shape to fit the SMs' wave, or a small M, is worth beside
    the wave model's widths."""
    if problem.family != "sm90" or problem.math not in ("float16", "bfloat16", "tf32"):
        return []
    tf32 = problem.math == "tf32"
    orientations = ((sm90.swaps(problem.math, problem.a_major, problem.b_major),) if tf32
                    else (False, True))
    extra = sm90.tf32_fields(problem.math)
    found = []
    tiles = [(128, w) if isinstance(w, int) else tuple(w) for w in widths]
    for (tile_m, width), swap, cluster in itertools.product(tiles, orientations, (1, 2)):
        config = replace(_config(sm90, tile_m, width, False, 1, (cluster, 1)), pdl=True,
                         swap=swap, **extra)
        try:
            config.validate()
        except ValueError:
            continue  # a width this orientation does not build
        found.append((config, 1, False, schedule_label(config.name, 1)))
    return found


def _choices(dtype: str, problem: dispatch.Problem, tuner: bool, clusters: bool,
             occupancy: bool = False, ring: bool = False, max_splits: int | None = None,
             widths: list[int] | None = None, streaming: bool = False, staged: bool = False):
    if staged:
        return staged_candidates(problem)
    if streaming:
        return streaming_candidates(problem)
    if widths:
        return width_candidates(problem, widths)
    if ring:
        return ring_candidates(problem)
    if occupancy:
        return occupancy_candidates(problem)
    if tuner:
        return tuner_candidates(problem, max_splits)
    menu = "float16" if dtype == "bfloat16" else dtype
    return list(candidates(menu, problem.m, problem.n, clusters))


def kernel_keys(problem: dispatch.Problem, choices) -> list:
    """The kernels a sweep of ``problem`` launches: the pick's, then each candidate's
    (``aot.schedule_keys``: with their reductions and copies)."""
    keys = [aot.schedule_keys(problem, tuned)
            for tuned in [None, *((c, s, t) for c, s, t, _ in choices)]]
    return list(dict.fromkeys(key for group in keys for key in group))


def precompile(dtypes, shapes, layout: str, tuner: bool, clusters: bool, directory: str,
               jobs: int | None = None, occupancy: bool = False, ring: bool = False,
               max_splits: int | None = None, widths: list[int] | None = None,
               streaming: bool = False, staged: bool = False):
    """Build every kernel the sweep would launch into ``directory`` (no GPU)."""
    keys = []
    for dtype in dtypes:
        for batch, m, n, k in shapes:
            problem = problem_of(dtype, m, n, k, layout, batch=batch)
            keys += kernel_keys(problem, _choices(dtype, problem, tuner, clusters, occupancy,
                                                  ring, max_splits, widths, streaming,
                                                  staged))
    return aot.build_keys(keys, jobs=jobs, cache_dir=directory)


def sweep(dtype: str, shapes=tuple((1, *s) for s in SHAPES), clusters: bool = False,
          layout: str = "nn", tuner: bool = False, occupancy: bool = False, cold: bool = False,
          ring: bool = False, max_splits: int | None = None,
          widths: list[int] | None = None, streaming: bool = False,
          staged: bool = False) -> None:
    """Time the pick and each candidate of every (batch, M, N, K) of ``shapes``."""
    import torch

    import cutematmul
    from cutematmul import cache
    from cutematmul.adapters import adapter_for

    precision = _FP32_MODES.get(dtype, "highest")
    storage = getattr(torch, "float32" if dtype in _FP32_MODES else dtype)
    for batch, m, n, k in shapes:
        stack = (batch,) if batch > 1 else ()

        def operands():
            a = torch.randn(*stack, m, k, device="cuda").to(storage)
            b = torch.randn(*stack, k, n, device="cuda").to(storage)
            if layout[0] == "t":
                a = a.mT.contiguous().mT
            if layout[1] == "t":
                b = b.mT.contiguous().mT
            return a, b

        a, b = operands()
        copies = 1
        if cold:
            l2 = torch.cuda.get_device_properties(a.device).L2_cache_size
            copies = rotation_sets((a.numel() + b.numel()) * a.element_size(), l2, ROTATION_MOST)
        pairs = [(a, b)] + [operands() for _ in range(copies - 1)]
        turn = itertools.count()

        def rotated(call):
            """``call(a, b)`` on the next pair of operands (all the same pair when warm)."""
            return lambda: call(*pairs[next(turn) % copies])

        out = torch.empty(*stack, m, n, device="cuda", dtype=a.dtype)
        # cuBLAS in the mode's own terms: TF32 for "tf32", SGEMM for "high" and "highest".
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        cublas = time_us(rotated(lambda x, y: torch.matmul(x, y, out=out)))
        torch.backends.cuda.matmul.allow_tf32 = False

        def ours(x, y):
            return cutematmul.matmul(x, y, out=out, precision=precision)

        work = launch.planned_launch(adapter_for(a), a, b, precision=precision)  # the call's pick
        cfg, splits, transposed, problem = (work.key.config, work.splits, work.transposed,
                                            work.problem)
        picked = time_us(rotated(ours))
        cluster = (getattr(cfg, "cluster_m", 1), getattr(cfg, "cluster_n", 1))  # sm90 only
        label = _label(cfg.tile_m, cfg.tile_n, splits, transposed, cluster,
                       getattr(cfg, "pingpong", False))
        row = [f"pick {label} "
               f"{picked:.1f}us ({cublas / picked:.2f}x)"]
        for config, s, tr, label in _choices(dtype, problem, tuner, clusters, occupancy, ring,
                                             max_splits, widths, streaming, staged):
            with cache.trial_tuned(problem, (config, s, tr)):  # clears the plans, then restores
                seconds = time_us(rotated(ours))
                row.append(f"{label} {seconds:.1f}")
        head = f"{dtype} {layout} {_shape_name((batch, m, n, k))}{' cold' if cold else ''}"
        print(f"{head}: cuBLAS {cublas:.1f}us | " + " | ".join(row), flush=True)


def _widths(text: str) -> list:
    """``--widths``: comma-separated widths (128-row tiles) or ROWSxWIDTH (e.g. 256x160,
    64x64)."""
    try:
        widths = [int(w) if "x" not in w else tuple(int(v) for v in w.split("x", 1))
                  for w in text.split(",")]
    except ValueError:
        widths = None
    if widths is None or not all(
            w > 0 if isinstance(w, int) else w[0] in (64, 128, 256) and w[1] > 0
            for w in widths):
        raise argparse.ArgumentTypeError(
            "--widths takes comma-separated widths or ROWSxWIDTH (rows 64, 128 or 256), got "
            f"{text!r}")
    return widths


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("which", nargs="?", default="both", choices=(*DTYPES, "both"),
                   help="fp32: the SIMT SGEMM; tf32 / high: precision=\"tf32\" / \"high\" "
                        "(with --tuner or --ring)")
    p.add_argument("--clusters", action="store_true", help="also 2x1 and 1x2 clusters (fp16)")
    p.add_argument("--tuner", action="store_true",
                   help="time every schedule cutematmul.tune may time instead of the menu")
    p.add_argument("--occupancy", action="store_true",
                   help="fp32: the SIMT pick at each CTAs-per-SM budget (register spills)")
    p.add_argument("--ring", action="store_true",
                   help="sm90: the pick at each shared-memory ring depth that fits")
    p.add_argument("--streaming", action="store_true",
                   help="fp32: the row-streaming kernel on the product's rows (8-row tiles past "
                        "8 rows) at every split 1-16")
    p.add_argument("--staged", action="store_true",
                   help="fp32 over a K-major B: the staged row-streaming kernel at every column "
                        "count and split of STAGED_SPLITS, beside the 32 x 32 ladder tile")
    p.add_argument("--max-splits", type=int, metavar="N",
                   help="with --tuner: only schedules splitting K at most N ways")
    p.add_argument("--widths", type=_widths, metavar="W,RxW,...",
                   help="sm90 16-bit or tf32: 128-row tiles of these widths (RxW: R rows, e.g. "
                        "256x160 or 64x64), "
                        "unswapped and swapped, 1x1 and 2x1, unsplit, instead of the menu")
    p.add_argument("--precompile", metavar="DIR",
                   help="build the kernels the sweep launches into DIR (no GPU), then exit")
    p.add_argument("--jobs", type=int, help="worker processes of --precompile")
    p.add_argument("--shapes", help="comma-separated MxNxK or LxMxNxK (a batch of L; default: "
                                    "the calibration set)")
    p.add_argument("--cold", action="store_true",
                   help="rotate over operand copies of twice the L2 (each product reads DRAM)")
    p.add_argument("--layout", default="nn", choices=("nn", "nt", "tn", "tt"),
                   help="t: that operand is a transposed view (nt: a @ w.T)")
    args = p.parse_args(argv)
    if args.widths and (args.tuner or args.clusters or args.occupancy or args.ring):
        p.error("--widths is a menu of its own: not with --tuner, --clusters, --occupancy "
                "or --ring")
    if args.max_splits is not None and (not args.tuner or args.max_splits < 1):
        p.error(f"--max-splits takes --tuner and a count of at least 1, got {args.max_splits}"
                f"{'' if args.tuner else ' without --tuner'}")
    if args.streaming and (args.which != "fp32" or args.tuner or args.occupancy or args.ring
                           or args.widths or args.clusters):
        p.error("--streaming is fp32's menu of its own: not with another dtype or menu")
    if args.staged and (args.which != "fp32" or args.tuner or args.occupancy or args.ring
                        or args.widths or args.clusters or args.streaming):
        p.error("--staged is fp32's menu of its own: not with another dtype or menu")
    if DTYPES.get(args.which) in _FP32_MODES and not (
            args.tuner or args.ring or (args.widths and args.which == "tf32")):
        p.error(f"{args.which} sweeps the schedules of its own kernels: give --tuner or --ring"
                + (" (--widths: tf32 only)" if args.widths else ""))
    shapes = parse_shapes(args.shapes) if args.shapes else [(1, *s) for s in SHAPES]
    dtypes = [DTYPES[args.which]] if args.which in DTYPES else ["float16", "float32"]
    if args.precompile:
        report = precompile(dtypes, shapes, args.layout, args.tuner, args.clusters,
                            args.precompile, args.jobs, args.occupancy, args.ring,
                            args.max_splits, args.widths, args.streaming, args.staged)
        print(f"{report.keys} kernels: {report.built} built, {report.present} already there, "
              f"{len(report.failed)} failed")
        for key, error in report.failed:
            print(f"  failed: {key}\n    {error}", file=sys.stderr)
        return 1 if report.failed else 0
    for dtype in dtypes:
        sweep(dtype, shapes, clusters=args.clusters, layout=args.layout, tuner=args.tuner,
              occupancy=args.occupancy, cold=args.cold, ring=args.ring,
              max_splits=args.max_splits, widths=args.widths, streaming=args.streaming,
              staged=args.staged)
    return 0


if __name__ == "__main__":
    sys.exit(main())
