"""The registry of benchmarked backends: name -> ``Backend``.

    from cutematmul.bench import BACKENDS, get_backend
    for name, backend in BACKENDS.items():
        ok, why = backend.available()      # (False, reason) when its library or a GPU is missing

Every backend is listed whether or not it can run here; registering imports no array library.
To add one: subclass the ``*Arrays`` class of its library (``backends_cupy.CupyArrays``,
``backends_torch.TorchArrays``, ``backends_jax.JaxArrays``), give it a ``name`` and a ``matmul``
(JAX: a ``product``), and ``register`` an instance below.

Imports: ``base`` and ``backends_cupy``, ``backends_jax``, ``backends_torch`` of this package
(each imports its array library only when a backend of it is made).
"""

from __future__ import annotations

from .backends_cupy import CupyMatmul, CutematmulCupy
from .backends_jax import CutematmulJax, JaxMatmul
from .backends_torch import CutematmulTorch, TorchMatmul, TorchTF32Matmul
from .base import Backend

BACKENDS: dict[str, Backend] = {}

#: What a plain ``python -m cutematmul.bench`` runs: cutematmul on CuPy arrays beside cuBLAS
#: through CuPy and through PyTorch, each where it can run.  JAX (XLA, and cutematmul inside
#: ``jax.jit``) runs when named, with ``--backends all`` or with ``--full``.
DEFAULT_BACKENDS = ("cutematmul-cupy", "cupy", "torch")
#: Added to the default selection when float32 is measured at precision "high" or "tf32": cuBLAS
#: TF32 through PyTorch (it runs float32 points only).
TF32_BASELINE = "torch-tf32"
#: (default backend, the one that runs in its place when it cannot run here): without CuPy,
#: cutematmul on PyTorch tensors.
STAND_INS = (("cutematmul-cupy", "cutematmul-torch"),)


def register(backend: Backend) -> Backend:
    """Add ``backend`` under its name (replacing one of the same name)."""
    BACKENDS[backend.name] = backend
    return backend


def get_backend(name: str, **options) -> Backend:
    """The registered backend ``name``; with ``options`` (e.g. ``kernel="sm80"``), a new one so
    configured."""
    try:
        backend = BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}.") from None
    return backend.configure(**options) if options else backend


def default_backends(precision: str = "highest") -> tuple[str, ...]:
    """What a plain run measures when float32 is at ``precision``: ``DEFAULT_BACKENDS``, and the
    TF32 baseline beside them unless ``precision`` is "highest"."""
    return DEFAULT_BACKENDS if precision == "highest" else DEFAULT_BACKENDS + (TF32_BASELINE,)


def is_cutematmul(backend: Backend) -> bool:
    return backend.name.startswith("cutematmul")


register(CutematmulCupy())
register(CutematmulTorch())
register(CutematmulJax())
register(CupyMatmul())
register(TorchMatmul())
register(TorchTF32Matmul())
register(JaxMatmul())
