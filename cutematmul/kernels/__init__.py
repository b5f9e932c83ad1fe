"""The CuTe DSL kernels: one file per family, the pointer entry, the compile step.

Importing this package (which every kernel module does first) imports ``tvm_ffi``, the package the
DSL calls to compile with ``--enable-tvm-ffi``, without letting it import PyTorch.  ``tvm_ffi``
imports PyTorch at its own import whenever PyTorch is installed (for its tensor converters, which
cutematmul never uses: its compiled functions take plain integers), and that costs a process that
never imported PyTorch itself ~3 s on its first compile.  While ``tvm_ffi`` is imported, a finder
refuses ``import torch`` when the import comes from ``tvm_ffi``'s own code; imports from anywhere
else (another thread) proceed.  A process that already imported PyTorch is left as it is.

Imports: ``tvm_ffi`` (through :func:`import_tvm_ffi`); the kernel modules import the DSL.
"""

from __future__ import annotations

import importlib
import importlib.abc
import sys


class _TorchRefusedToTvmFfi(importlib.abc.MetaPathFinder):
    """``import torch`` (and its submodules) fail with ImportError when ``tvm_ffi`` asks."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch" and not name.startswith("torch."):
            return None
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_globals.get("__name__", "").partition(".")[0] == "tvm_ffi":
                raise ImportError(f"cutematmul does not let tvm_ffi import {name}")
            frame = frame.f_back
        return None


def import_tvm_ffi():
    """``tvm_ffi``, imported without PyTorch unless PyTorch is imported already."""
    if "tvm_ffi" in sys.modules or "torch" in sys.modules:
        return importlib.import_module("tvm_ffi")
    finder = _TorchRefusedToTvmFfi()
    sys.meta_path.insert(0, finder)
    try:
        return importlib.import_module("tvm_ffi")
    finally:
        sys.meta_path.remove(finder)


import_tvm_ffi()
