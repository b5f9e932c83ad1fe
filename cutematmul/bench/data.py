"""Identical inputs for every backend, and the float64 reference they are checked against.

Operands are drawn on the host (NumPy ``standard_normal`` in float32, from one seed), rounded to the
benchmarked dtype here, and handed to each array library as the same bits, so every backend of a
point multiplies exactly the same numbers.  A transposed operand (layout ``t``) is drawn in its
stored shape and passed as a view.

The check samples rows and columns of C (always including the first and last, where edge tiles
are) and compares them with a float64 product of the rounded inputs:
``||C_s - C_ref||_F / ||C_ref||_F`` (the ``rel err`` column), bounded by ``tolerance`` of the dtype
and of the precision the backend computes at.  Every output element must also be finite: outputs
start as NaN.

Imports: ``shapes`` of this package; ``numpy``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .shapes import Shape

# Relative-error bound past which a result counts as wrong (the same as tests/helpers.py):
# float32 is true fp32; 16-bit outputs are dominated by the final rounding of C.
TOLERANCE = {"float32": 2e-5, "float16": 1e-3, "bfloat16": 8e-3}
# float32 by the precision a backend computes at: "tf32" rounds both inputs to 11 significant
# bits (near 3e-4 on Gaussian data); "high" (3xTF32) keeps about fp32's accuracy.
FP32_TOLERANCE = {"highest": TOLERANCE["float32"], "high": TOLERANCE["float32"], "tf32": 3e-3}
SAMPLE = 96  # rows and columns of C checked (plus the first and last)
SAMPLE_BATCHES = 4


def bfloat16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), rounded to nearest even (finite inputs)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))
    return (rounded >> np.uint32(16)).astype(np.uint16)


def bfloat16_values(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) -> the float32 values they hold."""
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


@dataclass
class HostOperand:
    """One operand as drawn: ``storage`` holds the dtype's bits in the stored shape (float16 or
    float32 arrays; uint16 bit patterns for bfloat16); ``transposed`` says the product uses
    its transposed view."""

    storage: np.ndarray
    dtype: str
    transposed: bool

    def values(self, batches=None, rows=None, cols=None) -> np.ndarray:
        """The logical operand (after the transpose, if any) as float64, optionally only the
        given batch indices, rows and columns (selected before anything is converted)."""
        v = np.swapaxes(self.storage, -1, -2) if self.transposed else self.storage
        if batches is not None:
            v = v[list(batches)]
        if rows is not None:
            v = v[..., rows, :]
        if cols is not None:
            v = v[..., cols]
        v = bfloat16_values(v) if self.dtype == "bfloat16" else v
        return v.astype(np.float64)


@dataclass
class HostOperands:
    """A and B of one input set, and the output shape."""

    a: HostOperand
    b: HostOperand
    out_shape: tuple[int, ...]


def host_operands(shape: Shape, dtype: str, layout: str = "nn", seed: int = 0) -> HostOperands:
    """Fresh Gaussian A and B for ``shape`` in ``dtype`` and ``layout`` (e.g. "tn"), from
    ``seed``."""
    rng = np.random.default_rng(seed)
    lead = () if shape.batch is None else (shape.batch,)

    def draw(rows: int, cols: int, transposed: bool) -> HostOperand:
        stored = (cols, rows) if transposed else (rows, cols)
        x = rng.standard_normal(lead + stored, dtype=np.float32)
        if dtype == "bfloat16":
            x = bfloat16_bits(x)
        elif dtype == "float16":
            x = x.astype(np.float16)
        return HostOperand(x, dtype, transposed)

    a = draw(shape.m, shape.k, layout[0] == "t")
    b = draw(shape.k, shape.n, layout[1] == "t")
    return HostOperands(a, b, lead + (shape.m, shape.n))


@dataclass
class Sample:
    """Which elements of C are checked, and their float64 reference values."""

    batches: tuple[int, ...] | None  # None without a batch
    rows: np.ndarray
    cols: np.ndarray
    reference: np.ndarray  # [batches?, rows, cols]

    def take(self, c: np.ndarray) -> np.ndarray:
        """The sampled elements of a full host copy of C."""
        if self.batches is not None:
            c = c[list(self.batches)]
        return c[..., self.rows, :][..., self.cols]


def _pick(size: int, count: int, rng) -> np.ndarray:
    if size <= count + 2:
        return np.arange(size)
    inner = rng.choice(np.arange(1, size - 1), size=count, replace=False)
    return np.sort(np.concatenate([[0, size - 1], inner]))


def reference_sample(host: HostOperands, shape: Shape, seed: int = 0) -> Sample:
    """The float64 product of the rounded inputs at sampled rows, columns (and batches)."""
    rng = np.random.default_rng(seed + 7919)
    rows, cols = _pick(shape.m, SAMPLE, rng), _pick(shape.n, SAMPLE, rng)
    batches = None
    if shape.batch is not None:
        batches = tuple(int(i) for i in _pick(shape.batch, SAMPLE_BATCHES - 2, rng))
    ref = host.a.values(batches, rows=rows) @ host.b.values(batches, cols=cols)
    return Sample(batches, rows, cols, ref)


def tolerance(dtype: str, precision: str = "highest") -> float:
    """The relative-error bound of a ``dtype`` product computed at float32 ``precision`` (16-bit
    dtypes have their own, whatever the precision)."""
    return FP32_TOLERANCE[precision] if dtype == "float32" else TOLERANCE[dtype]


def relative_error(got: np.ndarray, reference: np.ndarray) -> float:
    """``||got - reference|| / ||reference||`` in float64 (NaN anywhere gives NaN)."""
    got = np.asarray(got, dtype=np.float64)
    denom = float(np.linalg.norm(reference))
    diff = float(np.linalg.norm(got - reference))
    return diff / denom if denom else diff
