"""cutematmul inside JAX: a JAX primitive lowered to an XLA FFI custom call that runs our kernel.

Inside ``jax.jit`` there are no pointers, so JAX arrays do not take the launch path of the other
libraries.  Instead ``matmul`` binds ``cutematmul_p``, a primitive with

* an abstract evaluation (shapes, dtypes; bad input raises at trace time with a sentence),
* bilinear JVP and transpose rules, so ``grad``/``vjp``/``jvp``/``jacfwd``/``jacrev`` and higher
  derivatives work and every backward product runs through cutematmul again, reading the
  transposed operands in place (the ``trans_a``/``trans_b`` parameters) instead of copying them,
* a batching rule, so ``vmap`` (nested too) becomes one batched kernel launch,
* a CUDA lowering that calls ``jax.ffi.ffi_call`` with the CuTe DSL runtime's FFI target
  (``cutlass.jax``) and the compiled kernel object embedded as an attribute.  XLA runs it on its own
  stream, in CUDA graphs too, with no host callback and no copy of the operands.

The lowering's decisions are one pure function of the shapes, ``xla_plan``, and its schedule is
the pointer route's (``dispatch.schedule``): split-K, small M as C^T, narrow tiles; a kernel that
writes fp32 partial sums writes them as the custom call's output, and XLA adds (and transposes)
them into C (``kernel_output``, ``from_kernel_output``).  Stream-K alone is left out.

Compilation happens once per kernel configuration (``KernelKey`` plus the two broadcast flags),
against placeholder shapes with explicit divisibility hints, so a new size never recompiles and a
cache hit never regenerates IR.  The compiled objects live in ``cache`` (its JAX tier: memory, then
disk, so a new process embeds them without compiling; see ``cache.cache_info()["jax"]``).

Imports: ``configs.sm90`` (a constant), ``device``, ``dispatch``, ``operand``, ``plan``,
``validate`` (the extents a launch takes); lazily
``cache`` (its JAX tier, tuned schedules); ``jax`` and ``numpy``; the DSL's ``cutlass.jax``
only to compile.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, NamedTuple

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
from jax.interpreters import batching, mlir
from jax._src.interpreters import ad

from . import device as _device
from .configs.sm90 import TF32_TILE_K
from .dispatch import (
    FAMILIES, KernelKey, build_kernel, check_tf32x3_k, choose_family, itemsize, math_type,
    WORKSPACE_ROW, operand_copies, schedule, through_workspace,
)
from .dispatch import problem as dispatch_problem
from .operand import check_dtypes, result_dtype
from .plan import broadcast_shapes, dims_equal, round_up, vector_rows
from .validate import check_contraction, check_jit_extents

not_mapped = None  # how JAX marks an operand that vmap does not map

cutematmul_p = jax.extend.core.Primitive("cutematmul_matmul")


# ----------------------------------------------------------------------------- public entry


def run_xla(adapter, a, b, *, out, stream, kernel, precision="highest"):
    """The XLA route (``routes``): JAX values are immutable and ordered by XLA itself."""
    if out is not None:
        raise TypeError(
            "matmul: out= cannot be used with JAX arrays, which are immutable; "
            "use the returned array (XLA reuses buffers itself, e.g. with donate_argnums)."
        )
    if stream is not None:
        raise TypeError(
            "matmul: stream= cannot be used with JAX arrays: the product runs on XLA's "
            "stream, ordered with the rest of the JAX computation."
        )
    return matmul(a, b, kernel=kernel, precision=precision)


def matmul(a, b, *, kernel: str = "auto", precision: str = "highest"):
    """``jnp.matmul`` semantics on JAX arrays, computed by cutematmul (eagerly or under ``jit``).

    ``precision`` is a static parameter of the primitive, so the backward and batched products
    of ``grad`` and ``vmap`` run in the same mode."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    if a.dtype != b.dtype:  # promoted (``operand.result_dtype``); XLA casts, fused with producers
        dtype = result_dtype(np.dtype(a.dtype).name, np.dtype(b.dtype).name)
        a, b = a.astype(dtype), b.astype(dtype)
    _check_dtypes(a.dtype, b.dtype)
    if a.ndim == 0 or b.ndim == 0:
        which = "a" if a.ndim == 0 else "b"
        raise ValueError(f"matmul: operand {which} must have at least 1 dimension, got a "
                         "0-dimensional array.")
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    if a_vec:
        a = a[None, :]
    if b_vec:
        b = b[:, None]
    a, trans_a = _untransposed(a)
    b, trans_b = _untransposed(b)
    out = cutematmul_p.bind(a, b, trans_a=trans_a, trans_b=trans_b, kernel=kernel,
                            precision=precision)
    if a_vec:
        out = out[..., 0, :]
    if b_vec:
        out = out[..., 0]
    return out


def _check_dtypes(da, db) -> None:
    check_dtypes(np.dtype(da).name, np.dtype(db).name)


def _untransposed(x):
    """(source, True) when ``x`` was made under ``jit`` by swapping the last two axes of ``source``.

    The kernel then reads ``source`` with the other major mode and the transpose is never
    materialized (XLA drops it as dead code).  Looks at JAX's tracing internals; anything
    unexpected falls back to using ``x`` as it is.
    """
    try:
        parent = getattr(x, "parent", None)
        if parent is None or getattr(parent.primitive, "name", "") != "transpose":
            return x, False
        perm = tuple(parent.params["permutation"])
        n = len(perm)
        if n >= 2 and perm == tuple(range(n - 2)) + (n - 1, n - 2):
            return parent.in_tracers[0], True
    except Exception:
        pass
    return x, False


# ----------------------------------------------------------------------------- shape rules


def _logical(shape, trans):
    """(batch, rows, cols) of op(x) for x stored with ``shape``."""
    rows, cols = shape[-2:]
    return tuple(shape[:-2]), (cols, rows) if trans else (rows, cols)


def _out_shape(a_shape, b_shape, trans_a, trans_b):
    ba, (m, ka) = _logical(a_shape, trans_a)
    bb, (kb, n) = _logical(b_shape, trans_b)
    if not dims_equal(ka, kb):
        raise ValueError(
            f"matmul: the contracted dimensions differ: a has K={ka} but b has K={kb}; "
            "expected a.shape[-1] == b.shape[-2]."
        )
    return broadcast_shapes(ba, bb, a_shape, b_shape) + (m, n)


def _abstract_eval(a, b, *, trans_a, trans_b, kernel, precision):
    _check_dtypes(a.dtype, b.dtype)
    return jax.core.ShapedArray(_out_shape(a.shape, b.shape, trans_a, trans_b), a.dtype)


cutematmul_p.def_abstract_eval(_abstract_eval)
cutematmul_p.def_impl(functools.partial(jax._src.dispatch.apply_primitive, cutematmul_p))


# ----------------------------------------------------------------------------- autodiff


def _unbroadcast(x, target_shape):
    """Sum ``x`` over the batch dimensions that ``target_shape`` broadcast (its cotangent)."""
    lead = x.ndim - len(target_shape)
    axes = tuple(range(lead))
    axes += tuple(lead + i for i, d in enumerate(target_shape[:-2])
                  if d == 1 and x.shape[lead + i] != 1)
    if axes:
        x = jnp.sum(x, axis=axes, keepdims=False)
        x = x.reshape(target_shape)
    return x


def _transpose_lhs(ct, x, y, *, trans_a, trans_b, kernel, precision):
    if trans_a:  # x holds A^T: dA^T = op(B) dC^T
        dx = cutematmul_p.bind(y, ct, trans_a=trans_b, trans_b=True, kernel=kernel,
                               precision=precision)
    else:  # dA = dC op(B)^T
        dx = cutematmul_p.bind(ct, y, trans_a=False, trans_b=not trans_b, kernel=kernel,
                               precision=precision)
    return _unbroadcast(dx, x.aval.shape).astype(x.aval.dtype)


def _transpose_rhs(ct, x, y, *, trans_a, trans_b, kernel, precision):
    if trans_b:  # y holds B^T: dB^T = dC^T op(A)
        dy = cutematmul_p.bind(ct, x, trans_a=True, trans_b=trans_a, kernel=kernel,
                               precision=precision)
    else:  # dB = op(A)^T dC
        dy = cutematmul_p.bind(x, ct, trans_a=not trans_a, trans_b=False, kernel=kernel,
                               precision=precision)
    return _unbroadcast(dy, y.aval.shape).astype(y.aval.dtype)


ad.defbilinear(cutematmul_p, _transpose_lhs, _transpose_rhs)


# ----------------------------------------------------------------------------- vmap


def _batch_rule(args, dims, *, trans_a, trans_b, kernel, precision):
    """Move the mapped axis in front of the batch dims: one batched launch, no Python loop."""
    a, b = args
    da, db = dims
    nb = max(a.ndim - (da is not not_mapped), b.ndim - (db is not not_mapped)) - 2

    def lead(x, d):
        if d is not_mapped:
            x = x[None]
        elif d != 0:
            x = jnp.moveaxis(x, d, 0)
        # Align the remaining batch dims to the right, as broadcasting expects.
        missing = nb - (x.ndim - 3)
        return x.reshape((x.shape[0],) + (1,) * missing + x.shape[1:]) if missing else x

    out = cutematmul_p.bind(lead(a, da), lead(b, db), trans_a=trans_a, trans_b=trans_b,
                            kernel=kernel, precision=precision)
    return out, 0


batching.primitive_batchers[cutematmul_p] = _batch_rule


# ----------------------------------------------------------------------------- lowering

@functools.cache
def _ffi_target() -> str:
    from cutlass.jax import ffi as cutlass_ffi

    version = cutlass_ffi.get_cutlass_call_ffi_version()
    cutlass_ffi.register_ffi(version)
    return cutlass_ffi.get_cutlass_call_ffi_name(True, version)


def register_ffi_targets() -> None:
    """Register the CuTe DSL runtime's XLA FFI targets (needed before running an exported
    cutematmul function in a fresh process; done automatically when one is traced)."""
    _ffi_target()


def _xla_entry_fn():
    """The ``(stream, a, b, c, **static)`` launcher that ``cutlass.jax`` compiles for XLA."""
    import cutlass
    import cutlass.cute as cute

    @cute.jit
    def xla_entry(stream, a, b, c, *, key: cutlass.Constexpr, bcast_a: cutlass.Constexpr,
                  bcast_b: cutlass.Constexpr):
        gemm = build_kernel(key)
        # The batch: the operand that has one (C holds ``splits`` matrices per entry where
        # the kernel splits K, and the kernel reads the split count off C and A).
        if cutlass.const_expr(bcast_a):
            batch = cute.size(b, mode=[2])
        else:
            batch = cute.size(a, mode=[2])
        if cutlass.const_expr(not FAMILIES[key.family].own_extents):
            # A kernel that bounds its loads of B by C's N (``Family.own_extents``: sm80, SIMT)
            # sees C as wide as B: C's rows padded past a K-major B's N would read rows of B
            # that are not there.
            c = cute.make_tensor(c.iterator, cute.make_layout(
                (c.shape[0], b.shape[0], c.shape[2]), stride=c.stride))
        if cutlass.const_expr(bcast_a):
            a = cute.make_tensor(a.iterator, cute.make_layout(
                (a.shape[0], a.shape[1], batch), stride=(a.stride[0], a.stride[1], 0)))
        if cutlass.const_expr(bcast_b):
            b = cute.make_tensor(b.iterator, cute.make_layout(
                (b.shape[0], b.shape[1], batch), stride=(b.stride[0], b.stride[1], 0)))
        gemm(a, b, c, stream)

    return xla_entry


_entry = functools.cache(_xla_entry_fn)


def _compile(key: KernelKey, bcast_a: bool, bcast_b: bool, dtype):
    """Compiled object (``module`` bytes + ``fingerprint``) for one configuration: from the
    cache's JAX tier (memory, then disk), compiled by ``_build_object`` on a miss."""
    from .cache import get_xla_object

    return get_xla_object(key, bcast_a, bcast_b,
                          functools.partial(_build_object, key, bcast_a, bcast_b, dtype))


def _build_object(key: KernelKey, bcast_a: bool, bcast_b: bool, dtype):
    """Compile one configuration through ``cutlass.jax`` (its ``CompileResult``).

    The key carries everything else: the majors say which operands are read transposed, the
    alignments are the divisibility hints of the unit-stride dimensions.
    """
    from cutlass.jax.compile import Arg, FunctionSpec, get_or_compile_kernel
    from cutlass.jax.types import TensorSpec

    # Placeholder shapes: the kernel reads every size at run time; only the divisibility
    # hints (the alignment of the unit-stride dimension) are compiled in.
    vector = (key.align_a, key.align_b, key.align_c)
    shapes = [(1, 1, v) for v in vector]
    modes = [(2, 1, 0) if key.a_major == "m" else (1, 2, 0),
             (1, 2, 0) if key.b_major == "k" else (2, 1, 0),
             (1, 2, 0)]
    specs = [TensorSpec(mode=mode, ptr_assumed_align=16, divisibility=(1, 1, v))
             for mode, v in zip(modes, vector)]
    args = [Arg(i, s, dtype, sp) for i, (s, sp) in enumerate(zip(shapes, specs))]
    # A kernel writing fp32 partial sums (``XlaPlan.partials``) outputs fp32.
    out_dtype = jnp.dtype(jnp.float32) if getattr(key.config, "partials", False) else dtype
    spec = FunctionSpec(
        in_args=tuple(args[:2]), input_tree=jax.tree.structure((0, 0)),
        out_args=(Arg(0, shapes[2], out_dtype, specs[2]),), output_tree=jax.tree.structure((0,)),
        input_output_aliases=(), input_spec=tuple(specs[:2]), output_spec=(specs[2],),
        compile_options=None, use_static_tensors=False,
        kwargs=(("key", key), ("bcast_a", bcast_a), ("bcast_b", bcast_b)),
    )
    compile_key = ("cutematmul-xla", key, bcast_a, bcast_b)
    return get_or_compile_kernel(_entry(), spec, compile_key=compile_key)


def _concrete(d) -> int | None:
    try:
        return int(d)
    except Exception:
        return None


def _to_3d(x, batch_x, batch, mat_shape):
    """(Lx, rows, cols) view of x: Lx is 1 (broadcast) or the full batch size."""
    if all(_concrete(d) == 1 for d in batch_x):
        return x.reshape((1,) + mat_shape), True
    if tuple(batch_x) == tuple(batch) or len(batch_x) < len(batch) and all(
            _concrete(d) == 1 for d in batch[: len(batch) - len(batch_x)]):
        return x.reshape((-1,) + mat_shape), False
    # A batch that broadcasts partially ((2, 1) against (1, 3)): materialized (documented).
    full = jnp.broadcast_to(x, tuple(batch) + mat_shape)
    return full.reshape((-1,) + mat_shape), False


def _same_k(a3, trans_a: bool, b3, trans_b: bool):
    """(a3, b3) with K extents made equal, the shorter padded with zeros: a kernel that bounds
    its reads of B by A's K (``Family.own_extents`` False) would otherwise read the K-tail rows
    of an M- or N-major operand that a K-major one's padding implies.  A padded operand is
    K-major (its unit-stride rows were padded), so the other is padded along its rows (axis -2):
    unit-stride extents, and the plan's alignments, stay as they are."""
    k_a = a3.shape[-2] if trans_a else a3.shape[-1]
    k_b = b3.shape[-1] if trans_b else b3.shape[-2]
    if k_a == k_b:
        return a3, b3

    def rows_to(x, k):
        return jnp.pad(x, [(0, 0)] * (x.ndim - 2) + [(0, k - x.shape[-2]), (0, 0)])

    if k_a < k_b:
        if not trans_a:
            raise RuntimeError("cutematmul internal error: a K-major A shorter along K than B.")
        return rows_to(a3, k_b), b3
    if trans_b:
        raise RuntimeError("cutematmul internal error: a K-major B shorter along K than A.")
    return a3, rows_to(b3, k_a)


def _pad_last(x, multiple):
    cols = x.shape[-1]
    padded = round_up(cols, multiple)
    if padded == cols:
        return x
    return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, padded - cols)])


def _tf32_round(x):
    """x rounded to TF32 (nearest, ties away from zero, as ``cvt.rna.tf32.f32``), as fp32;
    Inf and NaN unchanged."""
    bits = jax.lax.bitcast_convert_type(x, jnp.uint32)
    rounded = (bits + jnp.uint32(0x1000)) & jnp.uint32(0xFFFFE000)
    finite = (bits & jnp.uint32(0x7F800000)) != jnp.uint32(0x7F800000)
    return jax.lax.bitcast_convert_type(jnp.where(finite, rounded, bits), jnp.float32)


def _tf32_operand(x3, k_major: bool, arithmetic: str):
    """(L, rows, K) K-major operand of the TF32 kernel from x3 stored (L, rows, K) when
    ``k_major``, else (L, K, rows): what ``kernels/operand_prep.py`` does on the pointer route,
    here in XLA (which fuses it).  3xTF32: (big | small) along K, each part padded to whole
    32-wide K-tiles."""
    if not k_major:
        x3 = jnp.swapaxes(x3, -1, -2)
    if arithmetic != "tf32x3":
        return x3
    big = _tf32_round(x3)
    small = jnp.where(jnp.isfinite(x3), _tf32_round(x3 - big), 0.0)
    return jnp.concatenate([_pad_last(big, TF32_TILE_K), _pad_last(small, TF32_TILE_K)], axis=-1)


class XlaPlan(NamedTuple):
    """What the lowering of one product does (``xla_plan``): its math type and family, the
    operand copies XLA makes (``dispatch.operand_copies``: "k", "m", "n" or None each), the
    element multiple the unit-stride rows are padded to, the width of the kernel's output rows
    (C's N padded to that multiple; partial sums: N, or M where ``transposed``, padded to
    ``dispatch.WORKSPACE_ROW``), the byte alignments of (A, B,
    C) as the operands are made, the kernel's key, its K-split count, whether it computes
    C^T = B^T A^T (A and B then trade places, with their broadcast flags), and the broadcast
    flags of the kernel's (A, B).  A kernel that writes fp32 partial sums (``partials``: split,
    transposed, or a configuration that always does) writes them as the custom call's output,
    ``splits`` matrices per batch entry, which XLA adds up (and transposes) into C."""

    arithmetic: str
    family: Any
    copies: tuple
    need: int
    out_cols: int
    aligns: tuple[int, int, int]
    key: KernelKey
    splits: int
    transposed: bool
    bcast: tuple[bool, bool]

    @property
    def partials(self) -> bool:
        return through_workspace(self.key.config, self.splits, self.transposed)


def xla_plan(capability, num_sms: int, dtype: str, precision: str, kernel: str, m: int, n: int,
             k: int, batch: int, trans_a: bool, trans_b: bool, bcast_a: bool,
             bcast_b: bool, tuned: bool = True) -> XlaPlan:
    """The lowering's decisions for an (m, k) @ (k, n) product of ``batch`` matrices (A stored
    (k, m) where ``trans_a``, B stored (n, k) where ``trans_b``; ``bcast_*``: one matrix for the
    whole batch) on a GPU of ``capability`` and ``num_sms``: no arrays, no GPU, so ``aot`` can
    list the objects a jitted call embeds.

    The schedule is the pointer route's (``dispatch.schedule``): split-K, the transposed small-M
    route and the partials of narrow tiles too, their fp32 partial sums being an output of the
    custom call that XLA then reduces; only stream-K, whose CTAs signal each other through
    flags zeroed before each launch, is left out (``streamk=False``).  With ``tuned``, a
    schedule ``cutematmul.tune`` recorded for the same problem (``cache.tuned_choice``: the
    product on contiguous operands of another library) replaces the model's pick, but for a
    stream-K one; ``aot`` lists the model's picks (``tuned=False``)."""
    arithmetic = math_type(dtype, precision, capability, (m, n, k, batch), kernel)
    # XLA's buffers are aligned: the rows' lengths decide whether they are whole vectors, so
    # 16-bit rows of few lines over an odd N read in place on SIMT (``dispatch.problem_order``).
    stored = ("m" if trans_a else "k", "k" if trans_b else "n")
    family = choose_family(arithmetic, capability, kernel, (m, n, k, batch), num_sms, stored,
                           vector_rows(stored, (16, 16), m, n, k, itemsize(dtype)))
    if arithmetic == "tf32x3":
        check_tf32x3_k(k)
    copies = operand_copies(family, arithmetic, *stored, m, n, k, batch, num_sms,
                            counts=(1 if bcast_a else batch, 1 if bcast_b else batch))
    # The unit-stride extent of each operand as the kernel reads it (``_lowered``'s copies).
    tf32_k = 2 * round_up(k, TF32_TILE_K) if arithmetic == "tf32x3" else k
    a_cols, b_cols = (m if trans_a else k), (k if trans_b else n)
    if copies[0] == "k":
        a_cols, trans_a = tf32_k, False
    elif copies[0] == "m":
        a_cols, trans_a = m, True
    if copies[1] == "k":
        b_cols, trans_b = tf32_k, True
    elif copies[1] == "n":
        b_cols, trans_b = n, False
    size = itemsize(dtype)
    need = max(1, family.required_alignment // size)
    n_out = round_up(n, need)
    aligns = tuple(_row_alignment(round_up(cols, need), size) for cols in (a_cols, b_cols, n_out))
    majors = ("m" if trans_a else "k", "k" if trans_b else "n")
    choice = None
    if tuned:
        from .cache import tuned_choice

        problem = dispatch_problem(family, capability, num_sms, arithmetic, *majors, aligns,
                                   m, n_out, k, batch)
        choice = None if problem is None else tuned_choice(problem)
    key, splits, transposed = schedule(family, capability, num_sms, arithmetic, *majors, aligns,
                                       m, n_out, k, batch, tuned=choice, streamk=False)
    out_cols = n_out
    if through_workspace(key.config, splits, transposed):  # rows as the pointer route's workspace
        out_cols = round_up(m if transposed else n, WORKSPACE_ROW)
    flags = (bcast_b, bcast_a) if transposed else (bcast_a, bcast_b)
    return XlaPlan(arithmetic, family, copies, need, out_cols, aligns, key, splits, transposed,
                   flags)


def _row_alignment(cols: int, size: int) -> int:
    """The byte alignment the kernel is told for rows of ``cols`` elements of ``size`` bytes:
    16 where they are whole 16-byte vectors, else one element."""
    return 16 if (cols * size) % 16 == 0 else size


@dataclasses.dataclass(frozen=True)
class ObjectKey:
    """An object of the JAX tier that ``aot`` builds ahead of time: ``kernel`` compiled for XLA
    with these broadcast flags, for operands of ``dtype`` (what ``_compile`` makes)."""

    kernel: KernelKey
    bcast_a: bool
    bcast_b: bool
    dtype: str
    #: ``aot``'s name for the route, beside the pointer path's kernels.
    route = "xla"

    @property
    def arch(self) -> str:
        return self.kernel.arch

    def build(self):
        """Compile the object into the cache's JAX tier (memory and disk), as a lowering does."""
        return _compile(self.kernel, self.bcast_a, self.bcast_b, jnp.dtype(self.dtype))

    def stored(self, directory=None):
        """Its verified entry in ``directory`` (default: the cache's), or None."""
        from .cache import xla_disk_entry

        return xla_disk_entry(self.kernel, self.bcast_a, self.bcast_b,
                              functools.partial(_build_object, self.kernel, self.bcast_a,
                                                self.bcast_b, jnp.dtype(self.dtype)), directory)


def object_keys(capability, num_sms: int, dtype: str, precision: str, layout: tuple[str, str],
                shape: tuple[int, ...]) -> list[ObjectKey]:
    """The objects jitted calls of an (m, n, k[, batch]) product embed with operands of
    ``dtype`` in ``layout`` (the majors of A and B): unbatched, or batched with both operands
    stacked or with B one matrix for the whole batch (``x @ w``)."""
    m, n, k, *rest = shape
    batch = rest[0] if rest else 1
    flags = [(True, True)] if batch == 1 else [(False, False), (False, True)]
    found = []
    for bcast_a, bcast_b in flags:
        plan = xla_plan(capability, num_sms, dtype, precision, "auto", m, n, k, batch,
                        layout[0] == "m", layout[1] == "k", bcast_a, bcast_b, tuned=False)
        found.append(ObjectKey(plan.key, *plan.bcast, dtype))
    return found


def _lowered(a, b, *, trans_a, trans_b, kernel, precision):
    dtype_name = np.dtype(a.dtype).name
    batch_a, (m, k) = _logical(a.shape, trans_a)
    batch_b, (_, n) = _logical(b.shape, trans_b)
    batch = broadcast_shapes(batch_a, batch_b)
    for name, d in (("M", m), ("N", n), ("K", k)):
        if _concrete(d) is None:
            raise ValueError(
                f"matmul: cutematmul needs concrete matrix dimensions under jax.export; {name} is "
                f"symbolic ({d}). Symbolic batch dimensions are supported."
            )
    out_shape = tuple(batch) + (m, n)
    if m == 0 or n == 0 or k == 0 or any(_concrete(d) == 0 for d in batch):
        return jnp.zeros(out_shape, a.dtype)
    check_contraction(k)
    check_jit_extents(m, n, math.prod(_concrete(d) or 1 for d in batch))

    info = _device.device_info(0)
    concrete_batch = math.prod(_concrete(d) or 1024 for d in batch)
    a3, bcast_a = _to_3d(a, batch_a, batch, tuple(a.shape[-2:]))
    b3, bcast_b = _to_3d(b, batch_b, batch, tuple(b.shape[-2:]))
    plan = xla_plan(info.capability, info.num_sms, dtype_name, precision, kernel, m, n, k,
                    concrete_batch, trans_a, trans_b, bcast_a, bcast_b)
    # The operands the kernel reads through copies (dispatch.operand_copies), made here by XLA:
    # K-major for TF32 (3xTF32 split), or a K-major operand transposed for the fp32 SIMT kernel.
    copy_a, copy_b = plan.copies
    if copy_a == "k":
        a3, trans_a = _tf32_operand(a3, not trans_a, plan.arithmetic), False
    elif copy_a == "m":
        a3, trans_a = jnp.swapaxes(a3, -1, -2), True
    if copy_b == "k":
        b3, trans_b = _tf32_operand(b3, trans_b, plan.arithmetic), True
    elif copy_b == "n":
        b3, trans_b = jnp.swapaxes(b3, -1, -2), False
    if plan.need > 1:  # TMA / 128-bit cp.async: pad unit-stride rows to 16 bytes
        # (a copy; documented)
        a3, b3 = _pad_last(a3, plan.need), _pad_last(b3, plan.need)
        if not plan.family.own_extents:
            a3, b3 = _same_k(a3, trans_a, b3, trans_b)
    size = np.dtype(a.dtype).itemsize
    read = tuple(_row_alignment(cols, size)
                 for cols in (a3.shape[-1], b3.shape[-1], round_up(n, plan.need)))
    if read != plan.aligns:  # the key's alignment hints must be what the kernel is given
        raise RuntimeError(f"cutematmul internal error: the XLA plan assumed operand rows aligned "
                           f"to {plan.aligns} bytes, the lowering made {read}.")
    # The kernel's (A, B): C^T = B^T A^T reads B as its A.
    first, second = (b3, a3) if plan.transposed else (a3, b3)
    compiled = _compile(plan.key, *plan.bcast, a.dtype)
    rows = second.shape[0] if plan.bcast[0] else first.shape[0]  # the launch's batch size L
    call = jax.ffi.ffi_call(_ffi_target(), result_shape_dtypes=(
        kernel_output(plan, rows, m, n, a.dtype),))
    (c3,) = call(first, second, module=compiled.module, key=compiled.fingerprint)
    return from_kernel_output(c3, plan, rows, m, n, a.dtype).reshape(out_shape)


def kernel_output(plan: XlaPlan, rows, m: int, n: int, dtype) -> jax.ShapeDtypeStruct:
    """What the custom call of ``plan`` writes for ``rows`` (L) products of (m, n): C, rows
    padded to ``out_cols``, or fp32 partial sums, ``splits`` matrices per batch entry
    (batch-major: matrix ``l * splits + s`` is split s of entry l), of C or of C^T."""
    c_rows = n if plan.transposed else m
    return jax.ShapeDtypeStruct((rows * plan.splits, c_rows, plan.out_cols),
                                jnp.float32 if plan.partials else dtype)


def from_kernel_output(c3, plan: XlaPlan, rows, m: int, n: int, dtype):
    """(L, m, n) C of ``dtype`` from the custom call's output (``kernel_output``): the padding
    columns dropped (never read, nor summed), partial sums added up (a reduction of fixed
    shape: the same sums every run), C^T transposed, rounded to ``dtype``; XLA fuses it."""
    c_rows, c_cols = (n, m) if plan.transposed else (m, n)
    if plan.out_cols != c_cols:
        c3 = c3[..., :c_cols]
    if plan.splits > 1:
        c3 = jnp.sum(c3.reshape(rows, plan.splits, c_rows, c_cols), axis=1)
    if plan.transposed:
        c3 = jnp.swapaxes(c3, -1, -2)
    return c3.astype(dtype)


mlir.register_lowering(cutematmul_p, mlir.lower_fun(_lowered, multiple_results=False),
                       platform="cuda")


def _no_kernel_here(ctx, *args, **params):
    platform = getattr(ctx.module_context, "platforms", None) or ["this platform"]
    raise RuntimeError(
        f"cutematmul: JAX placed this product on {', '.join(map(str, platform))}, but cutematmul's "
        "kernels run only on NVIDIA GPUs (platform 'cuda'); put the arrays on a GPU "
        "(jax.device_put(x, jax.devices('gpu')[0])) or use jnp.matmul there."
    )


for _platform in ("cpu", "rocm", "tpu"):
    mlir.register_lowering(cutematmul_p, _no_kernel_here, platform=_platform)


def cache_info() -> dict:
    """Kernels held for XLA in this process (one per configuration, never per shape)."""
    from .cache import cache_info as _all_tiers

    return _all_tiers()["jax"]
