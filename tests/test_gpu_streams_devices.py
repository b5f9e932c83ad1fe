"""Streams and devices: the call runs on the caller's stream, after the work queued before it,
and on the GPU that holds the operands."""

from __future__ import annotations

import pytest

import cutematmul
from conftest import require_module
from helpers import Maker, check_matmul

pytestmark = pytest.mark.gpu


def _slow_fill(torch, dst, src):
    """Queue ~20 ms of GPU time, then copy ``src`` into ``dst``, on the current stream."""
    torch.cuda._sleep(40_000_000)
    dst.copy_(src)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_torch_current_stream_orders_after_queued_work(dtype):
    torch = require_module("torch")
    mk = Maker("torch", seed=3)
    src_a, b = mk.randn((512, 256), dtype), mk.randn((256, 384), dtype)
    a = torch.zeros_like(src_a)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        _slow_fill(torch, a, src_a)          # a is only right after 20 ms of queued work
        c = cutematmul.matmul(a, b)          # default stream = current = s
    s.synchronize()
    check_matmul(c, src_a, b, dtype)


@pytest.mark.parametrize("kind", ["torch-stream", "int-handle", "protocol"])
def test_explicit_stream(kind):
    torch = require_module("torch")
    mk = Maker("torch", seed=4)
    src_a, b = mk.randn((300, 200), "float16"), mk.randn((200, 100), "float16")
    a = torch.zeros_like(src_a)
    s = torch.cuda.Stream()

    class Proto:
        def __cuda_stream__(self):
            return (0, s.cuda_stream)

    stream = {"torch-stream": s, "int-handle": s.cuda_stream, "protocol": Proto()}[kind]
    with torch.cuda.stream(s):
        _slow_fill(torch, a, src_a)
    c = cutematmul.matmul(a, b, stream=stream)  # the current stream is the default one here
    s.synchronize()
    check_matmul(c, src_a, b, "float16")


def test_cupy_current_stream_orders_after_queued_work():
    cupy = require_module("cupy")
    mk = Maker("cupy", seed=5)
    src_a, b = mk.randn((1024, 1024), "float32"), mk.randn((1024, 512), "float32")
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        a = cupy.zeros_like(src_a)
        for _ in range(50):                  # a few ms of queued work before a is right
            a += src_a / 50
        c = cutematmul.matmul(a, b)
    s.synchronize()
    check_matmul(c, a, b, "float32")


def test_cupy_explicit_stream_object():
    cupy = require_module("cupy")
    mk = Maker("cupy", seed=6)
    a, b = mk.randn((129, 65), "float16"), mk.randn((65, 33), "float16")
    s = cupy.cuda.Stream(non_blocking=True)
    c = cutematmul.matmul(a, b, stream=s)
    s.synchronize()
    check_matmul(c, a, b, "float16")


@pytest.mark.multigpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_operands_on_second_gpu(dtype):
    torch = require_module("torch")
    mk = Maker("torch", seed=7)
    a = mk.randn((257, 129), dtype).to("cuda:1")
    b = mk.randn((129, 65), dtype).to("cuda:1")
    assert torch.cuda.current_device() == 0
    c = cutematmul.matmul(a, b)
    assert c.device == a.device
    assert torch.cuda.current_device() == 0
    check_matmul(c, a, b, dtype)


@pytest.mark.multigpu
def test_operands_on_two_gpus_rejected():
    torch = require_module("torch")
    a = torch.ones(4, 4, device="cuda:0")
    b = torch.ones(4, 4, device="cuda:1")
    with pytest.raises(ValueError, match="same GPU"):
        cutematmul.matmul(a, b)


@pytest.mark.multigpu
def test_cupy_on_second_gpu():
    cupy = require_module("cupy")
    with cupy.cuda.Device(1):
        mk = Maker("cupy", seed=8)
        a, b = mk.randn((100, 80), "float16"), mk.randn((80, 60), "float16")
    c = cutematmul.matmul(a, b)
    assert c.device.id == 1
    check_matmul(c, a, b, "float16")


@pytest.mark.parametrize("fresh_thread", [False, True])
def test_memset_zeroes_exactly_its_bytes_on_the_stream(fresh_thread):
    """``device.memset_async`` (the stream-K flags, staging padding, the tuner's L2 flush) zeroes
    its byte range and nothing past it, ordered on the stream, also from a thread that has no
    current CUDA context (the runtime fallback)."""
    torch = require_module("torch")
    import threading

    from cutematmul import device

    buf = torch.full((4096,), 0x5A, dtype=torch.uint8, device="cuda")
    s = torch.cuda.Stream()
    start, nbytes = 3, 1001  # unaligned start and an odd count
    with torch.cuda.stream(s):
        torch.cuda._sleep(20_000_000)  # the memset must wait for this in stream order
        buf[:2048].fill_(0x33)
    torch.cuda.current_stream().synchronize()
    errors = []

    def zero():
        try:
            device.memset_async(buf.data_ptr() + start, nbytes, s.cuda_stream)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    if fresh_thread:
        t = threading.Thread(target=zero)
        t.start()
        t.join()
    else:
        zero()
    assert not errors, errors
    s.synchronize()
    host = buf.cpu()
    assert (host[start:start + nbytes] == 0).all()
    assert (host[:start] == 0x33).all() and (host[start + nbytes:2048] == 0x33).all()
    assert (host[2048:] == 0x5A).all()
