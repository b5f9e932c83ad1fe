"""CPU tests of ``tools/replay_picks.py``: sweep and A/B lines read back, the wave model's pick
found among the timed schedules, and ``--set`` pricing a variant of the model."""

from __future__ import annotations

import math

import pytest
from helpers import load_tool

from cutematmul import launch
from cutematmul.configs import sm90

#: tt 196x3572x3788 (TF32): 128 x 192 in 3 splits under the L2 bound, 64 x 128 unsplit without
#: it (the sixty-second session's A/B: 49.2 against 66.2 us), with 64 x 128 unclustered as it
#: was then (the fixture clears ``_TF32_CLUSTER_SHORT``: these tests are of the tool).
PRODUCT = ("tf32", "tt", (1, 196, 3572, 3788))
SPLIT = "sm90_128x192x32_c1x1_g8_s8_partials_pdl/s3"
UNSPLIT = "sm90_64x128x32_c1x1_g8_s8_pdl/s1"


@pytest.fixture
def tool(monkeypatch):
    """The tool, with every constant a test sets restored and the plans forgotten after."""
    monkeypatch.setattr(sm90, "_TF32_L2_BANDWIDTH", sm90._TF32_L2_BANDWIDTH)
    monkeypatch.setattr(sm90, "_TF32_CLUSTER_SHORT", ())
    monkeypatch.setitem(sm90._WIDE_UNSPLIT_EFFICIENCY, (128, 160),
                        sm90._WIDE_UNSPLIT_EFFICIENCY[(128, 160)])
    launch.clear_plans()
    yield load_tool("replay_picks")
    launch.clear_plans()


def test_reads_sweep_lines_and_ab_report_lines(tool):
    sweep = ("tf32 tt 196x3572x3788 cold: cuBLAS 40.1us | pick 128x192/s3 49.0us (0.82x) | "
             f"{SPLIT} 49.2 | {UNSPLIT} 66.2")
    ab = ("tf32T float32 tf32 tt 4x196x3572x3788: base 49.2 us, head 66.2 us, cuBLAS 40.1 us, "
          "gain 0.743 (rounds 0.75/0.74/0.74) | sm90_128x192x32_c1x1_g8_s8_partials_pdl s3 -> "
          "sm90_64x128x64_c1x1_g8_s8_pdl s1 transposed, A copied")
    first, second = tool.parse(["class mid: geometric mean ...", sweep, ab])
    assert first == tool.Timed("tf32", "tt", (1, 196, 3572, 3788), 40.1,
                               {SPLIT: 49.2, UNSPLIT: 66.2})
    assert second.math == "tf32" and second.shape == (4, 196, 3572, 3788)
    assert second.times == {SPLIT: 49.2, "sm90_64x128x64_c1x1_g8_s8_pdl/s1T": 66.2}


def test_the_picks_regret_is_its_time_over_the_fastest(tool):
    timed = tool.Timed(*PRODUCT, 40.1, {SPLIT: 55.0, UNSPLIT: 50.0})
    assert tool.pick(timed) == SPLIT
    lines = tool.replay([timed, tool.Timed("float16", "nn", (1, 64, 64, 64), 1.0, {"x/s1": 1.0})])
    assert lines[0].startswith("tf32 tt 1x196x3572x3788: pick " + SPLIT + " 55.0 us, fastest "
                               + UNSPLIT + " 50.0 us (cuBLAS 40.1): 1.100")
    assert lines[1] == (f"pick over fastest timed: geometric mean 1.1000 over 1 products, most "
                        f"1.100; pick x cuBLAS {40.1 / 55.0:.3f}")
    assert lines[2].startswith("picks not timed: 1\n  float16 nn 1x64x64x64 (")
    # A pick within 1% of the fastest is printed only with every=True.
    close = tool.Timed(*PRODUCT, 40.1, {SPLIT: 50.2, UNSPLIT: 50.0})
    assert len(tool.replay([close])) == 2 and len(tool.replay([close], every=True)) == 3


def test_set_prices_a_variant_of_the_model(tool):
    timed = tool.Timed(*PRODUCT, 40.1, {SPLIT: 49.2, UNSPLIT: 66.2})
    tool.set_constant("configs.sm90._TF32_L2_BANDWIDTH=0")
    launch.clear_plans()
    assert sm90._TF32_L2_BANDWIDTH == 0 and tool.pick(timed) == UNSPLIT
    tool.set_constant("cutematmul.configs.sm90._WIDE_UNSPLIT_EFFICIENCY[(128, 160)]=0.93")
    assert sm90._WIDE_UNSPLIT_EFFICIENCY[(128, 160)] == 0.93
    assert math.isclose(float(tool.replay([timed])[-2].split()[6]), 66.2 / 49.2, rel_tol=1e-3)


@pytest.mark.parametrize("assignment, message", [
    ("configs.sm90._NO_SUCH_CONSTANT=1", "has no _NO_SUCH_CONSTANT"),
    ("configs.sm90._TF32_L2_BANDWIDTH", "expected MODULE.NAME=VALUE"),
    ("6e12=configs", "expected MODULE.NAME=VALUE"),
])
def test_set_names_what_is_wrong(tool, assignment, message):
    with pytest.raises(ValueError, match=message):
        tool.set_constant(assignment)


def test_main_reads_logs_and_reports(tool, tmp_path, capsys):
    log = tmp_path / "sweep.log"
    log.write_text("tf32 tt 196x3572x3788 cold: cuBLAS 40.1us | pick 128x192/s3 49.0us (0.82x) | "
                   f"{SPLIT} 49.2 | {UNSPLIT} 66.2\n")
    assert tool.main([str(log)]) == 0
    printed = capsys.readouterr().out
    assert "geometric mean 1.0000 over 1 products" in printed and "picks not timed: 0" in printed
    (tmp_path / "empty.log").write_text("nothing here\n")
    with pytest.raises(SystemExit):
        tool.main([str(tmp_path / "empty.log")])
