"""The interface every benchmarked backend implements.

A backend is one way to compute C = A @ B on the GPU: a library's own matmul (cuBLAS through CuPy
or PyTorch, XLA through JAX) or cutematmul called on that library's arrays.  Backends of one array
library share how arrays are made, checked and freed (the ``*Arrays`` classes in
``backends_<library>.py``); each adds only its ``matmul``.

Nothing here imports an array library: ``available()`` does, the first time it is asked, and says
why a backend cannot run instead of raising.

    b = get_backend("cutematmul-cupy")
    a, bm, out = b.make_inputs((m, n, k), "float16", layout="nn", seed=0)  # out is all NaN
    b.matmul(a, bm, out)      # asynchronous, on the library's current stream
    b.synchronize()

A cutematmul backend takes ``kernel=`` and ``precision=`` options (``get_backend(name,
precision="tf32")``), passed to ``cutematmul.matmul``; a baseline's ``precision`` says what its
float32 products compute (``torch``: IEEE fp32, ``torch-tf32``: TF32).

Imports: ``data``, ``shapes`` of this package; ``numpy``; lazily ``cutematmul.device`` and
``cutematmul.dispatch`` (the kernel names a backend may force).
"""

from __future__ import annotations

import numpy as np

from .data import HostOperands, Sample, host_operands
from .shapes import Shape


class Backend:
    """One benchmarked implementation; see the module docstring."""

    #: registry name, e.g. "cupy" or "cutematmul-torch"
    name = "?"
    #: array library whose arrays it takes ("cupy", "torch", "jax"); backends of one library
    #: share input arrays within a benchmark point
    library = "?"
    #: one line for listings
    description = ""
    #: "events": timed with CUDA events on ``stream_handle()``; "wall": host clock + synchronize
    clock = "events"
    #: True for the library's own cuBLAS product (the reference of the "x cuBLAS" ratio)
    cublas = False
    #: the float32 arithmetic of its products: "highest" (IEEE fp32), "high" (3xTF32) or "tf32";
    #: fixed for a baseline, an option of the cutematmul backends (see ``at_precision``)
    precision = "highest"

    def __init__(self, **options):
        self.options = options
        self._available: tuple[bool, str] | None = None

    def configure(self, **options) -> "Backend":
        """A new backend of this kind with ``options`` changed (e.g. ``kernel="sm80"``)."""
        return type(self)(**{**self.options, **options})

    def at_precision(self, precision: str) -> "Backend":
        """This backend as it runs a point of float32 ``precision`` (``Point.precision``): itself,
        since a baseline's arithmetic is fixed; a cutematmul backend passes it on."""
        return self

    @property
    def label(self) -> str:
        """The name as results show it: ``cutematmul-torch[sm80]`` when a kernel is forced."""
        kernel = self.options.get("kernel", "auto")
        return self.name if kernel == "auto" else f"{self.name}[{kernel}]"

    def __repr__(self) -> str:
        opts = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"<Backend {self.name}{opts}>"

    # ---- can it run here

    def available(self) -> tuple[bool, str]:
        """(True, "") when the library imports and sees a GPU, else (False, why). Never raises."""
        if self._available is None:
            try:
                self._available = self._probe()
            except Exception as exc:  # a probe must not take the benchmark down
                self._available = (False, f"{type(exc).__name__}: {_first_line(exc)}")
        return self._available

    def _probe(self) -> tuple[bool, str]:
        raise NotImplementedError

    def supports(self, dtype: str, batched: bool = False) -> tuple[bool, str]:
        """(True, "") when this backend computes ``dtype`` (``batched``: products with a batch
        dimension), else (False, why)."""
        return True, ""

    # ---- arrays

    def make_inputs(self, mnk, dtype: str, layout: str = "nn", seed: int = 0, batch=None):
        """Fresh Gaussian (a, b, out) for ``mnk`` = (m, n, k); ``out`` is filled with NaN."""
        shape = mnk if isinstance(mnk, Shape) else Shape(*mnk, batch=batch)
        return self.upload(host_operands(shape, dtype, layout, seed))

    def upload(self, host: HostOperands):
        """(a, b, out) in this library holding ``host``'s bits; ``out`` filled with NaN."""
        raise NotImplementedError

    def poison(self, out) -> None:
        """Fill ``out`` with NaN (so an element the product does not write is caught)."""
        raise NotImplementedError

    def release(self) -> None:
        """Give cached device memory back (memory pools), between benchmark points."""

    # ---- running

    def matmul(self, a, b, out):
        """Enqueue one product; returns the result (``out``, except where the library has no
        out=)."""
        raise NotImplementedError

    def synchronize(self) -> None:
        raise NotImplementedError

    def stream_handle(self) -> int | None:
        """The CUDA stream the products run on (None for clock == "wall")."""
        return None

    # ---- checking

    def sample(self, result, sample: Sample) -> np.ndarray:
        """The sampled elements of ``result`` as float64 on the host."""
        raise NotImplementedError

    def count_nonfinite(self, result) -> int:
        """How many elements of ``result`` are NaN or infinite."""
        raise NotImplementedError


def _first_line(exc: BaseException, limit: int = 300) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def describe_error(exc: BaseException) -> str:
    """``"TypeName: first line of the message"``, for result notes."""
    return f"{type(exc).__name__}: {_first_line(exc)}"


def unavailable_import(module: str, exc: BaseException) -> tuple[bool, str]:
    return False, f"{module} is not importable here ({describe_error(exc)})"


# ---- shared by the cutematmul-<library> backends


def cutematmul_probe() -> tuple[bool, str]:
    """Whether cutematmul can launch here: a driver, a GPU, compute capability 8.0 or newer."""
    from cutematmul import device

    try:
        count = device.device_count()
    except RuntimeError as exc:
        return False, _first_line(exc)
    if count == 0:
        return False, "no CUDA GPU is visible"
    info = device.device_info(0)
    if info.capability < (8, 0):
        return False, f"{info.name} has compute capability {info.capability}; cutematmul needs 8.0+"
    return True, ""


def cutematmul_supports(kernel: str, dtype: str) -> tuple[bool, str]:
    """Whether ``kernel=`` (auto or a family name) computes ``dtype``."""
    from cutematmul.dispatch import FAMILIES, KERNEL_CHOICES

    if kernel not in KERNEL_CHOICES:
        return False, f"kernel={kernel!r} is not one of {', '.join(KERNEL_CHOICES)}"
    if kernel != "auto" and dtype not in FAMILIES[kernel].dtypes:
        return False, f"kernel={kernel} does not compute {dtype}"
    return True, ""


class CutematmulBackend:
    """Mixin for the cutematmul backends: a forced ``kernel``, the ``precision=`` passed on,
    availability and dtype checks.

    Put it before the library's ``*Arrays`` class: ``class X(CutematmulBackend, CupyArrays)``.
    """

    def __init__(self, kernel: str = "auto", precision: str = "highest", **options):
        super().__init__(kernel=kernel, precision=precision, **options)
        self.kernel = kernel
        self.precision = precision

    def at_precision(self, precision):
        return self if precision == self.precision else self.configure(precision=precision)

    def _probe(self):
        ok, why = super()._probe()
        return cutematmul_probe() if ok else (ok, why)

    def supports(self, dtype, batched=False):
        ok, why = cutematmul_supports(self.kernel, dtype)
        return super().supports(dtype, batched) if ok else (ok, why)
