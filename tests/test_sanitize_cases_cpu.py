"""CPU tests of ``tools/sanitize_cases.py``'s case lists: each product meant to reach a kernel
variant under compute-sanitizer is still planned onto it by today's rules (the sanitizer run
itself is a GPU job; the tool imports PyTorch, so its lists are read from the source)."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import forced_tf32_plan, load_tool

_SOURCE = Path(__file__).resolve().parents[1] / "tools" / "sanitize_cases.py"
#: What a 16-bit call on an H200 plans over: the automatic family order, capability, SM count.
_H200_16BIT = (("sm90", "sm80", "simt"), (9, 0), 132)


def _constant(name: str):
    """The literal value assigned to ``name`` at the top of the tool."""
    for node in ast.parse(_SOURCE.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name
                                                for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(name)


def _pick(m, n, k, dtype, layout):
    from cutematmul import dispatch

    problem = load_tool("sweep_schedule").problem_of(dtype, m, n, k, layout)
    return dispatch.tunable(problem, 1)[0]


def test_swap_cases_are_planned_swapped_and_cover_the_narrow_rings():
    from cutematmul.configs import sm90

    cases = _constant("SWAP_CASES")
    picks = [_pick(*case) for case in cases]
    for case, (config, splits, transposed) in zip(cases, picks):
        assert config.swap and not transposed, (case, config)
    narrow = [config for config, _, _ in picks if config.tile_n <= sm90.SMALL_M]
    assert {(c.tile_m, c.stages) for c in narrow} >= {(64, sm90._NARROW_RING_STAGES), (128, 0)}
    # --quick runs the first two: one of them on the deeper ring.
    assert any(c.stages == sm90._NARROW_RING_STAGES for c, _, _ in picks[:2])


def _tool_without_torch(monkeypatch):
    """The tool, loaded with an empty stand-in for PyTorch (only its case tables are used)."""
    import sys
    import types

    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    return load_tool("sanitize_cases")


def test_groups_cover_every_family_and_select_by_name(monkeypatch):
    import pytest

    tool = _tool_without_torch(monkeypatch)
    families = {family for family, _ in tool.GROUPS}
    assert families == {"simt", "sm80", "sm90", "tf32", "streamk", "cupy", "jax"}
    assert all(callable(run) for run in tool.GROUPS.values())
    # Every family with modes runs them; every group is one entry, in GROUPS' order.
    assert {f for f, g in tool.GROUPS if g == "modes"} == set(tool.FAMILY_MODES)
    assert tool.selected(["sm90", "sm80"], ["swapped", "modes"]) == [
        ("sm90", "swapped"), ("sm90", "modes"), ("sm80", "modes")]
    assert [g for _, g in tool.selected(["sm90"])][:2] == ["wide", "odd_widths"]
    with pytest.raises(ValueError, match="--groups: \\['gemv'\\] in none"):
        tool.selected(["sm90"], ["gemv"])
    with pytest.raises(ValueError, match="--families: unknown \\['sm100'\\]"):
        tool.selected(["sm100"])


def test_sanitize_driver_runs_a_split_tool_one_group_at_a_time(tmp_path):
    """``tools/sanitize.sh`` with stand-ins for compute-sanitizer and for the GPU workload: the
    tools in SANITIZE_SPLIT run one process per group, the others one per family, and
    SANITIZE_GROUPS keeps only the named groups."""
    import os
    import shutil
    import stat
    import subprocess
    import sys

    import pytest

    if shutil.which("bash") is None:
        pytest.skip("no bash on this machine")
    root = Path(__file__).resolve().parents[1]
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "torch.py").write_text("")  # --list reads the tables only
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scripts = {
        # The workload itself needs a GPU: only --list runs for real.
        "python": f'#!/usr/bin/env bash\nif [[ " $* " == *" --list "* ]]; then '
                  f'PYTHONPATH={stub} exec {sys.executable} "$@"; fi\n'
                  'echo "sanitize_cases: 1 products correct"\n',
        "compute-sanitizer": '#!/usr/bin/env bash\necho "$*" >> "$CALLS"\n'
                             'echo "sanitize_cases: 1 products correct"\n'
                             'echo "========= ERROR SUMMARY: 0 errors"\n',
    }
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(stat.S_IRWXU)

    def run(**env):
        calls = tmp_path / "calls.txt"
        calls.unlink(missing_ok=True)
        done = subprocess.run(
            ["bash", str(root / "tools" / "sanitize.sh"), str(tmp_path / "logs")],
            env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(calls),
                 **env}, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        lines = (tmp_path / "logs" / "summary.txt").read_text().splitlines()
        return [line.split(": exit")[0] for line in lines], calls.read_text().splitlines()

    tool_groups = ["wide", "odd_widths", "pingpong", "swapped", "clusters", "copies",
                   "direct_c", "modes"]
    lines, _ = run(SANITIZE_TOOLS="memcheck racecheck", SANITIZE_FAMILIES="sm80 sm90")
    assert lines == ["memcheck sm80", "memcheck sm90", "racecheck sm80:modes",
                     *(f"racecheck sm90:{g}" for g in tool_groups)]
    lines, calls = run(SANITIZE_TOOLS="memcheck racecheck", SANITIZE_FAMILIES="simt sm90",
                       SANITIZE_GROUPS="swapped gemv modes")
    assert lines == ["memcheck simt:gemv,modes", "memcheck sm90:swapped,modes",
                     "racecheck simt:gemv", "racecheck simt:modes", "racecheck sm90:swapped",
                     "racecheck sm90:modes"]
    assert calls[1].endswith("tools/sanitize_cases.py --families sm90 --groups swapped,modes")
    assert calls[4].endswith("tools/sanitize_cases.py --families sm90 --groups swapped --quick")


def test_jax_cases_reach_what_they_are_meant_to():
    """Each jitted product of the "jax" family is planned (``xla.xla_plan``, an H200) as its
    row says: sm80 over padded rows, split, C^T, rows XLA pads, or 16-bit rows of no whole
    vectors read in place (SIMT's row-streaming kernel); every sm80 one hands the
    kernel B as the caller stored it (rows of whole 16-byte vectors: no copy), so a read past B
    leaves B's own allocation."""
    import pytest

    pytest.importorskip("jax")
    from cutematmul import xla

    for dtype, precision, a_shape, b_shape, ta, tb, kind in _constant("JAX_CASES"):
        m, k = (a_shape[1], a_shape[0]) if ta else a_shape
        n = b_shape[0] if tb else b_shape[1]
        assert (b_shape[1] if tb else b_shape[0]) == k, (a_shape, b_shape, "K differs")
        plan = xla.xla_plan((9, 0), 132, dtype, precision, "auto", m, n, k, 1, ta, tb, True, True)
        got = {"sm80": plan.key.family == "sm80", "split": plan.splits > 1 and not plan.transposed,
               "transposed": plan.transposed, "padded": plan.need > 1,
               "in place": plan.key.family == "simt" and plan.need == 1}[kind]
        assert got, (a_shape, b_shape, kind, plan)
        if kind == "sm80":
            assert b_shape[-1] % plan.need == 0, (b_shape, "B would be a padded copy")


def test_forced_tf32_schedules_are_the_planned_ones(monkeypatch):
    """Each TF32 register case, forced in each layout (``tf32_forced_config``), is the launch's
    plan (``forced_tf32_plan``): the swap follows which operand of an (m, n) pair the launch
    copies K-major (the smaller one), so the kernel is never asked for (k, n) operands
    unswapped."""
    tool = _tool_without_torch(monkeypatch)
    for m, n, k, fields, splits, transposed in tool.TF32_CASES:
        for layout in ("nn", "tn", "nt", "tt"):
            choice = (tool.tf32_forced_config(m, n, k, layout, fields, transposed), splits,
                      transposed)
            forced_tf32_plan(choice, m, n, k, layout)


def test_gemv16_cases_run_on_the_row_streaming_kernel():
    """Each 16-bit row-streaming case is planned (an H200, contiguous operands in its layout)
    on SIMT's row-streaming kernel reading both operands as they are, split and unsplit, over
    every CTA row count the cases name, C^T included."""
    from cutematmul import launch

    seen = set()
    for m, n, k, dtype, layout in _constant("GEMV16_CASES"):
        work = launch.contiguous_plan(*_H200_16BIT, dtype, m, n, k, 1,
                                      (layout[0] == "t", layout[1] == "t"))
        assert work.key.family == "simt" and work.key.config.gemv and work.prep is None, (
            m, n, k, layout, work)
        config = work.key.config
        seen.add((config.mma, config.tile_m, work.splits > 1, work.transposed))
    # FMA rows of 16 bits: up to 2 over a K-major B, C^T included (``HALF_FMA_MAX_M``)
    assert {rows for mma, rows, _, _ in seen if not mma} == {1, 2}
    from cutematmul.configs.simt import HALF_GEMV_MAX_M, MMA_ROWS

    most = max(HALF_GEMV_MAX_M.values())
    assert {rows for mma, rows, _, _ in seen if mma} == {r for r in MMA_ROWS if r <= most}
    assert {split for _, _, split, _ in seen} == {True, False}
    assert {mma for mma, _, _, transposed in seen if transposed} == {True, False}
    # 128-row CTAs the dispatcher leaves to the copy route, on kernel="simt": split, unsplit
    # and C^T.
    wide = set()
    for m, n, k, dtype, layout in _constant("GEMV16_WIDE_CASES"):
        work = launch.contiguous_plan(("simt",), *_H200_16BIT[1:], dtype, m, n, k, 1,
                                      (layout[0] == "t", layout[1] == "t"))
        config = work.key.config
        assert config.mma and config.tile_m == MMA_ROWS[-1] and work.prep is None, (
            m, n, k, layout, work)
        wide.add((config.tile_m, work.splits > 1, work.transposed))
    assert {split for _, split, _ in wide} == {True, False}
    assert {transposed for _, _, transposed in wide} == {True, False}


def test_copy_cases_run_on_sm90_over_the_copies_they_assert():
    """Each 16-bit copy case (``COPY_CASES``), contiguous in each layout on an H200, is planned
    on the sm90 kernel over exactly the copies the workload asserts (an operand whose rows are
    no whole 16-byte vectors), and each across case (``ACROSS_CASES``) copies A K-major: a case
    the dispatcher moved to another kernel (9x9x20001 went to SIMT's row kernel) failed the
    workload's own check before any tool ran."""
    from cutematmul import launch

    for m, n, k, dtype in _constant("COPY_CASES"):
        for layout in ("nn", "tn", "nt", "tt"):
            ta, tb = layout[0] == "t", layout[1] == "t"
            work = launch.contiguous_plan(*_H200_16BIT, dtype, m, n, k, 1, (ta, tb))
            want = ((m if ta else k) % 8 != 0, (k if tb else n) % 8 != 0)
            copied = tuple(p is not None for p in work.prep or (None, None))
            assert work.key.family == "sm90" and copied == want, (m, n, k, layout, work)
    for m, n, k, batch, dtype in _constant("ACROSS_CASES"):
        for layout in ("tn", "tt"):
            work = launch.contiguous_plan(*_H200_16BIT, dtype, m, n, k,
                                          batch[0] if batch else 1, (True, layout[1] == "t"))
            assert work.key.family == "sm90" and work.prep and work.prep[0] is not None, (
                m, n, k, layout, work)
            assert work.prep[0].to_major == "k", (m, n, k, layout, work)


def test_direct_c_cases_store_c_themselves():
    """Each ``DIRECT_C_CASES`` product in each layout, into a column slice of a wider buffer (C's
    row stride N + 5, as the workload passes it), is planned on a kernel that stores C itself:
    no reduction, C aligned to one element."""
    from cutematmul import launch

    for m, n, k, dtype in _constant("DIRECT_C_CASES"):
        for layout in ("nn", "tn", "nt", "tt"):
            ta, tb = layout[0] == "t", layout[1] == "t"
            a_strides = (1, m) if ta else (k, 1)
            b_strides = (1, k) if tb else (n, 1)
            _, work = launch._plan_launch(
                *_H200_16BIT, (m, k), a_strides, (k, n), b_strides, (m, n), (n + 5, 1), dtype, 2,
                (True, True, False), (False, False, False))
            assert isinstance(work, launch.Launch), (m, n, k, layout, work)
            assert work.reduce is None and work.key.align_c == 1, (m, n, k, layout, work)
