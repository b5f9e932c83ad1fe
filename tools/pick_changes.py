"""The shape-class products whose planned schedule differs between two builds (no GPU).

    python tools/pick_changes.py BASE [HEAD] [--seed 1000-1100] [--only skinnyM,decode]
                                 > moved.cases

BASE and HEAD are git revisions of this repository (HEAD omitted: the working tree as it is).
Each revision's ``cutematmul`` is exported (``git archive``) into a temporary directory, and
this checkout's ``tools/shape_classes.py --list --plans`` plans the selected class products
with it, in a Python process of its own that imports that tree's ``cutematmul`` (checked), so
an older revision is planned by the same tool.
The products whose schedule differs are printed in ``--cases`` format, both schedules in the
comment (``# BASE's -> HEAD's``), and the count on stderr: the set a schedule change should be
timed on (``tools/shape_classes.py --cases moved.cases`` under each build, alternating, on the
GPU), found before any GPU time is spent.  Plans are the wave model's for an sm_90a GPU of 132
SMs (``shape_classes.planned``).  Imports: nothing of ``cutematmul`` itself (each tree's runs
in its own process).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The child process: import the tree's ``cutematmul`` (not an installed one), check where it
#: came from, then run this checkout's ``shape_classes`` with the given arguments.
_CHILD = """
import sys
tree, tools = sys.argv[1:3]
sys.path[:0] = [tree, tools]
import cutematmul
if not cutematmul.__file__.startswith(tree):
    sys.exit(f"pick_changes: imported cutematmul from {cutematmul.__file__}, not from {tree}")
import shape_classes
shape_classes.main(sys.argv[3:])
"""


def export(revision: str, into: Path) -> Path:
    """``revision``'s ``cutematmul`` (with its adapters) under ``into``."""
    into.mkdir(parents=True)
    archive = into / "tree.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), revision,
                    "cutematmul", "adapters"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    archive.unlink()
    return into


def shape_classes(tree: Path, argv: list[str], **env: str) -> subprocess.CompletedProcess:
    """This checkout's ``tools/shape_classes.py`` run with ``argv`` on ``tree``'s
    ``cutematmul``, in a process of its own (``env`` added to this one's environment); its
    output captured, an error raised when it fails."""
    env = {**os.environ, "PYTHONPATH": "", **env}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(tree), str(ROOT / "tools"), *argv],
                         capture_output=True, text=True, env=env, cwd=tree)
    if out.returncode:
        raise RuntimeError(f"shape_classes {' '.join(argv)} on {tree} failed:\n{out.stderr}")
    return out


def plans(tree: Path, selection: list[str]) -> list[tuple[str, str]]:
    """(product, schedule) of each selected product as ``tree`` plans it."""
    out = shape_classes(tree, ["--list", "--plans", *selection], CUDA_VISIBLE_DEVICES="")
    return [tuple(part.strip() for part in line.split("#", 1))
            for line in out.stdout.splitlines()]


def changes(base: list[tuple[str, str]], head: list[tuple[str, str]]) -> list[str]:
    """``--cases`` lines of the products whose schedule differs, both schedules in a comment."""
    if [product for product, _ in base] != [product for product, _ in head]:
        raise RuntimeError("the two trees drew different products (cutematmul.classes changed); "
                           "compare them with --cases FILE instead")
    return [f"{product}  # {old} -> {new}"
            for (product, old), (_, new) in zip(base, head) if old != new]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="a git revision")
    parser.add_argument("head", nargs="?", help="a git revision (default: the working tree)")
    parser.add_argument("--seed", default="1000-1100",
                        help="a seed or LO-HI (shape_classes --seed; default 1000-1100)")
    parser.add_argument("--only", default="", help="comma-separated classes (default: all)")
    parser.add_argument("--cases", metavar="FILE", help="products listed in FILE, not draws")
    args = parser.parse_args(argv)
    selection = (["--cases", str(Path(args.cases).resolve())] if args.cases
                 else ["--seed", args.seed]) + (["--only", args.only] if args.only else [])
    with tempfile.TemporaryDirectory(prefix="pick_changes-") as scratch:
        base = plans(export(args.base, Path(scratch) / "base"), selection)
        head = plans(export(args.head, Path(scratch) / "head") if args.head else ROOT, selection)
    moved = changes(base, head)
    print("\n".join(moved))
    print(f"{len(moved)} of {len(base)} products change schedule", file=sys.stderr)


if __name__ == "__main__":
    main()
