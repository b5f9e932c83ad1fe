"""The ``stream=`` argument, resolved in one place into one value: ``Stream(handle, explicit)``.

``handle`` is the raw ``CUstream`` every launch and copy uses.  ``explicit`` says the caller named
the stream, so the library's own operations (output allocation, staging copies) must run with it
current (``adapter.on_stream``); the default stream is the library's current one already.

Accepted: None (the library's current stream), an int handle, an object with ``__cuda_stream__``
(the CUDA stream protocol), or a stream object of the operands' library (the adapter knows it).
A handle that cannot be a stream (wrong type, negative, beyond a user-space pointer, misaligned) is
refused here, before it can reach the driver.

Imports: nothing of ours.
"""

from __future__ import annotations

from typing import NamedTuple

#: Handles the CUDA runtime gives special meaning: 0 (NULL), cudaStreamLegacy, cudaStreamPerThread.
SPECIAL_HANDLES = (0, 1, 2)
#: cudaStreamLegacy, the legacy default stream, synchronizing with every blocking stream.
LEGACY_STREAM = 1
#: cudaStreamPerThread: the default of libraries that have no current stream.
PER_THREAD_STREAM = 2
#: Every stream is a driver object in the process's user address space (x86-64 and aarch64 Linux:
#: below 2^47, resp. 2^48) and at least pointer-aligned.
_USER_SPACE_END = 1 << 48
_POINTER_ALIGN = 8


class Stream(NamedTuple):
    """A resolved stream; ``adapter.scope(device, stream)`` makes it current where needed."""

    handle: int
    explicit: bool


def check_handle(handle, what: str = "stream") -> int:
    """``handle`` as an int, or a ValueError/TypeError when it cannot be a CUDA stream."""
    if isinstance(handle, bool) or not isinstance(handle, int):
        raise TypeError(
            f"matmul: {what} handle must be an int; got {type(handle).__module__}."
            f"{type(handle).__qualname__}."
        )
    if handle in SPECIAL_HANDLES:
        return handle
    if handle < 0 or handle >= _USER_SPACE_END or handle % _POINTER_ALIGN:
        raise ValueError(
            f"matmul: {what} handle {handle:#x} cannot be a CUDA stream: expected 0, 1, 2 or a "
            f"{_POINTER_ALIGN}-byte aligned address below 2**48 (a cudaStream_t / CUstream value)."
        )
    return handle


def explicit_handle(stream, adapter) -> int:
    """The handle of a caller-named ``stream`` (not None); TypeError/ValueError when invalid."""
    if isinstance(stream, bool):
        raise TypeError("matmul: stream must be a stream object or an int handle, got a bool.")
    if isinstance(stream, int):
        return check_handle(stream)
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        value = protocol() if callable(protocol) else protocol
        if isinstance(value, tuple) and len(value) == 2:
            return check_handle(value[1], "stream.__cuda_stream__()")
        raise TypeError(
            f"matmul: stream.__cuda_stream__() must return (version, handle), got {value!r}."
        )
    handle = adapter.stream_handle(stream)
    if handle is not None:
        return check_handle(int(handle))
    raise TypeError(
        "matmul: stream must be None, an int handle, an object with __cuda_stream__, or a stream "
        f"of the operands' library ({adapter.name}); got "
        f"{type(stream).__module__}.{type(stream).__qualname__}."
    )


def resolve_stream(named: int | None, adapter, device: int) -> Stream:
    """The Stream to run on: ``named`` (an ``explicit_handle`` result), or the library's current
    stream on ``device`` when the caller named none.

    Two steps because a DLPack producer must hear of a named stream before the operands' device
    is known: routes call ``explicit_handle(stream=)`` first, this once the device is known.
    """
    if named is None:
        return Stream(adapter.current_stream(device), False)
    return Stream(named, True)
