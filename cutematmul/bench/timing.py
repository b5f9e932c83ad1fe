"""Timing one burst of back-to-back products, on the GPU's clock or the host's.

CUDA events (``timed_burst``), for backends on a CUDA stream we can see:

    [spin ~2 ms] [start event] [product x reps] [end event]      all on the backend's stream

The spin is a one-thread kernel that waits on ``clock64()``; it keeps the GPU busy while the host
enqueues the burst, so the GPU never waits for a launch and host overhead stays out of the kernel
time.  The spin is made longer than the host needs to enqueue the whole burst (measured from the
previous bursts), and each burst reports whether the host finished enqueueing before the spin
ran out: when it did not, the GPU may have idled between products (``host_bound``).  The time per
product is ``elapsed(start, end) / reps``.

The host clock (``wall_burst``), for JAX (XLA's stream is not ours): ``perf_counter`` around
``reps`` dispatches and one synchronize.

The spin kernel is PyTorch's ``torch.cuda._sleep`` where PyTorch is usable, else a CuPy
``RawKernel``; its cycles per second are measured once with events.  Without a working spin
kernel bursts still run, and each is reported host-bound.

Imports: nothing of ours; ``cuda.bindings``; lazily ``torch`` or ``cupy`` (the spin kernel).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

from cuda.bindings import runtime

SPIN_SECONDS = 2e-3
SPIN_MARGIN = 1.5  # spin this many times the host's enqueue time of a burst, at least
MAX_SPIN_SECONDS = 0.5


def _check(result, what: str):
    err, *values = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise RuntimeError(f"{what} failed: {getattr(err, 'name', err)}")
    return values[0] if len(values) == 1 else values


class EventPair:
    """A start and an end CUDA event (created once, reused for every burst)."""

    def __init__(self):
        self.start = _check(runtime.cudaEventCreate(), "cudaEventCreate")
        self.end = _check(runtime.cudaEventCreate(), "cudaEventCreate")

    def record_start(self, stream: int) -> None:
        _check(runtime.cudaEventRecord(self.start, stream), "cudaEventRecord")

    def record_end(self, stream: int) -> None:
        _check(runtime.cudaEventRecord(self.end, stream), "cudaEventRecord")

    def seconds(self) -> float:
        """Seconds between start and end, once end has completed (waits for it)."""
        _check(runtime.cudaEventSynchronize(self.end), "cudaEventSynchronize")
        return _check(runtime.cudaEventElapsedTime(self.start, self.end),
                      "cudaEventElapsedTime") / 1e3

    def close(self) -> None:
        for event in (self.start, self.end):
            runtime.cudaEventDestroy(event)


# ---- the spin kernel


class _TorchSpin:
    name = "torch.cuda._sleep"

    def __init__(self):
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("PyTorch sees no CUDA GPU")
        self.torch = torch

    def __call__(self, cycles: int, stream: int) -> None:
        torch = self.torch
        if torch.cuda.current_stream().cuda_stream == stream:
            torch.cuda._sleep(cycles)
        else:
            with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
                torch.cuda._sleep(cycles)


_SPIN_SOURCE = r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""


class _CupySpin:
    name = "CuPy RawKernel spin"

    def __init__(self):
        import cupy

        self.cupy = cupy
        self.kernel = cupy.RawKernel(_SPIN_SOURCE, "spin")

    def __call__(self, cycles: int, stream: int) -> None:
        cupy = self.cupy
        args = (cupy.int64(cycles),)
        if cupy.cuda.get_current_stream().ptr == stream:
            self.kernel((1,), (1,), args)
            return
        with _cupy_stream(cupy, stream):
            self.kernel((1,), (1,), args)


class _Handle:
    """A raw stream handle in the CUDA stream protocol."""

    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def _cupy_stream(cupy, handle: int):
    """A CuPy stream object for a raw handle (``Stream.from_external`` from CuPy 14 on)."""
    from_external = getattr(cupy.cuda.Stream, "from_external", None)
    if from_external is not None:
        return from_external(_Handle(handle))
    return cupy.cuda.ExternalStream(handle)


class Spinner:
    """Enqueues a GPU wait of a given length on a stream (see ``get_spinner``)."""

    def __init__(self, launch):
        self.launch = launch
        self.name = launch.name
        self.cycles_per_second = None
        self.broken = ""  # why the spin cannot run, once it failed

    def calibrate(self, stream: int) -> None:
        """Measure the spin's clock rate with events (done once)."""
        events = EventPair()
        try:
            cycles = 2_000_000
            self.launch(cycles // 10, stream)  # load the kernel
            events.record_start(stream)
            self.launch(cycles, stream)
            events.record_end(stream)
            self.cycles_per_second = cycles / max(events.seconds(), 1e-6)
        finally:
            events.close()

    def __call__(self, seconds: float, stream: int) -> bool:
        """Enqueue the wait; False (and no wait) when the spin kernel cannot run."""
        if self.broken:
            return False
        try:
            if self.cycles_per_second is None:
                self.calibrate(stream)
            self.launch(int(seconds * self.cycles_per_second), stream)
        except Exception as exc:
            self.broken = f"{type(exc).__name__}: {exc}"
            return False
        return True


@functools.cache
def get_spinner() -> Spinner | None:
    for kind in (_TorchSpin, _CupySpin):
        try:
            return Spinner(kind())
        except Exception:
            continue
    return None


# ---- bursts


@dataclass
class Burst:
    """One timed burst: seconds per product, and how the host kept up."""

    seconds: float  # per product
    enqueue_seconds: float  # host time to enqueue the whole burst
    host_bound: bool  # the host may have kept the GPU waiting


def timed_burst(enqueue, reps: int, stream: int, events: EventPair, spinner: Spinner | None,
                spin_seconds: float) -> Burst:
    """Time ``enqueue(0) ... enqueue(reps - 1)`` with CUDA events on ``stream`` (see the module)."""
    spun = spinner is not None and spinner(spin_seconds, stream)
    t0 = time.perf_counter()
    events.record_start(stream)
    for i in range(reps):
        enqueue(i)
    events.record_end(stream)
    enqueued = time.perf_counter() - t0
    seconds = events.seconds() / reps
    host_bound = not spun or enqueued > spin_seconds
    return Burst(seconds, enqueued, host_bound)


def wall_burst(enqueue, reps: int, synchronize) -> Burst:
    """Time ``reps`` dispatches and one ``synchronize()`` with the host clock."""
    t0 = time.perf_counter()
    for i in range(reps):
        enqueue(i)
    enqueued = time.perf_counter() - t0
    synchronize()
    return Burst((time.perf_counter() - t0) / reps, enqueued, False)


def spin_for(enqueue_seconds: float) -> float:
    """How long to spin before a burst whose enqueue took ``enqueue_seconds`` last time."""
    return min(MAX_SPIN_SECONDS, max(SPIN_SECONDS, SPIN_MARGIN * enqueue_seconds + 2e-4))


def host_time_per_call(call, calls: int, synchronize, warmup: int = 100) -> float:
    """Host seconds per call over ``calls`` back-to-back calls (then one synchronize)."""
    for _ in range(warmup):
        call()
    synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    elapsed = time.perf_counter() - t0
    synchronize()
    return elapsed / calls
