"""``cutematmul.tune``: time the wave model's best schedules for one product, keep the fastest.

    import cutematmul
    result = cutematmul.tune(a, b)      # CuPy, PyTorch, or any DLPack GPU arrays
    print(result)                       # each candidate's GPU time, and the one kept
    c = cutematmul.matmul(a, b)         # runs the winner, here and in later processes

Opt-in: nothing tunes by itself.  What is tuned is the *problem* the dispatcher schedules
(``dispatch.Problem``: family, target, math type, the operands' majors and alignments, M, N, K,
batch, SM count), so the winner serves every later product of that problem, whatever its
pointers.  How:

1. the product is planned as ``matmul`` plans it (``launch.planned_launch``); a product the tuner
   cannot change (empty, K = 0, operands staged into copies, several launches past 32-bit sizes,
   a family without schedules) returns a result that says so;
2. the candidates are the family's ``configs.<family>.candidates``: the schedules (tile, cluster,
   K-splits, orientation) the wave model ranks best, its own pick first;
3. each is made the problem's schedule for its trial (``cache.trial_tuned``), compiled on first
   use (disk-cached like any kernel), and its product compared with the model pick's on the host
   (a candidate that disagrees beyond ``AGREEMENT`` is reported and never chosen);
4. each is timed ``reps`` times, alone between two CUDA events on the caller's stream, after a
   memset of twice the L2 size that evicts the operands (a cold L2, as a real workload sees
   them); the median counts;
5. the fastest is recorded (``cache.record_tuned``): in memory, and with ``persist`` in the cache
   directory's ``tuned.json``.  It must beat the model's pick by more than ``margin``; otherwise
   the pick is recorded.

While it runs, other threads' products of the same problem may run a trial's schedule: every
candidate computes the same product, only its speed differs.

Imports: ``adapters``, ``api``, ``cache``, ``device``, ``dispatch``, ``launch``; ``numpy`` (the
host comparison).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field

import numpy

from . import cache, device, launch
from .adapters import adapter_for
from .api import matmul
from .dispatch import check_kernel, check_precision, tunable

#: Largest relative Frobenius difference between a candidate's product and the model pick's.
AGREEMENT = {"float16": 1e-2, "bfloat16": 2e-2, "float32": 1e-5, "tf32": 1e-2, "tf32x3": 1e-5}


@dataclass
class Trial:
    """One candidate schedule and what its trial measured."""

    config: object
    splits: int
    transposed: bool
    seconds: float | None = None  # median GPU seconds per product; None: not timed
    note: str = ""

    @property
    def label(self) -> str:
        return (f"{self.config.name}, {self.splits} split{'s' if self.splits > 1 else ''}"
                + (", transposed" if self.transposed else ""))


@dataclass
class TuneResult:
    """What ``tune`` did: the problem, every trial (the model's pick first), the one kept."""

    problem: object = None
    trials: list = field(default_factory=list)
    chosen: Trial | None = None
    persisted: bool = False
    note: str = ""

    def __str__(self) -> str:
        if self.problem is None:
            return f"tune: {self.note}"
        lines = [f"tune: {self.problem}"]
        for i, trial in enumerate(self.trials):
            took = "-" if trial.seconds is None else f"{trial.seconds * 1e6:9.1f} us"
            mark = " <- kept" if trial is self.chosen else ""
            pick = " (model's pick)" if i == 0 else ""
            lines.append(f"  {took}  {trial.label}{pick}{mark}"
                         f"{'  ' + trial.note if trial.note else ''}")
        lines.append(f"  {self.note}")
        return "\n".join(lines)


def tune(a, b, *, precision: str = "highest", kernel: str = "auto", limit: int = 8,
         reps: int = 10, margin: float = 0.02, persist: bool = True) -> TuneResult:
    """Time the best-ranked schedules for ``a @ b`` on the GPU and keep the fastest (see the
    module docstring).  ``a`` and ``b`` are GPU arrays as ``matmul`` takes them; ``limit`` is how
    many of the model's ranked schedules are tried (each 16-bit one also unclustered), ``reps``
    the timed runs per candidate, ``margin`` the fraction by which a candidate must beat the
    model's pick.  Compiles every candidate not yet cached (about a second each)."""
    check_precision(precision, "tune")
    check_kernel(kernel, "tune")
    for name, value in (("limit", limit), ("reps", reps)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"tune: {name} must be a positive integer; got {value!r}.")
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin < 1:
        raise ValueError(f"tune: margin must be a number in [0, 1); got {margin!r}.")
    adapter = adapter_for(a, "a")
    if adapter.route != "device":
        raise TypeError(
            f"tune: a and b must be arrays in GPU memory (CuPy, PyTorch, or any DLPack or "
            f"__cuda_array_interface__ array); got {adapter.name} arrays, which are not tuned."
        )
    reference = matmul(a, b, precision=precision, kernel=kernel)  # every check, the model's pick
    work = launch.planned_launch(adapter, a, b, precision=precision, kernel=kernel)
    if work is None or work.problem is None:
        return TuneResult(note="nothing to tune: the product is empty, has K = 0, reads staged "
                               "copies, takes several launches or its family has no schedules")
    problem = work.problem
    choices = tunable(problem, limit)
    result = TuneResult(problem, [Trial(*choice) for choice in choices])
    dev = adapter.describe(a, "a").device
    with adapter.on_device(dev), device.using_device(dev):
        stream = adapter.current_stream(dev)
        expected = _host_values(adapter, reference, stream)
        flush_bytes = 2 * device.l2_cache_bytes(dev)
        flush = device.alloc_async(flush_bytes, stream)
        try:
            for trial in result.trials:
                _run_trial(trial, problem, adapter, a, b, precision, kernel, expected, stream,
                           reps, lambda: device.memset_async(flush, flush_bytes, stream))
        finally:
            device.free_async(flush, stream)
            device.synchronize(stream)
    timed = [t for t in result.trials if t.seconds is not None]
    if not timed:
        result.note = "no candidate could be timed; nothing recorded"
        return result
    model, fastest = result.trials[0], min(timed, key=lambda t: t.seconds)
    keep = model if model.seconds is not None and not (
        fastest.seconds < model.seconds * (1 - margin)) else fastest
    result.chosen = keep
    result.persisted = cache.record_tuned(
        problem, (keep.config, keep.splits, keep.transposed),
        {"seconds": keep.seconds, "model_seconds": model.seconds, "candidates": len(choices),
         "tuned_at": time.time()}, persist=persist)
    gain = ("" if model.seconds is None
            else f" ({model.seconds / keep.seconds:.2f}x the model's pick)")
    result.note = (f"kept {keep.label}{gain}"
                   + ("; written to the cache directory" if result.persisted else "; in memory"))
    return result


def _run_trial(trial: Trial, problem, adapter, a, b, precision: str, kernel: str,
               expected: numpy.ndarray, stream: int, reps: int, flush) -> None:
    try:
        with cache.trial_tuned(problem, (trial.config, trial.splits, trial.transposed)):
            c = matmul(a, b, precision=precision, kernel=kernel)
            got = _host_values(adapter, c, stream)
            scale = float(numpy.linalg.norm(expected)) or 1.0
            diff = float(numpy.linalg.norm(got - expected)) / scale
            bound = AGREEMENT.get(problem.math, 1e-2)
            if not math.isfinite(diff) or diff > bound:
                trial.note = f"WRONG: differs from the model's pick by {diff:.2e} (bound {bound:g})"
                return
            times = device.gpu_seconds(
                stream, lambda: matmul(a, b, out=c, precision=precision, kernel=kernel), reps,
                before=flush)
            trial.seconds = statistics.median(times)
    except Exception as exc:  # a candidate that fails to build or run is reported, not chosen
        trial.note = f"ERROR: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"


def _host_values(adapter, x, stream: int) -> numpy.ndarray:
    """A fresh (row-major) result of ``matmul`` as float64 on the host."""
    op = adapter.describe(x, "out")
    count = math.prod(op.shape)
    raw = numpy.empty(count * op.itemsize, dtype=numpy.uint8)
    nbytes = raw.size
    device.copy_2d_async(raw.ctypes.data, nbytes, op.ptr, nbytes, nbytes, 1 if nbytes else 0,
                         "device_to_host", stream)
    device.synchronize(stream)
    if op.dtype == "bfloat16":
        values = (raw.view(numpy.uint16).astype(numpy.uint32) << 16).view(numpy.float32)
    else:
        values = raw.view(numpy.dtype(op.dtype))
    return values.astype(numpy.float64)
