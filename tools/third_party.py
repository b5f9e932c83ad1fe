"""Third-party matmul test suites run against cutematmul (GPU): NumPy's, CuPy's, array-api-tests'.

What it runs
    * NumPy: ``TestMatmul`` of NumPy's own ``numpy/_core/tests/test_multiarray.py`` (shipped in
      the wheel), with ``matmul`` replaced by cutematmul's; NumPy arrays in, so cutematmul's
      host route (staged through the GPU) computes them.
    * CuPy: ``tests/cupy_tests/math_tests/test_matmul.py`` of a CuPy checkout, with
      ``cupy.matmul`` replaced by cutematmul's; ``cupy.testing`` compares every result with
      ``numpy.matmul``.
    * array-api-tests (data-apis): ``test_matmul`` and ``test_linalg_matmul`` of
      ``array_api_tests/test_linalg.py``, on ``array_api_compat.cupy`` with ``matmul`` (and
      ``linalg.matmul``) replaced by cutematmul's; hypothesis draws shapes, broadcast stacks and
      values (infinities and NaN included) and checks each stack against a product of its own.

    NumPy's and array-api-tests run in two modes, CuPy's in the second only (each of its tests
    loops over every dtype pair inside one test, so no selection keeps only ours):

    * ``own``: only the dtypes cutematmul computes (float16 and float32; bfloat16 is in none of
      the suites), every call to the replaced function goes to cutematmul.  (array-api-tests
      cannot skip its default int64: its int64 draws are routed as below.)
    * ``routed``: every dtype the suite tests; calls whose operands (and ``out``) all have a
      dtype cutematmul computes and no keywords beyond ``out`` go to cutematmul, the rest to
      the library's own function, as a caller using cutematmul as a backend would route them
      (mixed float16/float32 operands go to cutematmul, which promotes them as NumPy does; an
      ``out`` of another dtype than the result's, which NumPy casts into, goes to the library).
      The counts of both kinds are printed, so a run that never reached cutematmul shows.

    Tests of those classes that never call the replaced function (NumPy's checks of its own
    ``np.matmul`` against ``np.dot``, CuPy's ``operator.matmul`` on CuPy arrays) are deselected.

Where the suites come from (they are not part of this repository)
    NumPy's ship with NumPy.  The others are checkouts::

        git clone https://github.com/cupy/cupy              # tests/cupy_tests/math_tests
        git clone --recurse-submodules https://github.com/data-apis/array-api-tests
        pip install ndindex pytest-json-report array-api-compat  # array-api-tests needs them

    Seen with cupy 6b6d9563, array-api-tests 55fcc601 (its array-api submodule at 5f847a38:
    only ``spec/2025.12`` and ``src`` are needed).  On a GPU machine without a registry, unpack
    the three packages' wheels (``pip download --python-version 3.12 --only-binary=:all:``,
    then ``python -m zipfile -e``) into a folder on ``PYTHONPATH``; their dist-info folders
    register the pytest plugin.

Usage (on a GPU machine)::

    python tools/third_party.py --cupy-tests PATH/TO/test_matmul.py \
        --array-api-tests PATH/TO/array-api-tests [--examples 200] [--only numpy,cupy,array-api]

Exit status 0 when every selected run passed.  Imports: ``cutematmul`` (in the child
processes), ``numpy``, ``cupy``, ``pytest``, ``array_api_compat`` as each suite needs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# Dtypes cutematmul computes (numpy dtype names) that the suites can produce.
OWN_DTYPES = ("float16", "float32")

# The array API's dtypes; everything but OWN_DTYPES is skipped in "own" mode.
ARRAY_API_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "uint64", "float32", "float64", "complex64", "complex128")

# Dtypes array-api-tests cannot run without (its default int, bool, a complex type).
ARRAY_API_KEEP = ("bool", "int64", "complex64", "complex128")

# NumPy's TestMatmul tests that exercise np.matmul / np.dot themselves, not self.matmul.
NUMPY_OWN_TESTS = ("test_dot_equivalent", "test_matmul_empty", "test_matmul_exception",
                   "test_matmul_bool")

# The module every child process imports: the replacement function and its counts.
SHIM = '''
"""Written by tools/third_party.py: cutematmul's matmul in place of a library's."""
import atexit, json, os
import cutematmul

OWN = set({own!r})
MODE = os.environ["THIRD_PARTY_MODE"]
COUNTS = {{"cutematmul": 0, "delegated": 0}}


def routed(theirs):
    def matmul(a, b, /, out=None, **kwargs):
        dtypes = set(str(getattr(x, "dtype", "")) for x in (a, b))
        result = next(iter(dtypes)) if len(dtypes) == 1 else "float32"  # operand.result_dtype
        ours = MODE == "own" or (not kwargs and dtypes <= OWN and (
            out is None or str(getattr(out, "dtype", "")) == result))
        COUNTS["cutematmul" if ours else "delegated"] += 1
        if ours:
            return cutematmul.matmul(a, b, out, **kwargs)
        return theirs(a, b, **kwargs) if out is None else theirs(a, b, out=out, **kwargs)
    return matmul


@atexit.register
def _report():
    with open(os.environ["THIRD_PARTY_COUNTS"], "w") as f:
        json.dump(COUNTS, f)
'''

NUMPY_TESTS = '''
import numpy
from numpy._core.tests import test_multiarray as base
import shim


class TestCutematmul(base.TestMatmul):
    types = {types!r}
    matmul = staticmethod(shim.routed(numpy.matmul))
'''

CUPY_CONFTEST = '''
import cupy
import shim

cupy.matmul = shim.routed(cupy.matmul)
'''

ARRAY_API_NAMESPACE = (
    "exec('import shim, types, array_api_compat.cupy as base; "
    "xp = types.ModuleType(\"cutematmul_on_cupy\"); xp.__dict__.update(vars(base)); "
    "xp.matmul = shim.routed(base.matmul); "
    "xp.linalg = types.ModuleType(\"linalg\"); xp.linalg.__dict__.update(vars(base.linalg)); "
    "xp.linalg.matmul = xp.matmul')"
)


def _run(name: str, mode: str, args: list[str], cwd: Path, work: Path, env: dict,
         shim_mode: str | None = None) -> dict:
    counts = work / f"{name}-{mode}-counts.json"
    env = dict(env, THIRD_PARTY_MODE=shim_mode or mode, THIRD_PARTY_COUNTS=str(counts),
               PYTHONPATH=os.pathsep.join([str(work), env.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider",
           "--tb=line", "-W", "ignore::pytest.PytestUnknownMarkWarning", *args]
    print(f"\n=== {name} ({mode}): {' '.join(cmd[3:])}", flush=True)
    proc = subprocess.run(cmd, cwd=cwd, env=env, text=True, capture_output=True)
    tail = proc.stdout.strip().splitlines()
    print("\n".join(tail[-60:]), flush=True)
    if proc.returncode not in (0, 1):
        print(proc.stderr[-4000:], flush=True)
    calls = json.loads(counts.read_text()) if counts.exists() else {}
    print(f"--- {name} ({mode}): exit {proc.returncode}, calls {calls}", flush=True)
    return {"suite": name, "mode": mode, "exit": proc.returncode, "calls": calls,
            "summary": tail[-1] if tail else ""}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cupy-tests", type=Path, help="CuPy's math_tests/test_matmul.py")
    parser.add_argument("--array-api-tests", type=Path, help="an array-api-tests checkout")
    parser.add_argument("--examples", type=int, default=200,
                        help="hypothesis examples per array-api-tests test (default 200)")
    parser.add_argument("--only", default="numpy,cupy,array-api")
    parser.add_argument("--modes", default="own,routed")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    suites = args.only.split(",")
    modes = args.modes.split(",")

    work = Path(tempfile.mkdtemp(prefix="cutematmul-third-party-"))
    (work / "shim.py").write_text(SHIM.format(own=OWN_DTYPES))
    env = dict(os.environ)
    results = []
    for mode in modes:
        if "numpy" in suites:
            folder = work / f"numpy_{mode}"
            folder.mkdir()
            types = "ef" if mode == "own" else "?bhilqBHILQefdgFDGO"
            (folder / "test_numpy_matmul.py").write_text(NUMPY_TESTS.format(types=types))
            deselect = " and ".join(f"not {t}" for t in NUMPY_OWN_TESTS)
            results.append(_run("numpy", mode, ["test_numpy_matmul.py", "-k", deselect],
                                folder, work, env))
        if "cupy" in suites and mode == "routed":  # see the module docstring
            if args.cupy_tests is None:
                parser.error("--cupy-tests is needed for the cupy suite")
            folder = work / f"cupy_{mode}"
            folder.mkdir()
            (folder / "conftest.py").write_text(CUPY_CONFTEST)
            (folder / "test_matmul.py").write_text(args.cupy_tests.read_text())
            select = "not operator_matmul and not relaxed_c_contiguous"
            results.append(_run("cupy", mode, ["test_matmul.py", "-k", select], folder, work,
                                env))
        if "array-api" in suites:
            if args.array_api_tests is None:
                parser.error("--array-api-tests is needed for the array-api suite")
            tests = args.array_api_tests.resolve()
            extra = {"ARRAY_API_TESTS_MODULE": ARRAY_API_NAMESPACE}
            if mode == "own":  # every dtype the suite can do without skipped (its helpers
                # need the default int and a complex type; matmul draws no complex, and its
                # int64 draws go to the library: the shim routes them)
                extra["ARRAY_API_TESTS_SKIP_DTYPES"] = ",".join(
                    d for d in ARRAY_API_DTYPES if d not in OWN_DTYPES + ARRAY_API_KEEP)
            results.append(_run(
                "array-api", mode,
                ["array_api_tests/test_linalg.py", "-k", "test_matmul or test_linalg_matmul",
                 f"--max-examples={args.examples}", "--disable-deadline"],
                tests, work, dict(env, **extra), shim_mode="routed"))
    print("\n=== summary")
    for r in results:
        print(f"{r['suite']:>10} {r['mode']:>7}: exit {r['exit']}  {r['summary']}  "
              f"calls {r['calls']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0 if all(r["exit"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
