"""CPU tests of ``tools/shape_classes.py``: its seeded draws are stable, stay inside each
class's bounds and differ between seeds (the GPU run is the tool's own job)."""

from __future__ import annotations

import argparse

import pytest
from helpers import load_tool


def _tool():
    return load_tool("shape_classes")


def test_the_draws_are_seeded_and_stay_in_their_classes():
    tool = _tool()
    cases = tool.cases()
    assert cases == tool.cases(tool.SEED) and cases != tool.cases(tool.SEED + 1)
    counts = {}
    for cls, dtype, precision, layout, m, n, k, batch in cases:
        counts[cls] = counts.get(cls, 0) + 1
        assert layout in ("nn", "tn", "nt", "tt") and min(m, n, k, batch) >= 1
        assert (layout == "tt") <= (cls in ("skinnyT", "tf32T"))
        if cls == "mid":
            assert all(640 <= s <= 3584 and s % 8 == 0 for s in (m, n, k))
        elif cls == "large":
            assert dtype in ("float16", "bfloat16") and min(m, n, k) >= 3072
        elif cls == "skinnyM":
            assert m <= 256 and min(n, k) >= 2048
        elif cls == "skinnyN":
            assert n <= 256 and min(m, k) >= 2048
        elif cls == "batched":
            assert 2 <= batch <= 64 and max(m, n, k) <= 1536
        elif cls == "odd":
            assert all(s % 2 == 1 for s in (m, n, k))
        elif cls == "deepK":
            assert max(m, n) <= 320 and 8192 <= k <= 262144 and precision == "highest"
        elif cls == "skinnyT":
            assert dtype in ("float16", "bfloat16") and layout[0] == "t"
            assert m <= 256 and min(n, k) >= 2048
        elif cls == "tf32T":
            assert (dtype, precision) == ("float32", "tf32") and layout[0] == "t"
        elif cls == "decode":
            assert dtype in ("float16", "bfloat16") and precision == "highest"
            assert m <= 32 and 2048 <= n <= 6144 <= k <= 16384
        elif cls == "skinnyOdd":
            assert dtype in ("float16", "bfloat16") and layout in ("nn", "tn", "nt")
            assert m <= 32 and 1024 <= n <= 65537 and 512 <= k <= 16385
            assert (n if layout[1] == "n" else k) % 2 == 1
        else:
            assert dtype == "float32" and precision == {"fp32": "highest"}.get(cls, cls)
    assert counts == {"mid": 14, "large": 8, "skinnyM": 18, "skinnyN": 10, "batched": 8,
                      "odd": 6, "fp32": 12, "tf32": 5, "high": 5,
                      "deepK": 8, "skinnyT": 10, "tf32T": 6, "decode": 10, "skinnyOdd": 8}


def test_list_prints_the_selected_classes(capsys):
    _tool().main(["--list", "--only", "odd,tf32"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 11 and {line.split()[0] for line in lines} == {"odd", "tf32"}


def test_precompile_names_each_selected_products_gemm_kernel():
    tool = _tool()
    selected = [c for c in tool.cases() if c[0] in ("decode", "large")]
    every = tool.kernel_keys(selected)
    assert every == list(dict.fromkeys(every))
    narrow = False
    for case in selected:
        gemms = [k for k in tool.kernel_keys([case]) if hasattr(k, "config")]
        assert gemms and {k.arch for k in gemms} == {"sm_90a"}, case
        assert set(gemms) <= set(every)
        narrow |= case[0] == "decode" and any(k.config.tile_n <= 32 for k in gemms)
    assert narrow  # the small-M decode products run narrow tiles


def test_the_library_draws_name_their_classes_and_give_distinct_shapes():
    from cutematmul import classes

    drawn = [c[0] for c in classes.cases(classes.SEED)]
    assert list(dict.fromkeys(drawn)) == list(classes.CLASSES)  # in the order they are drawn
    odd = classes.shapes([classes.SEED, 7], ("odd",))
    assert len(odd) == len(set(odd)) == 12 and all(m % 2 and n % 2 and k % 2 for m, n, k, _ in odd)
    every = classes.shapes([classes.SEED])
    assert set(odd[:6]) <= set(every) and len(every) == len(set(every))


def test_cases_reads_a_listed_file_back(tmp_path, capsys):
    tool = _tool()
    tool.main(["--list", "--only", "deepK,decode"])
    listed = tmp_path / "chosen.cases"
    listed.write_text("# products a change moves\n\n" + capsys.readouterr().out)
    expected = [c for c in tool.cases() if c[0] in ("deepK", "decode")]
    assert tool.read_cases(str(listed)) == expected
    tool.main(["--cases", str(listed), "--only", "decode", "--list"])
    assert capsys.readouterr().out.splitlines() == [" ".join(map(str, c)) for c in expected[8:]]
    listed.write_text("deepK float16 highest nn 8 8\n")
    with pytest.raises(ValueError, match=r"chosen\.cases:1: .*\(8 words\), got 6"):
        tool.read_cases(str(listed))


def test_seed_ranges_draw_each_seed_in_turn(capsys):
    tool = _tool()
    assert tool.seeds("7") == range(7, 8) and tool.seeds("7-10") == range(7, 10)
    for bad in ("x", "9-3", "4-4"):
        with pytest.raises(argparse.ArgumentTypeError):
            tool.seeds(bad)
    tool.main(["--list", "--seed", "7-9", "--only", "odd"])
    listed = capsys.readouterr().out.splitlines()
    assert listed == [" ".join(map(str, c)) for s in (7, 8) for c in tool.cases(s) if c[0] == "odd"]


def test_plans_name_each_products_schedule_and_read_back(tmp_path, capsys):
    tool = _tool()
    tool.main(["--list", "--plans", "--only", "decode,deepK"])
    listed = tmp_path / "planned.cases"
    listed.write_text(capsys.readouterr().out)
    products = tool.read_cases(str(listed))  # the plans are comments
    assert products == [c for c in tool.cases() if c[0] in ("decode", "deepK")]
    for line, case in zip(listed.read_text().splitlines(), products):
        plan = line.split("# ", 1)[1]
        assert plan == tool.planned(case) and " s" in plan, line
        # The kernel a plan names is one the precompile of that product builds.
        names = {k.config.name for k in tool.kernel_keys([case]) if hasattr(k, "config")}
        assert plan.split()[0] in names, (line, names)


def test_a_result_line_reads_back():
    tool = _tool()
    case = ("skinnyM", "bfloat16", "highest", "tn", 4, 3448, 7672, 3)
    schedule = "sm90_128x16x64_c2x1_g8_s8_pdl_swap s1, A copied"
    line = tool.result_line(case, 34.56, 40.5, 2.1e-4, schedule)
    assert line.startswith("skinnyM bfloat16 highest tn 3x4x3448x7672: cuBLAS 34.6 us, cutematmul "
                           "40.5 us, ") and "0.85x" in line
    assert tool.parse_result(line) == (case, 34.6, 40.5, 2.1e-4,
                                       "sm90_128x16x64_c2x1_g8_s8_pdl_swap s1, A copied")
    assert tool.parse_result("class skinnyM: geometric mean 1.000x cuBLAS, least 1.00x") is None


def test_a_class_line_names_its_least_product():
    tool = _tool()
    timed = [(1.2, ("mid", "float16", "highest", "nn", 1016, 1080, 760, 1)),
             (0.78, ("mid", "float16", "highest", "nt", 3184, 3104, 2648, 1)),
             (0.96, ("mid", "bfloat16", "highest", "tn", 1424, 2296, 1496, 2))]
    line = tool.class_line("mid", timed)
    mean = (1.2 * 0.78 * 0.96) ** (1 / 3)
    assert line == (f"class mid: geometric mean {mean:.3f}x cuBLAS, least 0.78x (float16 nt "
                    f"1x3184x3104x2648), 3 products")
    assert tool.parse_result(line) is None


def test_products_timed_slow_are_timed_twice_more_and_reported_at_the_medians(capsys):
    """``run``: a product below ``--recheck`` x cuBLAS is measured three times, its line and
    its class's figures carry each side's median, and a line after it all three timings; one
    above it is measured once; ``--recheck 0`` measures each once."""
    tool = _tool()
    slow = ("decode", "float16", "highest", "nn", 1, 3272, 6304, 1)
    fast = ("decode", "float16", "highest", "nn", 1, 3672, 6712, 1)
    timings = {slow: [(19.5, 68.2), (19.6, 16.8), (19.4, 17.0)], fast: [(24.0, 20.6)]}
    calls = []

    def measure(case):
        calls.append(case)
        cublas, ours = timings[case][sum(c == case for c in calls) - 1]
        return cublas, ours, 2e-4, "sm90_64x16x64_c2x1_g8_s12_pdl_swap s1"

    tool.run([slow, fast], measure=measure)
    assert calls == [slow, slow, slow, fast]
    lines = capsys.readouterr().out.splitlines()
    assert tool.parse_result(lines[0])[1:3] == (19.5, 17.0)
    assert lines[1] == ("  re-timed below 0.90x: cuBLAS 19.5 / 19.6 / 19.4 us, cutematmul "
                        "68.2 / 16.8 / 17.0 us (medians above)")
    assert tool.parse_result(lines[2])[1:3] == (24.0, 20.6)
    assert lines[3].startswith("class decode: geometric mean ")
    assert f"least {19.5 / 17.0:.2f}x" in lines[3]

    calls.clear()
    timings[slow] = [(19.5, 68.2)]
    tool.run([slow], recheck=0, measure=measure)
    assert calls == [slow]
    assert tool.parse_result(capsys.readouterr().out.splitlines()[0])[1:3] == (19.5, 68.2)
