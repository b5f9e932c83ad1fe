"""Which kernel family and configuration runs a problem.

Pure Python and free of CuTe imports, so kernel selection is tested on machines without a GPU.  The
kernel modules themselves (which import the DSL, ~3 s) are loaded only when a kernel is built.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Any

# What "auto" picks, in order of preference, per input dtype.
_AUTO_ORDER = {
    "float16": ("sm90", "sm80"),
    "bfloat16": ("sm90", "sm80"),
    "float32": ("simt",),
}


@dataclass(frozen=True)
class Family:
    """A kernel family: where it lives, what it takes, which GPUs run it."""

    name: str
    module: str
    kernel_class: str
    dtypes: tuple[str, ...]
    #: bytes of alignment every operand (address, leading and batch stride) must have;
    #: operands that have less are staged into aligned copies by the caller.
    required_alignment: int
    description: str

    def runs_on(self, capability: tuple[int, int]) -> bool:
        if self.name == "sm90":
            return capability == (9, 0)
        return capability >= (8, 0)

    def load(self):
        return importlib.import_module(self.module)


FAMILIES = {
    "sm90": Family("sm90", "cutematmul.kernels.sm90_hgemm", "Sm90Hgemm", ("float16", "bfloat16"),
                   16, "TMA + wgmma, warp-specialized persistent HGEMM (Hopper, sm_90a)"),
    "sm80": Family("sm80", "cutematmul.kernels.sm80_hgemm", "Sm80Hgemm", ("float16", "bfloat16"),
                   16, "cp.async + ldmatrix + mma.sync HGEMM (sm_80 and newer)"),
    "simt": Family("simt", "cutematmul.kernels.simt_sgemm", "SimtSgemm", ("float32",),
                   4, "true-fp32 SIMT SGEMM with cp.async staging (sm_80 and newer)"),
}

KERNEL_CHOICES = ("auto",) + tuple(FAMILIES)


@functools.lru_cache(maxsize=64)
def choose_family(dtype: str, capability: tuple[int, int], requested: str = "auto") -> Family:
    """The family that runs ``dtype`` on a GPU of ``capability``; ``requested`` may force one."""
    if requested not in KERNEL_CHOICES:
        raise ValueError(
            f"matmul: kernel must be one of {', '.join(map(repr, KERNEL_CHOICES))}; got {requested!r}."
        )
    if requested != "auto":
        family = FAMILIES[requested]
        if dtype not in family.dtypes:
            raise ValueError(
                f"matmul: kernel={requested!r} computes {'/'.join(family.dtypes)}, "
                f"but the operands are {dtype}."
            )
        if not family.runs_on(capability):
            raise ValueError(
                f"matmul: kernel={requested!r} does not run on a GPU of compute capability "
                f"{capability[0]}.{capability[1]}."
            )
        return family
    for name in _AUTO_ORDER[dtype]:
        if FAMILIES[name].runs_on(capability):
            return FAMILIES[name]
    raise RuntimeError(
        f"cutematmul: GPUs of compute capability {capability[0]}.{capability[1]} are not supported; "
        "cutematmul needs compute capability 8.0 or newer."
    )


@dataclass(frozen=True)
class KernelKey:
    """Everything that changes the generated code; the key of the compiled-kernel cache."""

    family: str
    arch: str
    dtype: str
    a_major: str
    b_major: str
    align_a: int  # in elements
    align_b: int
    align_c: int
    config: Any
    num_sms: int


def choose_config(family: Family, m: int, n: int, k: int, batch: int, num_sms: int):
    return family.load().choose_config(m, n, k, batch, num_sms)


def build_kernel(key: KernelKey):
    """Instantiate the kernel object a key describes (imports the CuTe DSL)."""
    family = FAMILIES[key.family]
    module = family.load()
    cls = getattr(module, family.kernel_class)
    aligns = (key.align_a, key.align_b, key.align_c)
    if key.family == "simt":
        return cls(key.config, key.a_major, key.b_major, *aligns)
    import cutlass

    dtype = {"float16": cutlass.Float16, "bfloat16": cutlass.BFloat16}[key.dtype]
    if key.family == "sm90":
        return cls(key.config, dtype, key.a_major, key.b_major, *aligns, num_sms=key.num_sms)
    return cls(key.config, dtype, key.a_major, key.b_major, *aligns)
