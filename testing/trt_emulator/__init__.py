"""An emulation of libnvinfer's Python bindings (the native module ``tensorrt.tensorrt``) for networks
made of inputs, QDP plugin layers and the trivial layers around them.

Loaded by :mod:`bootstrap` as ``tensorrt.tensorrt`` underneath NVIDIA's own pure-Python
``tensorrt/__init__.py`` and ``tensorrt.plugin`` (from the ``tensorrt-cu13-bindings`` wheel),
so that real Torch-TensorRT and NVIDIA's QDP layer run unmodified on a machine without
TensorRT. It never imports ``trt_kernels``: a process may use it to reload an engine without
the library that declared the engine's kernels.

Strict, not permissive: every class, method and enum member here exists in TensorRT 11.4's
bindings (``tests/test_trt_emulator_names.py`` checks them against the identifiers in the
wheel's ``tensorrt.so``) except the two in ``_COMPAT``; every other name is an
``AttributeError`` naming it; a layer kind that is not emulated fails the build naming its kind.
Names beginning with ``_`` are the emulator's own.
"""

from ._builder import Builder, IBuilderConfig, IHostMemory, IOptimizationProfile, ITimingCache
from ._dims import Dims, DimsExprs, IDimensionExpr, IExprBuilder
from ._engine import ICudaEngine, IExecutionContext, Runtime
from ._enums import ALL as _ENUMS
from ._enums import DataType
from ._logging import ILogger, Logger
from ._network import (ICastLayer, IConstantLayer, IIdentityLayer, ILayer, INetworkDefinition, IPluginV3Layer,
                       ITensor, Weights)
from ._plugin import REGISTRY as _REGISTRY
from ._plugin import (DynamicPluginTensorDesc, IPluginCreatorV3Quick, IPluginRegistry, IPluginV2,
                      IPluginV3, IPluginV3QuickAOTBuild, IPluginV3QuickBuild, IPluginV3QuickCore,
                      IPluginV3QuickRuntime, ISymExpr, PluginField, PluginFieldCollection, PluginTensorDesc)
from ._strict import Strict as _Strict

globals().update(_ENUMS)

#: what Torch-TensorRT 2.11 (built for TensorRT 10.x) needs that TensorRT 11.4 no longer has, and why
#: each is here anyway; every other public name exists in TensorRT 11.4
_COMPAT = {
    "IAlgorithmSelector": "class removed in TensorRT 11; Torch-TensorRT 2.11 names it in annotations evaluated "
                          "at import (dynamo/conversion/_TRTInterpreter.py). A placeholder: never used",
    "ITensor.dtype (setter)": "read-only in TensorRT 11; Torch-TensorRT 2.11 assigns every output its own dtype "
                              "(_TRTInterpreter.output). Assigning the current dtype is accepted, any other refused",
}


class IAlgorithmSelector:
    """Placeholder (see ``_COMPAT``): the class exists so that Torch-TensorRT 2.11 imports."""

    def __init__(self, *args, **kwargs):
        raise TypeError("IAlgorithmSelector was removed in TensorRT 11 and is not emulated")


class IOutputAllocator:
    """Interface users subclass (``reallocate_output_async``, ``notify_shape``)."""

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
    list(_ENUMS) + [
        "Builder", "IBuilderConfig", "IHostMemory", "IOptimizationProfile", "ITimingCache", "Dims", "DimsExprs",
        "IDimensionExpr", "IExprBuilder", "ICudaEngine", "IExecutionContext", "Runtime", "ILogger", "Logger",
        "ICastLayer", "IConstantLayer", "IIdentityLayer", "ILayer", "INetworkDefinition", "IPluginV3Layer",
        "ITensor", "Weights", "DynamicPluginTensorDesc", "IPluginCreatorV3Quick", "IPluginRegistry", "IPluginV2",
        "IPluginV3", "IPluginV3QuickAOTBuild", "IPluginV3QuickBuild", "IPluginV3QuickCore",
        "IPluginV3QuickRuntime", "ISymExpr", "PluginField", "PluginFieldCollection", "PluginTensorDesc",
        "IAlgorithmSelector", "IOutputAllocator", "IProgressMonitor", "OnnxParser", "get_plugin_registry",
        "init_libnvinfer_plugins", "float32", "float16", "bfloat16", "int8", "int32", "int64", "uint8", "bool",
        "fp8", "int4", "fp4", "e8m0",
    ]
)


def __getattr__(name):
    raise AttributeError(f"tensorrt.{name} is not implemented by the TensorRT emulator (trt_kernels.testing)")
