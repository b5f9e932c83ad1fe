"""Audit the machine code of every kernel a precompile selection names, with no GPU.

    python tools/codegen_audit.py [--arch sm_90a|sm_80] [--jobs N] [--all]

Each kernel is compiled as ``cutematmul precompile`` would (``aot.plan_keys``: every dtype, all
three fp32 modes, each family the dispatcher may pick) and its code is checked for what costs
speed without changing results:

* **wgmma serialization** (sm90): ptxas waits out every wgmma when code that reads or defines
  the accumulators lands inside the pipeline, and says so only in an advisory (C7510-C7519,
  "Potential Performance Loss").  Session 37 found it in every bf16 kernel 16 or 32 wide
  (``kernels/sm90_hgemm.fence_accumulators``, docs/performance.md).
* **register spills**: local-memory stores and loads (``STL``/``LDL``) that ptxas's register
  allocation added; the PTX checks of the compile tests cannot see them.
* **descriptors in vector registers** (sm90): ``R2UR`` in the wgmma mainloop (the shortest
  loop that issues HGMMA), where a shared-memory descriptor comes from a value ptxas cannot
  prove warp-uniform.  Session 38 found it in every 128-row cooperative tile (the MMA slice
  taken from the thread index: 69 instructions per K-tile of the 128 x 256 mainloop, 51
  without).

It reads the DSL's own cubins with ``nvdisasm`` where that is on PATH or installed as a wheel
(``pip install nvidia-cuda-nvdisasm``, in the test extra; counts STL/LDL, HGMMA each followed
by a full wait, and R2UR in the mainloop), and assembles the PTX with the local ``ptxas -v``
where that is (advisories and spill bytes; an older ptxas than the DSL's PTX ISA gets the
version it names).  At least one of the two is needed (the descriptor check needs nvdisasm);
spills are judged on the DSL's own code where nvdisasm is there (another ptxas version may
allocate registers differently).  Prints the flagged kernels (``--all``: every kernel) and exits
1 if any was flagged.  Imports: the standard library when loaded (tests/test_compile_sm90.py
calls ``ptxas_report`` and ``nvdisasm_report``); ``cutematmul`` (and the CuTe DSL through it)
when run.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def _setup(arch: str, dump_root: str) -> None:
    """Worker start: target ``arch`` and keep each compile's PTX and cubin (read before the DSL
    is imported), written to a folder of this process's own: kernels of one class share file
    names, and two processes writing one folder read each other's files."""
    os.environ["CUTE_DSL_ARCH"] = arch
    os.environ["CUTE_DSL_KEEP"] = "ptx,cubin"
    os.environ["CUTE_DSL_DUMP_DIR"] = tempfile.mkdtemp(dir=dump_root)


def ptxas_report(ptx: str, arch: str, scratch: Path) -> tuple[dict, str]:
    """Assemble ``ptx`` for ``arch`` with the local ``ptxas -v`` (in folder ``scratch``): its
    failure, "Potential Performance Loss" advisories (whole messages) and each function's
    (spill stores, spill loads) in bytes; and the log.  An older ptxas than the PTX's ISA gets
    the version it names (the instructions our kernels use are older than both).  Also used
    by tests/test_compile_sm90.py."""
    path = scratch / "kernel.ptx"
    version = None
    for _ in range(2):
        text = ptx if version is None else re.sub(r"^\.version \S+", f".version {version}", ptx,
                                                  flags=re.M)
        path.write_text(text)
        proc = subprocess.run(["ptxas", f"-arch={arch}", "-O3", "-v", str(path), "-o", os.devnull],
                              capture_output=True, text=True, timeout=600)
        log = proc.stdout + proc.stderr
        older = re.search(r"Unsupported \.version \S+; current version is '([\d.]+)'", log)
        if not (proc.returncode and older):
            break
        version = older.group(1)
    spills = [(int(s), int(l)) for s, l in
              re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)]
    return {"ptxas_failed": proc.returncode != 0,
            "advisories": re.findall(r"\(C75\d\d\) Potential Performance Loss: [^\n]*", log),
            "spills": spills}, log


def mainloop(sass: str) -> list[str]:
    """The instructions of the shortest loop of ``sass`` (nvdisasm's listing) that issues
    HGMMA: the wgmma mainloop of one K-tile; empty where there is none."""
    instructions: list[str] = []
    labels: dict[str, int] = {}
    for line in sass.splitlines():
        found = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?);", line)
        if found:
            instructions.append(found.group(1).strip())
            continue
        found = re.match(r"^(\.L_x_\d+):", line)
        if found:
            labels[found.group(1)] = len(instructions)
    best: list[str] = []
    for end, text in enumerate(instructions):
        target = re.search(r"BRA `\((\.L_x_\d+)\)", text)
        if target and labels.get(target.group(1), end + 1) <= end:
            body = instructions[labels[target.group(1)]:end + 1]
            if any("HGMMA" in x for x in body) and (not best or len(body) < len(best)):
                best = body
    return best


def find_nvdisasm() -> str | None:
    """``nvdisasm`` on PATH, else the one of the ``nvidia-cuda-nvdisasm`` wheel (installed
    under the ``nvidia`` namespace package, off PATH); None where neither is."""
    found = shutil.which("nvdisasm")
    if found:
        return found
    try:
        import nvidia
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", ()):
        for candidate in sorted(Path(root).glob("*/bin/nvdisasm")):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def nvdisasm_report(cubin: bytes, scratch: Path, nvdisasm: str = "nvdisasm") -> dict:
    """What ``nvdisasm`` shows of ``cubin`` (written in folder ``scratch``): local-memory stores
    and loads, whether every wgmma is waited out, and the wgmma mainloop's length and R2UR
    count.  Also used by tests/test_compile_sm90.py."""
    path = scratch / "kernel.cubin"
    path.write_bytes(cubin)
    sass = subprocess.run([nvdisasm, str(path)], capture_output=True, text=True,
                          timeout=600).stdout
    hgmma = len(re.findall(r"\bHGMMA\b", sass))
    full_waits = len(re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x0", sass))
    loop = mainloop(sass)
    return {"stl": len(re.findall(r"\bSTL\b", sass)), "ldl": len(re.findall(r"\bLDL\b", sass)),
            # A pipelined kernel waits fully only where its wgmma pipeline drains.
            "serialized": hgmma > 0 and full_waits >= hgmma // 2,
            # wgmma descriptors moved from vector to uniform registers in the mainloop: a
            # descriptor computed from a value ptxas cannot prove warp-uniform.
            "mainloop": len(loop), "mainloop_r2ur": sum("R2UR" in x for x in loop)}


def _audit(item) -> tuple[str, dict]:
    key, arch = item
    from cutematmul import dispatch

    name = f"{type(key).__name__} {getattr(key, 'dtype', '')} " \
           f"{getattr(key, 'a_major', '')}{getattr(key, 'b_major', '')} " \
           f"{key.config.name if hasattr(key, 'config') else ''}".strip()
    try:
        compiled = dispatch.compile_key(key)
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the audit goes on
        return name, {"compile_error": f"{type(exc).__name__}: {exc}"[:200]}
    found: dict = {}
    nvdisasm = find_nvdisasm()
    with tempfile.TemporaryDirectory() as scratch:
        if shutil.which("ptxas") and getattr(compiled, "__ptx__", None):
            found.update(ptxas_report(compiled.__ptx__, arch, Path(scratch))[0])
        if nvdisasm and getattr(compiled, "__cubin__", None):
            found.update(nvdisasm_report(compiled.__cubin__, Path(scratch), nvdisasm))
    return name, found


def _flagged(found: dict) -> bool:
    """Spills and serialization by the DSL's own code where nvdisasm read it (the local ptxas
    may be another version than the DSL's compiler and allocate registers differently), else
    by the local ptxas; its advisories always count."""
    if found.get("compile_error") or found.get("ptxas_failed") or found.get("advisories"):
        return True
    if "stl" in found:
        return bool(found["stl"] or found["ldl"] or found["serialized"]
                    or found["mainloop_r2ur"])
    return any(stores or loads for stores, loads in found.get("spills", ()))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="sm_90a", choices=("sm_90a", "sm_80"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--all", action="store_true",
                        help="print every kernel, not only flagged ones")
    args = parser.parse_args(argv)
    if not (shutil.which("ptxas") or find_nvdisasm()):
        print("codegen_audit: needs ptxas or nvdisasm on PATH (pip install nvidia-cuda-nvdisasm)",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as dump_dir:
        _setup(args.arch, dump_dir)
        from cutematmul import aot

        keys = aot.plan_keys(aot.Selection(archs=(args.arch,),
                                           precisions=("highest", "high", "tf32")))
        print(f"codegen_audit: {len(keys)} kernels for {args.arch}; ptxas "
              f"{'yes' if shutil.which('ptxas') else 'no'}, nvdisasm "
              f"{find_nvdisasm() or 'no'}", flush=True)
        context = multiprocessing.get_context("spawn")
        flagged = 0
        with context.Pool(max(1, args.jobs), initializer=_setup,
                          initargs=(args.arch, dump_dir)) as pool:
            for name, found in pool.imap_unordered(_audit, [(k, args.arch) for k in keys]):
                bad = _flagged(found)
                flagged += bad
                if bad or args.all:
                    print(f"{'FLAGGED' if bad else 'ok'}  {name}  {found}", flush=True)
    print(f"codegen_audit: {flagged} of {len(keys)} kernels flagged")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
