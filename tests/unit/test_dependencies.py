"""What the examples, benchmarks and tests import is what ``pip install -e ".[test]"`` installs.

A GPU machine with extras preinstalled (cuda-core, CuPy, triton) hides a missing dependency
that a user's fresh install exposes: ``examples/cuda_kernel_op.py`` once imported
``cuda.core`` while the package did not depend on it. So every import that is not guarded
by ``try: ... except ImportError`` is (1) imported here, with the names taken from it, and
(2) traced to the distribution that installs it, which must be in the requirement closure
of ``trt-kernels[test]``. Modules of the optional ``tensorrt`` extra (which cannot be
installed on this project's machines) must be declared there instead.
"""

import ast
import importlib
import importlib.metadata as md
import importlib.util
import pathlib
from typing import Dict, List, Optional, Set, Tuple

import pytest
from packaging.requirements import Requirement

from support import ROOT

SCANNED = ("examples", "benchmarks", "tests")
#: top-level modules that come only with an optional extra: (distribution, extra)
OPTIONAL = {"tensorrt": ("tensorrt", "tensorrt"), "torch_tensorrt": ("torch-tensorrt", "tensorrt"),
            "triton": ("triton", "triton"), "tensorrt_rtx": ("tensorrt-rtx", "rtx"),
            "tensorrt_rtx_libs": ("tensorrt-rtx", "rtx"), "onnx": ("onnx", "onnx"),
            "onnxscript": ("onnxscript", "onnx")}
GUARDS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def _guarded(handlers) -> bool:
    for h in handlers:
        if h.type is None:
            return True
        names = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
        if any(isinstance(n, ast.Name) and n.id in GUARDS for n in names):
            return True
    return False


def unconditional_imports(path: pathlib.Path) -> List[Tuple[str, Tuple[str, ...], int]]:
    """``(module, names taken from it, line)`` for each import not inside a guarding ``try``."""
    out = []

    def visit(node, guarded):
        if isinstance(node, ast.Try):
            inner = guarded or _guarded(node.handlers)
            for child in node.body:
                visit(child, inner)
            for child in node.handlers + node.orelse + node.finalbody:
                visit(child, guarded)
            return
        if not guarded:
            if isinstance(node, ast.Import):
                out.extend((a.name, (), node.lineno) for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module != "__future__":
                out.append((node.module, tuple(a.name for a in node.names), node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(ast.parse(path.read_text(), str(path)), False)
    return out


def _is_local(module: str, path: pathlib.Path) -> bool:
    top = module.split(".")[0]
    if top == "trt_kernels":
        return True
    folders = (path.parent, ROOT / "examples", ROOT / "benchmarks", ROOT / "tests")
    return any((d / f"{top}.py").is_file() for d in folders)


def _sources():
    for folder in SCANNED:
        yield from sorted((ROOT / folder).rglob("*.py"))


def required_imports() -> Dict[str, List[str]]:
    """module -> ["file:line (names)"] for every unconditional, non-local, non-stdlib import."""
    import sys

    found: Dict[str, List[str]] = {}
    for path in _sources():
        for module, names, line in unconditional_imports(path):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or _is_local(module, path) or top in OPTIONAL:
                continue
            found.setdefault(module, []).append((f"{path.relative_to(ROOT)}:{line}", names))
    return found


def test_scanner_sees_guards_and_function_level_imports(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        "import a\n"
        "try:\n    import b\nexcept ImportError:\n    b = None\n"
        "try:\n    import c\nexcept ValueError:\n    pass\n"
        "def f():\n    from d.e import g, h\n"
        "from __future__ import annotations\n"
    )
    mods = {m: names for m, names, _ in unconditional_imports(src)}
    assert mods == {"a": (), "c": (), "d.e": ("g", "h")}


def test_every_unconditional_import_works():
    problems = []
    for module, uses in sorted(required_imports().items()):
        try:
            mod = importlib.import_module(module)
        except Exception as e:  # noqa: BLE001 - report every failure at once
            problems.append(f"{module} ({uses[0][0]}): {type(e).__name__}: {e}")
            continue
        for where, names in uses:
            for n in names:
                if not hasattr(mod, n) and importlib.util.find_spec(f"{module}.{n}") is None:
                    problems.append(f"{where}: {module} has no {n!r}")
    assert not problems, "imports that a fresh install of trt-kernels[test] lacks:\n" + "\n".join(problems)


def _distribution_of(module: str, owners: Dict[pathlib.Path, str]) -> Optional[str]:
    spec = importlib.util.find_spec(module)
    if spec is None:
        return "(not installed)"
    origin = spec.origin if spec.origin not in (None, "namespace") else None
    if origin is None and spec.submodule_search_locations:
        origin = str(pathlib.Path(list(spec.submodule_search_locations)[0]) / "__init__.py")
    p = pathlib.Path(origin).resolve()
    for candidate in (p, *p.parents):
        if candidate in owners:
            return owners[candidate]
    return None


def _owners() -> Dict[pathlib.Path, str]:
    """Installed file (and its package folders) -> distribution name."""
    owners: Dict[pathlib.Path, str] = {}
    for dist in md.distributions():
        name = dist.metadata["Name"]
        for f in dist.files or ():
            if f.suffix in (".py", ".so", ".pyd") or f.name == "__init__.py":
                loc = pathlib.Path(dist.locate_file(f)).resolve()
                owners.setdefault(loc, name)
                owners.setdefault(loc.parent, name)
    return owners


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def requirement_closure(dist: str, extras: Set[str]) -> Tuple[Set[str], List[str]]:
    """Normalized names of ``dist[extras]`` and everything it requires, transitively; and the
    declared requirements that are not installed (their own requirements are then unknown)."""
    seen, missing = set(), []
    todo = [(dist, frozenset(extras))]
    while todo:
        name, ex = todo.pop()
        if _norm(name) in seen:
            continue
        seen.add(_norm(name))
        try:
            reqs = md.requires(name) or []
        except md.PackageNotFoundError:
            missing.append(name)
            continue
        for r in map(Requirement, reqs):
            envs = [{"extra": e} for e in ex] or [{"extra": ""}]
            if r.marker is None or any(r.marker.evaluate(e) for e in envs):
                todo.append((r.name, frozenset(r.extras)))
    return seen, missing


def test_every_imported_distribution_is_declared():
    closure, missing = requirement_closure("trt-kernels", {"test"})
    if missing:
        pytest.skip(f"declared requirements not installed here ({', '.join(sorted(missing))}), "
                    "so their own requirements cannot be read; CI installs them all")
    owners = _owners()
    undeclared = []
    for module, uses in sorted(required_imports().items()):
        dist = _distribution_of(module, owners)
        if dist is None or _norm(dist) == "trt-kernels":
            continue
        if _norm(dist) not in closure:
            undeclared.append(f"{module} (from {dist}, imported at {uses[0][0]})")
    assert not undeclared, ("imported but not required by trt-kernels[test] (add them to pyproject.toml):\n"
                            + "\n".join(undeclared))


def test_optional_modules_belong_to_their_extra():
    reqs = [Requirement(r) for r in md.requires("trt-kernels") or []]
    for module, (dist, extra) in OPTIONAL.items():
        assert any(_norm(r.name) == dist and r.marker is not None and r.marker.evaluate({"extra": extra})
                   for r in reqs), f"{module} is imported by tests/examples but not declared in the {extra!r} extra"
