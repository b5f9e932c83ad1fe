"""DLPack and ``__cuda_array_interface__`` for arrays of any library, in both directions.

Reading (we are the consumer):

* ``describe_dlpack`` asks ``x.__dlpack_device__()`` first (only CUDA memory is read here), then
  ``x.__dlpack__(stream=<our stream>, max_version=(1, 0))`` (the legacy call when the producer
  does not know ``max_version``): by the protocol the producer orders its pending work before our
  stream.  For the default streams we name the legacy one (1): the protocol forbids 0, and
  PyTorch refuses the per-thread one (2); the legacy stream is ordered with every blocking stream,
  the per-thread default stream included.  The capsule is read with ctypes and returned as the
  Operand's ``keepalive``.  We never rename it to "used_...": the capsule keeps ownership, and
  when the Operand drops it the producer's own capsule destructor releases the tensor.  The
  memory therefore lives exactly as long as the Operand, and no deleter of ours is involved.
* ``describe_cuda_array_interface`` reads ``__cuda_array_interface__`` (v2, v3): strides in bytes,
  the read-only flag, and the producer's ``stream``, which our stream is made to wait for.

Writing (we are the producer): ``DeviceArray`` is the result type for inputs that have no Array
API namespace.  It owns stream-ordered device memory and speaks both protocols.
``make_capsule`` builds its DLPack capsules, for any memory and device type (the tests export
host memory with it and let ``numpy.from_dlpack`` consume it).

Ownership of an exported capsule: a small ``_Export`` holder keeps the owner of the memory and
the shape/strides arrays alive; one reference to it is taken for the capsule (``Py_IncRef``) and
given back by the managed tensor's deleter (``Py_DecRef``), which the consumer calls, or our
capsule destructor when the capsule dies unconsumed.  Both callbacks are Python functions behind
ctypes thunks.  CPython calls capsule destructors, and consumers call deleters, possibly while an
exception is being raised; a Python callback cannot keep that exception pending, so ours take it,
release the holder (nothing leaks) and report it through ``sys.unraisablehook``; the consumer
then raises ``SystemError`` instead of its own error.  A consumer that calls the deleter after
the interpreter has shut down cannot be served (there is no Python left to run it).

Imports: ``operand``, ``streams``, ``device`` of ours; ctypes, numpy and the standard library.
"""

from __future__ import annotations

import ctypes
import re
import sys

import numpy

from . import device as _device
from .operand import Operand
from .streams import LEGACY_STREAM as _LEGACY_STREAM
from .streams import PER_THREAD_STREAM as _PER_THREAD_STREAM
from .streams import check_handle

# ---- DLPack constants (dlpack.h, v1.x)

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
#: Device types the device route reads.  Managed memory (cudaMallocManaged) is device memory to a
#: kernel on every GPU with unified addressing; its host side must not be touched while the call
#: runs, as with any managed allocation.
CUDA_DEVICE_TYPES = (KDL_CUDA, KDL_CUDA_MANAGED)
DEVICE_NAMES = {
    1: "kDLCPU", 2: "kDLCUDA", 3: "kDLCUDAHost", 4: "kDLOpenCL", 7: "kDLVulkan", 8: "kDLMetal",
    9: "kDLVPI", 10: "kDLROCM", 11: "kDLROCMHost", 12: "kDLExtDev", 13: "kDLCUDAManaged",
    14: "kDLOneAPI", 15: "kDLWebGPU", 16: "kDLHexagon", 17: "kDLMAIA",
}
FLAG_READ_ONLY, FLAG_IS_COPIED = 1 << 0, 1 << 1
VERSION = (1, 0)  # what we export and ask for: every 1.x capsule has this layout
# DLDataType codes; codes 0-5 are a family whose names carry the bit width
_CODE_NAMES = {
    0: "int", 1: "uint", 2: "float", 3: "handle", 4: "bfloat", 5: "complex", 6: "bool",
    7: "float8_e3m4", 8: "float8_e4m3", 9: "float8_e4m3b11fnuz", 10: "float8_e4m3fn",
    11: "float8_e4m3fnuz", 12: "float8_e5m2", 13: "float8_e5m2fnuz", 14: "float8_e8m0fnu",
    15: "float6_e2m3fn", 16: "float6_e3m2fn", 17: "float4_e2m1fn",
}
_SIZED_CODES = {"int": 0, "uint": 1, "float": 2, "bfloat": 4, "complex": 5}
# __cuda_array_interface__ typestr kinds -> name families (the size is in bytes)
_TYPESTR_KINDS = {"f": "float", "i": "int", "u": "uint", "c": "complex", "b": "bool", "V": "void"}
_VERSIONED_NAME, _LEGACY_NAME = b"dltensor_versioned", b"dltensor"


def dtype_name(code: int, bits: int, lanes: int = 1) -> str:
    """Readable name of a DLDataType: "float32", "bfloat16", "complex64", "float32x4", ..."""
    base = _CODE_NAMES.get(code)
    if base is None:
        name = f"dlpack_code{code}_{bits}bit"
    elif base in _SIZED_CODES or base == "handle":
        name = f"{base}{bits}"
    elif base == "bool":
        name = "bool" if bits == 8 else f"bool{bits}"
    else:
        name = base
    return name if lanes == 1 else f"{name}x{lanes}"


def dl_dtype(name: str) -> tuple[int, int, int]:
    """(code, bits, lanes) of a dtype name such as "float16" or "bfloat16"; ValueError otherwise."""
    if name == "bool":
        return 6, 8, 1
    match = re.fullmatch(r"(u?int|float|bfloat|complex)(\d+)", name)
    if match is None:
        raise ValueError(f"cutematmul: dtype {name!r} has no DLPack type code here.")
    return _SIZED_CODES[match[1]], int(match[2]), 1


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-contiguous (row-major) array of ``shape``."""
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


# ---- the C structures (dlpack.h)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
        ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


# ---- the Python C API through ctypes (own prototypes: ctypes.pythonapi's shared ones stay as
# they are).  PYFUNCTYPE calls hold the GIL and raise a pending Python error.

_api = ctypes.pythonapi
_py = ctypes.PYFUNCTYPE
_CAPSULE_IS_VALID = _py(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_CAPSULE_POINTER = _py(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_CAPSULE_NAME = _py(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", _api))
_CAPSULE_NEW = _py(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", _api))
# The same two by address: a capsule being destroyed must not be turned into a Python reference.
_RAW_IS_VALID = _py(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_RAW_POINTER = _py(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_INCREF = _py(None, ctypes.py_object)(("Py_IncRef", _api))
_DECREF = _py(None, ctypes.c_void_p)(("Py_DecRef", _api))
_ERR_OCCURRED = _py(ctypes.c_void_p)(("PyErr_Occurred", _api))
_CTX_VERSIONED = DLManagedTensorVersioned.manager_ctx.offset
_CTX_LEGACY = DLManagedTensor.manager_ctx.offset


# ---- reading: DLPack


def dlpack_device(x, argument: str) -> tuple[int, int]:
    """``x.__dlpack_device__()`` as two ints; TypeError naming ``argument`` if malformed."""
    value = x.__dlpack_device__()
    try:
        device_type, device_id = value
        return int(device_type), int(device_id)
    except (TypeError, ValueError):
        raise TypeError(
            f"matmul: {argument}.__dlpack_device__() must return (device_type, device_id); "
            f"got {value!r}."
        ) from None


def check_device_type(device_type: int, device_id: int, argument: str,
                      accept: tuple[int, ...] = CUDA_DEVICE_TYPES) -> None:
    """TypeError unless the DLPack device type is one of ``accept``."""
    if device_type in accept:
        return
    wanted = " or ".join(DEVICE_NAMES.get(t, str(t)) for t in accept)
    came = DEVICE_NAMES.get(device_type, f"device type {device_type}")
    hint = ("; for host memory pass a NumPy array (numpy.from_dlpack(x))"
            if device_type == KDL_CPU else "")
    raise TypeError(
        f"matmul: {argument} must be GPU memory (DLPack {wanted}); got an array on {came} "
        f"(__dlpack_device__() is ({device_type}, {device_id})){hint}."
    )


def describe_dlpack(x, argument: str, stream: int) -> Operand:
    """``x`` (``__dlpack__``, ``__dlpack_device__``) as an Operand ordered before ``stream``."""
    device_type, device_id = dlpack_device(x, argument)
    check_device_type(device_type, device_id, argument)
    consumer = _LEGACY_STREAM if stream in (0, _PER_THREAD_STREAM) else stream  # see above
    try:
        capsule = x.__dlpack__(stream=consumer, max_version=VERSION)
    except TypeError:  # a producer from before DLPack 1.0 (no max_version keyword)
        capsule = x.__dlpack__(stream=consumer)
    return capsule_operand(x, capsule, argument)


def capsule_operand(array, capsule, argument: str,
                    accept: tuple[int, ...] = CUDA_DEVICE_TYPES) -> Operand:
    """The Operand a DLPack capsule describes; the capsule stays unconsumed, as its keepalive."""
    if _CAPSULE_IS_VALID(capsule, _VERSIONED_NAME):
        managed = DLManagedTensorVersioned.from_address(_CAPSULE_POINTER(capsule, _VERSIONED_NAME))
        if managed.version.major != VERSION[0]:
            raise BufferError(
                f"matmul: {argument}.__dlpack__() returned a DLPack {managed.version.major}."
                f"{managed.version.minor} tensor; only version 1.x can be read."
            )
        tensor, readonly = managed.dl_tensor, bool(managed.flags & FLAG_READ_ONLY)
    elif _CAPSULE_IS_VALID(capsule, _LEGACY_NAME):
        managed = DLManagedTensor.from_address(_CAPSULE_POINTER(capsule, _LEGACY_NAME))
        tensor, readonly = managed.dl_tensor, False  # a legacy capsule cannot say
    else:
        raise TypeError(
            f"matmul: {argument}.__dlpack__() must return an unconsumed DLPack capsule "
            f"('dltensor_versioned' or 'dltensor'); got {_describe_object(capsule)}."
        )
    check_device_type(tensor.device.device_type, tensor.device.device_id, argument, accept)
    return _tensor_operand(array, tensor, readonly, capsule)


def _tensor_operand(array, tensor: DLTensor, readonly: bool, keepalive) -> Operand:
    ndim = tensor.ndim
    shape = tuple(tensor.shape[i] for i in range(ndim))
    strides = tuple(tensor.strides[i] for i in range(ndim)) if tensor.strides else c_strides(shape)
    dt = tensor.dtype
    itemsize = max(1, (dt.bits * dt.lanes + 7) // 8)
    ptr = (tensor.data or 0) + tensor.byte_offset
    return Operand(array, ptr, shape, strides, dtype_name(dt.code, dt.bits, dt.lanes), itemsize,
                   tensor.device.device_id, readonly, keepalive)


def _describe_object(obj) -> str:
    kind = type(obj)
    if kind.__name__ == "PyCapsule":
        name = _CAPSULE_NAME(obj)
        return f"a capsule named {name.decode(errors='replace') if name else None!r}"
    return f"{kind.__module__}.{kind.__qualname__}"


# ---- reading: __cuda_array_interface__


def read_cuda_array_interface(interface, argument: str) -> tuple[Operand, int | None]:
    """(Operand with device -1 and array None, producer stream or None) of an interface dict.

    Pure: no CUDA call.  The caller fills in the array and the device ordinal.
    """
    if not isinstance(interface, dict):
        raise TypeError(f"matmul: {argument}.__cuda_array_interface__ must be a dict; "
                        f"got {_describe_object(interface)}.")
    if interface.get("mask") is not None:
        raise TypeError(f"matmul: {argument} must not be a masked array; its "
                        "__cuda_array_interface__ has a mask.")
    name, itemsize = _typestr_dtype(interface.get("typestr"), argument)
    shape = tuple(int(n) for n in interface["shape"])
    ptr, readonly = _interface_data(interface.get("data"), argument)
    byte_strides = interface.get("strides")
    if byte_strides is None:
        strides = c_strides(shape)
    elif any(int(s) % itemsize for s in byte_strides):
        strides = None  # not whole elements (the Operand convention)
    else:
        strides = tuple(int(s) // itemsize for s in byte_strides)
    stream = interface.get("stream")
    if stream is not None:
        if stream == 0:
            raise ValueError(f"matmul: {argument}.__cuda_array_interface__ has stream 0, which the "
                             "protocol disallows (1 is the legacy default stream, 2 per-thread).")
        stream = check_handle(stream, f"{argument}.__cuda_array_interface__ stream")
    return Operand(None, ptr, shape, strides, name, itemsize, -1, readonly), stream


def interface_byte_strides(interface) -> tuple[int, ...]:
    """Byte strides of an interface dict (computed when it says None: C-contiguous)."""
    strides = interface.get("strides")
    if strides is not None:
        return tuple(int(s) for s in strides)
    _, itemsize = _typestr_dtype(interface.get("typestr"), "array")
    return tuple(s * itemsize for s in c_strides(tuple(interface["shape"])))


def _typestr_dtype(typestr, argument: str) -> tuple[str, int]:
    match = re.fullmatch(r"([<>|=])([a-zA-Z])(\d+)", typestr) if isinstance(typestr, str) else None
    if match is None:
        raise TypeError(f"matmul: {argument}.__cuda_array_interface__ typestr must look like "
                        f"'<f4'; got {typestr!r}.")
    order, kind, size = match[1], match[2], int(match[3])
    if order == ">" and size > 1:
        raise ValueError(f"matmul: {argument} must be in native (little-endian) byte order; its "
                         f"__cuda_array_interface__ typestr is {typestr!r}.")
    family = _TYPESTR_KINDS.get(kind)
    if family is None:
        return typestr[1:], size
    return ("bool" if family == "bool" and size == 1 else f"{family}{size * 8}"), size


def _interface_data(data, argument: str) -> tuple[int, bool]:
    if not (isinstance(data, tuple) and len(data) == 2):
        raise TypeError(f"matmul: {argument}.__cuda_array_interface__ data must be "
                        f"(pointer, read_only); got {data!r}.")
    return int(data[0] or 0), bool(data[1])


def describe_cuda_array_interface(x, argument: str, stream: int) -> Operand:
    """``x`` (with ``__cuda_array_interface__``) as an Operand; ``stream`` waits for its producer.

    The device ordinal comes from the pointer (``cuPointerGetAttribute``).
    """
    operand, producer = read_cuda_array_interface(x.__cuda_array_interface__, argument)
    size = 1
    for n in operand.shape:
        size *= n
    device = _pointer_device(operand.ptr, argument) if size else _device.current_device()
    if producer is not None:
        _device.order_after(producer, stream, device)
    return operand._replace(array=x, device=device)


def _pointer_device(ptr: int, argument: str) -> int:
    try:
        return _device.pointer_device(ptr)
    except RuntimeError as exc:
        raise ValueError(f"matmul: {argument}.__cuda_array_interface__ points at {ptr:#x}, which "
                         f"is not memory CUDA knows ({exc}).") from None


# ---- writing: DLPack capsules


class _Export:
    """What one exported capsule keeps alive; its ``id`` is the managed tensor's manager_ctx."""

    __slots__ = ("owner", "managed", "shape", "strides", "name", "__weakref__")


def make_capsule(owner, ptr: int, shape, strides, dtype: str, device: tuple[int, int], *,
                 readonly: bool = False, versioned: bool = True):
    """A DLPack capsule for the memory at ``ptr``, which ``owner`` keeps alive.

    ``strides`` are in elements; ``device`` is (DLPack device type, id).  Versioned capsules carry
    the read-only flag; a legacy capsule cannot, so a read-only export asks for DLPack 1.0.
    """
    if readonly and not versioned:
        raise BufferError("cutematmul: a read-only array can only be exported to a DLPack >= 1.0 "
                          "consumer (the legacy capsule has no read-only flag).")
    holder = _Export()
    holder.owner, holder.name = owner, _VERSIONED_NAME if versioned else _LEGACY_NAME
    ndim = len(shape)
    holder.shape = (ctypes.c_int64 * max(ndim, 1))(*shape)
    holder.strides = (ctypes.c_int64 * max(ndim, 1))(*strides)
    if versioned:
        managed = DLManagedTensorVersioned()
        managed.version = DLPackVersion(*VERSION)
        managed.flags = FLAG_READ_ONLY if readonly else 0
        managed.deleter = _DELETER_VERSIONED_ADDRESS
    else:
        managed = DLManagedTensor()
        managed.deleter = _DELETER_LEGACY_ADDRESS
    tensor = managed.dl_tensor
    tensor.data, tensor.byte_offset, tensor.ndim = ptr, 0, ndim
    tensor.device = DLDevice(*device)
    tensor.dtype = DLDataType(*dl_dtype(dtype))
    tensor.shape, tensor.strides = holder.shape, holder.strides
    managed.manager_ctx = id(holder)
    holder.managed = managed
    _INCREF(holder)  # the capsule's (then the consumer's) reference, given back by the deleter
    try:
        return _CAPSULE_NEW(ctypes.addressof(managed), holder.name, _DESTRUCTOR_ADDRESS)
    except BaseException:
        _DECREF(id(holder))
        raise


def _pending_error(_occurred=_ERR_OCCURRED):
    """The exception pending in the C code that called us, taken (cleared), or None."""
    try:
        _occurred()
    except BaseException as exc:  # ctypes raises the pending error right after the call
        return exc
    return None


def _report(pending, where: str) -> None:
    """Raise from a C callback: ctypes hands it to ``sys.unraisablehook``."""
    raise RuntimeError(
        f"cutematmul: the {where} ran while a DLPack consumer was raising {pending!r}; the "
        "tensor was released, but that error cannot stay pending across a Python callback."
    ) from pending


def _release(address: int, ctx_offset: int, _decref=_DECREF, _at=ctypes.c_void_p.from_address):
    _decref(_at(address + ctx_offset).value)


def _on_delete_versioned(address, _ctx=_CTX_VERSIONED):
    pending = _pending_error()  # first: nothing else may run with an error pending
    _release(address, _ctx)
    if pending is not None:
        _report(pending, "DLPack deleter")


def _on_delete_legacy(address, _ctx=_CTX_LEGACY):
    pending = _pending_error()
    _release(address, _ctx)
    if pending is not None:
        _report(pending, "DLPack deleter")


def _on_capsule_destroyed(capsule):
    """Capsule destructor: release the tensor unless a consumer took it (renamed the capsule)."""
    pending = _pending_error()
    for name, offset in ((_VERSIONED_NAME, _CTX_VERSIONED), (_LEGACY_NAME, _CTX_LEGACY)):
        if _RAW_IS_VALID(capsule, name):
            _release(_RAW_POINTER(capsule, name), offset)
            break
    if pending is not None:
        _report(pending, "DLPack capsule destructor")


_C_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # takes the GIL: callable from any thread
_DELETER_VERSIONED = _C_CALLBACK(_on_delete_versioned)
_DELETER_LEGACY = _C_CALLBACK(_on_delete_legacy)
_DESTRUCTOR = _C_CALLBACK(_on_capsule_destroyed)
for _thunk in (_DELETER_VERSIONED, _DELETER_LEGACY, _DESTRUCTOR):
    _INCREF(_thunk)  # never freed: capsules and consumers may outlive this module's namespace
del _thunk
_DELETER_VERSIONED_ADDRESS = ctypes.cast(_DELETER_VERSIONED, ctypes.c_void_p).value
_DELETER_LEGACY_ADDRESS = ctypes.cast(_DELETER_LEGACY, ctypes.c_void_p).value
_DESTRUCTOR_ADDRESS = ctypes.cast(_DESTRUCTOR, ctypes.c_void_p).value


# ---- writing: DeviceArray


class _Allocation:
    """Device memory from ``cudaMallocAsync``, freed when the last view of it dies.

    ``stream`` is where the memory is ordered: every use through this module moves it to the
    using stream after making that stream wait for the previous one, so the free is ordered
    after all of them.  Memory ordered on the per-thread default stream is freed on the legacy
    default stream, which waits for every thread's per-thread stream: the last reference may die
    on another thread (the garbage collector's).  Nothing is freed while the interpreter shuts
    down: the process exit returns the memory, and CUDA may already be torn down.
    """

    __slots__ = ("ptr", "device", "stream")

    def __init__(self, nbytes: int, device: int, stream: int):
        self.ptr = 0
        self.device, self.stream = device, stream
        with _device.using_device(device):
            self.ptr = _device.alloc_async(nbytes, stream)

    def __del__(self, _finalizing=sys.is_finalizing):
        if not self.ptr or _finalizing():
            return
        stream = _LEGACY_STREAM if self.stream == _PER_THREAD_STREAM else self.stream
        with _device.using_device(self.device):
            _device.free_async(self.ptr, stream)


class DeviceArray:
    """A GPU array that ``matmul`` returns when the inputs' library has no Array API namespace.

    It owns stream-ordered device memory (views share it) and hands it to any library through
    ``__dlpack__`` (``cupy.from_dlpack``, ``torch.from_dlpack``, ...) or
    ``__cuda_array_interface__`` (not for bfloat16, which that protocol cannot name).

    ``shape``; ``dtype`` (a NumPy dtype; bfloat16 is ``ml_dtypes.bfloat16`` when installed, else
    the string "bfloat16"); ``strides`` in bytes (NumPy's convention); ``device`` (CUDA ordinal);
    ``stream`` (the handle its contents are ordered on); ``ptr`` (address of the first element).
    Indexing with ints, slices, ``...`` and None gives views.

    Streams: consumers of ``__dlpack__`` get their stream ordered after ours.  A per-thread
    default stream handle (2) means the calling thread's; to use an array on another thread,
    name a stream or synchronize.
    """

    __slots__ = ("_memory", "_ptr", "_shape", "_strides", "_dtype", "_itemsize", "__weakref__")

    def __init__(self, shape, dtype: str, *, device: int, stream: int):
        shape = tuple(int(n) for n in shape)
        dtype = dtype if isinstance(dtype, str) else numpy.dtype(dtype).name
        if any(n < 0 for n in shape):
            raise ValueError(f"cutematmul: DeviceArray shape must not be negative; got {shape}.")
        code, bits, lanes = dl_dtype(dtype)
        itemsize = bits * lanes // 8
        nbytes = itemsize
        for n in shape:
            nbytes *= n
        memory = _Allocation(nbytes, device, check_handle(stream))
        self._init(memory, memory.ptr, shape, c_strides(shape), dtype, itemsize)

    @classmethod
    def _view_of(cls, memory, ptr: int, shape, strides, dtype: str, itemsize: int) -> DeviceArray:
        """An array over ``memory`` (anything with ``device`` and ``stream``); allocates nothing."""
        view = cls.__new__(cls)
        view._init(memory, ptr, tuple(shape), tuple(strides), dtype, itemsize)
        return view

    def _init(self, memory, ptr, shape, strides, dtype, itemsize) -> None:
        self._memory, self._ptr, self._shape, self._strides = memory, ptr, shape, strides
        self._dtype, self._itemsize = dtype, itemsize

    shape = property(lambda self: self._shape)
    ndim = property(lambda self: len(self._shape))
    itemsize = property(lambda self: self._itemsize)
    ptr = property(lambda self: self._ptr)
    device = property(lambda self: self._memory.device)
    stream = property(lambda self: self._memory.stream)

    @property
    def size(self) -> int:
        size = 1
        for n in self._shape:
            size *= n
        return size

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(s * self._itemsize for s in self._strides)

    @property
    def dtype(self):
        return numpy_dtype(self._dtype)

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self._shape[0]

    def __repr__(self) -> str:
        return (f"DeviceArray(shape={self._shape}, dtype={self._dtype}, device={self.device}, "
                f"stream={self.stream:#x})")

    def __getitem__(self, key) -> DeviceArray:
        offset, shape, strides = index_view(self._shape, self._strides, key)
        ptr = self._ptr + offset * self._itemsize
        return DeviceArray._view_of(self._memory, ptr, shape, strides, self._dtype, self._itemsize)

    @property
    def __cuda_array_interface__(self) -> dict:
        typestr = _typestr(self._dtype)
        if typestr is None:
            raise AttributeError(f"DeviceArray of {self._dtype} has no __cuda_array_interface__ "
                                 "(the protocol cannot name that dtype); use __dlpack__.")
        contiguous = self._strides == c_strides(self._shape)
        return {
            "shape": self._shape, "typestr": typestr, "data": (self._ptr, False), "version": 3,
            "strides": None if contiguous else self.strides,
            "stream": _LEGACY_STREAM if self.stream == 0 else self.stream,
        }

    def __dlpack_device__(self) -> tuple[int, int]:
        return KDL_CUDA, self.device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this array (versioned when the consumer knows DLPack >= 1.0).

        ``stream``: the consumer's stream, which is made to wait for ours (None means the legacy
        default stream, -1 no ordering).  No copies are made: ``copy=True`` or another
        ``dl_device`` raise BufferError.
        """
        own = self.__dlpack_device__()
        if copy:
            raise BufferError("DeviceArray.__dlpack__: copy=True is not supported; the array is "
                              "only exported in place (copy=None or False).")
        if dl_device is not None and tuple(int(v) for v in dl_device) != own:
            raise BufferError(f"DeviceArray.__dlpack__: the array lives on {own} and is not "
                              f"copied; dl_device={tuple(dl_device)} cannot be served.")
        if stream != -1:
            self._order_before(_consumer_stream(stream))
        versioned = max_version is not None and int(max_version[0]) >= VERSION[0]
        return make_capsule(self, self._ptr, self._shape, self._strides, self._dtype, own,
                            versioned=versioned)

    def _order_before(self, consumer: int) -> None:
        """Make ``consumer`` wait for the work queued on this array's stream."""
        producer = self._memory.stream
        if _same_stream(producer, consumer):
            return
        _device.order_after(producer, consumer, self._memory.device)


def _typestr(name: str) -> str | None:
    """The ``__cuda_array_interface__`` typestr of a dtype name; None for bfloat16 and others
    that protocol cannot name."""
    kinds = {"float": "f", "int": "i", "uint": "u", "complex": "c"}
    match = re.fullmatch(r"(u?int|float|complex)(\d+)", name)
    if match is None:
        return "|b1" if name == "bool" else None
    size = int(match[2]) // 8
    return f"{'|' if size == 1 else '<'}{kinds[match[1]]}{size}"


def _consumer_stream(stream) -> int:
    if stream is None:
        return _LEGACY_STREAM  # the protocol: None means the legacy default stream
    if stream == 0:
        raise ValueError("DeviceArray.__dlpack__: stream 0 is ambiguous and disallowed by the "
                         "DLPack protocol; pass 1 (legacy default stream) or 2 (per-thread).")
    return check_handle(stream, "__dlpack__ stream")


def _same_stream(a: int, b: int) -> bool:
    return (_LEGACY_STREAM if a == 0 else a) == (_LEGACY_STREAM if b == 0 else b)


def describe_device_array(x: DeviceArray, stream: int) -> Operand:
    """A DeviceArray as an Operand used on ``stream`` (no capsule; see ``_Allocation``)."""
    memory = x._memory
    if not _same_stream(memory.stream, stream):
        _device.order_after(memory.stream, stream, memory.device)
        memory.stream = stream
    return Operand(x, x._ptr, x._shape, x._strides, x._dtype, x._itemsize, memory.device)


def numpy_dtype(name: str):
    """The NumPy dtype of a dtype name (``ml_dtypes.bfloat16`` if installed), else the name."""
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            return name
        return numpy.dtype(ml_dtypes.bfloat16)
    try:
        return numpy.dtype(name)
    except TypeError:
        return name


def _integer(k) -> bool:
    if isinstance(k, (bool, numpy.bool_)) or not hasattr(k, "__index__"):
        return False
    try:
        k.__index__()
    except TypeError:  # e.g. a NumPy array of several integers (advanced indexing)
        return False
    return True


def index_view(shape, strides, key) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """(element offset, shape, strides) of ``array[key]`` for basic indexing.

    ``key``: an int, slice, ``...`` or None, or a tuple of them.  IndexError/TypeError otherwise.
    """
    key = key if isinstance(key, tuple) else (key,)
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("DeviceArray: an index can only have a single ellipsis ('...').")
    if used > len(shape):
        raise IndexError(f"DeviceArray: too many indices ({used}) for {len(shape)}-d array.")
    if not any(k is Ellipsis for k in key):
        key = key + (Ellipsis,)
    offset, out_shape, out_strides, dim = 0, [], [], 0
    for k in key:
        if k is Ellipsis:
            rest = len(shape) - used
            out_shape += shape[dim:dim + rest]
            out_strides += strides[dim:dim + rest]
            dim += rest
        elif k is None:
            out_shape.append(1)
            out_strides.append(0)
        elif isinstance(k, slice):
            start, stop, step = k.indices(shape[dim])
            out_shape.append(len(range(start, stop, step)))
            out_strides.append(strides[dim] * step)
            offset += start * strides[dim] if out_shape[-1] else 0
            dim += 1
        elif _integer(k):
            i = k.__index__()
            if not -shape[dim] <= i < shape[dim]:
                raise IndexError(f"DeviceArray: index {i} is out of bounds for axis {dim} with "
                                 f"size {shape[dim]}.")
            offset += (i % shape[dim]) * strides[dim]
            dim += 1
        else:
            raise TypeError("DeviceArray supports basic indexing only (ints, slices, ... and "
                            f"None); got {type(k).__name__}.")
    return offset, tuple(out_shape), tuple(out_strides)
