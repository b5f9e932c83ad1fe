"""CPU tests of ``tools/gpu_check.sh``'s test part: its pytest processes, run side by side on one
GPU, take every test file exactly once, whatever the number of processes (a stand-in ``python``
records the calls instead of running them)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _check(tmp_path, info_fails: bool = False, **env):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    stand_in = bin_dir / "python"
    info = ('if [ "$*" = "-m cutematmul info" ]; then echo "No module named platformdirs" >&2; '
            'exit 1; fi\n' if info_fails else "")
    stand_in.write_text(f'#!/usr/bin/env bash\necho "$*" >> "$CALLS"\n{info}echo "1 passed"\n')
    stand_in.chmod(stat.S_IRWXU)
    calls = tmp_path / "calls.txt"
    calls.unlink(missing_ok=True)
    done = subprocess.run(["bash", str(ROOT / "tools" / "gpu_check.sh"), str(tmp_path / "logs")],
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
                               "CALLS": str(calls), **env},
                          capture_output=True, text=True, timeout=60)
    return done, (calls.read_text().splitlines() if calls.exists() else [])


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None,
                    reason="needs bash and coreutils' timeout")
@pytest.mark.parametrize("jobs", [1, 2, 3, 4, 5, 6])
def test_the_test_part_runs_every_test_file_once_in_at_most_jobs_processes(tmp_path, jobs):
    done, calls = _check(tmp_path, GPU_CHECK_PARTS="tests", GPU_TEST_JOBS=str(jobs))
    assert done.returncode == 0, done.stdout + done.stderr
    assert calls[0] == "-m cutematmul info"  # the preflight, before any test
    calls = calls[1:]
    assert 1 <= len(calls) <= jobs
    files = [word for call in calls for word in call.split() if word.startswith("tests/")]
    everything = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py"))
    assert sorted(files) == everything
    assert all("-m gpu" in call and "not sizes_past_int32" in call for call in calls)
    assert done.stdout.count("exit 0: 1 passed") == len(calls)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_an_unknown_part_is_refused(tmp_path):
    done, calls = _check(tmp_path, GPU_CHECK_PARTS="tests-and-more")
    assert done.returncode == 2 and "unknown part 'tests-and-more'" in done.stderr
    assert calls == []


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_package_that_cannot_start_runs_no_test(tmp_path):
    done, calls = _check(tmp_path, info_fails=True, GPU_CHECK_PARTS="tests")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "'python -m cutematmul info' failed" in done.stderr
    assert "No module named platformdirs" in done.stderr
    assert calls == ["-m cutematmul info"]
