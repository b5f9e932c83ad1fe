"""Sustained throughput, SM clock and board power of cutematmul beside cuBLAS (PyTorch).

    python tools/sustained_power.py [--dtype float16] [--shapes 8192x8192x8192,...] [--seconds 3]

For each shape, each backend runs back to back for ``--seconds`` (ours, cuBLAS, ours, cuBLAS)
while ``nvidia-smi`` samples the SM clock, power draw and temperature every 100 ms; the line
printed per run gives TFLOP/s, the mean clock and power over the middle of the run, and TFLOP/s
per GHz.  Two libraries at the board's power cap run at whatever clock the cap allows, so their
ratio of TFLOP/s is set by energy per flop as much as by the schedule: compare TFLOP/s per GHz.
``docs/performance.md`` quotes its output.  It reads the clocks; it never sets them.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time

import torch

import cutematmul


def _sample(stop: threading.Event, rows: list) -> None:
    """Append (MHz, W, C) rows from nvidia-smi every 100 ms until ``stop`` is set."""
    proc = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu",
         "--format=csv,noheader,nounits", "-lms", "100"], stdout=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if stop.is_set():
                break
            try:
                rows.append([float(v) for v in line.split(",")])
            except ValueError:
                continue
    finally:
        proc.kill()


def _sustained(fn, seconds: float) -> tuple[float, list]:
    """(seconds per call, nvidia-smi rows) of ``fn`` run back to back for about ``seconds``."""
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        fn()
    end.record()
    end.synchronize()
    reps = max(10, int(seconds / (start.elapsed_time(end) / 10e3)))
    rows, stop = [], threading.Event()
    sampler = threading.Thread(target=_sample, args=(stop, rows))
    sampler.start()
    time.sleep(0.3)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    stop.set()
    sampler.join(timeout=2)
    return start.elapsed_time(end) / 1e3 / reps, rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtype", default="float16", choices=("float16", "bfloat16", "float32"))
    p.add_argument("--shapes", default="8192x8192x8192,4096x14336x4096,4096x4096x4096")
    p.add_argument("--seconds", type=float, default=3.0)
    args = p.parse_args(argv)
    dtype = getattr(torch, args.dtype)
    for spec in args.shapes.split(","):
        m, n, k = (int(v) for v in spec.split("x"))
        a = torch.randn(m, k, device="cuda").to(dtype)
        b = torch.randn(k, n, device="cuda").to(dtype)
        out = torch.empty(m, n, device="cuda", dtype=dtype)
        backends = (("cutematmul", lambda: cutematmul.matmul(a, b, out=out)),
                    ("cublas", lambda: torch.matmul(a, b, out=out)))
        for name, fn in backends * 2:
            per_call, rows = _sustained(fn, args.seconds)
            body = rows[len(rows) // 4:-2] or rows  # past the clock's first ramp
            mhz = sum(r[0] for r in body) / len(body)
            watts = sum(r[1] for r in body) / len(body)
            tflops = 2 * m * n * k / per_call / 1e12
            print(f"{args.dtype} {spec} {name:10s} {tflops:7.1f} TFLOP/s {mhz:6.0f} MHz "
                  f"{watts:5.0f} W {tflops / mhz * 1e3:6.1f} TFLOP/s per GHz "
                  f"{body[-1][2]:.0f} C ({len(body)} samples)", flush=True)
            time.sleep(1.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
