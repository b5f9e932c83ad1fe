"""What to measure: GEMM shapes, named suites, dtypes, layouts and float32 precisions, and what
each point costs.

A shape is written ``MxNxK`` (``8192x8192x1024``) or, for a batch of products, ``BxMxNxK``
(``64x1024x1024x1024``: 64 products of 1024^3).  ``parse_shapes`` also takes a named suite
(``default``, ``full``, ``quick``, ``square``, ``skinny``, ``shortk``) and comma-separated mixes
of both.

``default`` is what a plain ``python -m cutematmul.bench`` measures: one shape of each class, sized
so that the first table comes within two minutes; ``full`` is docs/benchmarking.md's whole suite.

Imports: nothing of ours (a leaf: the suites and their parsing).
"""

from __future__ import annotations

from dataclasses import dataclass

DTYPES = ("float16", "bfloat16", "float32")
DEFAULT_DTYPES = ("float16", "float32")  # a plain run; --full or --dtypes all adds bfloat16
DTYPE_ALIASES = {"fp16": "float16", "half": "float16", "bf16": "bfloat16", "fp32": "float32",
                 "float": "float32", "single": "float32"}
ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4}
# t: that operand is passed as a transposed view (a.T / b.T); n: as stored, row-major.
LAYOUTS = ("nn", "tn", "nt", "tt")
# precision= of cutematmul.matmul for float32: "highest" (IEEE fp32), "high" (3xTF32), "tf32".
PRECISIONS = ("highest", "high", "tf32")


@dataclass(frozen=True)
class Shape:
    """C[batch, m, n] = A[batch, m, k] @ B[batch, k, n]; ``batch`` None means plain 2-D operands."""

    m: int
    n: int
    k: int
    batch: int | None = None

    @property
    def label(self) -> str:
        """The spelling ``parse_shape`` reads back: ``MxNxK`` or ``BxMxNxK``."""
        dims = ((self.m, self.n, self.k) if self.batch is None
                else (self.batch, self.m, self.n, self.k))
        return "x".join(map(str, dims))

    @property
    def count(self) -> int:
        """Number of matrix products (1 without a batch)."""
        return 1 if self.batch is None else self.batch

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k * self.count

    def operand_bytes(self, dtype: str) -> int:
        """Bytes of A, B and C together: the least a product must move."""
        return (self.m * self.k + self.k * self.n + self.m * self.n) * self.count * ITEMSIZE[dtype]

    def __str__(self) -> str:
        return self.label


def parse_shape(text: str) -> Shape:
    """``"8192x8192x1024"`` -> Shape(8192, 8192, 1024); ``"64x1024x1024x1024"`` -> a batch of 64."""
    parts = text.strip().lower().replace("*", "x").split("x")
    try:
        dims = [int(p) for p in parts]
    except ValueError:
        dims = []
    if len(dims) not in (3, 4) or any(d <= 0 for d in dims):
        raise ValueError(
            f"shape {text!r} is not MxNxK or BxMxNxK with positive integers "
            "(e.g. 8192x8192x1024 or 64x1024x1024x1024)."
        )
    if len(dims) == 4:
        return Shape(dims[1], dims[2], dims[3], batch=dims[0])
    return Shape(*dims)


def _squares(lo: int, hi: int) -> list[Shape]:
    return [Shape(s, s, s) for s in (2**p for p in range(lo, hi + 1))]


_OTHERS = [  # benchmarking.md's shape suite, beyond the powers of two
    Shape(1000, 1000, 1000),
    Shape(4097, 4095, 4093),
    Shape(4096, 14336, 4096),
    Shape(8192, 8192, 1024),
    Shape(128, 8192, 8192),
    Shape(16, 8192, 8192),
    Shape(1024, 1024, 1024, batch=64),
]

# One shape of each class.  Cost of the default run (these 6 shapes x fp16, fp32 = 12 points, x
# cutematmul-cupy, cupy, torch; 5 rounds x 4 bursts of ~20 ms; 0.5 s heat), estimated for an H200
# from the code (the model is in tests/test_bench_cpu.py, which keeps it under 90 s):
#   timing   per point: 0.5 s heat + 3 backends x 22 bursts x (20 ms + 2.5 ms spin) ~ 2 s  ~ 21 s
#   inputs   3 sets per point (11-21 for 1000^3) drawn on the host at ~10 ns an element and
#            copied to 2 libraries; 8192^3 (400M elements) is 4.5-5 s of it per dtype     ~ 25 s
#   compile  ~2 s per new cutematmul kernel configuration, ~4 per dtype                 ~ 16 s
#   start    imports (PyTorch, CuPy, the DSL), CUDA contexts, spin calibration          ~ 10 s
# about 72 s before the table.  The full suite (14 shapes x 3 dtypes x 6 backends, an XLA compile
# per point and backend of JAX, 16384^3 fp32 at ~180 ms a product) takes 6-7 minutes.
_DEFAULT = [
    Shape(8192, 8192, 8192),  # large square: peak throughput
    Shape(4096, 14336, 4096),  # LLM-like: an MLP projection
    Shape(1000, 1000, 1000),  # mid size: edge tiles, less than one full wave on 132 SMs
    Shape(128, 8192, 8192),  # skinny (M <= 256)
    Shape(4097, 4095, 4093),  # odd, unaligned leading dimensions
    Shape(1024, 1024, 1024, batch=16),  # batched
]

# Skinny products of both kinds: few rows (M <= 32: activations against a weight) and few
# columns (N <= 32: a matrix against a handful of vectors), each with a tail that is no whole
# 16-byte row (24, and 3 or 12 columns) and long and short K.
_SKINNY = [Shape(1, 4096, 4096), Shape(16, 8192, 8192), Shape(24, 4096, 14336),
           Shape(32, 14336, 4096), Shape(4096, 1, 4096), Shape(4096, 8, 4096),
           Shape(8192, 16, 8192), Shape(14336, 24, 4096), Shape(4096, 12, 14336),
           Shape(16384, 3, 2048), Shape(160, 8192, 8192), Shape(192, 10240, 8192),
           Shape(224, 4096, 14336)]

# Short K (a few hundred): each output tile's mainloop is short, so its epilogue is a large part
# of the work (the pingpong kernel's class); squares, rectangles, a tail and a batch.
_SHORT_K = [Shape(4096, 4096, 256), Shape(4096, 4096, 512), Shape(8192, 8192, 512),
            Shape(2048, 8192, 512), Shape(6144, 6144, 384), Shape(5000, 3000, 640),
            Shape(16384, 4096, 512), Shape(1024, 1024, 512, batch=32)]

SUITES: dict[str, list[Shape]] = {
    "default": _DEFAULT,
    "skinny": _SKINNY,
    "shortk": _SHORT_K,
    "full": _squares(8, 14) + _OTHERS,
    "square": _squares(8, 14),
    "quick": [Shape(1024, 1024, 1024), Shape(4096, 4096, 4096), Shape(4097, 4095, 4093),
              Shape(16, 8192, 8192), Shape(256, 256, 256, batch=8)],
}


def parse_shapes(spec: str) -> list[Shape]:
    """Comma-separated shapes and suite names, in order, without repeats."""
    shapes: list[Shape] = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        new = SUITES[item.lower()] if item.lower() in SUITES else [parse_shape(item)]
        shapes.extend(s for s in new if s not in shapes)
    if not shapes:
        raise ValueError(f"--shapes {spec!r} names no shape; suites: {', '.join(SUITES)}.")
    return shapes


def _parse_names(spec: str, names, option: str, what: str, aliases=None,
                 hint: str = "(or 'all')") -> list[str]:
    """The comma-separated ``names`` an ``option`` lists (each at most once, in order; "all":
    every one), or a ValueError naming the one that is not ``what`` can be."""
    if spec.strip().lower() == "all":
        return list(names)
    out = []
    for item in (s.strip().lower() for s in spec.split(",") if s.strip()):
        name = (aliases or {}).get(item, item)
        if name not in names:
            raise ValueError(f"{what} {item!r} is not one of {', '.join(names)} {hint}.")
        if name not in out:
            out.append(name)
    if not out:
        raise ValueError(f"{option} {spec!r} names no {what}.")
    return out


def parse_dtypes(spec: str) -> list[str]:
    """``"fp16,bf16"`` -> ["float16", "bfloat16"]; ``"all"`` -> every dtype."""
    return _parse_names(spec, DTYPES, "--dtypes", "dtype", DTYPE_ALIASES, "(or fp16/bf16/fp32)")


def point_precision(dtype: str, precision: str) -> str:
    """The precision a ``dtype`` point is measured at: ``precision`` for float32; "highest" for
    16-bit dtypes, whose products accumulate in fp32 whatever is asked."""
    return precision if dtype == "float32" else "highest"


def parse_layouts(spec: str) -> list[str]:
    """``"nn,tn"`` -> ["nn", "tn"]; ``"all"`` -> nn, tn, nt, tt."""
    return _parse_names(spec, LAYOUTS, "--layouts", "layout")


# ---- how many input sets to rotate, and how much memory a point needs

L2_BYTES = 60 * 2**20  # H200 L2; the rotated sets together must exceed it
MIN_SETS = 3
MAX_SETS = 512


def input_sets(shape: Shape, dtype: str) -> int:
    """How many (A, B, C) sets to rotate: at least 3, together more than twice the L2."""
    return rotation_sets(shape.operand_bytes(dtype))


def rotation_sets(set_bytes: int, l2_bytes: int = L2_BYTES, most: int = MAX_SETS) -> int:
    """How many sets of ``set_bytes`` to rotate over so that each product reads its operands
    from device memory: at least ``MIN_SETS``, together more than twice ``l2_bytes``, at most
    ``most``.  The one rule of the benchmark and of the tools that time L2-cold."""
    need = 2 * l2_bytes // max(set_bytes, 1) + 1
    return max(MIN_SETS, min(most, need))


def footprint_bytes(shape: Shape, dtype: str, libraries: int) -> int:
    """Device memory of one point: the rotated sets per array library, plus one set of headroom
    (cutematmul's staged copies of unaligned operands, JAX's fresh outputs)."""
    per_library = (input_sets(shape, dtype) + 1) * shape.operand_bytes(dtype)
    return per_library * max(libraries, 1)
