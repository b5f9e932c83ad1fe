"""CPU tests of ``cutematmul.bench``: shapes, counting, statistics, reports, the CLI, the registry
and the runner (driven by a NumPy stand-in backend).  No GPU, no array library needed.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import gpu_count
from cutematmul.bench import BACKENDS, Backend, Point, Result, Settings, get_backend, run_point
from cutematmul.bench import cli, data, report, runner, stats, timing
from cutematmul.bench.backends import DEFAULT_BACKENDS, default_backends
from cutematmul.bench.base import CutematmulBackend
from cutematmul.bench.cli import build_parser, main, run_choices
from cutematmul.bench.results import ERROR, OK, SKIPPED, WRONG, load_json, save_csv, save_json
from cutematmul.bench.shapes import (L2_BYTES, PRECISIONS, SUITES, Shape, footprint_bytes,
                                     input_sets, parse_dtypes, parse_layouts, parse_shape,
                                     parse_shapes, point_precision)

# ---- shapes


def test_parse_shape_plain_and_batch():
    assert parse_shape("8192x8192x1024") == Shape(8192, 8192, 1024)
    assert parse_shape(" 4097X4095x4093 ") == Shape(4097, 4095, 4093)
    s = parse_shape("64x1024x1024x1024")
    assert (s.batch, s.m, s.n, s.k) == (64, 1024, 1024, 1024)
    assert s.label == "64x1024x1024x1024" and parse_shape(s.label) == s


@pytest.mark.parametrize("bad", ["8192x8192", "1x2x3x4x5", "axbxc", "0x4x4", "-1x4x4", ""])
def test_parse_shape_rejects(bad):
    with pytest.raises(ValueError, match="MxNxK"):
        parse_shape(bad)


def test_named_suites():
    full = parse_shapes("full")
    squares = [Shape(s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192, 16384)]
    assert full[:7] == squares
    for extra in ["1000x1000x1000", "4097x4095x4093", "4096x14336x4096", "8192x8192x1024",
                  "128x8192x8192", "16x8192x8192", "64x1024x1024x1024"]:
        assert parse_shape(extra) in full
    assert parse_shapes("square") == squares
    assert 0 < len(parse_shapes("quick")) < len(full)
    assert 0 < len(parse_shapes("default")) < len(full)
    assert set(SUITES) >= {"default", "full", "quick", "square", "skinny", "shortk"}
    assert all(s.k <= 640 < s.m for s in parse_shapes("shortk")), "short K, long M"
    skinny = parse_shapes("skinny")
    assert any(s.m <= 32 < s.n for s in skinny) and any(s.n <= 32 < s.m for s in skinny)
    assert any(s.n * 2 % 16 for s in skinny), "a few columns that are no whole 16-byte row"


def test_default_suite_covers_every_shape_class():
    default = parse_shapes("default")
    plain = [s for s in default if s.batch is None]
    assert any(s.m == s.n == s.k >= 4096 for s in plain), "large square"
    assert any(s.m >= 1024 and s.k >= 1024 and s.n >= 3 * s.k for s in plain), "LLM-like"
    assert any(512 <= s.m <= 2048 and s.m % 128 for s in plain), "mid size, partial tiles"
    assert any(s.m <= 256 and s.n >= 4096 and s.k >= 4096 for s in plain), "skinny"
    assert any(s.m % 2 and s.n % 2 and s.k % 2 for s in plain), "odd, unaligned"
    assert any(s.batch and s.batch > 1 for s in default), "batched"


def test_parse_shapes_mixes_and_dedupes():
    shapes = parse_shapes("8192x8192x8192, square,256x256x256,4097x4095x4093")
    assert shapes[0] == Shape(8192, 8192, 8192)
    assert shapes.count(Shape(256, 256, 256)) == 1
    assert shapes[-1] == Shape(4097, 4095, 4093)
    with pytest.raises(ValueError):
        parse_shapes(" , ")


def test_parse_dtypes_and_layouts():
    assert parse_dtypes("fp16,bf16,float32,fp16") == ["float16", "bfloat16", "float32"]
    assert parse_dtypes("all") == ["float16", "bfloat16", "float32"]
    assert parse_layouts("all") == ["nn", "tn", "nt", "tt"]
    assert parse_layouts("tn, nn") == ["tn", "nn"]
    with pytest.raises(ValueError, match="dtype 'float64' is not one of .*fp16/bf16/fp32"):
        parse_dtypes("float64")
    with pytest.raises(ValueError, match="layout 'nx' is not one of nn, tn, nt, tt"):
        parse_layouts("nx")
    with pytest.raises(ValueError, match="--dtypes ' , ' names no dtype"):
        parse_dtypes(" , ")
    with pytest.raises(ValueError, match="--layouts '' names no layout"):
        parse_layouts("")


def test_flop_and_byte_counts():
    assert Shape(8192, 8192, 1024).flops == 2 * 8192 * 8192 * 1024
    assert Shape(1024, 1024, 1024, batch=64).flops == 64 * 2 * 1024**3
    assert (Shape(16, 8192, 8192).operand_bytes("float16")
            == (16 * 8192 + 8192 * 8192 + 16 * 8192) * 2)
    assert Shape(3, 5, 7, batch=2).operand_bytes("float32") == 2 * (21 + 35 + 15) * 4


@pytest.mark.parametrize("shape", [Shape(256, 256, 256), Shape(16, 8192, 8192),
                                   Shape(16384, 16384, 16384), Shape(1024, 1024, 1024, batch=64)])
def test_rotation_exceeds_l2(shape):
    sets = input_sets(shape, "float16")
    assert sets >= 3
    assert sets * shape.operand_bytes("float16") > L2_BYTES
    assert footprint_bytes(shape, "float16", 2) == 2 * (sets + 1) * shape.operand_bytes("float16")


def test_suites_fit_40gb_with_three_libraries():
    for shape in SUITES["default"] + SUITES["full"]:
        for dtype in ("float16", "bfloat16", "float32"):
            assert footprint_bytes(shape, dtype, 3) <= 40e9, (shape, dtype)


# The cost model behind the estimate beside shapes._DEFAULT, for an H200 (docs/performance.md
# rates, a little low) and its host (one core drawing Gaussian inputs).
DRAW_SECONDS = 10e-9  # per input element: standard_normal in float32 and the rounding
COPY_BYTES_PER_S = 5e9  # host to device, pageable memory
TFLOPS = {"float16": 600e12, "bfloat16": 600e12, "float32": 45e12}
HBM_BYTES_PER_S = 3.5e12
SPIN_S, HOST_CALL_S = 2.5e-3, 30e-6  # spin before a burst (and its sync), host time per call
COMPILE_S, CONFIGS_PER_DTYPE, START_S = 2.0, 4, 10.0


def _product_seconds(shape, dtype):
    return max(shape.flops / TFLOPS[dtype], shape.operand_bytes(dtype) / HBM_BYTES_PER_S, 5e-6)


def _point_seconds(shape, dtype, backends, libraries, settings):
    """Inputs (drawn, copied to each library) + heat + per backend: check, warm-up, rounds."""
    sets = input_sets(shape, dtype)
    drawn = sets * shape.count * (shape.m * shape.k + shape.k * shape.n)
    inputs = drawn * DRAW_SECONDS + sets * shape.operand_bytes(dtype) * libraries / COPY_BYTES_PER_S
    product = _product_seconds(shape, dtype)
    reps = max(1, min(runner.MAX_REPS, math.ceil(runner.BURST_TARGET_SECONDS / product)))
    burst = reps * max(product, HOST_CALL_S) + SPIN_S
    per_backend = (settings.rounds * settings.bursts + 2) * burst + 3 * product
    return inputs + settings.heat + backends * per_backend


def estimated_seconds(shapes, dtypes, backends, libraries, settings=Settings()):
    points = sum(_point_seconds(s, d, backends, libraries, settings)
                 for d in dtypes for s in shapes)
    return START_S + COMPILE_S * CONFIGS_PER_DTYPE * len(dtypes) + points


def test_default_run_fits_two_minutes_on_an_h200():
    shape_spec, dtype_spec = run_choices(build_parser().parse_args([]))
    libraries = {BACKENDS[name].library for name in DEFAULT_BACKENDS}
    seconds = estimated_seconds(parse_shapes(shape_spec), parse_dtypes(dtype_spec),
                                len(DEFAULT_BACKENDS), len(libraries))
    assert seconds < 90, f"the default run is estimated at {seconds:.0f} s; keep it under 90 s"
    full = estimated_seconds(SUITES["full"], parse_dtypes("all"), len(BACKENDS), 3)
    assert full > 3 * seconds  # --full is the long one


# ---- statistics


def test_median_spread_tflops():
    assert stats.median([3.0, None, 1.0, 2.0]) == 2.0
    assert stats.median([None]) is None
    assert stats.spread([1.0, 1.1, 0.9]) == pytest.approx(0.2)
    assert stats.spread([]) is None
    assert stats.tflops(2 * 10**12, 0.5) == pytest.approx(4.0)
    assert stats.tflops(10, None) is None and stats.tflops(10, 0.0) is None


def test_ratio_is_median_of_per_round_ratios():
    ref = [1.0, 2.0, 1.0, 4.0, None]
    cand = [2.0, 2.0, 0.5, 2.0, 1.0]
    # per round: 0.5, 1.0, 2.0, 2.0 (the last round is missing for the reference)
    assert stats.ratio_to_reference(ref, cand) == pytest.approx(1.5)
    # not the ratio of the medians
    assert stats.ratio_to_reference(ref, cand) != stats.median(ref) / stats.median(cand)
    assert stats.ratio_to_reference([None], [1.0]) is None
    assert stats.ratio_to_reference(ref, ref) == 1.0


def test_round_order_alternates():
    assert [stats.round_order("AB", r) for r in range(4)] == [
        ["A", "B"], ["B", "A"], ["A", "B"], ["B", "A"]]


# ---- inputs and the reference


def test_bfloat16_rounding_matches_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.random.default_rng(1).standard_normal(10000, dtype=np.float32)
    x = np.concatenate([x, np.float32([0.0, -0.0, 1.0, 1.00390625, 1.01171875, 3e38])])
    bits = data.bfloat16_bits(x)
    assert np.array_equal(bits, x.astype(ml_dtypes.bfloat16).view(np.uint16))
    assert np.array_equal(data.bfloat16_values(bits),
                          x.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_bfloat16_rounds_to_nearest_even():
    ties = np.float32([1.00390625, 1.01171875])  # exactly between two bfloat16 values
    assert list(data.bfloat16_values(data.bfloat16_bits(ties))) == [1.0, 1.015625]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
def test_host_operands_same_seed_same_bits(dtype, layout):
    shape = Shape(5, 7, 3, batch=2)
    h1 = data.host_operands(shape, dtype, layout, seed=3)
    h2 = data.host_operands(shape, dtype, layout, seed=3)
    h3 = data.host_operands(shape, dtype, layout, seed=4)
    assert np.array_equal(h1.a.storage, h2.a.storage) and np.array_equal(h1.b.storage, h2.b.storage)
    assert not np.array_equal(h1.a.storage, h3.a.storage)
    assert h1.a.values().shape == (2, 5, 3) and h1.b.values().shape == (2, 3, 7)
    assert h1.a.storage.shape == ((2, 3, 5) if layout[0] == "t" else (2, 5, 3))
    assert h1.out_shape == (2, 5, 7)
    assert np.std(h1.a.values()) > 0.3  # Gaussian, not zeros


@pytest.mark.parametrize("shape", [Shape(300, 200, 50), Shape(3, 4, 5), Shape(40, 30, 20, batch=9)])
def test_reference_sample_matches_full_product(shape):
    host = data.host_operands(shape, "float32", "tn", seed=0)
    full = host.a.values() @ host.b.values()
    sample = data.reference_sample(host, shape)
    assert np.allclose(sample.take(full), sample.reference, rtol=1e-12, atol=1e-12)
    assert sample.rows[0] == 0 and sample.rows[-1] == shape.m - 1
    assert sample.cols[0] == 0 and sample.cols[-1] == shape.n - 1
    assert data.relative_error(sample.take(full), sample.reference) < 1e-12
    broken = full.copy()
    broken[..., 0, 0] = np.nan
    assert np.isnan(data.relative_error(sample.take(broken), sample.reference))


# ---- the registry


def test_registry_lists_backends():
    assert {"cutematmul-cupy", "cutematmul-torch", "cupy", "torch", "jax"} <= set(BACKENDS)
    for name, backend in BACKENDS.items():
        assert isinstance(backend, Backend) and backend.name == name
        assert backend.clock in ("events", "wall") and backend.library in ("cupy", "torch", "jax")
    assert [b for b in BACKENDS.values() if b.cublas] == [
        BACKENDS["cupy"], BACKENDS["torch"], BACKENDS["torch-tf32"]]


def test_available_says_why_not_instead_of_raising():
    for name, backend in BACKENDS.items():
        ok, why = backend.available()
        assert isinstance(ok, bool) and isinstance(why, str)
        if not ok:
            assert why, name
        if gpu_count()[0] == 0:
            assert ok is False, f"{name} claims to run without a GPU"


def test_get_backend_and_options():
    assert get_backend("cupy") is BACKENDS["cupy"]
    forced = get_backend("cutematmul-torch", kernel="sm80")
    assert forced is not BACKENDS["cutematmul-torch"] and forced.kernel == "sm80"
    assert forced.label == "cutematmul-torch[sm80]" and BACKENDS["torch"].label == "torch"
    assert forced.supports("float32")[0] is False
    assert get_backend("cutematmul-torch", kernel="simt").supports("float32") == (True, "")
    with pytest.raises(ValueError, match="unknown backend"):
        get_backend("mkl")


# ---- the runner, with a NumPy stand-in backend (host clock)


class NumpyBackend(Backend):
    """C = A @ B in NumPy, float16/float32 only; ``name`` may pose as a cuBLAS backend."""

    library = "numpy"
    clock = "wall"

    def __init__(self, name="numpy", fault=None, **options):
        super().__init__(name=name, fault=fault, **options)
        self.name, self.fault = name, fault

    def _probe(self):
        return True, ""

    def supports(self, dtype, batched=False):
        return (dtype != "bfloat16", "" if dtype != "bfloat16" else "no bfloat16 in NumPy")

    def upload(self, host):
        def put(op):
            return np.swapaxes(op.storage, -1, -2) if op.transposed else op.storage

        out = np.full(host.out_shape, np.nan, dtype=host.a.storage.dtype)
        return put(host.a), put(host.b), out

    def poison(self, out):
        out.fill(np.nan)

    def matmul(self, a, b, out):
        if self.fault == "raise":
            raise RuntimeError("simulated launch failure\nsecond line")
        np.matmul(a, b, out=out)
        if self.fault == "skip-element":
            out[..., -1, -1] = np.nan
        if self.fault == "wrong":
            out *= 1.01
        return out

    def synchronize(self):
        pass

    def sample(self, result, sample):
        return sample.take(result).astype(np.float64)

    def count_nonfinite(self, result):
        return int(np.count_nonzero(~np.isfinite(result)))


FAST = Settings(rounds=3, bursts=2, heat=0.0, reps=2)


@pytest.mark.parametrize("layout", ["nn", "tt"])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_run_point_times_and_checks(dtype, layout):
    backends = [NumpyBackend("torch"), NumpyBackend("other")]
    rows = run_point(Point(Shape(33, 20, 17, batch=3), dtype, layout), backends, FAST)
    assert [r.backend for r in rows] == ["torch", "other"]
    for r in rows:
        assert r.status == OK, r.note
        assert r.rel_error < data.TOLERANCE[dtype] and r.nonfinite == 0
        assert len(r.round_seconds) == 3 and r.seconds > 0 and r.tflops > 0
        assert r.reference == "torch" and r.reps == 2 and r.bursts == 2
        assert r.first_call_s >= 0
    assert rows[0].ratio == 1.0


def test_run_point_flags_wrong_results_and_errors_and_skips():
    backends = [NumpyBackend("torch"), NumpyBackend("holes", fault="skip-element"),
                NumpyBackend("off", fault="wrong"), NumpyBackend("broken", fault="raise")]
    rows = {r.backend: r
            for r in run_point(Point(Shape(40, 30, 20), "float32", "nn"), backends, FAST)}
    assert rows["torch"].status == OK
    assert rows["holes"].status == WRONG and rows["holes"].nonfinite == 1
    assert rows["off"].status == WRONG and "relative error" in rows["off"].note
    assert rows["off"].seconds is not None  # a wrong result is still timed, and reported
    assert rows["broken"].status == ERROR and "simulated launch failure" in rows["broken"].note
    assert "second line" not in rows["broken"].note and rows["broken"].seconds is None

    bf16 = run_point(Point(Shape(8, 8, 8), "bfloat16", "nn"), backends[:1], FAST)
    assert bf16[0].status == SKIPPED and "bfloat16" in bf16[0].note
    tight = Settings(rounds=1, bursts=1, heat=0.0, max_gb=1e-6)
    big = run_point(Point(Shape(64, 64, 64), "float32", "nn"), backends[:1], tight)
    assert big[0].status == SKIPPED and "GB of device memory" in big[0].note


def test_run_point_asks_whether_a_backend_multiplies_stacks():
    """A backend that multiplies matrices but not stacks of them (CuPy 14.2's bfloat16) is
    skipped, with its reason, on batched points only."""

    class NoStacks(NumpyBackend):
        def supports(self, dtype, batched=False):
            return (False, "no stacks here") if batched else (True, "")

    backends = [NumpyBackend("torch"), NoStacks("flat")]
    flat = {r.backend: r for r in run_point(Point(Shape(8, 8, 8), "float32", "nn"), backends,
                                            FAST)}
    stacked = {r.backend: r for r in run_point(Point(Shape(8, 8, 8, batch=2), "float32", "nn"),
                                               backends, FAST)}
    assert flat["flat"].status == OK and stacked["torch"].status == OK
    assert stacked["flat"].status == SKIPPED and stacked["flat"].note == "no stacks here"


def test_run_point_without_check():
    rows = run_point(Point(Shape(8, 8, 8), "float32", "nn"), [NumpyBackend()],
                     Settings(rounds=1, bursts=1, heat=0.0, check=False))
    assert rows[0].status == OK and rows[0].rel_error is None and rows[0].ratio is None


# ---- event timing, with stand-in events and spin kernel (the order of what is enqueued)


class FakeEvents:
    def __init__(self, log):
        self.log = log

    def record_start(self, stream):
        self.log.append(("start", stream))
        self.t0 = time.perf_counter()

    def record_end(self, stream):
        self.log.append(("end", stream))
        self.t1 = time.perf_counter()

    def seconds(self):
        return self.t1 - self.t0

    def close(self):
        pass


class FakeSpin:
    broken = ""

    def __init__(self, log):
        self.log = log

    def __call__(self, seconds, stream):
        self.log.append(("spin", stream))
        self.seconds = seconds
        return True


def test_timed_burst_order_and_division():
    log = []
    burst = timing.timed_burst(lambda i: log.append(("mm", i)), 4, 7, FakeEvents(log),
                               FakeSpin(log), spin_seconds=10.0)
    assert log == [("spin", 7), ("start", 7), ("mm", 0), ("mm", 1), ("mm", 2), ("mm", 3),
                   ("end", 7)]
    assert 0 < burst.seconds * 4 <= burst.enqueue_seconds + 1e-3
    assert burst.host_bound is False


def test_timed_burst_flags_host_bound():
    log = []
    slow = timing.timed_burst(lambda i: time.sleep(0.002), 2, 0, FakeEvents(log), FakeSpin(log),
                              spin_seconds=0.001)
    assert slow.host_bound is True
    unspun = timing.timed_burst(lambda i: None, 2, 0, FakeEvents(log), None, spin_seconds=1.0)
    assert unspun.host_bound is True


def test_spin_length_follows_enqueue_time():
    assert timing.spin_for(0.0) == timing.SPIN_SECONDS
    assert timing.spin_for(0.01) == pytest.approx(timing.SPIN_MARGIN * 0.01 + 2e-4)
    assert timing.spin_for(100.0) == timing.MAX_SPIN_SECONDS


def test_spinner_that_cannot_launch_is_skipped():
    def launch(cycles, stream):
        raise RuntimeError("no GPU")

    launch.name = "test"
    spinner = timing.Spinner(launch)
    spinner.cycles_per_second = 1e9
    assert spinner(0.002, 0) is False and "no GPU" in spinner.broken
    assert spinner(0.002, 0) is False


def test_run_point_on_events_clock(monkeypatch):
    log = []
    spin = FakeSpin(log)
    monkeypatch.setattr(runner, "EventPair", lambda: FakeEvents(log))
    monkeypatch.setattr(runner, "get_spinner", lambda: spin)

    class EventsBackend(NumpyBackend):
        clock = "events"

        def stream_handle(self):
            return 42

    rows = run_point(Point(Shape(16, 16, 16), "float32", "nn"), [EventsBackend("cupy")], FAST)
    assert rows[0].status == OK and rows[0].clock == "events" and rows[0].seconds > 0
    assert ("spin", 42) in log and ("start", 42) in log
    assert rows[0].reference == "cupy" and rows[0].ratio == 1.0


# ---- reports


def _fake_results() -> list[Result]:
    point = Point(Shape(4096, 4096, 4096), "float16", "nn")
    ref = Result.start(point, "torch")
    ref.seconds, ref.tflops, ref.ratio, ref.reference = 2.0e-4, 687.2, 1.0, "torch"
    ref.rel_error, ref.first_call_s, ref.spread = 2.9e-4, 0.41, 0.012
    ours = Result.start(point, "cutematmul-torch")
    ours.seconds, ours.tflops, ours.ratio, ours.reference = 2.1e-4, 654.5, 0.952, "torch"
    ours.rel_error, ours.first_call_s, ours.spread = 2.9e-4, 1.87, 0.02
    jax = Result.start(point, "jax", clock="wall")
    jax.seconds, jax.tflops, jax.ratio = 2.2e-4, 624.7, 0.91
    skipped = Result.start(Point(Shape(8, 8, 8), "bfloat16", "nn"), "cupy").mark(
        SKIPPED, "this CuPy cannot multiply bfloat16 arrays | really")
    return [ref, ours, jax, skipped]


def test_text_table_is_aligned():
    text = report.text_table(_fake_results())
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["shape", "dtype", "layout", "backend"]
    assert set(lines[1]) <= {"-", " "}
    column = lines[0].index("backend")  # the backend column lines up
    assert (lines[2][column:].startswith("torch ")
            and lines[3][column:].startswith("cutematmul-torch"))
    assert lines[2].index("687.2") == lines[3].index("654.5")  # numbers right-aligned
    assert "687.2" in text and "0.95x" in text and "2.9e-04" in text and "210.0 us" in text
    assert "skipped: this CuPy cannot multiply bfloat16" in text
    assert "host clock" in lines[4]


def test_markdown_has_header_line_and_escapes():
    env = {"date": "2026-11-29 12:00 UTC", "gpu": "NVIDIA H200", "capability": "9.0", "sms": 132,
           "driver": "580.65.06", "cuda_driver_api": "13.0",
           "versions": {"cutlass": "4.8.1", "cupy": "14.2.0", "torch": "2.11.0", "jax": "0.11.2"}}
    md = report.markdown(_fake_results(), env, {"cupy": "not installed"})
    first = md.splitlines()[0]
    for piece in ("2026-11-29", "NVIDIA H200", "sm_90", "580.65.06", "CUDA 13.0", "CuTe DSL 4.8.1",
                  "CuPy 14.2.0", "PyTorch 2.11.0", "JAX 0.11.2"):
        assert piece in first
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert table[1].startswith("| --- |") and "---:" in table[1]
    assert len({line.count(" | ") for line in table}) == 1  # escaped pipes keep the columns
    assert "cupy did not run: not installed" in md


def test_format_helpers():
    assert report.format_time(1.234e-5) == "12.3 us"
    assert report.format_time(0.0123) == "12.300 ms"
    assert report.format_time(1.5) == "1.500 s"
    assert report.format_tflops(654.54) == "654.5" and report.format_tflops(3.456) == "3.46"
    line = report.summary_line(_fake_results()[:2])
    assert line.startswith("4096x4096x4096 fp16 nn:") and "(0.95x)" in line


def test_save_and_load_round_trip(tmp_path):
    results = _fake_results()
    path = save_json(tmp_path / "run.json", {"gpu": "X"}, {"rounds": 5}, {"jax": "no GPU"}, results)
    env, settings, unavailable, loaded = load_json(path)
    assert env == {"gpu": "X"} and settings == {"rounds": 5} and unavailable == {"jax": "no GPU"}
    assert loaded == results
    csv_text = save_csv(tmp_path / "run.csv", results).read_text().splitlines()
    assert csv_text[0].startswith("shape,dtype,layout,backend,status") and len(csv_text) == 5


# ---- the command line


def test_help_exits_zero():
    for argv in (["--help"], ["host", "--help"], ["report", "--help"]):
        proc = subprocess.run([sys.executable, "-m", "cutematmul.bench", *argv],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "usage:" in proc.stdout


def test_parser_options():
    args = build_parser().parse_args(
        ["--shapes", "quick", "--dtypes", "fp16", "--layouts", "all",
         "--backends", "torch,cutematmul-torch",
         "--kernel", "sm80", "--reps", "10", "--rounds", "7", "--no-check", "--plot", "--markdown"])
    assert args.backends == ["torch", "cutematmul-torch"] and args.kernel == "sm80"
    assert ((args.reps, args.rounds, args.check, args.plot, args.markdown)
            == (10, 7, False, True, True))
    defaults = build_parser().parse_args([])
    assert defaults.check is True and defaults.rounds == 5 and defaults.command is None
    assert defaults.backends is None and defaults.full is False  # the default selection
    assert run_choices(defaults) == ("default", "float16,float32")
    full = build_parser().parse_args(["--full"])
    assert run_choices(full) == ("full", "all")
    mixed = build_parser().parse_args(["--full", "--dtypes", "bf16", "--shapes", "quick"])
    assert run_choices(mixed) == ("quick", "bf16")
    host = build_parser().parse_args(["host"])
    assert host.command == "host" and host.backends == list(BACKENDS)


def test_default_backends_and_stand_in(monkeypatch):
    assert "jax" not in DEFAULT_BACKENDS and "cutematmul-jax" not in DEFAULT_BACKENDS
    assert {"cupy", "torch"} <= set(DEFAULT_BACKENDS)
    ready, unavailable = cli.select_default_backends()
    if gpu_count()[0] == 0:
        assert ready == [] and set(unavailable) == set(DEFAULT_BACKENDS) | {"cutematmul-torch"}
    # without CuPy, cutematmul runs on PyTorch tensors in its place
    monkeypatch.setattr(type(BACKENDS["cutematmul-cupy"]), "_probe",
                        lambda self: (False, "no CuPy"))
    monkeypatch.setattr(type(BACKENDS["cutematmul-torch"]), "_probe", lambda self: (True, ""))
    ready, unavailable = cli.select_default_backends()
    assert "cutematmul-torch" in [b.name for b in ready]
    assert unavailable["cutematmul-cupy"] == "no CuPy"


@pytest.mark.parametrize("argv", [["--backends", "nope"], ["--rounds", "0"], ["--kernel", "x"],
                                  ["--shapes", "12x12"], ["--dtypes", "int8"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2


def test_list_and_report_commands(tmp_path, capsys):
    assert main(["--list"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in BACKENDS)
    path = save_json(tmp_path / "run.json", {"gpu": "NVIDIA H200", "date": "2026-11-29"}, {}, {},
                     _fake_results())
    assert main(["report", str(path)]) == 0
    assert "cutematmul-torch" in capsys.readouterr().out
    assert main(["report", str(path), "--markdown"]) == 0
    assert "| shape |" in capsys.readouterr().out


def test_report_plot(tmp_path):
    pytest.importorskip("matplotlib")
    path = save_json(tmp_path / "run.json", {}, {}, {}, _fake_results())
    assert main(["report", str(path), "--plot"]) == 0
    png = path.with_suffix(".png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


class FakeBar:
    """Stands in for tqdm's class: iterates, and logs when it opens and closes."""

    log: list = []

    def __init__(self, iterable, file=None, **options):
        self.iterable, self.file = iterable, file
        FakeBar.log.append("open")

    def __iter__(self):
        yield from self.iterable

    def set_postfix_str(self, text):
        pass

    def close(self):
        FakeBar.log.append("close")

    @staticmethod
    def write(line, file=None):
        print(line, file=file)


def test_run_ends_the_bar_before_the_table(tmp_path, monkeypatch, capsys):
    FakeBar.log = []
    monkeypatch.setitem(BACKENDS, "numpy", NumpyBackend("numpy"))
    monkeypatch.setattr(cli, "_tqdm", lambda: FakeBar)
    real_table = cli.text_table

    def table(rows):
        assert FakeBar.log == ["open", "close"], "the table must come after the bar is closed"
        return real_table(rows)

    monkeypatch.setattr(cli, "text_table", table)
    argv = ["--backends", "numpy", "--shapes", "16x16x16,2x8x8x8", "--dtypes", "fp32",
            "--rounds", "1", "--bursts", "1", "--heat", "0", "--progress", "--out", str(tmp_path)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].split()[:4] == ["shape", "dtype", "layout", "backend"]
    assert "16x16x16 fp32 nn: numpy" in err and "[bench]" not in out  # progress on stderr only
    assert len(list(tmp_path.glob("bench-*.json"))) == 1


@pytest.mark.skipif(gpu_count()[0] > 0, reason="checks the no-GPU path")
def test_run_without_any_backend_says_so(capsys):
    assert main(["--shapes", "quick", "--out", "/nonexistent/never-written"]) == 1
    assert "no backend can run here" in capsys.readouterr().err


def test_json_is_plain(tmp_path):
    path = save_json(tmp_path / "r.json", {}, {}, {}, _fake_results())
    rows = json.loads(path.read_text())["results"]
    assert rows[0]["backend"] == "torch" and rows[0]["tflops"] == 687.2


# ---- float32 precision (--precision): points, baselines of the ratio, the error column


def _tf32(x: np.ndarray) -> np.ndarray:
    """float32 -> the nearest TF32 value (10 stored significand bits) as float32: what one TF32
    tensor-core pass multiplies."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((u + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


class Tf32Numpy(NumpyBackend):
    """The NumPy stand-in, rounding both operands to TF32 when its ``precision`` is "tf32"."""

    def matmul(self, a, b, out):
        if self.precision == "tf32":
            a, b = _tf32(a), _tf32(b)
        return super().matmul(a, b, out)


class CutematmulNumpy(CutematmulBackend, Tf32Numpy):
    """Stands for a cutematmul backend: ``precision`` is an option that each point sets."""


def test_parser_precision():
    assert build_parser().parse_args([]).precision == "highest"
    for precision in PRECISIONS:
        args = build_parser().parse_args(["--dtypes", "fp32", "--precision", precision])
        assert args.precision == precision
    assert PRECISIONS == ("highest", "high", "tf32")


@pytest.mark.parametrize("bad", ["fp32", "TF32", "medium", ""])
def test_bad_precision_exits_2(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--precision", bad])
    assert exc.value.code == 2 and "--precision" in capsys.readouterr().err


def test_points_carry_precision_for_float32_only():
    shape = Shape(8, 8, 8)
    assert point_precision("float32", "tf32") == "tf32"
    assert point_precision("float16", "tf32") == point_precision("bfloat16", "high") == "highest"
    assert Point(shape, "float32", "nn", "tf32").label == "8x8x8 float32 nn tf32"
    assert Point(shape, "float16", "nn").label == "8x8x8 float16 nn"
    assert Result.start(Point(shape, "float32", "nn", "high"), "torch").precision == "high"
    with pytest.raises(ValueError,
                       match="precision must be one of highest, high, tf32; got 'fast'"):
        Point(shape, "float32", "nn", "fast")
    with pytest.raises(ValueError, match="float32 points only; a bfloat16 point is 'highest'"):
        Point(shape, "bfloat16", "nn", "tf32")


def test_baseline_of_the_ratio_per_precision():
    shape = Shape(64, 64, 64)
    assert set(runner.BASELINES) == set(PRECISIONS)
    assert runner.baselines(Point(shape, "float32", "nn")) == ("torch", "cupy")
    assert runner.baselines(Point(shape, "float32", "nn", "high")) == ("torch", "cupy")
    assert runner.baselines(Point(shape, "float32", "nn", "tf32")) == ("torch-tf32",)
    assert runner.baselines(Point(shape, "float16", "nn")) == ("torch", "cupy")


def test_tf32_baseline_and_default_backends():
    assert default_backends() == default_backends("highest") == DEFAULT_BACKENDS
    assert (default_backends("high") == default_backends("tf32")
            == DEFAULT_BACKENDS + ("torch-tf32",))
    tf32 = BACKENDS["torch-tf32"]
    assert tf32.library == "torch" and tf32.cublas and tf32.precision == "tf32"
    assert tf32.supports("float32") == (True, "")
    assert tf32.supports("float16") == (False, "TF32 applies to float32 products only, not float16 "
                                               "(see the torch rows)")
    torch = BACKENDS["torch"]
    assert torch.precision == "highest" and torch.at_precision("tf32") is torch
    ours = get_backend("cutematmul-cupy", precision="tf32")
    assert ours.precision == "tf32" and ours.label == "cutematmul-cupy"
    assert ours.at_precision("tf32") is ours
    assert ours.at_precision("highest").precision == "highest" and ours.precision == "tf32"
    if gpu_count()[0] == 0:
        ready, unavailable = cli.select_default_backends(precision="tf32")
        assert ready == [] and "torch-tf32" in unavailable


def test_run_point_passes_precision_and_picks_the_baseline():
    ours = CutematmulNumpy(name="cutematmul-numpy")
    sgemm, tf32 = Tf32Numpy("torch"), Tf32Numpy("torch-tf32")
    tf32.precision = "tf32"
    shape = Shape(48, 40, 256)
    rows = {r.backend: r for r in run_point(Point(shape, "float32", "nn", "tf32"),
                                            [ours, sgemm, tf32], FAST)}
    assert all(r.status == OK and r.precision == "tf32" for r in rows.values()), rows
    assert ({r.reference for r in rows.values()} == {"torch-tf32"}
            and rows["torch-tf32"].ratio == 1.0)
    # the error column: cutematmul was asked for TF32, the torch stand-in stays IEEE fp32
    err = rows["cutematmul-numpy"].rel_error
    assert data.tolerance("float32") < err < data.tolerance("float32", "tf32")
    assert rows["torch-tf32"].rel_error == rows["cutematmul-numpy"].rel_error
    assert rows["torch"].rel_error < 1e-6
    assert ours.precision == "highest"  # the backend passed in is not changed
    high = {r.backend: r for r in run_point(Point(shape, "float32", "nn", "high"),
                                            [ours, sgemm, tf32], FAST)}
    assert {r.reference for r in high.values()} == {"torch"} and high["torch"].ratio == 1.0
    assert high["cutematmul-numpy"].rel_error < 1e-6 and high["torch-tf32"].status == OK
    fp16 = run_point(Point(shape, "float16", "nn"), [ours, sgemm], FAST)
    assert [(r.precision, r.reference, r.status) for r in fp16] == [("highest", "torch", OK)] * 2


def test_relative_error_metric_and_tf32_bound():
    ref = np.array([[3.0, 4.0]])
    assert data.relative_error(ref * (1 + 1e-3), ref) == pytest.approx(1e-3)
    # |(0,1)|/|(3,4)|
    assert data.relative_error(np.array([[3.0, 5.0]]), ref) == pytest.approx(1 / 5)
    assert data.relative_error(np.zeros(2), np.zeros(2)) == 0.0
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 512), dtype=np.float32)
    b = rng.standard_normal((512, 48), dtype=np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    fp32 = data.relative_error(a @ b, exact)  # float32 products and sums
    tf32 = data.relative_error(_tf32(a) @ _tf32(b), exact)  # TF32 operands, fp32 sums
    assert fp32 < 1e-6 and 1e-4 < tf32 < 1e-3
    assert fp32 < data.tolerance("float32", "highest") == data.tolerance("float32", "high") < tf32
    assert tf32 * 4 < data.tolerance("float32", "tf32")
    assert data.tolerance("float16", "tf32") == data.TOLERANCE["float16"]  # 16-bit: its own bound


def _tf32_results() -> list[Result]:
    point = Point(Shape(4096, 4096, 4096), "float32", "nn", "tf32")
    rows = []
    for name, seconds, ratio, err in [("cutematmul-cupy", 1.0e-3, 1.02, 7.7e-4),
                                      ("torch", 2.7e-3, 0.38, 1.1e-6),
                                      ("torch-tf32", 1.02e-3, 1.0, 7.7e-4)]:
        r = Result.start(point, name)
        r.seconds, r.tflops, r.ratio, r.reference, r.rel_error = (
            seconds, point.shape.flops / seconds / 1e12, ratio, "torch-tf32", err)
        rows.append(r)
    return rows


def test_precision_in_tables_and_files(tmp_path):
    rows = _tf32_results()
    lines = report.text_table(rows).splitlines()
    assert lines[0] == "float32 at precision='tf32', x cuBLAS against torch-tf32"
    assert lines[1].split()[:4] == ["shape", "dtype", "layout", "backend"]
    assert "7.7e-04" in lines[3] and "1.1e-06" in lines[4] and "1.02x" in lines[3]
    assert report.text_table(_fake_results()).startswith("shape")  # no float32 rows: no line
    md = report.markdown(rows, {"date": "2026-12-02 10:00 UTC", "gpu": "NVIDIA H200"})
    assert md.splitlines()[0] == (
        "Measured 2026-12-02 10:00 UTC · NVIDIA H200 · driver ? (CUDA ?); "
        "float32 at precision='tf32', x cuBLAS against torch-tf32.")
    assert report.summary_line(rows).startswith(
        "4096x4096x4096 fp32 nn tf32: cutematmul-cupy 137.4")
    path = save_json(tmp_path / "run.json", {}, {"precision": "tf32"}, {}, rows)
    assert [r.precision for r in load_json(path)[3]] == ["tf32"] * 3
    assert "precision" in (save_csv(tmp_path / "run.csv", rows).read_text()
                           .splitlines()[0].split(","))
    older = json.loads(path.read_text())  # a run saved before the field existed reads as highest
    for row in older["results"]:
        del row["precision"]
    path.write_text(json.dumps(older))
    assert {r.precision for r in load_json(path)[3]} == {"highest"}


def test_run_records_precision(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(BACKENDS, "numpy", NumpyBackend("numpy"))
    argv = ["--backends", "numpy", "--shapes", "16x16x16", "--dtypes", "fp16,fp32", "--precision",
            "tf32", "--rounds", "1", "--bursts", "1", "--heat", "0", "--no-progress",
            "--out", str(tmp_path)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "float32 at precision='tf32', no x cuBLAS ratio: none of torch-tf32 runs" in err
    assert "16x16x16 fp32 nn tf32: numpy" in err
    assert out.splitlines()[0] == "float32 at precision='tf32', no x cuBLAS ratio"
    _env, settings, _unavailable, rows = load_json(next(tmp_path.glob("bench-*.json")))
    assert settings["precision"] == "tf32"
    assert [(r.dtype, r.precision, r.status) for r in rows] == [("float16", "highest", OK),
                                                                 ("float32", "tf32", OK)]


# ---- the start-up mode (python -m cutematmul.bench startup)

import io  # noqa: E402
import os  # noqa: E402

from cutematmul.bench import startup  # noqa: E402


def _startup_result(seconds, compiles, hits, dsl=False, wrong=False, skip_bf16=False) -> dict:
    products = []
    for i, (dtype, layout) in enumerate(startup.CONFIGS):
        p = {"label": startup.label(dtype, layout), "dtype": dtype, "layout": layout,
             "seconds": seconds[i], "rel_error": 3e-4, "ok": True, "note": "", "imported": []}
        if skip_bf16 and dtype == "bfloat16":
            p.update(seconds=None, rel_error=None, note="skipped: cupy cannot make bfloat16 inputs")
        products.append(p)
    if wrong:
        products[2].update(ok=False, rel_error=0.5, note="WRONG: relative error 0.5 > 1e-05")
    return {"library": "cupy", "size": 1024, "library_import_s": 0.4, "arrays_s": 0.3,
            "import_s": 0.05, "import_imported": ["cutematmul"], "products": products,
            "cache_info": {"memory": {"compiles": compiles, "misses": hits or compiles},
                           "disk": {"hits": hits}, "jax": {"compiles": 0}},
            "dsl": {"cutlass": dsl, "cutlass.cute": dsl}}


def _startup_runs(**warm_options):
    cold = startup.ChildRun("cold", 0, 12.0, _startup_result([5.2, 1.4, 6.1, 1.3], 4, 0, dsl=True))
    warm_result = _startup_result([0.021, 0.0012, 0.0011, 0.0013], 0, 4, **warm_options)
    warm = startup.ChildRun("warm", 1 if warm_options.get("wrong") else 0, 0.9, warm_result)
    return cold, warm


def test_startup_parser_options(tmp_path):
    args = build_parser().parse_args(["startup"])
    assert (args.command, args.library, args.cache_dir, args.size) == (
        "startup", "cupy", None, 1024)
    args = build_parser().parse_args(["startup", "--library", "torch", "--cache-dir", str(tmp_path),
                                      "--size", "64"])
    assert (args.library, args.cache_dir, args.size) == ("torch", tmp_path, 64)
    proc = subprocess.run([sys.executable, "-m", "cutematmul.bench", "startup", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "--library {cupy,torch}" in proc.stdout, proc.stderr


@pytest.mark.parametrize("argv", [["startup", "--library", "jax"], ["startup", "--size", "0"],
                                  ["startup", "--cache-dir", __file__]])
def test_startup_bad_options_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_startup_check_options_says_what_is_wrong():
    with pytest.raises(ValueError, match="library must be one of cupy, torch; got 'jax'"):
        startup.check_options("jax", 1024, startup.CONFIGS)
    with pytest.raises(ValueError, match="size must be a positive integer"):
        startup.check_options("cupy", 0, startup.CONFIGS)
    with pytest.raises(ValueError, match="dtype must be one of"):
        startup.check_options("cupy", 8, [("int8", "nn")])
    with pytest.raises(ValueError, match="layout must be one of"):
        startup.check_options("cupy", 8, [("float16", "xx")])
    with pytest.raises(ValueError, match="at least one"):
        startup.run_child("/nonexistent", "cupy", 8, configs=())


def test_startup_table_and_targets():
    cold, warm = _startup_runs()
    table = startup.render([cold, warm], "cupy")
    lines = table.splitlines()
    assert lines[0].split()[:7] == ["phase", "import", "cupy", "arrays+context", "import",
                                    "cutematmul", "fp16"]
    assert "fp16 nn (1st)" in lines[0] and "bf16 nn" in lines[0] and "fp16 tn" in lines[0]
    assert lines[2].startswith("cold") and "5.20 s" in lines[2] and "yes (cutlass.cute)" in lines[2]
    assert lines[3].startswith("warm") and "21.0 ms" in lines[3] and " no " in lines[3]
    assert len({len(line) for line in lines[:2]}) == 1  # header and rule aligned
    line = startup.targets_line(cold, warm)
    assert "warm import + first product 71.0 ms (target <= 150.0 ms): met" in line
    assert "warm further product (slowest) 1.30 ms (target <= 20.0 ms): met" in line
    assert "cold import + first product 5.25 s (target <= 3.00 s): NOT met" in line
    assert "warm compiles 0 (target 0): met" in line
    assert "n/a" in startup.targets_line(cold, warm, cold_was_empty=False)
    assert cold.ok and warm.ok and cold.failure() == "" and warm.compiles == 0


def test_startup_wrong_skipped_and_failed_rows():
    cold, warm = _startup_runs(wrong=True, skip_bf16=True)
    table = startup.render([cold, warm], "cupy")
    warm_row = table.splitlines()[3]
    assert "WRONG" in warm_row and "skipped" in warm_row and "5.0e-01" in warm_row
    assert not warm.ok and "fp32 nn: WRONG: relative error 0.5" in warm.failure()
    assert any("bf16 nn skipped" in n for n in startup.notes([warm]))
    crashed = startup.ChildRun("cold", 1, 2.0, None, stderr="Traceback ...\nRuntimeError: boom")
    assert "exited with status 1 without a result" in crashed.failure()
    assert crashed.failure().endswith("RuntimeError: boom")
    assert "FAILED" in startup.render([crashed], "torch")
    assert "timed out" in startup.ChildRun("warm", None, 1800.0, None).failure()
    assert startup.targets(crashed, None)[0][3] is None  # missing figures are not judged


def test_startup_run_flow(monkeypatch, tmp_path):
    cold, warm = _startup_runs()
    calls = []

    def fake_run_child(directory, library, size, configs, phase):
        calls.append((directory, library, size, phase))
        assert directory.is_dir() and not any(directory.iterdir())  # a new empty directory
        return cold if phase == "cold" else warm

    monkeypatch.setattr(startup, "run_child", fake_run_child)
    out, err = io.StringIO(), io.StringIO()
    assert startup.run("torch", None, 64, out=out, err=err) == 0
    assert [c[3] for c in calls] == ["cold", "warm"] and calls[0][1:3] == ("torch", 64)
    assert not calls[0][0].exists(), "the temporary cache directory is removed"
    assert "import torch" in out.getvalue() and "targets (H200)" in out.getvalue()
    # a directory that already holds kernels: the first process is not called cold
    (tmp_path / ("0" * 64 + ".so")).write_bytes(b"x")
    calls.clear()
    monkeypatch.setattr(startup, "run_child", lambda d, lib, n, c, phase: (
        calls.append(phase) or (cold if phase == "first" else warm)))
    assert startup.run("cupy", tmp_path, out=io.StringIO(), err=err) == 0
    assert calls == ["first", "warm"] and "not cold" in err.getvalue() and tmp_path.is_dir()
    # a child that fails: exit status 1, and no second process after a crash
    crashed = startup.ChildRun("cold", 1, 2.0, None, stderr="boom")
    monkeypatch.setattr(startup, "run_child", lambda *a, **k: crashed)
    err = io.StringIO()
    assert startup.run("cupy", None, out=io.StringIO(), err=err) == 1
    assert "FAILED: cold process exited with status 1" in err.getvalue()


def test_startup_child_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CUTEMATMUL_DISK_CACHE", "0")
    env = startup.child_environment(tmp_path)
    assert env["CUTEMATMUL_CACHE_DIR"] == str(tmp_path) and "CUTEMATMUL_DISK_CACHE" not in env
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(startup._PACKAGE_ROOT)


def test_startup_child_loads_without_importing_cutematmul():
    """The child loads startup.py by path; that must import nothing of cutematmul (its import is
    what is timed), so the module's top level is standard library only."""
    code = startup._BOOT.replace("sys.exit(m.child_main(sys.argv[2]))",
                                 "print(sorted(n for n in sys.modules if n.split('.')[0] in "
                                 "('cutematmul', '_cutematmul_startup_child')))")
    proc = subprocess.run([sys.executable, "-c", code, startup.__file__, "{}"],
                          capture_output=True, text=True, timeout=120, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['_cutematmul_startup_child']"


def test_startup_bytecode_state(tmp_path):
    import importlib.machinery
    import py_compile

    package = tmp_path / "pkg"
    package.mkdir()
    sources = [package / "__init__.py", package / "mod.py"]
    for source in sources:
        source.write_text("x = 1\n")
    spec = importlib.machinery.ModuleSpec("pkg", None, is_package=True)
    spec.submodule_search_locations = [str(package)]
    assert startup.bytecode_state(spec) == "none"
    py_compile.compile(str(sources[0]), doraise=True)
    assert startup.bytecode_state(spec) == "some"
    py_compile.compile(str(sources[1]), doraise=True)
    assert startup.bytecode_state(spec) == "all"
    assert startup.bytecode_state(None) == "none"
    run = startup.ChildRun("warm", 0, 0.1,
                           {**_startup_result([0.02] * 4, 0, 4), "bytecode": "none"})
    assert any("none of cutematmul's modules had bytecode" in line for line in startup.notes([run]))


def test_host_mode_takes_turns_and_keeps_the_best_round(monkeypatch):
    from cutematmul.bench import host

    order = []

    class Fake(Backend):
        def __init__(self, name, seconds, fails=False):
            super().__init__()
            self.name, self.seconds, self.fails = name, list(seconds), fails

        def _probe(self):
            return True, ""

        def supports(self, dtype, batched=False):
            return (dtype == "float32", "float32 only")

        def upload(self, h):
            return 1, 2, 3

        def matmul(self, a, b, out):
            if self.fails:
                raise RuntimeError("no GPU")

        def synchronize(self):
            pass

    fast, slow, broken = Fake("fast", [3e-6, 1e-6, 2e-6]), Fake("slow", [9e-6, 8e-6, 7e-6]), Fake(
        "broken", [], fails=True)

    def timed(call, calls, synchronize, warmup):
        backend = next(b for b in (fast, slow, broken) if b.synchronize == synchronize)
        order.append(backend.name)
        call()
        return backend.seconds.pop(0)

    monkeypatch.setattr(host, "host_time_per_call", timed)
    results = host.measure_hosts([fast, slow, broken], ["float32", "float16"], calls=10, repeats=3)
    assert order == ["fast", "slow", "broken", "fast", "slow", "fast", "slow"]
    by = {(r.backend, r.dtype): r for r in results}
    assert by["fast", "float32"].us_per_call == pytest.approx(1.0)
    assert by["slow", "float32"].us_per_call == pytest.approx(7.0)
    assert by["broken", "float32"].us_per_call is None
    assert by["broken", "float32"].note.startswith("ERROR: RuntimeError: no GPU")
    assert by["fast", "float16"].note == "skipped: float32 only"


def test_host_mode_times_each_named_shape(monkeypatch):
    """``bench host --shapes``: each product in turn (shape-major), inputs made for its own
    shape, rows labelled with it; the default is the 64^3 product."""
    from cutematmul.bench import host

    made = []

    class Fake(Backend):
        name = "fake"

        def _probe(self):
            return True, ""

        def supports(self, dtype, batched=False):
            return True, ""

        def make_inputs(self, shape, dtype):
            made.append((shape, dtype))
            return 1, 2, 3

        def matmul(self, a, b, out):
            pass

        def synchronize(self):
            pass

    monkeypatch.setattr(host, "host_time_per_call", lambda *a: 5e-6)
    shapes = parse_shapes("64x64x64,595x851x545")
    results = host.measure_hosts([Fake()], ["float16", "float32"], shapes, calls=1, repeats=1)
    assert made == [(shapes[0], "float16"), (shapes[0], "float32"), (shapes[1], "float16"),
                    (shapes[1], "float32")]
    assert [row[2] for row in host.rows(results)] == ["64x64x64"] * 2 + ["595x851x545"] * 2
    assert all(r.us_per_call == pytest.approx(5.0) for r in results)
    assert build_parser().parse_args(["host"]).shapes == "64x64x64"
    args = build_parser().parse_args(["host", "--shapes", "595x851x545"])
    assert parse_shapes(args.shapes) == [Shape(595, 851, 545)]


def test_ratio_to_fastest_takes_the_faster_baseline_of_each_round():
    torch_rounds, cupy_rounds = [2.0, 1.0, 2.0, None], [1.0, 2.0, 4.0, 1.0]
    ours = [1.0, 1.0, 1.0, 1.0]
    # rounds 0-2: min(2, 1) / 1, min(1, 2) / 1, min(2, 4) / 1; round 3 lacks torch
    assert stats.ratio_to_fastest([torch_rounds, cupy_rounds], ours) == pytest.approx(1.0)
    assert stats.ratio_to_fastest([torch_rounds, cupy_rounds], [0.5, 2.0, 4.0, 1.0]) == \
        pytest.approx(0.5)  # median of 2, 0.5, 0.5
    assert stats.ratio_to_fastest([[None], [1.0]], [1.0]) is None
    assert stats.ratio_to_fastest([[3.0, 1.0]], [1.0, 1.0]) == pytest.approx(2.0)


def test_run_point_rates_against_the_fastest_baseline_that_ran():
    backends = [NumpyBackend("torch"), NumpyBackend("cupy"), NumpyBackend("mine")]
    rows = {r.backend: r for r in run_point(Point(Shape(33, 20, 17), "float16", "nn"), backends,
                                            FAST)}
    for r in rows.values():
        assert r.reference == "torch" and r.ratio is not None and r.ratio_best is not None
        # each round's faster baseline takes no longer than torch: never a higher ratio
        assert r.ratio_best <= r.ratio + 1e-12
    assert rows["cupy"].ratio_best <= 1.0 and rows["torch"].ratio_best <= 1.0
    # With one baseline, the best is that one.
    alone = run_point(Point(Shape(33, 20, 17), "float16", "nn"), backends[:1] + backends[2:], FAST)
    assert all(r.ratio_best == r.ratio for r in alone)
    assert run_point(Point(Shape(33, 20, 17), "float16", "nn"), backends[2:], FAST)[0].ratio_best \
        is None


def test_summary_gives_each_cutematmul_backend_and_dtype_its_geometric_mean_and_least():
    rows = []
    for shape, dtype, ratio, best in [((8192, 8192, 8192), "float16", 1.08, 1.02),
                                      ((4096, 14336, 4096), "float16", 1.00, 0.97),
                                      ((1000, 1000, 1000), "float32", 1.05, None)]:
        point = Point(Shape(*shape), dtype, "nn")
        ours = Result.start(point, "cutematmul-cupy")
        ours.seconds, ours.ratio, ours.ratio_best = 1e-3, ratio, best
        ref = Result.start(point, "torch")
        ref.seconds, ref.ratio, ref.ratio_best = 1e-3, 1.0, 0.99
        rows += [ours, ref]
    wrong = Result.start(Point(Shape(64, 64, 64), "float16", "nn"), "cutematmul-cupy")
    wrong.ratio, wrong.ratio_best = 0.1, 0.1
    rows.append(wrong.mark(WRONG, "relative error 1"))
    lines = report.summary(rows)
    assert len(lines) == 2  # cutematmul only, one line per dtype; the wrong row is left out
    fp16, fp32 = lines
    mean = (1.08 * 1.00) ** 0.5
    assert fp16.startswith("cutematmul-cupy fp16: x cuBLAS geometric mean ")
    assert f"{mean:.3f}x over 2 points, least 1.000x (4096x14336x4096 fp16 nn)" in fp16
    assert "x best geometric mean" in fp16 and "least 0.970x (4096x14336x4096 fp16 nn)" in fp16
    assert fp32 == ("cutematmul-cupy fp32: x cuBLAS geometric mean 1.050x over 1 points, "
                    "least 1.050x (1000x1000x1000 fp32 nn)")
    assert lines[0] in report.text_table(rows) and f"- {lines[1]}" in report.markdown(rows)
    assert "x best" in report.text_table(rows).splitlines()[0]
