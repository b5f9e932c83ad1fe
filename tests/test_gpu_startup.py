"""A second process compiles nothing (issue "Start in milliseconds").

Two fresh processes share one kernel cache directory (``cutematmul.bench.startup.run_child``):
the first finds it empty and compiles; the second must load every kernel from disk, compile none
in any tier, give correct products (each is checked against a float64 product in the child) and
never import the DSL compiler.  Timings are printed by ``python -m cutematmul.bench startup``,
never asserted here.
"""

from __future__ import annotations

import importlib.util
import io

import pytest

from cutematmul.bench import startup

pytestmark = pytest.mark.gpu


def _library() -> str:
    """CuPy, else PyTorch: the child makes its GPU inputs with it."""
    for name in startup.LIBRARIES:
        if importlib.util.find_spec(name) is not None:
            return name
    pytest.skip("neither CuPy nor PyTorch is installed: the child process needs one of them to "
                "make its GPU arrays")


def test_second_process_compiles_nothing(tmp_path):
    library = _library()
    cache = tmp_path / "kernels"  # created 0700 by cutematmul inside pytest's private tmp_path

    cold = startup.run_child(cache, library, phase="cold")
    assert cold.ok, cold.failure()
    assert cold.compiles >= 1, cold.result["cache_info"]
    assert cold.result["dsl"]["cutlass.cute"], "a process that compiles imports the DSL"

    warm = startup.run_child(cache, library, phase="warm")
    assert warm.ok, warm.failure()  # a wrong product fails the child
    info = warm.result["cache_info"]
    assert info["memory"]["compiles"] == 0, info["memory"]
    assert info["jax"]["compiles"] == 0, info["jax"]
    assert warm.compiles == 0
    ran = [p for p in warm.result["products"] if p["seconds"] is not None]
    assert ran, warm.result["products"]
    assert all(p["ok"] and p["rel_error"] is not None for p in ran), ran
    assert info["disk"]["hits"] >= 1 and info["disk"]["hits"] == info["memory"]["misses"], (
        "every kernel the warm process needed came from disk", info)

    # The whole mode on the filled cache: both processes warm, a table and the targets line.
    out, err = io.StringIO(), io.StringIO()
    assert startup.run(library, cache, out=out, err=err) == 0, err.getvalue()
    report = out.getvalue()
    assert "targets (H200)" in report and "warm compiles 0 (target 0): met" in report
    assert cache.is_dir(), "a given --cache-dir is kept"

    payloads = sorted({p.suffix for p in cache.iterdir() if p.suffix in (".so", ".o")})
    if payloads != [".so"]:
        pytest.skip(f"kernels were stored as {payloads} (no linker where they were compiled): "
                    "loading a plain object goes through cutlass.cute.runtime and imports the DSL "
                    "by design (docs/cache.md); everything else above passed")
    # A hit on a linked entry goes through cache._load_kernel: ctypes loads the DSL runtime
    # library found in the nvidia_cutlass_dsl namespace package (no DSL code runs) and
    # libtvm_ffi.so, then opens the .so (cutematmul/ffi.py).  No `cutlass` module at all is
    # needed; the DSL compiler (cutlass.cute, ~3 s to import) is what a warm start must never pay
    # for, nor the tvm_ffi package (which imports PyTorch when it is installed).
    assert not warm.result["dsl"]["cutlass.cute"], "the warm process imported the DSL compiler"
    assert not warm.result["dsl"]["cutlass"], "the warm process imported the cutlass package"
    assert not warm.result["dsl"]["tvm_ffi"], "the warm process imported the tvm_ffi package"
