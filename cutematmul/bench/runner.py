"""Run benchmark points: every backend on the same data, timed in alternating rounds.

For one point (shape, dtype, layout; float32: the precision cutematmul is asked for):

1. Skip backends that do not compute the dtype, and the whole point when its inputs would not fit
   in ``max_gb`` of device memory.
2. Draw ``input_sets`` Gaussian (A, B) sets on the host (seed, seed+1, ...; more than twice the
   L2 in all) and copy the same bits to each array library once; its backends share them.
3. Per backend (a cutematmul one at the point's precision): the first call (compile, autotune,
   module load) is timed apart as ``first_call_s``; then the check, untimed: C is poisoned with
   NaN, computed once, sampled against the float64 reference (``rel_error``, bounded by
   ``data.tolerance`` of the precision that backend computes at) and scanned for unwritten
   elements.
4. Heat: ``heat`` seconds of untimed bursts across the backends.
5. ``rounds`` rounds, in order A B C, then C B A, and so on; in each round each backend runs
   ``bursts`` timed bursts of ``reps`` products (rotating through the input sets) and its
   round time is their median.  See ``timing`` for how a burst is timed.
6. Per backend: the median of its round times, TFLOP/s from it, and the median over rounds of
   (cuBLAS round time / its round time), cuBLAS being the first of ``baselines(point)`` that ran:
   SGEMM (``torch``, else ``cupy``), or cuBLAS TF32 (``torch-tf32``) for float32 at "tf32";
   and the median over rounds of (the fastest of those that ran / its round time),
   ``ratio_best``: against the best of cuBLAS through CuPy and PyTorch (PyTorch's alone where
   CuPy cannot compute the point, e.g. batched bfloat16).

A backend that raises on a point gets an ``error`` row with the message and the run goes on.

Imports: ``base``, ``data``, ``results``, ``shapes``, ``stats``, ``timing`` of this package.
"""

from __future__ import annotations

import gc
import math
import time
from dataclasses import asdict, dataclass

from . import stats
from .base import Backend, describe_error
from .data import Sample, host_operands, reference_sample, relative_error, tolerance
from .results import ERROR, OK, SKIPPED, WRONG, Point, Result
from .shapes import footprint_bytes, input_sets
from .timing import EventPair, get_spinner, spin_for, timed_burst, wall_burst

# Whose cuBLAS time the ratios are against, by the point's precision (16-bit points are
# "highest"): the first of these that ran.  "high" (3xTF32) is judged against SGEMM.
BASELINES = {"highest": ("torch", "cupy"), "high": ("torch", "cupy"), "tf32": ("torch-tf32",)}
BURST_TARGET_SECONDS = 0.02  # automatic reps: about this much GPU work per timed burst
MIN_REPS, MAX_REPS = 1, 100  # MAX_REPS keeps a burst's launches within the stream's queue


@dataclass
class Settings:
    reps: int | None = None  # products per timed burst; None picks ~20 ms of work (1..100)
    rounds: int = 5
    bursts: int = 4  # timed bursts per backend per round (rounds * bursts timings in all)
    heat: float = 0.5  # seconds of untimed load per point before the rounds
    check: bool = True
    max_gb: float = 40.0
    seed: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


class _Timed:
    """One backend on one point: its inputs, rotation offset and burst timing."""

    def __init__(self, backend: Backend, sets: list, result: Result, events: EventPair | None):
        self.backend = backend
        self.sets = sets
        self.result = result
        self.events = events
        self.spinner = get_spinner() if backend.clock == "events" else None
        self.offset = 0
        self.enqueue_seconds = 0.0
        self.reps = 1
        self.rounds: list[float | None] = []

    def burst(self, reps: int):
        sets, n, offset, matmul = self.sets, len(self.sets), self.offset, self.backend.matmul

        def enqueue(i):
            a, b, out = sets[(offset + i) % n]
            matmul(a, b, out)

        if self.backend.clock == "events":
            stream = self.backend.stream_handle()
            burst = timed_burst(enqueue, reps, stream, self.events, self.spinner,
                                spin_for(self.enqueue_seconds))
        else:
            burst = wall_burst(enqueue, reps, self.backend.synchronize)
        self.offset += reps
        self.enqueue_seconds = max(burst.enqueue_seconds, 0.5 * self.enqueue_seconds)
        return burst

    def warm_up(self, settings: Settings, sample: Sample | None, dtype: str) -> None:
        """First call (timed apart), the correctness check (untimed), and the choice of reps."""
        b, r = self.backend, self.result
        a, bm, out = self.sets[0]
        t0 = time.perf_counter()
        b.matmul(a, bm, out)
        b.synchronize()
        r.first_call_s = time.perf_counter() - t0
        if sample is not None:
            b.poison(out)
            c = b.matmul(a, bm, out)
            b.synchronize()
            r.rel_error = relative_error(b.sample(c, sample), sample.reference)
            r.nonfinite = b.count_nonfinite(c)
            limit = tolerance(dtype, b.precision)
            if r.nonfinite:
                r.mark(WRONG, f"output elements left NaN/Inf: {r.nonfinite}")
            elif not r.rel_error <= limit:
                r.mark(WRONG, f"relative error {r.rel_error:.2e} > {limit:.0e}")
        estimate = self.burst(3).seconds  # GPU time per product (host time for JAX)
        auto = math.ceil(BURST_TARGET_SECONDS / max(estimate, 1e-7))
        self.reps = settings.reps or max(MIN_REPS, min(MAX_REPS, auto))
        self.burst(self.reps)  # measures the host's enqueue time for the spin length
        r.reps, r.bursts = self.reps, settings.bursts


def _join(note: str, more: str) -> str:
    return f"{note}; {more}" if note else more


def _fail(result: Result, exc: BaseException) -> None:
    result.mark(ERROR, describe_error(exc))


def baselines(point: Point) -> tuple[str, ...]:
    """The backends a point's ratios may be against, in order of preference (``BASELINES``)."""
    return BASELINES[point.precision]


def _ran(point: Point, timed: dict[str, _Timed]) -> list[_Timed]:
    """The point's baselines that ran, in ``baselines`` order: the first is the reference of
    ``ratio``, all of them that of ``ratio_best``."""
    found = [timed.get(name) for name in baselines(point)]
    return [t for t in found if t is not None and t.result.status in (OK, WRONG)
            and any(x is not None for x in t.rounds)]


def _upload_all(point: Point, backends: list[Backend], results: dict, settings: Settings):
    """Input sets per library (shared by that library's backends) and the check's sample."""
    libraries: dict[str, Backend] = {}
    for b in backends:
        libraries.setdefault(b.library, b)
    sets: dict[str, list] = {lib: [] for lib in libraries}
    sample = None
    for i in range(input_sets(point.shape, point.dtype)):
        host = host_operands(point.shape, point.dtype, point.layout, seed=settings.seed + i)
        if i == 0 and settings.check:
            sample = reference_sample(host, point.shape, settings.seed)
        for lib, maker in libraries.items():
            if lib not in sets:
                continue
            try:
                sets[lib].append(maker.upload(host))
            except Exception as exc:
                del sets[lib]
                for b in backends:
                    if b.library == lib:
                        results[b.name].mark(ERROR, f"making inputs: {describe_error(exc)}")
        del host
    return sets, sample


def run_point(point: Point, backends: list[Backend], settings: Settings) -> list[Result]:
    """Every backend on ``point``; one Result per backend, in the order given."""
    backends = [b.at_precision(point.precision) for b in backends]
    results = {b.name: Result.start(point, b.label, b.clock) for b in backends}
    active = []
    for b in backends:
        try:
            ok, why = b.supports(point.dtype, batched=point.shape.batch is not None)
        except Exception as exc:
            ok, why = False, describe_error(exc)
        if ok:
            active.append(b)
        else:
            results[b.name].mark(SKIPPED, why)
    need = footprint_bytes(point.shape, point.dtype, len({b.library for b in active}))
    if active and need > settings.max_gb * 1e9:
        for b in active:
            results[b.name].mark(SKIPPED, f"needs ~{need / 1e9:.0f} GB of device memory "
                                          f"(> max {settings.max_gb:g} GB)")
        active = []
    if active:
        _measure(point, active, results, settings)
    return [results[b.name] for b in backends]


def _measure(point: Point, active: list[Backend], results: dict, settings: Settings) -> None:
    events = EventPair() if any(b.clock == "events" for b in active) else None
    sets: dict[str, list] = {}
    timed: dict[str, _Timed] = {}
    try:
        sets, sample = _upload_all(point, active, results, settings)
        for b in active:
            if b.library not in sets:
                continue
            t = timed[b.name] = _Timed(b, sets[b.library], results[b.name], events)
            try:
                t.warm_up(settings, sample, point.dtype)
            except Exception as exc:
                _fail(t.result, exc)
                del timed[b.name]
        _heat(timed, settings.heat)
        _rounds(list(timed.values()), settings)
        _summarize(point, timed)
    finally:
        for arrays in sets.values():
            arrays.clear()  # the arrays die here, before the memory pools are emptied
        timed.clear()
        gc.collect()
        for b in active:
            try:
                b.release()
            except Exception:
                pass
        if events is not None:
            events.close()


def _heat(timed: dict[str, _Timed], seconds: float) -> None:
    """Untimed load, shared across the backends, so the rounds start on a warm GPU."""
    if not timed or seconds <= 0:
        return
    share = seconds / len(timed)
    for name, t in list(timed.items()):
        end = time.perf_counter() + share
        try:
            while time.perf_counter() < end:
                t.burst(t.reps)
        except Exception as exc:
            _fail(t.result, exc)
            del timed[name]


def _rounds(timed: list[_Timed], settings: Settings) -> None:
    failed: set[str] = set()
    for r in range(settings.rounds):
        for t in stats.round_order(timed, r):
            if t.backend.name in failed:
                t.rounds.append(None)
                continue
            try:
                bursts = [t.burst(t.reps) for _ in range(settings.bursts)]
            except Exception as exc:
                _fail(t.result, exc)
                failed.add(t.backend.name)
                t.rounds.append(None)
                continue
            t.rounds.append(stats.median(b.seconds for b in bursts))
            t.result.host_bound |= any(b.host_bound for b in bursts)


def _summarize(point: Point, timed: dict[str, _Timed]) -> None:
    ran = _ran(point, timed)
    ref = ran[0] if ran else None
    for t in timed.values():
        r = t.result
        r.round_seconds = list(t.rounds)
        r.seconds = stats.median(t.rounds)
        r.tflops = stats.tflops(point.shape.flops, r.seconds)
        r.spread = stats.spread(t.rounds)
        if ref is not None and r.seconds is not None:
            r.reference = ref.backend.label
            r.ratio = stats.ratio_to_reference(ref.rounds, t.rounds)
        if ran and r.seconds is not None:
            r.ratio_best = stats.ratio_to_fastest([b.rounds for b in ran], t.rounds)
        if r.clock == "events" and (t.spinner is None or t.spinner.broken):
            why = (t.spinner.broken if t.spinner is not None
                   else "neither PyTorch nor CuPy can launch it")
            r.note = _join(r.note, f"no spin kernel before bursts ({why}): "
                                   "host time may be included")
        elif r.host_bound:
            r.note = _join(r.note, "host-bound: the GPU may have waited for launches")


def run_suite(points: list[Point], backends: list[Backend], settings: Settings,
              progress=None, on_point=None) -> list[Result]:
    """``run_point`` over ``points``; ``progress`` wraps the iteration (e.g. tqdm) and
    ``on_point(point, rows)`` sees each point's rows as soon as they exist."""
    out: list[Result] = []
    iterator = progress(points) if progress else points
    for point in iterator:
        if hasattr(iterator, "set_postfix_str"):
            iterator.set_postfix_str(point.label)
        rows = run_point(point, backends, settings)
        out.extend(rows)
        if on_point is not None:
            on_point(point, rows)
    return out
