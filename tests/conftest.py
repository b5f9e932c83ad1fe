"""Shared fixtures: which array libraries and GPUs are here, and why tests skip."""

from __future__ import annotations

import functools
import importlib

import pytest


@functools.cache
def gpu_count() -> tuple[int, str]:
    """(number of CUDA GPUs, reason when 0)."""
    try:
        from cuda.bindings import driver

        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return 0, f"the CUDA driver did not initialise ({err.name})"
        err, count = driver.cuDeviceGetCount()
        return (count, "") if count else (0, "no CUDA GPU is visible")
    except Exception as exc:  # no libcuda at all
        return 0, f"no NVIDIA driver on this machine ({type(exc).__name__})"


def require_gpu(n: int = 1) -> None:
    count, reason = gpu_count()
    if count < n:
        pytest.skip(f"needs {n} CUDA GPU(s): {reason or f'only {count} visible'}")


def require_module(name: str):
    try:
        return importlib.import_module(name)
    except Exception as exc:
        pytest.skip(f"{name} is not importable here ({type(exc).__name__}: {exc})",
                    allow_module_level=True)


@pytest.fixture
def gpu():
    require_gpu()


def pytest_collection_modifyitems(config, items):
    count, reason = gpu_count()
    for item in items:
        if "gpu" in item.keywords and count == 0:
            item.add_marker(pytest.mark.skip(reason=f"GPU test: {reason}"))
        if "multigpu" in item.keywords and count < 2:
            item.add_marker(pytest.mark.skip(reason=f"multi-GPU test: {count} GPU(s) visible"))
