"""Shape classes: seeded draws of the products the schedules are judged on and built for.

The acceptance runs of this project use shapes no issue lists, so the schedules are judged on
classes, not points: each class draws its sizes log-uniformly from a seeded generator, and
another seed draws an out-of-sample set of the same classes.

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
* ``skinnyOdd``: fp16 or bf16, M 1-32 over a long operand whose rows are no whole 16-byte
  vectors: N 1024-65536 odd under an N-major B (nn, tn; a vocabulary of 50257 is one), or K
  odd under a K-major B (nt), K 512-16384.

Classes are drawn in this order, each new class after the others, so adding one leaves the
earlier draws of a seed unchanged.  ``tools/shape_classes.py`` times a seed's draws against
cuBLAS on a GPU; ``aot``'s default precompile set plans the draws of its own seeds, so that a
product of any class finds its kernels built.

Imports: nothing of ours.
"""

from __future__ import annotations

import math
import random

SEED = 20261203
#: The classes, in the order they are drawn.
CLASSES = ("mid", "large", "skinnyM", "skinnyN", "batched", "odd", "fp32", "tf32", "high",
           "deepK", "skinnyT", "tf32T", "decode", "skinnyOdd")


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
    for _ in range(8):
        layout = r.choice(["nn", "tn", "nt"])
        m, n, k = _logu(r, 1, 32), _logu(r, 1024, 65536), _logu(r, 512, 16384)
        n, k = (n | 1, k) if layout[1] == "n" else (n, k | 1)
        out.append(("skinnyOdd", r.choice(["float16", "bfloat16"]), "highest", layout, m, n, k,
                    1))
    return out


def shapes(seeds, which=None) -> tuple[tuple[int, int, int, int], ...]:
    """The distinct (m, n, k, batch) of the draws of ``seeds``, in draw order: of every class,
    or of the classes ``which`` names."""
    return tuple(dict.fromkeys((m, n, k, batch) for seed in seeds
                               for cls, _, _, _, m, n, k, batch in cases(seed)
                               if which is None or cls in which))
