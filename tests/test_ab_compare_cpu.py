"""CPU tests of ``tools/ab_compare.py``: the two trees and their kernels prepared without a GPU,
the rounds alternating between the trees, and the report's arithmetic."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest
from helpers import load_tool, needs_dsl, needs_git_clone

CASES = [("decode", "float16", "highest", "nn", 4, 4096, 8192, 1),
         ("batched", "bfloat16", "highest", "tn", 64, 256, 512, 8)]


def _tool():
    return load_tool("ab_compare")


def _log(path: Path, times: dict) -> None:
    """A shape_classes log: one result line per case, (cuBLAS us, ours us), and a class line."""
    line = load_tool("shape_classes").result_line
    path.write_text("".join(line(c, *t, 1e-4, f"k{i} s1") + "\n" for i, (c, t) in
                            enumerate(times.items())) + "class decode: geometric mean ...\n")


def test_report_takes_the_rounds_median_and_sums_up_the_gain(tmp_path):
    tool = _tool()
    logs = tmp_path / "logs"
    logs.mkdir()
    _log(logs / "base-1.log", {CASES[0]: (10.0, 20.0), CASES[1]: (30.0, 30.0)})
    _log(logs / "base-2.log", {CASES[0]: (10.0, 22.0), CASES[1]: (30.0, 32.0)})
    _log(logs / "head-1.log", {CASES[0]: (10.0, 10.0), CASES[1]: (30.0, 40.0)})
    _log(logs / "head-2.log", {CASES[0]: (10.0, 11.0), CASES[1]: (30.0, 40.0)})
    lines = tool.report(tmp_path).splitlines()
    assert lines[0].startswith("decode float16 highest nn 1x4x4096x8192: base 21.0 us, head "
                               "10.5 us, cuBLAS 10.0 us, gain 2.000 (rounds 2.00/2.00) | "
                               "k0 s1 -> k0 s1")
    assert "gain 0.775 (rounds 0.75/0.80)" in lines[1]  # 31 / 40
    # What tools/replay_picks.py reads back from each product's line.
    assert tool.PRODUCT_LINE.match(lines[1]).groups() == (
        "bfloat16", "highest", "tn", "8", "64", "256", "512", "31.0", "40.0", "30.0", "k1 s1",
        "k1 s1")
    gain = math.sqrt(2.0 * 31 / 40)
    assert lines[2] == (f"gain (base / head time) geometric mean {gain:.3f}x over 2 products, "
                        f"least 0.775x, most 2.000x")
    assert lines[3] == (f"gain per round: {math.sqrt(2.0 * 0.75):.3f}x, "
                        f"{math.sqrt(2.0 * 0.8):.3f}x")
    assert lines[4] == (f"base round 1: geometric mean {math.sqrt(0.5 * 1.0):.3f}x cuBLAS, "
                        f"least 0.50x")
    assert lines[6].startswith("head round 1:") and len(lines) == 8


def test_report_a_disturbed_round_does_not_carry_a_product(tmp_path):
    """Three rounds: the median, not the mean, so one round 6x slower leaves the gain at 1."""
    tool = _tool()
    logs = tmp_path / "logs"
    logs.mkdir()
    for turn, (base, head) in enumerate([(20.0, 20.0), (21.0, 120.0), (19.0, 19.0)], 1):
        _log(logs / f"base-{turn}.log", {CASES[0]: (10.0, base)})
        _log(logs / f"head-{turn}.log", {CASES[0]: (10.0, head)})
    first = tool.report(tmp_path).splitlines()[0]
    assert "base 20.0 us, head 20.0 us" in first and "gain 1.000 (rounds 1.00/0.17/1.00)" in first


def test_report_needs_both_sides(tmp_path):
    tool = _tool()
    (tmp_path / "logs").mkdir()
    _log(tmp_path / "logs" / "base-1.log", {CASES[0]: (1.0, 1.0)})
    with pytest.raises(RuntimeError, match="as many base-N.log as head-N.log"):
        tool.report(tmp_path)


def test_run_alternates_the_trees_each_on_its_own_kernel_cache(tmp_path, monkeypatch, capsys):
    tool = _tool()
    calls = []

    def fake(tree, argv, **env):
        calls.append((tree.name, argv, env))
        _log(tmp_path / "out.log", {CASES[0]: (10.0, 20.0 if tree.name == "base" else 10.0)})
        return subprocess.CompletedProcess(argv, 0, (tmp_path / "out.log").read_text(), "")

    monkeypatch.setattr(tool, "shape_classes", fake)
    tool.run(tmp_path, rounds=2)
    assert [name for name, _, _ in calls] == ["base", "head", "base", "head"]
    for name, argv, env in calls:
        assert argv == ["--cases", str(tmp_path / "cases"), "--recheck", "0"]
        assert env == {"CUTEMATMUL_CACHE_DIR": str(tmp_path / name / "cache")}
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == [
        "base-1.log", "base-2.log", "head-1.log", "head-2.log"]
    printed = capsys.readouterr().out
    assert "gain (base / head time) geometric mean 2.000x over 1 products" in printed


@needs_git_clone()
@needs_dsl()
def test_prepare_exports_both_trees_and_builds_their_kernels(tmp_path, capsys):
    tool = _tool()
    cases = tmp_path / "chosen.cases"
    cases.write_text(" ".join(map(str, CASES[0])) + "\n")
    out = tmp_path / "ab"
    tool.prepare("HEAD", "HEAD", cases, out, jobs=1)
    assert (out / "cases").read_text() == cases.read_text()
    for side in ("base", "head"):
        assert (out / side / "cutematmul" / "__init__.py").exists()
        assert (out / side / "revision").read_text() == "HEAD\n"
        assert any((out / side / "cache").rglob("*")), side  # the kernels were built there
    printed = capsys.readouterr().out.splitlines()
    assert [p.split(":")[0] for p in printed] == ["base (HEAD)", "head (HEAD)"]
    assert all("0 failed" in p for p in printed)


@needs_git_clone()
def test_prepare_without_build_leaves_the_kernels_to_build(tmp_path, monkeypatch, capsys):
    """``--no-build`` exports the trees only; ``build`` then compiles each tree's kernels into
    its own cache from the trees alone (as on the GPU machine, which has no git)."""
    tool = _tool()
    cases = tmp_path / "chosen.cases"
    cases.write_text(" ".join(map(str, CASES[0])) + "\n")
    out = tmp_path / "ab"
    calls = []

    def fake(tree, argv, **env):
        calls.append((tree, argv, env))
        return subprocess.CompletedProcess(argv, 0, "3 kernels: 3 built, 0 failed\n", "")

    monkeypatch.setattr(tool, "shape_classes", fake)
    tool.main(["prepare", "HEAD", "HEAD", "--cases", str(cases), "--out", str(out),
               "--no-build"])
    assert calls == [] and (out / "head" / "cutematmul" / "__init__.py").exists()
    tool.main(["build", str(out), "--jobs", "3"])
    assert [tree for tree, _, _ in calls] == [out / "base", out / "head"]
    for tree, argv, env in calls:
        assert argv == ["--cases", str(out / "cases"), "--precompile", str(tree / "cache"),
                        "--jobs", "3"]
        assert env == {"CUTE_DSL_ARCH": "sm_90a", "CUDA_VISIBLE_DEVICES": ""}
    assert capsys.readouterr().out.splitlines() == [
        "base (HEAD): 3 kernels: 3 built, 0 failed", "head (HEAD): 3 kernels: 3 built, 0 failed"]
