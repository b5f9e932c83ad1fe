"""Every tier of compiled kernels: where a ``KernelKey`` finds its compiled code.

Tiers, looked up in this order:

1. **memory**: a dict in this process.  ``get_compiled(key)`` returns the function the launch
   path calls with plain ints, ``fn(a_ptr, b_ptr, c_ptr, m, n, k, batch, splits, lda, bsa, ldb,
   bsb, ldc, bsc, stream)`` (the reduction's: ``kernels/splitk_reduce.py``); a hit is one dict
   lookup.
2. **disk**: ``<digest>.so`` plus ``<digest>.json`` in the cache directory.  A hit is a ``dlopen``
   with ``ctypes`` after the CuTe DSL runtime library (``libcute_dsl_runtime.so``, the small
   library the DSL wheel ships) and ``libtvm_ffi.so``; calls go through the TVM-FFI C ABI
   (``ffi.py``).  ~1 ms per object with its checksum; neither the DSL compiler (``cutlass``,
   ``cutlass.cute``: ~3 s to import) nor the ``tvm_ffi`` package (which imports PyTorch when it
   is installed) is imported.
3. **compile**: ``cute.compile`` (imports the DSL; 1-15 s per key on a small CPU), then the object
   is exported (``export_to_c``), linked into a shared object by the system linker (``$CC``,
   ``cc``, ``gcc``, ``clang`` or ``ld``; only the machine that compiles needs one), written to disk
   and loaded from there.  Without a linker the plain object ``<digest>.o`` is stored instead;
   loading that goes through the DSL (~3 s import, no compile).

The JAX tier (``get_xla_object``) keeps the object that ``xla.py`` embeds in its XLA custom call:
memory, then ``<digest>.xla`` on disk, then the caller's ``build()`` (``cutlass.jax``).  It is a
second compile of the same ``KernelKey``: the custom call target (``CuteDSLRT_NvJaxCutlassCall*``
in the runtime library) loads a CuTe-ABI object (``dump_to_object``, symbol prefix
``cutlass_call``, argument metadata inside) and calls it with a stream and one tensor descriptor
(pointer, shape, strides) per XLA buffer.  The pointer path's object is a TVM-FFI function
(``__tvm_ffi_cutematmul_gemm``, no CuTe metadata) taking raw pointers and integers, which
that target can neither find nor feed: one object cannot serve both.

Disk entries (files: ``cache_disk.py``).  ``digest`` is the sha256 of ``repr(key)`` (plus the
tier and, for JAX, the broadcast flags, the JAX version and the builder's source), the target arch,
a digest of every file under ``cutematmul/kernels/`` and ``cutematmul/configs/`` and of
``dispatch.build_kernel`` and ``dispatch.compile_key``, the nvidia-cutlass-dsl and apache-tvm-ffi
versions, the DSL runtime flavor (cu12/cu13) and the host (OS, CPU).  ``<digest>.json``, written
last, holds the payload's size and sha256; every load checks both, and an entry that fails
(truncated, corrupt, unloadable) is removed and rebuilt.  Payloads are built in a scratch directory
inside the cache directory and moved into place with ``os.replace``.

Directory: ``$CUTEMATMUL_CACHE_DIR``, else the user's cache directory (``platformdirs``, e.g.
``~/.cache/cutematmul``); created with mode 0700.  It is not trusted (never read nor written,
memory only, one warning) when it or its parent is owned by someone other than this user or root,
or is writable by group or others (a sticky parent such as ``/tmp`` is allowed).  A read-only
directory is read; a key missing from it, like any failed write (read-only, disk full), is
compiled into memory with one warning per process.  ``CUTEMATMUL_DISK_CACHE=0`` turns the disk
tier off.

Concurrency.  Within a process a lock per key: compiling one key never blocks lookups of keys
already in memory or on disk; compiles themselves are serialized (the DSL compiler is not
thread-safe).  Across processes a ``filelock`` per key (``<digest>.lock``): N processes that miss
the same key compile it once, the others wait, then load it (outside the lock, in parallel).

The tuned tier keeps the autotuner's winners (``cutematmul.tune``): per ``dispatch.Problem``,
the (config, splits, transposed) the launch path takes instead of the wave model's choice, in
memory and in ``tuned.json`` in the same directory (one record per problem, written atomically
under ``tuned.lock``, read once per process; records made under other kernel sources or versions
are ignored).  Plan caches elsewhere (``launch``) register with ``on_change`` and are cleared
when the table changes or the cache is cleared.

Public: ``get_compiled``, ``get_xla_object`` (-> ``XlaObject``), ``cache_info``, ``cache_clear``,
``tuned_choice``, ``record_tuned``, ``trial_tuned``, ``tuned_table``, ``on_change``,
``cache_dir``, ``disk_entry``, ``unwritable_reason``, ``entry_digest``, ``dsl_arch``,
``runtime_library``.  Ahead-of-time builds: ``aot.py``; the CLI: ``__main__.py``.

Imports: ``cache_disk``, ``ffi`` (stored kernels are called through the TVM-FFI C ABI, without
importing the ``tvm_ffi`` package); lazily ``dispatch`` (whose ``compile_key`` imports the DSL:
only to compile), ``kernels`` (to load a plain object: ``tvm_ffi`` without PyTorch),
``cuda.bindings`` and ``device`` (``dsl_arch`` without a forced arch).  Never ``launch``,
``api`` or ``xla``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from . import cache_disk, ffi
from .cache_disk import Corrupt, Directory

#: The exported function of every pointer-path object (``__tvm_ffi_`` + this).
SYMBOL = "cutematmul_gemm"
#: Seconds a process waits for another one compiling the same key before compiling it itself.
LOCK_TIMEOUT_S = 600


# ----------------------------------------------------------------------------- state


@dataclass
class _Tier:
    """One in-memory tier and its counters."""

    items: dict = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    compiles: int = 0
    compile_seconds: float = 0.0

    def reset(self) -> None:
        self.items.clear()
        self.hits = self.misses = self.compiles = 0
        self.compile_seconds = 0.0

    def info(self) -> dict:
        return {"entries": len(self.items), "hits": self.hits, "misses": self.misses,
                "compiles": self.compiles, "compile_seconds": self.compile_seconds,
                "keys": list(self.items)}


@dataclass
class _State:
    """The explicit caches of this module (its only mutable state)."""

    kernels: _Tier = field(default_factory=_Tier)
    xla: _Tier = field(default_factory=_Tier)
    keep_alive: dict = field(default_factory=dict)  # key -> the DSL's compiled object
    disk: dict = field(default_factory=lambda: dict(hits=0, writes=0, errors=0, load_seconds=0.0))
    directories: dict = field(default_factory=dict)  # configured path -> Directory
    key_locks: dict = field(default_factory=dict)
    guard: threading.Lock = field(default_factory=threading.Lock)  # held for microseconds
    compile_lock: threading.RLock = field(default_factory=threading.RLock)
    warned: set = field(default_factory=set)
    tuned: dict | None = None  # dispatch.Problem -> (config, splits, transposed); None: unread
    on_change: list = field(default_factory=list)  # callables clearing plans made from ``tuned``


_STATE = _State()


@dataclass(frozen=True)
class XlaObject:
    """What the XLA custom call embeds: the object's bytes and their sha256 (its cache key)."""

    module: bytes
    fingerprint: bytes


# ----------------------------------------------------------------------------- public API


def get_compiled(key):
    """The compiled pointer-path function for ``key``: memory, else disk, else compile."""
    fn = _STATE.kernels.items.get(key)
    if fn is not None:
        _STATE.kernels.hits += 1
        return fn
    return _miss(_STATE.kernels, key, lambda: _kernel_from_disk_or_compile(key))


def get_xla_object(key, bcast_a: bool, bcast_b: bool, build: Callable[[], Any]) -> XlaObject:
    """The object XLA embeds for ``key`` and the broadcast flags: memory, disk, else ``build()``.

    ``build`` compiles it (through ``cutlass.jax``) and returns bytes or an object with a
    ``module`` attribute holding them; it runs under this module's compile lock.
    """
    cache_key = (key, bool(bcast_a), bool(bcast_b))
    hit = _STATE.xla.items.get(cache_key)
    if hit is not None:
        _STATE.xla.hits += 1
        return hit
    return _miss(_STATE.xla, cache_key, lambda: _xla_from_disk_or_build(key, *cache_key[1:], build))


def cache_info() -> dict:
    """Counters and contents of every tier: ``memory``, ``disk``, ``jax`` and ``tuned``."""
    tuned = _STATE.tuned or {}
    return {"memory": _STATE.kernels.info(), "disk": {**_disk_state(), **_STATE.disk},
            "jax": _STATE.xla.info(), "tuned": {"entries": len(tuned), "problems": list(tuned)}}


def cache_clear(disk: bool = False) -> None:
    """Forget every kernel held in memory; with ``disk=True`` also delete this cache's files.

    Functions handed out before stay callable.  Only the files this cache writes are removed.
    """
    with _STATE.guard:
        _STATE.kernels.reset()
        _STATE.xla.reset()
        _STATE.keep_alive.clear()
        _STATE.disk.update(hits=0, writes=0, errors=0, load_seconds=0.0)
        _STATE.directories.clear()
        _STATE.tuned = None
    if disk:
        directory = _directory()
        if directory is not None:
            cache_disk.remove_all(directory.path)
    _changed()


# ----------------------------------------------------------------------------- tuned schedules


def tuned_choice(problem):
    """The tuned (config, splits, transposed) of ``problem`` (a ``dispatch.Problem``), or None."""
    return _tuned().get(problem)


def record_tuned(problem, choice, record: dict | None = None, persist: bool = True) -> bool:
    """Make ``choice`` the schedule of ``problem``; with ``persist``, also in ``tuned.json``
    (``record``: what the tuner measured, kept beside it).  True when it reached the disk."""
    table = _tuned()
    table[problem] = choice
    _changed()
    directory = _directory() if persist else None
    if directory is None or not directory.writable:
        return False
    row = {"problem": list(problem), **_choice_fields(choice), **(record or {})}
    try:
        held = cache_disk.lock(directory.path, "tuned", LOCK_TIMEOUT_S)
        try:
            rows = [r for r in cache_disk.read_tuned(directory.path)
                    if r.get("problem") != row["problem"]]
            cache_disk.write_tuned(directory.path, rows + [row])
        finally:
            held.release()
    except Exception as exc:  # a full or read-only disk: the choice stays in memory
        _warn_once("tuned-write", f"cutematmul: the tuned schedules could not be written to "
                                  f"{directory.path} ({exc}); they are kept in memory only.")
        return False
    return True


@contextmanager
def trial_tuned(problem, choice):
    """``choice`` as ``problem``'s schedule inside the block only (memory; the tuner's trials)."""
    table = _tuned()
    missing = object()
    before = table.get(problem, missing)
    table[problem] = choice
    _changed()
    try:
        yield
    finally:
        if before is missing:
            table.pop(problem, None)
        else:
            table[problem] = before
        _changed()


def on_change(clear: Callable[[], None]) -> None:
    """Register ``clear``, called whenever the tuned table changes or the cache is cleared."""
    if clear not in _STATE.on_change:
        _STATE.on_change.append(clear)


def _changed() -> None:
    for clear in list(_STATE.on_change):
        clear()


def _choice_fields(choice) -> dict:
    config, splits, transposed = choice
    return {"config": asdict(config), "splits": int(splits),
            "transposed": bool(transposed)}


def _tuned() -> dict:
    """The tuned table of this process (read from disk on first use)."""
    table = _STATE.tuned
    return table if table is not None else _load_tuned()


def _load_tuned() -> dict:
    """The table from the trusted directory's ``tuned.json``, kept in memory for the process."""
    # Planning alone never creates the cache directory: only an existing one is judged and read.
    exists = not cache_disk.disabled() and cache_disk.configured_directory().is_dir()
    directory = _directory() if exists else None
    table = tuned_table(directory.path) if directory is not None else {}
    with _STATE.guard:
        if _STATE.tuned is None:
            _STATE.tuned = table
        return _STATE.tuned


def tuned_table(directory: Path) -> dict:
    """{``dispatch.Problem``: (config, splits, transposed)} recorded in ``directory`` in this
    environment.  A record is kept only if it names a schedule the tuner could have timed for its
    problem (``dispatch.tunable``): a stale or edited record of a valid configuration in a
    combination the kernels are not built for (fp32 partials into a 16-bit C, say) would
    otherwise reach the launch."""
    from .dispatch import EVERY_CANDIDATE, FAMILIES, Problem, tunable

    table = {}
    for row in cache_disk.read_tuned(Path(directory)):
        try:
            problem = Problem(*row["problem"])
            config = FAMILIES[problem.family].configs().Config(**row["config"])
            config.validate()
            splits, transposed = int(row["splits"]), bool(row["transposed"])
            if splits < 1:
                raise ValueError(f"splits {splits}")
            if (config, splits, transposed) not in tunable(problem, EVERY_CANDIDATE):
                continue
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
        table[problem] = (config, splits, transposed)
    return table


def cache_dir() -> Path:
    """The configured cache directory: ``$CUTEMATMUL_CACHE_DIR`` or the user's cache dir."""
    return cache_disk.configured_directory()


def disk_entry(key, directory: Path | None = None) -> Path | None:
    """The payload of ``key``'s verified pointer-path entry on disk, or None (nothing is loaded)."""
    return _verified_payload(entry_digest(key), directory)


def _verified_payload(digest: str, directory: Path | None) -> Path | None:
    """The payload of the verified entry named ``digest`` in ``directory`` (default: the
    configured one), or None; nothing is loaded."""
    found = _directory(directory)
    if found is None:
        return None
    try:
        entry = cache_disk.read_entry(found.path, digest)
    except Corrupt:
        return None
    return None if entry is None else entry[0]


def unwritable_reason(directory: Path | None = None) -> str:
    """'' when ``directory`` (default: the configured one) can take new entries, else why not."""
    if cache_disk.disabled():
        return "the disk tier is off (CUTEMATMUL_DISK_CACHE)"
    path = Path(directory) if directory is not None else cache_disk.configured_directory()
    found = _directory(path) or _STATE.directories[str(path)]
    return "" if found.trusted and found.writable else found.reason


def entry_digest(key, tier: str = "kernel", extra: str = "") -> str:
    """The sha256 naming ``key``'s disk entry in ``tier`` (see the module docstring)."""
    lines = [f"tier={tier}", f"key={key!r}", f"arch={key.arch}", extra]
    lines += [f"{name}={value}" for name, value in cache_disk.environment()]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def dsl_arch() -> str:
    """The target the CuTe DSL compiles for in this process, found without importing the DSL.

    The DSL's own answer when it is already imported; else ``CUTE_DSL_ARCH``; else what the DSL
    would detect: GPU 0's ``sm_XY`` (``a`` suffix from sm_90 on), ``sm_100a`` without a GPU.
    """
    dsl = sys.modules.get("cutlass.cutlass_dsl")
    if dsl is not None and hasattr(dsl, "CuTeDSL"):
        return str(dsl.CuTeDSL._get_dsl().envar.arch)
    return os.environ.get("CUTE_DSL_ARCH") or _detected_arch()


def runtime_library() -> Path:
    """The CuTe DSL runtime library of this process (the flavor the DSL itself would pick)."""
    return cache_disk.runtime()[1]


# ----------------------------------------------------------------------------- tier flow


def _miss(tier: _Tier, key, produce: Callable[[], Any]):
    """Fill ``tier[key]`` once per process; lookups of other keys never wait for it."""
    with _STATE.guard:
        lock = _STATE.key_locks.setdefault((id(tier), key), threading.Lock())
    with lock:
        value = tier.items.get(key)
        if value is not None:
            tier.hits += 1
            return value
        tier.misses += 1
        value = produce()
        tier.items[key] = value
        return value


@dataclass(frozen=True)
class _Recipe:
    """How one tier reads, builds and stores the payload of its disk entries."""

    tier: _Tier
    key_text: str
    load: Callable[[Path, bytes], Any]  # verified payload -> value (``Corrupt`` if unusable)
    build: Callable[[Path], tuple[Path | None, Any]]  # scratch -> (payload or None, built)
    stored: Callable[[Path, Any], Any]  # (payload in place, built) -> value
    unstored: Callable[[Any], Any]  # built -> value, when it could not be stored
    in_memory: Callable[[], Any]  # compile without touching the disk
    digest: str = ""


def _kernel_from_disk_or_compile(key):
    recipe = _Recipe(
        _STATE.kernels, repr(key), _load_kernel,
        build=lambda scratch: _build_kernel_payload(key, scratch),
        stored=lambda path, compiled: _kernel_stored(key, path, compiled),
        unstored=lambda compiled: _kept(key, compiled),
        in_memory=lambda: _kept(key, _timed(_STATE.kernels, lambda: _compile_kernel(key))),
    )
    return _through_disk(recipe, lambda: entry_digest(key))


def _xla_from_disk_or_build(key, bcast_a: bool, bcast_b: bool, build):
    def built() -> XlaObject:
        module = _module_bytes(build())
        return XlaObject(module, hashlib.sha256(module).digest())

    def build_payload(scratch: Path):
        obj = _timed(_STATE.xla, built)
        path = scratch / "object.xla"
        path.write_bytes(obj.module)
        return path, obj

    recipe = _Recipe(
        _STATE.xla, f"{key!r} bcast_a={bcast_a} bcast_b={bcast_b}", _load_xla,
        build=build_payload, stored=lambda path, obj: obj, unstored=lambda obj: obj,
        in_memory=lambda: _timed(_STATE.xla, built),
    )
    return _through_disk(recipe, lambda: _xla_digest(key, bcast_a, bcast_b, build))


def _xla_digest(key, bcast_a: bool, bcast_b: bool, build) -> str:
    """The sha256 naming the JAX tier's entry of ``key`` and the broadcast flags."""
    extra = (f"bcast_a={bcast_a} bcast_b={bcast_b} jax={cache_disk.version('jax')} "
             f"builder={cache_disk.source_digest(build)}")
    return entry_digest(key, "xla", extra)


def xla_disk_entry(key, bcast_a: bool, bcast_b: bool, build,
                   directory: Path | None = None) -> Path | None:
    """The payload of the JAX tier's verified entry for ``key`` and the broadcast flags (what
    ``get_xla_object`` with this ``build`` would load), or None; nothing is loaded."""
    return _verified_payload(_xla_digest(key, bool(bcast_a), bool(bcast_b), build), directory)


def _through_disk(recipe: _Recipe, digest: Callable[[], str]):
    """Load ``recipe``'s entry from disk, or build it under the key's file lock and store it."""
    directory = _directory()
    if directory is None:
        return recipe.in_memory()
    recipe = replace(recipe, digest=digest())
    value, corrupt = _load_entry(directory, recipe)
    if value is not None:
        return value
    if not directory.writable:
        _count_corrupt(directory, recipe, corrupt, removed=False)
        _warn_unwritable(directory)
        return recipe.in_memory()
    lock = _lock(directory, recipe.digest)
    if lock is None:
        return recipe.in_memory()
    try:  # another process may have built it meanwhile: check (not load) under the lock
        corrupt = _check_entry(directory, recipe)
        if corrupt != "present":
            if corrupt:
                cache_disk.remove_entry(directory.path, recipe.digest)
                _count_corrupt(directory, recipe, corrupt, removed=True)
            return _build_and_store(directory, recipe)
    finally:
        lock.release()
    value, corrupt = _load_entry(directory, recipe)  # outside the lock: waiters load in parallel
    if value is not None:
        return value
    _count_corrupt(directory, recipe, corrupt, removed=False)  # the next lock holder removes it
    return recipe.in_memory()


def _check_entry(directory: Directory, recipe: _Recipe) -> str | None:
    """'present' for a verified entry, None when there is none, else why it is corrupt."""
    try:
        return "present" if cache_disk.read_entry(directory.path, recipe.digest) else None
    except Corrupt as exc:
        return str(exc)


def _build_and_store(directory: Directory, recipe: _Recipe):
    try:
        scratch = cache_disk.scratch(directory.path, recipe.digest)
    except OSError as exc:
        _mark_unwritable(directory, exc)
        return recipe.in_memory()
    try:
        payload, built = recipe.build(scratch)
        if payload is None:
            return recipe.unstored(built)
        try:
            path = cache_disk.store(directory.path, recipe.digest, payload, recipe.key_text)
        except OSError as exc:
            _mark_unwritable(directory, exc)
            return recipe.unstored(built)
        _STATE.disk["writes"] += 1
        try:
            return recipe.stored(path, built)
        except Corrupt as exc:  # written but not loadable: do not leave it for the next process
            cache_disk.remove_entry(directory.path, recipe.digest)
            _count_corrupt(directory, recipe, str(exc), removed=True)
            return recipe.unstored(built)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _load_entry(directory: Directory, recipe: _Recipe):
    """(value, None) for a good entry, (None, reason) for a corrupt one, (None, None) if absent."""
    start = time.perf_counter()
    try:
        entry = cache_disk.read_entry(directory.path, recipe.digest)
        if entry is None:
            return None, None
        value = recipe.load(*entry)
    except Corrupt as exc:
        return None, str(exc)
    _STATE.disk["hits"] += 1
    _STATE.disk["load_seconds"] += time.perf_counter() - start
    return value, None


# ----------------------------------------------------------------------------- pointer-path kernels


def _compile_kernel(key):
    """The DSL's compiled TVM-FFI function for ``key`` (imports the DSL)."""
    from .dispatch import compile_key

    target = dsl_arch()
    if target != key.arch:
        raise ValueError(
            f"cutematmul: the kernel key targets {key.arch}, but the CuTe DSL in this process "
            f"compiles for {target} (CUTE_DSL_ARCH is read once, when the DSL is imported); build "
            f"it in a process started with CUTE_DSL_ARCH={key.arch}, e.g. `python -m cutematmul "
            f"precompile --arch {key.arch}`."
        )
    return compile_key(key)


def _build_kernel_payload(key, scratch: Path) -> tuple[Path | None, Any]:
    """Compile ``key`` and write its object into ``scratch``, linked when a linker exists.

    Returns (``kernel.so``, ``kernel.o`` or None when it must not be stored; the DSL's compiled
    object).
    """
    def build():
        compiled = _compile_kernel(key)
        obj = scratch / "kernel.o"
        compiled.export_to_c(str(obj), function_name=SYMBOL, export_only_tvm_ffi_symbols=True)
        return compiled, obj

    compiled, obj = _timed(_STATE.kernels, build)
    if not _dsl_flavor_matches():
        return None, compiled
    shared = scratch / "kernel.so"
    problem = cache_disk.link(obj, shared)
    if problem:
        _warn_once("linker", (
            f"cutematmul: {problem}, so compiled kernels are stored as plain objects and loading "
            "them imports the CuTe DSL (~3 s, no compile). Install binutils or a C compiler "
            "where kernels are compiled."
        ))
    return (obj if problem else shared), compiled


def _kernel_stored(key, path: Path, compiled):
    """The stored shared object's function (loading it proves the entry); a plain ``.o`` would
    need the DSL to load, so that keeps the compiled copy."""
    if path.suffix == ".so":
        return _load_kernel(path, b"")
    return _kept(key, compiled)


def _kept(key, compiled):
    """The raw TVM-FFI function of a DSL compile, its owner kept alive (the kwargs wrapper the
    DSL returns costs ~5 us per call)."""
    _STATE.keep_alive[key] = compiled
    return getattr(compiled, "_tvm_ffi_function", None) or compiled


def _timed(tier: _Tier, build: Callable[[], Any]):
    """Run one compile under the process-wide compile lock, counting it in ``tier``."""
    with _STATE.compile_lock:
        start = time.perf_counter()
        value = build()
        tier.compile_seconds += time.perf_counter() - start
        tier.compiles += 1
        return value


def _load_kernel(path: Path, data: bytes):
    """The exported function of a stored object; ``Corrupt`` when it does not load."""
    if path.suffix == ".so":
        # Environment errors (no libtvm_ffi.so, no DSL runtime) propagate: not the entry's fault.
        ffi.library()
        cache_disk.preload_runtime()
        try:
            return ffi.load(path, SYMBOL)
        except (OSError, AttributeError) as exc:  # the file does not open, or lacks the symbol
            raise Corrupt(f"{path.name} does not load ({exc})") from None
    from . import kernels  # noqa: F401  (tvm_ffi without PyTorch: kernels/__init__.py)
    from cutlass.cute.runtime import load_module  # an object stored without a linker

    try:
        return load_module(str(path), enable_tvm_ffi=True)[SYMBOL]
    except Exception as exc:
        raise Corrupt(f"{path.name} does not load ({exc})") from None


def _load_xla(path: Path, data: bytes) -> XlaObject:
    return XlaObject(data, hashlib.sha256(data).digest())


def _module_bytes(result) -> bytes:
    module = getattr(result, "module", result)
    if not isinstance(module, (bytes, bytearray)):
        raise TypeError(
            "cutematmul: the XLA build function must return the object's bytes or an object "
            f"with a bytes 'module' attribute; got {type(result).__name__}."
        )
    return bytes(module)


# ----------------------------------------------------------------------------- directory and locks


def _directory(path: Path | None = None) -> Directory | None:
    """The trusted cache directory (created 0700 when missing); None: disk tier off or untrusted."""
    if cache_disk.disabled():
        return None
    path = Path(path) if path is not None else cache_disk.configured_directory()
    found = _STATE.directories.get(str(path))
    if found is None:
        found = cache_disk.judge(path)
        _STATE.directories[str(path)] = found
        if not found.trusted:
            _warn_once(f"untrusted:{path}", (
                f"cutematmul: the kernel cache directory {path} is not used: {found.reason}. "
                "Compiled kernels are kept in memory only; make it private to you (chmod 700) "
                "or set CUTEMATMUL_CACHE_DIR to a directory of your own."
            ))
    return found if found.trusted else None


def _disk_state() -> dict:
    """Directory, state, entries and bytes of the configured directory (nothing is created)."""
    path = cache_disk.configured_directory()
    found = _STATE.directories.get(str(path))
    if cache_disk.disabled():
        state = "off (CUTEMATMUL_DISK_CACHE)"
    elif found is None:
        state = "not used yet"
    elif not found.trusted:
        state = f"untrusted: {found.reason}"
    else:
        state = "ok" if found.writable else f"read-only: {found.reason}"
    readable = found is None or found.trusted
    listed = cache_disk.listing(path) if readable else {"entries": 0, "bytes": 0}
    return {"directory": str(path), "state": state, **listed}


def _lock(directory: Directory, digest: str):
    """The key's cross-process lock, held; None (compile into memory) when it cannot be had."""
    import filelock

    try:
        return cache_disk.lock(directory.path, digest, LOCK_TIMEOUT_S)
    except filelock.Timeout:
        _warn_once("lock-timeout", (
            f"cutematmul: waited {LOCK_TIMEOUT_S} s for another process compiling a kernel into "
            f"{directory.path}; compiling it here, into memory only."
        ))
    except OSError as exc:
        _mark_unwritable(directory, exc)
    return None


def _dsl_flavor_matches() -> bool:
    """Whether the DSL compiled with the runtime flavor that keys entries (one warning if not)."""
    from cutlass.base_dsl.version_info import CUDA_VERSION

    flavor = cache_disk.runtime()[0]
    if f"cu{CUDA_VERSION.major}" == flavor:
        return True
    _warn_once("flavor", (
        f"cutematmul: the CuTe DSL compiles with its cu{CUDA_VERSION.major} flavor, but disk "
        f"entries are keyed to {flavor} (the flavor this driver selects); compiled kernels are "
        "kept in memory only."
    ))
    return False


@functools.cache
def _detected_arch() -> str:
    """GPU 0's target as the DSL names it (sm_90 -> sm_90a), or the DSL's sm_100a without one."""
    from .device import device_info
    from .dispatch import target_arch

    try:
        return target_arch(device_info(0).capability)
    except RuntimeError:  # no driver or no GPU: what the DSL defaults to
        return "sm_100a"


def _warn_once(topic: str, message: str) -> None:
    with _STATE.guard:
        if topic in _STATE.warned:
            return
        _STATE.warned.add(topic)
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def _mark_unwritable(directory: Directory, exc: OSError) -> None:
    directory.writable = False
    directory.reason = f"writing failed ({exc.strerror or exc})"
    _STATE.disk["errors"] += 1
    _warn_unwritable(directory)


def _warn_unwritable(directory: Directory) -> None:
    _warn_once("unwritable", (
        f"cutematmul: cannot write compiled kernels to {directory.path} ({directory.reason}); "
        "kernels missing there are compiled into memory only, for this process."
    ))


def _count_corrupt(directory: Directory, recipe: _Recipe, reason: str | None,
                   removed: bool) -> None:
    if reason is None:
        return
    _STATE.disk["errors"] += 1
    action = "removed it and rebuilt it" if removed else "compiled the kernel into memory instead"
    _warn_once(f"corrupt:{recipe.digest}", (
        f"cutematmul: the cached kernel {recipe.digest[:16]} in {directory.path} was unusable "
        f"({reason}); {action}."
    ))
