"""CPU tests of ``tools/sanitize_cases.py``'s case lists: each product meant to reach a kernel
variant under compute-sanitizer is still planned onto it by today's rules (the sanitizer run
itself is a GPU job; the tool imports PyTorch, so its lists are read from the source)."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import load_tool

_SOURCE = Path(__file__).resolve().parents[1] / "tools" / "sanitize_cases.py"


def _constant(name: str):
    """The literal value assigned to ``name`` at the top of the tool."""
    for node in ast.parse(_SOURCE.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name
                                                for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(name)


def _pick(m, n, k, dtype, layout):
    from cutematmul import dispatch

    problem = load_tool("sweep_schedule").problem_of(dtype, m, n, k, layout)
    return dispatch.tunable(problem, 1)[0]


def test_swap_cases_are_planned_swapped_and_cover_the_narrow_rings():
    from cutematmul.configs import sm90

    cases = _constant("SWAP_CASES")
    picks = [_pick(*case) for case in cases]
    for case, (config, splits, transposed) in zip(cases, picks):
        assert config.swap and not transposed, (case, config)
    narrow = [config for config, _, _ in picks if config.tile_n <= sm90.SMALL_M]
    assert {(c.tile_m, c.stages) for c in narrow} >= {(64, sm90._NARROW_RING_STAGES), (128, 0)}
    # --quick runs the first two: one of them on the deeper ring.
    assert any(c.stages == sm90._NARROW_RING_STAGES for c, _, _ in picks[:2])
