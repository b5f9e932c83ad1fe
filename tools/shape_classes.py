"""Random shapes per shape class, the dispatcher's own picks beside cuBLAS (GPU).

    python tools/shape_classes.py [--seed 20261203] [--only mid,large] [--list]
    python tools/shape_classes.py [--seed ...] [--only ...] --precompile DIR [--jobs N]

The acceptance runs of this project use shapes no issue lists, so the wave model is judged on
classes, not points: each class draws its sizes log-uniformly from a seeded generator (another
``--seed`` draws an out-of-sample set of the same classes):

* ``mid``: 16-bit, every side 640-3584 (multiples of 8), nn, tn or nt;
* ``large``: fp16 or bf16, every side 3072-12288 (multiples of 64), nn or tn;
* ``skinnyM`` / ``skinnyN``: 16-bit, one side 1-256, the others 2048-16384;
* ``batched``: 16-bit, batch 2-64 of sides 64-1536;
* ``odd``: 16-bit, odd sides 500-5000 (operands and C staged);
* ``fp32``: ``precision="highest"``, mid or skinny;
* ``tf32`` / ``high``: ``precision="tf32"`` / ``"high"``, sides 2048-8192;
* ``deepK``: a small C from a long K (``x.T @ y`` over many samples): M and N 8-320, K
  8192-262144, fp16, bf16 or fp32 ("highest");
* ``skinnyT``: fp16 or bf16 with A stored M-major (tn or tt), M 1-256, N and K 2048-16384;
* ``tf32T``: ``precision="tf32"`` with A stored M-major (tn or tt), M 16-4096, N and K
  1024-8192 (the layouts the ``tf32`` class does not draw).
* ``decode``: fp16 or bf16, M 1-32 over a shorter N, N 2048-6144 and K 6144-16384 (a few
  tokens through a layer's down-projection: N's tiles fill part of the SMs and K is long),
  nn, tn or nt.

Classes are drawn in this order, each new class after the others, so adding one leaves the
earlier draws of a seed unchanged.

Each product is timed by ``tools/sweep_schedule.py``'s ``time_us`` (CUDA events over 5 bursts
of 20 products behind a spin, the median), on PyTorch arrays rotated over sets of at least 256 MB so that
every product reads its operands from device memory (L2-cold), and ``torch.matmul`` on the same
arrays is the reference: cuBLAS SGEMM for "highest" and "high" (TF32 off), cuBLAS TF32 for
"tf32".  Every result is checked against a float64 product in an output poisoned with NaN
first.  Prints one line per product (time, TFLOP/s, ratio, the planned schedule, the relative
error) and per class the geometric mean and the least ratio.  ``docs/performance.md`` quotes
its output.  ``--precompile DIR`` needs no GPU: it builds the kernels the selected products'
plans name for an sm_90a GPU of 132 SMs (``aot.plan_keys``) into DIR, so a GPU run with
``CUTEMATMUL_CACHE_DIR=DIR`` spends its time timing, not compiling.  Imports: ``cutematmul``,
``torch`` (to time), ``sweep_schedule`` (beside it).
"""

from __future__ import annotations

import argparse
import itertools
import math
import random

SEED = 20261203


def _logu(r: random.Random, lo: float, hi: float, mult: int = 1) -> int:
    value = math.exp(r.uniform(math.log(lo), math.log(hi)))
    return max(mult, int(round(value / mult)) * mult)


def cases(seed: int = SEED) -> list[tuple]:
    """(class, dtype, precision, layout, m, n, k, batch) of every product, in a stable order."""
    r = random.Random(seed)
    out = []
    for _ in range(14):
        m, n, k = (_logu(r, 640, 3584, 8) for _ in range(3))
        out.append(("mid", "float16", "highest", r.choice(["nn", "tn", "nt"]), m, n, k, 1))
    for _ in range(8):
        m, n, k = (_logu(r, 3072, 12288, 64) for _ in range(3))
        out.append(("large", r.choice(["float16", "bfloat16"]), "highest", r.choice(["nn", "tn"]),
                    m, n, k, 1))
    for _ in range(18):
        m, n, k = _logu(r, 1, 256), _logu(r, 2048, 16384, 8), _logu(r, 2048, 16384, 8)
        out.append(("skinnyM", "float16", "highest", r.choice(["nn", "tn"]), m, n, k, 1))
    for _ in range(10):
        n, m, k = _logu(r, 1, 256), _logu(r, 2048, 16384, 8), _logu(r, 2048, 16384, 8)
        out.append(("skinnyN", "float16", "highest", r.choice(["nn", "nt"]), m, n, k, 1))
    for _ in range(8):
        b = _logu(r, 2, 64)
        m, n, k = (_logu(r, 64, 1536, 8) for _ in range(3))
        out.append(("batched", "float16", "highest", "nn", m, n, k, b))
    for _ in range(6):
        m, n, k = (_logu(r, 500, 5000) | 1 for _ in range(3))
        out.append(("odd", "float16", "highest", "nn", m, n, k, 1))
    for _ in range(12):
        if r.random() < 0.5:
            m, n, k = (_logu(r, 640, 6144, 4) for _ in range(3))
        else:
            m, n, k = _logu(r, 1, 256), _logu(r, 2048, 12288, 4), _logu(r, 2048, 12288, 4)
        out.append(("fp32", "float32", "highest", r.choice(["nn", "nt", "tn"]), m, n, k, 1))
    for precision in ("tf32", "high"):
        for _ in range(5):
            m, n, k = (_logu(r, 2048, 8192, 64) for _ in range(3))
            out.append((precision, "float32", precision, r.choice(["nn", "nt"]), m, n, k, 1))
    for _ in range(8):
        m, n, k = _logu(r, 8, 320), _logu(r, 8, 320), _logu(r, 8192, 262144, 8)
        out.append(("deepK", r.choice(["float16", "bfloat16", "float32"]), "highest",
                    r.choice(["nn", "tn"]), m, n, k, 1))
    for _ in range(10):
        m, n, k = _logu(r, 1, 256), _logu(r, 2048, 16384, 8), _logu(r, 2048, 16384, 8)
        out.append(("skinnyT", r.choice(["float16", "bfloat16"]), "highest",
                    r.choice(["tn", "tt"]), m, n, k, 1))
    for _ in range(6):
        m, n, k = _logu(r, 16, 4096, 4), _logu(r, 1024, 8192, 4), _logu(r, 1024, 8192, 4)
        out.append(("tf32T", "float32", "tf32", r.choice(["tn", "tt"]), m, n, k, 1))
    for _ in range(10):
        m, n, k = _logu(r, 1, 32), _logu(r, 2048, 6144, 8), _logu(r, 6144, 16384, 8)
        out.append(("decode", r.choice(["float16", "bfloat16"]), "highest",
                    r.choice(["nn", "tn", "nt"]), m, n, k, 1))
    return out


#: ``aot.LAYOUTS`` names of the layouts: the majors of A and B.
_MAJORS = {"nn": "kn", "tn": "mn", "nt": "kk", "tt": "mk"}


def kernel_keys(selected: list[tuple], arch: str = "sm_90a") -> list:
    """The kernels the planner names for ``selected`` products on ``arch`` (no GPU); operands
    of no whole 16-byte rows (the ``odd`` class) with their staging kernels."""
    from cutematmul import aot

    keys = []
    for cls, dtype, precision, layout, m, n, k, batch in selected:
        keys += aot.plan_keys(aot.Selection(
            archs=(arch,), dtypes=(dtype,), precisions=(precision,), layouts=(_MAJORS[layout],),
            shapes=((m, n, k, batch),), alignments="all" if cls == "odd" else "aligned"))
    return list(dict.fromkeys(keys))


def _schedule(work) -> str:
    """A planned launch's kernel (its configuration's name), K-splits and orientation."""
    if work is None:
        return "staged"
    splits = work.calls[0][1][4] if work.calls else 1
    return f"{work.key.config.name} s{splits}{' transposed' if work.transposed else ''}"


def _measure(torch, case: tuple) -> tuple[float, float, float, str]:
    """(cuBLAS us, cutematmul us, relative error, schedule) of one product."""
    import cutematmul
    from cutematmul import launch
    from cutematmul.adapters import adapter_for
    from sweep_schedule import time_us  # tools/: the benchmark's burst timing

    _, dtype, precision, layout, m, n, k, batch = case
    dt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[dtype]
    itemsize = 4 if dtype == "float32" else 2
    sets = max(1, min(8, -(-256 * 2**20 // ((m * k + k * n) * itemsize * batch))))
    lead = (batch,) if batch > 1 else ()

    def operand(rows, cols, transposed):
        shape = (*lead, cols, rows) if transposed else (*lead, rows, cols)
        x = torch.randn(*shape, device="cuda").to(dt)
        return x.transpose(-1, -2) if transposed else x

    a = [operand(m, k, layout[0] == "t") for _ in range(sets)]
    b = [operand(k, n, layout[1] == "t") for _ in range(sets)]
    out = torch.empty(*lead, m, n, device="cuda", dtype=dt)
    work = launch.planned_launch(adapter_for(a[0]), a[0], b[0], precision=precision)

    def rotating(product):  # each call reads the next set of operands: L2-cold
        turn = itertools.cycle(range(sets))
        return lambda: product(next(turn))

    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    cublas = time_us(rotating(lambda i: torch.matmul(a[i], b[i], out=out)))
    torch.backends.cuda.matmul.allow_tf32 = False
    ours = time_us(rotating(lambda i: cutematmul.matmul(a[i], b[i], out=out,
                                                        precision=precision)))
    out.fill_(float("nan"))
    cutematmul.matmul(a[0], b[0], out=out, precision=precision)
    ref = a[0].double() @ b[0].double()
    error = ((out.double() - ref).norm() / ref.norm()).item()
    return cublas, ours, error, _schedule(work)


def run(selected: list[tuple]) -> None:
    import torch

    ratios: dict[str, list[float]] = {}
    for case in selected:
        cls, dtype, precision, layout, m, n, k, batch = case
        cublas, ours, error, schedule = _measure(torch, case)
        torch.cuda.empty_cache()
        ratios.setdefault(cls, []).append(cublas / ours)
        print(f"{cls} {dtype} {precision} {layout} {batch}x{m}x{n}x{k}: cuBLAS {cublas:.1f} us, "
              f"cutematmul {ours:.1f} us, {2 * m * n * k * batch / ours / 1e6:.0f} TFLOP/s, "
              f"{cublas / ours:.2f}x | {schedule} | rel err {error:.1e}", flush=True)
    for cls, values in ratios.items():
        mean = math.exp(sum(map(math.log, values)) / len(values))
        print(f"class {cls}: geometric mean {mean:.3f}x cuBLAS, least {min(values):.2f}x, "
              f"{len(values)} products")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--only", default="", help="comma-separated classes (default: all)")
    parser.add_argument("--list", action="store_true", help="print the products, run nothing")
    parser.add_argument("--precompile", metavar="DIR",
                        help="build the kernels of the selected products into DIR (no GPU)")
    parser.add_argument("--jobs", type=int, help="worker processes of --precompile")
    args = parser.parse_args(argv)
    only = {c for c in args.only.split(",") if c}
    selected = [c for c in cases(args.seed) if not only or c[0] in only]
    if args.list:
        for case in selected:
            print(*case)
        return
    if args.precompile:
        from cutematmul import aot

        report = aot.build_keys(kernel_keys(selected), jobs=args.jobs, cache_dir=args.precompile)
        print(f"{report.keys} kernels: {report.built} built, {report.present} already there, "
              f"{len(report.failed)} failed")
        return
    run(selected)


if __name__ == "__main__":
    main()
