"""``python -m cutematmul``: pre-build the kernel cache, and inspect or clear it.

    python -m cutematmul precompile [default] [--arch sm_90a] [--dtypes ...] [--precisions ...]
                                    [--layouts ...]
                                    [--alignments contiguous|aligned|all] [--families ...]
                                    [--shapes ...]
                                    [--jax]
                                    [--num-sms N] [--jobs N] [--cache-dir DIR] [--dry-run]
    python -m cutematmul info [--cache-dir DIR]
    python -m cutematmul clear [--cache-dir DIR]

Imports: ``aot``, ``cache`` (neither imports the DSL in this process); lazily ``dispatch`` (the
family names, for ``--families``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import aot, cache


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.cache_dir:
        os.environ["CUTEMATMUL_CACHE_DIR"] = args.cache_dir
    return {"precompile": _precompile, "info": _info, "clear": _clear}[args.command](args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m cutematmul",
        description="Pre-build, inspect or clear cutematmul's cache of compiled kernels.")
    commands = parser.add_subparsers(dest="command", required=True)
    pre = commands.add_parser(
        "precompile", help="compile kernels into the cache directory (no GPU needed)",
        description="Compile the named configurations, or the default set (what the dispatcher "
                    "picks for a spread of problem shapes), into the cache directory. Options "
                    "not given keep the default set's choice. Works without a GPU.")
    pre.add_argument("what", nargs="?", choices=["default"], default="default",
                     help="the default set (narrowed by the options below)")
    pre.add_argument("--arch", action="append", metavar="SM",
                     help="target, repeatable or comma-separated "
                          "(default: this GPU's, else sm_90a)")
    pre.add_argument("--dtypes", metavar="LIST",
                     help=f"comma-separated, of {', '.join(aot.DTYPES)}")
    pre.add_argument("--precisions", metavar="LIST",
                     help="float32 modes, comma-separated, of highest, high, tf32 "
                          "(default: highest)")
    pre.add_argument("--layouts", metavar="LIST",
                     help=f"operand majors of A and B, of {', '.join(aot.LAYOUTS)} or 'all' "
                          "(default: all; 'kn' = row-major A @ row-major B)")
    pre.add_argument("--alignments", choices=list(aot.ALIGNMENTS), default="contiguous",
                     help="contiguous: each shape's operands contiguous in each layout, as a "
                          "call launches them (default); aligned: rows of whole 16-byte vectors; "
                          "all: every alignment mix (operands aligned to one element too)")
    pre.add_argument("--families", metavar="LIST",
                     help="comma-separated families, or 'all' (default: the dispatcher's choice)")
    pre.add_argument("--shapes", metavar="LIST",
                     help="problems MxNxK[xBATCH], comma-separated, whose tile choices to build "
                          "(default: a spread of squares, skinny and batched products and the "
                          "shape classes' draws, cutematmul/classes.py)")
    pre.add_argument("--jax", action="store_true",
                     help="also the objects jitted JAX calls embed (the XLA route; needs jax)")
    pre.add_argument("--num-sms", type=int, metavar="N",
                     help="SM count of the target GPU (default: this GPU's, else 132 for "
                          "sm_90a, 108 for sm_80)")
    pre.add_argument("--jobs", type=int, metavar="N", help="worker processes (default: CPU count)")
    pre.add_argument("--dry-run", action="store_true", help="list the keys, build nothing")
    pre.add_argument("--quiet", action="store_true", help="no progress output")
    for sub in (pre, commands.add_parser("info", help="print cache_info() as JSON"),
                commands.add_parser("clear", help="delete the cache directory's kernels")):
        sub.add_argument("--cache-dir", metavar="DIR",
                         help="cache directory "
                              "(default: $CUTEMATMUL_CACHE_DIR or the user cache dir)")
    return parser


def _selection(args) -> dict:
    return dict(
        archs=tuple(_split(args.arch)) or (aot.default_arch(),),
        dtypes=_checked(_split(args.dtypes), aot.DTYPES, "--dtypes") or None,
        precisions=_checked(_split(args.precisions), tuple(aot.PRECISIONS), "--precisions")
        or None,
        layouts=_checked(_split(args.layouts, all_of=aot.LAYOUTS), aot.LAYOUTS, "--layouts")
        or None,
        alignments=args.alignments,
        families=_families(args.families),
        shapes=tuple(_shape(s) for s in _split(args.shapes)) or None,
        num_sms=args.num_sms,
        jax=args.jax,
    )


def _split(value, all_of=()) -> list[str]:
    items = value if isinstance(value, list) else [value] if value else []
    parts = [p.strip() for item in items for p in item.split(",") if p.strip()]
    return list(all_of) if parts == ["all"] and all_of else parts


def _checked(values: list[str], allowed, option: str) -> tuple[str, ...]:
    for value in values:
        if value not in allowed:
            raise SystemExit(f"{option}: expected one of {', '.join(allowed)}; got {value!r}.")
    return tuple(values)


def _families(value):
    from .dispatch import FAMILIES

    names = _split(value, all_of=FAMILIES)
    return _checked(names, tuple(FAMILIES), "--families") or None


def _shape(text: str) -> tuple[int, int, int, int]:
    parts = text.lower().split("x")
    if len(parts) not in (3, 4) or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise SystemExit(
            f"--shapes: expected MxNxK or MxNxKxBATCH with positive sizes; got {text!r}.")
    m, n, k, *batch = map(int, parts)
    return m, n, k, batch[0] if batch else 1


def _precompile(args) -> int:
    selection = _selection(args)
    if not args.quiet:  # listing the default set plans thousands of calls: 10-30 s
        shapes = selection["shapes"] or aot.default_shapes()
        print(f"precompile: planning {_count(len(shapes), 'shape')} in each dtype and layout...",
              file=sys.stderr, flush=True)
    if args.dry_run:
        keys = aot.build_list(aot.Selection(**selection), aot.cache.cache_dir())
        for key in keys:
            print(repr(key))
        print(_count(len(keys), "kernel"), file=sys.stderr)
        return 0
    report = aot.precompile(jobs=args.jobs, progress=not args.quiet, **selection)
    print(f"precompile: {_count(report.keys, 'kernel')} for {', '.join(selection['archs'])} in "
          f"{report.directory}: {report.built} built, {report.present} already there, "
          f"{len(report.failed)} failed; {report.seconds:.0f} s "
          f"({report.compile_seconds:.0f} s of compiling).")
    for key, error in report.failed:
        print(f"  failed: {key}\n    {error}", file=sys.stderr)
    return 1 if report.failed else 0


def _info(args) -> int:
    cache.unwritable_reason()  # judge the directory, so its state is reported
    info = cache.cache_info()
    for tier in ("memory", "jax"):
        info[tier]["keys"] = [repr(k) for k in info[tier]["keys"]]
    print(json.dumps(info, indent=1))
    return 0


def _clear(args) -> int:
    before = cache.cache_info()["disk"]
    cache.cache_clear(disk=True)
    print(f"removed {_count(before['entries'], 'kernel')} ({before['bytes']} bytes) from "
          f"{before['directory']}.")
    return 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


if __name__ == "__main__":
    sys.exit(main())
