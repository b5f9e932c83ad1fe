"""The on-disk store of compiled kernels: directory, entry files, fingerprint, runtime, linker.

``cache.py`` decides when to read, build and write; this module only knows how.  It keeps no state
(the functions marked ``functools.cache`` compute per-process facts once) and warns about nothing:
failures come back as exceptions or reasons, and ``cache.py`` turns them into one warning each.

An entry is two files named by its digest (a sha256, see ``entry_digest`` in ``cache.py``):

* ``<digest>.so`` (a linked shared object), ``<digest>.o`` (an unlinked object, when no linker
  was found) or ``<digest>.xla`` (the object XLA embeds): the payload;
* ``<digest>.json``: format, key text, payload name, size, sha256, creation time and the
  environment that keyed it.  Written last, by ``os.replace``, so an entry without it does not
  exist and a reader never sees half a file.

``<digest>.lock`` is the key's ``filelock``; scratch directories ``.<digest>.*.tmp`` hold a build
until its payload is moved into place, and ``.<digest>.*.tmp`` / ``.tuned.*.tmp`` files are
metadata and ``tuned.json`` being written.

Imports: ``ffi`` (where ``libtvm_ffi.so`` is, to link), ``dispatch`` (lazily, for the
fingerprint), ``filelock``, ``platformdirs``.  No DSL.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import ffi

#: Bump when the entry layout, or anything outside the fingerprinted sources that shapes the
#: generated code, changes.
FORMAT = 1
PAYLOAD_SUFFIXES = (".so", ".o", ".xla")
RUNTIME_LIBRARY = "libcute_dsl_runtime.so"
_ENTRY_NAME = re.compile(r"^[0-9a-f]{64}\.(so|o|xla|json|lock)$")
#: The autotuner's table of winning schedules (``cache.py``'s tuned tier) and its lock.
TUNED = "tuned.json"
_TUNED_FILES = (TUNED, "tuned.lock")
_SCRATCH_NAME = re.compile(r"^\.(?:[0-9a-f]{64}|tuned)\..+\.tmp$")


class Corrupt(Exception):
    """An entry that exists but cannot be used; the message says why."""


@dataclass
class Directory:
    """A cache directory as this process judged it."""

    path: Path
    trusted: bool
    writable: bool
    reason: str = ""  # why it is not trusted, or not writable


# ----------------------------------------------------------------------------- directory


def configured_directory() -> Path:
    """``$CUTEMATMUL_CACHE_DIR``, else the user's cache directory (``platformdirs``)."""
    configured = os.environ.get("CUTEMATMUL_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("cutematmul", appauthor=False))


def disabled() -> bool:
    """Whether ``CUTEMATMUL_DISK_CACHE`` turns the disk tier off."""
    value = os.environ.get("CUTEMATMUL_DISK_CACHE", "1").strip().lower()
    return value in ("0", "off", "false", "no")


def judge(path: Path) -> Directory:
    """Create ``path`` (mode 0700) if missing and decide whether it can be trusted and written."""
    try:
        _make_private_directory(path)
    except OSError as exc:
        return Directory(path, False, False, f"it could not be created ({exc.strerror or exc})")
    real = path.resolve()
    problem = _ownership_problem(real, "it") or _ownership_problem(real.parent, "its parent")
    if problem:
        return Directory(real, False, False, problem)
    writable = os.access(real, os.W_OK)
    return Directory(real, True, writable, "" if writable else "it is read-only")


def _make_private_directory(path: Path) -> None:
    if path.is_dir():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        return
    os.chmod(path, 0o700)  # mkdir's mode is filtered by the umask


def _ownership_problem(path: Path, what: str) -> str:
    """Why ``path`` cannot be trusted ('' when it can): its owner and group/other write bits.

    Root-owned directories are trusted (an image may ship one); a sticky parent such as /tmp is
    fine, since others cannot rename what is ours in it.
    """
    if not hasattr(os, "getuid"):
        return ""
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        return f"{what} ({path}) is not a directory"
    if st.st_uid not in (os.getuid(), 0):
        return (f"{what} ({path}) is owned by uid {st.st_uid}, not by this user "
                f"(uid {os.getuid()}) or root")
    open_bits = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if open_bits and not (what == "its parent" and st.st_mode & stat.S_ISVTX):
        who = {stat.S_IWGRP: "its group", stat.S_IWOTH: "all users"}.get(open_bits,
                                                                          "group and others")
        return f"{what} ({path}) is writable by {who} (mode {stat.S_IMODE(st.st_mode):o})"
    return ""


def listing(path: Path) -> dict:
    """Entries (``.json`` files) and their bytes in ``path``; nothing is created."""
    try:
        names = os.listdir(path)
    except OSError:
        return {"entries": 0, "bytes": 0}
    ours = [n for n in names if _ENTRY_NAME.match(n) and not n.endswith(".lock")]
    metas = {n.split(".", 1)[0] for n in ours if n.endswith(".json")}
    sizes = [_size(path / n) for n in ours if n.split(".", 1)[0] in metas]
    return {"entries": len(metas), "bytes": sum(sizes)}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


# ----------------------------------------------------------------------------- entries


def read_entry(directory: Path, digest: str) -> tuple[Path, bytes] | None:
    """(payload path, payload bytes) of a verified entry; None if absent; ``Corrupt`` if bad."""
    meta_path = directory / f"{digest}.json"
    try:
        raw = meta_path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Corrupt(f"{meta_path.name} cannot be read ({exc.strerror})") from None
    return _verified_payload(directory, digest, _parse_meta(meta_path.name, raw, digest))


def _parse_meta(name: str, raw: bytes, digest: str) -> dict:
    try:
        meta = json.loads(raw)
    except ValueError:
        raise Corrupt(f"{name} is not valid JSON ({len(raw)} bytes)") from None
    payloads = {digest + suffix for suffix in PAYLOAD_SUFFIXES}
    if (not isinstance(meta, dict) or meta.get("format") != FORMAT
            or meta.get("payload") not in payloads or not isinstance(meta.get("bytes"), int)):
        raise Corrupt(f"{name} does not describe a format-{FORMAT} entry")
    return meta


def _verified_payload(directory: Path, digest: str, meta: dict) -> tuple[Path, bytes]:
    path = directory / meta["payload"]
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise Corrupt(f"{path.name} is missing") from None
    except OSError as exc:
        raise Corrupt(f"{path.name} cannot be read ({exc.strerror})") from None
    if len(data) != meta["bytes"]:
        raise Corrupt(f"{path.name} has {len(data)} bytes, expected {meta['bytes']} (truncated?)")
    if hashlib.sha256(data).hexdigest() != meta.get("sha256"):
        raise Corrupt(f"{path.name} does not match its sha256 checksum")
    return path, data


def scratch(directory: Path, digest: str) -> Path:
    """A private scratch directory inside ``directory`` (same filesystem: moves are atomic)."""
    return Path(tempfile.mkdtemp(prefix=f".{digest}.", suffix=".tmp", dir=directory))


def store(directory: Path, digest: str, payload: Path, key_text: str) -> Path:
    """Move ``payload`` into place, then write the ``.json`` that makes the entry exist."""
    data = payload.read_bytes()
    final = directory / f"{digest}{payload.suffix}"
    os.replace(payload, final)
    meta = {
        "format": FORMAT, "key": key_text, "payload": final.name, "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(), "created": time.time(),
        "environment": dict(environment()),
    }
    _atomic_write(directory / f"{digest}.json", json.dumps(meta, indent=1).encode())
    return final


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read_tuned(directory: Path) -> list[dict]:
    """The records of ``directory``'s tuned table made in this environment (``environment``:
    the same kernel sources and versions); [] when it is absent, unreadable or from another."""
    try:
        doc = json.loads((directory / TUNED).read_bytes())
    except (OSError, ValueError):
        return []
    if (not isinstance(doc, dict) or doc.get("format") != FORMAT
            or doc.get("environment") != dict(environment())
            or not isinstance(doc.get("entries"), list)):
        return []
    return [e for e in doc["entries"] if isinstance(e, dict)]


def write_tuned(directory: Path, records: list[dict]) -> None:
    """Replace the tuned table atomically; the caller holds ``lock(directory, "tuned", ...)``."""
    doc = {"format": FORMAT, "environment": dict(environment()), "entries": records}
    _atomic_write(directory / TUNED, json.dumps(doc, indent=1).encode())


def remove_entry(directory: Path, digest: str) -> None:
    for suffix in (".json",) + PAYLOAD_SUFFIXES:
        with contextlib.suppress(OSError):
            os.unlink(directory / f"{digest}{suffix}")


def remove_all(directory: Path) -> None:
    """Delete every file this store writes in ``directory`` (and nothing else)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        path = directory / name
        with contextlib.suppress(OSError):
            if _SCRATCH_NAME.match(name) and path.is_dir():
                shutil.rmtree(path)
            elif _SCRATCH_NAME.match(name) or _ENTRY_NAME.match(name) or name in _TUNED_FILES:
                os.unlink(path)


def lock(directory: Path, digest: str, timeout: float):
    """The key's cross-process lock, acquired (``filelock.Timeout`` or ``OSError`` if not)."""
    import filelock

    held = filelock.FileLock(str(directory / f"{digest}.lock"), timeout=timeout)
    held.acquire()
    return held


# ----------------------------------------------------------------------------- fingerprint


@functools.cache
def environment() -> tuple[tuple[str, str], ...]:
    """What, besides the key, changes a compiled object: sources, versions, runtime, host."""
    return (
        ("format", str(FORMAT)),
        ("sources", sources_digest(_source_roots())),
        ("nvidia-cutlass-dsl", version("nvidia-cutlass-dsl")),
        ("apache-tvm-ffi", version("apache-tvm-ffi")),
        ("runtime", runtime()[0]),
        ("host", f"{sys.platform}-{os.uname().machine}"),
    )


def _source_roots() -> tuple[Path, ...]:
    package = Path(__file__).resolve().parent
    return tuple(p for p in (package / "kernels", package / "configs") if p.is_dir())


def sources_digest(roots) -> str:
    """sha256 over every file under ``roots`` (names and contents) and ``dispatch.build_kernel``
    and ``dispatch.compile_key`` (what turns a key into code)."""
    import inspect

    from . import dispatch

    h = hashlib.sha256(inspect.getsource(dispatch.build_kernel).encode())
    h.update(inspect.getsource(dispatch.compile_key).encode())
    for root in roots:
        for path in sorted(p for p in Path(root).rglob("*") if p.is_file()):
            if "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            data = path.read_bytes()
            h.update(f"{path.relative_to(root).as_posix()}:{len(data)}\n".encode())
            h.update(data)
    return h.hexdigest()


def source_digest(fn) -> str:
    """sha256 of the file defining ``fn`` (a function or a ``functools.partial`` of one)."""
    import inspect

    target = getattr(fn, "func", fn)
    try:
        source = inspect.getsourcefile(target)
        return hashlib.sha256(Path(source).read_bytes()).hexdigest() if source else "unknown"
    except (TypeError, OSError):
        return "unknown"


def version(distribution: str) -> str:
    """The installed version of ``distribution``, "absent" if it is not installed.

    Read from the name of its ``<name>-<version>.dist-info`` folder, the first on ``sys.path``
    as ``importlib.metadata`` searches them (the wheel format names the folder so): importing
    ``importlib.metadata`` and parsing the metadata costs 10-30 ms of a warm start.  Anything
    else (an egg, an unusual folder name) is asked of ``importlib.metadata``.
    """
    prefix = re.sub(r"[-_.]+", "_", distribution).lower() + "-"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.endswith(".dist-info") and name.lower().startswith(prefix):
                found = name[len(prefix):-len(".dist-info")]
                if found and "-" not in found:
                    return found
    import importlib.metadata

    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


# ----------------------------------------------------------------------------- runtime and linker


@functools.cache
def runtime() -> tuple[str, Path]:
    """(flavor such as 'cu13', runtime library), as the DSL picks them without being imported:
    the newest CUDA flavor installed that the driver supports (the newest without a driver);
    ``CUTE_DSL_LIBS`` may name the library."""
    import nvidia_cutlass_dsl  # a namespace package: no DSL code runs

    root = Path(list(nvidia_cutlass_dsl.__path__)[0])
    flavors = sorted(int(d.name[2:]) for d in root.glob("cu[0-9]*")
                     if d.name[2:].isdigit() and (d / "lib" / RUNTIME_LIBRARY).exists())
    driver = _driver_cuda_major()
    usable = [f for f in flavors if driver is None or f <= driver]
    if not usable:
        raise RuntimeError(
            f"cutematmul: no CuTe DSL runtime flavor under {root} works with this driver "
            f"(installed: {', '.join(f'cu{f}' for f in flavors) or 'none'}; the driver supports "
            f"CUDA {driver}); install an nvidia-cutlass-dsl flavor that the driver supports."
        )
    override = [p for p in os.environ.get("CUTE_DSL_LIBS", "").split(os.pathsep)
                if p.endswith(RUNTIME_LIBRARY)]
    library = Path(override[0]) if override else root / f"cu{usable[-1]}" / "lib" / RUNTIME_LIBRARY
    return f"cu{usable[-1]}", library


def _driver_cuda_major() -> int | None:
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
        found = ctypes.c_int(0)
        if libcuda.cuDriverGetVersion(ctypes.byref(found)) == 0 and found.value:
            return found.value // 1000
    except (OSError, AttributeError):
        pass
    return None


@functools.cache
def preload_runtime() -> ctypes.CDLL:
    """Load the runtime library globally, so stored objects resolve their runtime symbols."""
    return ctypes.CDLL(str(runtime()[1]), mode=ctypes.RTLD_GLOBAL)


@functools.cache
def linker() -> tuple[str, ...] | None:
    """The command that links shared objects: ``$CC``, else the first of cc/gcc/clang/ld."""
    import shlex

    candidates = [tuple(shlex.split(os.environ["CC"]))] if os.environ.get("CC") else []
    candidates += [(name,) for name in ("cc", "gcc", "clang", "ld", "ld.lld", "ld.gold")]
    for command in candidates:
        if command and shutil.which(command[0]):
            return command
    return None


def link(obj: Path, out: Path) -> str:
    """Link the object ``obj`` into the shared object ``out``; '' on success, else the reason.

    The result names ``libcute_dsl_runtime.so`` and ``libtvm_ffi.so`` as dependencies (no rpath:
    ``preload_runtime`` and ``ffi.library`` have them loaded when it is opened).
    """
    command = linker()
    if command is None:
        return "no linker (cc, gcc, clang or ld; or $CC) was found"
    lib_dirs = sorted({str(runtime()[1].parent), str(ffi.library_path().parent)})
    args = [*command, "-shared", "-o", str(out), str(obj), *(f"-L{d}" for d in lib_dirs),
            "-lcute_dsl_runtime", "-ltvm_ffi"]
    import subprocess

    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{' '.join(command)} could not run ({exc})"
    if proc.returncode != 0:
        return f"{' '.join(command)} failed: {proc.stderr.strip()[-400:]}"
    return ""
