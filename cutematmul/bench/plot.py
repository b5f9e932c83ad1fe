"""A PNG of the results: TFLOP/s per shape, one bar per backend, one panel per dtype.

A bar of a wrong result (timed, but failing the check) is cross-hatched.

Needs matplotlib (``pip install cutematmul[bench]``); imported only when a plot is asked for.

Imports: ``results`` of this package; lazily ``matplotlib``.
"""

from __future__ import annotations

from pathlib import Path

from .results import WRONG, Result

_DTYPE_TITLE = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32 (IEEE)"}


def _title(dtype: str, rows: list[Result]) -> str:
    """The panel's title: the dtype, and cutematmul's precision when a float32 one is not IEEE."""
    precisions = [p for p in dict.fromkeys(r.precision for r in rows) if p != "highest"]
    if not precisions:
        return _DTYPE_TITLE.get(dtype, dtype)
    return f"fp32 (cutematmul precision={'/'.join(precisions)})"


def plot(results: list[Result], path: Path, title: str = "") -> Path:
    """Write the plot of ``results`` (rows with a time) to ``path``; returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timed = [r for r in results if r.tflops is not None]
    dtypes = list(dict.fromkeys(r.dtype for r in timed)) or ["float16"]
    backends = list(dict.fromkeys(r.backend for r in timed))
    several_layouts = len({r.layout for r in timed}) > 1

    def x_label(r: Result) -> str:
        return f"{r.shape} {r.layout}" if several_layouts else r.shape

    fig, axes = plt.subplots(len(dtypes), 1, figsize=(max(8, 0.9 * _max_points(timed, dtypes) + 3),
                                                      3.6 * len(dtypes)), squeeze=False)
    width = 0.8 / max(len(backends), 1)
    for ax, dtype in zip(axes[:, 0], dtypes):
        rows = [r for r in timed if r.dtype == dtype]
        labels = list(dict.fromkeys(x_label(r) for r in rows))
        for j, backend in enumerate(backends):
            mine = {x_label(r): r for r in rows if r.backend == backend}
            xs = [i + (j - (len(backends) - 1) / 2) * width for i in range(len(labels))]
            bars = ax.bar(xs, [mine[lab].tflops if lab in mine else 0.0 for lab in labels], width,
                          label=backend)
            for bar, lab in zip(bars, labels):
                if lab in mine and mine[lab].status == WRONG:
                    bar.set_hatch("xx")  # timed, but the result was wrong
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("TFLOP/s")
        ax.set_title(_title(dtype, rows), fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7, ncols=min(len(backends), 5))
    if title:
        fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _max_points(rows: list[Result], dtypes: list[str]) -> int:
    counts = [len({(r.shape, r.layout) for r in rows if r.dtype == d}) for d in dtypes]
    return max(counts or [1])
