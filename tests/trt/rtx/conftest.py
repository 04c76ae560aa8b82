"""The TensorRT-RTX tier: NVIDIA's real TensorRT-RTX library (pip tensorrt-rtx, it builds engines on a CPU)
parses models exported with trt_kernels.onnx_export and builds engines holding our IPluginV3One plugins.
Every test under tests/trt/rtx is marked ``tensorrt_rtx`` here; they skip, with the reason, where
tensorrt_rtx or onnx is not installed. ``python -m pytest -m tensorrt_rtx`` runs it.

The tier's work is in child processes (see test_rtx_builder.py), independent of each other: queued at the
session's start to run in the background (tests/support.py, early jobs), or started together by the
``rtx_children`` fixture, and each test reads its own child's output."""

import importlib.util
import os
import pathlib
import sys

import pytest

from support import Job, early, early_jobs, mark_items_under

HERE = pathlib.Path(__file__).resolve().parent
MISSING = [m for m in ("tensorrt_rtx", "onnx", "onnxscript") if importlib.util.find_spec(m) is None]

# a fresh process without LD_LIBRARY_PATH: the bare name does not resolve until registering, which makes it
# resolve (a stub in the cache, loaded), to the one TensorRT-RTX library the bindings loaded
RESOLVES = ("import ctypes\nimport tensorrt_rtx as trt\nfrom trt_kernels.plugins import v3one\n"
            "def resolves():\n    try:\n        ctypes.CDLL('libtensorrt_rtx.so')\n        return True\n"
            "    except OSError:\n        return False\n"
            "print('BEFORE', resolves())\nv3one.register(trt)\nprint('AFTER', resolves())\n"
            "maps = open('/proc/self/maps').read().splitlines()\n"
            "print('COPIES', len({ln.split()[-1] for ln in maps if ln.endswith('libtensorrt_rtx.so.1')}))\n")
# where the name cannot be made to resolve (the wheel's library not found), registering raises
REFUSES = ("import tensorrt_rtx as trt\nfrom trt_kernels.plugins import rtx_lib, v3one\n"
           "rtx_lib.rtx_library = lambda: None\n"
           "try:\n    v3one.register(trt)\nexcept RuntimeError as e:\n    print('REFUSED', e)\n")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    mark_items_under(pathlib.Path(__file__).parent, items, pytest.mark.tensorrt_rtx)


def child(args, tmp, **extra_env):
    """``python args...`` with this machine's environment (its LD_LIBRARY_PATH left as it is), a cache of its
    own and the tests' helpers importable: a Job (tests/support.py), not started yet."""
    env = dict(os.environ, TRT_KERNELS_ARCH="sm_90", TRT_KERNELS_CACHE_DIR=str(tmp / "cache"),
               PYTHONPATH=os.pathsep.join([str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")]), **extra_env)
    return Job([sys.executable, *args], env=env)


CHILDREN = {"builder": [HERE / "rtx_child.py", "ttk_rtx"],
            "gallery": [HERE / "rtx_gallery_child.py", "ttk_rtx_gallery"],
            "written": [HERE / "rtx_written_child.py", "ttk_rtx_written"],
            "resolves": ["-c", RESOLVES],
            "refuses": ["-c", REFUSES],
            "onnx_route": [HERE.parents[2] / "examples" / "onnx_route.py"]}


def _children(tmp_path_factory):
    """{name: Job}: the tier's children, each with a folder of its own (its cache; examples/onnx_route.py's
    TMPDIR too, which must be empty after)."""
    if MISSING:
        return {}
    jobs = {}
    for name, args in CHILDREN.items():
        tmp = tmp_path_factory.mktemp(f"rtx_{name}")
        extra = {}
        if name == "onnx_route":
            (tmp / "tmp").mkdir()
            extra["TMPDIR"] = str(tmp / "tmp")
        jobs[name] = child(args, tmp, **extra)
        jobs[name].folder = tmp
    return jobs


early("rtx", HERE, "rtx_children", _children)  # queued at the session's start (tests/support.py)


class Children:
    """The tier's child processes: :meth:`run` waits for one, :meth:`result` reads the RESULT document a
    builder child printed, ``folders[name]`` is its folder."""

    def __init__(self, jobs):
        self.jobs = {name: j.start() for name, j in jobs.items()}
        self.folders = {name: j.folder for name, j in jobs.items()}

    def run(self, name, timeout=900):
        return self.jobs[name].result(timeout)

    def result(self, name):
        import json

        r = self.run(name)
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
        assert r.returncode == 0 and lines, f"child exited {r.returncode}:\n{r.stderr[-4000:]}"
        return json.loads(lines[-1][len("RESULT "):])


@pytest.fixture(scope="session")
def rtx_children(tmp_path_factory):
    """The tier's children (:class:`Children`): the seed cases' builds (rtx_child.py), the gallery's
    (rtx_gallery_child.py), the written sizes' (rtx_written_child.py), the two library-name checks and
    examples/onnx_route.py as written."""
    if MISSING:
        pytest.skip(f"{' and '.join(MISSING)} not installed (pip install 'trt-kernels[rtx]')")
    return Children(early_jobs("rtx", tmp_path_factory))
