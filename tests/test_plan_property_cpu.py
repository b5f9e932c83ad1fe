"""CPU property test of the planner: for any layout a caller can pass, every kernel a plan
names is one its family builds.

The GPU property test (``tests/test_gpu_safety.py``) draws shapes, batches, offsets, strides,
transposes and 1-D operands and runs each product; it found a 16-bit product planned onto the
tiled fp32 SIMT kernel (a batch run in pieces), which refused to build.  This test draws the
same kinds of layouts (no arrays: shapes, strides and pointers only) and plans them as a call on
an H200 (and an sm_80 GPU) would, through ``launch._prepare_call`` and ``launch._device_plan``,
then the staged re-plan where the plan asks for copies (``launch._run_staged``: row-major copies
whose rows are padded to the family's alignment).  Every key of the launch is instantiated with
``dispatch.build_kernel`` (its constructor checks dtype, majors and configuration; nothing is
compiled), and its calls pass the launch proof (``check_launches`` runs inside the planner).
"""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cutematmul import device, dispatch, launch
from cutematmul.dispatch import KernelKey
from cutematmul.operand import Operand
from cutematmul.plan import round_up, row_major_strides

pytest.importorskip("cutlass", reason="the kernels' constructors import the CuTe DSL")

GPUS = {"H200": device.DeviceInfo(0, "stand-in H200", (9, 0), 132),
        "A100": device.DeviceInfo(0, "stand-in A100", (8, 0), 108)}
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}
SIZES = [1, 2, 3, 7, 8, 9, 16, 17, 33, 64, 65, 130]


def _view(batch, rows, cols, transposed, offset, step):
    """(shape, element strides, element offset) of a (batch..., rows, cols) view into a
    row-major buffer of (batch..., stored rows, stored cols * step + offset), possibly
    transposed, as ``test_gpu_safety._operand`` makes it."""
    store = (cols, rows) if transposed else (rows, cols)
    full = row_major_strides(tuple(batch) + (store[0], store[1] * step + offset))
    strides = full[:-1] + (full[-1] * step,)
    shape = tuple(batch) + store
    if transposed:
        shape = shape[:-2] + (shape[-1], shape[-2])
        strides = strides[:-2] + (strides[-1], strides[-2])
    return shape, strides, offset


@st.composite
def _call(draw):
    dtype = draw(st.sampled_from(["float32", "float16", "bfloat16"]))
    precision = draw(st.sampled_from(["highest", "high", "tf32"])) if dtype == "float32" else (
        "highest")
    m, n, k = (draw(st.sampled_from(SIZES)) for _ in range(3))
    nb = draw(st.integers(0, 2))
    batch = [draw(st.integers(1, 3)) for _ in range(nb)]
    ba = tuple(d if draw(st.booleans()) else 1 for d in batch)[draw(st.integers(0, nb)):]
    bb = tuple(d if draw(st.booleans()) else 1 for d in batch)[draw(st.integers(0, nb)):]
    # A slice of a larger stack: batch strides that cannot be merged (launches in pieces).
    sliced = draw(st.booleans())
    if sliced and ba:
        ba = ba[:-1] + (ba[-1] + 1,)
    layout = draw(st.sampled_from(["nn", "tn", "nt", "tt"]))
    offsets = (draw(st.integers(0, 9)), draw(st.integers(0, 9)))
    steps = (draw(st.sampled_from([1, 1, 2])), draw(st.sampled_from([1, 1, 3])))
    one_d = draw(st.sampled_from([None, None, None, "a", "b"]))
    if one_d == "a":
        a = ((k,), (steps[0],), offsets[0])
    else:
        a = _view(ba, m, k, layout[0] == "t", offsets[0], steps[0])
        if sliced and ba:  # drop the extra matrix: A[..., :-1, :, :]
            a = (a[0][:-3] + (a[0][-3] - 1,) + a[0][-2:], a[1], a[2])
    b = ((k,), (steps[1],), offsets[1]) if one_d == "b" else _view(
        bb, k, n, layout[1] == "t", offsets[1], steps[1])
    gpu = draw(st.sampled_from(sorted(GPUS)))
    return dtype, precision, a, b, gpu


def _operand(view, dtype):
    shape, strides, offset = view
    size = ITEMSIZE[dtype]
    return Operand(None, (1 << 20) + offset * size, shape, strides, dtype, size, 0)


def _buildable(work: launch.Launch) -> None:
    for key in work.kernels:
        if isinstance(key, KernelKey):
            dispatch.build_kernel(key)  # raises where the family cannot run the key


@settings(max_examples=3000, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(_call())
def test_every_planned_kernel_is_one_its_family_builds(case):
    dtype, precision, a_view, b_view, gpu = case
    da, db = _operand(a_view, dtype), _operand(b_view, dtype)
    with mock.patch.object(launch._device, "device_info", lambda index: GPUS[gpu]):
        launch.clear_plans()
        call = launch._prepare_call(da, db, None, precision, "auto")
        aligned = ((da.ptr & 15) == 0, (db.ptr & 15) == 0, True)
        families, info, (_, work) = launch._device_plan(call, aligned)
        if isinstance(work, launch.Staging):
            # The staged re-plan: row-major copies padded to the family's alignment.
            pad = max(1, families[0][0].required_alignment // da.itemsize)
            views = []
            for staged, op in ((work.a, da), (work.b, db)):
                if staged:
                    padded = op.shape[:-1] + (round_up(op.shape[-1], pad),)
                    op = op._replace(ptr=1 << 24, strides=row_major_strides(padded))
                views.append(op)
            c_strides = call.c_strides
            if work.c:
                cols = call.shape[-1] if call.shape else 1
                c_strides = row_major_strides(call.shape[:-1] + (round_up(cols, pad),))
            _, work = launch._plan_launch(
                families[1], info.capability, info.num_sms, views[0].shape, views[0].strides,
                views[1].shape, views[1].strides, call.shape, c_strides, families[2],
                da.itemsize, ((views[0].ptr & 15) == 0, (views[1].ptr & 15) == 0, True),
                (work.a, work.b, work.c))
            assert not isinstance(work, launch.Staging), (case, work)
        if isinstance(work, launch.Launch):
            _buildable(work)
    launch.clear_plans()


@settings(max_examples=1500, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(dtype=st.sampled_from(["float32", "float16", "bfloat16"]),
       precision=st.sampled_from(["highest", "high", "tf32"]),
       mnk=st.tuples(*(st.sampled_from(SIZES + [1000, 4097]) for _ in range(3))),
       batch=st.sampled_from([1, 2, 5]), trans=st.tuples(st.booleans(), st.booleans()),
       bcast=st.tuples(st.booleans(), st.booleans()), gpu=st.sampled_from(sorted(GPUS)))
def test_every_jitted_kernel_is_one_its_family_builds(dtype, precision, mnk, batch, trans, bcast,
                                                      gpu):
    """The XLA route's plan (``xla.xla_plan``: what a jitted product lowers to) likewise."""
    xla = pytest.importorskip("cutematmul.xla", reason="the XLA route needs jax")
    info = GPUS[gpu]
    if batch == 1:
        bcast = (True, True)
    plan = xla.xla_plan(info.capability, info.num_sms, dtype,
                        precision if dtype == "float32" else "highest", "auto", *mnk, batch,
                        *trans, *bcast, tuned=False)
    dispatch.build_kernel(plan.key)
