"""Ahead-of-time builds: fill a kernel cache directory before any process needs it.

``precompile(...)`` (and ``python -m cutematmul precompile``) lists ``KernelKey``s, either the
configurations a user names (dtypes, float32 precisions, layouts, alignments, families, problem
shapes, archs) or the default set: what the dispatcher picks, for each dtype and operand layout,
over a spread of problem shapes (squares, skinny and batched products) and the shape classes' seeded
draws (``classes``, ``DEFAULT_SET_SEEDS``).  A key's configuration depends on the
problem size only through the tile and split-K choice (``dispatch.schedule``), so a few keys cover
every size; a split product also needs the reduction kernel of its dtype, which is listed too.
The schedules ``cutematmul.tune`` recorded in the directory (``tuned.json``) add their kernels.
The float32 modes "high" and "tf32" (``precisions``; the default set is "highest" only) add the
TF32 kernels the dispatcher picks and the operand-prep kernels of ``kernels/operand_prep.py``.
``jax`` (``--jax``) adds the objects jitted JAX calls embed (the XLA route's cache tier:
``xla.object_keys``), built in the same workers with jax imported.  Keys already on disk are
skipped; the rest compile in parallel worker processes (``spawn``), each started with
``CUTE_DSL_ARCH`` set to its target and ``CUDA_VISIBLE_DEVICES=""`` before it imports the DSL, so
this runs on a machine without a GPU.  The directory it fills can be shipped (baked into a container
image) and used read-only.

Imports: ``cache``, ``classes`` (the default set's shape draws), ``dispatch`` (and ``configs``
through it), ``launch`` (what a call on contiguous operands launches: its own planner), ``plan``
(whether operands' rows are whole vectors); lazily
``xla`` (with ``jax``: the objects jitted calls embed, ``Selection.jax``); ``device`` only to
read the GPU's SM count when one is present; ``tqdm`` when installed.  The parent process never
imports the DSL.
"""

from __future__ import annotations

import concurrent.futures
import functools
import itertools
import multiprocessing
import os
import re
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import cache, classes
from .launch import Launch, contiguous_plan
from .dispatch import (
    FAMILIES, HALF_MATH, PRECISIONS, TF32_MATH, OperandCopy, choose_families,
    choose_family, itemsize, math_type, copied_c, copies_c, operand_copy, output_dtype,
    operand_copies, paired, prep_key, reduce_key, schedule, through_workspace,
)
from .plan import vector_rows

#: SM counts of the usual GPU of each target, for machines without one (``--num-sms`` overrides).
DEFAULT_NUM_SMS = {"sm_80": 108, "sm_86": 84, "sm_89": 128, "sm_90a": 132, "sm_100a": 148}
#: Operand layouts by the major (unit-stride) mode of A and of B: "kn" is row-major A @ row-major B
#: (NumPy's default), "kk" is A @ W.T with W row-major (a linear layer), "mn" and "mk" their
#: transposed-A counterparts (the weight gradients).
LAYOUTS = {"kn": ("k", "n"), "kk": ("k", "k"), "mn": ("m", "n"), "mk": ("m", "k")}
DTYPES = ("float16", "bfloat16", "float32")


#: Seeds of the shape-class draws (``classes``) whose products join the default set.  None is a
#: seed the class runs time (``classes.SEED``, 7, 8), so those stay out of sample: of calls on
#: contiguous operands of such products (five seeds, every dtype and layout, 4200 calls), 20
#: launch a kernel outside the default set with ``--precisions highest,high,tf32``, against
#: 2049 with the hand-picked shapes alone, planned aligned (sm_90a, 2026-12-04: 349 kernels
#: then, 949 now; ``tests/test_cache_cpu.py`` holds the bounds on the classes' own seed).
DEFAULT_SET_SEEDS = range(100, 116)


@functools.cache
def default_shapes() -> tuple[tuple[int, int, int, int], ...]:
    """(m, n, k, batch) problems whose dispatcher choices form the default set: a spread of
    squares, skinny, tall and batched products, then the shape classes' draws of
    ``DEFAULT_SET_SEEDS`` (whose rules of fill, lines and bands the spread alone misses)."""
    # 1536 and 2560: mid sizes whose best tiles are no power of two wide (128 x 160, 128 x 224).
    squares = [(s, s, s, 1)
               for s in (64, 128, 256, 512, 1024, 1536, 2048, 2560, 4096, 8192, 16384)]
    # 32: the 32-wide narrow tiles of M 17-32 (N, tall), transposed through the workspace
    # (configs.sm90.transposes; swapped with A M-major).  48, 96 and 192: skinny M of no whole
    # 64- or 128-row tiles, which run swapped where N is long (configs.sm90._SWAP_NARROW,
    # _SWAP_ONE_ROW, _SWAP_WIDTHS).
    skinny = [(m, n, k, 1) for m in (1, 16, 32, 48, 64, 96, 192, 256)
              for n, k in ((1024, 1024), (4096, 4096), (8192, 8192), (16384, 4096), (32768, 8192))]
    tall = [(n, m, k, b) for m, n, k, b in skinny]
    batched = [(s, s, s, b) for s in (32, 64, 128, 256, 512, 1024) for b in (4, 16, 64)]
    spread = squares + skinny + tall + batched
    return tuple(dict.fromkeys(spread + list(classes.shapes(DEFAULT_SET_SEEDS))))


#: ``Selection.alignments``' choices.
ALIGNMENTS = ("contiguous", "aligned", "all")


@dataclass(frozen=True)
class Selection:
    """What to build; a field left None takes the default set's choice."""

    archs: tuple[str, ...] | None = None  # None: this machine's GPU, else sm_90a
    dtypes: tuple[str, ...] | None = None  # None: every dtype some family of the arch computes
    precisions: tuple[str, ...] | None = None  # float32 modes; None: "highest" only
    layouts: tuple[str, ...] | None = None  # None: all four
    #: "contiguous": each shape's operands contiguous in each layout, as a call with such
    #: arrays plans them (``launch.contiguous_plan``: operand copies, an unaligned C's kernel);
    #: "aligned": every row in whole 16-byte vectors; "all": every alignment mix the family takes.
    alignments: str = "contiguous"
    families: tuple[str, ...] | None = None  # None: the dispatcher's first choice per dtype
    shapes: tuple[tuple[int, ...], ...] | None = None  # (m, n, k[, batch]); None: default_shapes()
    num_sms: int | None = None  # None: the GPU's when it has the arch, else DEFAULT_NUM_SMS
    #: Also the objects jitted JAX calls embed (the XLA route: ``xla.object_keys``; needs jax).
    jax: bool = False

    def __post_init__(self):
        for name, allowed in (("dtypes", DTYPES), ("precisions", tuple(PRECISIONS)),
                              ("layouts", tuple(LAYOUTS)), ("families", tuple(FAMILIES))):
            values = getattr(self, name)
            if isinstance(values, str):
                values = (values,)
                object.__setattr__(self, name, values)
            bad = [v for v in values or () if v not in allowed]
            if bad:
                raise ValueError(
                    f"precompile: {name} must be among {', '.join(allowed)}; got {bad[0]!r}.")
        if isinstance(self.archs, str):
            object.__setattr__(self, "archs", (self.archs,))
        for arch in self.archs or ():
            capability_of(arch)
        if self.alignments not in ALIGNMENTS:
            raise ValueError(f"precompile: alignments must be one of {', '.join(ALIGNMENTS)}; "
                             f"got {self.alignments!r}.")
        for shape in self.shapes or ():
            if len(shape) not in (3, 4) or min(shape) < 1:
                raise ValueError("precompile: a shape is (m, n, k) or (m, n, k, batch) of "
                                 f"positive sizes; got {shape!r}.")


@dataclass
class Report:
    """What ``precompile`` did."""

    directory: str
    keys: int = 0
    built: int = 0
    present: int = 0
    failed: list = field(default_factory=list)  # (key repr, error sentence)
    compile_seconds: float = 0.0
    seconds: float = 0.0


# ----------------------------------------------------------------------------- which keys


def plan_keys(selection: Selection = Selection()) -> list:
    """The distinct ``KernelKey``s a selection names, in a stable order."""
    keys: dict = {}
    for arch in selection.archs or (default_arch(),):
        capability = capability_of(arch)
        sms = selection.num_sms or _num_sms(arch)
        for dtype in selection.dtypes or DTYPES:
            for math in _maths(selection, dtype, capability):
                for family in _families(selection, math, capability):
                    for key in _family_keys(selection, family, capability, sms, math):
                        keys.setdefault(replace(key, arch=arch), None)
        if selection.jax:
            keys.update(dict.fromkeys(_xla_keys(selection, arch, capability, sms)))
    return list(keys)


def _xla_keys(selection: Selection, arch: str, capability, num_sms: int) -> list:
    """The XLA route's objects of the selection (``xla.object_keys``): each dtype, precision,
    layout and shape as a jitted call lowers it (its own families and operand copies)."""
    try:
        from . import xla  # imports jax
    except ImportError as exc:
        raise RuntimeError(f"precompile: jax=True (--jax) builds the objects jitted JAX calls "
                           f"embed and needs jax installed (pip install jax); importing it "
                           f"failed: {exc}") from exc

    found = []
    for dtype in selection.dtypes or DTYPES:
        precisions = (selection.precisions or ("highest",)) if dtype == "float32" else ("highest",)
        for precision, layout in itertools.product(precisions, selection.layouts or LAYOUTS):
            for shape in selection.shapes or default_shapes():
                for key in xla.object_keys(capability, num_sms, dtype, precision,
                                           LAYOUTS[layout], shape):
                    found.append(replace(key, kernel=replace(key.kernel, arch=arch)))
    return found


def _maths(selection: Selection, dtype: str, capability) -> list[str]:
    """The math types (``dispatch.math_type``) the selected precisions give ``dtype``; the TF32
    ones bring "float32" along (small and skinny products fall back to it)."""
    maths = [math_type(dtype, p, capability) for p in selection.precisions or ("highest",)]
    if dtype == "float32":
        maths.append("float32")
    return list(dict.fromkeys(maths))


def default_arch() -> str:
    """This machine's GPU target when it has one, else sm_90a (H100/H200)."""
    arch = cache.dsl_arch()
    return "sm_90a" if arch == "sm_100a" and not _has_gpu() else arch


def _has_gpu() -> bool:
    try:
        from .device import device_count

        return device_count() > 0
    except Exception:  # no driver: the usual case on a build machine
        return False


def capability_of(arch: str) -> tuple[int, int]:
    """``sm_90a`` -> (9, 0); ``sm_86`` -> (8, 6)."""
    found = re.fullmatch(r"sm_(\d+)(\d)[af]?", arch)
    if found is None:
        raise ValueError(
            f"precompile: an arch must look like sm_80, sm_86 or sm_90a; got {arch!r}.")
    return int(found.group(1)), int(found.group(2))


def _num_sms(arch: str) -> int:
    gpu = _gpu_sms_if(arch)
    if gpu:
        return gpu
    if arch not in DEFAULT_NUM_SMS:
        raise ValueError(
            f"precompile: no default SM count for {arch} (known: {', '.join(DEFAULT_NUM_SMS)}); "
            "pass num_sms (--num-sms), the multiprocessor count of the GPU that will run them."
        )
    return DEFAULT_NUM_SMS[arch]


def _gpu_sms_if(arch: str) -> int | None:
    """GPU 0's SM count when this machine has a GPU of ``arch``, else None."""
    try:
        from .device import device_info

        info = device_info(0)
    except Exception:  # no driver, no GPU: the usual case on a build machine
        return None
    return info.num_sms if info.capability == capability_of(arch) else None


def _families(selection: Selection, dtype: str, capability) -> tuple:
    """The families that compute ``dtype`` on ``capability``: the named ones, or auto's first."""
    if selection.families is None:
        try:
            return choose_families(dtype, capability)[:1]
        except (RuntimeError, ValueError):
            return ()
    return tuple(FAMILIES[name] for name in selection.families
                 if dtype in FAMILIES[name].dtypes and FAMILIES[name].runs_on(capability))


def _family_keys(selection: Selection, family, capability, num_sms: int, math: str) -> list:
    """The keys of ``family`` over the selection's layouts, alignments and shapes; with auto's
    family (no ``families`` named), each shape takes the launch's own order
    (``dispatch.problem_order``: launch-bound products run sm80 on Hopper, 16-bit ones of few
    rows over a long operand of no whole 16-byte rows SIMT's row-streaming kernel)."""
    if selection.alignments == "contiguous":
        return _contiguous_keys(selection, family, capability, num_sms, math)
    keys = _prep_keys(capability, math, selection.alignments)
    for layout in selection.layouts or tuple(LAYOUTS):
        for aligns in _alignments(selection.alignments, family, math):
            for m, n, k, *batch in selection.shapes or default_shapes():
                count = batch[0] if batch else 1
                runs = (family if selection.families is not None
                        else choose_family(math, capability, shape=(m, n, k, count),
                                           num_sms=num_sms, majors=LAYOUTS[layout],
                                           vectors=vector_rows(LAYOUTS[layout], aligns[:2], m, n,
                                                               k, itemsize(math))))
                # The majors the kernel reads once the prep has copied what it copies, and
                # the copies' prep kernels (TF32's are all in _prep_keys already).
                copies = operand_copies(runs, math, *LAYOUTS[layout], m, n, k, count, num_sms)
                a_major, b_major = (c or x for c, x in zip(copies, LAYOUTS[layout]))
                ours = [operand_copy(capability, math, source, major) if major else None
                        for source, major in zip(LAYOUTS[layout], copies)]
                keys += [copy.key for copy in ours if copy] + _pairs(ours[:1], ours[1:])
                key, splits, transposed = schedule(runs, capability, num_sms, math, a_major,
                                                   b_major, aligns, m, n, k, count)
                keys += [key, *_reduce_keys(capability, math, key.config, splits, transposed)]
                # The same product into a C whose rows the kernel cannot store (odd N): its
                # copy from our padded rows (``launch._resolve``).
                if (selection.alignments == "all" and runs.required_alignment > itemsize(math)
                        and copies_c(runs, key.config, splits, transposed, False)):
                    keys += copied_c(capability, key)
    return list(dict.fromkeys(keys))


def _contiguous_keys(selection: Selection, family, capability, num_sms: int, math: str) -> list:
    """The kernels that calls on contiguous operands of each shape launch in each layout, as
    the launch path plans them (``launch.contiguous_plan``; the wave model's picks: tuned
    schedules come from ``tuned_keys``), with the TF32 modes' copies of either major; with
    auto's family (no ``families`` named) over every family the call may take, in the launch's
    order.  A plan that stages an operand (none of the shape classes' products) lists nothing:
    the staged copy's kernels are planned when it is made."""
    names = ((family.name,) if selection.families is not None
             else tuple(f.name for f in choose_families(math, capability)))
    keys = _prep_keys(capability, math, "aligned")
    for layout in selection.layouts or tuple(LAYOUTS):
        a_major, b_major = LAYOUTS[layout]
        stored_transposed = (a_major == "m", b_major == "k")
        for m, n, k, *batch in selection.shapes or default_shapes():
            plan = contiguous_plan(names, capability, num_sms, math, m, n, k,
                                   batch[0] if batch else 1, stored_transposed)
            if isinstance(plan, Launch):
                keys += plan.kernels
    return list(dict.fromkeys(keys))


def _pairs(a_copies, b_copies) -> list:
    """The launches that make one of ``a_copies`` and one of ``b_copies`` (``OperandCopy`` or
    None) together (``dispatch.paired``)."""
    pairs = (paired((a, b)) for a in a_copies for b in b_copies)
    return [pair for pair in pairs if pair is not None]


def _prep_keys(capability, math: str, alignments: str = "all") -> list:
    """A TF32 kernel reads K-major copies: the prep kernels that make them, either source major
    (an operand it cannot read is copied too, whatever the layout).  A 16-bit operand whose
    rows are no whole 16-byte vectors is copied in its own major (``configs.sm90``): with
    ``alignments`` "all", the straight copy (one kernel, whichever the major)."""
    if math in HALF_MATH:
        if alignments != "all":
            return []
        copy = operand_copy(capability, math, "k", "k")
        return [copy.key, *_pairs([copy], [copy])]
    if math not in TF32_MATH:
        return []
    parts = 2 if math == "tf32x3" else 1
    copies = [OperandCopy(prep_key(capability, parts, k_major), "k") for k_major in (True, False)]
    # 3xTF32 splits both operands, in one launch; one TF32 pass copies both only where
    # neither can be read as it is.
    pairs = _pairs(copies, copies) if parts == 2 or alignments == "all" else []
    return [copy.key for copy in copies] + pairs


def _reduce_keys(capability, math: str, config, splits: int, transposed: bool) -> list:
    """The reduction a schedule writes its partial sums through (``through_workspace``)."""
    return [reduce_key(capability, output_dtype(math))] if through_workspace(
        config, splits, transposed) else []


def _alignments(which: str, family, dtype: str) -> list[tuple[int, int, int]]:
    """Byte alignments of (A, B, C): 16 (vector) only, or every mix the family accepts."""
    if which == "aligned":
        return [(16, 16, 16)]
    options = (16,) if family.required_alignment >= 16 else (16, itemsize(dtype))
    return [(a, b, c) for a in options for b in options for c in options]


# ----------------------------------------------------------------------------- building


def precompile(*, jobs: int | None = None, cache_dir: str | os.PathLike | None = None,
               progress: bool = True, **selection) -> Report:
    """Build the kernels a selection names (the ``Selection`` fields as keywords: ``archs``,
    ``dtypes``, ``precisions``, ``layouts``, ``alignments``, ``families``, ``shapes``,
    ``num_sms``, ``jax``; none: the
    default set) that ``cache_dir`` (default: the cache directory) does not hold yet, in ``jobs``
    worker processes (default: one per CPU).  Needs no GPU.

        cutematmul.precompile(archs="sm_90a", dtypes=("float16", "bfloat16"), layouts="kk")
        cutematmul.precompile(archs="sm_90a", dtypes="float32", precisions=("high", "tf32"))
        cutematmul.precompile(archs="sm_90a", shapes=((595, 851, 545),), jax=True)
    """
    return _precompile(Selection(**selection), jobs, cache_dir, progress)


def tuned_keys(directory: Path) -> list:
    """The kernels of the schedules ``cutematmul.tune`` recorded in ``directory`` (its
    ``tuned.json``), with their reductions and TF32 prep kernels: what its processes will load."""
    keys: dict = {}
    for problem, choice in cache.tuned_table(directory).items():
        keys.update(dict.fromkeys(schedule_keys(problem, choice)))
    return list(keys)


def schedule_keys(problem, choice=None) -> list:
    """The kernels a ``dispatch.Problem`` runs under ``choice`` (a tuned (config, splits,
    transposed); None: the wave model's pick), the GEMM's first: its reduction, the TF32 prep
    kernels and the copies of operands or C its planner may ask for, each for the problem's
    arch."""
    capability = capability_of(problem.arch)
    key, splits, transposed = schedule(
        FAMILIES[problem.family], capability, problem.num_sms, problem.math, problem.a_major,
        problem.b_major, (problem.align_a, problem.align_b, problem.align_c), problem.m,
        problem.n, problem.k, problem.batch, tuned=choice)
    # An operand the kernel reads M- or N-major may have been a K-major one, copied, an A it
    # reads K-major an M-major one, and a B it reads K-major an N-major one.  (A's copies are
    # asked of two K-major operands and of an M-major A, B's of an M-major or a K-major A:
    # each rule's case.)
    family, m, n, k = FAMILIES[problem.family], problem.m, problem.n, problem.k
    math, size = problem.math, (m, n, k, problem.batch, problem.num_sms)
    a_side = [operand_copy(capability, math, source, major)
              for source, major in (("k", operand_copies(family, math, "k", "k", *size)[0]),
                                    ("m", operand_copies(family, math, "m", "k", *size)[0]))
              if major is not None and major == problem.a_major]
    b_side = [operand_copy(capability, math, source, major)
              for source, major in (("k", operand_copies(family, math, "m", "k", *size)[1]),
                                    ("n", operand_copies(family, math, "k", "n", *size)[1]))
              if major is not None and major == problem.b_major]
    # Both copies, where both are asked for, in one launch.
    copied = [copy.key for copy in a_side + b_side] + _pairs(a_side, b_side)
    if copies_c(family, key.config, splits, transposed,
                problem.align_c >= family.required_alignment):
        copied += copied_c(capability, key)  # the kernel storing C, or into our rows + copy
    keys = (key, *_reduce_keys(capability, problem.math, key.config, splits, transposed),
            *_prep_keys(capability, problem.math), *copied)
    return list(dict.fromkeys(replace(k, arch=problem.arch) for k in keys))


def build_list(selection: Selection, directory: Path) -> list:
    """What ``precompile`` builds into ``directory``: the selection's keys, then the tuned ones."""
    return list(dict.fromkeys(plan_keys(selection) + tuned_keys(directory)))


def _precompile(selection: Selection, jobs, cache_dir, progress: bool) -> Report:
    directory = Path(cache_dir) if cache_dir is not None else cache.cache_dir()
    return build_keys(build_list(selection, directory), jobs=jobs, cache_dir=directory,
                      progress=progress)


def build_keys(keys: list, *, jobs: int | None = None,
               cache_dir: str | os.PathLike | None = None, progress: bool = True) -> Report:
    """Build exactly ``keys`` (``KernelKey``, ``ReduceKey``, ``PrepKey``; each for its own
    ``arch``) that ``cache_dir`` (default: the cache directory) does not hold yet, in ``jobs``
    worker processes (default: one per CPU); what ``precompile`` does once it has listed its
    keys, and what a tool that names kernels itself (``tools/sweep_schedule.py --precompile``)
    calls.  Needs no GPU."""
    directory = Path(cache_dir) if cache_dir is not None else cache.cache_dir()
    start = time.perf_counter()
    keys = list(dict.fromkeys(keys))
    report = Report(str(directory), keys=len(keys))
    missing = [k for k in keys if _stored(k, directory) is None]
    report.present = len(keys) - len(missing)
    problem = cache.unwritable_reason(directory) if missing else ""
    if problem:
        raise RuntimeError(
            f"precompile: cannot write compiled kernels to {directory}: {problem}; pass a "
            "directory of your own (--cache-dir)."
        )
    for arch in dict.fromkeys(k.arch for k in missing):
        batch = [k for k in missing if k.arch == arch]
        if batch:
            _build(batch, arch, directory, jobs or os.cpu_count() or 1, report, progress)
    report.seconds = time.perf_counter() - start
    return report


def _build(keys: list, arch: str, directory: Path, jobs: int, report: Report,
           progress: bool) -> None:
    """Compile ``keys`` in worker processes whose DSL targets ``arch``."""
    context = multiprocessing.get_context("spawn")
    workers = max(1, min(jobs, len(keys)))
    with concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=context, initializer=_worker_setup,
            initargs=(arch, str(directory))) as pool:
        futures = {pool.submit(_worker_build, key): key for key in keys}
        bar = _Progress(len(keys), arch, progress)
        for done in concurrent.futures.as_completed(futures):
            key = futures[done]
            try:
                status, seconds = done.result()
            except Exception as exc:  # a worker's failure is reported, the others go on
                report.failed.append((repr(key), f"{type(exc).__name__}: {exc}"))
                bar.note(f"FAILED {_short(key)}: {exc}")
            else:
                report.built += status == "built"
                report.present += status == "present"
                report.compile_seconds += seconds
                bar.note(f"{status} {_short(key)} in {seconds:.1f} s")
            bar.update()
        bar.close()


def _worker_setup(arch: str, directory: str) -> None:
    """Runs in each worker before anything imports the DSL (which reads these once)."""
    os.environ["CUTE_DSL_ARCH"] = arch
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    os.environ["CUTEMATMUL_CACHE_DIR"] = directory
    os.environ.pop("CUTEMATMUL_DISK_CACHE", None)


def _stored(key, directory: Path | None = None):
    """``key``'s verified entry on disk (a kernel, or a JAX-tier object), or None."""
    if getattr(key, "route", None) == "xla":
        return key.stored(directory)
    return cache.disk_entry(key, directory)


def _worker_build(key) -> tuple[str, float]:
    """Build one key into the worker's cache directory: ('built' | 'present', compile seconds)."""
    tier = "jax" if getattr(key, "route", None) == "xla" else "memory"
    before = cache.cache_info()[tier]
    if tier == "jax":
        key.build()
    else:
        cache.get_compiled(key)
    after = cache.cache_info()[tier]
    if _stored(key) is None:
        raise RuntimeError(
            f"the kernel compiled but could not be stored in {cache.cache_dir()} "
            f"({cache.cache_info()['disk']['state']})."
        )
    seconds = after["compile_seconds"] - before["compile_seconds"]
    return ("built" if after["compiles"] > before["compiles"] else "present"), seconds


def _short(key) -> str:
    if getattr(key, "route", None) == "xla":
        return (f"xla {_short(key.kernel)} {key.dtype} broadcast "
                f"{'a' if key.bcast_a else ''}{'b' if key.bcast_b else ''}")
    if not hasattr(key, "config"):  # the split-K reduction, the TF32 operand prep
        fields = [str(v) for k, v in vars(key).items() if k not in ("family", "arch")]
        return f"{key.family} {key.arch} {' '.join(fields)}"
    config = getattr(key.config, "name", repr(key.config))
    return f"{key.family} {key.arch} {key.dtype} {key.a_major}{key.b_major} " \
           f"align {key.align_a}/{key.align_b}/{key.align_c} {config}"


class _Progress:
    """tqdm when installed (and wanted), else one line per key on stderr."""

    def __init__(self, total: int, arch: str, enabled: bool):
        self.enabled, self.total, self.count, self.bar = enabled, total, 0, None
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=f"precompile {arch}", unit="kernel")
            except ImportError:
                pass

    def note(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(text)
        elif self.enabled:
            print(f"[{self.count + 1}/{self.total}] {text}", file=sys.stderr, flush=True)

    def update(self) -> None:
        self.count += 1
        if self.bar is not None:
            self.bar.update()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
