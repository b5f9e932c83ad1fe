"""The one reference check every test uses, and array makers for each library."""

from __future__ import annotations

import numpy as np

# Relative Frobenius error bounds against a float64 product of the same (rounded) inputs.
# float32 is true fp32 (TF32 would land near 3e-4); 16-bit outputs are dominated by the final
# rounding to 11 (fp16) or 8 (bf16) significant bits.
#: Relative Frobenius error bounds against float64; "tf32" is fp32 data through one TF32 pass
#: (one 10-bit-mantissa rounding of each input).
TOLERANCE = {"float32": 2e-5, "float16": 1e-3, "bfloat16": 8e-3, "tf32": 4e-3}



def load_tool(name: str):
    """The module ``tools/<name>.py`` (tools are scripts, not a package), loaded fresh, with
    ``tools/`` on ``sys.path`` as a script run from there has it (tools import their
    neighbours, some lazily)."""
    import importlib.util
    import sys
    from pathlib import Path

    tools = str(Path(__file__).resolve().parents[1] / "tools")
    if tools not in sys.path:
        sys.path.append(tools)
    path = Path(tools) / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

def needs_dsl():
    """The skip mark of tests that compile kernels: they need nvidia-cutlass-dsl, not a GPU."""
    import importlib.util

    import pytest

    return pytest.mark.skipif(
        importlib.util.find_spec("cutlass") is None,
        reason=("nvidia-cutlass-dsl (module 'cutlass') is not installed; "
                "these tests compile kernels with it"),
    )


def needs_git_clone():
    """The skip mark of tests that export a revision (``git archive``): they need git and a
    clone of the repository, as CI has."""
    import shutil
    from pathlib import Path

    import pytest

    return pytest.mark.skipif(
        shutil.which("git") is None or not (Path(__file__).resolve().parents[1] / ".git").exists(),
        reason="needs git and a clone of the repository (git archive of a revision)",
    )


def to_numpy(x) -> np.ndarray:
    """Any supported array -> NumPy float64 (on the host)."""
    mod = type(x).__module__.split(".", 1)[0]
    if mod == "cupy":
        import cupy

        return cupy.asnumpy(x.astype(cupy.float32)).astype(np.float64)
    if mod == "torch":
        return x.detach().float().cpu().numpy().astype(np.float64)
    return np.asarray(x, dtype=np.float64)


def relative_error(result, expected: np.ndarray) -> float:
    got = to_numpy(result)
    assert got.shape == expected.shape, f"shape {got.shape} != expected {expected.shape}"
    assert np.isfinite(got).all(), "result has NaN/Inf: some output elements were not written"
    denom = np.linalg.norm(expected)
    diff = np.linalg.norm(got - expected)
    return float(diff / denom) if denom else float(diff)


def check_matmul(result, a, b, dtype: str) -> float:
    """Assert ``result`` matches the float64 product of ``a`` and ``b``; returns the error."""
    expected = np.matmul(to_numpy(a), to_numpy(b))
    err = relative_error(result, expected)
    assert err <= TOLERANCE[dtype], f"relative error {err:.3g} > {TOLERANCE[dtype]:g} for {dtype}"
    return err


def layout_operands(mk, m, n, k, layout, dtype, batch=()):
    """Gaussian (a, b) of an (m, n, k) product in ``layout`` ("nn", "tn", "nt", "tt"; "t": that
    operand is a transposed view of a contiguous array), made by the ``Maker`` ``mk``."""
    a = mk.randn(batch + (k, m), dtype) if layout[0] == "t" else mk.randn(batch + (m, k), dtype)
    b = mk.randn(batch + (n, k), dtype) if layout[1] == "t" else mk.randn(batch + (k, n), dtype)
    if layout[0] == "t":
        a = a.transpose(-1, -2)
    if layout[1] == "t":
        b = b.transpose(-1, -2)
    return a, b


class Maker:
    """Fresh Gaussian arrays and NaN-poisoned outputs for one array library."""

    def __init__(self, lib: str, seed: int = 0):
        self.lib = lib
        self.rng = np.random.default_rng(seed)
        if lib == "cupy":
            import cupy

            self.xp = cupy
        elif lib == "torch":
            import torch

            self.xp = torch
        else:
            self.xp = np

    def dtype(self, name: str):
        if self.lib == "torch":
            import torch

            return getattr(torch, name)
        if name == "bfloat16":
            import ml_dtypes

            return ml_dtypes.bfloat16
        return np.dtype(name)

    def randn(self, shape, dtype: str):
        host = self.rng.standard_normal(shape, dtype=np.float32)
        if self.lib == "torch":
            import torch

            return torch.from_numpy(host).to("cuda").to(self.dtype(dtype))
        if self.lib == "cupy":
            if dtype == "bfloat16":
                return self.xp.asarray(host).astype(self.dtype(dtype))
            return self.xp.asarray(host.astype(dtype))
        return host.astype(self.dtype(dtype))

    def poisoned(self, shape, dtype: str):
        if self.lib == "torch":
            import torch

            return torch.full(shape, float("nan"), dtype=self.dtype(dtype), device="cuda")
        out = self.xp.empty(shape, dtype=self.dtype(dtype))
        out.fill(np.nan)
        return out


def compile_in_child(arch: str, child_code: str, argument, tmp_path,
                     prefix: str = "COUNTS=") -> dict:
    """Run ``child_code`` in a fresh Python with ``CUTE_DSL_ARCH=arch``; return its ``prefix`` JSON.

    The CuTe DSL fixes its target when imported, so each target gets its own process.  Nothing is
    launched: the child only compiles and counts PTX instructions.
    """
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ)
    env["CUTE_DSL_ARCH"] = arch
    # --keep-ptx also writes files: keep them out of the repo
    env["CUTE_DSL_DUMP_DIR"] = str(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-c", child_code, json.dumps(argument)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200,
    )
    assert proc.returncode == 0, f"compile child failed for {arch}:\n{proc.stdout}\n{proc.stderr}"
    line = next(l for l in proc.stdout.splitlines() if l.startswith(prefix))
    return json.loads(line[len(prefix):])


def compile_ptx(tmp_path_factory, child_code: str, variants) -> tuple[dict, dict]:
    """(variant -> PTX text, the child's JSON) of ``variants`` compiled for sm_90a by
    ``child_code`` (``compile_in_child``), which writes each variant's PTX to a file and prints
    the files' names, in order, as ``NAMES={"names": [...], ...}``.  What the PTX-interpreter
    tests (``tests/ptxsim.py``) run."""
    tmp = tmp_path_factory.mktemp("ptx")
    out = compile_in_child("sm_90a", child_code, [list(v) for v in variants], tmp,
                           prefix="NAMES=")
    return {v: (tmp / name).read_text() for v, name in zip(variants, out["names"])}, out


def tf32_swap(layout: str, transposed: bool, m: int, n: int) -> bool:
    """``Config.swap`` of a forced one-pass TF32 schedule in ``layout``: the kernel swaps
    exactly when the B it reads is N-major (``configs.sm90.swaps``).  "tn" reads a K-major copy
    of the smaller operand: of A where M < N, so as "nn", else of B.  Untransposed, that is
    "nn"; transposed (C^T = B^T A^T), an M-major A ("tn" copying B, "tt")."""
    if layout == "tn" and m < n:
        layout = "nn"
    return layout[0] == "t" if transposed else layout == "nn"


#: Forced one-pass TF32 schedules of ``test_gpu_fp32_modes.py`` (``test_tf32_cpu.py`` checks
#: that each is the planned launch in every layout): (id, M, N, K, Config fields, splits,
#: transposed).  Odd tile rows in a 2x1 cluster (128 and 64 rows), split-K partials, stream-K,
#: a 64-wide tile (the sweep's ``--widths``), and the narrow tiles of a transposed small-M
#: product; tails in M, N and K throughout (N a multiple of 4: an unaligned C would be staged,
#: and the forced launch would not be the planned one).
TF32_SCHEDULES = [
    ("cluster", 300, 520, 1000, {"tile_m": 128, "tile_n": 256, "cluster_m": 2, "pdl": True}, 1,
     False),
    ("split", 200, 264, 3000, {"tile_m": 128, "tile_n": 128, "partials": True, "pdl": True}, 3,
     False),
    ("streamk", 300, 200, 3000, {"tile_m": 128, "tile_n": 128, "streamk": True}, 1, False),
    ("cluster-64", 300, 1032, 1000, {"tile_m": 64, "tile_n": 128, "cluster_m": 2, "pdl": True},
     1, False),
    ("narrow-64", 40, 1032, 1000, {"tile_m": 64, "tile_n": 64, "pdl": True}, 1, False),
    ("narrow-64-split", 56, 1032, 3000, {"tile_m": 64, "tile_n": 64, "partials": True,
                                         "pdl": True}, 2, False),
    ("transposed", 24, 1032, 2000, {"tile_m": 64, "tile_n": 32, "partials": True, "pdl": True},
     2, True),
]


#: Forced narrow-N one-pass TF32 schedules (untransposed, N <= 32: ``configs.sm90.narrow_n``):
#: (id, M, N, K, Config fields, splits).  C stored by the kernel (64-row tiles, and 128-row ones
#: in a 2x1 cluster with an odd count of tile rows), and split-K partials; tails in M and K.
TF32_NARROW = [
    ("store-64", 1000, 24, 2000, {"tile_m": 64, "tile_n": 32, "pdl": True}, 1),
    ("store-128-2x1", 1400, 16, 1000, {"tile_m": 128, "tile_n": 16, "epi_n": 16,
                                       "cluster_m": 2, "pdl": True}, 1),
    ("split", 1500, 8, 4100, {"tile_m": 64, "tile_n": 16, "epi_n": 16, "partials": True,
                              "pdl": True}, 3),
]


def tf32_forced_choice(schedule: tuple, layout: str) -> tuple:
    """(config, splits, transposed) of a ``TF32_SCHEDULES`` or ``TF32_NARROW`` entry forced in
    ``layout``: the TF32 Config fields (32-wide K-tiles, the epilogue ring), the entry's, and
    the swap its layout implies (``tf32_swap``; narrow-N schedules never swap)."""
    from cutematmul.configs.sm90 import Config, tf32_fields

    _, m, n, _, fields, splits, *rest = schedule
    transposed = bool(rest and rest[0])
    swap = tf32_swap(layout, transposed, m, n) if rest else False
    return Config(**tf32_fields("tf32"), swap=swap, **fields), splits, transposed


def forced_tf32_plan(choice: tuple, m: int, n: int, k: int, layout: str):
    """The launch planned on an H200 (sm_90, 132 SMs) for a one-pass TF32 product of
    contiguous operands in ``layout`` with ``choice`` (config, splits, transposed) in the tuned
    tier, asserted to be exactly that schedule, swapped as the kernel's own rule says
    (``Sm90Hgemm`` refuses any other: C^T = B^T A^T exactly when the operands it reads are
    (k, n)).  No GPU: a forced case that the planner would turn into another kernel fails
    here, not on the device."""
    from cutematmul import cache, launch
    from cutematmul.configs.sm90 import swaps

    transposed = (layout[0] == "t", layout[1] == "t")
    planned = launch.contiguous_plan(("sm90",), (9, 0), 132, "tf32", m, n, k, 1, transposed)
    with cache.trial_tuned(planned.problem, choice):
        forced = launch.contiguous_plan(("sm90",), (9, 0), 132, "tf32", m, n, k, 1, transposed,
                                        tuned=True)
    key = forced.key
    assert (key.config, forced.splits, forced.transposed) == choice, (
        m, n, k, layout, key.config, forced.splits)
    assert key.config.swap == swaps("tf32", key.a_major, key.b_major), (m, n, k, layout)
    return forced


def forced_runs(a, b, choose, holds, repeats: int = 1, **call) -> list:
    """``repeats`` products ``a @ b`` (torch arrays on the GPU), each into a fresh NaN-poisoned
    ``out``, with the schedule ``choose(planned launch)`` returns, (config, splits, transposed),
    forced through the tuned tier (``cache.trial_tuned``, what ``cutematmul.tune`` records).
    First asserts that the forced plan ``holds`` the schedule meant, so a case never silently
    tests another kernel.  ``call``: the keywords of both the plan and the product (``kernel``,
    ``precision``)."""
    import torch

    import cutematmul
    from cutematmul import cache, launch
    from cutematmul.adapters import adapter_for

    work = launch.planned_launch(adapter_for(a), a, b, **call)
    assert work is not None and work.problem is not None, "the product is not one launch"
    outs = []
    with cache.trial_tuned(work.problem, choose(work)):
        forced = launch.planned_launch(adapter_for(a), a, b, **call)
        assert holds(forced), forced
        for _ in range(repeats):
            out = torch.full(a.shape[:-1] + b.shape[-1:], float("nan"), dtype=a.dtype,
                             device="cuda")
            outs.append(cutematmul.matmul(a, b, out=out, **call))
    return outs


def forced_schedule_runs(a, b, config, splits: int = 1, repeats: int = 1) -> list:
    """``forced_runs`` with ``config`` and ``splits`` (untransposed) as the schedule, held to be
    exactly the planned launch: its configuration, its split count, and a stream-K workspace
    where the configuration is stream-K."""
    def holds(forced):
        return (forced.key.config == config and forced.splits == splits
                and (forced.streamk is not None) == config.streamk)

    return forced_runs(a, b, lambda work: (config, splits, False), holds, repeats)


def check_forced_twice(mk, shape, config, splits: int = 1) -> None:
    """A fresh fp16 "nn" product of ``shape`` (M, N, K) with ``config`` and ``splits`` forced
    as its schedule (``forced_schedule_runs``), run twice into NaN-poisoned outputs: the first
    correct against float64, the two bitwise equal."""
    import torch

    a, b = layout_operands(mk, *shape, "nn", "float16")
    first, second = forced_schedule_runs(a, b, config, splits, repeats=2)
    check_matmul(first, a, b, "float16")
    assert torch.equal(first, second), "two runs of the same product differ"


def check_c_view(mk, m: int, n: int, k: int, choice) -> None:
    """A fresh fp16 ``m x n x k`` product with ``choice`` (config, splits, transposed) forced,
    written into ``out``, a column slice of a wider NaN-poisoned row-major buffer: correct, and
    the columns around the slice keep their poison (TMA stores stay inside the view)."""
    import torch

    import cutematmul
    from cutematmul import cache, launch
    from cutematmul.adapters import adapter_for

    a, b = layout_operands(mk, m, n, k, "nn", "float16")
    buffer = torch.full((m, n + 72), float("nan"), dtype=a.dtype, device="cuda")
    out = buffer[:, 40:40 + n]
    # The view's rows are whole 16-byte vectors at a 16-byte aligned start, so its product
    # is the fresh result's problem.
    work = launch.planned_launch(adapter_for(a), a, b)
    assert work is not None and work.problem is not None
    with cache.trial_tuned(work.problem, choice):
        assert launch.planned_launch(adapter_for(a), a, b).key.config == choice[0]
        cutematmul.matmul(a, b, out=out)
    torch.cuda.synchronize()
    check_matmul(out, a, b, "float16")
    assert torch.isnan(buffer[:, :40]).all() and torch.isnan(buffer[:, 40 + n:]).all()


#: Each layout's operand majors in the kernel's orientation (A's, B's): "t" is a transposed
#: (column-major) view.
LAYOUT_MAJORS = {"nn": ("k", "n"), "tn": ("m", "n"), "nt": ("k", "k"), "tt": ("m", "k")}


def dispatched(dtype: str, m: int, n: int, k: int, batch: int = 1,
               majors: tuple[str, str] = ("k", "n")):
    """(family, KernelKey, splits, transposed) the dispatcher picks on this machine's current GPU
    for 16-byte aligned operands of ``majors`` (A's, B's; row-major by default): what a GPU test
    asserts its shapes still exercise."""
    from cutematmul import device, dispatch

    info = device.device_info(device.current_device())
    family = dispatch.choose_family(dtype, info.capability, shape=(m, n, k, batch),
                                    num_sms=info.num_sms)
    key, splits, transposed = dispatch.schedule(family, info.capability, info.num_sms, dtype,
                                                *majors, (16, 16, 16), m, n, k, batch)
    return family, key, splits, transposed
