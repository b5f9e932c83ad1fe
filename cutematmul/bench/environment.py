"""Where a run happened: date, GPU, driver, and the versions of everything measured.

Nothing here raises: what cannot be found reads "?" (or is left out), so a machine without a GPU
still gets a header.  Array libraries are not imported for their versions; their installed
distributions are read instead (or the module's ``__version__`` when it is already imported).

Imports: the standard library; lazily ``cuda.bindings`` (driver, NVML) and
``cutematmul.device``.
"""

from __future__ import annotations

import datetime
import importlib.metadata as metadata
import os
import platform
import re
import sys

# module -> distributions that may provide it, in order
_DISTRIBUTIONS = {
    "cutematmul": ("cutematmul",),
    "cutlass": ("nvidia-cutlass-dsl",),
    "cuda.bindings": ("cuda-bindings",),
    "tvm_ffi": ("apache-tvm-ffi",),
    "numpy": ("numpy",),
    "cupy": ("cupy-cuda13x", "cupy-cuda12x", "cupy"),
    "torch": ("torch",),
    "jax": ("jax",),
    "jaxlib": ("jaxlib",),
}
_LABELS = {"cutlass": "CuTe DSL", "cuda.bindings": "cuda-bindings", "tvm_ffi": "tvm-ffi",
           "cupy": "CuPy", "torch": "PyTorch", "jax": "JAX", "jaxlib": "jaxlib",
           "numpy": "NumPy", "cutematmul": "cutematmul"}
# environment variables that change what is measured
_SETTINGS_ENV = ("CUPY_TF32", "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_FLAGS", "CUDA_VISIBLE_DEVICES",
                 "CUTE_DSL_ARCH", "NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE")


def version(module: str) -> str | None:
    """Installed version of ``module`` (None when it is not installed)."""
    loaded = sys.modules.get(module)
    v = getattr(loaded, "__version__", None)
    if isinstance(v, str):
        return v
    for dist in _DISTRIBUTIONS.get(module, (module,)):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def driver_version() -> str:
    """The NVIDIA driver's version, e.g. "580.65.06" ("?" when unknown)."""
    try:
        from cuda.bindings import nvml

        nvml.init_v2()
        try:
            v = nvml.system_get_driver_version()
            return v.decode() if isinstance(v, bytes) else str(v)
        finally:
            nvml.shutdown()
    except Exception:
        pass
    try:
        with open("/proc/driver/nvidia/version") as fh:
            match = re.search(r"Kernel Module\s+(?:for \S+\s+)?([\d.]+)", fh.read())
        if match:
            return match.group(1)
    except OSError:
        pass
    return "?"


def cuda_driver_api() -> str:
    """The CUDA version the driver supports, e.g. "13.0" ("?" without a driver)."""
    try:
        from cuda.bindings import driver

        err, v = driver.cuDriverGetVersion()
        if int(err) == 0 and v:
            return f"{v // 1000}.{v % 1000 // 10}"
    except Exception:
        pass
    return "?"


def gpu() -> dict:
    """Name, compute capability and SM count of device 0 (empty without a GPU)."""
    try:
        from cutematmul.device import device_info

        info = device_info(0)
        return {"gpu": info.name, "capability": f"{info.capability[0]}.{info.capability[1]}",
                "sms": info.num_sms}
    except Exception as exc:
        return {"gpu": f"no GPU ({type(exc).__name__})"}


def torch_settings() -> dict:
    """PyTorch's matmul precision switches, when PyTorch is already imported."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {}
    m = torch.backends.cuda.matmul
    names = ("allow_tf32", "allow_fp16_reduced_precision_reduction",
             "allow_bf16_reduced_precision_reduction")
    return {f"torch.{n}": getattr(m, n) for n in names if hasattr(m, n)}


def environment() -> dict:
    """Everything above, as one JSON-ready dict."""
    env = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    env.update(gpu())
    env["driver"] = driver_version()
    env["cuda_driver_api"] = cuda_driver_api()
    env["python"] = platform.python_version()
    env["versions"] = {m: v for m in _DISTRIBUTIONS if (v := version(m)) is not None}
    env["env"] = {k: os.environ[k] for k in _SETTINGS_ENV if k in os.environ}
    env.update(torch_settings())
    return env


def header(env: dict) -> str:
    """One line: date · GPU · driver/CUDA · versions."""
    gpu_text = env.get("gpu", "?")
    if env.get("capability"):
        gpu_text += f" (sm_{env['capability'].replace('.', '')}, {env.get('sms', '?')} SMs)"
    parts = [env.get("date", "?"), gpu_text,
             f"driver {env.get('driver', '?')} (CUDA {env.get('cuda_driver_api', '?')})"]
    versions = env.get("versions", {})
    parts += [f"{_LABELS.get(m, m)} {v}" for m, v in versions.items() if m != "jaxlib"]
    if env.get("env"):
        parts.append(" ".join(f"{k}={v}" for k, v in env["env"].items()))
    return " · ".join(parts)
