"""One row of results per (shape, dtype, layout, backend), and how a run is saved and loaded.

A row carries its point's ``precision``: what cutematmul was asked for on a float32 point
("highest" on 16-bit points); the baselines' own arithmetic is fixed by their name (``torch``:
IEEE fp32, ``torch-tf32``: TF32).

A run's JSON holds ``environment`` (GPU, driver, versions), ``settings``, ``unavailable``
(backends that could not run, with the reason) and ``results`` (the rows).  The CSV holds the
rows alone, one column per field.

Imports: ``shapes`` of this package.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from .shapes import PRECISIONS, Shape, point_precision

# status of a row
OK, WRONG, ERROR, SKIPPED = "ok", "wrong", "error", "skipped"


@dataclass(frozen=True)
class Point:
    """One benchmark point: every backend runs it on the same data.  ``precision`` is what
    cutematmul is asked for (``precision=``) on a float32 point; a 16-bit point is "highest"."""

    shape: Shape
    dtype: str
    layout: str
    precision: str = "highest"

    def __post_init__(self):
        if self.precision not in PRECISIONS:
            raise ValueError(f"Point: precision must be one of {', '.join(PRECISIONS)}; "
                             f"got {self.precision!r}.")
        if self.precision != point_precision(self.dtype, self.precision):
            raise ValueError(f"Point: precision applies to float32 points only; a {self.dtype} "
                             f"point is 'highest' (fp32 accumulation), got {self.precision!r}.")

    @property
    def label(self) -> str:
        label = f"{self.shape.label} {self.dtype} {self.layout}"
        return label if self.precision == "highest" else f"{label} {self.precision}"


@dataclass
class Result:
    """What one backend did on one point."""

    shape: str
    dtype: str
    layout: str
    backend: str
    status: str = OK
    note: str = ""
    precision: str = "highest"  # the point's: cutematmul's precision= on float32
    # ("highest": 16-bit)
    m: int = 0
    n: int = 0
    k: int = 0
    batch: int | None = None
    flops: int = 0
    seconds: float | None = None  # median over rounds of the per-round time per product
    tflops: float | None = None
    spread: float | None = None  # (max - min) / median of the per-round times
    ratio: float | None = None  # median over rounds of reference time / this time (>1: faster)
    reference: str = ""  # the cuBLAS backend the ratio is against (``runner.BASELINES``)
    #: Median over rounds of the fastest baseline's time / this time, over the baselines that
    #: ran (cuBLAS through CuPy and through PyTorch: issue 9's "best of")
    ratio_best: float | None = None
    rel_error: float | None = None
    nonfinite: int | None = None  # output elements left NaN/Inf
    first_call_s: float | None = None  # first call incl. compile / autotune / module load
    reps: int | None = None  # products per timed burst
    bursts: int | None = None  # timed bursts per round
    clock: str = "events"
    host_bound: bool = False  # some burst may have made the GPU wait for the host
    round_seconds: list = field(default_factory=list)

    @classmethod
    def start(cls, point: Point, backend: str, clock: str = "events") -> "Result":
        s = point.shape
        return cls(s.label, point.dtype, point.layout, backend, precision=point.precision,
                   m=s.m, n=s.n, k=s.k, batch=s.batch, flops=s.flops, clock=clock)

    def mark(self, status: str, note: str) -> "Result":
        self.status = status
        self.note = f"{self.note}; {note}" if self.note else note
        return self


def save_json(path: Path, environment: dict, settings: dict, unavailable: dict,
              results: list[Result]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"environment": environment, "settings": settings, "unavailable": unavailable,
            "results": [asdict(r) for r in results]}
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str) + "\n")
    tmp.replace(path)
    return path


def load_json(path: Path) -> tuple[dict, dict, dict, list[Result]]:
    """(environment, settings, unavailable, results) of a saved run."""
    data = json.loads(Path(path).read_text())
    known = {f.name for f in fields(Result)}
    results = [Result(**{k: v for k, v in row.items() if k in known}) for row in data["results"]]
    return (data.get("environment", {}), data.get("settings", {}), data.get("unavailable", {}),
            results)


def save_csv(path: Path, results: list[Result]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    names = [f.name for f in fields(Result)]
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=names)
        writer.writeheader()
        for r in results:
            row = asdict(r)
            row["round_seconds"] = ";".join(f"{t:.6e}" if t is not None else ""
                                            for t in r.round_seconds)
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return path
