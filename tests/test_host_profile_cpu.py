"""CPU tests of ``tools/host_profile.py``'s choice of steps (its timing is the tool's GPU job):
a split plan's GEMM kernel is never called alone on C (it writes the launch's workspace; the
49th session's fault), while a plan of one kernel writing C is, and a copied operand's prep
is timed with its launch."""

from __future__ import annotations

from helpers import load_tool

from cutematmul import launch

H200 = ((9, 0), 132)


def _plan(dtype: str, m: int, n: int, k: int):
    """The H200's plan of a contiguous row-major (m, k) @ (k, n) in ``dtype``."""
    names, math = launch.families_for(dtype, H200[0], "auto")[1:]
    plan = launch.contiguous_plan(names, *H200, math, m, n, k, 1, (False, False))
    assert isinstance(plan, launch.Launch)
    return plan


def test_split_plan_is_timed_whole_never_its_kernel_alone():
    plan = _plan("float32", 595, 851, 545)
    assert plan.reduce is not None, "the case must stay a split plan"
    assert load_tool("host_profile").launch_steps(plan) == ("execute",)


def test_copied_operands_time_the_prep_and_the_gemm_over_the_copies():
    plan = _plan("float16", 595, 851, 545)
    assert plan.prep is not None and plan.reduce is None, "the case must copy, unsplit"
    assert load_tool("host_profile").launch_steps(plan) == ("kernel", "execute", "prep")


def test_one_kernel_writing_c_is_timed_alone():
    plan = _plan("float16", 1024, 1024, 1024)
    assert plan.prep is None and plan.reduce is None and plan.streamk is None
    assert load_tool("host_profile").launch_steps(plan) == ("kernel",)
