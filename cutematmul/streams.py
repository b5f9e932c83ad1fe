"""Resolve the ``stream=`` argument of ``matmul`` to a raw CUDA stream handle."""

from __future__ import annotations


def resolve_stream(stream, adapter, device: int) -> int:
    """The handle to launch on: the library's current stream when ``stream`` is None.

    Accepted: None, an int handle, an object with ``__cuda_stream__`` (returning ``(version,
    handle)``), a CuPy stream (``.ptr``) or a PyTorch stream (``.cuda_stream``).
    """
    if stream is None:
        return adapter.current_stream(device)
    if isinstance(stream, bool):
        raise TypeError("matmul: stream must be a stream object or an int handle, got a bool.")
    if isinstance(stream, int):
        if stream < 0:
            raise ValueError(f"matmul: stream handle must be a non-negative int, got {stream}.")
        return stream
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        value = protocol() if callable(protocol) else protocol
        if isinstance(value, tuple) and len(value) == 2:
            return int(value[1])
        raise TypeError(
            f"matmul: stream.__cuda_stream__() must return (version, handle), got {value!r}."
        )
    handle = adapter.stream_handle(stream)
    if handle is not None:
        return int(handle)
    root = type(stream).__module__.split(".", 1)[0]
    if root == "cupy" and hasattr(stream, "ptr"):
        return int(stream.ptr)
    if root == "torch" and hasattr(stream, "cuda_stream"):
        return int(stream.cuda_stream)
    raise TypeError(
        "matmul: stream must be None, an int handle, an object with __cuda_stream__, a CuPy stream "
        f"or a PyTorch stream; got {type(stream).__module__}.{type(stream).__qualname__}."
    )
