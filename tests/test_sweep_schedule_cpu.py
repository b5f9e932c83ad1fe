"""CPU tests of ``tools/sweep_schedule.py``'s planning half: the problem it derives from a
layout, the tuner's candidates it sweeps, and the kernels ``--precompile`` builds for them (the
timing is the tool's own GPU job)."""

from __future__ import annotations

import pytest

from helpers import load_tool


def _tool():
    return load_tool("sweep_schedule")


def test_the_problem_follows_the_layout_and_the_row_alignment():
    tool = _tool()
    p = tool.problem_of("float16", 69, 8024, 7704, "nn")
    assert (p.family, p.arch, p.a_major, p.b_major) == ("sm90", "sm_90a", "k", "n")
    assert (p.align_a, p.align_b, p.align_c, p.num_sms) == (16, 16, 16, 132)
    q = tool.problem_of("bfloat16", 304, 301, 302, "tn")
    assert (q.a_major, q.b_major) == ("m", "n")
    # Rows of 608, 602, 602 bytes: B is read through the launch's padded copy (its own major,
    # rows of whole 128-byte lines), C is stored as it is.
    assert (q.align_a, q.align_b, q.align_c) == (16, 16, 2)
    # An M-major A of 5 columns (10-byte rows) is copied too: the problem the GPU run finds.
    r = tool.problem_of("bfloat16", 5, 5552, 8632, "tn")
    assert r.align_a == 16
    assert tool.problem_of("float32", 64, 64, 64, "nt").family == "simt"


def test_tuner_candidates_are_the_tuners_list_with_distinct_labels():
    from cutematmul import dispatch

    tool = _tool()
    p = tool.problem_of("float16", 69, 8024, 7704, "nn")
    found = tool.tuner_candidates(p)
    assert [c[:3] for c in found] == dispatch.tunable(p, dispatch.EVERY_CANDIDATE)
    assert len({c[3] for c in found}) == len(found)
    assert any(c[0].swap for c in found) and any(c[1] > 1 for c in found)


def test_max_splits_keeps_the_tuners_schedules_that_split_no_further(monkeypatch):
    """``--max-splits 1`` keeps the unsplit tiles and clusters of a large product (2x2
    included), in the tuner's order, and reaches both the sweep and the precompile."""
    tool = _tool()
    p = tool.problem_of("float16", 8192, 8192, 8192, "nn")
    every = tool.tuner_candidates(p)
    unsplit = tool.tuner_candidates(p, max_splits=1)
    assert unsplit == [c for c in every if c[1] == 1] and len(unsplit) < len(every)
    assert any((c[0].cluster_m, c[0].cluster_n) == (2, 2) for c in unsplit)
    assert tool._choices("float16", p, True, False, max_splits=1) == unsplit
    calls = []
    monkeypatch.setattr(tool, "sweep", lambda *a, **kw: calls.append(kw))
    monkeypatch.setattr(tool, "precompile", lambda *a: calls.append(a) or tool.aot.Report("D"))
    assert tool.main(["fp16", "--tuner", "--max-splits", "1", "--shapes", "8192x8192x8192"]) == 0
    assert tool.main(["fp16", "--tuner", "--max-splits", "1", "--precompile", "D"]) == 0
    assert calls[0]["max_splits"] == 1 and calls[1][9] == 1 and calls[1][10] is None


def test_widths_menu_is_the_tiles_each_orientation_builds(monkeypatch):
    """``--widths``: each width unswapped where built (not the fine 144, 176, 208) and swapped,
    in 1x1 and 2x1 clusters, unsplit, on 128 rows or (``256x160``) on 256; one-pass TF32 in its
    layout's orientation only, on 32-wide K-tiles; nothing for the fp32 SIMT kernel; refused
    beside another menu."""
    tool = _tool()
    p = tool.problem_of("float16", 1376, 3208, 2912, "nn")
    found = tool.width_candidates(p, [144, 160])
    names = [label for _, _, _, label in found]
    assert [(c.tile_n, c.swap, c.cluster_m) for c, _, _, _ in found] == [
        (144, True, 1), (144, True, 2), (160, False, 1), (160, False, 2), (160, True, 1),
        (160, True, 2)], names
    assert all(s == 1 and not t and c.tile_m == 128 for c, s, t, _ in found)
    assert tool._choices("float16", p, False, False, widths=[144, 160]) == found
    assert tool.width_candidates(tool.problem_of("float32", 512, 512, 512, "nn"), [160]) == []
    # TF32 tn (A copied K-major, B N-major): swapped, as the kernel must; 64-row tiles too.
    tf32 = tool.width_candidates(tool.problem_of("tf32", 40, 6144, 3072, "tn"),
                                 [(64, 64), 128])
    assert [(c.tile_m, c.tile_n, c.swap, c.cluster_m, c.tile_k) for c, _, _, _ in tf32] == [
        (64, 64, True, 1, 32), (64, 64, True, 2, 32), (128, 128, True, 1, 32),
        (128, 128, True, 2, 32)]
    nt = tool.width_candidates(tool.problem_of("tf32", 40, 6144, 3072, "nt"), [(64, 64)])
    assert {c.swap for c, _, _, _ in nt} == {False}
    calls = []
    monkeypatch.setattr(tool, "precompile", lambda *a: calls.append(a) or tool.aot.Report("D"))
    assert tool.main(["tf32", "--widths", "64x64", "--shapes", "40x6144x3072", "--layout",
                      "tn", "--precompile", "D"]) == 0
    assert calls[0][0] == ["tf32"] and calls[0][10] == [(64, 64)], calls
    with pytest.raises(SystemExit):
        tool.main(["high", "--widths", "64x64"])
    # 256-row tiles where built: unswapped, at most 192 wide.
    tall = tool.width_candidates(p, [(256, 160), (256, 224)])
    assert [(c.tile_m, c.tile_n, c.swap, c.cluster_m) for c, _, _, _ in tall] == [
        (256, 160, False, 1), (256, 160, False, 2)]
    assert tool._widths("160,256x192") == [160, (256, 192)]
    with pytest.raises(SystemExit):
        tool.main(["fp16", "--widths", "160", "--tuner"])
    with pytest.raises(SystemExit):
        tool.main(["fp16", "--widths", "16x0"])


@pytest.mark.parametrize("argv", [["fp16", "--max-splits", "1"],
                                  ["fp16", "--tuner", "--max-splits", "0"]])
def test_max_splits_without_the_tuner_or_below_one_is_refused_by_name(argv, capsys):
    """``--max-splits`` filters the tuner's list only: alone, or under 1 (no schedule left), it
    is refused naming the option, before any sweep or compile."""
    tool = load_tool("sweep_schedule")
    with pytest.raises(SystemExit) as exc:
        tool.main(argv)
    assert exc.value.code == 2
    assert "--max-splits" in capsys.readouterr().err


def test_precompile_names_the_pick_every_candidate_and_the_reduction(monkeypatch):
    from cutematmul import aot, dispatch

    tool = _tool()
    p = tool.problem_of("float16", 69, 8024, 7704, "nn")
    keys = tool.kernel_keys(p, tool.tuner_candidates(p))
    pick = dispatch.schedule(dispatch.FAMILIES["sm90"], (9, 0), 132, "float16", "k", "n",
                             (16, 16, 16), 69, 8024, 7704, 1)[0]
    assert keys[0] == pick and len(keys) == len(set(keys))
    assert dispatch.reduce_key((9, 0), "float16") in keys  # split candidates write partials
    assert {k.config.name for k in keys if hasattr(k, "config")} >= {
        c.name for c, *_ in tool.tuner_candidates(p)}
    built = {}
    monkeypatch.setattr(aot, "build_keys", lambda keys, **kw: built.update(keys=keys, **kw)
                        or aot.Report("DIR", keys=len(keys)))
    assert tool.main(["fp16", "--tuner", "--shapes", "69x8024x7704,1000x1000x1000",
                      "--precompile", "DIR", "--jobs", "3"]) == 0
    assert built["cache_dir"] == "DIR" and built["jobs"] == 3
    assert set(keys) <= set(built["keys"])


def test_occupancy_candidates_are_the_simt_pick_at_each_register_budget():
    from cutematmul.configs import simt

    tool = _tool()
    p = tool.problem_of("float32", 1000, 1000, 1000, "nt")
    found = tool.occupancy_candidates(p)
    pick, splits, transposed = simt.choose_schedule(1000, 1000, 1000, 1, 132,
                                                    majors=(p.a_major, p.b_major))
    assert found[0][:3] == (pick, splits, transposed)
    blocks = [c.min_blocks for c, *_ in found]
    assert blocks == list(range(pick.min_blocks, pick.min_blocks - len(found), -1))
    # Only the CTAs-per-SM budget changes, and the last leaves ptxas all 255 registers.
    assert ({c.__class__(**{**c.__dict__, "min_blocks": pick.min_blocks}) for c, *_ in found}
            == {pick})
    last = found[-1][0]
    assert simt._REGISTER_FILE // (last.threads * last.min_blocks) >= 255
    assert all(simt._REGISTER_FILE // (c.threads * c.min_blocks) < 255 for c, *_ in found[:-1])
    assert len({c[3] for c in found}) == len(found)
    assert tool.occupancy_candidates(tool.problem_of("float16", 1000, 1000, 1000, "nn")) == []


def test_streaming_candidates_are_the_row_streaming_kernel_at_every_split():
    from cutematmul.configs import simt

    tool = _tool()
    # 31 rows over a K-major B (x @ w.T): 8-row tiles, the later ones reading B from L2.
    found = tool.streaming_candidates(tool.problem_of("float32", 31, 5456, 2624, "nt"))
    assert [s for _, s, _, _ in found] == list(tool.STREAMING_SPLITS)
    for config, splits, transposed, label in found:
        assert config.gemv and not config.mma and config.tile_m == simt.GEMV_ROWS[-1]
        assert config.partials == (splits > 1) and not transposed
        assert label == f"{config.name}/s{splits}"
        config.validate()
    # At most 8 rows: the fewest that hold them.
    assert {c.tile_m for c, *_ in tool.streaming_candidates(
        tool.problem_of("float32", 3, 4096, 4096, "nn"))} == {4}
    # Not where the kernel reads the majors badly (an M-major A over a K-major B), nor for the
    # tensor-core families.
    p = tool.problem_of("float32", 16, 4096, 4096, "tt")
    assert (p.a_major, p.b_major) == ("m", "k") and tool.streaming_candidates(p) == []
    assert tool.streaming_candidates(tool.problem_of("float16", 16, 4096, 4096, "nn")) == []


def test_cold_rotation_exceeds_twice_the_l2():
    """The benchmark's rule (``bench.shapes.rotation_sets``), which the tools share."""
    from cutematmul.bench.shapes import MIN_SETS, rotation_sets

    tool = _tool()
    l2 = 50 * 2**20
    for operand_bytes in (1, 4096, 3 * 2**20, 45 * 2**20, 2 * l2, 10 * l2):
        copies = rotation_sets(operand_bytes, l2, tool.ROTATION_MOST)
        assert copies >= MIN_SETS
        assert copies * operand_bytes > 2 * l2 or copies == tool.ROTATION_MOST
    assert rotation_sets(10 * l2, l2) == MIN_SETS  # one set already streams from DRAM
    assert rotation_sets(1, l2, tool.ROTATION_MOST) == tool.ROTATION_MOST  # capped


def test_ring_candidates_are_the_sm90_pick_at_each_depth_that_fits():
    from dataclasses import replace

    from cutematmul import dispatch

    tool = _tool()
    p = tool.problem_of("bfloat16", 24, 4096, 14336, "tn")  # 64 x 32 swapped, deeper ring
    pick = dispatch.tunable(p, 1)[0]
    found = tool.ring_candidates(p)
    depths = [c[0].stages for c in found]
    assert depths == sorted(set(depths)) and depths[0] == min(tool.RING_DEPTHS)
    assert pick[0].ab_stages(2) in depths
    for config, splits, transposed, label in found:
        assert (splits, transposed) == pick[1:] and label.endswith(f"/ring{config.stages}")
        assert config == replace(pick[0], stages=config.stages)
        config.validate()  # each fits shared memory
    assert found[-1][0].stages == max(d for d in tool.RING_DEPTHS
                                      if d <= pick[0].fitting_stages(2))
    assert tool.ring_candidates(tool.problem_of("float32", 16, 4096, 4096, "nn")) == []


def test_batched_shapes_are_swept_as_one_batched_problem():
    """``--shapes`` takes LxMxNxK for a batch of L products (the benchmark's spelling) beside
    MxNxK; the problem is the batched one the planner makes, and a bad shape is refused with
    the argument named."""
    tool = _tool()
    assert tool.parse_shapes("64x1024x1024x1024,1000x999x998") == [(64, 1024, 1024, 1024),
                                                                    (1, 1000, 999, 998)]
    p = tool.problem_of("float16", 1024, 1024, 1024, "nn", batch=64)
    assert (p.batch, p.m, p.n, p.k) == (64, 1024, 1024, 1024)
    for bad in ("10x20", "0x4x4", "1x2x3x4x5"):
        with pytest.raises(ValueError, match="--shapes: expected MxNxK or LxMxNxK"):
            tool.parse_shapes(bad)


def test_the_command_line_calls_the_gpu_sweep_with_arguments_it_takes(monkeypatch):
    """Without ``--precompile`` the tool times on the GPU (``sweep``); its call, as ``main``
    makes it, binds to ``sweep``'s own signature (the options reach their parameters)."""
    import inspect

    tool = _tool()
    real = inspect.signature(tool.sweep)
    calls = []
    monkeypatch.setattr(tool, "sweep", lambda *a, **kw: calls.append(real.bind(*a, **kw)))
    assert tool.main(["bf16", "--clusters", "--cold", "--layout", "nt",
                      "--shapes", "64x1024x1024x1024"]) == 0
    (bound,) = calls
    assert bound.arguments["dtype"] == "bfloat16" and bound.arguments["layout"] == "nt"
    assert bound.arguments["shapes"] == [(64, 1024, 1024, 1024)]
    assert bound.arguments["clusters"] and bound.arguments["cold"]


def test_the_tensor_core_fp32_modes_sweep_their_tuners_lists(monkeypatch):
    """``tf32`` and ``high`` plan the TF32 and 3xTF32 kernels' problems (float32 operands called
    with ``precision="tf32"`` / ``"high"``), sweep the tuner's list of them, and need ``--tuner``
    or ``--ring``: the fixed menu is the 16-bit and SIMT kernels'."""
    from cutematmul import dispatch

    tool = _tool()
    assert tool._FP32_MODES == {"tf32": "tf32", "tf32x3": "high"}
    for which, math in (("tf32", "tf32"), ("high", "tf32x3")):
        assert tool.DTYPES[which] == math
        p = tool.problem_of(math, 272, 2664, 2112, "tt")
        assert (p.family, p.math) == ("sm90", math)
        found = tool._choices(math, p, True, False)
        assert [c[:3] for c in found] == dispatch.tunable(p, dispatch.EVERY_CANDIDATE)
        assert tool.kernel_keys(p, found[:2])
        with pytest.raises(SystemExit):
            tool.main([which, "--shapes", "272x2664x2112"])
    calls = []
    monkeypatch.setattr(tool, "sweep", lambda *a, **kw: calls.append((a, kw)))
    assert tool.main(["tf32", "--tuner", "--layout", "tt", "--shapes", "272x2664x2112"]) == 0
    assert calls[0][0] == ("tf32", [(1, 272, 2664, 2112)]) and calls[0][1]["layout"] == "tt"
