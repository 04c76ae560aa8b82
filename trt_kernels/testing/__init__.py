"""Check a TensorRT plugin and a Torch-TensorRT compile without TensorRT, in the spirit of ``torch.testing``.

No machine of this project has libnvinfer. Everything above it can still run for real:

- :func:`standin`: NVIDIA's own pure-Python ``tensorrt.plugin`` layer (from the
  ``tensorrt-cu13-bindings`` wheel) over an emulated native module, inside a ``with`` block;
  :meth:`Standin.build` drives one plugin layer through an engine build (CPU).
- :func:`aot_replay` / :func:`jit_replay`: launch exactly what an op's plugin describes (its
  ``aot_impl``'s PTX, launch and extra arguments, or its ``impl`` through NVIDIA's
  ``enqueue``) and compare with the eager op, bit for bit (GPU).
- :func:`emulate_tensorrt`: make ``import tensorrt`` (emulated libnvinfer, strict) and
  ``import torch_tensorrt`` (its real Python, native libraries left out) work in this process,
  so ``torch_tensorrt.compile(..., min_block_size=1)`` builds engines holding our plugin
  layers and runs them (GPU, Torch-TensorRT 2.11 with torch 2.11). :data:`SHIM_PATH` on
  ``PYTHONPATH`` does the same for ``tensorrt`` in a process that must not import trt_kernels.

Emulated is not real: results of these tools say nothing about real TensorRT's kernels,
tactics or plan format, only that our plugins and converters do what TensorRT's and
Torch-TensorRT's Python APIs ask. The emulator's engines are its own format.
"""

import importlib.util
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
#: put this folder first on ``PYTHONPATH`` and ``import tensorrt`` gives the emulator (no trt_kernels import)
SHIM_PATH = str(HERE / "shim")
_BOOTSTRAP = "_trt_kernels_emulator_bootstrap"

_LAZY = {
    "standin": "_standin", "Standin": "_standin", "BuildResult": "_standin", "standin_fixture": "_standin",
    "unavailable_reason": "_standin",
    "aot_replay": "_replay", "jit_replay": "_replay", "ReplayResult": "_replay",
    "emulate_tensorrt": "_emulated", "emulation_unavailable_reason": "_emulated", "pure_torch_tensorrt": "_emulated",
    "fresh_process_env": "_emulated", "force_tactic": "_emulated", "save_compiled": "_emulated",
    "load_compiled": "_emulated", "is_emulated": "_emulated",
}

__all__ = ["SHIM_PATH", "bootstrap", *_LAZY]


def bootstrap():
    """The emulator's bootstrap module (standard library only; loaded by path, shared with the shim)."""
    mod = sys.modules.get(_BOOTSTRAP)
    if mod is None:
        spec = importlib.util.spec_from_file_location(_BOOTSTRAP, HERE / "trt_emulator" / "bootstrap.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[_BOOTSTRAP] = mod
        spec.loader.exec_module(mod)
    return mod


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'trt_kernels.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
