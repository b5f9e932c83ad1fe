"""The autotuner's pieces that need no GPU: the candidates each family offers, the tuned tier of
the cache (memory, ``tuned.json``, trials), and the launch path taking a tuned schedule.  The
timing itself runs in tests/test_gpu_tune.py."""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace

import pytest

from cutematmul import cache, cache_disk, dispatch, launch
from cutematmul.configs import simt, sm90
from cutematmul.plan import plan_gemm

H200 = ((9, 0), 132)
SHAPES = [(1000, 1000, 1000), (16, 8192, 8192), (128, 8192, 8192), (4096, 4096, 4096),
          (1536, 1536, 1536), (64, 64, 64)]


@pytest.mark.parametrize("module,maths", [(sm90, ("float16", "bfloat16", "tf32", "tf32x3")),
                                          (simt, ("float32",))], ids=["sm90", "simt"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_candidates_start_with_the_model_pick_and_are_valid_and_distinct(module, maths, shape):
    m, n, k = shape
    for math in maths:
        found = module.candidates(m, n, k, 1, 132, math=math, limit=6)
        assert found[0] == module.choose_schedule(m, n, k, 1, 132, math=math)
        assert len(found) == len(set(found)) >= 1
        # The pick, each ranked tile clustered and alone, the swapped wide widths (sm90).
        assert len(found) <= 1 + 2 * 6 + (sm90._SWAPPED_WIDE_TIMED if module is sm90 else 0)
        for config, splits, transposed in found:
            config.validate()
            assert splits >= 1
            if module is sm90 and (splits > 1 or transposed):
                assert config.partials, "split or transposed sm90 schedules write partials"
            if math == "tf32x3":  # the accuracy floor of 3xTF32's promoted sums holds
                sums = sm90.promoted_sums(k)
                assert splits >= -(-sums // sm90._PROMOTED_CHAIN), (config, splits)


def test_small_m_candidates_are_transposed_and_16bit_ones_come_unclustered_too():
    found = sm90.candidates(16, 1024, 8192, 1, 132, limit=4)  # transposed: few row tiles
    assert all(t for c, _, t in found if not c.swap), found  # swapped narrow tiles beside
    assert found[0][2] and any(c.swap and c.tile_n == 16 for c, _, _ in found), found
    found = sm90.candidates(1000, 1000, 1000, 1, 132, limit=4)
    clusters = {(c.tile_m, c.tile_n, s): set() for c, s, _ in found}
    for c, s, _ in found:
        clusters[(c.tile_m, c.tile_n, s)].add(c.cluster_m)
    assert any(v == {1, 2} for v in clusters.values())


def test_schedule_takes_a_tuned_choice():
    family = dispatch.FAMILIES["sm90"]
    config = sm90.Config(tile_m=128, tile_n=128, partials=True)
    key, splits, transposed = dispatch.schedule(family, H200[0], 132, "float16", "k", "n",
                                                (16, 16, 16), 1000, 1000, 1000, 1,
                                                tuned=(config, 3, False))
    assert key.config == config and splits == 3 and not transposed
    # Without a split (a launch in pieces) the tuned choice does not apply.
    key, splits, _ = dispatch.schedule(family, H200[0], 132, "float16", "k", "n", (16, 16, 16),
                                       1000, 1000, 1000, 1, split_k=False,
                                       tuned=(config, 3, False))
    assert splits == 1 and not key.config.partials


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """An empty cache state (the plan caches registered with it) and its own directory."""
    monkeypatch.setattr(cache, "_STATE", cache._State())
    cache.on_change(launch.clear_plans)
    launch.clear_plans()
    directory = tmp_path / "cache"
    monkeypatch.setenv("CUTEMATMUL_CACHE_DIR", str(directory))
    monkeypatch.delenv("CUTEMATMUL_DISK_CACHE", raising=False)
    yield directory
    launch.clear_plans()


def _plan(m=1000, n=1000, k=1000):
    gemm = plan_gemm((m, k), (k, 1), (k, n), (n, 1), (n, 1))
    spans = ((0, m * k * 2), (0, k * n * 2), (0, m * n * 2))
    return launch._plan_launch(("sm90", "sm80"), H200[0], H200[1], (m, k), (k, 1), (k, n),
                               (n, 1), (m, n), (n, 1), "float16", 2, (True, True, True),
                               (False, False, False))[1], spans


def test_a_recorded_choice_reaches_the_plan_and_the_disk_and_a_new_process_state(fresh):
    work, _ = _plan()
    assert isinstance(work, launch.Launch) and work.problem is not None
    assert work.problem.m == 1000 and work.problem.family == "sm90"
    other = next(c for c in sm90.candidates(1000, 1000, 1000, 1, 132) if c[0] != work.key.config)
    assert cache.record_tuned(work.problem, other, {"seconds": 1e-5})
    tuned, _ = _plan()
    assert tuned.key.config == other[0], "the plan cache was not cleared"
    (row,) = json.loads((fresh / cache_disk.TUNED).read_text())["entries"]
    assert row["problem"] == list(work.problem) and row["seconds"] == 1e-5
    assert cache.cache_info()["tuned"]["entries"] == 1
    cache.cache_clear()  # memory only: the table is read back from disk
    assert cache.tuned_choice(work.problem) == other
    again, _ = _plan()
    assert again.key.config == other[0]
    cache.cache_clear(disk=True)
    assert not (fresh / cache_disk.TUNED).exists()
    assert cache.tuned_choice(work.problem) is None
    assert _plan()[0].key == work.key


def test_a_trial_is_undone_and_persists_nothing(fresh):
    work, _ = _plan()
    other = sm90.candidates(1000, 1000, 1000, 1, 132)[1]
    with cache.trial_tuned(work.problem, other):
        assert _plan()[0].key.config == other[0]
    assert _plan()[0].key == work.key
    assert not (fresh / cache_disk.TUNED).exists()


def test_precompile_lists_the_model_pick_of_a_tuned_problem_and_calls_run_the_record(fresh):
    """``aot`` plans without the tuned table (``launch.contiguous_plan``; the recorded
    schedules' kernels come from the target directory's ``tuned.json``), calls with it."""
    from cutematmul import aot

    work, _ = _plan()
    other = sm90.candidates(1000, 1000, 1000, 1, 132)[1]
    cache.record_tuned(work.problem, other)
    listed = aot.plan_keys(aot.Selection(archs=("sm_90a",), dtypes=("float16",),
                                         layouts=("kn",), shapes=((1000, 1000, 1000),)))
    assert work.key in listed and replace(work.key, config=other[0]) not in listed
    assert _plan()[0].key.config == other[0]


def test_records_of_another_environment_or_invalid_ones_are_ignored(fresh):
    work, _ = _plan()
    other = sm90.candidates(1000, 1000, 1000, 1, 132)[1]
    cache.record_tuned(work.problem, other)
    path = fresh / cache_disk.TUNED
    doc = json.loads(path.read_text())
    bad = dict(doc["entries"][0], config={"tile_m": 96})  # not a valid sm90 tile
    doc["entries"].append(dict(bad, problem=list(work.problem._replace(m=2000))))
    path.write_text(json.dumps(doc))
    cache.cache_clear()
    assert cache.tuned_choice(work.problem) == other
    assert cache.tuned_choice(work.problem._replace(m=2000)) is None
    doc["environment"] = dict(doc["environment"], sources="0" * 64)
    path.write_text(json.dumps(doc))
    cache.cache_clear()
    assert cache.tuned_choice(work.problem) is None


def test_records_naming_schedules_the_tuner_never_offers_are_ignored(fresh):
    """A valid configuration in a combination the kernels are not built for (fp32 partials but
    no workspace, a 16-bit C written into the workspace, a narrow tile untransposed) never
    reaches the launch from ``tuned.json``."""
    work, _ = _plan()
    other = sm90.candidates(1000, 1000, 1000, 1, 132)[1]
    cache.record_tuned(work.problem, other)
    path = fresh / cache_disk.TUNED
    doc = json.loads(path.read_text())
    row = doc["entries"][0]
    wrong = [({"tile_m": 128, "tile_n": 128, "partials": True}, 1, False),
             ({"tile_m": 128, "tile_n": 128}, 2, False),
             ({"tile_m": 128, "tile_n": 16, "epi_n": 16, "partials": True}, 2, False),
             ({"tile_m": 128, "tile_n": 128}, 1, True)]
    doc["entries"] = []
    for i, (config, splits, transposed) in enumerate(wrong):
        sm90.Config(**config).validate()  # each is a valid configuration on its own
        problem = list(work.problem._replace(m=2000 + i))
        doc["entries"].append(dict(row, problem=problem, config=config, splits=splits,
                                   transposed=transposed))
    doc["entries"].append(row)
    path.write_text(json.dumps(doc))
    cache.cache_clear()
    assert cache.tuned_choice(work.problem) == other
    for i in range(len(wrong)):
        assert cache.tuned_choice(work.problem._replace(m=2000 + i)) is None


def test_the_launch_gives_partials_a_workspace_and_refuses_a_split_without_them(fresh):
    work, _ = _plan()
    assert work.reduce is None
    unsplit = (sm90.Config(tile_m=128, tile_n=128, partials=True), 1, False)
    with cache.trial_tuned(work.problem, unsplit):  # partials, unsplit: through the reduction
        planned, _ = _plan()
        assert planned.key.config.partials and planned.reduce is not None
    for choice in ((sm90.Config(tile_m=128, tile_n=128), 2, False),
                   (sm90.Config(tile_m=128, tile_n=128), 1, True)):
        with cache.trial_tuned(work.problem, choice):
            with pytest.raises(RuntimeError, match="refusing to launch"):
                _plan()


def test_tune_refuses_bad_options_and_host_arrays_before_any_gpu_work():
    import numpy

    import cutematmul

    a = numpy.ones((4, 4), numpy.float32)
    for options, message in (({"limit": 0}, "limit must be a positive integer"),
                             ({"reps": True}, "reps must be a positive integer"),
                             ({"margin": 1.5}, "margin must be a number"),
                             ({"precision": "low"}, "precision must be one of"),
                             ({"kernel": "fast"}, "kernel must be one of")):
        with pytest.raises(ValueError, match=message):
            cutematmul.tune(a, a, **options)
    with pytest.raises(TypeError, match="must be arrays in GPU memory"):
        cutematmul.tune(a, a)


def test_tune_control_flow_with_a_stand_in_gpu(fresh, monkeypatch):
    """Everything ``tune`` does around the GPU, with its GPU calls replaced: host arrays stand in
    for device memory, candidates "take" fixed times, one candidate computes a wrong product."""
    import ctypes

    import numpy

    from cutematmul import device, tuning
    from cutematmul.operand import ArrayAdapter, Operand

    work, _ = _plan()
    choices = sm90.candidates(1000, 1000, 1000, 1, 132, limit=3)
    fast, wrong = choices[2], choices[1]

    class HostAsGpu(ArrayAdapter):
        name, route = "stand-in", "device"

        def describe(self, x, argument="a", stream=None):
            return Operand(x, x.ctypes.data, x.shape, tuple(s // x.itemsize for s in x.strides),
                           "float16", 2, 0)

        def current_stream(self, device):
            return 0

    rng = numpy.random.default_rng(0)
    a = rng.standard_normal((1000, 1000)).astype(numpy.float16)
    b = rng.standard_normal((1000, 1000)).astype(numpy.float16)

    def product(a, b, out=None, precision="highest", kernel="auto"):
        current = cache.tuned_choice(work.problem)
        c = (a.astype(numpy.float32) @ b.astype(numpy.float32)).astype(numpy.float16)
        if current == wrong:
            c = c + numpy.float16(1)
        if out is not None:
            out[...] = c
            return out
        return c

    def copy(dst, dst_pitch, src, src_pitch, width, height, kind, stream):
        ctypes.memmove(dst, src, width * height)

    times = {choices[0]: 2e-5, wrong: 1e-5, fast: 1.5e-5}
    monkeypatch.setattr(tuning, "adapter_for", lambda x, argument="a": HostAsGpu())
    monkeypatch.setattr(tuning, "matmul", product)
    monkeypatch.setattr(launch, "planned_launch", lambda *args, **kwargs: work)
    monkeypatch.setattr(device, "l2_cache_bytes", lambda index: 1 << 20)
    monkeypatch.setattr(device, "using_device", lambda index: contextlib.nullcontext())
    monkeypatch.setattr(device, "alloc_async", lambda nbytes, stream: 4096)
    monkeypatch.setattr(device, "free_async", lambda ptr, stream: None)
    monkeypatch.setattr(device, "memset_async", lambda ptr, nbytes, stream: None)
    monkeypatch.setattr(device, "synchronize", lambda stream: None)
    monkeypatch.setattr(device, "copy_2d_async", copy)
    monkeypatch.setattr(device, "gpu_seconds", lambda stream, fn, reps, before=None: (
        fn(), [times.get(cache.tuned_choice(work.problem), 3e-5)] * reps)[1])

    result = tuning.tune(a, b, limit=3, reps=2)
    by_choice = {(t.config, t.splits, t.transposed): t for t in result.trials}
    assert by_choice[wrong].note.startswith("WRONG") and by_choice[wrong].seconds is None
    assert result.chosen is by_choice[fast] and result.persisted, str(result)
    assert cache.tuned_choice(work.problem) == fast
    assert "kept" in str(result) and "1.33x the model's pick" in str(result)
    # Within the margin the model's pick is kept.
    times[fast] = 1.99e-5
    result = tuning.tune(a, b, limit=3, reps=2, persist=False)
    assert result.chosen is result.trials[0] and not result.persisted


def test_precompile_builds_the_kernels_of_tuned_schedules_too(fresh):
    from cutematmul import aot

    work, _ = _plan()
    other = next(c for c in sm90.candidates(1000, 1000, 1000, 1, 132)
                 if c[1] > 1 and c[0] != work.key.config)
    cache.record_tuned(work.problem, other)
    selection = aot.Selection(archs=("sm_90a",), dtypes=("float32",), shapes=((64, 64, 64, 1),))
    listed = aot.build_list(selection, fresh)
    tuned = aot.tuned_keys(fresh)
    assert [k for k in tuned if getattr(k, "config", None) == other[0]], tuned
    assert dispatch.reduce_key(H200[0], "float16") in tuned  # the split needs its reduction
    assert set(tuned) <= set(listed) and set(aot.plan_keys(selection)) <= set(listed)
    assert aot.tuned_keys(fresh / "nowhere") == []


def test_precompile_builds_the_copy_of_a_tuned_few_column_product(fresh):
    """A tuned fp32 schedule whose kernel reads B K-major, on a few-column product whose B the
    device route copies K-major (``configs.simt.operand_copies``): precompile builds that copy's
    prep kernel (N-major to K-major) beside the GEMM."""
    from cutematmul import aot

    m, n, k = 8192, 8, 8192
    choice = simt.choose_schedule(m, n, k, 1, 132, majors=("k", "k"))
    problem = dispatch.Problem("simt", "sm_90a", "float32", "k", "k", 16, 16, 16, m, n, k, 1, 132)
    cache.record_tuned(problem, choice)
    tuned = aot.tuned_keys(fresh)
    preps = [key for key in tuned if isinstance(key, dispatch.PrepKey)]
    assert preps == [dispatch.operand_copy(H200[0], "float32", "n", "k").key], tuned


def test_a_tuned_schedule_reaches_jitted_products_but_for_stream_k(fresh):
    """The XLA route (``xla.xla_plan``) takes the schedule recorded for the same product on
    contiguous operands of another library (the problem the tuner records), except a stream-K
    one (it cannot zero the flags before each launch);
    ``aot`` lists the model's pick (``tuned=False``)."""
    pytest.importorskip("jax")
    from cutematmul import xla

    def plan(tuned=True):
        return xla.xla_plan(*H200, "float16", "highest", "auto", 1600, 1600, 1600, 1, False,
                            False, True, True, tuned=tuned)

    model = plan()
    problem = _plan(1600, 1600, 1600)[0].problem  # the pointer route's, as the tuner records it
    assert problem == dispatch.problem(model.family, *H200, "float16", "k", "n", (16, 16, 16),
                                       1600, 1600, 1600, 1)
    other = next(c for c in sm90.candidates(1600, 1600, 1600, 1, 132)
                 if c[0] != model.key.config and not c[0].streamk)
    cache.record_tuned(problem, other, persist=False)
    took = plan()
    assert (took.key.config, took.splits, took.transposed) == other
    assert plan(tuned=False).key == model.key
    streamk = next(c for c in sm90.candidates(1600, 1600, 1600, 1, 132) if c[0].streamk)
    cache.record_tuned(problem, streamk, persist=False)
    assert plan().key == model.key
