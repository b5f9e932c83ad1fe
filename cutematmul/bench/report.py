"""Results as text: an aligned plain-text table for the terminal, and a Markdown table (with a
header line of date, GPU, driver and versions) to paste into docs/performance.md.

Columns: shape, dtype, layout, backend, median time per product, TFLOP/s, spread of the round
times, throughput relative to cuBLAS measured in the same rounds (>1: faster) and relative to
the faster of CuPy's and PyTorch's cuBLAS in each round ("x best"), relative error
against the float64 reference, the first call's time (compile / autotune / module load), and a
note (why a row was skipped, an error, a wrong result, a host-bound measurement).

Which float32 precision was measured, and which cuBLAS the float32 ratios are against, is one
line (``precision_line``): in the Markdown header line, and above the plain-text table when it is
not the default "highest".

Imports: ``environment``, ``results`` of this package.
"""

from __future__ import annotations

import statistics

from .environment import header
from .results import ERROR, OK, SKIPPED, WRONG, Result

COLUMNS = ("shape", "dtype", "layout", "backend", "time", "TFLOP/s", "spread", "x cuBLAS",
           "x best", "rel err", "1st call", "note")
_RIGHT = {"time", "TFLOP/s", "spread", "x cuBLAS", "x best", "rel err", "1st call"}
_DTYPE_SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


def format_time(seconds: float | None) -> str:
    """1.234e-5 -> "12.3 us"; 0.0123 -> "12.30 ms"; 1.5 -> "1.500 s"."""
    if seconds is None:
        return ""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds:.3f} s"


def format_tflops(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.1f}" if value >= 10 else f"{value:.3g}"


def _note(r: Result) -> str:
    prefix = {SKIPPED: "skipped: ", ERROR: "ERROR: ", WRONG: "WRONG: "}.get(r.status, "")
    note = r.note
    if r.clock == "wall" and r.seconds is not None:
        note = f"{note}; host clock" if note else "host clock"
    return prefix + note if prefix else note


def row(r: Result) -> list[str]:
    """One result as the table's cells."""
    return [
        r.shape, _DTYPE_SHORT.get(r.dtype, r.dtype), r.layout, r.backend,
        format_time(r.seconds), format_tflops(r.tflops),
        "" if r.spread is None else f"{100 * r.spread:.1f}%",
        "" if r.ratio is None else f"{r.ratio:.2f}x",
        "" if r.ratio_best is None else f"{r.ratio_best:.2f}x",
        "" if r.rel_error is None else f"{r.rel_error:.1e}",
        "" if r.first_call_s is None else f"{r.first_call_s:.2f} s",
        _note(r),
    ]


def render_table(headers, rows, right=frozenset()) -> str:
    """Aligned plain-text columns; ``right`` names the right-aligned ones."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells):
        parts = [c.rjust(w) if h in right else c.ljust(w)
                 for c, w, h in zip(cells, widths, headers)]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule] + [line(r) for r in rows])


def render_markdown(headers, rows, right=frozenset()) -> str:
    def esc(cell: str) -> str:
        return cell.replace("|", "\\|")

    align = ["---:" if h in right else "---" for h in headers]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def precision_line(results: list[Result]) -> str:
    """What the float32 rows measured, e.g. "float32 at precision='tf32', x cuBLAS against
    torch-tf32"; "" without float32 rows."""
    fp32 = [r for r in results if r.dtype == "float32"]
    if not fp32:
        return ""
    precisions = "/".join(repr(p) for p in dict.fromkeys(r.precision for r in fp32))
    references = "/".join(dict.fromkeys(r.reference for r in fp32 if r.reference))
    against = f"x cuBLAS against {references}" if references else "no x cuBLAS ratio"
    return f"float32 at precision={precisions}, {against}"


def summary(results: list[Result]) -> list[str]:
    """Per cutematmul backend and dtype, the geometric mean and the least of its correct
    points' ratios (x cuBLAS, and x best where measured), e.g. ``cutematmul-cupy fp16: x
    cuBLAS geometric mean 1.247x over 12 points, least 1.000x (4096x14336x4096 fp16 tn); x
    best ...``; nothing for a run without ratios."""
    lines = []
    groups = dict.fromkeys((r.backend, r.dtype) for r in results
                           if r.backend.startswith("cutematmul"))
    for backend, dtype in groups:
        rows = [r for r in results if (r.backend, r.dtype) == (backend, dtype) and r.status == OK]
        parts = []
        for name, attr in (("x cuBLAS", "ratio"), ("x best", "ratio_best")):
            rated = [r for r in rows if getattr(r, attr) is not None]
            if not rated:
                continue
            least = min(rated, key=lambda r: getattr(r, attr))
            where = f"{least.shape} {_DTYPE_SHORT.get(least.dtype, least.dtype)} {least.layout}"
            mean = statistics.geometric_mean([getattr(r, attr) for r in rated])
            parts.append(f"{name} geometric mean {mean:.3f}x over {len(rated)} points, least "
                         f"{getattr(least, attr):.3f}x ({where})")
        if parts:
            lines.append(f"{backend} {_DTYPE_SHORT.get(dtype, dtype)}: " + "; ".join(parts))
    return lines


def text_table(results: list[Result]) -> str:
    """The results as an aligned plain-text table, after the precision line when float32 was
    measured at a precision other than "highest", and before the ``summary`` lines."""
    table = "\n".join([render_table(COLUMNS, [row(r) for r in results], _RIGHT)]
                      + summary(results))
    if all(r.precision == "highest" for r in results if r.dtype == "float32"):
        return table
    return f"{precision_line(results)}\n{table}"


def markdown(results: list[Result], env: dict | None = None,
             unavailable: dict | None = None) -> str:
    """A Markdown table of the results, after a header line (date, GPU, versions) when ``env``."""
    parts = []
    if env:
        measured = "; ".join(p for p in (header(env), precision_line(results)) if p)
        parts.append(f"Measured {measured}.")
        parts.append("")
    parts.append(render_markdown(COLUMNS, [row(r) for r in results], _RIGHT))
    lines = summary(results)
    if lines:
        parts.append("")
        parts += [f"- {line}" for line in lines]
    if unavailable:
        parts.append("")
        parts += [f"- {name} did not run: {why}" for name, why in unavailable.items()]
    parts.append("")
    parts.append("time: median over rounds of the per-product time (CUDA events; JAX: host clock); "
                 "x cuBLAS: median over rounds of cuBLAS time / this time, same run and data "
                 "(float32: SGEMM, or cuBLAS TF32 at precision 'tf32'); "
                 "x best: the same against the faster cuBLAS (CuPy's or PyTorch's) of each "
                 "round; "
                 "rel err: ||C - C_ref||_F / ||C_ref||_F on a sample, float64 reference.")
    return "\n".join(parts)


def summary_line(results: list[Result]) -> str:
    """One compact line per point for progress output, e.g.
    ``4096x4096x4096 fp16 nn: torch 660.1 | cutematmul-torch 640.2 (0.97x)``."""
    if not results:
        return ""
    r0 = results[0]
    cells = []
    for r in results:
        if r.tflops is not None:
            ratio = f" ({r.ratio:.2f}x)" if r.ratio is not None and r.backend != r.reference else ""
            flag = " WRONG" if r.status == WRONG else ""
            cells.append(f"{r.backend} {format_tflops(r.tflops)}{ratio}{flag}")
        elif r.status in (ERROR, SKIPPED):
            cells.append(f"{r.backend} {r.status}")
    head = f"{r0.shape} {_DTYPE_SHORT.get(r0.dtype, r0.dtype)} {r0.layout}"
    if r0.precision != "highest":
        head += f" {r0.precision}"
    return f"{head}: " + " | ".join(cells) + " TFLOP/s" if cells else head
