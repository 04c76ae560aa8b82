"""An emulation of libnvinfer's Python bindings (the native module ``tensorrt.tensorrt``) for networks
made of inputs, QDP plugin layers and TensorRT's standard layers (``_layers``; computed in torch by
``_compute``).

Loaded by :mod:`bootstrap` as ``tensorrt.tensorrt`` underneath NVIDIA's own pure-Python
``tensorrt/__init__.py`` and ``tensorrt.plugin`` (from the ``tensorrt-cu13-bindings`` wheel),
so that real Torch-TensorRT and NVIDIA's QDP layer run unmodified on a machine without
TensorRT. It never imports ``trt_kernels``: a process may use it to reload an engine without
the library that declared the engine's kernels.

It models the TensorRT version of the bindings wheel it runs under (``_version``: 10.15.x, the
version Torch-TensorRT 2.11 requires, or 11.x, the line of Torch-TensorRT 2.13/2.14): names and enum
values are that line's.

Strict, not permissive: every class, method and enum member here exists in the emulated version's
bindings (``tests/trt/emulator/test_trt_emulator_names.py`` checks them against the identifiers in that wheel's
``tensorrt.so``); every other name is an ``AttributeError`` naming it, and saying whether the
emulated TensorRT lacks it (``IAlgorithmSelector`` under 11.x: "does not exist in TensorRT 11.0.0.114
(removed in 11.0)") or the emulator does ("is not implemented by the TensorRT emulator"); a layer
kind that is not emulated fails the build naming its kind.
Names beginning with ``_`` are the emulator's own.

Engine compatibility is modelled as TensorRT documents it: plans record the building TensorRT version, compute
capability, hardware compatibility level and builder flags, and ``Runtime.deserialize_cuda_engine`` applies
TensorRT's version-compatibility, lean-runtime and hardware-compatibility rules (``_engine``, ``_builder``).
A test makes the emulator believe the GPU is another card with :func:`stand_in_device` (``_device``): the
one public name here that is not TensorRT's, so it exists only where this package is imported by its own name
(``trt_kernels.testing.trt_emulator.stand_in_device``), never on the native module ``tensorrt.tensorrt``
(where ``tensorrt.tensorrt._device.stand_in_device`` is the same function). Its state is
``$TRT_EMULATOR_STAND_IN_CC``, shared by every copy of the emulator in the process and by child processes.
"""

# The imports marked F401 are the emulated module's public names (NVIDIA's tensorrt/__init__.py does
# `from .tensorrt import *`), not names this file uses.
from . import _version
from ._builder import Builder, IBuilderConfig, IHostMemory, IOptimizationProfile, ITimingCache  # noqa: F401
from ._dims import Dims, DimsExprs, IDimensionExpr, IExprBuilder  # noqa: F401
from ._engine import ICudaEngine, IExecutionContext, IOutputAllocator, Runtime  # noqa: F401
from ._enums import ALL as _ENUMS
from ._enums import DataType
from ._layers import CLASSES as _LAYERS
from ._logging import ILogger, Logger  # noqa: F401
from ._network import INetworkDefinition, IPluginV3Layer  # noqa: F401
from ._plugin import REGISTRY as _REGISTRY
from ._plugin import (  # noqa: F401
    DynamicPluginTensorDesc,
    IPluginCreatorV3Quick,
    IPluginRegistry,
    IPluginV2,
    IPluginV3,
    IPluginV3QuickAOTBuild,
    IPluginV3QuickBuild,
    IPluginV3QuickCore,
    IPluginV3QuickRuntime,
    ISymExpr,
    PluginField,
    PluginFieldCollection,
    PluginTensorDesc,
)
from ._strict import Strict as _Strict
from ._tensor import ILayer, ITensor, Weights  # noqa: F401

globals().update(_ENUMS)
globals().update(_LAYERS)

if _version.PROFILE == "10.15":
    class IAlgorithmSelector:
        """Interface users subclass (``select_algorithms``, ``report_algorithms``); TensorRT 10.x only (11.0
        removed it). Torch-TensorRT 2.11 names it in annotations evaluated at import. The emulator builds
        without consulting one (it has no algorithms to choose among)."""

        def __init__(self, *args, **kwargs):
            pass


class IProgressMonitor:
    """Interface users subclass (``phase_start``, ``step_complete``, ``phase_finish``)."""

    def __init__(self, *args, **kwargs):
        pass


class OnnxParser(_Strict):
    """Exists (NVIDIA's ``tensorrt/__init__.py`` names it); parsing ONNX is not emulated."""

    def __init__(self, *args, **kwargs):
        raise TypeError("OnnxParser is not emulated by the TensorRT emulator")


def get_plugin_registry() -> IPluginRegistry:
    return _REGISTRY


def init_libnvinfer_plugins(logger, namespace: str) -> bool:
    """TensorRT's built-in plugins are not emulated: there are none to register."""
    return True


float32, float16, bfloat16 = DataType.FLOAT, DataType.HALF, DataType.BF16
int8, int32, int64, uint8 = DataType.INT8, DataType.INT32, DataType.INT64, DataType.UINT8
bool = DataType.BOOL  # noqa: A001 - the binding's name
fp8, int4, fp4, e8m0 = DataType.FP8, DataType.INT4, DataType.FP4, DataType.E8M0

__all__ = sorted(
    list(_ENUMS) + list(_LAYERS) + [
        "Builder", "IBuilderConfig", "IHostMemory", "IOptimizationProfile", "ITimingCache", "Dims", "DimsExprs",
        "IDimensionExpr", "IExprBuilder", "ICudaEngine", "IExecutionContext", "Runtime", "ILogger", "Logger",
        "ILayer", "INetworkDefinition", "IPluginV3Layer", "ITensor", "Weights", "DynamicPluginTensorDesc",
        "IPluginCreatorV3Quick", "IPluginRegistry", "IPluginV2",
        "IPluginV3", "IPluginV3QuickAOTBuild", "IPluginV3QuickBuild", "IPluginV3QuickCore",
        "IPluginV3QuickRuntime", "ISymExpr", "PluginField", "PluginFieldCollection", "PluginTensorDesc",
        "IOutputAllocator", "IProgressMonitor", "OnnxParser", "get_plugin_registry",
        "init_libnvinfer_plugins", "float32", "float16", "bfloat16", "int8", "int32", "int64", "uint8", "bool",
        "fp8", "int4", "fp4", "e8m0",
    ] + (["IAlgorithmSelector"] if _version.PROFILE == "10.15" else [])
)


if __name__ == "trt_kernels.testing.trt_emulator":
    # imported by its own name, not loaded as the native module (whose public names must all be TensorRT's)
    from ._device import stand_in_device  # noqa: F401


def __getattr__(name):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    raise AttributeError(_version.missing(name))
