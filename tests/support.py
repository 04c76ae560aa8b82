"""Helpers the tests import (``from support import ...``), from every folder under tests/: tests/ is on
``sys.path`` because pytest imports tests/conftest.py in its default (prepend) import mode.

They are not in conftest.py because each tier folder has its own conftest.py, and pytest imports
each of those as the module ``conftest`` too: ``from conftest import ...`` would get whichever was
imported last. Shared fixtures stay in tests/conftest.py; shared kernels and specs are in
kernels.py, Triton ones in triton_kernels.py, the emulated tier's helpers in emulated.py."""

import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def counting_compile_cache(root, monkeypatch):
    """Point the compile cache at ``root`` (enabled, empty memo) and count NVRTC compiles: returns the
    list that receives the source of every compile from now on."""
    from trt_kernels.sources import nvrtc as comp

    monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(root))
    monkeypatch.delenv("TRT_KERNELS_CACHE", raising=False)
    comp._MEMO.clear()
    calls = []
    real = comp._nvrtc_compile

    def counting(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(comp, "_nvrtc_compile", counting)
    return calls


def load_example(name: str):
    """Import examples/<name>.py once (``name`` may be a path below examples/, e.g. ``gallery/declare``)."""
    mod_name = "_ttk_example_" + name.replace("/", "_")
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod
    spec.loader.exec_module(mod)
    return mod


def mark_items_under(folder, items, *marks):
    """Add ``marks`` to every collected test whose file is under ``folder``. A tier folder's conftest.py
    calls this from its ``pytest_collection_modifyitems`` (tryfirst, so that tests/conftest.py's hook, which
    turns ``gpu`` into a skip without CUDA and runs ``trt_emulated`` last, and ``-m`` see the marks): that
    is how the folder sets its marker once. (``pytestmark`` in a conftest.py marks nothing.)"""
    folder = pathlib.Path(folder).resolve()
    for item in items:
        if pathlib.Path(item.path).resolve().is_relative_to(folder):
            for mark in marks:
                item.add_marker(mark)
