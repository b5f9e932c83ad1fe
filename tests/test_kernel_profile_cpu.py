"""CPU tests of ``tools/kernel_profile.py``'s options (its profiling is the tool's GPU job): the
products it derives from them, and bad options refused before PyTorch is imported."""

from __future__ import annotations

import sys

import pytest

from helpers import load_tool


def test_cases_cross_shapes_layouts_and_dtypes_in_order():
    tool = load_tool("kernel_profile")
    found = tool.cases("4097x4095x4093,16x1024x1024x1024", "nn,tn", "fp16,bf16")
    assert [(s.label, lay, dt) for s, lay, dt in found] == [
        (shape, layout, dtype) for shape in ("4097x4095x4093", "16x1024x1024x1024")
        for layout in ("nn", "tn") for dtype in ("float16", "bfloat16")]
    assert found[4][0].batch == 16 and found[0][0].batch is None
    assert len(tool.cases(tool.DEFAULT_SHAPES, "nn", "fp16")) == 6


@pytest.mark.parametrize("argv, named", [(["--layouts", "nx"], "nx"), (["--dtypes", "fp8"], "fp8"),
                                         (["--shapes", "12x"], "12x"), (["--reps", "0"], "--reps")])
def test_bad_options_are_refused_naming_them_before_torch_is_imported(argv, named, capsys,
                                                                      monkeypatch):
    tool = load_tool("kernel_profile")
    monkeypatch.setitem(sys.modules, "torch", None)  # importing it would raise ImportError
    with pytest.raises(SystemExit) as exc:
        tool.main(argv)
    assert exc.value.code == 2
    assert named in capsys.readouterr().err
