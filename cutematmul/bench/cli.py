"""The command line: ``python -m cutematmul.bench [options]``, ``... host``, ``... startup``,
``... report FILE``.

    python -m cutematmul.bench                         # one shape per class, fp16/fp32, ~1-2 min
    python -m cutematmul.bench --full                  # every shape, dtype and backend, ~7 min
    python -m cutematmul.bench --shapes quick --dtypes fp16 --plot
    python -m cutematmul.bench --shapes 8192x8192x8192,64x1024x1024x1024 --layouts all
    python -m cutematmul.bench --backends cutematmul-torch,torch --kernel sm80 --markdown
    python -m cutematmul.bench --dtypes fp32 --precision tf32   # beside cuBLAS TF32 (torch-tf32)
    python -m cutematmul.bench --dtypes fp32 --precision high   # 3xTF32, beside SGEMM and TF32
    python -m cutematmul.bench host                    # host time per 64x64 call
    python -m cutematmul.bench host --shapes 64x64x64,595x851x545   # and an odd one (copies)
    python -m cutematmul.bench startup                 # 2 fresh processes: cold, then warm cache
    python -m cutematmul.bench startup --library torch --cache-dir /opt/cutematmul-cache
    python -m cutematmul.bench report results/bench-XXXX.json --markdown --plot
    python -m cutematmul.bench --list                  # which backends can run here, and why not

Without options it measures the ``default`` shapes (``shapes.SUITES``) in fp16 and fp32 with
``backends.DEFAULT_BACKENDS`` (cutematmul on CuPy arrays, cuBLAS through CuPy and PyTorch).
``--full`` measures the ``full`` suite (squares 256..16384, LLM-like, skinny, odd and batched
shapes) in every dtype with every backend, JAX included.  Options given explicitly win over both.

``--precision`` (highest, high or tf32) is passed as ``precision=`` to cutematmul on float32
points; 16-bit points ignore it.  With high or tf32 the default backends add ``torch-tf32``
(cuBLAS TF32), and at tf32 the float32 ratios are against it (``runner.BASELINES``); the table
says which precision and which cuBLAS.

Progress (a tqdm bar, or plain lines) goes to stderr; the table goes to stdout once every point is
measured.

``startup`` times ``import cutematmul`` and the first products in fresh processes, first with
an empty kernel cache, then with the cache the first one filled (``startup``'s docstring).

Exit status: 0, or 1 when a cutematmul result was wrong (or nothing could run; ``startup``: when
a child process failed), 130 when interrupted (the results so far are still written).

Imports: ``backends``, ``environment``, ``host``, ``report``, ``results``, ``runner``,
``shapes``, ``startup`` of this package; lazily ``plot`` (matplotlib) and ``tqdm``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from . import host as host_mode
from . import startup as startup_mode
from .backends import (BACKENDS, DEFAULT_BACKENDS, STAND_INS, TF32_BASELINE, default_backends,
                       get_backend, is_cutematmul)
from .environment import environment, header
from .report import markdown, render_markdown, render_table, summary_line, text_table
from .results import WRONG, Point, load_json, save_csv, save_json
from .runner import BASELINES, Settings, run_suite
from .shapes import (DEFAULT_DTYPES, LAYOUTS, PRECISIONS, SUITES, parse_dtypes, parse_layouts,
                     parse_shapes, point_precision)

KERNELS = ("auto", "sm90", "sm80", "simt")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _backend_names(spec: str) -> list[str]:
    if spec.strip().lower() == "all":
        return list(BACKENDS)
    names = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [n for n in names if n not in BACKENDS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown backend(s) {', '.join(unknown) or spec!r}; known: {', '.join(BACKENDS)}")
    return list(dict.fromkeys(names))


def _add_backend_options(p: argparse.ArgumentParser, default: list[str] | None) -> None:
    """``--backends`` and ``--kernel``; ``default`` None stands for the default selection."""
    what = "all" if default is not None else (
        f"{','.join(DEFAULT_BACKENDS)}, cutematmul-torch without CuPy, {TF32_BASELINE} beside them "
        "with --precision high/tf32; --full: all")
    p.add_argument("--backends", type=_backend_names, default=default,
                   help=f"comma-separated, or 'all' (default: {what}): {', '.join(BACKENDS)}")
    p.add_argument("--kernel", choices=KERNELS, default="auto",
                   help="kernel= passed to cutematmul.matmul (default auto)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m cutematmul.bench",
        description="cutematmul beside cuBLAS (CuPy, PyTorch) and XLA (JAX): same process, same "
                    "Gaussian data, CUDA-event timing in alternating rounds.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"named suites: {', '.join(SUITES)}; layouts: {', '.join(LAYOUTS)} "
               "(t = that operand passed as a transposed view).\n"
               "subcommands: 'host' (host time per small call), 'startup' (import and first "
               "products in fresh processes, cold and warm cache), 'report FILE.json' (re-render).")
    p.add_argument("--full", action="store_true",
                   help="the whole suite: --shapes full --dtypes all --backends all (about 7 "
                        "minutes on an H200); options given explicitly still win")
    p.add_argument("--shapes", default=None,
                   help="MxNxK or BxMxNxK shapes and suite names, comma-separated "
                        "(default: default, one shape per class; --full: full)")
    p.add_argument("--dtypes", default=None,
                   help="comma-separated: float16/fp16, bfloat16/bf16, float32/fp32, or all "
                        f"(default: {','.join(DEFAULT_DTYPES)}; --full: all)")
    p.add_argument("--layouts", default="nn",
                   help="comma-separated nn, tn, nt, tt, or all (default nn)")
    p.add_argument("--precision", choices=PRECISIONS, default="highest",
                   help="precision= passed to cutematmul on float32 points (16-bit points ignore "
                        "it): highest (IEEE fp32), high (3xTF32) or tf32; the float32 ratios are "
                        "against cuBLAS TF32 (torch-tf32) at tf32, SGEMM otherwise "
                        "(default highest)")
    _add_backend_options(p, None)
    p.add_argument("--reps", type=_positive_int, default=None,
                   help="products per timed burst (default: ~20 ms of GPU work, 1..100)")
    p.add_argument("--rounds", type=_positive_int, default=5, help="alternating rounds (default 5)")
    p.add_argument("--bursts", type=_positive_int, default=4,
                   help="timed bursts per backend per round; a round's time is their median "
                        "(default 4)")
    p.add_argument("--heat", type=float, default=0.5,
                   help="seconds of untimed load per point before the rounds (default 0.5)")
    p.add_argument("--check", action=argparse.BooleanOptionalAction, default=True,
                   help="check each result against a float64 reference (default on)")
    p.add_argument("--max-gb", type=float, default=40.0,
                   help="skip a point whose inputs need more device memory (default 40)")
    p.add_argument("--seed", type=int, default=0, help="seed of the first input set (default 0)")
    p.add_argument("--out", type=Path, default=Path("results"),
                   help="directory for the JSON, CSV and PNG (default results/)")
    p.add_argument("--plot", action="store_true", help="also write a PNG (needs matplotlib)")
    p.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="tqdm progress bar (default: when stderr is a terminal and tqdm is "
                        "installed)")
    p.add_argument("--list", action="store_true", help="list the backends and whether they can run")

    sub = p.add_subparsers(dest="command", metavar="{host,startup,report}")
    h = sub.add_parser("host", help="host time per call of a small product",
                       description=host_mode.__doc__)
    _add_backend_options(h, list(BACKENDS))
    h.add_argument("--dtypes", default="float16,float32",
                   help="comma-separated (default fp16, fp32)")
    h.add_argument("--shapes", default=host_mode.DEFAULT_SHAPE.label,
                   help="comma-separated MxNxK or BxMxNxK products (default "
                        f"{host_mode.DEFAULT_SHAPE.label}; an odd one such as 595x851x545 times "
                        "the operand prep's route)")
    h.add_argument("--calls", type=_positive_int, default=2000,
                   help="timed calls per round (default 2000)")
    h.add_argument("--repeats", type=_positive_int, default=5,
                   help="rounds, backends taking turns; the best is reported (default 5)")
    h.add_argument("--markdown", action="store_true", help="also print the table as Markdown")

    s = sub.add_parser("startup",
                       help="import and first products in fresh processes, cold and warm cache",
                       description=startup_mode.__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--library", choices=startup_mode.LIBRARIES, default="cupy",
                   help="the array library of the inputs (default cupy)")
    s.add_argument("--cache-dir", type=Path, default=None,
                   help="CUTEMATMUL_CACHE_DIR of both processes (default: a new empty temporary "
                        "directory, removed afterwards)")
    s.add_argument("--size", type=_positive_int, default=startup_mode.DEFAULT_SIZE,
                   help=f"M = N = K of every product (default {startup_mode.DEFAULT_SIZE})")

    r = sub.add_parser("report", help="print (and plot) a saved run's JSON")
    r.add_argument("file", type=Path, help="a bench-*.json written by a run")
    r.add_argument("--markdown", action="store_true", help="print Markdown instead of plain text")
    r.add_argument("--plot", nargs="?", const=True, default=None, metavar="PNG",
                   help="write a PNG (beside the JSON, or to PNG)")
    return p


def select_backends(names: list[str], kernel: str = "auto"):
    """(backends that can run here, {name: why not} for the others)."""
    ready, unavailable = [], {}
    for name in names:
        backend = (get_backend(name, kernel=kernel) if is_cutematmul(BACKENDS[name])
                   else get_backend(name))
        ok, why = backend.available()
        if ok:
            ready.append(backend)
        else:
            unavailable[name] = why
    return ready, unavailable


def select_default_backends(kernel: str = "auto", precision: str = "highest"):
    """``select_backends`` of ``default_backends(precision)``, with a stand-in for a default that
    cannot run."""
    ready, unavailable = select_backends(list(default_backends(precision)), kernel)
    for name, stand_in in STAND_INS:
        if name in unavailable:
            more, why_not = select_backends([stand_in], kernel)
            ready += more
            unavailable.update(why_not)
    return ready, unavailable


def run_choices(args) -> tuple[str, str]:
    """(shapes, dtypes) to parse: as given, else the full or the default suite's."""
    shapes = args.shapes or ("full" if args.full else "default")
    dtypes = args.dtypes or ("all" if args.full else ",".join(DEFAULT_DTYPES))
    return shapes, dtypes


def _run_backends(args):
    """(ready backends, {name: why not}) for a run: as given, all with --full, else the default."""
    if args.backends is not None:
        return select_backends(args.backends, args.kernel)
    if args.full:
        return select_backends(list(BACKENDS), args.kernel)
    return select_default_backends(args.kernel, args.precision)


def _print_unavailable(unavailable: dict) -> None:
    for name, why in unavailable.items():
        print(f"[bench] {name}: not run ({why})", file=sys.stderr)


def _print_precision(precision: str, names: list[str]) -> None:
    """Which float32 precision is measured, and against which cuBLAS (or that none runs)."""
    baseline = next((n for n in BASELINES[precision] if n in names), None)
    against = (f"x cuBLAS against {baseline}" if baseline else
               f"no x cuBLAS ratio: none of {', '.join(BASELINES[precision])} runs")
    print(f"[bench] float32 at precision={precision!r}, {against}", file=sys.stderr)


class Progress:
    """Progress on stderr: a tqdm bar when wanted (default: stderr is a terminal) and installed,
    else one plain line per point.  ``close()`` ends the bar, so that what follows on stdout (the
    table) starts on a line of its own."""

    def __init__(self, enabled: bool | None):
        if enabled is None:
            enabled = sys.stderr.isatty()
        self.tqdm = _tqdm() if enabled else None
        self.bar = None

    def wrap(self, points):
        """The points, iterated under a bar when there is one."""
        if self.tqdm is None:
            return points
        self.bar = self.tqdm(points, unit="point", dynamic_ncols=True, file=sys.stderr)
        return self.bar

    def write(self, line: str) -> None:
        """One line on stderr, above the bar if there is one."""
        if self.bar is not None:
            self.tqdm.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        sys.stderr.flush()


def _tqdm():
    """tqdm's class, or None when it is not installed (``pip install -e ".[bench]"`` brings it)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _list(names: list[str], kernel: str) -> int:
    ready, unavailable = select_backends(names, kernel)
    for b in ready:
        print(f"{b.name:18} ready        {b.description}")
    for name, why in unavailable.items():
        print(f"{name:18} unavailable  {why}")
    return 0


def _run(args, parser) -> int:
    shape_spec, dtype_spec = run_choices(args)
    try:
        shapes = parse_shapes(shape_spec)
        dtypes = parse_dtypes(dtype_spec)
        layouts = parse_layouts(args.layouts)
    except ValueError as exc:
        parser.error(str(exc))
    if args.list:
        return _list(args.backends or list(BACKENDS), args.kernel)
    backends, unavailable = _run_backends(args)
    _print_unavailable(unavailable)
    if not backends:
        print("[bench] no backend can run here; nothing measured.", file=sys.stderr)
        return 1
    settings = Settings(reps=args.reps, rounds=args.rounds, bursts=args.bursts, heat=args.heat,
                        check=args.check, max_gb=args.max_gb, seed=args.seed)
    points = [Point(s, d, lay, point_precision(d, args.precision))
              for d in dtypes for s in shapes for lay in layouts]
    env = environment()
    print(f"[bench] {header(env)}", file=sys.stderr)
    print(f"[bench] {len(points)} points x {', '.join(b.name for b in backends)}", file=sys.stderr)
    if "float32" in dtypes:
        _print_precision(args.precision, [b.name for b in backends])
    if not args.full and args.shapes is None:
        print("[bench] the default suite, one shape per class; --full measures every shape, dtype "
              "and backend", file=sys.stderr)
    stem = args.out / time.strftime("bench-%Y%m%d-%H%M%S")
    json_path, csv_path = stem.with_suffix(".json"), stem.with_suffix(".csv")
    run_settings = {**settings.to_dict(), "kernel": args.kernel, "precision": args.precision,
                    "shapes": shape_spec, "dtypes": dtypes, "layouts": layouts}
    progress = Progress(args.progress)
    done = []

    def on_point(point, rows):
        done.extend(rows)
        progress.write(f"[bench] {summary_line(rows)}")
        save_json(json_path, env, run_settings, unavailable, done)

    interrupted = False
    try:
        run_suite(points, backends, settings, progress=progress.wrap, on_point=on_point)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        progress.close()  # the bar ends before the table starts
    if interrupted:
        print("\n[bench] interrupted; writing the results so far.", file=sys.stderr)
    env = {**environment(), "date": env["date"]}  # now with the libraries' settings as used
    save_json(json_path, env, run_settings, unavailable, done)
    save_csv(csv_path, done)
    print(text_table(done))
    if args.markdown:
        print()
        print(markdown(done, env, unavailable))
    print(f"\n[bench] wrote {json_path} and {csv_path}", file=sys.stderr)
    if args.plot and done:
        _plot(done, stem.with_suffix(".png"), header(env))
    wrong = [r for r in done if r.status == WRONG and r.backend.startswith("cutematmul")]
    for r in wrong:
        print(f"[bench] WRONG RESULT: {r.backend} {r.shape} {r.dtype} {r.layout}: {r.note}",
              file=sys.stderr)
    return 130 if interrupted else (1 if wrong else 0)


def _plot(results, path: Path, title: str) -> None:
    try:
        from .plot import plot
    except ImportError as exc:  # matplotlib itself is imported inside plot()
        print(f"[bench] no plot: {exc}", file=sys.stderr)
        return
    try:
        print(f"[bench] wrote {plot(results, path, title)}", file=sys.stderr)
    except ImportError as exc:
        print(f"[bench] no plot: matplotlib is not installed ({exc})", file=sys.stderr)


def _host(args, parser) -> int:
    try:
        dtypes = parse_dtypes(args.dtypes)
    except ValueError as exc:
        parser.error(str(exc))
    backends, unavailable = select_backends(args.backends, args.kernel)
    _print_unavailable(unavailable)
    if not backends:
        print("[bench] no backend can run here; nothing measured.", file=sys.stderr)
        return 1
    env = environment()
    print(f"[bench] {header(env)}", file=sys.stderr)
    try:
        shapes = parse_shapes(args.shapes)
    except ValueError as exc:
        parser.error(str(exc))
    results = host_mode.measure_hosts(backends, dtypes, shapes, args.calls,
                                      repeats=args.repeats)
    table = host_mode.rows(results)
    print(render_table(host_mode.HEADERS, table, {"host us/call"}))
    if args.markdown:
        print(f"\nMeasured {header(env)}.\n")
        print(render_markdown(host_mode.HEADERS, table, {"host us/call"}))
    return 0


def _startup(args, parser) -> int:
    if args.cache_dir is not None:
        try:
            startup_mode.cache_directory(args.cache_dir)
        except ValueError as exc:
            parser.error(str(exc))
    return startup_mode.run(args.library, args.cache_dir, args.size)


def _report(args, parser) -> int:
    try:
        env, _settings, unavailable, results = load_json(args.file)
    except (OSError, ValueError, KeyError) as exc:
        parser.error(f"cannot read {args.file}: {exc}")
    print(markdown(results, env, unavailable) if args.markdown else text_table(results))
    if args.plot:
        path = args.file.with_suffix(".png") if args.plot is True else Path(args.plot)
        _plot(results, path, header(env))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "host":
        return _host(args, parser)
    if args.command == "startup":
        return _startup(args, parser)
    if args.command == "report":
        return _report(args, parser)
    return _run(args, parser)
