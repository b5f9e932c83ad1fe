"""The package's layering, read from the source: every module's docstring says what of ours it
may import (an ``Imports:`` paragraph), every module of ours it imports, at module level or
inside a function, is named there, and the module-level imports between our modules form no
cycle (so any module can be imported first)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Where each package of ours lives (pyproject's package-dir maps ``cutematmul.adapters``).
PACKAGES = {"": ROOT / "cutematmul", "adapters": ROOT / "adapters"}


def _modules() -> dict[str, Path]:
    """Dotted name below ``cutematmul`` (``configs.sm90``, ``adapters.cupy``, ``__init__``)
    -> path."""
    found = {}
    for prefix, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            found[".".join(((prefix,) if prefix else ()) + parts)] = path
    return found


MODULES = _modules()


def _package_of(name: str) -> list[str]:
    """The package a module's relative imports start from."""
    return name.split(".")[:-1]


def _ours(dotted: str) -> str | None:
    """``cutematmul.x.y`` -> ``x.y`` (a module or package of ours), else None."""
    if dotted == "cutematmul":
        return "cutematmul"
    if dotted.startswith("cutematmul."):
        return dotted[len("cutematmul."):]
    return None


def _is_module(name: str) -> bool:
    return name in MODULES or f"{name}.__init__" in MODULES


def imports_of(name: str) -> dict[str, bool]:
    """Our modules that ``name`` imports -> whether at module level (not inside a function)."""
    found: dict[str, bool] = {}

    def add(target: str | None, top: bool):
        if target is not None and target not in (name, name.removesuffix(".__init__")):
            found[target] = found.get(target, False) or top

    def visit(node, top: bool):
        for child in ast.iter_child_nodes(node):
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                   ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    add(_ours(alias.name), inner)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    package = _package_of(name)[:len(_package_of(name)) - child.level + 1]
                    base = ".".join(package + ([child.module] if child.module else []))
                else:
                    base = _ours(child.module or "")
                    if base == "cutematmul":
                        base = ""
                    elif base is None:
                        continue
                # ``from .configs import sm90`` imports a module; ``from .plan import x``
                # names of one.
                subs = [f"{base}.{alias.name}" if base else alias.name for alias in child.names]
                subs = [sub for sub in subs if _is_module(sub)]
                for target in subs or ([base] if base else []):
                    add(target, inner)
            else:
                visit(child, inner)

    visit(ast.parse(MODULES[name].read_text()), True)
    return found


def declared(name: str) -> str | None:
    """The module docstring's ``Imports:`` paragraph (up to the next blank line), or None."""
    doc = ast.get_docstring(ast.parse(MODULES[name].read_text())) or ""
    match = re.search(r"^Imports:(.*?)(?:\n\s*\n|\Z)", doc, re.S | re.M)
    return match.group(1) if match else None


def named(target: str, paragraph: str, name: str) -> bool:
    """Whether ``paragraph`` names ``target``: as it is (``cutematmul.`` optional), by its last
    part where it is a sibling of ``name``, through a parent package, or ``parent.*``."""
    tokens = {t.removeprefix("cutematmul.") for t in re.findall(r"``([\w.*]+)``", paragraph)}
    siblings = _package_of(name) == _package_of(target)
    return any(token == target
               or (siblings and token == target.rsplit(".", 1)[-1])
               or target.startswith(token.removesuffix("*") if token.endswith(".*")
                                    else token + ".")
               for token in tokens)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_says_what_of_ours_it_imports(name):
    paragraph = declared(name)
    assert paragraph is not None, f"{MODULES[name]}: no 'Imports:' paragraph in its docstring"
    missing = sorted(t for t in imports_of(name) if not named(t, paragraph, name))
    assert not missing, f"{MODULES[name]} imports {missing}, which its 'Imports:' does not name"


def test_module_level_imports_form_no_cycle():
    graph = {name.removesuffix(".__init__"): [t for t, top in imports_of(name).items() if top]
             for name in MODULES}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def walk(node, path):
        if state.get(node) == 1:
            cycle = path[path.index(node):] + [node]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        if state.get(node) == 2:
            return
        state[node] = 1
        for nxt in graph.get(node, ()):
            walk(nxt, path + [node])
        state[node] = 2

    for node in sorted(graph):
        walk(node, [])


def test_the_reader_finds_what_a_module_imports():
    # Relative, absolute and package imports, lazily or at module level.
    sm90 = imports_of("configs.sm90")
    assert sm90["configs.waves"] is True and sm90["plan"] is True
    assert imports_of("kernels.sm90_hgemm")["configs.sm90"] is True
    assert imports_of("kernels.simt_sgemm")["kernels.simt_gemv"] is False  # inside a function
    assert imports_of("adapters.dlpack")["dlpack"] is True  # ``from cutematmul import device``
    assert named("configs.sm90", "``configs.*`` lazily", "dispatch")
    assert named("bench.timing", "``timing``", "bench.runner")
    assert not named("bench.timing", "``timing``", "launch")
