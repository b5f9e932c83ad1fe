"""``cutematmul.tune`` on the GPU: it times real candidates, keeps one, the product stays correct,
and a new process takes the tuned schedule from the cache directory.  Times are never asserted."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import require_module

pytestmark = pytest.mark.gpu

torch = require_module("torch")


@pytest.fixture
def cache_dir(monkeypatch, tmp_path):
    from cutematmul import cache, launch

    directory = tmp_path / "kernels"
    monkeypatch.setenv("CUTEMATMUL_CACHE_DIR", str(directory))
    cache.cache_clear()  # the tuned table is read from this directory from now on
    yield directory
    monkeypatch.delenv("CUTEMATMUL_CACHE_DIR")
    cache.cache_clear()
    launch.clear_plans()


def _relative_error(c, a, b) -> float:
    expected = a.double() @ b.double()
    return float(torch.linalg.norm(c.double() - expected) / torch.linalg.norm(expected))


@pytest.mark.parametrize("dtype,shape,bound", [
    ("float16", (1000, 1000, 1000), 1e-2),
    ("bfloat16", (16, 4096, 4096), 2e-2),
    ("float32", (64, 2048, 2048), 1e-5),
])
def test_tune_keeps_a_timed_candidate_and_products_stay_correct(cache_dir, dtype, shape, bound):
    import cutematmul

    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", generator=g).to(getattr(torch, dtype))
    b = torch.randn(k, n, device="cuda", generator=g).to(getattr(torch, dtype))
    result = cutematmul.tune(a, b, limit=3, reps=3)
    assert result.problem is not None and result.problem.m == m, str(result)
    assert len(result.trials) >= 2, str(result)
    assert result.chosen is not None and result.chosen.seconds > 0, str(result)
    assert not [t for t in result.trials if t.note.startswith("WRONG")], str(result)
    assert result.persisted and (cache_dir / "tuned.json").is_file()
    assert cutematmul.cache_info()["tuned"]["entries"] >= 1
    c = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype)
    cutematmul.matmul(a, b, out=c)
    assert _relative_error(c, a, b) <= bound

    # A fresh process plans the tuned schedule from the cache directory.
    code = (
        "import torch, cutematmul\n"
        "from cutematmul import launch\n"
        "from cutematmul.adapters import adapter_for\n"
        f"a = torch.zeros({m}, {k}, device='cuda', dtype=torch.{dtype})\n"
        f"b = torch.zeros({k}, {n}, device='cuda', dtype=torch.{dtype})\n"
        "work = launch.planned_launch(adapter_for(a), a, b)\n"
        "print(repr((work.key.config, work.splits, work.transposed)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "CUTEMATMUL_CACHE_DIR": str(cache_dir)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    chosen = result.chosen
    assert proc.stdout.strip() == repr((chosen.config, chosen.splits, chosen.transposed))


def test_a_product_with_nothing_to_tune_says_so(cache_dir):
    import cutematmul

    a = torch.ones(64, 0, device="cuda", dtype=torch.float16)
    b = torch.ones(0, 64, device="cuda", dtype=torch.float16)
    result = cutematmul.tune(a, b)
    assert result.problem is None and "nothing to tune" in result.note
