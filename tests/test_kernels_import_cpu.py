"""The kernel package imports ``tvm_ffi`` without letting it import PyTorch (issue 8: a CuPy
process's first compile must not pay PyTorch's ~3 s import).  CPU only: a stand-in ``torch``
package records whether anything imported it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tvm_ffi") is None,
                                reason="apache-tvm-ffi is not installed")

_MARKER = "STAND-IN TORCH IMPORTED"


def _run(tmp_path, code: str) -> subprocess.CompletedProcess:
    package = tmp_path / "torch"
    package.mkdir(exist_ok=True)
    # It records the import, then reports itself missing (tvm_ffi then runs as without PyTorch).
    (package / "__init__.py").write_text(
        f"import sys\nprint({_MARKER!r}, file=sys.stderr)\nraise ImportError('stand-in')\n")
    env_code = f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\n" + code
    return subprocess.run([sys.executable, "-c", env_code], capture_output=True, text=True,
                          timeout=300)


def test_plain_tvm_ffi_import_pulls_torch(tmp_path):
    """The stand-in works: tvm_ffi on its own imports ``torch``."""
    proc = _run(tmp_path, "import tvm_ffi\n")
    assert proc.returncode == 0, proc.stderr
    assert _MARKER in proc.stderr


def test_kernel_package_keeps_torch_out(tmp_path):
    proc = _run(tmp_path, (
        "import cutematmul.kernels\n"
        "assert 'tvm_ffi' in sys.modules\n"
        "assert 'torch' not in sys.modules, 'tvm_ffi imported torch'\n"
        "print('no torch yet', flush=True)\n"
        "try:\n    import torch\n"  # a later import of the caller's reaches the package
        "except ImportError:\n    pass\n"
        "assert sys.meta_path[0].__class__.__name__ != '_TorchRefusedToTvmFfi'\n"
    ))
    assert proc.returncode == 0, proc.stderr
    assert "no torch yet" in proc.stdout
    assert proc.stderr.count(_MARKER) == 1  # only the caller's own import
