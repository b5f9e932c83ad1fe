"""CPU tests of ``tools/pick_changes.py``: the products whose planned schedule differs between
two builds, found without a GPU."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_tool, needs_git_clone

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    return load_tool("pick_changes")


def test_changes_lists_the_products_whose_schedule_differs_in_cases_format():
    tool = _tool()
    base = [("a float16 highest nn 8 9 10 1", "k1 s1"), ("b float32 highest nt 1 2 3 4", "k2 s3")]
    head = [("a float16 highest nn 8 9 10 1", "k1 s1"), ("b float32 highest nt 1 2 3 4", "k5 s1")]
    assert tool.changes(base, head) == ["b float32 highest nt 1 2 3 4  # k2 s3 -> k5 s1"]
    assert tool.changes(base, base) == []
    with pytest.raises(RuntimeError, match="different products"):
        tool.changes(base, head[:1])


@needs_git_clone()
def test_one_revision_against_itself_moves_nothing(capsys):
    tool = _tool()
    tool.main(["HEAD", "HEAD", "--seed", "3-5", "--only", "decode,batched"])
    captured = capsys.readouterr()
    assert captured.out.strip() == ""
    assert captured.err.strip() == "0 of 36 products change schedule"


@needs_git_clone()
def test_each_tree_plans_with_its_own_cutematmul(tmp_path):
    tool = _tool()
    tree = tool.export("HEAD", tmp_path / "tree")
    assert (tree / "cutematmul" / "__init__.py").exists() and not (tree / "tools").exists()
    # Planted in the exported tree only: the child must import it from there.
    (tree / "cutematmul" / "classes.py").write_text(
        (ROOT / "cutematmul" / "classes.py").read_text() + "\n\ndef cases(seed=0):\n"
        "    return [('decode', 'float16', 'highest', 'nn', 4, 4096, 8192, 1)]\n")
    planned = tool.plans(tree, ["--seed", "1"])
    assert [product for product, _ in planned] == ["decode float16 highest nn 4 4096 8192 1"]
