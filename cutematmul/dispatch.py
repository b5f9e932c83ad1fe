"""Which kernel family and configuration runs a problem, and the key of its compiled kernel.

Pure Python and free of CuTe imports, so kernel selection is tested on machines without a GPU.  The
kernel modules themselves (which import the DSL, ~3 s) are loaded only when a kernel is built.

Kernel families are data: one row of ``FAMILIES`` each, naming the family's kernel file under
``cutematmul/kernels/`` and its DSL-free configuration module under ``cutematmul/configs/``:

* ``configs/<family>.py``: ``Config`` (frozen tunables), ``choose_config(m, n, k, batch,
  num_sms, math=...) -> Config`` (the heuristic, no GPU time; ``math`` is the math type,
  ``math_type``), for families that split K also
  ``choose_schedule(...) -> (Config, splits, transposed)``, and ``supports(m, n, k, batch, dtype,
  a_major, b_major, align_a, align_b, align_c) -> str | None``;
* ``kernels/<family>_*.py``: ``Kernel(config, dtype, a_major, b_major, align_a, align_b,
  align_c, num_sms)`` with a ``@cute.jit __call__(mA, mB, mC, stream)``.

``schedule`` is the one place a ``KernelKey`` and its K-split count are chosen, for the pointer
launch and for XLA (``xla.xla_plan``, without stream-K); ``reduce_key`` names the split-K
reduction.
``compile_key`` turns either key into a compiled function (it imports the DSL).

Imports: nothing of ours at module level (``configs.*`` and ``kernels.*`` lazily, in
``Family.configs`` and ``Family.load``: the latter imports the DSL; ``plan`` lazily in
``schedule``).
"""

from __future__ import annotations

import functools
import importlib
import os
from dataclasses import dataclass, fields, replace
from typing import Any, NamedTuple


@dataclass(frozen=True)
class Family:
    """A kernel family: where it lives, what it takes, which GPUs run it."""

    name: str
    module: str
    config_module: str
    dtypes: tuple[str, ...]
    #: bytes of alignment every operand (address, leading and batch stride) must have;
    #: operands that have less are staged into aligned copies by the caller.
    required_alignment: int
    #: compute capabilities that run it: the exact one for arch-specific ('a') features, else the
    #: lowest.
    capability: tuple[int, int]
    exact_capability: bool
    #: the largest byte stride the kernel can address (TMA descriptors: 2^40), None = no limit.
    max_byte_stride: int | None
    #: True when the kernel has a scalar path for A and B: vector copies are then used only where
    #: the unit-stride extent is a whole number of vectors, so no 16-byte cp.async straddles the
    #: end of a row (its byte-count tail is safe in hardware but reads past the operand's span).
    scalar_tails: bool
    #: True when the kernel stores C in whole 16-byte vectors along N (the sm90 TMA epilogue was
    #: measured writing up to the next 16-byte boundary): an output whose N is not a whole number
    #: of vectors is then computed into padded rows of ours and copied out (``copied_c``).
    whole_vector_stores: bool
    #: True when the kernel reads A and B in whole 16-byte vectors along their unit stride with no
    #: scalar path (the sm80 cp.async byte-count tail still addresses the whole vector): operands
    #: whose unit-stride extent is not a whole number of vectors are read from padded copies.
    whole_vector_loads: bool
    #: True when every load of A and B is bounded by that operand's own extents (TMA); False
    #: when the kernel bounds them by the product's M and N (C's extents) and K (A's), so the
    #: operands and C it is handed must agree on them: the XLA route, whose operands and C are
    #: padded apart, makes them agree (``xla._lowered``, ``xla._xla_entry_fn``).
    own_extents: bool
    #: True when the kernel can split K (``kernels/entry.py``) and its configs module has
    #: ``choose_schedule``.
    split_k: bool
    description: str

    def runs_on(self, capability: tuple[int, int]) -> bool:
        if self.exact_capability:
            return capability == self.capability
        return capability >= self.capability

    def configs(self):
        """The family's DSL-free configuration module (``Config``, ``choose_config``,
        ``supports``)."""
        return importlib.import_module(self.config_module)

    def load(self):
        """The family's kernel module (imports the CuTe DSL)."""
        return importlib.import_module(self.module)


#: The 16-bit math types: their operands (and C) are 2-byte elements of that dtype.
HALF_MATH = ("float16", "bfloat16")


FAMILIES = {
    f.name: f
    for f in (
        Family("sm90", "cutematmul.kernels.sm90_hgemm", "cutematmul.configs.sm90",
               ("float16", "bfloat16", "tf32", "tf32x3"), 16, (9, 0), True,
               1 << 40, False, True, False, True, True,
               "TMA + wgmma, warp-specialized persistent GEMM: fp16/bf16, TF32, 3xTF32 "
               "(Hopper, sm_90a)"),
        Family("sm80", "cutematmul.kernels.sm80_hgemm", "cutematmul.configs.sm80",
               HALF_MATH, 16, (8, 0), False,
               None, False, False, True, False, False,
               "cp.async + ldmatrix + mma.sync HGEMM (sm_80 and newer)"),
        Family("simt", "cutematmul.kernels.simt_sgemm", "cutematmul.configs.simt",
               ("float32", "float16", "bfloat16"), 1, (8, 0), False,
               None, True, False, False, False, True,
               "true-fp32 SIMT SGEMM with cp.async staging, and the row-streaming kernel of "
               "products of few rows, fp32 or 16-bit (16 bits on mma.sync tensor cores past "
               "configs.simt.HALF_FMA_MAX_M rows) (sm_80 and newer)"),
    )
}

#: What "auto" picks, in order of preference, per math type (``math_type``); ``problem_order``
#: reorders them for some problems (16-bit: SIMT's row-streaming kernel only there).
AUTO_ORDER = {
    "float16": ("sm90", "sm80", "simt"),
    "bfloat16": ("sm90", "sm80", "simt"),
    "float32": ("simt",),
    "tf32": ("sm90",),
    "tf32x3": ("sm90",),
}

#: ``matmul``'s precision= values, and the math type each gives float32 inputs: "highest" true
#: fp32 FMA, "high" 3xTF32 (fp32-level accuracy on tensor cores), "tf32" one TF32 pass.
PRECISIONS = {"highest": "float32", "high": "tf32x3", "tf32": "tf32"}
#: The math types on TF32 tensor cores, and the GPUs that have their kernels (sm_90a wgmma).
TF32_MATH = ("tf32", "tf32x3")
TF32_CAPABILITY = (9, 0)


def math_type(dtype: str, precision: str, capability: tuple[int, int],
              shape: tuple[int, int, int, int] | None = None, kernel: str = "auto") -> str:
    """The arithmetic a product of ``dtype`` inputs runs: the one place precision is decided.

    16-bit inputs ignore ``precision`` (fp16/bf16 products, fp32 accumulation).  float32 inputs
    take ``PRECISIONS[precision]``, except that they compute true fp32 ("float32": never less
    accurate than asked) on a GPU without the TF32 kernels, and, with ``kernel`` "auto" and the
    product's ``shape`` (M, N, K, batch) given, where the fp32 kernel is the faster one
    (``_fp32_is_faster``).
    """
    if dtype != "float32":
        return dtype
    math = PRECISIONS[precision]
    if math == "float32" or capability != TF32_CAPABILITY:
        return "float32"
    if kernel == "auto" and shape is not None and _fp32_is_faster(math, *shape):
        return "float32"
    return math


def check_tf32x3_k(k: int) -> None:
    """Raise where a "high" (3xTF32) product's K is past its kernel's: the split operands (big |
    small, each padded to whole K-tiles) hold twice K in 32-bit extents
    (``configs.sm90.TF32X3_MAX_K``)."""
    limit = FAMILIES["sm90"].configs().TF32X3_MAX_K
    if k > limit:
        raise ValueError(
            f"matmul: precision='high' takes K up to {limit} (its split operands are twice as "
            f"long along K); got K={k}. Use precision='highest'.")


def _fp32_is_faster(math: str, m: int, n: int, k: int, batch: int) -> bool:
    """Where the SIMT fp32 kernel beats the TF32 ones.

    3xTF32 (H200, 2026-12-01, same run) first splits both operands into K-major parts, which a
    skinny or small product does not earn back: 25.8 against 30.3 TFLOP/s at 1000^3, 4.2
    against 17 at 16 x 8192 x 8192, 29 against 44 at 128 x 8192 x 8192 (and 73 against 42 at
    2048^3).

    One-pass TF32 copies at most the smaller operand (``configs.sm90.operand_copies``) and runs
    small M on the transposed narrow tiles, small N on the untransposed ones
    (``configs.sm90.narrow_n``): it beat SIMT on every product of min(M, N) 2-32 measured,
    and only a matrix-vector product (min(M, N) = 1) stays on SIMT's GEMV kernel, exact and as
    fast.  H200, 2026-12-04, L2-cold, us, TF32 / SIMT (cuBLAS TF32), every layout: 16x8192x8192
    67.1-74.0 / 104.7-158.5 (69.9-77.9), 32x4096x14336 60.8-69.1 / 99.2-217.3 (64.0-75.8),
    8200x32x1032 11.5-14.5 / 23.1-29.1 (15.4-17.9), 1500x8x4100 11.5-15.4 / 21.0-50.7 (14.5-15.3),
    8x512x512 4.1-6.1 / 5.2-20.2 (5.9-6.1); 1x1024x1024 6.3-6.6 / 4.5-6.8 (3.9-12.4),
    1x8192x8192 nt 66.9 / 73.7 (89.0), 2048x1x2048 9.6-10.0 / 8.8-10.5 (8.0-8.7)."""
    if math == "tf32x3":
        return min(m, n) <= 256 or m * n * k * batch < 2**32
    return min(m, n) == 1


def output_dtype(math: str) -> str:
    """The dtype of C (and of the split-K reduction's output) for a math type."""
    return "float32" if math in TF32_MATH else math


def itemsize(math: str) -> int:
    """Bytes per element of A and B as the kernels read them."""
    return 2 if math in HALF_MATH else 4

KERNEL_CHOICES = ("auto",) + tuple(FAMILIES)


def check_kernel(requested: str, caller: str = "matmul") -> None:
    if requested not in KERNEL_CHOICES:
        raise ValueError(
            f"{caller}: kernel must be one of {', '.join(map(repr, KERNEL_CHOICES))}; "
            f"got {requested!r}."
        )


def check_precision(precision, caller: str = "matmul") -> None:
    if not isinstance(precision, str) or precision not in PRECISIONS:
        raise ValueError(
            f"{caller}: precision must be one of {', '.join(map(repr, PRECISIONS))}; "
            f"got {precision!r}."
        )


@functools.lru_cache(maxsize=64)
def choose_families(dtype: str, capability: tuple[int, int],
                    requested: str = "auto") -> tuple[Family, ...]:
    """The families that may run ``dtype`` on a GPU of ``capability``, best first.

    ``requested`` forces one family.  The launch takes the first whose limits the problem fits
    (``Family.max_byte_stride``); the rest are fallbacks for problems the first cannot address.
    """
    check_kernel(requested)
    if requested != "auto":
        family = FAMILIES[requested]
        if dtype not in family.dtypes:
            raise ValueError(
                f"matmul: kernel={requested!r} computes {'/'.join(family.dtypes)}, "
                f"but the operands are {dtype}."
            )
        if not family.runs_on(capability):
            raise ValueError(
                f"matmul: kernel={requested!r} does not run on a GPU of compute capability "
                f"{capability[0]}.{capability[1]}."
            )
        return (family,)
    found = tuple(FAMILIES[n] for n in AUTO_ORDER[dtype] if FAMILIES[n].runs_on(capability))
    if not found:
        raise RuntimeError(
            f"cutematmul: GPUs of compute capability {capability[0]}.{capability[1]} are not "
            "supported; cutematmul needs compute capability 8.0 or newer."
        )
    return found


#: A 16-bit product whose every side is at most this, one matrix, is launch-bound on Hopper: the
#: sm80 kernel runs it in the GPU time of sm90's (H200, 2026-12-01, fp16 nn: 64^3 2.9 against
#: 3.0 us, 128^3 3.6 against 3.7; 192^3 4.5 against 4.1, 256^3 5.0 against 4.3) and its launch
#: encodes no TMA descriptors: ~1 us less host time per call.
LAUNCH_BOUND_SIDE = 128


def problem_order(names: tuple[str, ...], m: int, n: int, k: int, batch: int, num_sms: int,
                  majors: tuple[str, str] = ("k", "n"),
                  vectors: tuple[bool, bool] = (True, True)) -> tuple[str, ...]:
    """``names`` (a ``choose_families`` order, by family name) for one (M, N, K, batch) problem
    of these operand ``majors`` on a GPU of ``num_sms`` SMs: sm80 ahead of sm90 for a
    launch-bound product (``LAUNCH_BOUND_SIDE``); SIMT's row-streaming kernel first for a
    16-bit product of few rows whose long operand's rows are no whole 16-byte vectors
    (``vectors``: A's and B's), which it reads as they are (``configs.simt.streams_in_place``);
    else unchanged.  The launch takes the family moved first only where it reads the operands
    as they are (no staging)."""
    if names[:2] == ("sm90", "sm80") and batch == 1 and max(m, n, k) <= LAUNCH_BOUND_SIDE:
        return ("sm80", "sm90") + names[2:]
    # SIMT behind another family: a 16-bit order (``AUTO_ORDER``).
    if "simt" in names[1:] and FAMILIES["simt"].configs().streams_in_place(
            m, n, k, batch, num_sms, majors, vectors):
        return ("simt",) + tuple(name for name in names if name != "simt")
    return names


def choose_family(dtype: str, capability: tuple[int, int], requested: str = "auto",
                  shape: tuple[int, int, int, int] | None = None, num_sms: int | None = None,
                  majors: tuple[str, str] = ("k", "n"),
                  vectors: tuple[bool, bool] = (True, True)) -> Family:
    """The preferred family for ``dtype`` on a GPU of ``capability``; with the product's
    ``shape`` (M, N, K, batch) and the GPU's ``num_sms``, the one ``problem_order`` puts first
    for it (with its operand ``majors`` and whether their rows are whole 16-byte ``vectors``:
    the XLA route pads them so)."""
    families = choose_families(dtype, capability, requested)
    if shape is None:
        return families[0]
    if num_sms is None:
        raise TypeError("choose_family: a shape needs the GPU's num_sms (problem_order).")
    return FAMILIES[problem_order(tuple(f.name for f in families), *shape, num_sms, majors,
                                  vectors)[0]]


def target_arch(capability: tuple[int, int]) -> str:
    """The code target of a GPU: ``CUTE_DSL_ARCH`` when set, else sm_XY (sm_90a on Hopper:
    wgmma and setmaxnreg are arch-specific features).  Imports no DSL."""
    forced = os.environ.get("CUTE_DSL_ARCH")
    if forced:
        return forced
    major, minor = capability
    return f"sm_{major}{minor}" + ("a" if major >= 9 else "")


@dataclass(frozen=True)
class KernelKey:
    """Everything that changes the generated code; the key of the compiled-kernel cache."""

    family: str
    arch: str
    dtype: str
    a_major: str
    b_major: str
    align_a: int  # in elements
    align_b: int
    align_c: int
    config: Any
    num_sms: int

    def __post_init__(self):
        # Every launch looks its kernel up by this key: hash the fields once, not per call.
        object.__setattr__(self, "_hash", hash(tuple(getattr(self, f) for f in _KEY_FIELDS)))

    def __hash__(self) -> int:
        return self._hash

    def __getstate__(self) -> dict:
        # Without the cached hash: string hashes differ from process to process (aot's
        # worker processes receive keys pickled), so a copied hash would not find equal keys.
        return {f: getattr(self, f) for f in _KEY_FIELDS}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        self.__post_init__()


_KEY_FIELDS = tuple(f.name for f in fields(KernelKey))


class Problem(NamedTuple):
    """What ``schedule`` decides from, for a product that may split K: the key of a tuned
    schedule (``cache.tuned_choice``, ``cutematmul.tune``).  Alignments are in bytes."""

    family: str
    arch: str
    math: str
    a_major: str
    b_major: str
    align_a: int
    align_b: int
    align_c: int
    m: int
    n: int
    k: int
    batch: int
    num_sms: int


def operand_copies(family: Family, math: str, a_major: str, b_major: str, m: int, n: int,
                   k: int, batch: int, num_sms: int, readable: tuple[bool, bool] = (True, True),
                   counts: tuple[int, int] = (1, 1)) -> tuple[str | None, str | None]:
    """Which of (A, B) ``family``'s kernel reads through a copy of ours, made first by the
    operand prep (``kernels/operand_prep.py``), and each copy's major (None: read as it is): the
    rule of the family (``operand_copies`` in its configs module; none: no copies).  TF32 reads
    K-major copies (``configs.sm90``), the fp32 SIMT kernel on large products an M-major copy
    of a K-major A or an N-major copy of a K-major B (``configs.simt``), or a K-major copy of
    a few-column N-major B for its row-streaming kernel; 16-bit products a copy in padded rows
    of an operand TMA cannot address, and a K-major copy of a small M's M-major A on few swapped
    narrow tiles (``configs.sm90``).  ``batch`` and ``num_sms`` size the product against the
    GPU; ``readable`` says which operands the kernel could read as they are; ``counts``: the
    matrices of A and of B a copy would write (1 for a broadcast operand)."""
    rule = getattr(family.configs(), "operand_copies", None)
    return (None, None) if rule is None else rule(math, a_major, b_major, m, n, k, batch,
                                                  num_sms, readable, counts)


def problem(family: Family, capability: tuple[int, int], num_sms: int, dtype: str,
            a_major: str, b_major: str, align_bytes: tuple[int, int, int],
            m: int, n: int, k: int, batch: int) -> Problem | None:
    """The ``Problem`` of a single-launch product, None when its family has no schedules."""
    if not family.split_k:
        return None
    return Problem(family.name, target_arch(capability), dtype, a_major, b_major, *align_bytes,
                   m, n, k, batch, num_sms)


def schedule(family: Family, capability: tuple[int, int], num_sms: int, dtype: str,
             a_major: str, b_major: str, align_bytes: tuple[int, int, int],
             m: int, n: int, k: int, batch: int,
             split_k: bool = True, tuned: tuple | None = None,
             streamk: bool = True) -> tuple[KernelKey, int, bool]:
    """(the key of the kernel that runs the problem, its K-split count, transposed).

    The one KernelKey builder: alignment in bytes -> the vector width the kernel may assume, and
    the family's configuration (tile and split chosen together, no GPU time).  ``split_k`` False
    asks for a product straight into C (no workspace: a launch of several pieces); ``streamk``
    False for a route with a workspace of partials but without stream-K's zeroed flags (XLA,
    whose partials are an output of its custom call).  ``tuned`` is the
    autotuner's (config, splits, transposed) for this problem (``cache.tuned_choice``), taken
    instead of the wave model's when the product may split.  With ``transposed``
    the key is the kernel of C^T = B^T A^T (A and B trade places, majors and alignments with
    them) writing fp32 partials into the workspace; the reduction transposes them into C.
    """
    vector = 16 // itemsize(dtype)
    aligns = [vector if a >= 16 else 1 for a in align_bytes]
    if family.scalar_tails:
        from .plan import unit_extents

        for i, extent in enumerate(unit_extents(a_major, b_major, m, n, k)):
            if extent % vector:
                aligns[i] = 1
    configs = family.configs()
    transposed = False
    orientation = schedule_options(family, dtype, a_major, b_major, align_bytes[2] >= 16)
    if tuned is not None and getattr(tuned[0], "streamk", False) and (
            not streamk or not configs.streamk_fits(tuned[0], m, n, k, batch)):
        tuned = None  # a recorded stream-K schedule where the route has none (XLA), or past
        # the kernel's 32-bit iteration count
    if family.split_k and split_k and tuned is not None:
        config, splits, transposed = tuned
    elif family.split_k and split_k:
        config, splits, transposed = configs.choose_schedule(m, n, k, batch, num_sms,
                                                             math=dtype, streamk=streamk,
                                                             **orientation)
    else:
        config, splits = configs.choose_config(m, n, k, batch, num_sms, math=dtype,
                                               **orientation), 1
    adapt = getattr(configs, "for_capability", None)  # what the GPU lacks (SIMT: PDL before sm_90)
    if adapt is not None:
        config = adapt(config, capability)
    if transposed:
        from .plan import transposed_majors

        a_major, b_major = transposed_majors(a_major, b_major)
        aligns[0], aligns[1] = aligns[1], aligns[0]
    if through_workspace(config, splits, transposed):  # C: ours, rows of ``WORKSPACE_ROW``
        aligns[2] = vector
    key = KernelKey(family.name, target_arch(capability), dtype, a_major, b_major, *aligns,
                    config, num_sms)
    return key, splits, transposed


#: The rows of a workspace of partial sums are padded to this many elements: 32 bytes of fp32
#: partials (16 of a 16-bit C, ``copied_c``), what the kernel's key assumes of them (``schedule``).
WORKSPACE_ROW = 8


def through_workspace(config, splits: int, transposed: bool) -> bool:
    """Whether a schedule's kernel writes fp32 partial sums into a workspace of ours, which the
    reduction (``reduce_key``) then adds (and, transposed, transposes) into C: a K-split, a
    transposed product, or a configuration that always writes partials (the sm90 narrow tiles
    of small-N products, ``Config.partials`` unsplit).  The one place this is decided."""
    return splits > 1 or transposed or getattr(config, "partials", False)


def schedule_options(family: Family, dtype: str, a_major: str, b_major: str,
                     c_aligned: bool = True) -> dict:
    """The keyword arguments the family's schedule functions (``choose_schedule``,
    ``candidates``, ``choose_config``) take from the operand majors and from whether C's rows
    are whole 16-byte vectors (``c_aligned``): its configs module's ``schedule_options``,
    ``{}`` for a family without one.  sm90: ``{"swapped": True}`` for a kernel that computes
    C^T = B^T A^T itself (one-pass TF32 with an N-major B), whose tiles cover (N, M), and
    ``c_aligned`` (a small-N product with a C that TMA cannot store goes through the
    workspace); simt: the majors, which decide where its row-streaming kernel reads well."""
    options = getattr(family.configs(), "schedule_options", None)
    return {} if options is None else options(dtype, a_major, b_major, c_aligned)


#: ``tunable``'s limit when it lists every schedule a tuned record may name.
EVERY_CANDIDATE = 1 << 16


def tunable(problem: Problem, limit: int) -> list[tuple[Any, int, bool]]:
    """The schedules (config, splits, transposed) ``cutematmul.tune`` times for ``problem``: its
    family's ``candidates`` (the wave model's pick first, then up to ``limit`` more), none for a
    family without schedules.  With ``EVERY_CANDIDATE``, the only schedules a tuned record may
    name (``cache.tuned_table``): each is a combination the kernels are built and tested in
    (e.g. fp32 partials exactly when the product splits or runs transposed)."""
    family = FAMILIES[problem.family]
    configs = family.configs()
    if not family.split_k or not hasattr(configs, "candidates"):
        return []
    orientation = schedule_options(family, problem.math, problem.a_major, problem.b_major,
                                   problem.align_c >= 16)
    return configs.candidates(problem.m, problem.n, problem.k, problem.batch, problem.num_sms,
                              math=problem.math, limit=limit, **orientation)


@dataclass(frozen=True)
class ReduceKey:
    """The split-K reduction (``kernels/splitk_reduce.py``) writing C of ``dtype`` from a
    workspace of ``w_dtype`` (fp32 partials, or C's own dtype: ``copied_c``); ``pdl``: launched
    with programmatic dependent launch (Hopper and newer)."""

    family: str
    arch: str
    dtype: str
    pdl: bool = False
    w_dtype: str = "float32"


def reduce_key(capability: tuple[int, int], dtype: str, w_dtype: str = "float32") -> ReduceKey:
    """The reduction of a split or transposed product (or the copy of ``copied_c``); on sm_90
    and newer it is launched as a dependent of the GEMM before it (whose producer lets it
    launch after its last load), so its launch overlaps the GEMM's epilogue."""
    return ReduceKey("splitk_reduce", target_arch(capability), dtype, pdl=capability >= (9, 0),
                     w_dtype=w_dtype)


def copies_c(family: Family, config, splits: int, transposed: bool, c_storable: bool) -> bool:
    """Whether a launch writes C through ``copied_c`` (the kernel storing it element by
    element, or our padded rows and a copy): TMA cannot store C (``c_storable`` False), the
    schedule neither writes through the workspace already (``through_workspace``) nor takes a
    workspace of its own (stream-K), and the family has the reduction (``split_k``).
    Otherwise such a C is staged (``launch.Staging``).

    Copied at every size: H200, 2026-12-03, fp16, L2-cold, us of GPU time copied / staged
    (cuBLAS): 300x301x302 11.1 / 17.0 (8.8), 595x851x545 12.8 / 43.9 (17.5), 2295x2259x801
    40.1 / 48.1 (91.0), 4096x4097x4096 267.2 / 299.7 (1121.1), 8192x8191x512 201.3 / 314.4
    (573.1), bf16 16384x1023x256 52.1 / 75.2 (85.9); and 35-60 us less host time per call
    (no library operations, no second planning)."""
    return (not c_storable and family.split_k
            and not through_workspace(config, splits, transposed)
            and not getattr(config, "streamk", False))


def copied_c(capability: tuple[int, int],
             key: KernelKey) -> tuple[KernelKey] | tuple[KernelKey, ReduceKey]:
    """The launch of an unsplit kernel whose C TMA cannot store (rows of no whole 16-byte
    vectors: odd N in 16 bits).  A schedule that stores any C itself (``Config.stores_any_c``:
    data-parallel, unswapped) runs ``key`` alone, its epilogue storing C element by element
    (``align_c`` 1: the same kernel for every such C); any other writes C's dtype into a
    workspace of ours whose rows are padded to 16 bytes, and the reduction, one split of C's
    own dtype, copies it into C with scalar stores.  The one
    place this choice is made (``launch._resolve`` runs it, ``aot`` precompiles it).  Before,
    such a C was staged through the caller's library (a zeroed buffer and a copy back, 3
    library operations and a second planning per call)."""
    if getattr(key.config, "stores_any_c", False):
        return (replace(key, align_c=1),)  # one kernel whatever C's alignment
    out = output_dtype(key.dtype)
    return replace(key, align_c=16 // itemsize(out)), reduce_key(capability, out, w_dtype=out)


#: Threads the reduction aims for (about 1000 per SM of an H200): fewer outputs than this share
#: their splits among ``reduce_lanes`` threads each.
REDUCE_THREADS = 1 << 17


def reduce_lanes(outputs: int, splits: int) -> int:
    """Threads per output element of the reduction (``kernels/splitk_reduce.py``): a power of
    two, at most 32 and at most ``splits``, raised until ``outputs`` x lanes reach
    ``REDUCE_THREADS``.  Many outputs keep one lane each (a coalesced, bandwidth-bound sum);
    a few outputs of many splits, a deep product's tile or two, would otherwise leave a few
    hundred threads each walking every split in sequence."""
    lanes = 1
    while lanes < 32 and 2 * lanes <= splits and outputs * lanes < REDUCE_THREADS:
        lanes *= 2
    return lanes


@dataclass(frozen=True)
class PrepKey:
    """The operand preparation kernel (``kernels/operand_prep.py``): ``parts`` 1 is a copy
    (values unchanged), 2 the big/small split of 3xTF32.  ``k_major`` is its compile-time
    variant: whether the matrix it reads runs along its columns already (a straight copy; else
    it transposes through shared memory).  ``dtype`` is the operand's (and the copy's) element
    type.  Which major the copy lands in is a launch argument (``OperandCopy.to_major``), not
    part of the kernel."""

    family: str
    arch: str
    parts: int
    k_major: bool
    dtype: str = "float32"
    pdl: bool = False
    #: None: one operand's copy.  Else both A's (``k_major``) and B's (this) in one launch
    #: (``paired``).
    k_major_b: bool | None = None


def prep_key(capability: tuple[int, int], parts: int, k_major: bool,
             dtype: str = "float32") -> PrepKey:
    """The prep kernel; on sm_90 and newer launched as a dependent (``pdl``) of the kernel
    before it, so its launch, and the next kernel's, overlap the one ahead."""
    return PrepKey("operand_prep", target_arch(capability), parts, k_major, dtype,
                   pdl=capability >= (9, 0))


def paired(prep: tuple) -> PrepKey | None:
    """The one launch that makes both copies of a ``Launch.prep`` (A's and B's ``OperandCopy``):
    where both operands are copied by the same kind of kernel (parts, dtype, ``pdl``), one
    launch instead of two; else None (each copy its own launch)."""
    a, b = prep
    if a is None or b is None or replace(a.key, k_major=b.key.k_major) != b.key:
        return None
    return replace(a.key, k_major_b=b.key.k_major)


class OperandCopy(NamedTuple):
    """One operand rewritten into a workspace of ours before the GEMM: the prep kernel that
    does it (``key``) and the major the GEMM then reads the copy in (``to_major``): "k" (the
    TF32 modes; a 16-bit K-major operand), or the operand's other dimension ("m" or "n": a
    K-major operand transposed, for the fp32 SIMT kernel, or a 16-bit M- or N-major operand in
    padded rows).  The kernel reads the operand, or for "m"/"n" its transpose."""

    key: PrepKey
    to_major: str


def operand_copy(capability: tuple[int, int], math: str, source_major: str,
                 to_major: str) -> OperandCopy:
    """The copy of an operand stored ``source_major`` into ``to_major`` (an ``operand_copies``
    answer) for ``math``: 3xTF32 splits, every other math copies; a 16-bit math copies its own
    dtype, every fp32 math fp32."""
    key = prep_key(capability, 2 if math == "tf32x3" else 1,
                   (source_major == "k") == (to_major == "k"),
                   math if math in HALF_MATH else "float32")
    return OperandCopy(key, to_major)


def build_kernel(key: KernelKey):
    """Instantiate the kernel object a key describes (imports the CuTe DSL)."""
    module = FAMILIES[key.family].load()
    return module.Kernel(key.config, key.dtype, key.a_major, key.b_major,
                         key.align_a, key.align_b, key.align_c, key.num_sms)


def compile_key(key: KernelKey | ReduceKey | PrepKey):
    """The compiled TVM-FFI function of ``key`` (imports the CuTe DSL and compiles)."""
    if isinstance(key, ReduceKey):
        from .kernels.splitk_reduce import compile_reduce

        return compile_reduce(key.dtype, pdl=key.pdl, w_dtype=key.w_dtype)
    if isinstance(key, PrepKey):
        from .kernels.operand_prep import compile_prep

        return compile_prep(key.parts, key.k_major, key.dtype, pdl=key.pdl,
                            k_major_b=key.k_major_b)
    from .kernels.compile import compile_gemm

    return compile_gemm(build_kernel(key))
