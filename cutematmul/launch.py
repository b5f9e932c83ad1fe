"""The device route: arrays already in GPU memory, launched here on the caller's stream.

``run_device`` is what ``matmul`` does for CuPy, PyTorch and any DLPack or
``__cuda_array_interface__`` array:

1. describe the operands (adapter), check dtypes, shapes, devices, ``out`` and every byte span
   (``validate``), before any CUDA call; operands of two dtypes are cast by their library
   (``ArrayAdapter.astype``, to ``operand.result_dtype``) and the product of the casts runs;
2. plan the product (``plan.plan_gemm``), pick the kernel family and configuration
   (``dispatch``), stage what the kernel cannot read (copies by the library, on the stream);
3. prove every launch stays inside its operands (``validate.check_launches``), then call the
   compiled kernel (``cache``) once per launch with plain integers; in the TF32 modes the prep
   kernel first rewrites the operands TF32 wgmma cannot read (K-major copies, 3xTF32 splits)
   into workspaces, reading exactly the boxes the proof covered.

The hot path is short for small products: what depends only on shapes, strides, dtypes and
options is cached on them in two halves, ``_prepare`` (every check, no CUDA call) and
``_device_plan`` (device facts, family, launch; keyed by the prepared object's identity).  A call
on the current stream whose signature (``adapter.signature``: everything ``describe`` reads but
the pointers) was planned and launched before skips even those (``_run_repeat``): it reads the
three pointers, checks them against the first call's spans (``validate.pointers_ok``) and runs
the planned launch (``_execute``, the one executor of a ``Launch``), or falls back to the full
path on any difference.

Imports: ``cache``, ``configs.sm90`` (a constant, the stream-K workspace size), ``device``,
``dispatch``, ``operand``, ``plan``, ``streams``, ``validate``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from . import device as _device
from .cache import get_compiled, on_change, tuned_choice
from .configs.sm90 import TF32_TILE_K, streamk_workspace
from .dispatch import (
    FAMILIES, KernelKey, ReduceKey, choose_families, copied_c, copies_c,
    math_type, operand_copy, output_dtype, problem_order, reduce_key, reduce_lanes, schedule,
    WORKSPACE_ROW, check_tf32x3_k, operand_copies, paired, through_workspace,
)
from .dispatch import itemsize as element_bytes
from .dispatch import problem as dispatch_problem
from .operand import Operand, result_dtype
from .plan import (
    COPY_ROW_BYTES, Gemm, MatrixLayout, alignment, pieces, plan_gemm, problem_size, round_up,
    row_major_strides, unit_extents, vector_rows, whole_vectors,
)
from .streams import explicit_handle, resolve_stream
from .validate import (
    check_launches, check_operands, check_out, check_pointers, check_same_device,
    element_strides, pointers_ok, span,
)


class Launch(NamedTuple):
    """A resolved product: the kernel key and, per launch, byte offsets of (A, B, C) and sizes.

    With ``prep`` set, A and/or B are first rewritten into workspaces of ours (K-major in the
    TF32 modes; for the fp32 SIMT kernel a K-major operand transposed, A M-major or B N-major).
    With ``reduce`` set the kernel writes fp32 partial sums (``splits`` per batch in the one
    call's sizes) to a workspace of ours and the reduction adds them into C; with ``transposed``
    too, the kernel computes C^T = B^T A^T (``key`` is that kernel's) and the reduction
    transposes.  ``calls`` always describe C = A B, as the launch proof checks them.
    """

    key: KernelKey
    calls: tuple  # ((oa, ob, oc) in bytes, (m, n, k, batch, splits, lda, bsa, ldb, bsb, ldc, bsc))
    reduce: ReduceKey | None = None
    transposed: bool = False
    #: Per operand (A, B), None or the ``OperandCopy`` that first copies it into a
    #: workspace (``kernels/operand_prep.py``): K-major in the TF32 modes (3xTF32 splits it);
    #: for the fp32 SIMT kernel, a K-major operand transposed; a 16-bit operand TMA cannot
    #: address, in padded rows (``dispatch.operand_copies``).
    prep: tuple | None = None
    #: The ``dispatch.Problem`` the schedule was chosen for (None: one of several launches, or a
    #: family without schedules): the key under which ``cutematmul.tune`` records a winner.
    problem: object = None
    #: Stream-K kernels: (fp32 partial elements, int32 flags) of the workspace each call takes
    #: (``configs.sm90.streamk_workspace``); None for every other kernel.
    streamk: tuple | None = None

    @property
    def splits(self) -> int:
        """The K-splits of every call (the schedule's, as ``dispatch`` chose or was told)."""
        return self.calls[0][1][4]

    @property
    def kernels(self) -> tuple:
        """Every compiled kernel the launch runs: the operand copies (one kernel where
        ``dispatch.paired`` makes both), the GEMM, the reduction or C's copy."""
        copies = ()
        if self.prep is not None:
            pair = paired(self.prep)
            copies = (pair,) if pair is not None else tuple(
                copy.key for copy in self.prep if copy is not None)
        return copies + (self.key,) + ((self.reduce,) if self.reduce is not None else ())


class Staging(NamedTuple):
    """Which caller operands (a, b, out) must be copied before a kernel can read them."""

    a: bool
    b: bool
    c: bool


def run_device(adapter, a, b, *, out, stream, kernel, precision="highest"):
    """``matmul`` for arrays in GPU memory (options already checked by ``api``)."""
    signature = None
    if stream is None:
        signature = adapter.signature(a, b, out)
        if signature is not None:
            signature = (signature, precision, kernel)
            repeat = _repeats.get(signature)
            if repeat is not None:
                result = _run_repeat(adapter, repeat, a, b, out)
                if result is not None:
                    return result
    named = None if stream is None else explicit_handle(stream, adapter)
    da = adapter.describe(a, "a", named)
    db = adapter.describe(b, "b", named)
    dout = None if out is None else adapter.describe(out, "out", named)
    if da.dtype != db.dtype:
        return _run_promoted(adapter, da, db, dout, stream, named, precision, kernel)
    call = _prepare_call(da, db, dout, precision, kernel)
    # What depends on the pointers themselves: the absolute spans, and out against the inputs.
    check_pointers(da, call.rel_a, db, call.rel_b, dout, call.rel_c)
    # A fresh result's allocation is assumed aligned here, and checked before the kernels run.
    aligned = ((da.ptr & 15) == 0, (db.ptr & 15) == 0, dout is None or (dout.ptr & 15) == 0)
    families, info, (swapped, work) = _device_plan(call, aligned)
    stream = resolve_stream(named, adapter, da.device)
    with adapter.scope(da.device, stream):
        if out is None:
            out, dout = adapter.empty_operand(call.shape, call.c_strides, a, da)
        if isinstance(work, Launch) and dout.strides == call.c_strides and (dout.ptr & 15) == 0:
            # The plan was made for exactly these operands: kernels on the caller's pointers.
            _execute(adapter, work, swapped, da.ptr, db.ptr, dout.ptr, dout.array, stream.handle)
            if signature is not None and all(aligned):
                _remember(signature, work, swapped, da.device, call)
        else:
            gemm_on_device(adapter, families, info, da, db, dout, stream.handle)
    return out


def _run_promoted(adapter, da: Operand, db: Operand, dout: Operand | None, stream, named,
                  precision: str, kernel: str):
    """A product of two dtypes (``operand.result_dtype``): every check the operands' pointers
    do not change, then the library casts the 16-bit operand(s) to the result dtype on the
    call's stream, and the product of the casts runs as any other (its own checks again)."""
    dtype = result_dtype(da.dtype, db.dtype)
    shape = check_operands(da.shape, db.shape, dtype, dtype)
    for name, d in (("a", da), ("b", db)):
        span(d.shape, element_strides(d.strides, d.itemsize, name), d.itemsize, name)
    check_same_device(da.device, db.device)
    if dout is not None:
        check_out(dout, shape, dtype, da.device)
    with adapter.scope(da.device, resolve_stream(named, adapter, da.device)):
        a, b = (d.array if d.dtype == dtype else adapter.astype(d.array, dtype) for d in (da, db))
    return run_device(adapter, a, b, out=None if dout is None else dout.array, stream=stream,
                      kernel=kernel, precision=precision)


class _Repeat(NamedTuple):
    """What a repeat of a call signature needs (``run_device``'s fast path): the launch planned
    for it with every pointer 16-byte aligned, and the spans its pointers are checked with."""

    launch: Launch
    swapped: bool
    device: int
    shape: tuple  # the result's, for a fresh output
    rel_a: tuple
    rel_b: tuple
    rel_c: tuple | None  # out's byte span; None for a fresh output


#: Explicit cache: (adapter signature, precision, kernel) -> _Repeat, for calls on the library's
#: current stream whose operands the kernels read as they are (no staging).  Filled by the full
#: path after it checked and launched such a call, emptied with the plans (``clear_plans``) and
#: when it grows past its bound.
_repeats: dict = {}
_REPEATS_MAX = 4096


def _remember(signature, launch: Launch, swapped: bool, device: int, call: Prepared) -> None:
    if len(_repeats) >= _REPEATS_MAX:
        _repeats.clear()
    _repeats[signature] = _Repeat(launch, swapped, device, call.shape, call.rel_a, call.rel_b,
                                  call.rel_c)


def _run_repeat(adapter, repeat: _Repeat, a, b, out):
    """The fast path of a call whose signature the full path planned, checked and launched
    before: the same checks of the pointers, then the same kernels.  None (nothing done)
    whenever anything differs from that first call (a pointer not 16-byte aligned, a span in
    doubt, another current device, no memory behind an array): the full path then decides, and
    raises where it must."""
    pa, pb = adapter.pointer(a), adapter.pointer(b)
    if not pa or not pb or (pa | pb) & 15 or adapter.current_device() != repeat.device:
        return None
    if out is None:
        if not pointers_ok(pa, repeat.rel_a, pb, repeat.rel_b):
            return None
        out = adapter.empty(repeat.shape, a)
        pc = adapter.pointer(out)
        if pc & 15:
            return None
    else:
        pc = adapter.pointer(out)
        if not pc or pc & 15 or not pointers_ok(pa, repeat.rel_a, pb, repeat.rel_b, pc,
                                                repeat.rel_c):
            return None
    _execute(adapter, repeat.launch, repeat.swapped, pa, pb, pc, out,
             adapter.current_stream(repeat.device))
    return out


def planned_launch(adapter, a, b, *, precision: str = "highest", kernel: str = "auto"):
    """The ``Launch`` ``run_device`` makes for a fresh result of ``a @ b`` (all checks included),
    or None when the product is not one kernel reading the caller's operands (empty, K = 0,
    operands staged into copies or cast to a common dtype).  Nothing is launched."""
    da = adapter.describe(a, "a")
    db = adapter.describe(b, "b")
    if da.dtype != db.dtype:
        result_dtype(da.dtype, db.dtype)  # the dtype checks; a mixed product casts first
        return None
    call = _prepare_call(da, db, None, precision, kernel)
    work = _device_plan(call, ((da.ptr & 15) == 0, (db.ptr & 15) == 0, True))[2][1]
    return work if isinstance(work, Launch) else None


def _prepare_call(da: Operand, db: Operand, dout: Operand | None, precision: str,
                  kernel: str) -> Prepared:
    """``_prepare`` of the described operands (``dout`` None: a fresh result)."""
    return _prepare(
        da.shape, da.strides, db.shape, db.strides, da.dtype, db.dtype, da.itemsize, da.device,
        db.device, None if dout is None else (dout.shape, dout.strides, dout.dtype,
                                              dout.itemsize, dout.device, dout.readonly),
        precision, kernel,
    )


class Prepared:
    """What a call's shapes, strides, dtypes, devices and options decide before any CUDA call
    (``_prepare``).  Hashed by identity: ``_prepare`` hands out one object per signature, which
    keys the device-dependent half (``_device_plan``) with a cheap hash."""

    __slots__ = ("operands", "options", "shape", "rel_a", "rel_b", "rel_c", "c_strides")

    def __init__(self, operands, options, shape, rel_a, rel_b, rel_c, c_strides):
        self.operands = operands  # (a_shape, a_strides, b_shape, b_strides,
        # dtype, itemsize, device)
        self.options = options  # (precision, kernel)
        self.shape = shape  # the result's
        self.rel_a, self.rel_b = rel_a, rel_b  # byte spans from the pointers
        self.rel_c = rel_c  # out's byte span; None for a fresh result
        self.c_strides = c_strides  # out's strides, or a fresh result's (row-major)


@lru_cache(maxsize=4096)
def _prepare(a_shape, a_strides, b_shape, b_strides, a_dtype: str, b_dtype: str, itemsize: int,
             a_device: int, b_device: int, out, precision: str, kernel: str) -> Prepared:
    """Every check of a device-route call that its pointers do not change, in the order the
    caller's mistakes are reported, without a CUDA call; cached, so a repeat is one lookup.

    ``out`` is None (a fresh row-major result) or (shape, strides, dtype, itemsize, device,
    readonly).
    """
    shape = check_operands(a_shape, b_shape, a_dtype, b_dtype)
    rel_a, rel_b = (span(s, element_strides(st, itemsize, name), itemsize, name)
                    for name, s, st in (("a", a_shape, a_strides), ("b", b_shape, b_strides)))
    check_same_device(a_device, b_device)
    rel_c = None
    c_strides = row_major_strides(shape)
    if out is not None:
        o_shape, o_strides, o_dtype, o_itemsize, o_device, o_readonly = out
        check_out(Operand(None, 0, o_shape, o_strides, o_dtype, o_itemsize, o_device, o_readonly),
                  shape, a_dtype, a_device)
        c_strides = element_strides(o_strides, o_itemsize, "out")
        rel_c = span(o_shape, c_strides, o_itemsize, "out")
    return Prepared((a_shape, a_strides, b_shape, b_strides, a_dtype, itemsize, a_device),
                    (precision, kernel), shape, rel_a, rel_b, rel_c, c_strides)


@lru_cache(maxsize=4096)
def _device_plan(call: Prepared, aligned: tuple[bool, bool, bool]):
    """(families, device info, ``_plan_launch``'s (swapped, what to do)) for a prepared call
    whose pointers' 16-byte alignment is ``aligned`` (a, b, out)."""
    a_shape, a_strides, b_shape, b_strides, dtype, itemsize, device = call.operands
    precision, kernel = call.options
    info = _device.device_info(device)
    math = dtype
    if dtype == "float32" and precision != "highest":
        math = math_type(dtype, precision, info.capability, problem_size(a_shape, b_shape), kernel)
    families = families_for(math, info.capability, kernel)
    plan = _plan_launch(families[1], info.capability, info.num_sms, a_shape, a_strides, b_shape,
                        b_strides, call.shape, call.c_strides, families[2], itemsize, aligned,
                        _UNPADDED)
    return families, info, plan


@lru_cache(maxsize=256)
def families_for(math: str, capability, kernel: str) -> tuple[tuple, tuple[str, ...], str]:
    """(families, their names, math type): the candidates for ``math`` (``dispatch.math_type``)
    on this GPU, best first."""
    families = choose_families(math, capability, kernel)
    return families, tuple(f.name for f in families), math


def gemm_on_device(adapter, families, info, a: Operand, b: Operand, c: Operand, stream: int,
                   padded: tuple[bool, bool, bool] | None = None) -> None:
    """c = a @ b on ``stream``; ``c`` has the result shape, dtype and device (all checked).

    ``families`` is a ``families_for`` result: (candidate families, their names, math type).
    ``padded``
    says which of (a, b, c) are views of buffers of ours whose rows are padded to 16 bytes (and
    that the operands were staged already); None before any staging.
    """
    swapped, launch = _plan_launch(
        families[1], info.capability, info.num_sms, a.shape, a.strides,
        b.shape, b.strides, c.shape, c.strides, families[2], c.itemsize,
        ((a.ptr & 15) == 0, (b.ptr & 15) == 0, (c.ptr & 15) == 0), padded or _UNPADDED,
    )
    if launch is None:  # nothing to compute
        return
    if launch is _ZEROS:
        adapter.fill_zero(c.array)
        return
    if isinstance(launch, Staging):
        if padded is not None:
            raise RuntimeError(f"cutematmul: internal error: staged operands still unusable: "
                               f"{launch}")
        _run_staged(adapter, families, info, a, b, c, stream, launch)
        return
    _execute(adapter, launch, swapped, a.ptr, b.ptr, c.ptr, c.array, stream)


def _execute(adapter, launch: Launch, swapped: bool, pa: int, pb: int, pc: int, like,
             stream: int) -> None:
    """Every call of ``launch`` on the operands' pointers (``pa``, ``pb`` the caller's a and b,
    exchanged here when the plan swapped them): the TF32 prep kernels, the GEMM, its split-K
    reduction or stream-K workspace, with workspaces from ``like``'s library on ``stream``."""
    fn = get_compiled(launch.key)
    if swapped:
        pa, pb = pb, pa
    if launch.prep is None and launch.reduce is None and launch.streamk is None:
        for (oa, ob, oc), sizes in launch.calls:  # the common case: one kernel per call
            fn(pa + oa, pb + ob, pc + oc, *sizes, stream)
        return
    for (oa, ob, oc), sizes in launch.calls:
        held = []  # workspaces, released (in stream order) when the call is issued
        pa_call, pb_call = pa + oa, pb + ob
        if launch.prep is not None:
            pa_call, pb_call, sizes = _run_prep(adapter, launch.prep, pa_call, pb_call, sizes,
                                                like, stream, held)
        if launch.reduce is not None:
            _run_split(adapter, fn, launch, pa_call, pb_call, pc + oc, sizes, like, stream)
        elif launch.streamk is not None:
            _run_streamk(adapter, fn, launch.streamk, pa_call, pb_call, pc + oc, sizes, like,
                         stream)
        else:
            fn(pa_call, pb_call, pc + oc, *sizes, stream)
        del held


def _run_prep(adapter, prep, pa: int, pb: int, sizes: tuple, like, stream: int,
              held: list) -> tuple:
    """Rewrite A and/or B into a workspace of ours (``prep``: per operand None or its
    ``OperandCopy``, whose key's dtype the copy keeps), both copies in one launch where
    ``dispatch.paired`` says so; append the workspace to ``held`` (the caller keeps it until the
    GEMM is issued) and return (A's pointer, B's pointer, the GEMM's sizes) over the prepared
    operands.

    Workspace layout per operand (A's copy first, then B's), (batch or 1 when broadcast)
    matrices of:
    * ``to_major`` "k": rows x (parts * kp), K-major, kp = K rounded up to the TF32 K-tile
      (zeros after K).  3xTF32 operands are (big | small) along K, so the kernel's K is 2 * kp;
      a one-part copy keeps K, in rows of whole lines (``COPY_ROW_BYTES``).
    * ``to_major`` "m" / "n": K x rp, rp = rows rounded up to ``COPY_ROW_BYTES`` (zeros after
      rows), so the kernel reads it M- / N-major with 16-byte vectors: a K-major operand
      transposed (the fp32 SIMT kernel), or an M- / N-major one copied into padded rows (16
      bits).
    The prep reads X, (rows, K) or for "m" / "n" (K, rows), straight along its unit stride
    where that is X's second mode (``key.k_major``), else through its transposing variant.
    """
    launches, nbytes, offsets, gemm_sizes = _prep_plan(prep, sizes)
    # One workspace for every copy, released (in stream order) once the GEMM is issued.
    workspace, wp = adapter.workspace(-(-nbytes // 4), like, stream)
    held.append(workspace)
    sources = (pa, pb)
    copies = tuple(x if offset is None else wp + offset for x, offset in zip(sources, offsets))
    for key, operands in launches:
        args = []
        for index, copy_sizes in operands:
            args += (sources[index], copies[index], *copy_sizes)
        get_compiled(key)(*args, stream)
    return copies[0], copies[1], gemm_sizes


@lru_cache(maxsize=4096)
def _prep_plan(prep: tuple, sizes: tuple) -> tuple:
    """``_run_prep``'s arithmetic, a pure function of the copies and the call's sizes, cached
    (repeated calls pay a lookup): (the prep launches, each (key, ((operand index, its sizes and
    strides), ...)); the workspace bytes; per operand its copy's byte offset in the workspace
    or None; the GEMM's sizes over the copies)."""
    m, n, k, batch, splits, lda, bsa, ldb, bsb, ldc, bsc = sizes
    kp = round_up(k, TF32_TILE_K)
    copies, offsets, offset = [], [None, None], 0
    for index, (rows, ld, bs) in enumerate(((m, lda, bsa), (n, ldb, bsb))):
        if prep[index] is None:
            continue
        key, to_major = prep[index]
        size = element_bytes(key.dtype)
        line = COPY_ROW_BYTES // size
        if to_major == "k":  # the prep reads the operand (rows, K)
            d_rows, extent = rows, k
            width = key.parts * kp if key.parts > 1 else round_up(k, line)
        elif key.parts == 1:  # the prep reads the operand's transpose (K, rows)
            d_rows, extent, width = k, rows, round_up(rows, line)
        else:
            raise RuntimeError(f"cutematmul: internal error: unsupported operand copy {key}")
        strides = (ld, 1, bs) if key.k_major else (1, ld, bs)
        count = batch if bs else 1
        copies.append((index, (d_rows, extent, count, width, *strides, width, d_rows * width)))
        # Whole lines (width is), so a second copy in the workspace starts on a line too.
        offsets[index] = offset
        offset += d_rows * width * count * size
        new = (width, d_rows * width if bs else 0)
        if index == 0:
            lda, bsa = new
        else:
            ldb, bsb = new
    pair = paired(prep)
    launches = (((pair, tuple(copies)),) if pair is not None  # both copies in one launch
                else tuple((prep[index].key, ((index, args),)) for index, args in copies))
    if any(copy is not None and copy.key.parts == 2 for copy in prep):
        k = 2 * kp  # both operands are (big | small)
    return (launches, offset, tuple(offsets),
            (m, n, k, batch, splits, lda, bsa, ldb, bsb, ldc, bsc))


def _run_split(adapter, fn, launch: Launch, pa: int, pb: int, pc: int, sizes: tuple, like,
               stream: int) -> None:
    """Partial sums into an fp32 workspace of ours, then the reduction into C, on ``stream``;
    or (``dispatch.copied_c``: the reduction reads C's own dtype) the unsplit kernel's C into
    the workspace, then the reduction's copy into C.

    The workspace holds ``batch * splits`` row-major matrices of the kernel's output, (m, n), or
    (n, m) when transposed, rows padded to 8 elements (TMA stores whole 16-byte vectors):
    exactly the extent the kernel's C covers.  ``pa``, ``pb``, ``pc`` already include the
    call's offsets.
    """
    m, n, k, batch, splits, lda, bsa, ldb, bsb, ldc, bsc = sizes
    rows, cols = (n, m) if launch.transposed else (m, n)
    ldw = round_up(cols, WORKSPACE_ROW)
    elements = rows * ldw * batch * splits
    if launch.reduce.w_dtype != "float32":  # 16-bit: the fp32 workspace holds two per float
        elements = -(-elements // 2)
    workspace, wp = adapter.workspace(elements, like, stream)
    if launch.transposed:
        fn(pb, pa, wp, n, m, k, batch, splits, ldb, bsb, lda, bsa, ldw, n * ldw, stream)
        w_strides = (1, ldw, n * ldw)
    else:
        fn(pa, pb, wp, m, n, k, batch, splits, lda, bsa, ldb, bsb, ldw, m * ldw, stream)
        w_strides = (ldw, 1, m * ldw)
    get_compiled(launch.reduce)(wp, pc, m, n, batch, splits, reduce_lanes(m * n * batch, splits),
                                *w_strides, ldc, bsc, stream)
    del workspace  # released in stream order by the library's allocator


def _run_streamk(adapter, fn, workspace_size: tuple, pa: int, pb: int, pc: int, sizes: tuple,
                 like, stream: int) -> None:
    """A stream-K kernel on ``stream`` with a workspace of ours: ``partials`` fp32 elements
    (one tile per CTA the grid can hold), then ``flags`` int32 flags, zeroed on the stream
    first (the kernel's CTAs signal each other's partial tiles through them)."""
    partials, flags = workspace_size
    workspace, wp = adapter.workspace(partials + flags, like, stream)
    fp = wp + 4 * partials
    _device.memset_async(fp, 4 * flags, stream)
    fn(pa, pb, pc, *sizes, wp, partials, fp, flags, stream)
    del workspace  # released in stream order by the library's allocator


_ZEROS = "zeros"  # K == 0: the product is a zero fill
_UNPADDED = (False, False, False)


def contiguous_plan(family_names, capability, num_sms: int, math: str, m: int, n: int, k: int,
                    batch: int, transposed: tuple[bool, bool], tuned: bool = False):
    """What a call on contiguous operands runs (``_plan_launch``'s plan: a ``Launch``, a
    ``Staging``, None or ``_ZEROS``): A (batch, m, k) and B (batch, k, n) row-major, or each
    stored transposed where ``transposed`` says (``a.mT`` of a row-major (k, m)), C a fresh
    row-major result, every base pointer 16-byte aligned.  The wave model's pick, which ``aot``
    lists the kernels of; with ``tuned``, a tuned schedule in its place, as a call takes it."""
    lead = (batch,) if batch > 1 else ()

    def strides(shape, flip):
        if not flip:
            return row_major_strides(shape)
        st = row_major_strides(shape[:-2] + (shape[-1], shape[-2]))
        return st[:-2] + (st[-1], st[-2])

    a_shape, b_shape, c_shape = lead + (m, k), lead + (k, n), lead + (m, n)
    return _plan_launch(tuple(family_names), capability, num_sms, a_shape,
                        strides(a_shape, transposed[0]), b_shape, strides(b_shape, transposed[1]),
                        c_shape, row_major_strides(c_shape), math, element_bytes(math),
                        (True, True, True), _UNPADDED, tuned=tuned)[1]


@lru_cache(maxsize=4096)
def _plan_launch(family_names, capability, num_sms, a_shape, a_strides, b_shape, b_strides,
                 c_shape, c_strides, math, itemsize, caller_aligned, padded, tuned: bool = True):
    """(swapped, what to do) for operands of these shapes and strides: None (empty result),
    ``_ZEROS`` (K == 0), a ``Staging`` or a ``Launch``; a pure function, cached on its arguments.
    ``math`` is the math type (``dispatch.math_type``), ``itemsize`` the operands'.

    ``caller_aligned`` says whether the caller's (a, b, c) base pointers are 16-byte aligned,
    ``padded`` whether their rows end in padding of ours; ``tuned``: a tuned schedule
    (``cache.tuned_choice``) replaces the wave model's pick.
    """
    gemm = plan_gemm(a_shape, a_strides, b_shape, b_strides, c_strides)
    if gemm.m == 0 or gemm.n == 0 or gemm.batch == 0:
        return gemm.swapped, None
    if gemm.k == 0:
        return gemm.swapped, _ZEROS
    views = ((a_shape, a_strides), (b_shape, b_strides))
    first, second = (views[1], views[0]) if gemm.swapped else views
    spans = tuple(span(s, st, itemsize, name)
                  for (s, st), name in ((first, "A"), (second, "B"), ((c_shape, c_strides), "C")))
    aligned, padded = ((x[1], x[0], x[2]) if gemm.swapped else x for x in (caller_aligned, padded))
    return gemm.swapped, _resolve(family_names, capability, num_sms, gemm, math, itemsize,
                                  aligned, spans, padded, tuned)


def _layout_alignment(layout: MatrixLayout, itemsize: int, offsets) -> int:
    """Alignment in bytes of a layout's strides and offsets (the base pointer is checked apart)."""
    values = [off * itemsize for off in offsets]
    return alignment(itemsize, layout.ld * itemsize, layout.batch_stride * itemsize, *values)


def _usable(layout: MatrixLayout, align: int, required: int) -> bool:
    if layout.major == "strided" or layout.ld < 0 or layout.batch_stride < 0:
        return False
    return align >= required


def _fits(family, gemm: Gemm, itemsize: int) -> bool:
    """Whether the family's addressing limits (TMA: byte strides below 2**40) take the plan."""
    limit = family.max_byte_stride
    if limit is None:
        return True
    strides = (gemm.a.ld, gemm.a.batch_stride, gemm.b.ld, gemm.b.batch_stride, gemm.c.ld,
               gemm.c.batch_stride)
    return all(s * itemsize < limit for s in strides)


def _resolve(family_names: tuple[str, ...], capability, num_sms: int, gemm: Gemm, math: str,
             itemsize: int, pointers_aligned: tuple[bool, bool, bool], spans,
             padded: tuple[bool, bool, bool], tuned: bool = True) -> Launch | Staging:
    """The launch for a planned GEMM, or the operands that must be staged first.

    ``pointers_aligned`` says, for the kernel's (A, B, C), whether the base pointer is 16-byte
    aligned; ``spans`` are their relative byte spans; ``padded`` which of them end their rows in
    padding of ours; ``tuned`` whether a tuned schedule may replace the wave model's pick.
    Everything else is a function of the plan.

    The family is the first candidate whose addressing limits take the plan (the preferred one
    otherwise: its staged copies are compact); operands it cannot read as they are get staged.
    A launch-bound product (``dispatch.problem_order``) tries sm80 first, and a 16-bit product
    of few rows over a long operand of no whole 16-byte rows SIMT's row-streaming kernel; each
    is kept only where it reads every operand as it is.
    An operand the prep kernel rewrites (``_operand_prep``) needs only a unit stride: the
    kernel then reads the aligned copy, in the copy's major.  So does C: the reduction writes
    it with scalar stores, from the partials of a schedule through the workspace
    (``dispatch.through_workspace``), else from the kernel's own C in padded rows of ours
    (``dispatch.copies_c``), so an under-aligned C (N = 3, 12 or 851 in 16 bits) is not staged.
    """
    layouts = (gemm.a, gemm.b, gemm.c)
    aligns = []
    for j, (layout, ptr_ok) in enumerate(zip(layouts, pointers_aligned)):
        align = _layout_alignment(layout, itemsize, [o[j] for o in gemm.offsets])
        aligns.append(align if ptr_ok else min(align, itemsize))
    majors = (gemm.a.major, gemm.b.major)
    whole = whole_vectors((*unit_extents(*majors, gemm.m, gemm.n, gemm.k), gemm.n), itemsize,
                          tuple(padded))
    order = problem_order(family_names, gemm.m, gemm.n, gemm.k, gemm.batch, num_sms, majors,
                          vector_rows(majors, tuple(aligns[:2]), gemm.m, gemm.n, gemm.k,
                                      itemsize, tuple(padded[:2])))
    if order != family_names:  # another family first, where it needs no staging
        plan = _resolve(order, capability, num_sms, gemm, math, itemsize, pointers_aligned,
                        spans, padded, tuned)
        if isinstance(plan, Launch):
            return plan
    families = [FAMILIES[name] for name in family_names]
    family = next((f for f in families if _fits(f, gemm, itemsize)), families[0])
    usable = [_usable(lay, al, family.required_alignment) for lay, al in zip(layouts, aligns)]
    if family.whole_vector_loads:
        usable[0], usable[1] = usable[0] and whole[0], usable[1] and whole[1]
    if family.whole_vector_stores:
        usable[2] = usable[2] and whole[2]
    prep = _operand_prep(family, capability, num_sms, math, gemm, (usable[0], usable[1]))
    for j in (0, 1):
        if prep[j] is not None:
            usable[j] = layouts[j].major != "strided" and layouts[j].ld >= 0 and (
                layouts[j].batch_stride >= 0)
    if not _fits(family, gemm, itemsize):  # compact copies of everything fit its limits
        usable = [False, False, False]
    # Only C's alignment is wrong: a schedule through the workspace writes C with the
    # reduction's scalar stores, which need only a unit stride along N (decided below).
    c_by_reduction = usable[0] and usable[1] and not usable[2] and _usable(gemm.c, 1, 1)
    if not all(usable) and not c_by_reduction:
        first, second = (usable[1], usable[0]) if gemm.swapped else (usable[0], usable[1])
        return Staging(not first, not second, not usable[2])

    launches = pieces(gemm)
    majors = [gemm.a.major, gemm.b.major]
    for j in (0, 1):
        if prep[j] is not None:  # the kernel reads our 16-byte aligned copy
            majors[j], aligns[j] = prep[j].to_major, 16
    single = len(launches) == 1
    problem = dispatch_problem(family, capability, num_sms, math, majors[0], majors[1],
                               tuple(aligns), gemm.m, gemm.n, gemm.k,
                               gemm.batch) if single else None
    key, splits, transposed = schedule(family, capability, num_sms, math, majors[0], majors[1],
                                       tuple(aligns), gemm.m, gemm.n, gemm.k,
                                       gemm.batch, split_k=single,
                                       tuned=None if problem is None or not tuned
                                       else tuned_choice(problem))
    calls = []
    for offsets, (m, n, batch) in launches:
        sizes = (m, n, gemm.k, batch, splits, gemm.a.ld, gemm.a.batch_stride, gemm.b.ld,
                 gemm.b.batch_stride, gemm.c.ld, gemm.c.batch_stride)
        calls.append((tuple(o * itemsize for o in offsets), sizes))
    check_launches([(o, s, (gemm.a.major, gemm.b.major)) for o, s in calls], spans, itemsize)
    workspace = through_workspace(key.config, splits, transposed)
    reduce = reduce_key(capability, output_dtype(math)) if workspace else None
    if not usable[2] and not workspace:
        # TMA cannot store C: the kernel stores it element by element, or writes our padded
        # rows and the reduction copies them into C (``copied_c``); else C is staged.
        if not copies_c(family, key.config, splits, transposed, False):
            return Staging(False, False, True)
        key, *copy = copied_c(capability, key)  # the kernel alone, or with the copy
        reduce = copy[0] if copy else None
    # An sm90 kernel writes C's dtype unless it writes partials; ``through_workspace`` counts
    # its partials, so only a split or transposed schedule without them can disagree.
    if getattr(key.config, "partials", workspace) != workspace:
        raise RuntimeError(
            f"cutematmul internal error: schedule {key.config.name} with {splits} K-split(s)"
            f"{', transposed' if transposed else ''} would write C into the fp32 workspace; "
            "refusing to launch it."
        )
    streamk = (streamk_workspace(key.config, num_sms) if getattr(key.config, "streamk", False)
               else None)
    return Launch(key, tuple(calls), reduce, transposed,
                  None if prep == (None, None) else prep, problem, streamk)


def _operand_prep(family, capability, num_sms: int, math: str, gemm: Gemm,
                  readable: tuple[bool, bool]) -> tuple:
    """(A's, B's) preparation: None or an ``OperandCopy``; ``readable`` says which operands the
    kernel could read as they are.  The family's rule (``dispatch.operand_copies``) decides
    which and in what major: "tf32" copies the smaller of A and B K-major (values unchanged)
    when neither operand is K-major, "tf32x3" splits both into TF32 (big | small) parts, the fp32
    SIMT kernel copies a K-major A M-major or a K-major B N-major on large products.
    """
    if math == "tf32x3":
        check_tf32x3_k(gemm.k)
    counts = tuple(gemm.batch if layout.batch_stride else 1 for layout in (gemm.a, gemm.b))
    copies = operand_copies(family, math, gemm.a.major, gemm.b.major, gemm.m, gemm.n, gemm.k,
                            gemm.batch, num_sms, readable, counts=counts)
    if copies == (None, None):
        return copies
    return tuple(None if major is None else operand_copy(capability, math, layout.major, major)
                 for layout, major in zip((gemm.a, gemm.b), copies))


def _run_staged(adapter, families, info, a: Operand, b: Operand, c: Operand, stream: int,
                staging: Staging) -> None:
    """Copy the operands the kernel cannot read into aligned row-major buffers, then run."""
    pad = max(1, families[0][0].required_alignment // c.itemsize)
    if staging.a:
        a = adapter.describe(adapter.padded_copy(a.array, pad), "a")
    if staging.b:
        b = adapter.describe(adapter.padded_copy(b.array, pad), "b")
    target = c
    if staging.c:
        cols = c.shape[-1] if c.shape else 1
        padded = round_up(max(cols, 1), pad)
        shape = tuple(c.shape[:-1]) + (padded,) if c.shape else (padded,)
        buf = adapter.empty(shape, c.array)
        # Zeroed so no byte of ours is ever read uninitialized (compute-sanitizer's initcheck
        # does not see the sm90 kernel's TMA stores: docs/reliability.md).
        adapter.fill_zero(buf)
        c = adapter.describe(buf[..., :cols] if target.shape else buf[0], "out")
    gemm_on_device(adapter, families, info, a, b, c, stream, padded=staging)
    if staging.c:
        adapter.copy(target.array, c.array)


def clear_plans() -> None:
    """Forget every cached plan (after the tuned schedules changed: ``cache.on_change``)."""
    _plan_launch.cache_clear()
    _device_plan.cache_clear()
    _repeats.clear()


on_change(clear_plans)
