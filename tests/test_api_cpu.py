"""CPU tests of argument checking and dispatch: every error comes before any GPU work."""

from __future__ import annotations

import numpy as np
import pytest

import cutematmul
from cutematmul.dispatch import FAMILIES, choose_family
from cutematmul.streams import Stream, explicit_handle, resolve_stream
from conftest import gpu_count

F32 = np.float32


def _a(*shape, dtype=F32):
    return np.ones(shape, dtype=dtype)


@pytest.mark.parametrize("a,b,exc,msg", [
    (_a(3, 4), _a(5, 6), ValueError, "contracted dimensions differ"),
    (_a(2, 3, 4), _a(3, 4, 5), ValueError, "do not broadcast"),
    (np.ones((), dtype=F32), _a(3), ValueError, "at least 1 dimension"),
    (_a(3, 4, dtype=np.float64), _a(4, 5), TypeError,
     "must have dtype float32, float16 or bfloat16; got float64"),
    (_a(3, 4, dtype=np.int32), _a(4, 5, dtype=np.int32), TypeError, "got int32"),
    (_a(3, 4, dtype=np.float16), _a(4, 5, dtype=np.float64), TypeError,
     "b must have dtype float32, float16 or bfloat16; got float64"),
    ([[1.0]], _a(1, 1), TypeError,
     ("a must be a CuPy, PyTorch, NumPy or JAX array, or any array with __dlpack__ or "
      "__cuda_array_interface__; got builtins.list")),
    (_a(1, 1), "x", TypeError, "b must be a CuPy, PyTorch, NumPy or JAX array"),
])
def test_bad_operands(a, b, exc, msg):
    with pytest.raises(exc, match=msg):
        cutematmul.matmul(a, b)


def test_bad_out():
    a, b = _a(3, 4), _a(4, 5)
    with pytest.raises(ValueError, match=r"out must have shape \(3, 5\); got \(5, 3\)"):
        cutematmul.matmul(a, b, out=_a(5, 3))
    with pytest.raises(TypeError, match="out must have dtype float32; got float16"):
        cutematmul.matmul(a, b, out=_a(3, 5, dtype=np.float16))
    # Mixed dtypes promote: float16 @ float32 (and float16 @ bfloat16) is a float32 product.
    with pytest.raises(TypeError, match="out must have dtype float32; got float16"):
        cutematmul.matmul(_a(3, 4, dtype=np.float16), b, out=_a(3, 5, dtype=np.float16))
    with pytest.raises(ValueError, match=r"out must have shape \(3, 5\); got \(5, 3\)"):
        cutematmul.matmul(a, b, _a(5, 3))  # positional, as numpy.matmul takes it
    ro = _a(3, 5)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        cutematmul.matmul(a, b, out=ro)
    with pytest.raises(ValueError, match="out has stride 0 along dimension 0"):
        cutematmul.matmul(a, b, out=np.lib.stride_tricks.as_strided(_a(5), (3, 5), (0, 4)))


@pytest.mark.parametrize("kw,exc,msg", [
    ({"precision": "fast"}, ValueError, "precision must be one of 'highest'"),
    ({"precision": "HIGH"}, ValueError, "precision must be one of"),
    ({"precision": None}, ValueError, "precision must be one of"),
    ({"kernel": "fast"}, ValueError, "kernel must be one of"),
    ({"stream": "s0"}, TypeError, "stream must be None, an int handle"),
    ({"stream": -1}, ValueError, "cannot be a CUDA stream"),
    ({"stream": 2**64}, ValueError, "cannot be a CUDA stream"),
    ({"stream": 0x1001}, ValueError, "cannot be a CUDA stream"),
    ({"stream": 1.5}, TypeError, "stream must be None, an int handle"),
    ({"stream": True}, TypeError, "got a bool"),
])
def test_bad_options(kw, exc, msg):
    with pytest.raises(exc, match=msg):
        cutematmul.matmul(_a(3, 4), _a(4, 5), **kw)


def test_no_gpu_is_a_runtime_error_at_the_call():
    if gpu_count()[0]:
        pytest.skip("a GPU is present: this checks the message on machines without one")
    with pytest.raises(RuntimeError, match="cutematmul: "):
        cutematmul.matmul(_a(3, 4), _a(4, 5))


def test_k_zero_and_empty_need_no_gpu():
    assert np.all(cutematmul.matmul(_a(3, 0), _a(0, 5)) == 0)
    assert cutematmul.matmul(_a(0, 4), _a(4, 5)).shape == (0, 5)
    assert cutematmul.matmul(_a(2, 0, 4), _a(4, 5)).shape == (2, 0, 5)
    out = np.full((3, 5), 7.0, dtype=F32)
    assert cutematmul.matmul(_a(3, 0), _a(0, 5), out) is out  # positional out
    assert np.all(out == 0)


@pytest.mark.parametrize("dtype,cc,req,expected", [
    ("float16", (9, 0), "auto", "sm90"),
    ("bfloat16", (9, 0), "auto", "sm90"),
    ("float16", (8, 0), "auto", "sm80"),
    ("bfloat16", (8, 9), "auto", "sm80"),
    ("float16", (10, 0), "auto", "sm80"),
    ("float32", (9, 0), "auto", "simt"),
    ("float32", (8, 6), "auto", "simt"),
    ("float16", (9, 0), "sm80", "sm80"),
])
def test_choose_family(dtype, cc, req, expected):
    assert choose_family(dtype, cc, req).name == expected


@pytest.mark.parametrize("dtype,cc,req,exc,msg", [
    ("float16", (8, 0), "sm90", ValueError, "does not run on a GPU of compute capability 8.0"),
    ("float32", (9, 0), "sm90", ValueError, "computes float16/bfloat16"),
    ("tf32", (9, 0), "simt", ValueError, "computes float32/float16/bfloat16"),
    ("float16", (7, 5), "auto", RuntimeError, "compute capability 8.0 or newer"),
])
def test_choose_family_errors(dtype, cc, req, exc, msg):
    with pytest.raises(exc, match=msg):
        choose_family(dtype, cc, req)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_config_selection_needs_no_dsl(name):
    """Configurations are chosen without the CuTe DSL (a warm start must not import it)."""
    import subprocess
    import sys

    code = (
        "import sys; from cutematmul.dispatch import FAMILIES; "
        f"mod = FAMILIES[{name!r}].configs(); "
        "[mod.choose_config(m, n, k, 1, 132).validate() for m, n, k in "
        "[(1, 1, 1), (64, 64, 64), (4096, 4096, 4096), (16, 8192, 8192), (8192, 16, 8192)]]; "
        "print('cutlass' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False", proc.stdout + proc.stderr


class _FakeAdapter:
    name = "fake"

    def current_stream(self, device):
        return 1234

    def stream_handle(self, stream):
        return None


class _ProtocolStream:
    def __cuda_stream__(self):
        return (0, 0x7F00_2000)


def test_resolve_stream():
    ad = _FakeAdapter()
    assert resolve_stream(None, ad, 0) == Stream(1234, False)
    for stream, handle in ((2, 2), (0x7F00_1000, 0x7F00_1000), (_ProtocolStream(), 0x7F00_2000)):
        assert resolve_stream(explicit_handle(stream, ad), ad, 0) == Stream(handle, True)
