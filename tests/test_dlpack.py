"""DLPack and ``__cuda_array_interface__`` intake and output (``cutematmul.dlpack``, the generic
adapter ``cutematmul.adapters.dlpack``).

The CPU tests run everywhere: capsule parsing (NumPy's own exports, versioned and legacy), dtype
names, the refusals, ``__cuda_array_interface__`` parsing, our exporter consumed by
``numpy.from_dlpack`` (values, read-only flag, lifetime), ``DeviceArray`` views and exports, the
copy planner, and the adapter end to end over a fake device whose "GPU memory" is host memory.
The GPU tests wrap CuPy and PyTorch memory in types that speak only one protocol.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import subprocess
import sys
import types
import weakref
from pathlib import Path

import numpy as np
import pytest

import cutematmul
from cutematmul import device as _device
from cutematmul import dlpack as dl
from cutematmul.adapters import _by_type, adapter_for
from cutematmul.adapters.dlpack import ADAPTER, copy_plan, dense_extent
from cutematmul.operand import check_dtypes
from conftest import require_module
from helpers import Maker, check_matmul

REPO = Path(__file__).resolve().parents[1]


# ---- helpers: host memory exported through our own exporter


class Owner:
    """Something the export keeps alive (weakref-able), holding a NumPy buffer."""

    def __init__(self, array):
        self.array = array


def _elem_strides(a: np.ndarray) -> list[int]:
    return [s // a.itemsize for s in a.strides]


class HostExport:
    """Exports a NumPy array through ``dl.make_capsule`` as device ``device`` (CPU by default).

    With ``device=(2, n)`` it pretends to be CUDA memory: the fake device below makes that true.
    ``legacy`` ignores ``max_version``; ``calls`` records the keyword arguments it got.
    """

    def __init__(self, array, device=(1, 0), readonly=False, legacy=False):
        self.owner = Owner(array)
        self.device, self.readonly, self.legacy = device, readonly, legacy
        self.calls = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.calls.append({"stream": stream, "max_version": max_version})
        a = self.owner.array
        versioned = not self.legacy and max_version is not None and max_version[0] >= 1
        return dl.make_capsule(self.owner, a.ctypes.data, a.shape, _elem_strides(a), a.dtype.name,
                               self.device, readonly=self.readonly, versioned=versioned)


class LegacyProducer(HostExport):
    """A producer from before DLPack 1.0: ``__dlpack__`` has no ``max_version`` keyword."""

    def __dlpack__(self, *, stream=None):
        self.calls.append({"stream": stream})
        a = self.owner.array
        return dl.make_capsule(self.owner, a.ctypes.data, a.shape, _elem_strides(a), a.dtype.name,
                               self.device, versioned=False)


def _fake_cuda(array, **kw) -> HostExport:
    return HostExport(array, device=(dl.KDL_CUDA, 0), **kw)


def _released(ref) -> bool:
    gc.collect()
    return ref() is None


# ---- dtype names


@pytest.mark.parametrize("code,bits,lanes,name", [
    (2, 32, 1, "float32"), (2, 16, 1, "float16"), (4, 16, 1, "bfloat16"), (2, 64, 1, "float64"),
    (0, 32, 1, "int32"), (1, 8, 1, "uint8"), (5, 64, 1, "complex64"), (6, 8, 1, "bool"),
    (10, 8, 1, "float8_e4m3fn"), (17, 4, 1, "float4_e2m1fn"), (2, 32, 4, "float32x4"),
    (99, 8, 1, "dlpack_code99_8bit"),
])
def test_dtype_names(code, bits, lanes, name):
    assert dl.dtype_name(code, bits, lanes) == name


@pytest.mark.parametrize("name", ["float16", "float32", "bfloat16", "float64", "int8", "uint32",
                                  "complex128", "bool"])
def test_dtype_round_trip(name):
    assert dl.dtype_name(*dl.dl_dtype(name)) == name


def test_dtype_without_code():
    with pytest.raises(ValueError, match="'float8_e4m3fn' has no DLPack type code"):
        dl.dl_dtype("float8_e4m3fn")


# ---- reading NumPy's own capsules


def _views():
    a = np.arange(7 * 10, dtype=np.float32).reshape(7, 10)
    return {
        "contiguous": a,
        "transposed": a.T,
        "offset": a[2:, 3:],
        "steps": a[1::2, ::3],
        "reversed": a[::-1],
        "batched": np.arange(60, dtype=np.float16).reshape(3, 4, 5)[:, 1:, ::2],
        "0-d": np.array(3.0, dtype=np.float32),
        "empty": np.zeros((0, 4), dtype=np.float32),
    }


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
@pytest.mark.parametrize("name", list(_views()))
def test_numpy_capsules(name, versioned):
    x = _views()[name]
    capsule = x.__dlpack__(max_version=(1, 0)) if versioned else x.__dlpack__()
    d = dl.capsule_operand(x, capsule, "a", accept=(dl.KDL_CPU,))
    assert d.array is x and d.keepalive is capsule
    if x.size:
        assert d.ptr == x.ctypes.data
    assert d.shape == x.shape
    assert d.strides == tuple(_elem_strides(x))
    assert (d.dtype, d.itemsize, d.device, d.readonly) == (x.dtype.name, x.itemsize, 0, False)


def test_numpy_read_only_flag():
    x = np.ones((3, 4), np.float32)
    x.flags.writeable = False
    d = dl.capsule_operand(x, x.__dlpack__(max_version=(1, 0)), "a", accept=(dl.KDL_CPU,))
    assert d.readonly


def test_capsule_without_strides_is_c_contiguous():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    capsule = dl.make_capsule(x, x.ctypes.data, x.shape, (12, 4, 1), "float32", (1, 0))
    managed = dl.DLManagedTensorVersioned.from_address(
        dl._CAPSULE_POINTER(capsule, b"dltensor_versioned"))
    managed.dl_tensor.strides = None  # NULL: "compact and row-major"
    assert dl.capsule_operand(x, capsule, "a", accept=(dl.KDL_CPU,)).strides == (12, 4, 1)


# ---- the consumer path end to end on a producer that claims CUDA


def test_describe_dlpack_asks_versioned_with_our_stream():
    x = np.arange(12, dtype=np.float16).reshape(3, 4)[:, 1:]
    producer = HostExport(x, device=(dl.KDL_CUDA, 3))
    d = dl.describe_dlpack(producer, "b", 0x7F00)
    assert producer.calls == [{"stream": 0x7F00, "max_version": (1, 0)}]
    assert (d.ptr, d.shape, d.strides, d.dtype, d.device) == (x.ctypes.data, (3, 3), (4, 1),
                                                              "float16", 3)
    dl.describe_dlpack(producer, "b", 0)
    assert producer.calls[-1]["stream"] == 1  # 0 is disallowed by the protocol: legacy = 1
    dl.describe_dlpack(producer, "b", 2)
    assert producer.calls[-1]["stream"] == 1  # PyTorch refuses 2; legacy orders it too


def test_describe_dlpack_legacy_producer():
    x = np.ones((2, 5), np.float32)
    producer = LegacyProducer(x, device=(dl.KDL_CUDA, 0))
    d = dl.describe_dlpack(producer, "a", 0x7F00)
    assert producer.calls == [{"stream": 0x7F00}]
    assert d.shape == (2, 5) and not d.readonly


def test_describe_dlpack_read_only_producer():
    producer = HostExport(np.ones((2, 2), np.float32), device=(dl.KDL_CUDA, 0), readonly=True)
    assert dl.describe_dlpack(producer, "out", 2).readonly


def test_managed_memory_is_accepted():
    producer = HostExport(np.ones(3, np.float32), device=(dl.KDL_CUDA_MANAGED, 1))
    assert dl.describe_dlpack(producer, "a", 2).device == 1


class _Claims:
    def __init__(self, device, result=None):
        self.device, self.result = device, result

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, **kwargs):
        return self.result


@pytest.mark.parametrize("device,msg", [
    ((1, 0), r"a must be GPU memory \(DLPack kDLCUDA or kDLCUDAManaged\); got an array on kDLCPU"),
    ((10, 1), "got an array on kDLROCM"),
    ((3, 0), "got an array on kDLCUDAHost"),
    ((42, 0), "got an array on device type 42"),
])
def test_refuses_other_devices(device, msg):
    with pytest.raises(TypeError, match=msg):
        dl.describe_dlpack(_Claims(device), "a", 2)


def test_refuses_host_numpy_on_device_route():
    with pytest.raises(TypeError, match="for host memory pass a NumPy array"):
        dl.describe_dlpack(np.ones(3, np.float32), "b", 2)


def test_refuses_malformed_exports():
    with pytest.raises(TypeError, match=r"__dlpack_device__\(\) must return \(device_type, "):
        dl.describe_dlpack(_Claims("cuda"), "a", 2)
    with pytest.raises(TypeError, match="must return an unconsumed DLPack capsule.*builtins.int"):
        dl.describe_dlpack(_Claims((2, 0), 42), "a", 2)
    x = np.ones(3, np.float32)
    used = x.__dlpack__()
    np.from_dlpack(_Claims((1, 0), used))  # consumes it: renamed "used_dltensor"
    with pytest.raises(TypeError, match="a capsule named 'used_dltensor'"):
        dl.describe_dlpack(_Claims((2, 0), used), "b", 2)


def test_refuses_tensor_on_other_device_than_announced():
    x = np.ones(3, np.float32)
    capsule = dl.make_capsule(x, x.ctypes.data, (3,), (1,), "float32", (1, 0))
    with pytest.raises(TypeError, match="got an array on kDLCPU"):
        dl.describe_dlpack(_Claims((2, 0), capsule), "a", 2)


def test_refuses_other_major_version():
    x = np.ones(3, np.float32)
    capsule = dl.make_capsule(x, x.ctypes.data, (3,), (1,), "float32", (2, 0))
    dl.DLManagedTensorVersioned.from_address(
        dl._CAPSULE_POINTER(capsule, b"dltensor_versioned")).version.major = 2
    with pytest.raises(BufferError, match="DLPack 2.0 tensor; only version 1.x"):
        dl.describe_dlpack(_Claims((2, 0), capsule), "a", 2)


# ---- __cuda_array_interface__


def _interface(**kw):
    base = {"shape": (3, 4), "typestr": "<f4", "data": (0x10000, False), "version": 3,
            "strides": None}
    base.update(kw)
    return base


def test_interface_c_contiguous_when_strides_none():
    d, stream = dl.read_cuda_array_interface(_interface(shape=(2, 3, 4)), "a")
    assert (d.ptr, d.shape, d.strides, d.dtype, d.itemsize) == (0x10000, (2, 3, 4), (12, 4, 1),
                                                                "float32", 4)
    assert stream is None and not d.readonly


def test_interface_byte_strides():
    d, _ = dl.read_cuda_array_interface(_interface(strides=(32, 4)), "a")
    assert d.strides == (8, 1)
    odd = _interface(strides=(10, 4))
    d, _ = dl.read_cuda_array_interface(odd, "a")
    assert d.strides is None  # not whole elements: the core copies it
    assert dl.interface_byte_strides(odd) == (10, 4)
    assert dl.interface_byte_strides(_interface(typestr="<f2")) == (8, 2)


@pytest.mark.parametrize("typestr,name", [
    ("<f2", "float16"), ("<f4", "float32"), ("=f8", "float64"), ("|u1", "uint8"),
    (">u1", "uint8"), ("<i4", "int32"), ("<c8", "complex64"), ("|b1", "bool"),
    ("<V2", "void16"), ("<M8", "M8"),
])
def test_interface_dtypes(typestr, name):
    assert dl.read_cuda_array_interface(_interface(typestr=typestr), "a")[0].dtype == name


def test_interface_refusals():
    with pytest.raises(ValueError, match=r"b must be in native \(little-endian\) byte order.*>f4"):
        dl.read_cuda_array_interface(_interface(typestr=">f4"), "b")
    with pytest.raises(TypeError, match="a must not be a masked array"):
        dl.read_cuda_array_interface(_interface(mask=object()), "a")
    with pytest.raises(TypeError, match="typestr must look like '<f4'; got 'float32'"):
        dl.read_cuda_array_interface(_interface(typestr="float32"), "a")
    with pytest.raises(TypeError, match=r"data must be \(pointer, read_only\)"):
        dl.read_cuda_array_interface(_interface(data=0x1000), "a")
    with pytest.raises(ValueError, match="stream 0, which the protocol disallows"):
        dl.read_cuda_array_interface(_interface(stream=0), "a")
    with pytest.raises(TypeError, match="must be a dict"):
        dl.read_cuda_array_interface([1, 2], "a")


def test_interface_read_only_and_stream():
    d, stream = dl.read_cuda_array_interface(_interface(data=(0x2000, True), stream=0x7000), "out")
    assert d.readonly and stream == 0x7000
    v2 = _interface(version=2)
    v2.pop("strides")
    assert dl.read_cuda_array_interface(v2, "a")[1] is None


class _InterfaceOnly:
    def __init__(self, interface):
        self.__cuda_array_interface__ = interface


def test_describe_interface_orders_after_producer(monkeypatch):
    waits = []
    monkeypatch.setattr(_device, "pointer_device", lambda ptr: 1)
    monkeypatch.setattr(_device, "order_after", lambda *args: waits.append(args))
    x = _InterfaceOnly(_interface(stream=0x7000))
    d = dl.describe_cuda_array_interface(x, "a", 2)
    assert d.array is x and d.device == 1
    assert waits == [(0x7000, 2, 1)]
    dl.describe_cuda_array_interface(_InterfaceOnly(_interface()), "a", 2)
    assert len(waits) == 1  # no stream key: nothing to wait for


def test_describe_interface_pointer_cuda_does_not_know(monkeypatch):
    def unknown(ptr):
        raise RuntimeError("cutematmul: cuPointerGetAttribute failed with "
                           "CUDA_ERROR_INVALID_VALUE.")

    monkeypatch.setattr(_device, "pointer_device", unknown)
    with pytest.raises(ValueError, match="b.__cuda_array_interface__ points at 0x10000, which is "
                                         "not memory CUDA knows"):
        dl.describe_cuda_array_interface(_InterfaceOnly(_interface()), "b", 2)
    monkeypatch.setattr(_device, "current_device", lambda: 0)
    empty = _InterfaceOnly(_interface(shape=(0, 4), data=(0, False)))
    assert dl.describe_cuda_array_interface(empty, "b", 2).device == 0  # no pointer to ask about


# ---- our exporter, consumed by numpy.from_dlpack


@pytest.mark.parametrize("legacy", [False, True], ids=["versioned", "legacy"])
def test_export_consumed_by_numpy(legacy):
    base = np.arange(30, dtype=np.float32).reshape(5, 6)
    producer = HostExport(base[1:, ::2].T, legacy=legacy)
    ref = weakref.ref(producer.owner)
    y = np.from_dlpack(producer)
    assert producer.calls[0]["max_version"] is not None  # numpy asks for a versioned capsule
    np.testing.assert_array_equal(y, base[1:, ::2].T)
    base[1, 0] = -1.0
    assert y[0, 0] == -1.0  # the same memory, not a copy
    del producer
    assert not _released(ref)  # y keeps the export alive
    del y
    assert _released(ref)


def test_export_read_only():
    producer = HostExport(np.ones((2, 3), np.float32), readonly=True)
    y = np.from_dlpack(producer)
    assert not y.flags.writeable
    with pytest.raises(BufferError, match="read-only array can only be exported to a DLPack >="):
        HostExport(np.ones(2, np.float32), readonly=True, legacy=True).__dlpack__()


@pytest.mark.parametrize("max_version", [(1, 0), None])
def test_unconsumed_capsule_releases_the_export(max_version):
    producer = HostExport(np.ones(4, np.float32))
    ref = weakref.ref(producer.owner)
    capsule = producer.__dlpack__(max_version=max_version)
    d = dl.capsule_operand(None, capsule, "a", accept=(dl.KDL_CPU,))
    del producer, capsule
    assert not _released(ref)  # the Operand's keepalive is the capsule
    del d
    assert _released(ref)


def test_consumer_failing_with_our_capsule_releases_it(monkeypatch):
    """NumPy refuses bfloat16 after taking the capsule: our destructor runs with NumPy's error
    pending; the export must still be released, and the error reported."""
    ml_dtypes = require_module("ml_dtypes")
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda args: reported.append(args.exc_value))
    producer = HostExport(np.ones(3, ml_dtypes.bfloat16))
    ref = weakref.ref(producer.owner)
    with pytest.raises(Exception):  # noqa: B017 - NumPy's error surfaces as SystemError
        np.from_dlpack(producer)
    del producer
    assert _released(ref)
    assert reported and "while a DLPack consumer was raising" in str(reported[0])


def test_callbacks_survive_interpreter_shutdown():
    """Exports alive at exit (unconsumed, consumed, a DeviceArray whose free would fail) must
    not crash or complain while the interpreter shuts down."""
    code = """
import numpy as np
import cutematmul.device as dev
import cutematmul.dlpack as dl

def refuse(*args):
    raise RuntimeError("freed during shutdown")

dev.free_async = refuse
BUF = np.arange(4, dtype=np.float32)
UNCONSUMED = dl.make_capsule(BUF, BUF.ctypes.data, (4,), (1,), "float32", (1, 0))

class Producer:
    def __dlpack_device__(self):
        return (1, 0)
    def __dlpack__(self, **kwargs):
        return dl.make_capsule(BUF, BUF.ctypes.data, (4,), (1,), "float32", (1, 0))

CONSUMED = np.from_dlpack(Producer())
memory = dl._Allocation.__new__(dl._Allocation)
memory.ptr, memory.device, memory.stream = 0x1000, 0, 2
ARRAY = dl.DeviceArray._view_of(memory, 0x1000, (4,), (1,), "float32", 4)
EXPORT = ARRAY.__dlpack__(stream=-1, max_version=(1, 0))
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok" and proc.stderr == ""


# ---- DeviceArray without a GPU: views over host memory (nothing is allocated or freed)


def _memory(stream=2, device=0):
    return types.SimpleNamespace(stream=stream, device=device)


def _device_array(host: np.ndarray, memory=None, dtype=None) -> dl.DeviceArray:
    return dl.DeviceArray._view_of(memory or _memory(), host.ctypes.data, host.shape,
                                   _elem_strides(host), dtype or host.dtype.name, host.itemsize)


def test_device_array_properties():
    host = np.zeros((3, 5), np.float32)
    x = _device_array(host, _memory(stream=0x7000, device=1))
    assert (x.shape, x.ndim, x.size, x.strides, x.itemsize) == ((3, 5), 2, 15, (20, 4), 4)
    assert (x.dtype, x.device, x.stream, x.ptr, len(x)) == (np.float32, 1, 0x7000,
                                                             host.ctypes.data, 3)
    assert "DeviceArray(shape=(3, 5), dtype=float32, device=1" in repr(x)
    bf16 = _device_array(np.zeros(2, np.uint16), dtype="bfloat16")
    ml_dtypes = require_module("ml_dtypes")
    assert bf16.dtype == np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("key", [
    (Ellipsis, slice(None, 3)), 0, (slice(1, None), slice(None, None, 2)), slice(None, None, -1),
    (None, 0), (Ellipsis, 1), (slice(None), -1), (1, 2, 3), (Ellipsis, slice(5, 5)), (),
    (slice(None), None, slice(2, -1)), np.int64(1),
])
def test_device_array_basic_indexing(key):
    host = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6)
    as_tuple = key if isinstance(key, tuple) else (key,)
    view_key = as_tuple if Ellipsis in as_tuple else as_tuple + (Ellipsis,)  # 0-d: a view
    view, expected = _device_array(host)[key], host[view_key]
    assert view.shape == expected.shape
    assert view.strides == expected.strides
    if expected.size:
        assert view.ptr == expected.ctypes.data


@pytest.mark.parametrize("key,exc,msg", [
    ((0, 0, 0, 0), IndexError, "too many indices"),
    ((Ellipsis, Ellipsis), IndexError, "single ellipsis"),
    (5, IndexError, "index 5 is out of bounds for axis 0 with size 2"),
    (True, TypeError, "basic indexing only"),
    ([0, 1], TypeError, "basic indexing only"),
    (np.array([0, 1]), TypeError, "basic indexing only"),
])
def test_device_array_bad_indexing(key, exc, msg):
    with pytest.raises(exc, match=msg):
        _device_array(np.zeros((2, 4, 6), np.float32))[key]


def test_device_array_cuda_array_interface():
    host = np.zeros((4, 6), np.float16)
    x = _device_array(host, _memory(stream=0))
    assert x.__cuda_array_interface__ == {
        "shape": (4, 6), "typestr": "<f2", "data": (host.ctypes.data, False), "version": 3,
        "strides": None, "stream": 1,
    }
    assert x[:, 1:].__cuda_array_interface__["strides"] == (12, 2)
    bf16 = _device_array(np.zeros(2, np.uint16), dtype="bfloat16")
    assert not hasattr(bf16, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="bfloat16 has no __cuda_array_interface__"):
        bf16.__cuda_array_interface__


def test_device_array_dlpack_versions(monkeypatch):
    monkeypatch.setattr(_device, "order_after", lambda *args: pytest.fail("must not order"))
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = _device_array(host, _memory(device=3))
    assert x.__dlpack_device__() == (dl.KDL_CUDA, 3)
    for max_version, name in [((1, 0), b"dltensor_versioned"), ((1, 3), b"dltensor_versioned"),
                              (None, b"dltensor"), ((0, 8), b"dltensor")]:
        capsule = x[1:, ::2].__dlpack__(stream=-1, max_version=max_version)
        assert dl._CAPSULE_IS_VALID(capsule, name)
        d = dl.capsule_operand(None, capsule, "a")
        assert (d.ptr, d.shape, d.strides, d.dtype, d.device) == (host[1:, ::2].ctypes.data,
                                                                  (3, 3), (6, 2), "float32", 3)
    x.__dlpack__(stream=2)  # our own stream: nothing to order


def test_device_array_dlpack_orders_consumer_stream(monkeypatch):
    waits = []
    monkeypatch.setattr(_device, "order_after", lambda *args: waits.append(args))
    x = _device_array(np.zeros(4, np.float32), _memory(stream=0x7000, device=1))
    x.__dlpack__(stream=0x9000)
    x.__dlpack__()  # None: the legacy default stream
    assert waits == [(0x7000, 0x9000, 1), (0x7000, 1, 1)]
    assert x.stream == 0x7000  # exporting does not move the array's stream


@pytest.mark.parametrize("kwargs,exc,msg", [
    ({"copy": True}, BufferError, "copy=True is not supported"),
    ({"dl_device": (1, 0)}, BufferError, r"dl_device=\(1, 0\) cannot be served"),
    ({"stream": 0}, ValueError, "stream 0 is ambiguous"),
    ({"stream": 3}, ValueError, "cannot be a CUDA stream"),
])
def test_device_array_dlpack_refusals(kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        _device_array(np.zeros(4, np.float32)).__dlpack__(**kwargs)


def test_device_array_dlpack_accepts_own_device_and_no_copy():
    x = _device_array(np.zeros(4, np.float32))
    assert dl._CAPSULE_IS_VALID(x.__dlpack__(stream=-1, dl_device=(2, 0), copy=False),
                                b"dltensor")


def test_device_array_export_keeps_it_alive():
    view = _device_array(np.zeros(4, np.float32))[1:]
    ref = weakref.ref(view)
    capsule = view.__dlpack__(stream=-1, max_version=(1, 0))
    del view
    assert not _released(ref)  # the capsule's holder keeps the exported array
    del capsule
    assert _released(ref)


def test_describe_device_array_moves_its_stream(monkeypatch):
    waits = []
    monkeypatch.setattr(_device, "order_after", lambda *args: waits.append(args))
    memory = _memory(stream=2, device=0)
    x = _device_array(np.zeros((2, 3), np.float32), memory)
    d = dl.describe_device_array(x, 2)
    assert waits == [] and (d.array, d.shape, d.strides, d.dtype) == (x, (2, 3), (3, 1), "float32")
    dl.describe_device_array(x[0], 0x7000)
    assert waits == [(2, 0x7000, 0)] and memory.stream == 0x7000 and x.stream == 0x7000


def test_allocation_frees_on_its_stream(monkeypatch):
    freed = []
    monkeypatch.setattr(_device, "free_async", lambda ptr, stream: freed.append((ptr, stream)))
    monkeypatch.setattr(_device, "using_device", lambda index: contextlib.nullcontext())
    for stream in (2, 0x7000, 0):
        memory = dl._Allocation.__new__(dl._Allocation)
        memory.ptr, memory.device, memory.stream = 0x1000, 0, stream
        del memory
    never_allocated = dl._Allocation.__new__(dl._Allocation)
    never_allocated.ptr = 0
    del never_allocated
    # per-thread default stream -> legacy (waits for every thread's per-thread stream)
    assert freed == [(0x1000, 1), (0x1000, 0x7000), (0x1000, 0)]


# ---- the copy planner, executed on host bytes


def _strided(buffer: np.ndarray, offset: int, shape, strides, dtype) -> np.ndarray:
    return np.ndarray(shape, dtype, buffer=buffer, offset=offset, strides=strides)


def _run_plan(plan, dst_buf, dst_off, src_buf, src_off):
    for do, dp, so, sp, width, height in plan:
        assert width >= 1 and height >= 1
        assert height == 1 or (dp >= width and sp >= width)  # cudaMemcpy2D's pitch rule
        for r in range(height):
            d, s = dst_off + do + r * dp, src_off + so + r * sp
            dst_buf[d:d + width] = src_buf[s:s + width]


def _padded_rows(a):
    if not a.ndim:
        return a
    return np.zeros(a.shape[:-1] + (a.shape[-1] + 3,), a.dtype)[..., :a.shape[-1]]


def _steps(a):
    every_other = tuple(slice(None, None, 2) for _ in a.shape) + (Ellipsis,)  # 0-d: a view
    return np.zeros(tuple(2 * n for n in a.shape), a.dtype)[every_other]


def _reversed(axis):
    def layout(a):
        if a.ndim < -axis:
            return a
        flip = (Ellipsis, slice(None, None, -1)) + (slice(None),) * (-axis - 1)
        return np.ascontiguousarray(a[flip])[flip]
    return layout


_LAYOUTS = {  # name -> function(C-contiguous array) -> a view of the same shape, other strides
    "c": lambda a: a,
    "transposed": lambda a: a.swapaxes(-1, -2).copy().swapaxes(-1, -2) if a.ndim >= 2 else a,
    "padded-rows": _padded_rows,
    "steps": _steps,
    "reversed": _reversed(-2),
    "reversed-cols": _reversed(-1),
}


def _in_buffer(view: np.ndarray):
    """(byte buffer, offset of view's first element) of the memory a view spans."""
    base = view
    while base.base is not None and isinstance(base.base, np.ndarray):
        base = base.base
    raw = base.reshape(-1).view(np.uint8)
    return raw, view.ctypes.data - base.ctypes.data


@pytest.mark.parametrize("shape", [(5, 7), (3, 4, 6), (1, 9), (9, 1), (8,), (), (0, 4)])
@pytest.mark.parametrize("src_layout", list(_LAYOUTS))
@pytest.mark.parametrize("dst_layout", ["c", "padded-rows", "transposed", "steps", "reversed"])
def test_copy_plan(shape, src_layout, dst_layout):
    values = (np.arange(int(np.prod(shape)), dtype=np.float32) + 1).reshape(shape)
    src = _LAYOUTS[src_layout](values.copy())
    src[...] = values
    dst = _LAYOUTS[dst_layout](np.zeros_like(values))
    dst[...] = 0
    dst_buf, dst_off = _in_buffer(dst)
    untouched = dst_buf.copy()
    src_buf, src_off = _in_buffer(src)
    plan = copy_plan(shape, dst.strides, src.strides, 4)
    _run_plan(plan, dst_buf, dst_off, src_buf, src_off)
    np.testing.assert_array_equal(dst, values)
    outside = np.ones(dst_buf.shape, bool)
    for index in np.ndindex(*shape):
        at = dst_off + sum(i * s for i, s in zip(index, dst.strides))
        outside[at:at + 4] = False
    np.testing.assert_array_equal(dst_buf[outside], untouched[outside])


def test_copy_plan_call_counts():
    assert len(copy_plan((64, 48), (4 * 56, 4), (4 * 48, 4), 4)) == 1  # rows, any pitch
    assert len(copy_plan((64, 48), (4, 4 * 64), (4, 4 * 70), 4)) == 1  # columns
    slow = copy_plan((2, 64, 48), (4 * 56 * 64, 4 * 56, 4), (4 * 48, 4, 4 * 2 * 48), 4)
    assert len(slow) == 2 * 48  # one per column and matrix
    assert copy_plan((3, 0, 4), (0, 0, 0), (0, 0, 0), 4) == []
    broadcast = copy_plan((3, 4), (16, 4), (0, 4), 4)  # a repeated row: one copy per row
    assert len(broadcast) == 3 and all(c[-1] == 1 for c in broadcast)


@pytest.mark.parametrize("shape,strides,expected", [
    ((3, 4), (16, 4), (0, 48)),
    ((3, 4), (4, 12), (0, 48)),
    ((3, 4), (-16, 4), (-32, 48)),
    ((3, 4), (32, 4), None),
    ((3, 1, 4), (16, 999, 4), (0, 48)),
    ((0, 4), (16, 4), (0, 0)),
    ((2, 2), (4, 4), None),
])
def test_dense_extent(shape, strides, expected):
    assert dense_extent(shape, strides, 4) == expected


# ---- the generic adapter end to end on a fake device (host memory standing in for the GPU)


@pytest.fixture
def fake_device(monkeypatch):
    """cutematmul.device over host memory; returns what was called."""
    buffers, log = {}, {"free": [], "order": [], "copies": 0, "memsets": 0}

    def alloc_async(nbytes, stream):
        buf = np.full(max(nbytes, 1), 0x7F, np.uint8)  # poison: 3.4e38 as float32
        buffers[buf.ctypes.data] = buf
        return buf.ctypes.data

    def free_async(ptr, stream):
        buffers.pop(ptr)
        log["free"].append(stream)

    def copy_2d_async(dst, dst_pitch, src, src_pitch, width, height, kind, stream):
        assert kind == "device_to_device"
        assert height == 1 or min(dst_pitch, src_pitch) >= width
        log["copies"] += 1
        for r in range(height):
            ctypes.memmove(dst + r * dst_pitch, src + r * src_pitch, width)

    def memset_async(ptr, nbytes, stream):
        log["memsets"] += 1
        ctypes.memset(ptr, 0, nbytes)

    for name, fn in [("alloc_async", alloc_async), ("free_async", free_async),
                     ("copy_2d_async", copy_2d_async), ("memset_async", memset_async),
                     ("order_after", lambda *args: log["order"].append(args)),
                     ("using_device", lambda index: contextlib.nullcontext()),
                     ("current_device", lambda: 0), ("pointer_device", lambda ptr: 0)]:
        monkeypatch.setattr(_device, name, fn)
    yield log
    gc.collect()  # arrays kept by a traceback cycle are freed while the fake device is in place


def _host(x) -> np.ndarray:
    """NumPy view of a DeviceArray whose memory is host memory (the fake device's)."""
    d = ADAPTER.describe(x)
    strides = [s * d.itemsize for s in d.strides]
    low = sum((n - 1) * s for n, s in zip(d.shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(d.shape, strides) if s > 0) + d.itemsize
    raw = (ctypes.c_char * (high - low)).from_address(d.ptr + low)
    return np.ndarray(d.shape, dl.numpy_dtype(d.dtype), buffer=raw, offset=-low, strides=strides)


def test_adapter_device_array_lifecycle(fake_device):
    x = dl.DeviceArray((3, 4), "float16", device=0, stream=2)
    assert x.dtype == np.float16 and x.stream == 2
    view = x[..., :2]
    del x
    gc.collect()
    assert fake_device["free"] == []  # the view holds the memory
    del view
    gc.collect()
    assert fake_device["free"] == [1]  # per-thread stream memory is freed on the legacy stream


@pytest.mark.parametrize("src_layout", ["c", "transposed", "steps", "reversed"])
def test_adapter_copy_and_padded_copy(fake_device, src_layout):
    values = np.arange(2 * 5 * 7, dtype=np.float32).reshape(2, 5, 7)
    src = _LAYOUTS[src_layout](values.copy())
    src[...] = values
    producer = _fake_cuda(src)  # DLPack only: no shape, no dtype attribute on the wrapper
    padded = ADAPTER.padded_copy(producer, 4)
    assert isinstance(padded, dl.DeviceArray)
    assert padded.shape == (2, 5, 7) and padded.strides == (4 * 8 * 5, 4 * 8, 4)
    np.testing.assert_array_equal(_host(padded), values)
    assert producer.calls and all(c["stream"] == 1 for c in producer.calls)  # default: legacy


def test_adapter_copy_into_strided_out(fake_device):
    out_host = np.full((4, 9), -1.0, np.float32)
    out = _fake_cuda(out_host[:, 1:6])
    src = dl.DeviceArray((4, 5), "float32", device=0, stream=2)
    _host(src)[...] = np.arange(20, dtype=np.float32).reshape(4, 5)
    ADAPTER.copy(out, src)
    np.testing.assert_array_equal(out_host[:, 1:6], np.arange(20).reshape(4, 5))
    assert (out_host[:, [0, 6, 7, 8]] == -1).all()


def test_adapter_copy_from_interface_with_byte_strides(fake_device):
    raw = np.arange(64, dtype=np.uint8)
    src = _InterfaceOnly({"shape": (3, 2), "typestr": "|u1", "data": (raw.ctypes.data, False),
                          "version": 3, "strides": (7, 3)})
    dst = dl.DeviceArray((3, 2), "uint8", device=0, stream=2)
    ADAPTER.copy(dst, src)
    np.testing.assert_array_equal(_host(dst), [[0, 3], [7, 10], [14, 17]])
    odd = np.zeros(64, np.uint8)
    f32 = _InterfaceOnly({"shape": (2, 2), "typestr": "<f4", "data": (odd.ctypes.data + 1, False),
                          "version": 3, "strides": (10, 4)})
    np.ndarray((2, 2), np.float32, buffer=odd, offset=1, strides=(10, 4))[...] = [[1, 2], [3, 4]]
    assert ADAPTER.describe(f32).strides is None
    dst = dl.DeviceArray((2, 2), "float32", device=0, stream=2)
    ADAPTER.copy(dst, f32)
    np.testing.assert_array_equal(_host(dst), [[1, 2], [3, 4]])


def test_adapter_refuses_read_only_destination(fake_device):
    out = _fake_cuda(np.zeros((2, 2), np.float32), readonly=True)
    src = dl.DeviceArray((2, 2), "float32", device=0, stream=2)
    with pytest.raises(ValueError, match="out must be writable; the array is read-only"):
        ADAPTER.copy(out, src)
    with pytest.raises(ValueError, match="read-only"):
        ADAPTER.fill_zero(out)


def test_adapter_fill_zero(fake_device):
    dense = dl.DeviceArray((3, 4), "float32", device=0, stream=2)
    ADAPTER.fill_zero(dense.__getitem__((slice(None, None, -1),)))  # dense in another order
    assert (_host(dense) == 0).all() and fake_device["memsets"] == 1
    host = np.full((3, 6), 7.0, np.float32)
    ADAPTER.fill_zero(_fake_cuda(host[:, ::2]))  # not dense: zeros copied in
    np.testing.assert_array_equal(host, np.tile([0.0, 7.0], (3, 3)))


def test_adapter_empty(fake_device):
    like = _fake_cuda(np.zeros((2, 3), np.float16))
    x = ADAPTER.empty((4, 5), like)
    assert isinstance(x, dl.DeviceArray) and x.shape == (4, 5) and x.dtype == np.float16
    made = []

    class WithNamespace:
        dtype, device = "float16", "cuda:0"

        def __array_namespace__(self, api_version=None):
            return types.SimpleNamespace(empty=lambda *a, **kw: made.append((a, kw)) or "theirs")

    assert ADAPTER.empty([4, 5], WithNamespace()) == "theirs"
    assert made == [(((4, 5),), {"dtype": "float16", "device": "cuda:0"})]


def test_adapter_streams(fake_device):
    producer = _fake_cuda(np.zeros(3, np.float32))
    assert ADAPTER.current_stream(0) == 2
    with ADAPTER.on_stream(0x7000, 0):
        assert ADAPTER.current_stream(0) == 0x7000
        ADAPTER.describe(producer)
        x = ADAPTER.empty((2,), producer)
    assert ADAPTER.current_stream(0) == 2
    assert [c["stream"] for c in producer.calls] == [0x7000, 0x7000]
    assert x.stream == 0x7000
    ADAPTER.describe(producer, "a", 0x9000)  # a caller-named stream wins
    assert producer.calls[-1]["stream"] == 0x9000
    ADAPTER.describe(x)  # used on the per-thread stream now: ordered after 0x7000, and moved
    assert fake_device["order"][-1] == (0x7000, 2, 0) and x.stream == 2


def test_adapter_refuses_other_objects():
    with pytest.raises(TypeError, match="a must be an array with __dlpack__ and __dlpack_device__"):
        ADAPTER.describe(object())


# ---- adapter_for


class _DlpackOnlyType:
    def __dlpack__(self, **kwargs):
        raise AssertionError("not called")

    def __dlpack_device__(self):
        return (2, 0)


def test_adapter_for_generic_arrays():
    assert adapter_for(_DlpackOnlyType()) is ADAPTER
    assert _by_type[_DlpackOnlyType] is ADAPTER
    assert adapter_for(_InterfaceOnly(_interface())) is ADAPTER
    assert adapter_for(_device_array(np.zeros(2, np.float32))) is ADAPTER
    assert adapter_for(np.zeros(2, np.float32)).name == "numpy"  # named adapters first


@pytest.mark.parametrize("x", [[1.0], "x", object(), 3.0])
def test_adapter_for_refuses_others(x):
    with pytest.raises(TypeError, match="b must be a CuPy, PyTorch, NumPy or JAX array, or any "
                                        "array with __dlpack__ or __cuda_array_interface__; got "):
        adapter_for(x, "b")


def test_matmul_refuses_before_any_gpu_work(fake_device):
    a, b = _fake_cuda(np.ones((2, 3), np.float32)), _fake_cuda(np.ones((3, 2), np.float32))
    with pytest.raises(TypeError, match="a must have dtype float32, float16 or bfloat16; "
                                        "got float64"):
        cutematmul.matmul(_fake_cuda(np.ones((2, 3))), _fake_cuda(np.ones((3, 2))))
    with pytest.raises(ValueError, match="out is read-only"):
        cutematmul.matmul(a, b, out=_fake_cuda(np.ones((2, 2), np.float32), readonly=True))
    host = np.ones((2, 2), np.float32)
    read_only = _InterfaceOnly({"shape": (2, 2), "typestr": "<f4", "version": 3,
                                "data": (host.ctypes.data, True), "strides": None})
    with pytest.raises(ValueError, match="out is read-only"):
        cutematmul.matmul(a, b, out=read_only)
    with pytest.raises(TypeError, match="b must be a CuPy, PyTorch, NumPy or JAX array, or any "):
        cutematmul.matmul(a, [[1.0], [2.0], [3.0]])
    assert fake_device == {"free": [], "order": [], "copies": 0, "memsets": 0}


def test_core_dtype_check_names_what_came():
    a = ADAPTER.describe(_fake_cuda(np.ones((2, 3), np.float64)))
    b = ADAPTER.describe(_fake_cuda(np.ones((3, 2), np.complex64)))
    with pytest.raises(TypeError, match="a must have dtype float32, float16 or bfloat16; "
                                        "got float64"):
        check_dtypes(a.dtype, b.dtype)
    with pytest.raises(TypeError, match="b must have dtype .* got complex64"):
        check_dtypes("float32", b.dtype)


# =====================================================================================
# GPU tests: CuPy and PyTorch memory behind wrappers that speak one protocol only


class DlpackOnly:
    """Speaks only DLPack: no shape, no dtype.  ``producer`` (a torch stream) is made current
    while the wrapped tensor exports, so its pending work is what the export orders."""

    def __init__(self, x, producer=None):
        self._x, self._producer = x, producer

    def __dlpack_device__(self):
        return self._x.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        if self._producer is None:
            return self._x.__dlpack__(**kwargs)
        import torch

        with torch.cuda.stream(self._producer):
            return self._x.__dlpack__(**kwargs)


class InterfaceOnly:
    """Speaks only ``__cuda_array_interface__`` (v3, with ``stream`` when given)."""

    def __init__(self, x, stream=None, readonly=False):
        self._x, self._stream, self._readonly = x, stream, readonly

    @property
    def __cuda_array_interface__(self):
        interface = dict(self._x.__cuda_array_interface__)
        interface["version"] = 3
        interface["data"] = (interface["data"][0], self._readonly)
        if self._stream is not None:
            interface["stream"] = self._stream
        return interface


class WithNamespace(DlpackOnly):
    """DLPack plus a tiny Array API namespace whose ``empty`` allocates with CuPy."""

    def __init__(self, x):
        super().__init__(x)
        self.dtype, self.device = x.dtype, x.device

    def __array_namespace__(self, api_version=None):
        import cupy

        return types.SimpleNamespace(empty=lambda shape, dtype, device: cupy.empty(shape, dtype))


class ReadOnlyDlpack:
    """A DLPack export of library memory with the read-only flag set."""

    def __init__(self, x):
        self._x = x

    def __dlpack_device__(self):
        return self._x.__dlpack_device__()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        d = dl.describe_dlpack(self._x, "x", 2 if stream is None else stream)
        device = self.__dlpack_device__()
        return dl.make_capsule(self._x, d.ptr, d.shape, d.strides, d.dtype,
                               (int(device[0]), int(device[1])), readonly=True)


def _maker(lib: str, dtype: str, seed: int = 0) -> Maker:
    require_module(lib)
    mk = Maker(lib, seed)
    try:
        mk.randn((1, 1), dtype).__dlpack__(stream=1, max_version=(1, 0))
    except Exception as exc:  # e.g. a CuPy without bfloat16 arrays or bfloat16 DLPack export
        pytest.skip(f"{lib} cannot make and export {dtype} arrays here "
                    f"({type(exc).__name__}: {exc})")
    return mk


def _back(lib: str, result):
    """A DeviceArray as the library's array (through its own from_dlpack)."""
    assert isinstance(result, dl.DeviceArray)
    if str(result.dtype) == "bfloat16":
        lib = "torch"  # CuPy's from_dlpack has no bfloat16
    return require_module(lib).from_dlpack(result)


def _mT(lib: str, x):
    return x.transpose(-1, -2) if lib == "torch" else x.swapaxes(-1, -2)


LIBS = ["cupy", "torch"]
DTYPES = ["float32", "float16", "bfloat16"]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("shapes", [((67, 45), (45, 33)), ((3, 1, 20, 30), (4, 30, 10)),
                                    ((1, 8), (8, 1)), ((5, 16), (16,))],
                         ids=["2d", "broadcast", "thin", "vector"])
def test_gpu_dlpack_only(lib, dtype, shapes):
    mk = _maker(lib, dtype)
    a, b = mk.randn(shapes[0], dtype), mk.randn(shapes[1], dtype)
    result = cutematmul.matmul(DlpackOnly(a), DlpackOnly(b))
    check_matmul(_back(lib, result), a, b, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lib", LIBS)
def test_gpu_transposed_and_unaligned_views(lib, dtype):
    mk = _maker(lib, dtype, seed=1)
    a = _mT(lib, mk.randn((45, 67), dtype))[:, 1:]   # (67, 44), column-major, odd offset
    b = _mT(lib, mk.randn((33, 47), dtype)[:, 1:46])[1:, :]  # (44, 33), odd offsets: staged
    result = cutematmul.matmul(DlpackOnly(a), DlpackOnly(b))
    check_matmul(_back(lib, result), a, b, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("lib", LIBS)
def test_gpu_interface_only(lib, dtype):
    mk = _maker(lib, dtype, seed=2)
    a, b = _mT(lib, mk.randn((40, 50), dtype)), mk.randn((40, 30), dtype)
    result = cutematmul.matmul(InterfaceOnly(a), InterfaceOnly(b))
    check_matmul(_back(lib, result), a, b, dtype)
    batched = mk.randn((2, 50, 40), dtype)[:, 1:, :]  # unaligned: staged
    result = cutematmul.matmul(InterfaceOnly(batched), InterfaceOnly(b))
    check_matmul(_back(lib, result), batched, b, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lib", LIBS)
def test_gpu_strided_out(lib, dtype):
    mk = _maker(lib, dtype, seed=3)
    a, b = mk.randn((37, 29), dtype), mk.randn((29, 23), dtype)
    wide = mk.poisoned((37, 28), dtype)
    out = wide[:, 1:24]                               # unaligned, padded rows: staged
    returned = cutematmul.matmul(DlpackOnly(a), DlpackOnly(b), out=DlpackOnly(out))
    assert isinstance(returned, DlpackOnly)
    check_matmul(out, a, b, dtype)
    assert np.isnan(_host_copy(lib, wide[:, 24:])).all()  # the padding was not written
    assert np.isnan(_host_copy(lib, wide[:, :1])).all()
    col_major = _mT(lib, mk.poisoned((23, 37), dtype))
    cutematmul.matmul(DlpackOnly(a), DlpackOnly(b), out=DlpackOnly(col_major))
    check_matmul(col_major, a, b, dtype)


def _host_copy(lib: str, x) -> np.ndarray:
    if lib == "torch":
        return x.float().cpu().numpy()
    return require_module("cupy").asnumpy(x.astype("float32"))


@pytest.mark.gpu
def test_gpu_result_consumed_by_cupy_and_torch():
    cupy, torch = require_module("cupy"), require_module("torch")
    mk = _maker("cupy", "float16", seed=4)
    a, b = mk.randn((64, 48), "float16"), mk.randn((48, 40), "float16")
    result = cutematmul.matmul(DlpackOnly(a), DlpackOnly(b))
    assert result.shape == (64, 40) and result.dtype == np.float16 and result.device == a.device.id
    as_cupy, as_torch = cupy.from_dlpack(result), torch.from_dlpack(result)
    check_matmul(as_cupy, a, b, "float16")
    check_matmul(as_torch, a, b, "float16")
    assert as_cupy.data.ptr == as_torch.data_ptr() == result.ptr  # shared, not copied
    check_matmul(cupy.asarray(result), a, b, "float16")  # through __cuda_array_interface__
    again = cutematmul.matmul(result, DlpackOnly(b[:40, :]))  # a DeviceArray goes back in
    check_matmul(_back("cupy", again), as_cupy, b[:40, :], "float16")


@pytest.mark.gpu
def test_gpu_result_in_the_namespace_library():
    cupy = require_module("cupy")
    mk = _maker("cupy", "float32", seed=5)
    a, b = mk.randn((50, 40), "float32"), mk.randn((40, 30), "float32")
    result = cutematmul.matmul(WithNamespace(a), WithNamespace(b))
    assert isinstance(result, cupy.ndarray)
    check_matmul(result, a, b, "float32")
    staged = cutematmul.matmul(WithNamespace(a[:, 1:]), WithNamespace(b[1:, :]))  # padded via cupy
    assert isinstance(staged, cupy.ndarray)
    check_matmul(staged, a[:, 1:], b[1:, :], "float32")


@pytest.mark.gpu
@pytest.mark.parametrize("protocol", ["dlpack", "interface"])
def test_gpu_waits_for_the_producer_stream(protocol):
    """Slow work on a producer stream writes the input; the call on another stream must see it."""
    torch = require_module("torch")
    mk = Maker("torch", seed=6)
    src_a, b = mk.randn((512, 256), "float32"), mk.randn((256, 128), "float32")
    a = torch.zeros_like(src_a)
    producer, ours = torch.cuda.Stream(), torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(producer):
        torch.cuda._sleep(40_000_000)               # ~20 ms, then the input is written
        a.copy_(src_a)
    wrapped = (DlpackOnly(a, producer) if protocol == "dlpack"
               else InterfaceOnly(a, stream=producer.cuda_stream))
    result = cutematmul.matmul(wrapped, DlpackOnly(b), stream=ours.cuda_stream)
    assert result.stream == ours.cuda_stream
    as_torch = torch.from_dlpack(result)            # the current stream waits for ours
    torch.cuda.current_stream().synchronize()
    check_matmul(as_torch, src_a, b, "float32")


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["dlpack", "interface"])
def test_gpu_read_only_out_is_refused(kind):
    mk = _maker("cupy", "float32", seed=7)
    a, b = mk.randn((8, 4), "float32"), mk.randn((4, 6), "float32")
    out = mk.poisoned((8, 6), "float32")
    wrapped = ReadOnlyDlpack(out) if kind == "dlpack" else InterfaceOnly(out, readonly=True)
    wrap = DlpackOnly if kind == "dlpack" else InterfaceOnly
    with pytest.raises((ValueError, TypeError), match="read-only|readonly"):
        cutematmul.matmul(wrap(a), wrap(b), out=wrapped)
    assert np.isnan(_host_copy("cupy", out)).all()  # nothing was written


@pytest.mark.gpu
def test_gpu_empty_contraction_zero_fills():
    mk = _maker("cupy", "float16", seed=8)
    a, b = mk.randn((5, 0), "float16"), mk.randn((0, 7), "float16")
    result = cutematmul.matmul(DlpackOnly(a), DlpackOnly(b))
    assert (_host_copy("cupy", _back("cupy", result)) == 0).all()
    wide = mk.poisoned((5, 9), "float16")
    cutematmul.matmul(DlpackOnly(a), DlpackOnly(b), out=DlpackOnly(wide[:, 1:8]))  # not dense
    assert (_host_copy("cupy", wide[:, 1:8]) == 0).all()
    assert np.isnan(_host_copy("cupy", wide[:, [0, 8]])).all()
