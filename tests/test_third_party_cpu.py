"""CPU tests of ``tools/third_party.py``'s shim: which calls it gives cutematmul and which it
routes to the library's own matmul, and that it counts both (the figures docs/performance.md
reports).  K = 0 products need no GPU, so the cutematmul side runs for real here."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from helpers import load_tool


def _tool():
    return load_tool("third_party")


CHILD = """
import numpy as np, shim
mm = shim.routed(np.matmul)
f32 = np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32)
assert mm(*f32).shape == (3, 4) and mm(*f32).dtype == np.float32       # cutematmul (K = 0)
out = np.full((3, 4), 7, np.float32)
assert mm(*f32, out) is out and not out.any()                          # positional out
assert mm(np.ones((2, 3), np.int64), np.ones((3, 2), np.int64))[0, 0] == 3
assert mm(np.ones((2, 3), np.float16), np.ones((3, 2), np.float64)).dtype == np.float64
assert mm(*f32, casting="same_kind").shape == (3, 4)                   # keywords: the library's
mixed = np.zeros((2, 0), np.float16), np.zeros((0, 5), np.float32)
assert mm(*mixed).dtype == np.float32                                  # cutematmul promotes
assert mm(*f32, np.zeros((3, 4), np.float16)).dtype == np.float16      # out cast: the library's
"""


@pytest.mark.parametrize("mode,calls", [("routed", {"cutematmul": 4, "delegated": 4}),
                                        ("own", None)])
def test_shim_routes_and_counts(tmp_path, mode, calls):
    (tmp_path / "shim.py").write_text(_tool().SHIM.format(own=_tool().OWN_DTYPES))
    counts = tmp_path / "counts.json"
    env = {"PYTHONPATH": str(tmp_path), "THIRD_PARTY_MODE": mode,
           "THIRD_PARTY_COUNTS": str(counts), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True, cwd=tmp_path)
    if mode == "routed":
        assert proc.returncode == 0, proc.stderr
        assert json.loads(counts.read_text()) == calls
    else:  # every call goes to cutematmul, which refuses int64 with a TypeError naming a
        assert "TypeError: matmul: a must have dtype float32" in proc.stderr, proc.stderr


def test_own_mode_skips_all_but_what_the_suites_need():
    tool = _tool()
    kept = [d for d in tool.ARRAY_API_DTYPES if d in tool.OWN_DTYPES + tool.ARRAY_API_KEEP]
    assert kept == ["bool", "int64", "float32", "complex64", "complex128"]
    assert np.dtype("float16").name in tool.OWN_DTYPES
