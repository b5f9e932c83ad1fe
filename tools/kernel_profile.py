"""Per-kernel GPU times of cutematmul's launches beside cuBLAS's, and the kernels cuBLAS chose.

    python tools/kernel_profile.py [--shapes MxNxK|LxMxNxK,...] [--layouts nn,tn,...]
                                   [--dtypes fp16,bf16,fp32] [--reps N]

For each product (the benchmark's Gaussian operands, ``bench.data.host_operands``, uploaded as
its PyTorch backend does; "t": that operand a transposed view) cutematmul and
``torch.matmul`` each run ``reps`` times under CUPTI (``torch.profiler``, CUDA activity only),
and every kernel they launched is printed with its mean duration and count.  So a product's
time splits into its pieces (the operand prep's copies, the GEMM, a split-K reduction), and
cuBLAS's kernel names say which tile, stage count and cluster it runs (e.g.
``nvjet_sm90_hsh_192x192_64x3_1x2_h_bz_coopB_NNN``: 192 x 192 tiles, 64-wide K-tiles in three
stages, 1x2 clusters).  Beside them, each library's host time per call, enqueued behind a GPU
spin so the GPU never waits.  Durations are CUPTI's per kernel, not the benchmark's timing of
back-to-back products: use them to compare kernels and to find the one that is slow
(docs/performance.md, 47th session: the GEMM over two operand copies in 16-byte rows ran 386 us,
over copies in whole 128-byte lines 210).  Needs PyTorch and a GPU.

Imports: ``cutematmul.bench.shapes`` (the shape, layout and dtype spellings) at load;
``cutematmul``, its benchmark's data and PyTorch backend, and ``torch`` to run.
"""

from __future__ import annotations

import argparse
import sys
import time

from cutematmul.bench.shapes import Shape, parse_dtypes, parse_layouts, parse_shapes

#: The default products: odd sizes (the operand prep's copies), a partial wave, a batch and the
#: large shapes of the default suite.
DEFAULT_SHAPES = "4097x4095x4093,2047x2049x2051,3000x3000x3000,64x1024x1024x1024," \
                 "8192x8192x8192,4096x14336x4096"


def cases(shapes: str, layouts: str, dtypes: str) -> list[tuple[Shape, str, str]]:
    """(shape, layout, dtype) of every product the options name, in order."""
    return [(shape, layout, dtype) for shape in parse_shapes(shapes)
            for layout in parse_layouts(layouts) for dtype in parse_dtypes(dtypes)]


def kernel_times(fn, reps: int) -> list[tuple[str, int, float]]:
    """(kernel name, launches, mean device microseconds) of what ``reps`` calls of ``fn`` ran."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    return [(e.key, e.count, e.device_time_total / e.count) for e in prof.key_averages()
            if e.device_time_total > 0]


def host_us(fn, calls: int = 20) -> float:
    """Host microseconds per call of ``fn``, enqueued behind a ~0.1 s GPU spin."""
    import torch

    torch.cuda.synchronize()
    torch.cuda._sleep(200_000_000)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    seconds = (time.perf_counter() - start) / calls
    torch.cuda.synchronize()
    return seconds * 1e6


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default=DEFAULT_SHAPES, help="MxNxK or LxMxNxK, comma-separated")
    p.add_argument("--layouts", default="nn", help="nn, tn, nt, tt, comma-separated, or all")
    p.add_argument("--dtypes", default="fp16", help="fp16, bf16, fp32, comma-separated, or all")
    p.add_argument("--reps", type=int, default=5, help="calls of each library per product")
    args = p.parse_args(argv)
    if args.reps < 1:
        p.error(f"--reps must be at least 1, got {args.reps}")
    try:
        todo = cases(args.shapes, args.layouts, args.dtypes)
    except ValueError as exc:
        p.error(str(exc))
    import torch

    import cutematmul
    from cutematmul.bench.backends_torch import TorchArrays
    from cutematmul.bench.data import host_operands

    arrays = TorchArrays()  # uploads as the benchmark does (float32: PyTorch without TF32)
    for shape, layout, dtype in todo:
        a, b, out = arrays.upload(host_operands(shape, dtype, layout))
        ref = torch.empty_like(out)
        ours = lambda: cutematmul.matmul(a, b, out=out)  # noqa: E731
        theirs = lambda: torch.matmul(a, b, out=ref)  # noqa: E731
        ours(), theirs()  # loaded and planned before anything is timed
        head = f"{shape.label} {dtype} {layout}"
        print(f"== {head}: cutematmul (host {host_us(ours):.1f} us per call)")
        for name, count, mean in kernel_times(ours, args.reps):
            print(f"   {mean:10.1f} us x{count:3d}  {name[:160]}")
        print(f"== {head}: cuBLAS (torch.matmul, host {host_us(theirs):.1f} us per call)")
        for name, count, mean in kernel_times(theirs, args.reps):
            print(f"   {mean:10.1f} us x{count:3d}  {name[:160]}")
        sys.stdout.flush()
        del a, b, out, ref
    return 0


if __name__ == "__main__":
    sys.exit(main())
