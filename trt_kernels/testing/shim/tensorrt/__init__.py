"""``import tensorrt`` -> TensorRT's Python package over trt_kernels' emulated libnvinfer.

For processes that must not import ``trt_kernels`` (e.g. reloading an AOT engine to show that
it needs nothing but the engine bytes): put this file's grandparent folder
(``trt_kernels.testing.SHIM_PATH``) first on ``PYTHONPATH``. Needs the
``tensorrt-cu13-bindings`` wheel (NVIDIA's pure-Python parts of TensorRT's bindings).
"""

import importlib.util as _util
import pathlib as _pathlib
import sys as _sys

_path = _pathlib.Path(__file__).resolve().parents[2] / "trt_emulator" / "bootstrap.py"
_spec = _util.spec_from_file_location("_trt_kernels_emulator_bootstrap", _path)
_boot = _util.module_from_spec(_spec)
_spec.loader.exec_module(_boot)
del _sys.modules["tensorrt"]  # this shim: the package built below takes its place
_boot.load()
