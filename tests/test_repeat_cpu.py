"""The device route's fast path for repeated call signatures (``launch.run_device``): a repeat
runs the kernel the full path planned, with the same arguments, and falls back to the full path
(which checks and raises) whenever its pointers, device or memory differ from what was planned.

No GPU: a stand-in adapter describes NumPy arrays as if they were on device 0 of an H200, and a
stand-in kernel records its calls.
"""

from __future__ import annotations

import numpy as np
import pytest

from cutematmul import cache, device, launch
from cutematmul.operand import ArrayAdapter, Operand

H200 = device.DeviceInfo(0, "stand-in H200", (9, 0), 132)
STREAM = 0x7000


class StandIn(ArrayAdapter):
    """NumPy arrays described as device-0 arrays; what the full path asks for is counted."""

    name = "stand-in"

    def __init__(self):
        self.device = 0
        self.describes = 0

    def describe(self, x, argument, stream=None):
        self.describes += 1
        strides = tuple(s // x.itemsize for s in x.strides)
        return Operand(x, x.ctypes.data, x.shape, strides, x.dtype.name, x.itemsize, 0)

    def signature(self, a, b, out):
        arrays = (a, b) if out is None else (a, b, out)
        return tuple((x.shape, x.strides, x.dtype) for x in arrays)

    def pointer(self, x):
        return x.ctypes.data

    def current_device(self):
        return self.device

    def current_stream(self, device):
        return STREAM

    def empty(self, shape, like):
        return _aligned(shape, like.dtype)

    def workspace(self, count, like, stream):
        buf = _aligned((count,), np.float32)
        return buf, buf.ctypes.data


class Kernel:
    """Records the argument tuples it is called with (pointers made relative to the arrays)."""

    def __init__(self):
        self.calls = []

    def __call__(self, *args):
        self.calls.append(args)


def _aligned(shape, dtype):
    """A zeroed array whose data starts on a 256-byte boundary (as GPU allocators give)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    raw = np.zeros(count * dtype.itemsize + 256, dtype=np.uint8)
    start = -raw.ctypes.data % 256
    return raw[start:start + count * dtype.itemsize].view(dtype).reshape(shape)


@pytest.fixture
def route(monkeypatch, tmp_path):
    """(adapter, kernel) with an empty cache state, the stand-in device and kernel."""
    monkeypatch.setattr(cache, "_STATE", cache._State())
    cache.on_change(launch.clear_plans)
    monkeypatch.setenv("CUTEMATMUL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(device, "device_info", lambda index: H200)
    kernel = Kernel()
    monkeypatch.setattr(launch, "get_compiled", lambda key: kernel)
    launch.clear_plans()
    yield StandIn(), kernel
    launch.clear_plans()


def _run(adapter, a, b, out=None, **options):
    options = {"stream": None, "kernel": "auto", "precision": "highest", **options}
    return launch.run_device(adapter, a, b, out=out, **options)


def _operands(m=256, n=384, k=320, dtype=np.float16):
    return _aligned((m, k), dtype), _aligned((k, n), dtype), _aligned((m, n), dtype)


def test_a_repeat_skips_the_full_path_and_calls_the_kernel_alike(route):
    adapter, kernel = route
    a, b, out = _operands()
    _run(adapter, a, b, out)
    assert adapter.describes == 3 and len(kernel.calls) == 1
    a2, b2, out2 = _operands()  # the same signature at other addresses
    assert _run(adapter, a2, b2, out2) is out2
    assert adapter.describes == 3, "the repeat described nothing"
    assert len(kernel.calls) == 2
    first, second = kernel.calls

    def relative(call, arrays):
        bases = [x.ctypes.data for x in arrays]
        return tuple(v - p for v, p in zip(call[:3], bases)) + call[3:]

    assert relative(second, (a2, b2, out2)) == relative(first, (a, b, out))
    assert second[-1] == STREAM


def test_split_products_repeat_with_their_reduction(route):
    adapter, kernel = route
    a, b, out = _operands(m=16, n=1024, k=4096)  # transposed and split: GEMM + reduction
    _run(adapter, a, b, out)
    (repeat,) = launch._repeats.values()
    assert repeat.launch.reduce is not None and repeat.launch.transposed
    planned = len(kernel.calls)
    a2, b2, out2 = _operands(m=16, n=1024, k=4096)
    _run(adapter, a2, b2, out2)
    assert adapter.describes == 3 and len(kernel.calls) == 2 * planned == 4
    gemm, reduce = kernel.calls[2:]
    assert (gemm[0], gemm[1]) == (b2.ctypes.data, a2.ctypes.data)  # C^T = B^T A^T
    assert reduce[1] == out2.ctypes.data and reduce[-1] == STREAM


def test_an_unaligned_c_is_stored_by_the_kernel_itself_and_repeats(route, monkeypatch):
    """C rows of 385 fp16 (no whole 16-byte vectors): the unsplit GEMM stores C itself with C's
    own row stride (``Config.stores_any_c``, ``dispatch.copied_c``), no workspace and no copy;
    nothing is staged, and a repeat takes the fast path with the same call."""
    adapter, kernel = route
    requested = []
    workspace = adapter.workspace
    monkeypatch.setattr(adapter, "workspace",
                        lambda count, like, stream: requested.append(count)
                        or workspace(count, like, stream))
    m, n, k = 256, 385, 320
    a = _aligned((m, k), np.float16)
    b = _aligned((n, k), np.float16).T  # K-major: read as it is
    out = _aligned((m, n), np.float16)
    _run(adapter, a, b, out)
    (repeat,) = launch._repeats.values()
    assert repeat.launch.reduce is None and repeat.launch.splits == 1
    assert repeat.launch.key.align_c == 1 and repeat.launch.key.config.stores_any_c
    (gemm,) = kernel.calls
    assert requested == []
    assert gemm[:3] == (a.ctypes.data, b.ctypes.data, out.ctypes.data)  # C as it is
    assert gemm[3:5] == (m, n) and gemm[12] == n and gemm[-1] == STREAM  # C's own ld
    a2, b2, out2 = _aligned((m, k), np.float16), _aligned((n, k), np.float16).T, \
        _aligned((m, n), np.float16)
    _run(adapter, a2, b2, out2)
    assert adapter.describes == 3 and len(kernel.calls) == 2, "the repeat took the full path"
    assert kernel.calls[1][2] == out2.ctypes.data and requested == []


def test_a_fresh_result_is_allocated_and_planned_once(route):
    adapter, kernel = route
    a, b, _ = _operands()
    first = _run(adapter, a, b)
    second = _run(adapter, a, b)
    assert first.shape == second.shape == (256, 384) and first is not second
    assert adapter.describes == 3  # a, b and the first result (the base empty_operand), once
    assert [c[2] - r.ctypes.data for c, r in zip(kernel.calls, (first, second))] == [0, 0]


def test_options_are_part_of_the_signature(route):
    adapter, kernel = route
    a, b, out = _operands(m=2048, n=2048, k=128, dtype=np.float32)  # unsplit SIMT
    _run(adapter, a, b, out)
    _run(adapter, a, b, out, kernel="simt")  # other options: the full path again
    assert adapter.describes == 6 and len(launch._repeats) == 2


def test_out_overlapping_an_input_is_refused_on_a_repeat(route):
    adapter, kernel = route
    a, b, out = _operands(m=256, n=320, k=320)
    _run(adapter, a, b, out)
    with pytest.raises(ValueError, match="out overlaps a"):
        _run(adapter, a, b, a)
    assert len(kernel.calls) == 1


def test_the_repeat_falls_back_where_the_first_call_differs(route):
    adapter, kernel = route
    a, b, out = _operands()
    _run(adapter, a, b, out)
    (repeat,) = launch._repeats.values()
    assert launch._run_repeat(adapter, repeat, a, b, out) is out
    adapter.device = 1  # another current device
    assert launch._run_repeat(adapter, repeat, a, b, out) is None
    adapter.device = 0
    raw = _aligned((256 * 320 + 1,), np.float16)
    shifted = raw[1:].reshape(256, 320)  # 2 bytes past a 16-byte boundary
    assert launch._run_repeat(adapter, repeat, shifted, b, out) is None
    assert len(kernel.calls) == 2


def test_clearing_the_cache_forgets_the_repeats(route):
    adapter, _ = route
    a, b, out = _operands()
    _run(adapter, a, b, out)
    assert launch._repeats
    cache.cache_clear()
    assert not launch._repeats


def test_explicit_streams_and_adapters_without_signatures_take_the_full_path(route):
    adapter, kernel = route
    a, b, out = _operands()
    _run(adapter, a, b, out, stream=0x9000)
    _run(adapter, a, b, out, stream=0x9000)
    assert adapter.describes == 6 and not launch._repeats
    assert kernel.calls[-1][-1] == 0x9000
