"""What the core knows of an array (``Operand``), and the small interface every adapter implements.

An adapter (``cutematmul.adapters.<library>``) turns its library's arrays into ``Operand``s, knows
the library's current stream, allocates outputs with the library's own allocator (so its memory
pool and stream bookkeeping are used) and copies between its arrays.  Nothing else: every decision
lives in the core.  Each adapter declares its *route*:

* ``"device"``: the arrays are GPU memory; the product is launched here (``launch.run_device``).
* ``"host"``: the arrays are host memory; they are staged through the GPU (``staging.py``).
* ``"xla"``: the arrays are JAX values; the product is lowered into an XLA custom call (``xla.py``).

Imports: ``plan`` and ``routes`` (which loads the route modules lazily); lazily ``device`` and
``dlpack`` (the default split-K workspace).
"""

from __future__ import annotations

import contextlib
from typing import Any, NamedTuple

from .plan import round_up
from .routes import route_function

DTYPES = ("float32", "float16", "bfloat16")
ROUTES = ("device", "host", "xla")


def result_dtype(a_dtype: str, b_dtype: str) -> str:
    """The dtype of ``a @ b`` for dtype names ``a_dtype`` and ``b_dtype`` (every route's rule).

    TypeError unless both are supported.  Equal dtypes give that dtype; mixed ones promote as
    NumPy, CuPy, JAX and the Array API do over these three: float32 with a 16-bit dtype, and
    float16 with bfloat16, give float32.  A mixed product is computed in float32 (``precision``
    applies) after the library casts the 16-bit operand(s): ``ArrayAdapter.astype``.
    """
    for name, d in (("a", a_dtype), ("b", b_dtype)):
        if d not in DTYPES:
            raise TypeError(f"matmul: {name} must have dtype float32, float16 or bfloat16; "
                            f"got {d}.")
    return a_dtype if a_dtype == b_dtype else "float32"


def check_dtypes(a_dtype: str, b_dtype: str) -> None:
    """TypeError unless both dtype names are supported and equal: what a kernel entry takes
    after the route promoted mixed operands (``result_dtype``)."""
    result_dtype(a_dtype, b_dtype)  # both supported
    if a_dtype != b_dtype:
        raise TypeError(
            f"matmul: a and b must have the same dtype here; got a {a_dtype} and b {b_dtype} "
            "(cast one of them first)."
        )


class Operand(NamedTuple):
    """One array as the core sees it: address, shape, strides in elements, dtype, device.

    ``strides`` is None when the array's byte strides are not whole elements (only NumPy and
    ``__cuda_array_interface__`` producers can make such arrays).  ``device`` is the CUDA ordinal,
    -1 for host memory.  ``keepalive`` holds whatever must live as long as ``ptr`` is used (a
    DLPack capsule).
    """

    array: Any
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    dtype: str
    itemsize: int
    device: int
    readonly: bool = False
    keepalive: Any = None


@contextlib.contextmanager
def _both(first, second):
    with first, second:
        yield


class ArrayAdapter:
    """Base of the per-library adapters; see the module docstring."""

    name = "?"
    route = "device"

    def describe(self, x, argument: str, stream: int | None = None) -> Operand:
        """``x`` as an Operand.  ``stream`` is the consumer stream when the caller named one
        (DLPack producers order their pending work before it); None means the default."""
        raise NotImplementedError

    def current_stream(self, device: int) -> int:
        """Handle of the library's current stream on ``device``."""
        raise NotImplementedError

    # The repeat fast path (``launch.run_device``): adapters whose library reads an array's
    # metadata cheaply implement these three; the default opts out.

    def signature(self, a, b, out):
        """A hashable value equal for two calls exactly when ``describe`` gives their (a, b,
        out) equal Operands but for the pointers (shape, strides, dtype, device, read-only),
        read without describing; None when the adapter cannot tell cheaply (no fast path)."""
        return None

    def pointer(self, x) -> int:
        """``describe(x).ptr`` alone; 0 when ``x`` has no memory of its own."""
        raise NotImplementedError

    def current_device(self) -> int:
        """The CUDA ordinal the library (and the CUDA runtime) treats as current."""
        raise NotImplementedError

    def stream_handle(self, stream) -> int | None:
        """Handle of a stream object of this library, None if ``stream`` is not one."""
        return None

    def empty(self, shape: tuple[int, ...], like):
        """A new row-major array of ``like``'s dtype and device, on the library's current stream."""
        raise NotImplementedError

    def empty_operand(self, shape: tuple[int, ...], strides: tuple[int, ...], like,
                      template: Operand) -> tuple[Any, Operand]:
        """(a new array for the result, its Operand): ``empty(shape, like)``, described.

        ``strides`` are the row-major strides ``empty`` gives and ``template`` is ``like``'s
        Operand (dtype, itemsize, device); adapters whose library guarantees both build the
        Operand from them instead of describing the new array (a microsecond per call).
        """
        out = self.empty(shape, like)
        return out, self.describe(out, "out")

    def workspace(self, count: int, like, stream: int) -> tuple[object, int]:
        """(owner, address) of ``count`` fp32 scratch elements on the current device, for work
        on ``stream`` (the library's current stream inside ``on_stream``), released in stream
        order once ``owner`` is dropped.  The default is a ``DeviceArray`` (cudaMallocAsync on
        ``stream``); libraries with a memory pool override it."""
        from .device import current_device
        from .dlpack import DeviceArray

        buf = DeviceArray((count,), "float32", device=current_device(), stream=stream)
        return buf, buf.ptr

    def copy(self, dst, src) -> None:
        """dst[...] = src, on the library's current stream."""
        raise NotImplementedError

    def astype(self, x, dtype: str):
        """A new array of ``x``'s values in ``dtype`` (a ``DTYPES`` name), cast by the library on
        its current stream (mixed-dtype products, ``result_dtype``).  The default refuses: an
        array no library owns has no cast of its own here."""
        raise TypeError(
            f"matmul: a and b of different dtypes are promoted by their library's cast, and "
            f"{self.name} arrays have none here; cast one of them to {dtype} first."
        )

    def fill_zero(self, x) -> None:
        raise NotImplementedError

    def on_device(self, device: int):
        """Context that makes ``device`` current for the library (and the CUDA runtime)."""
        return contextlib.nullcontext()

    def on_stream(self, handle: int, device: int):
        """Context that makes the stream ``handle`` current for the library's own operations."""
        return contextlib.nullcontext()

    def scope(self, device: int, stream):
        """Context for a call's library work (output allocation, staging copies): ``device``
        current, and a stream the caller named (``streams.Stream`` with ``explicit``) current
        too; the library's current stream is current already."""
        if not stream.explicit:
            return self.on_device(device)
        return _both(self.on_device(device), self.on_stream(stream.handle, device))

    def shape_of(self, x) -> tuple[int, ...]:
        return tuple(x.shape)

    def padded_copy(self, x, pad_elems: int):
        """A copy of ``x`` whose rows start every ``pad_elems`` elements (row-major, aligned).

        The padding is zeroed: a kernel's last vector of a row may read it (never uninitialized
        memory).
        """
        shape = self.shape_of(x)
        cols = shape[-1]
        padded = round_up(max(cols, 1), pad_elems)
        buf = self.empty(tuple(shape[:-1]) + (padded,), x)
        if padded != cols:
            self.fill_zero(buf)
        view = buf[..., :cols]
        self.copy(view, x)
        return view

    def matmul(self, a, b, *, out, stream, precision, kernel):
        """The product along this adapter's route (arguments already checked by ``api``).

        Adapters override this only to intercept calls that must take another way first (PyTorch
        autograd and ``torch.compile``); they then call ``super().matmul``.
        """
        return route_function(self.route)(self, a, b, out=out, stream=stream, kernel=kernel,
                                          precision=precision)
