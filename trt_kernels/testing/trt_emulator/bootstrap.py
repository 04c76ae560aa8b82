"""Assemble an importable ``tensorrt`` package from NVIDIA's pure-Python files and the emulator.

The ``tensorrt-cu13-bindings`` wheel installs ``tensorrt_bindings/``: NVIDIA's ``__init__.py``
(``from .tensorrt import *`` of the native module, plus ``Logger`` severity aliases,
``volume``, ``nptype``, ``DataType.itemsize``), the pure-Python QDP package ``plugin/``, and
the native ``tensorrt.so``, which needs libnvinfer and cannot load here. :func:`load` runs
NVIDIA's ``__init__.py`` unmodified as the package ``tensorrt`` with this emulator registered
as its native submodule ``tensorrt.tensorrt``; ``tensorrt.plugin`` is then NVIDIA's own.

Standard library only, and never ``trt_kernels``: the shim package
``trt_kernels/testing/shim/tensorrt`` (put its parent folder on ``PYTHONPATH``) calls
:func:`install` so that a fresh process that never imports ``trt_kernels`` can
``import tensorrt`` and run an emulated engine.
"""

import importlib.util
import os
import pathlib
import re
import sys
import tempfile
import types
import zipfile
from typing import Optional, Tuple

BINDINGS_DIST = "tensorrt-cu13-bindings"
#: the version the ``test`` extra pins (Torch-TensorRT 2.13's, for CI's torch 2.13)
BINDINGS_VERSION = "11.0.0.114"
INSTALL_HINT = f"pip install --no-deps {BINDINGS_DIST}=={BINDINGS_VERSION}"
#: a folder holding ``plugin/__init__.py`` (an unzipped wheel's ``tensorrt_bindings``, or its
#: parent), or the ``.whl`` file itself; otherwise the installed ``tensorrt_bindings`` is used
ENV_VAR = "TRT_STANDIN_BINDINGS"
EMULATED = "libnvinfer emulated by trt_kernels.testing (not TensorRT)"
HERE = pathlib.Path(__file__).resolve().parent


def _extract_wheel(whl: pathlib.Path) -> pathlib.Path:
    cache = pathlib.Path(tempfile.gettempdir()) / f"trt_kernels_bindings_{whl.stem}"
    root = cache / "tensorrt_bindings"
    if not (root / "plugin" / "__init__.py").is_file() or not (root / "__init__.py").is_file():
        with zipfile.ZipFile(whl) as zf:
            for member in zf.namelist():
                if member.startswith("tensorrt_bindings/") and member.endswith(".py"):
                    zf.extract(member, cache)
    return root


def find_bindings_dir() -> Tuple[Optional[pathlib.Path], str]:
    """``(folder holding NVIDIA's __init__.py and plugin/, "")`` or ``(None, why not)``.

    Never imports ``tensorrt_bindings`` (its ``__init__`` loads the native library)."""
    override = os.environ.get(ENV_VAR)
    if override:
        p = pathlib.Path(override)
        if p.is_file() and p.suffix == ".whl":
            p = _extract_wheel(p)
        for cand in (p, p / "tensorrt_bindings"):
            if (cand / "plugin" / "__init__.py").is_file() and (cand / "__init__.py").is_file():
                return cand, ""
        return None, f"{ENV_VAR}={override!r} holds no tensorrt_bindings/__init__.py with plugin/"
    try:
        spec = importlib.util.find_spec("tensorrt_bindings")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None, f"the TensorRT bindings wheel is not installed ({INSTALL_HINT})"
    for loc in spec.submodule_search_locations:
        loc = pathlib.Path(loc)
        if (loc / "plugin" / "__init__.py").is_file() and (loc / "__init__.py").is_file():
            return loc, ""
    return None, "tensorrt_bindings is installed but has no plugin/ package"


#: the TensorRT lines the emulator models (see _version.py): a bindings wheel of another version is refused
MODELED = ("10.15", "11")
_VERSION_RE = re.compile(r"""^__version__\s*=\s*["']([0-9][0-9.a-z]*)["']""", re.M)


def bindings_version(bindings: pathlib.Path) -> str:
    """The ``__version__`` NVIDIA's ``__init__.py`` declares, read from its text (not imported)."""
    m = _VERSION_RE.search((bindings / "__init__.py").read_text(encoding="utf-8", errors="replace"))
    return m.group(1) if m else ""


def modeled(version: str) -> bool:
    parts = version.split(".")
    return len(parts) >= 2 and (f"{parts[0]}.{parts[1]}" in MODELED or parts[0] in MODELED)


def load() -> types.ModuleType:
    """Build ``tensorrt`` (NVIDIA's package over the emulated native module) into ``sys.modules``.

    Any ``tensorrt`` / ``tensorrt.*`` already there must have been removed by the caller.
    Raises ``ImportError`` (with the reason) when the bindings wheel cannot be found."""
    if any(k == "tensorrt" or k.startswith("tensorrt.") for k in sys.modules):
        raise RuntimeError("a tensorrt module is already imported in this process")
    bindings, reason = find_bindings_dir()
    if bindings is None:
        raise ImportError(f"cannot emulate TensorRT: {reason}")
    version = bindings_version(bindings)
    if not modeled(version):
        raise ImportError(f"cannot emulate TensorRT {version or '(unknown version)'} from {bindings}: "
                          "the emulator models TensorRT 10.15.x and 11.x "
                          "(the versions Torch-TensorRT 2.11 and 2.13/2.14 require)")
    try:
        pspec = importlib.util.spec_from_file_location("tensorrt", bindings / "__init__.py",
                                                       submodule_search_locations=[str(bindings)])
        pkg = importlib.util.module_from_spec(pspec)
        sys.modules["tensorrt"] = pkg  # the parent must exist while its native submodule loads
        nspec = importlib.util.spec_from_file_location("tensorrt.tensorrt", HERE / "__init__.py",
                                                       submodule_search_locations=[str(HERE)])
        native = importlib.util.module_from_spec(nspec)
        native._EMULATED_VERSION = version  # read by the emulator's _version module as it is imported
        sys.modules["tensorrt.tensorrt"] = native
        nspec.loader.exec_module(native)
        pspec.loader.exec_module(pkg)  # NVIDIA's __init__: "from .tensorrt import *" finds the emulator
        pkg.tensorrt = native
        pkg.__emulated__ = f"libnvinfer emulated (TensorRT {version} Python API) by trt_kernels.testing, not TensorRT"
        pkg.__getattr__ = native.__getattr__  # a missing name: does the emulated version lack it, or the emulator?
        return pkg
    except BaseException:
        for k in [k for k in sys.modules if k == "tensorrt" or k.startswith("tensorrt.")]:
            del sys.modules[k]
        raise


def install() -> types.ModuleType:
    """``import tensorrt`` gives the emulator from now on, in this process (used by the shim)."""
    mod = sys.modules.get("tensorrt")
    if mod is not None:
        return mod
    return load()
