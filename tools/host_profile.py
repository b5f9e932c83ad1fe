"""Where the host time of a small product goes: each step of the device route timed alone.

    python tools/host_profile.py [--size 64 | --shape MxNxK] [--calls 20000]
    python tools/host_profile.py --compare 1x4096x4096 16x4096x4096 --calls 1000

For PyTorch and CuPy (whichever are installed), fp16 and fp32, prints microseconds per call of the
library's own matmul, ``cutematmul.matmul`` and the pieces of its path (adapter, describe, the
cached plan, the output allocation, the compiled kernel's call alone; for a product whose
operands the prep copies, e.g. ``--shape 595x851x545`` in 16 bits, also the copies' workspace,
the prep launch and the whole planned launch, ``launch._execute``, which for a split or
stream-K product times its launches in place of the kernel alone).  A development tool: the
numbers guide work on the hot path; the benchmark's ``host`` subcommand is the measurement of
record.
"""

from __future__ import annotations

import argparse

from cutematmul.bench.shapes import parse_shape


def per_call(fn, calls: int, sync) -> float:
    """Microseconds per call: the best of three of the benchmark's host-time measurements."""
    from cutematmul.bench.timing import host_time_per_call

    return min(host_time_per_call(fn, calls, sync, warmup=200) for _ in range(3)) * 1e6


def launch_steps(plan) -> tuple[str, ...]:
    """Which of the planned launch's own steps ``profile`` times for ``plan`` (a
    ``launch.Launch``): "kernel" (the GEMM kernel's call alone) only where one kernel writes C
    itself, since a split or stream-K kernel writes the launch's fp32 workspace and alone on
    C would be no valid call (on an H200 it faulted, 49th session); "execute" (the whole
    launch, ``launch._execute``) where there is more than that one call; "prep" (the copies'
    workspace and launch) where the prep copies operands."""
    steps = []
    if plan.reduce is None and plan.streamk is None and len(plan.calls) == 1:
        steps.append("kernel")
    if plan.prep is not None or plan.reduce is not None or plan.streamk is not None:
        steps.append("execute")
    if plan.prep is not None:
        steps.append("prep")
    return tuple(steps)


def profile(lib: str, dtype: str, shape: tuple[int, int, int], calls: int) -> None:
    import cutematmul
    from cutematmul import launch
    from cutematmul.adapters import adapter_for
    from cutematmul.cache import get_compiled
    from cutematmul.device import device_info

    m, n, k = shape
    if lib == "torch":
        import torch

        a = torch.randn(m, k, device="cuda").to(getattr(torch, dtype))
        b = torch.randn(k, n, device="cuda").to(getattr(torch, dtype))
        native = lambda: torch.matmul(a, b)  # noqa: E731
        native_out = lambda: torch.matmul(a, b, out=out)  # noqa: E731
        sync = torch.cuda.synchronize
    else:
        import cupy as cp

        a = cp.random.standard_normal((m, k)).astype(dtype)
        b = cp.random.standard_normal((k, n)).astype(dtype)
        native = lambda: cp.matmul(a, b)  # noqa: E731
        native_out = lambda: cp.matmul(a, b, out=out)  # noqa: E731
        sync = cp.cuda.runtime.deviceSynchronize
    adapter = adapter_for(a)
    out = cutematmul.matmul(a, b)
    da, db, dc = (adapter.describe(x, "a") for x in (a, b, out))
    info = device_info(da.device)
    families = launch.families_for(da.dtype, info.capability, "auto")
    aligned = tuple((x.ptr & 15) == 0 for x in (da, db, dc))  # as ``gemm_on_device`` plans
    swapped, plan = launch._plan_launch(
        families[1], info.capability, info.num_sms, da.shape, da.strides, db.shape, db.strides,
        dc.shape, dc.strides, families[2], dc.itemsize, aligned, (False,) * 3)
    if not isinstance(plan, launch.Launch):
        print(f"\n{lib} {dtype} {m}x{n}x{k}: planned {type(plan).__name__}, not one launch; "
              "not profiled")
        return
    fn = get_compiled(plan.key)
    (oa, ob, oc), sizes = plan.calls[0]
    stream = adapter.current_stream(da.device)
    first, second = (db.ptr, da.ptr) if swapped else (da.ptr, db.ptr)  # in the GEMM's order
    pa, pb = first + oa, second + ob
    gemm_pa, gemm_pb, gemm_sizes, kept = pa, pb, sizes, []
    if plan.prep is not None:  # the GEMM reads the prep's copies (kept alive), not a and b
        gemm_pa, gemm_pb, gemm_sizes = launch._run_prep(adapter, plan.prep, pa, pb, sizes, out,
                                                        stream, kept)
    cutematmul.matmul(a, b, out=out)
    repeat = launch._repeats.get((adapter.signature(a, b, out), "highest", "auto"))
    steps = {
        f"{lib}.matmul": native,
        f"{lib}.matmul(out=)": native_out,
        "cutematmul.matmul": lambda: cutematmul.matmul(a, b),
        "cutematmul.matmul(out=)": lambda: cutematmul.matmul(a, b, out=out),
        "  signature (a, b, out)": lambda: adapter.signature(a, b, out),
        "  the repeat (out given)": lambda: launch._run_repeat(adapter, repeat, a, b, out),
        "  adapter.matmul": lambda: adapter.matmul(a, b, out=None, stream=None,
                                                   precision="highest", kernel="auto"),
        "  launch.run_device": lambda: launch.run_device(adapter, a, b, out=None, stream=None,
                                                         kernel="auto"),
        "  gemm_on_device (out given)": lambda: launch.gemm_on_device(
            adapter, families, info, da, db, dc, stream),
        "  describe x1": lambda: adapter.describe(a, "a"),
        "  empty": lambda: adapter.empty(dc.shape, a),
        "  current_stream": lambda: adapter.current_stream(da.device),
        "  on_device": lambda: adapter.on_device(da.device),
        "  adapter_for x2": lambda: (adapter_for(a), adapter_for(b)),
    }
    chosen = launch_steps(plan)
    if "kernel" in chosen:
        steps["  kernel call alone"] = lambda: fn(gemm_pa, gemm_pb, dc.ptr + oc, *gemm_sizes,
                                                  stream)
    if "execute" in chosen:
        steps["  _execute (the planned launches)"] = lambda: launch._execute(
            adapter, plan, swapped, da.ptr, db.ptr, dc.ptr, out, stream)
    if "prep" in chosen:  # the operand prep's copies
        held = []
        nbytes = launch._prep_plan(plan.prep, sizes)[1]
        steps["  the copies' workspace"] = lambda: adapter.workspace(-(-nbytes // 4), out, stream)
        steps["  the prep launch(es) alone"] = lambda: (launch._run_prep(
            adapter, plan.prep, pa, pb, sizes, out, stream, held), held.clear())
    if lib == "torch":
        import torch

        steps["  torch.empty(shape, dtype, device)"] = lambda: torch.empty(
            dc.shape, dtype=a.dtype, device=a.device)
        steps["  torch.empty_like(a)"] = lambda: torch.empty_like(a)
    print(f"\n{lib} {dtype} {m}x{n}x{k} ({type(fn).__module__}.{type(fn).__name__})")
    for name, step in steps.items():
        print(f"  {name:34s} {per_call(step, calls, sync):7.2f} us")


def compare(shapes: list[str], calls: int) -> None:
    """Host time per call into ``out=`` of ``cutematmul.matmul`` and ``torch.matmul`` alone (no
    other backend in the loop), for products of any shape (split ones: two launches)."""
    import torch

    import cutematmul

    for text in shapes:
        m, n, k = map(int, text.split("x"))
        for dtype in (torch.float16, torch.float32):
            a = torch.randn(m, k, device="cuda", dtype=dtype)
            b = torch.randn(k, n, device="cuda", dtype=dtype)
            out = torch.empty(m, n, device="cuda", dtype=dtype)
            ours = per_call(lambda: cutematmul.matmul(a, b, out=out), calls, torch.cuda.synchronize)
            theirs = per_call(lambda: torch.matmul(a, b, out=out), calls, torch.cuda.synchronize)
            print(f"{text} {str(dtype).removeprefix('torch.')}: cutematmul {ours:.1f} us, "
                  f"torch.matmul {theirs:.1f} us per call")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=64, help="M = N = K (default 64)")
    p.add_argument("--shape", metavar="MxNxK", help="another product (e.g. 595x851x545)")
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--compare", metavar="MxNxK", nargs="+",
                   help="only compare host time per call with torch.matmul for these shapes")
    args = p.parse_args()
    if args.compare:
        compare(args.compare, args.calls)
        return
    shape = (args.size,) * 3
    if args.shape:
        try:
            parsed = parse_shape(args.shape)
        except ValueError as exc:
            p.error(f"--shape: {exc}")
        if parsed.batch is not None:
            p.error(f"--shape: one MxNxK product, got a batch {args.shape!r}")
        shape = (parsed.m, parsed.n, parsed.k)
    for lib in ("torch", "cupy"):
        try:
            __import__(lib)
        except ImportError:
            print(f"{lib}: not installed")
            continue
        for dtype in ("float16", "float32"):
            profile(lib, dtype, shape, args.calls)


if __name__ == "__main__":
    main()
