"""Call a stored kernel's TVM-FFI function through its C ABI, without the ``tvm_ffi`` package.

A stored kernel (``cache.py``) is a shared object exporting ``__tvm_ffi_<name>``, a TVM-FFI
"safe call": ``int f(void *self, const TVMFFIAny *args, int32_t num_args, TVMFFIAny *result)``
(``tvm/ffi/c_api.h``).  Every argument the pointer entry takes (``kernels/compile.py``) is an
integer (addresses, sizes, strides, the stream handle), passed as ``kTVMFFIInt``: a 16-byte
``TVMFFIAny`` whose first 8 bytes hold the type index 1 and zero padding and whose last 8 hold
the value.  On failure the function returns non-zero and leaves an Error object for
``TVMFFIErrorMoveFromRaised``; its kind and message are read from the error cell that follows
the 24-byte object header, then the object is released.

Why: ``import tvm_ffi`` costs ~40-90 ms and imports PyTorch whenever PyTorch is installed (3 s
or more), which a CuPy caller's first product would pay.  Loading ``libtvm_ffi.so`` (found next
to the package, not imported) and the object with ctypes costs a few milliseconds.  The object
needs the library's symbols (error reporting) and the CuTe DSL runtime's (module loading): both
are opened globally before it (``library`` here, the runtime by ``cache``).

Imports: nothing of ours; ``ctypes`` and ``importlib.util`` (to find the library).
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
from pathlib import Path

_INT = 1  # kTVMFFIInt; its first 8 bytes, little-endian: type index 1, zero padding
_OBJECT_HEADER = 24  # TVMFFIObject: combined ref count, type index, padding, deleter


class _ByteArray(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]


class _ErrorCell(ctypes.Structure):
    _fields_ = [("kind", _ByteArray), ("message", _ByteArray), ("backtrace", _ByteArray)]


def _text(b: _ByteArray) -> str:
    return ctypes.string_at(b.data, b.size).decode(errors="replace") if b.data else ""


@functools.cache
def library_path() -> Path:
    """Where the installed apache-tvm-ffi keeps ``libtvm_ffi.so`` (found, not imported): what
    stored objects are linked against (``cache_disk.link``) and loaded with (``library``)."""
    spec = importlib.util.find_spec("tvm_ffi")
    if spec is None or not spec.submodule_search_locations:
        raise OSError("apache-tvm-ffi is not installed")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "lib" / "libtvm_ffi.so"
        if path.is_file():
            return path
    raise OSError("libtvm_ffi.so was not found in the apache-tvm-ffi package")


@functools.cache
def library() -> ctypes.CDLL:
    """``libtvm_ffi.so``, opened globally."""
    lib = ctypes.CDLL(str(library_path()), mode=ctypes.RTLD_GLOBAL)
    lib.TVMFFIErrorMoveFromRaised.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.TVMFFIErrorMoveFromRaised.restype = None
    lib.TVMFFIObjectDecRef.argtypes = [ctypes.c_void_p]
    lib.TVMFFIObjectDecRef.restype = ctypes.c_int
    return lib


class Function:
    """A safe-call symbol of a loaded object, called with integers: ``f(*ints)``.

    The call is the hot path of every product: the argument array is copied from a template
    that already holds the type indices (one per arity, built on first use), then the values
    are written into it; the symbol has no ``argtypes``, so ctypes passes the arrays as
    pointers and the count as a C int without converting each argument again.
    """

    __slots__ = ("_fn", "_object", "name", "_prepared")

    def __init__(self, obj: ctypes.CDLL, symbol: str):
        fn = getattr(obj, f"__tvm_ffi_{symbol}")
        fn.restype = ctypes.c_int
        self._fn, self._object, self.name = fn, obj, symbol
        self._prepared = (-1, None, b"")  # (arity, its array type, its template), one value

    def __call__(self, *values: int) -> None:
        n = len(values)
        arity, array, template = self._prepared
        if n != arity:
            array, template = self._prepare(n)
        args = array.from_buffer_copy(template)
        args[1::2] = values
        # The result cell starts as kTVMFFINone (type index 0), as the ABI requires.
        if self._fn(None, args, n, _Result()):
            raise _raised(self.name)

    def _prepare(self, n: int) -> tuple:
        array = ctypes.c_int64 * (2 * n)
        cells = array()
        cells[0::2] = (_INT,) * n
        template = bytes(cells)
        self._prepared = (n, array, template)
        return array, template


_Result = ctypes.c_int64 * 2


def _raised(name: str) -> Exception:
    """The error the last failed call left, as a Python exception (and the object released)."""
    lib = library()
    handle = ctypes.c_void_p()
    lib.TVMFFIErrorMoveFromRaised(ctypes.byref(handle))
    if not handle.value:
        return RuntimeError(f"cutematmul: kernel function {name} failed without an error")
    try:
        cell = _ErrorCell.from_address(handle.value + _OBJECT_HEADER)
        kind, message = _text(cell.kind), _text(cell.message)
    finally:
        lib.TVMFFIObjectDecRef(handle)
    kinds = {"ValueError": ValueError, "TypeError": TypeError, "IndexError": IndexError}
    return kinds.get(kind, RuntimeError)(f"{message} ({kind} in kernel function {name})")


def load(path: Path, symbol: str) -> Function:
    """``symbol`` of the object at ``path``, after opening ``libtvm_ffi.so`` globally (the
    caller opens the DSL runtime library the object also needs: ``cache_disk.preload_runtime``)."""
    library()
    return Function(ctypes.CDLL(str(path)), symbol)
