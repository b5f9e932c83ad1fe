"""Every script in examples/ runs to exit code 0 (each checks its own results).

The scripts need a GPU and the array library they import; a missing one skips the example with
the reason.  The pytest-benchmark suite also runs without a GPU (every case then skips), which
still checks that it imports and parametrizes.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_gpu, require_module

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
BENCHMARK_SUITE = "pytest_benchmark_backends.py"
LIBRARIES = ("cupy", "torch", "jax")  # array libraries an example may need on the GPU


def _libraries(path: Path) -> list[str]:
    imported = re.findall(r"^\s*(?:import|from)\s+(\w+)", path.read_text(), flags=re.M)
    return [lib for lib in LIBRARIES if lib in imported]


def _require_on_gpu(library: str) -> None:
    """Skip unless ``library`` imports and sees a GPU (the bench backend's probe says why not)."""
    require_module(library)
    from cutematmul.bench import BACKENDS

    ok, why = BACKENDS[library].available()
    if not ok:
        pytest.skip(why)


def _run(argv: list[str]) -> None:
    # A child of an xdist worker must not look like one (pytest-benchmark then disables itself).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    proc = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env=env)
    assert proc.returncode == 0, (
        f"{' '.join(argv)} exited with {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}"
        f"\n--- stderr\n{proc.stderr[-4000:]}")


@pytest.mark.gpu
@pytest.mark.parametrize("script", [p for p in EXAMPLES if p.name != BENCHMARK_SUITE],
                         ids=lambda p: p.name)
def test_example_script(script):
    require_gpu()
    for library in _libraries(script):
        _require_on_gpu(library)
    _run([str(script)])


def test_pytest_benchmark_suite():
    require_module("pytest_benchmark")
    _run(["-m", "pytest", str(ROOT / "examples" / BENCHMARK_SUITE), "--benchmark-only", "-q",
          "-p", "no:cacheprovider", "-p", "no:xdist"])


def test_every_example_is_found():
    names = {p.name for p in EXAMPLES}
    assert {"cupy_matmul.py", "torch_matmul.py", "numpy_matmul.py", BENCHMARK_SUITE} <= names
