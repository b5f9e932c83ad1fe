"""The CUDA driver and runtime calls the core needs, through ``cuda-python`` (``cuda.bindings``).

Nothing here runs at import: a machine without a GPU or with too old a driver imports cutematmul
fine and gets a ``RuntimeError`` naming the cause at the first call that needs the GPU.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass

from cuda.bindings import driver, runtime


@dataclass(frozen=True)
class DeviceInfo:
    """What kernel selection needs to know about one GPU."""

    index: int
    name: str
    capability: tuple[int, int]
    num_sms: int


def _check(result, what: str):
    err, *values = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        name = getattr(err, "name", str(err))
        raise RuntimeError(f"cutematmul: {what} failed with {name}.")
    return values[0] if len(values) == 1 else values


@functools.cache
def device_count() -> int:
    """Number of visible CUDA devices; RuntimeError when there is no usable driver or GPU."""
    try:
        (err,) = driver.cuInit(0)
    except Exception as exc:  # libcuda.so itself is missing: no NVIDIA driver installed
        raise RuntimeError(
            f"cutematmul: no NVIDIA driver was found on this machine ({exc}); "
            "cutematmul needs an NVIDIA GPU with an R580 or newer driver."
        ) from None
    if err == driver.CUresult.CUDA_ERROR_NO_DEVICE:
        raise RuntimeError("cutematmul: no CUDA GPU is visible on this machine.")
    if err.name in ("CUDA_ERROR_INSUFFICIENT_DRIVER", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
                    "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"):
        raise RuntimeError(
            "cutematmul: the NVIDIA driver is too old for this CUDA 13 build "
            "(an R580 or newer driver is needed)."
        )
    if int(err) != 0:
        raise RuntimeError(
            f"cutematmul: the CUDA driver could not be initialised ({err.name}); "
            "is an NVIDIA GPU and driver installed?"
        )
    return _check(driver.cuDeviceGetCount(), "cuDeviceGetCount")


@functools.cache
def device_info(index: int) -> DeviceInfo:
    """Name, compute capability and multiprocessor count of device ``index`` (cached)."""
    count = device_count()
    if not 0 <= index < count:
        raise RuntimeError(f"cutematmul: CUDA device {index} does not exist ({count} visible).")
    attr = runtime.cudaDeviceAttr
    major = _check(runtime.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMajor, index), "query")
    minor = _check(runtime.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMinor, index), "query")
    sms = _check(runtime.cudaDeviceGetAttribute(attr.cudaDevAttrMultiProcessorCount, index), "query")
    name = _check(runtime.cudaGetDeviceProperties(index), "cudaGetDeviceProperties").name
    name = name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name)
    return DeviceInfo(index, name, (major, minor), sms)


def current_device() -> int:
    return _check(runtime.cudaGetDevice(), "cudaGetDevice")


def set_device(index: int) -> None:
    _check(runtime.cudaSetDevice(index), "cudaSetDevice")


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
    return int(_check(runtime.cudaMallocAsync(max(nbytes, 1), stream), "cudaMallocAsync"))


def free_async(ptr: int, stream: int) -> None:
    _check(runtime.cudaFreeAsync(ptr, stream), "cudaFreeAsync")


_COPY_KINDS = {
    "host_to_device": runtime.cudaMemcpyKind.cudaMemcpyHostToDevice,
    "device_to_host": runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost,
    "device_to_device": runtime.cudaMemcpyKind.cudaMemcpyDeviceToDevice,
}


def copy_2d_async(dst: int, dst_pitch: int, src: int, src_pitch: int, width: int, height: int,
                  kind: str, stream: int) -> None:
    """Copy ``height`` rows of ``width`` bytes with the given pitches (bytes between row starts).

    ``kind`` is "host_to_device", "device_to_host" or "device_to_device".
    """
    if width and height:
        _check(runtime.cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height,
                                         _COPY_KINDS[kind], stream), "cudaMemcpy2DAsync")


def memset_async(ptr: int, nbytes: int, stream: int, value: int = 0) -> None:
    """Set ``nbytes`` bytes from ``ptr`` to the byte ``value``, ordered on ``stream``."""
    if nbytes:
        _check(runtime.cudaMemsetAsync(ptr, value, nbytes, stream), "cudaMemsetAsync")


def synchronize(stream: int) -> None:
    _check(runtime.cudaStreamSynchronize(stream), "cudaStreamSynchronize")
