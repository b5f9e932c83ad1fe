"""Start-up time of fresh processes, cold and warm cache (``python -m cutematmul.bench startup``).

    python -m cutematmul.bench startup                       # CuPy, fp16 1024^3 first, new cache
    python -m cutematmul.bench startup --library torch --size 4096
    python -m cutematmul.bench startup --cache-dir /opt/cutematmul-cache

The parent runs two fresh Python processes (``sys.executable``) one after the other, both with
``CUTEMATMUL_CACHE_DIR`` set to the same directory (default: a new, empty temporary one, removed
afterwards).  The first finds the cache empty and compiles; the second must find every kernel on
disk and compile nothing.  Each child, in this order, timing every step with ``perf_counter``:

1. imports the array library (CuPy, or PyTorch);
2. draws every input (Gaussian, on the GPU) and synchronizes: this creates the CUDA context, so
   the context, the library's random generator and its first kernels are counted here, apart from
   cutematmul (CuPy holds bfloat16 through ``ml_dtypes``, imported here when bfloat16 is run);
3. ``import cutematmul``;
4. the first product (fp16 ``size``^3, row-major, by default) and a device synchronize;
5. each further configuration (bf16, fp32, fp16 with A a transposed view) likewise: each is a
   configuration of its own (``KernelKey``), so each is one compile, or one disk load;
6. then, untimed: ``cutematmul.cache_info()``, whether the DSL compiler (``cutlass``,
   ``cutlass.cute``) is in ``sys.modules``, and each product checked against a float64 product
   computed by the array library (relative Frobenius error <= 1e-2 for fp16/bf16, 1e-5 for fp32;
   NaN fails).  A wrong product makes the child exit 1.

The child prints one line ``RESULT={json}``.  The parent prints a table (phase, the times, kernels
compiled and loaded from disk, whether the DSL was imported, the checks' largest error, the whole
process's wall time) and one line comparing the figures to the targets of the issue "Start in
milliseconds" (H200): warm ``import cutematmul`` + first product <= 150 ms, each further cached
configuration <= 20 ms, cold ``import cutematmul`` + first product <= 3 s, a warm process compiles
nothing.  Targets are reported, never asserted: the exit status is 1 only when a child failed (a
crash, a timeout, a wrong product).  ``CUTEMATMUL_DISK_CACHE`` is removed from the children's
environment: the disk tier is what is measured.

How the child starts: ``python -c`` loads this file by its path (``_BOOT``), not as
``cutematmul.bench.startup``, because importing that name would import ``cutematmul`` (the parent
package) before the import being timed.  So this module's top level imports the standard library
only, and the child's functions use nothing else of cutematmul's.

Imports: the standard library at module level; the child imports the array library, ``ml_dtypes``
(CuPy with bfloat16) and ``cutematmul``, in the order above; the parent's functions import
``report`` (formatting) lazily.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

LIBRARIES = ("cupy", "torch")
DTYPES = ("float16", "bfloat16", "float32")
LAYOUTS = ("nn", "tn", "nt", "tt")  # t: that operand is a transposed view (A first, then B)
#: (dtype, layout) of the first product, then of the further ones: four configurations.
CONFIGS = (("float16", "nn"), ("bfloat16", "nn"), ("float32", "nn"), ("float16", "tn"))
DEFAULT_SIZE = 1024
#: Relative Frobenius error bounds against the float64 product.
TOLERANCE = {"float16": 1e-2, "bfloat16": 1e-2, "float32": 1e-5}
#: The issue's targets (H200), in seconds.
WARM_FIRST_S = 0.150   # import cutematmul + first product, warm cache
WARM_FURTHER_S = 0.020  # each further configuration, warm cache
COLD_FIRST_S = 3.0     # import cutematmul + first product, empty cache
CHILD_TIMEOUT_S = 1800
PREFIX = "RESULT="
DSL_MODULES = ("cutlass", "cutlass.cute", "tvm_ffi")
_SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding cutematmul/
_BOOT = (
    "import importlib.util as u, sys\n"
    "s = u.spec_from_file_location('_cutematmul_startup_child', sys.argv[1])\n"
    "m = u.module_from_spec(s)\n"
    "sys.modules[s.name] = m\n"
    "s.loader.exec_module(m)\n"
    "sys.exit(m.child_main(sys.argv[2]))\n"
)


def label(dtype: str, layout: str) -> str:
    """``("float16", "tn")`` -> ``"fp16 tn"``."""
    return f"{_SHORT.get(dtype, dtype)} {layout}"


def check_options(library: str, size: int, configs) -> None:
    """ValueError, in a full sentence, for an unknown library, a bad size or configuration."""
    if library not in LIBRARIES:
        raise ValueError(
            f"startup: library must be one of {', '.join(LIBRARIES)}; got {library!r}.")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"startup: size must be a positive integer; got {size!r}.")
    if not configs:
        raise ValueError("startup: configs must name at least one (dtype, layout); got none.")
    for dtype, layout in configs:
        if dtype not in DTYPES:
            raise ValueError(f"startup: dtype must be one of {', '.join(DTYPES)}; got {dtype!r}.")
        if layout not in LAYOUTS:
            raise ValueError(
                f"startup: layout must be one of {', '.join(LAYOUTS)}; got {layout!r}.")


# ----------------------------------------------------------------------------- the child


class _CupyArrays:
    """Inputs, synchronize and float64 views for CuPy (bfloat16 as ``ml_dtypes`` bit patterns)."""

    def __init__(self, cupy, seed: int):
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("startup: CuPy sees no CUDA GPU; the start-up benchmark needs one.")
        self.xp = cupy
        self.rng = cupy.random.RandomState(seed)

    def gaussian(self, shape, dtype: str):
        xp = self.xp
        x = self.rng.standard_normal(shape, dtype=xp.float32)
        if dtype == "float32":
            return x
        if dtype == "float16":
            return x.astype(xp.float16)
        import ml_dtypes

        u = x.view(xp.uint32)  # round to nearest even, as bfloat16 bit patterns
        bias = xp.uint32(0x7FFF) + ((u >> xp.uint32(16)) & xp.uint32(1))
        bits = ((u + bias) >> xp.uint32(16)).astype(xp.uint16)
        return bits.view(ml_dtypes.bfloat16)

    def synchronize(self) -> None:
        self.xp.cuda.Device().synchronize()

    def float64(self, x):
        xp = self.xp
        if "bfloat16" in str(x.dtype):
            x = (x.view(xp.uint16).astype(xp.uint32) << xp.uint32(16)).view(xp.float32)
        return x.astype(xp.float64)

    def norm(self, x) -> float:
        return float(self.xp.linalg.norm(x))


class _TorchArrays:
    """Inputs, synchronize and float64 views for PyTorch (CUDA device 0)."""

    def __init__(self, torch, seed: int):
        if not torch.cuda.is_available():
            raise RuntimeError("startup: PyTorch sees no CUDA GPU (or is a CPU-only build); the "
                               "start-up benchmark needs one.")
        self.torch = torch
        self.generator = torch.Generator(device="cuda").manual_seed(seed)

    def gaussian(self, shape, dtype: str):
        torch = self.torch
        x = torch.randn(shape, device="cuda", dtype=torch.float32, generator=self.generator)
        return x.to(getattr(torch, dtype))

    def synchronize(self) -> None:
        self.torch.cuda.synchronize()

    def float64(self, x):
        return x.double()

    def norm(self, x) -> float:
        return float(self.torch.linalg.norm(x))


def _top_level_modules() -> set:
    return {name.partition(".")[0] for name in list(sys.modules)}


def _operands(arrays, size: int, dtype: str, layout: str):
    a = arrays.gaussian((size, size), dtype)
    b = arrays.gaussian((size, size), dtype)
    return (a.T if layout[0] == "t" else a), (b.T if layout[1] == "t" else b)


def _relative_error(arrays, c, a, b) -> float:
    expected = arrays.float64(a) @ arrays.float64(b)
    return arrays.norm(arrays.float64(c) - expected) / arrays.norm(expected)


def measure(spec: dict) -> dict:
    """The child's work (see the module docstring); meaningful only in a fresh process.

    ``spec``: ``library``, ``size``, ``configs`` (list of [dtype, layout]), ``seed``.
    """
    library, size, seed = spec["library"], int(spec["size"]), int(spec.get("seed", 0))
    configs = [tuple(c) for c in spec["configs"]]
    check_options(library, size, configs)
    result = {"library": library, "size": size, "products": []}

    start = time.perf_counter()
    module = importlib.import_module(library)
    result["library_import_s"] = time.perf_counter() - start
    result["library_version"] = str(getattr(module, "__version__", "?"))

    start = time.perf_counter()
    arrays = _CupyArrays(module, seed) if library == "cupy" else _TorchArrays(module, seed)
    inputs = []
    for dtype, layout in configs:
        try:
            inputs.append(_operands(arrays, size, dtype, layout))
        except Exception as exc:  # e.g. a CuPy that cannot hold bfloat16: that product is skipped
            inputs.append(f"skipped: {library} cannot make {dtype} inputs "
                          f"({type(exc).__name__}: {str(exc)[:200]})")
    arrays.synchronize()
    result["arrays_s"] = time.perf_counter() - start

    result["bytecode"] = bytecode_state(importlib.util.find_spec("cutematmul"))
    before = _top_level_modules()
    start = time.perf_counter()
    cutematmul = importlib.import_module("cutematmul")
    result["import_s"] = time.perf_counter() - start
    result["import_imported"] = sorted(_top_level_modules() - before)

    outputs = []
    for (dtype, layout), operands in zip(configs, inputs):
        product = {"label": label(dtype, layout), "dtype": dtype, "layout": layout,
                   "seconds": None, "rel_error": None, "ok": False, "note": "", "imported": []}
        result["products"].append(product)
        outputs.append(None)
        if isinstance(operands, str):
            product["note"], product["ok"] = operands, True  # not run, not wrong
            continue
        before = _top_level_modules()
        try:
            start = time.perf_counter()
            c = cutematmul.matmul(*operands)
            arrays.synchronize()
            product["seconds"] = time.perf_counter() - start
        except Exception as exc:
            product["note"] = f"ERROR: {type(exc).__name__}: {str(exc)[:300]}"
            continue
        product["imported"] = sorted(_top_level_modules() - before)
        outputs[-1] = c

    # Untimed from here on.
    result["cache_info"] = cutematmul.cache_info()
    result["dsl"] = {name: name in sys.modules for name in DSL_MODULES}
    for product, operands, c in zip(result["products"], inputs, outputs):
        if c is None:
            continue
        err = _relative_error(arrays, c, *operands)
        product["rel_error"] = err if math.isfinite(err) else None
        product["ok"] = err <= TOLERANCE[product["dtype"]]  # False for NaN
        if not product["ok"]:
            product["note"] = f"WRONG: relative error {err:.3g} > {TOLERANCE[product['dtype']]:g}"
    return result


def bytecode_state(spec) -> str:
    """Whether the package of ``spec`` (found, not imported) has current bytecode: "all", "none"
    or "some" of its modules.  A wheel installed by pip has all; a checkout run with
    PYTHONDONTWRITEBYTECODE set has none, and then every process compiles each module it imports
    from source (tens of milliseconds of a warm start)."""
    if spec is None or not spec.submodule_search_locations:
        return "none"
    sources = [p for folder in spec.submodule_search_locations for p in Path(folder).rglob("*.py")]
    current = 0
    for source in sources:
        cached = Path(importlib.util.cache_from_source(str(source)))
        try:
            current += cached.stat().st_mtime >= source.stat().st_mtime
        except OSError:
            pass
    return "all" if current == len(sources) else ("none" if current == 0 else "some")


def child_main(spec_json: str) -> int:
    """Entry point of the child (``_BOOT``): prints ``RESULT={json}``; 1 when a product failed."""
    spec = json.loads(spec_json)
    if importlib.util.find_spec(spec["library"]) is None:  # no import: measure() times that
        print(f"startup: {spec['library']} is not installed here.", file=sys.stderr)
        return 2
    result = measure(spec)
    print(PREFIX + json.dumps(result, default=repr), flush=True)
    return 0 if all(p["ok"] for p in result["products"]) else 1


# ----------------------------------------------------------------------------- the parent


@dataclass
class ChildRun:
    """One child process: its phase name, exit status, wall seconds, parsed result and output."""

    phase: str
    returncode: int | None  # None: timed out
    seconds: float
    result: dict | None
    stdout: str = ""
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.result is not None

    @property
    def compiles(self) -> int | None:
        """Kernels compiled, every tier (memory and JAX) together."""
        if self.result is None:
            return None
        info = self.result["cache_info"]
        return int(info["memory"]["compiles"]) + int(info["jax"]["compiles"])

    def failure(self) -> str:
        """Why the child failed ('' when it did not), with the end of its stderr."""
        if self.ok:
            return ""
        if self.returncode is None:
            why = f"timed out after {self.seconds:.0f} s"
        elif self.result is None:
            why = f"exited with status {self.returncode} without a result"
        else:
            by_note: dict = {}  # one line per distinct failure, naming every product it hit
            for p in self.result["products"]:
                if not p["ok"]:
                    by_note.setdefault(p["note"], []).append(p["label"])
            wrong = [f"{', '.join(labels)}: {note}" for note, labels in by_note.items()]
            why = "; ".join(wrong) or f"exited with status {self.returncode}"
        tail = self.stderr.strip()[-3000:]
        return f"{self.phase} process {why}" + (f"\n{tail}" if tail else "")


def child_environment(cache_dir: Path) -> dict:
    """The parent's environment with the cache directory set, the disk tier on and this
    checkout's cutematmul first on the path."""
    env = dict(os.environ)
    env["CUTEMATMUL_CACHE_DIR"] = str(cache_dir)
    env.pop("CUTEMATMUL_DISK_CACHE", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PACKAGE_ROOT), env.get("PYTHONPATH")]))
    return env


def run_child(cache_dir, library: str = "cupy", size: int = DEFAULT_SIZE, configs=CONFIGS,
              phase: str = "child", seed: int = 0, timeout: float = CHILD_TIMEOUT_S) -> ChildRun:
    """Run one fresh child process with ``CUTEMATMUL_CACHE_DIR=cache_dir``; never raises for
    what happens in the child (see ``ChildRun.ok`` and ``failure``).

    The child runs in the folder holding this ``cutematmul`` (``python -c`` puts its working
    directory first on ``sys.path``), so it imports the same cutematmul as this process.
    """
    check_options(library, size, configs)
    spec = {"library": library, "size": size, "configs": [list(c) for c in configs], "seed": seed}
    command = [sys.executable, "-c", _BOOT, str(Path(__file__).resolve()), json.dumps(spec)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, env=child_environment(Path(cache_dir)), cwd=_PACKAGE_ROOT,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        return ChildRun(phase, None, time.perf_counter() - start, None,
                        _text(exc.stdout), _text(exc.stderr))
    seconds = time.perf_counter() - start
    lines = [line for line in proc.stdout.splitlines() if line.startswith(PREFIX)]
    result = json.loads(lines[-1][len(PREFIX):]) if lines else None
    return ChildRun(phase, proc.returncode, seconds, result, proc.stdout, proc.stderr)


def _text(output) -> str:
    if output is None:
        return ""
    return output.decode(errors="replace") if isinstance(output, bytes) else output


def kernel_files(directory: Path) -> int:
    """Compiled-kernel payloads (``.so``, ``.o``, ``.xla``) in ``directory``."""
    if not directory.is_dir():
        return 0
    return sum(1 for p in directory.iterdir() if p.suffix in (".so", ".o", ".xla"))


def _first_and_further(run: ChildRun):
    """(import + first product seconds or None, [further product seconds])."""
    products = run.result["products"] if run.result else []
    if not products or products[0]["seconds"] is None:
        return None, [p["seconds"] for p in products[1:] if p["seconds"] is not None]
    first = run.result["import_s"] + products[0]["seconds"]
    return first, [p["seconds"] for p in products[1:] if p["seconds"] is not None]


def headers(runs: list[ChildRun], library: str) -> list[str]:
    """The table's column names (one per product, labelled by its configuration)."""
    labels = []
    for run in runs:
        if run.result:
            labels = [p["label"] for p in run.result["products"]]
            break
    if labels:
        labels = [f"{labels[0]} (1st)"] + labels[1:]
    return ["phase", f"import {library}", "arrays+context", "import cutematmul", *labels,
            "compiles", "disk loads", "DSL imported", "max rel err", "process"]


def _dsl_cell(result: dict) -> str:
    dsl = result.get("dsl", {})
    if dsl.get("cutlass.cute"):
        return "yes (cutlass.cute)"
    return "cutlass only" if dsl.get("cutlass") else "no"


def format_seconds(seconds: float | None) -> str:
    """0.0382 -> "38.2 ms"; 0.00041 -> "0.41 ms"; 5.213 -> "5.21 s"; None -> "?"."""
    if seconds is None:
        return "?"
    if seconds < 0.01:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def rows(runs: list[ChildRun]) -> list[list[str]]:
    """One row of cells per child run."""
    table = []
    for run in runs:
        r = run.result
        if r is None:
            table.append([run.phase, "FAILED"])
            continue
        products = []
        for p in r["products"]:
            if p["seconds"] is not None:
                products.append(format_seconds(p["seconds"]) + ("" if p["ok"] else " WRONG"))
            else:
                products.append(p["note"].split(":", 1)[0] or "-")
        errors = [p["rel_error"] for p in r["products"] if p["rel_error"] is not None]
        table.append([
            run.phase, format_seconds(r["library_import_s"]), format_seconds(r["arrays_s"]),
            format_seconds(r["import_s"]), *products, str(run.compiles),
            str(r["cache_info"]["disk"]["hits"]), _dsl_cell(r),
            f"{max(errors):.1e}" if errors else "", format_seconds(run.seconds),
        ])
    return table


def render(runs: list[ChildRun], library: str) -> str:
    """The runs as an aligned plain-text table."""
    from .report import render_table

    names = headers(runs, library)
    cells = [row + [""] * (len(names) - len(row)) for row in rows(runs)]
    return render_table(names, cells, set(names) - {"phase", "DSL imported"})


def targets(cold: ChildRun | None, warm: ChildRun | None, cold_was_empty: bool = True) -> list:
    """[(what, measured value or None, limit, met or None)] for each target of the issue.

    Values are seconds, except the warm process's compiles (a count, limit 0).  ``met`` is None
    when the figure is missing, or (cold target) when the cache was not empty at the start.
    """
    found = []
    warm_first, warm_further = _first_and_further(warm) if warm else (None, [])
    further = max(warm_further) if warm_further else None
    cold_first = _first_and_further(cold)[0] if cold and cold_was_empty else None
    compiles = warm.compiles if warm else None
    for what, value, limit in (
            ("warm import + first product", warm_first, WARM_FIRST_S),
            ("warm further product (slowest)", further, WARM_FURTHER_S),
            ("cold import + first product", cold_first, COLD_FIRST_S),
            ("warm compiles", compiles, 0)):
        found.append((what, value, limit, None if value is None else value <= limit))
    return found


def targets_line(cold: ChildRun | None, warm: ChildRun | None, cold_was_empty: bool = True) -> str:
    """One line: each target's figure, its limit, and whether it is met."""
    parts = []
    for what, value, limit, met in targets(cold, warm, cold_was_empty):
        verdict = "n/a" if met is None else ("met" if met else "NOT met")
        if what == "warm compiles":
            parts.append(f"{what} {'?' if value is None else value} (target 0): {verdict}")
        else:
            shown = format_seconds(value)
            parts.append(f"{what} {shown} (target <= {format_seconds(limit)}): {verdict}")
    return "targets (H200): " + "; ".join(parts)


def notes(runs: list[ChildRun]) -> list[str]:
    """What each step newly imported (top-level packages) and why products were skipped."""
    lines = []
    for run in runs:
        r = run.result
        if r is None:
            continue
        if r.get("bytecode", "all") != "all":
            lines.append(
                f"{run.phase}: {r['bytecode']} of cutematmul's modules had bytecode, so the "
                "process compiled the others from source (an installed wheel has it all; "
                "`python -m compileall` on the package gives a checkout the same)")
        lines.append(f"{run.phase}: import cutematmul brought in {_names(r['import_imported'])}")
        for p in r["products"]:
            if p["imported"]:
                lines.append(f"{run.phase}: {p['label']} brought in {_names(p['imported'])}")
            if p["note"].startswith("skipped"):
                lines.append(f"{run.phase}: {p['label']} {p['note']}")
    return lines


def _names(names: list[str], limit: int = 16) -> str:
    if not names:
        return "nothing new"
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def cache_directory(cache_dir) -> Path:
    """``cache_dir`` as a Path; ValueError when it exists and is not a directory."""
    path = Path(cache_dir).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"startup: --cache-dir must be a directory; {path} is not one.")
    return path


def run(library: str = "cupy", cache_dir=None, size: int = DEFAULT_SIZE, configs=CONFIGS,
        out=None, err=None) -> int:
    """Both processes, the table and the targets line; 0, or 1 when a child failed."""
    out = out or sys.stdout
    err = err or sys.stderr
    check_options(library, size, configs)
    temporary = cache_dir is None
    directory = (Path(tempfile.mkdtemp(prefix="cutematmul-startup-")) if temporary
                 else cache_directory(cache_dir))
    try:
        held = kernel_files(directory)
        if held:
            print(f"[startup] {directory} already holds {held} compiled kernel file(s): the first "
                  "process is not cold, and the cold target is not judged.", file=err)
        runs = []
        for phase in ("cold" if not held else "first", "warm"):
            print(f"[startup] {phase}: a fresh process, {library}, {size}^3, "
                  f"CUTEMATMUL_CACHE_DIR={directory}", file=err, flush=True)
            child = run_child(directory, library, size, configs, phase=phase)
            runs.append(child)
            if child.result is None:  # crashed or timed out: a second one would say no more
                break
        if any(r.result is not None for r in runs):
            print(render(runs, library), file=out)
            cold, warm = runs[0], (runs[1] if len(runs) > 1 else None)
            print(targets_line(cold, warm, cold_was_empty=not held), file=out)
        for line in notes(runs):
            print(f"[startup] {line}", file=err)
        failures = [r.failure() for r in runs if not r.ok]
        for text in failures:
            print(f"[startup] FAILED: {text}", file=err)
        return 1 if failures else 0
    finally:
        if temporary:
            shutil.rmtree(directory, ignore_errors=True)
