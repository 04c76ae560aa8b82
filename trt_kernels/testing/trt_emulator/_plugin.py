"""The native pieces NVIDIA's pure-Python ``tensorrt.plugin`` (QDP) layer builds on: plugin
tensor descriptors, plugin fields, the plugin registry and the plugin interface base classes."""

from typing import Any, Dict, Optional

import numpy as np

from ._dims import Dims
from ._enums import DataType, PluginFieldType, TensorFormat
from ._strict import Strict, unpicklable


class _Interface:
    """Base of the native interfaces NVIDIA's plugin classes inherit from (their ``__init__``
    takes no arguments besides ``self``)."""

    def __init__(self, *args, **kwargs):
        pass


class IPluginV3(_Interface):
    pass


class IPluginV3QuickCore(_Interface):
    pass


class IPluginV3QuickBuild(_Interface):
    pass


class IPluginV3QuickRuntime(_Interface):
    pass


class IPluginV3QuickAOTBuild(_Interface):
    pass


class IPluginCreatorV3Quick(_Interface):
    pass


class ISymExpr(_Interface):
    pass


class IPluginV2(Strict):
    """Exists (Torch-TensorRT names it in type aliases); IPluginV2 plugins are not emulated."""

    def __init__(self, *args, **kwargs):
        raise TypeError("IPluginV2 plugins are not emulated by the TensorRT emulator; use QDP (tensorrt.plugin)")


@unpicklable
class PluginTensorDesc(Strict):
    __slots__ = ("dims", "type", "format", "scale")

    def __init__(self, dims=(), type=DataType.FLOAT, format=TensorFormat.LINEAR, scale=1.0):
        self.dims, self.type, self.format, self.scale = Dims(dims), type, format, scale

    def __repr__(self):
        return f"PluginTensorDesc(dims={tuple(self.dims)}, type={self.type.name}, format={self.format.name})"


@unpicklable
class DynamicPluginTensorDesc(Strict):
    __slots__ = ("desc", "min", "opt", "max")

    def __init__(self, desc: Optional[PluginTensorDesc] = None, min=None, opt=None, max=None):
        self.desc = desc if desc is not None else PluginTensorDesc()
        d = tuple(self.desc.dims)
        self.min, self.opt, self.max = Dims(min or d), Dims(opt or d), Dims(max or d)


class PluginField(Strict):
    """``data`` is kept as a numpy array, as the native binding exposes it."""

    __slots__ = ("name", "data", "type", "size")

    def __init__(self, name: str = "", data: Any = None, type=PluginFieldType.UNKNOWN):
        self.name, self.type = name, type
        if data is None:
            self.data = np.array([], dtype=np.int8)
        elif isinstance(data, (bytes, bytearray)):
            self.data = np.frombuffer(bytes(data), dtype=np.int8).copy()
        else:
            self.data = np.asarray(data)
        self.size = int(self.data.size)

    def __repr__(self):
        return f"PluginField({self.name!r}, {self.data!r}, {self.type.name})"


class PluginFieldCollection(list):
    pass


_FIELD_DTYPES = {
    PluginFieldType.FLOAT16: np.float16, PluginFieldType.FLOAT32: np.float32, PluginFieldType.FLOAT64: np.float64,
    PluginFieldType.INT8: np.int8, PluginFieldType.INT16: np.int16, PluginFieldType.INT32: np.int32,
    PluginFieldType.INT64: np.int64, PluginFieldType.CHAR: np.int8, PluginFieldType.UNKNOWN: np.int8,
}


def field_to_json(f: PluginField) -> Dict[str, Any]:
    """A plugin field as an engine stores it: name, type and raw bytes (hex)."""
    data = np.ascontiguousarray(f.data)
    return {"name": f.name, "type": f.type.name, "dtype": data.dtype.str, "data": data.tobytes().hex()}


def field_from_json(j: Dict[str, Any]) -> PluginField:
    ftype = PluginFieldType[j["type"]]
    data = np.frombuffer(bytes.fromhex(j["data"]), dtype=np.dtype(j["dtype"])).copy()
    return PluginField(j["name"], data, ftype)


@unpicklable
class IPluginRegistry(Strict):
    def __init__(self):
        object.__setattr__(self, "_creators", {})

    def register_creator(self, creator, plugin_namespace: str = "") -> bool:
        key = (creator.name, creator.plugin_version, plugin_namespace)
        if key in self._creators:
            return False
        self._creators[key] = creator
        return True

    def get_creator(self, name: str, version: str, plugin_namespace: str = ""):
        return self._creators.get((name, version, plugin_namespace))

    def deregister_creator(self, creator) -> bool:
        for key, value in list(self._creators.items()):
            if value is creator:
                del self._creators[key]
                return True
        return False

    @property
    def all_creators(self):
        return list(self._creators.values())


#: the process's plugin registry (``tensorrt.get_plugin_registry()``)
REGISTRY = IPluginRegistry()


class LaunchParamsSink:
    """What an AOT plugin's ``get_launch_params`` assigns its grid, block and shared memory to."""

    FIELDS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem")


class SymExprSetter:
    """What an AOT plugin's ``get_launch_params`` stores its extra kernel arguments in."""

    def __init__(self):
        self.nbSymExprs = 0
        self.items: Dict[int, Any] = {}

    def __setitem__(self, i, v):
        self.items[i] = v
