"""The CUDA driver and runtime calls the core needs.

Two layers, for start-up time:

* the queries every product makes once per process (is there a driver and a GPU, the device's
  compute capability, multiprocessor count and name) call the driver library ``libcuda.so.1``
  directly through ``ctypes``: documented, stable driver entry points (and the stream-ordered
  memset, which zeroes the stream-K flags on every such product);
* everything else (stream-ordered allocation, copies, events, pointer queries: the NumPy and
  generic DLPack routes) goes through ``cuda-python`` (``cuda.bindings``), imported on first use.

Why: importing ``cuda.bindings.driver`` and ``.runtime`` costs 70-100 ms (``cuda.pathfinder``
searching for libraries), more than the whole rest of a warm start; a CuPy or PyTorch product
never needs them (docs/performance.md, start-up).

Nothing here runs at import: a machine without a GPU or with too old a driver imports cutematmul
fine and gets a ``RuntimeError`` naming the cause at the first call that needs the GPU.

Imports: nothing of ours; ``ctypes``; lazily ``cuda.bindings``.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceInfo:
    """What kernel selection needs to know about one GPU."""

    index: int
    name: str
    capability: tuple[int, int]
    num_sms: int


@functools.cache
def _bindings():
    """``(cuda.bindings.driver, cuda.bindings.runtime)``, imported on first use."""
    from cuda.bindings import driver, runtime

    return driver, runtime


def _check(result, what: str):
    err, *values = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        name = getattr(err, "name", str(err))
        raise RuntimeError(f"cutematmul: {what} failed with {name}.")
    return values[0] if len(values) == 1 else values


# CUresult values (cuda.h) that device_count explains in words.
_NO_DEVICE = 100
_NO_CONTEXT = 201  # CUDA_ERROR_INVALID_CONTEXT: no context is current on this thread
_OLD_DRIVER = {35: "CUDA_ERROR_INSUFFICIENT_DRIVER", 803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
               804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"}
# CUdevice_attribute values (cuda.h).
_ATTR_SM_COUNT = 16
_ATTR_L2_BYTES = 38
_ATTR_MAJOR = 75
_ATTR_MINOR = 76


@functools.cache
def _libcuda() -> ctypes.CDLL:
    """The driver library; RuntimeError when no NVIDIA driver is installed."""
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise RuntimeError(
            f"cutematmul: no NVIDIA driver was found on this machine ({exc}); "
            "cutematmul needs an NVIDIA GPU with an R580 or newer driver."
        ) from None


def _error_name(code: int) -> str:
    name = ctypes.c_char_p()
    if _libcuda().cuGetErrorName(code, ctypes.byref(name)) == 0 and name.value:
        return name.value.decode()
    return f"CUresult {code}"


def _driver_call(what: str, code: int) -> None:
    if code != 0:
        raise RuntimeError(f"cutematmul: {what} failed with {_error_name(code)}.")


@functools.cache
def device_count() -> int:
    """Number of visible CUDA devices; RuntimeError when there is no usable driver or GPU."""
    lib = _libcuda()
    err = lib.cuInit(0)
    if err == _NO_DEVICE:
        raise RuntimeError("cutematmul: no CUDA GPU is visible on this machine.")
    if err in _OLD_DRIVER:
        raise RuntimeError(
            "cutematmul: the NVIDIA driver is too old for this CUDA 13 build "
            "(an R580 or newer driver is needed)."
        )
    if err != 0:
        raise RuntimeError(
            f"cutematmul: the CUDA driver could not be initialised ({_error_name(err)}); "
            "is an NVIDIA GPU and driver installed?"
        )
    count = ctypes.c_int(0)
    _driver_call("cuDeviceGetCount", lib.cuDeviceGetCount(ctypes.byref(count)))
    return count.value


@functools.cache
def device_info(index: int) -> DeviceInfo:
    """Name, compute capability and multiprocessor count of device ``index`` (cached)."""
    count = device_count()
    if not 0 <= index < count:
        raise RuntimeError(f"cutematmul: CUDA device {index} does not exist ({count} visible).")
    dev = _device_handle(index)
    major, minor, sms = (_attribute(dev, a) for a in (_ATTR_MAJOR, _ATTR_MINOR, _ATTR_SM_COUNT))
    name = ctypes.create_string_buffer(256)
    _driver_call("cuDeviceGetName", _libcuda().cuDeviceGetName(name, len(name), dev))
    return DeviceInfo(index, name.value.decode(errors="replace"), (major, minor), sms)


@functools.cache
def l2_cache_bytes(index: int) -> int:
    """Size of device ``index``'s L2 cache in bytes (the autotuner flushes twice that)."""
    device_info(index)  # the device exists
    return _attribute(_device_handle(index), _ATTR_L2_BYTES)


def _device_handle(index: int) -> int:
    dev = ctypes.c_int(0)
    _driver_call("cuDeviceGet", _libcuda().cuDeviceGet(ctypes.byref(dev), index))
    return dev.value


def _attribute(dev: int, attribute: int) -> int:
    value = ctypes.c_int(0)
    _driver_call("cuDeviceGetAttribute",
                 _libcuda().cuDeviceGetAttribute(ctypes.byref(value), attribute, dev))
    return value.value


def gpu_seconds(stream: int, work, reps: int, before=None) -> list[float]:
    """GPU seconds of ``work()`` (which enqueues on ``stream``) ``reps`` times, each measured
    alone between two events; ``before()``, when given, is enqueued before each, untimed."""
    runtime = _bindings()[1]
    start = _check(runtime.cudaEventCreate(), "cudaEventCreate")
    end = _check(runtime.cudaEventCreate(), "cudaEventCreate")
    times = []
    try:
        for _ in range(reps):
            if before is not None:
                before()
            _check(runtime.cudaEventRecord(start, stream), "cudaEventRecord")
            work()
            _check(runtime.cudaEventRecord(end, stream), "cudaEventRecord")
            _check(runtime.cudaEventSynchronize(end), "cudaEventSynchronize")
            times.append(_check(runtime.cudaEventElapsedTime(start, end),
                                "cudaEventElapsedTime") * 1e-3)
    finally:
        runtime.cudaEventDestroy(start)
        runtime.cudaEventDestroy(end)
    return times


def current_device() -> int:
    return _check(_bindings()[1].cudaGetDevice(), "cudaGetDevice")


def set_device(index: int) -> None:
    _check(_bindings()[1].cudaSetDevice(index), "cudaSetDevice")


@contextlib.contextmanager
def using_device(index: int):
    """Make ``index`` the CUDA runtime's current device for the block, then restore the previous."""
    previous = current_device()
    if previous == index:
        yield
        return
    set_device(index)
    try:
        yield
    finally:
        set_device(previous)


def pointer_device(ptr: int) -> int:
    """Ordinal of the GPU owning device pointer ``ptr``; RuntimeError if CUDA does not know it."""
    device_count()  # initialises the driver, or says why it cannot
    driver = _bindings()[0]
    attr = driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    return int(_check(driver.cuPointerGetAttribute(attr, ptr), "cuPointerGetAttribute"))


def order_after(producer: int, consumer: int, device: int | None = None) -> None:
    """Make work queued on stream ``consumer`` from now on wait for all work queued on ``producer``.

    One event is recorded on ``producer`` and waited for on ``consumer``; it is destroyed at once
    (CUDA keeps it until the wait is resolved).  ``device``, when given, is made current for the
    calls: the event must belong to the producer stream's device, and the special handles 1 and 2
    mean the current device's default streams.
    """
    if producer == consumer:
        return
    scope = using_device(device) if device is not None else contextlib.nullcontext()
    runtime = _bindings()[1]
    with scope:
        event = _check(runtime.cudaEventCreateWithFlags(runtime.cudaEventDisableTiming),
                       "cudaEventCreateWithFlags")
        try:
            _check(runtime.cudaEventRecord(event, producer), "cudaEventRecord")
            _check(runtime.cudaStreamWaitEvent(consumer, event, 0), "cudaStreamWaitEvent")
        finally:
            runtime.cudaEventDestroy(event)  # cannot fail for a valid event; never masks an error


# ---- stream-ordered memory and copies, used to stage NumPy arrays through the GPU and by the
# generic DLPack adapter


def alloc_async(nbytes: int, stream: int) -> int:
    return int(_check(_bindings()[1].cudaMallocAsync(max(nbytes, 1), stream), "cudaMallocAsync"))


def free_async(ptr: int, stream: int) -> None:
    _check(_bindings()[1].cudaFreeAsync(ptr, stream), "cudaFreeAsync")


#: cudaMemcpyKind member names.
_COPY_KINDS = {
    "host_to_device": "cudaMemcpyHostToDevice",
    "device_to_host": "cudaMemcpyDeviceToHost",
    "device_to_device": "cudaMemcpyDeviceToDevice",
}


def copy_2d_async(dst: int, dst_pitch: int, src: int, src_pitch: int, width: int, height: int,
                  kind: str, stream: int) -> None:
    """Copy ``height`` rows of ``width`` bytes with the given pitches (bytes between row starts).

    ``kind`` is "host_to_device", "device_to_host" or "device_to_device".
    """
    if width and height:
        runtime = _bindings()[1]
        copy_kind = getattr(runtime.cudaMemcpyKind, _COPY_KINDS[kind])
        _check(runtime.cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height,
                                         copy_kind, stream), "cudaMemcpy2DAsync")


def synchronize(stream: int) -> None:
    _check(_bindings()[1].cudaStreamSynchronize(stream), "cudaStreamSynchronize")


def memset_async(ptr: int, nbytes: int, stream: int) -> None:
    """Zero ``nbytes`` bytes from device address ``ptr``, in order on ``stream``.

    The driver's ``cuMemsetD8Async`` through ``ctypes``: the stream-K flags are zeroed on every
    such product, and this skips ``cuda.bindings``'s import and argument conversions.  A thread
    with no current CUDA context gets the runtime's ``cudaMemsetAsync`` instead, which makes the
    device's primary context current as every runtime call does."""
    if not nbytes:
        return
    code = _memset8()(ptr, 0, nbytes, stream)
    if code == _NO_CONTEXT:
        _check(_bindings()[1].cudaMemsetAsync(ptr, 0, nbytes, stream), "cudaMemsetAsync")
        return
    _driver_call("cuMemsetD8Async", code)


@functools.cache
def _memset8():
    fn = _libcuda().cuMemsetD8Async
    fn.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn
