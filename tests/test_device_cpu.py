"""CPU tests of ``cutematmul.device``'s driver queries (a stand-in ``libcuda``) and of what a warm
start imports (nothing of cuda-python, the DSL, ``tvm_ffi`` or the precompile machinery)."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

from cutematmul import device


class FakeDriver:
    """Answers the driver calls ``device`` makes, writing through ctypes ``byref`` arguments."""

    def __init__(self, init=0, count=2, attributes=None, name=b"NVIDIA H200"):
        self.init, self.count, self.name = init, count, name
        self.attributes = attributes or {75: 9, 76: 0, 16: 132}

    def cuInit(self, flags):
        return self.init

    def cuDeviceGetCount(self, ref):
        ref._obj.value = self.count
        return 0

    def cuDeviceGet(self, ref, ordinal):
        ref._obj.value = ordinal
        return 0

    def cuDeviceGetAttribute(self, ref, attribute, dev):
        ref._obj.value = self.attributes[attribute]
        return 0

    def cuDeviceGetName(self, buffer, length, dev):
        ctypes.memmove(buffer, self.name + b"\0", min(len(self.name) + 1, length))
        return 0

    def cuGetErrorName(self, code, ref):
        ref._obj.value = {100: b"CUDA_ERROR_NO_DEVICE", 999: b"CUDA_ERROR_UNKNOWN"}.get(code)
        return 0 if ref._obj.value else 1


@pytest.fixture
def driver(monkeypatch):
    def install(fake):
        monkeypatch.setattr(device, "_libcuda", lambda: fake)
        device.device_count.cache_clear()
        device.device_info.cache_clear()
        return fake

    yield install
    device.device_count.cache_clear()
    device.device_info.cache_clear()


def test_device_info_from_the_driver(driver):
    driver(FakeDriver())
    assert device.device_count() == 2
    info = device.device_info(1)
    assert info == device.DeviceInfo(1, "NVIDIA H200", (9, 0), 132)
    with pytest.raises(RuntimeError, match="CUDA device 2 does not exist \\(2 visible\\)"):
        device.device_info(2)


@pytest.mark.parametrize("code, message", [
    (100, "no CUDA GPU is visible"),
    (35, "driver is too old"),
    (999, "could not be initialised \\(CUDA_ERROR_UNKNOWN\\)"),
    (12345, "could not be initialised \\(CUresult 12345\\)"),
])
def test_driver_failures_are_explained(driver, code, message):
    driver(FakeDriver(init=code))
    with pytest.raises(RuntimeError, match=message):
        device.device_count()


def test_no_driver_library(monkeypatch):
    def missing(name, *args, **kwargs):
        raise OSError(f"{name}: cannot open shared object file")

    device._libcuda.cache_clear()
    monkeypatch.setattr(ctypes, "CDLL", missing)
    try:
        with pytest.raises(RuntimeError, match="no NVIDIA driver was found"):
            device._libcuda()
    finally:
        device._libcuda.cache_clear()


def test_a_warm_start_imports_no_heavy_module():
    """What the device route and the disk cache load at a warm start (measured in
    docs/performance.md): cuda-python costs 70-100 ms there, the rest 10-30 ms each."""
    code = (
        "import sys, cutematmul, cutematmul.launch, cutematmul.cache, cutematmul.ffi\n"
        "from cutematmul.adapters import numpy\n"
        "cutematmul.cache_disk.environment()\n"
        "heavy = ('cuda.bindings', 'cutematmul.aot', 'importlib.metadata', 'multiprocessing',\n"
        "         'concurrent.futures', 'cutlass', 'tvm_ffi', 'subprocess', 'torch')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_precompile_is_still_an_attribute():
    import cutematmul

    assert callable(cutematmul.precompile)
    from cutematmul import precompile  # noqa: F401

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        cutematmul.nope  # noqa: B018


@pytest.mark.parametrize("code", [0, 201, 1])
def test_memset_takes_the_driver_then_the_runtime_without_a_context(monkeypatch, code):
    """``memset_async``: the driver's cuMemsetD8Async; with no current context (201) the
    runtime's cudaMemsetAsync, which makes one current; any other failure is an error naming
    the driver call.  Nothing is called for zero bytes."""
    calls = []

    def d8(ptr, value, nbytes, stream):
        calls.append(("driver", ptr, value, nbytes, stream))
        return code

    class Runtime:
        @staticmethod
        def cudaMemsetAsync(ptr, value, nbytes, stream):
            calls.append(("runtime", ptr, value, nbytes, stream))
            return (0,)

    monkeypatch.setattr(device, "_memset8", lambda: d8)
    monkeypatch.setattr(device, "_bindings", lambda: (None, Runtime))
    monkeypatch.setattr(device, "_error_name", lambda c: f"CUresult {c}")
    device.memset_async(0x1000, 0, 7)
    assert calls == []
    if code == 1:
        with pytest.raises(RuntimeError, match="cuMemsetD8Async failed with CUresult 1"):
            device.memset_async(0x1000, 1001, 7)
        return
    device.memset_async(0x1000, 1001, 7)
    expected = [("driver", 0x1000, 0, 1001, 7)]
    if code == 201:
        expected.append(("runtime", 0x1000, 0, 1001, 7))
    assert calls == expected
