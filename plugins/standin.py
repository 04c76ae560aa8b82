"""Run NVIDIA's pure-Python ``tensorrt.plugin`` layer on a machine without TensorRT.

The wheel ``tensorrt-cu13-bindings==11.4.0.106`` installs a package named
``tensorrt_bindings`` (not ``tensorrt``): a native ``tensorrt.so`` that cannot
load here, plus the pure-Python QDP package ``tensorrt_bindings/plugin``.  This
module imports that package *as* ``tensorrt.plugin`` on top of a small
stand-in ``tensorrt`` module that implements only the native pieces the plugin
layer touches:

* enums (``DataType``, ``TensorFormat``, ``DimensionOperation``,
  ``PluginFieldType``, ``QuickPluginCreationRequest``, ...), ``Dims``,
  ``DimsExprs``, ``PluginTensorDesc``, ``DynamicPluginTensorDesc``,
  ``PluginField(Collection)``, a plugin registry, a ``Logger``;
* a symbolic ``IExprBuilder`` / ``IDimensionExpr`` (constants, named symbols,
  the nine ``DimensionOperation`` s, constant folding) that can also be
  evaluated at concrete sizes;
* a minimal ``INetworkDefinition`` with ``add_input`` and
  ``add_plugin(..., aot=...)``.

Nothing is copied from NVIDIA; NVIDIA's own code (validators, plugin creator,
``_TemplateAOTPlugin`` / ``_TemplateJITPlugin``) runs unmodified on top.

It ships in the package because :mod:`trt_kernels.plugins.replay` (AOT replay on a GPU
without TensorRT) uses it. Use only inside :func:`standin` (a context manager) so that
everything else keeps seeing "no TensorRT"::

    with standin() as env:
        trtp = env.trtp                 # NVIDIA's tensorrt.plugin
        ...define plugins with @trtp.register / @trtp.aot_impl ...
        res = env.build("ns::name", inputs=[("FP32", (4, 1000))], attrs={...})
        res.output_shapes, res.launch_values, res.extra_arg_values

See ``notes/trtp_api.md`` in the repository for the API facts this relies on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import importlib
import importlib.machinery
import importlib.util
import os
import pathlib
import sys
import tempfile
import types
import warnings
import zipfile
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

BINDINGS_DIST = "tensorrt-cu13-bindings"
BINDINGS_VERSION = "11.4.0.106"
INSTALL_HINT = f"pip install --no-deps {BINDINGS_DIST}=={BINDINGS_VERSION}"
#: Optional override: a directory that contains ``plugin/__init__.py`` (an unzipped
#: wheel's ``tensorrt_bindings`` dir, or its parent), or the ``.whl`` file itself.
ENV_VAR = "TRT_STANDIN_BINDINGS"

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# --------------------------------------------------------------------------------------
# Locating the pure-Python plugin package
# --------------------------------------------------------------------------------------


def _extract_wheel(whl: pathlib.Path) -> pathlib.Path:
    cache = pathlib.Path(tempfile.gettempdir()) / f"trt_standin_{whl.stem}"
    marker = cache / "tensorrt_bindings" / "plugin" / "__init__.py"
    if not marker.is_file():
        with zipfile.ZipFile(whl) as zf:
            for member in zf.namelist():
                if member.startswith("tensorrt_bindings/plugin/") and member.endswith(".py"):
                    zf.extract(member, cache)
    return cache / "tensorrt_bindings"


def find_bindings_dir() -> Tuple[Optional[pathlib.Path], str]:
    """Return ``(dir holding plugin/__init__.py, "")`` or ``(None, reason)``.

    Never imports ``tensorrt_bindings`` (its ``__init__`` loads the native library).
    """
    override = os.environ.get(ENV_VAR)
    if override:
        p = pathlib.Path(override)
        if p.is_file() and p.suffix == ".whl":
            p = _extract_wheel(p)
        for cand in (p, p / "tensorrt_bindings"):
            if (cand / "plugin" / "__init__.py").is_file():
                return cand, ""
            if cand.name == "plugin" and (cand / "__init__.py").is_file():
                return cand.parent, ""
        return None, f"{ENV_VAR}={override!r} holds no plugin/__init__.py"
    try:
        spec = importlib.util.find_spec("tensorrt_bindings")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None, f"the TensorRT bindings wheel is not installed ({INSTALL_HINT})"
    for loc in spec.submodule_search_locations:
        if (pathlib.Path(loc) / "plugin" / "__init__.py").is_file():
            return pathlib.Path(loc), ""
    return None, "tensorrt_bindings is installed but has no plugin/ package"


def unavailable_reason() -> Optional[str]:
    """``None`` when :func:`standin` can work, else a human-readable reason."""
    path, reason = find_bindings_dir()
    return None if path is not None else reason


# --------------------------------------------------------------------------------------
# Symbolic dimension expressions (stand-in for IExprBuilder / IDimensionExpr)
# --------------------------------------------------------------------------------------


class DimensionOperation(enum.Enum):
    SUM = 0
    PROD = 1
    MAX = 2
    MIN = 3
    SUB = 4
    EQUAL = 5
    LESS = 6
    FLOOR_DIV = 7
    CEIL_DIV = 8


_OP_TEXT = {
    DimensionOperation.SUM: "+",
    DimensionOperation.PROD: "*",
    DimensionOperation.SUB: "-",
    DimensionOperation.FLOOR_DIV: "//",
}


def _apply(op: DimensionOperation, a: int, b: int) -> int:
    if op is DimensionOperation.SUM:
        return a + b
    if op is DimensionOperation.PROD:
        return a * b
    if op is DimensionOperation.MAX:
        return max(a, b)
    if op is DimensionOperation.MIN:
        return min(a, b)
    if op is DimensionOperation.SUB:
        return a - b
    if op is DimensionOperation.EQUAL:
        return int(a == b)
    if op is DimensionOperation.LESS:
        return int(a < b)
    if b == 0:
        raise ZeroDivisionError(f"{op.name} by zero in a dimension expression")
    if op is DimensionOperation.FLOOR_DIV:
        return a // b
    if op is DimensionOperation.CEIL_DIV:
        return -((-a) // b)
    raise ValueError(f"unknown DimensionOperation {op!r}")


class IDimensionExpr:
    """Immutable symbolic integer: a constant, a named symbol, or an operation.

    Like the native class it has no Python arithmetic operators; use
    ``IExprBuilder.operation``.  ``evaluate`` and ``symbols`` are stand-in extras.
    """

    __slots__ = ("kind", "value", "name", "op", "lhs", "rhs")

    def __init__(self, kind: str, value: Optional[int] = None, name: Optional[str] = None,
                 op: Optional[DimensionOperation] = None, lhs: "IDimensionExpr" = None,
                 rhs: "IDimensionExpr" = None):
        self.kind, self.value, self.name, self.op, self.lhs, self.rhs = kind, value, name, op, lhs, rhs

    # native API
    def is_constant(self) -> bool:
        return self.kind == "const"

    def get_constant_value(self) -> int:
        return self.value if self.kind == "const" else INT64_MIN

    def is_size_tensor(self) -> bool:
        return self.kind == "size_tensor"

    # stand-in extras
    def symbols(self) -> set:
        if self.kind == "sym":
            return {self.name}
        if self.kind == "op":
            return self.lhs.symbols() | self.rhs.symbols()
        return set()

    def evaluate(self, bindings: Mapping[str, int]) -> int:
        if self.kind == "const":
            return self.value
        if self.kind == "sym":
            if self.name not in bindings:
                raise KeyError(f"no concrete value bound for dimension symbol {self.name!r}")
            return int(bindings[self.name])
        if self.kind == "size_tensor":
            key = f"size_tensor[{self.value}]"
            if key not in bindings:
                raise KeyError(f"no concrete value bound for {key}")
            return int(bindings[key])
        return _apply(self.op, self.lhs.evaluate(bindings), self.rhs.evaluate(bindings))

    def __repr__(self) -> str:
        if self.kind == "const":
            return str(self.value)
        if self.kind == "sym":
            return self.name
        if self.kind == "size_tensor":
            return f"size_tensor[{self.value}]"
        if self.op in _OP_TEXT:
            return f"({self.lhs!r} {_OP_TEXT[self.op]} {self.rhs!r})"
        return f"{self.op.name.lower()}({self.lhs!r}, {self.rhs!r})"


class IExprBuilder:
    """Builds :class:`IDimensionExpr` s; folds constant operands and trivial identities."""

    def constant(self, value: int) -> IDimensionExpr:
        if not isinstance(value, int):  # pybind would reject a float/None too
            raise TypeError(f"IExprBuilder.constant() needs an int, got {type(value).__name__}")
        if not INT64_MIN <= value <= INT64_MAX:
            raise OverflowError(f"dimension constant {value} does not fit in int64")
        return IDimensionExpr("const", value=int(value))

    def operation(self, op: DimensionOperation, first: IDimensionExpr, second: IDimensionExpr) -> IDimensionExpr:
        if not isinstance(op, DimensionOperation):
            raise TypeError(f"operation() needs a DimensionOperation, got {op!r}")
        for side in (first, second):
            if not isinstance(side, IDimensionExpr):
                raise TypeError(f"operation() needs IDimensionExpr operands, got {type(side).__name__}"
                                " (a fake ShapeExpr or an expression created outside a shape context?)")
        if first.is_constant() and second.is_constant():
            return self.constant(_apply(op, first.value, second.value))
        D = DimensionOperation

        def is_const(e: IDimensionExpr, v: int) -> bool:
            return e.is_constant() and e.value == v

        # Trivial identities only (x+0, 0+x, x-0, x*1, 1*x, x//1, cdiv(x,1)); constness is unchanged.
        if op in (D.SUM, D.SUB) and is_const(second, 0):
            return first
        if op in (D.PROD, D.FLOOR_DIV, D.CEIL_DIV) and is_const(second, 1):
            return first
        if (op is D.SUM and is_const(first, 0)) or (op is D.PROD and is_const(first, 1)):
            return second
        if op in (D.FLOOR_DIV, D.CEIL_DIV) and is_const(second, 0):
            raise ZeroDivisionError(f"{op.name} by constant zero")
        return IDimensionExpr("op", op=op, lhs=first, rhs=second)

    def declare_size_tensor(self, output_index: int, opt: IDimensionExpr, upper: IDimensionExpr) -> IDimensionExpr:
        return IDimensionExpr("size_tensor", value=int(output_index))

    # stand-in extra
    def symbol(self, name: str) -> IDimensionExpr:
        return IDimensionExpr("sym", name=str(name))


# --------------------------------------------------------------------------------------
# Other native pieces
# --------------------------------------------------------------------------------------


class DataType(enum.Enum):
    FLOAT = 0
    HALF = 1
    INT8 = 2
    INT32 = 3
    BOOL = 4
    UINT8 = 5
    FP8 = 6
    BF16 = 7
    INT64 = 8
    INT4 = 9
    FP4 = 10
    E8M0 = 11

    @property
    def itemsize(self):
        return {"FLOAT": 4, "HALF": 2, "BF16": 2, "INT8": 1, "INT32": 4, "INT64": 8, "BOOL": 1,
                "UINT8": 1, "FP8": 1, "INT4": 0.5, "FP4": 0.5, "E8M0": 1}[self.name]


class TensorFormat(enum.Enum):
    LINEAR = 0
    CHW2 = 1
    HWC8 = 2
    CHW4 = 3
    CHW16 = 4
    CHW32 = 5
    DHWC8 = 6
    CDHW32 = 7
    HWC = 8
    DLA_LINEAR = 9
    DLA_HWC4 = 10
    HWC16 = 11
    DHWC = 12


class PluginFieldType(enum.Enum):
    FLOAT16 = 0
    FLOAT32 = 1
    FLOAT64 = 2
    INT8 = 3
    INT16 = 4
    INT32 = 5
    CHAR = 6
    DIMS = 7
    UNKNOWN = 8
    BF16 = 9
    INT64 = 10
    FP8 = 11
    INT4 = 12
    FP4 = 13


class QuickPluginCreationRequest(enum.Enum):
    UNKNOWN = 0
    PREFER_JIT = 1
    PREFER_AOT = 2
    STRICT_JIT = 3
    STRICT_AOT = 4


class TensorRTPhase(enum.Enum):
    BUILD = 0
    RUNTIME = 1


class PluginCapabilityType(enum.Enum):
    CORE = 0
    BUILD = 1
    RUNTIME = 2


class PluginArgType(enum.Enum):
    INT = 0


class PluginArgDataType(enum.Enum):
    INT8 = 0
    INT16 = 1
    INT32 = 2


class NetworkDefinitionCreationFlag(enum.Enum):
    STRONGLY_TYPED = 1
    PREFER_AOT_PYTHON_PLUGINS = 2
    PREFER_JIT_PYTHON_PLUGINS = 3


class _Severity(enum.Enum):
    INTERNAL_ERROR = 0
    ERROR = 1
    WARNING = 2
    INFO = 3
    VERBOSE = 4


class Logger:
    Severity = _Severity
    INTERNAL_ERROR, ERROR, WARNING, INFO, VERBOSE = (_Severity.INTERNAL_ERROR, _Severity.ERROR,
                                                     _Severity.WARNING, _Severity.INFO, _Severity.VERBOSE)
    messages: List[Tuple[_Severity, str]] = []  # replaced per stand-in instance

    def __init__(self, min_severity: _Severity = _Severity.WARNING):
        self.min_severity = min_severity

    def log(self, severity: _Severity, msg: str) -> None:
        type(self).messages.append((severity, msg))


class Dims(list):
    """Mutable list of ints; ``Dims(n)`` gives ``n`` zeros, ``Dims(seq)`` copies."""

    MAX_DIMS = 8

    def __init__(self, shape: Union[int, Iterable[int]] = ()):
        super().__init__([0] * shape if isinstance(shape, int) else [int(s) for s in shape])


class DimsExprs(list):
    def __init__(self, n: Union[int, Iterable[IDimensionExpr]] = 0):
        super().__init__([None] * n if isinstance(n, int) else list(n))


class PluginTensorDesc:
    def __init__(self, dims=(), type=DataType.FLOAT, format=TensorFormat.LINEAR, scale=1.0):
        self.dims, self.type, self.format, self.scale = Dims(dims), type, format, scale

    def __repr__(self):
        return f"PluginTensorDesc(dims={tuple(self.dims)}, type={self.type.name}, format={self.format.name})"


class DynamicPluginTensorDesc:
    def __init__(self, desc: Optional[PluginTensorDesc] = None, min=None, opt=None, max=None):
        self.desc = desc if desc is not None else PluginTensorDesc()
        d = tuple(self.desc.dims)
        self.min, self.opt, self.max = Dims(min or d), Dims(opt or d), Dims(max or d)


class PluginField:
    """``data`` is kept as a numpy array, as the native binding exposes it."""

    def __init__(self, name: str = "", data: Any = None, type: PluginFieldType = PluginFieldType.UNKNOWN):
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


class IPluginRegistry:
    def __init__(self):
        self._creators: Dict[Tuple[str, str, str], Any] = {}

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


class _Interface:
    """Base for the native interface classes NVIDIA's plugin classes inherit from."""

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


class ITensor:
    def __init__(self, name: str, dtype: DataType, shape: Sequence[int], producer=None):
        self.name, self.dtype, self.shape, self.producer = name, dtype, Dims(shape), producer

    def __repr__(self):
        return f"ITensor({self.name!r}, {self.dtype.name}, {tuple(self.shape)})"


class KernelLaunchParamsSink:
    """What ``get_launch_params`` writes into: each field becomes a SymExprImpl."""

    FIELDS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem")


class SymExprsSink:
    def __init__(self):
        self.nbSymExprs = 0
        self.items: Dict[int, Any] = {}

    def __setitem__(self, i, v):
        self.items[i] = v


# --------------------------------------------------------------------------------------
# dtype names
# --------------------------------------------------------------------------------------

_DTYPE_ALIASES = {
    "FP32": DataType.FLOAT, "FLOAT": DataType.FLOAT, "FLOAT32": DataType.FLOAT,
    "FP16": DataType.HALF, "HALF": DataType.HALF, "FLOAT16": DataType.HALF,
    "BF16": DataType.BF16, "BFLOAT16": DataType.BF16,
    "INT8": DataType.INT8, "INT32": DataType.INT32, "INT64": DataType.INT64,
    "BOOL": DataType.BOOL, "UINT8": DataType.UINT8, "FP8": DataType.FP8,
    "INT4": DataType.INT4, "FP4": DataType.FP4, "E8M0": DataType.E8M0,
}


def as_dtype(x: Any) -> DataType:
    """``DataType`` from a DataType, a name ("FP32", "float16", "BF16"...) or a torch/numpy dtype."""
    if isinstance(x, DataType):
        return x
    name = str(x).split(".")[-1].upper()
    if name not in _DTYPE_ALIASES:
        try:
            name = np.dtype(x).name.upper()
        except TypeError:
            pass
    if name in _DTYPE_ALIASES:
        return _DTYPE_ALIASES[name]
    raise ValueError(f"unknown dtype {x!r}")


# --------------------------------------------------------------------------------------
# The stand-in ``tensorrt`` module
# --------------------------------------------------------------------------------------


def _nptype(dt: DataType):
    table = {DataType.FLOAT: np.float32, DataType.HALF: np.float16, DataType.INT8: np.int8,
             DataType.INT32: np.int32, DataType.INT64: np.int64, DataType.BOOL: np.bool_,
             DataType.UINT8: np.uint8}
    if dt not in table:
        raise TypeError("Could not resolve TensorRT datatype to an equivalent numpy datatype.")
    return table[dt]


def _make_trt_module(bindings_dir: pathlib.Path) -> types.ModuleType:
    mod = types.ModuleType("tensorrt", "CPU stand-in for TensorRT (trt_kernels.plugins.standin)")
    spec = importlib.machinery.ModuleSpec("tensorrt", None, is_package=True)
    spec.submodule_search_locations = [str(bindings_dir)]
    mod.__spec__ = spec
    mod.__path__ = [str(bindings_dir)]
    mod.__version__ = BINDINGS_VERSION
    mod.__trt_standin__ = True

    class _Logger(Logger):
        messages: List[Tuple[_Severity, str]] = []

    _Logger.__name__ = "Logger"
    registry = IPluginRegistry()
    public = dict(
        DimensionOperation=DimensionOperation, IDimensionExpr=IDimensionExpr, IExprBuilder=IExprBuilder,
        DataType=DataType, TensorFormat=TensorFormat, PluginFieldType=PluginFieldType,
        QuickPluginCreationRequest=QuickPluginCreationRequest, TensorRTPhase=TensorRTPhase,
        PluginCapabilityType=PluginCapabilityType, PluginArgType=PluginArgType,
        PluginArgDataType=PluginArgDataType, NetworkDefinitionCreationFlag=NetworkDefinitionCreationFlag,
        Logger=_Logger, ILogger=_Logger, Dims=Dims, DimsExprs=DimsExprs, PluginTensorDesc=PluginTensorDesc,
        DynamicPluginTensorDesc=DynamicPluginTensorDesc, PluginField=PluginField,
        PluginFieldCollection=PluginFieldCollection, IPluginRegistry=IPluginRegistry,
        IPluginV3=IPluginV3, IPluginV3QuickCore=IPluginV3QuickCore, IPluginV3QuickBuild=IPluginV3QuickBuild,
        IPluginV3QuickRuntime=IPluginV3QuickRuntime, IPluginV3QuickAOTBuild=IPluginV3QuickAOTBuild,
        IPluginCreatorV3Quick=IPluginCreatorV3Quick, ISymExpr=ISymExpr, ITensor=ITensor,
        INetworkDefinition=StandinNetwork, IPluginV3Layer=PluginLayer,
        float32=DataType.FLOAT, float16=DataType.HALF, bfloat16=DataType.BF16, int8=DataType.INT8,
        int32=DataType.INT32, int64=DataType.INT64, bool=DataType.BOOL, uint8=DataType.UINT8,
        fp8=DataType.FP8, int4=DataType.INT4, fp4=DataType.FP4, e8m0=DataType.E8M0,
        nptype=_nptype, get_plugin_registry=lambda: registry,
    )
    for k, v in public.items():
        setattr(mod, k, v)

    def __getattr__(name: str):
        raise AttributeError(f"tensorrt.{name} is not implemented by the CPU stand-in (trt_kernels.plugins.standin)")

    mod.__getattr__ = __getattr__
    return mod


# --------------------------------------------------------------------------------------
# Network stand-in: add_input / add_plugin(aot=...)
# --------------------------------------------------------------------------------------


class PluginLayer:
    def __init__(self, plugin, inputs: List[ITensor], qpcr: QuickPluginCreationRequest, builder: IExprBuilder):
        self.plugin, self.inputs, self.qpcr, self.name = plugin, list(inputs), qpcr, ""
        types_ = plugin.get_output_data_types([t.dtype for t in inputs], [len(t.shape) for t in inputs])
        in_exprs = [DimsExprs([builder.symbol(f"{t.name}_d{j}") if d < 0 else builder.constant(int(d))
                               for j, d in enumerate(t.shape)]) for t in inputs]
        out_exprs = plugin.get_output_shapes(in_exprs, [], builder)
        self.outputs = [
            ITensor(f"{id(self):x}_out{i}", types_[i],
                    [e.get_constant_value() if e.is_constant() else -1 for e in exprs], producer=self)
            for i, exprs in enumerate(out_exprs)
        ]
        self.num_outputs = len(self.outputs)
        self.num_inputs = len(self.inputs)

    def get_output(self, i: int) -> ITensor:
        return self.outputs[i]

    def get_input(self, i: int) -> ITensor:
        return self.inputs[i]

    @property
    def is_aot(self) -> bool:
        return hasattr(self.plugin, "get_launch_params")


class StandinNetwork:
    """Just enough of ``INetworkDefinition`` to add QDP plugin layers."""

    def __init__(self, flags: Iterable[NetworkDefinitionCreationFlag] = ()):
        self.flags = set(flags)
        self.inputs: List[ITensor] = []
        self.outputs: List[ITensor] = []
        self.layers: List[PluginLayer] = []
        self._builder = IExprBuilder()

    def add_input(self, name: str, dtype: Any, shape: Sequence[int]) -> ITensor:
        t = ITensor(name, as_dtype(dtype), shape)
        self.inputs.append(t)
        return t

    def mark_output(self, tensor: ITensor) -> None:
        self.outputs.append(tensor)

    def _request(self, aot: Optional[bool]) -> QuickPluginCreationRequest:
        # Stand-in assumption (the native mapping is not visible from Python):
        # aot=True -> STRICT_AOT, aot=False -> STRICT_JIT, omitted -> network flag.
        F, Q = NetworkDefinitionCreationFlag, QuickPluginCreationRequest
        if aot is True:
            return Q.STRICT_AOT
        if aot is False:
            return Q.STRICT_JIT
        if F.PREFER_AOT_PYTHON_PLUGINS in self.flags and F.PREFER_JIT_PYTHON_PLUGINS in self.flags:
            raise ValueError("Both NetworkDefinitionCreationFlag.PREFER_AOT_PYTHON_PLUGINS and "
                             "PREFER_JIT_PYTHON_PLUGINS cannot be specified at the same time.")
        if F.PREFER_AOT_PYTHON_PLUGINS in self.flags:
            return Q.PREFER_AOT
        if F.PREFER_JIT_PYTHON_PLUGINS in self.flags:
            return Q.PREFER_JIT
        return Q.UNKNOWN

    def add_plugin(self, tuple, aot: Optional[bool] = None) -> PluginLayer:  # noqa: A002 (native kwarg name)
        qpcr = self._request(aot)
        created = tuple(qpcr) if callable(tuple) else tuple
        inputs, shape_inputs, plugin = created
        if shape_inputs:
            raise NotImplementedError("shape inputs are not supported for QDP plugins")
        layer = PluginLayer(plugin, inputs, qpcr, self._builder)
        self.layers.append(layer)
        return layer


# --------------------------------------------------------------------------------------
# Build simulation result
# --------------------------------------------------------------------------------------

_CUDA_LIMITS = {"grid_x": (1, INT32_MAX), "grid_y": (1, 65535), "grid_z": (1, 65535),
                "block_x": (1, 1024), "block_y": (1, 1024), "block_z": (1, 64), "shared_mem": (0, 227 * 1024)}


@dataclasses.dataclass
class BuildResult:
    """What a simulated TensorRT build learned from the plugin.

    Symbolic fields hold stand-in :class:`IDimensionExpr` s over symbols named
    ``in{i}_d{j}`` (or the caller's ``dim_names``); ``bindings`` maps those
    symbols to the concrete input sizes used for the ``*_values`` fields.
    """

    plugin: Any
    is_aot: bool
    input_dtypes: List[DataType]
    input_shapes: List[Tuple[int, ...]]
    input_dim_exprs: List[List[IDimensionExpr]]
    output_dtypes: List[DataType]
    output_shape_exprs: List[List[IDimensionExpr]]
    output_shapes: List[Tuple[int, ...]]
    combinations: List[List[Tuple[DataType, TensorFormat]]]
    chosen_combination: int
    tactics: List[int]
    tactic: int
    bindings: Dict[str, int]
    kernel_name: Optional[Union[str, bytes]] = None
    ptx: Optional[bytes] = None
    launch: Dict[str, IDimensionExpr] = dataclasses.field(default_factory=dict)
    extra_args: List[Tuple[PluginArgDataType, IDimensionExpr]] = dataclasses.field(default_factory=list)
    serialized_fields: Optional[List[PluginField]] = None

    def evaluate(self, expr: Any, bindings: Optional[Mapping[str, int]] = None) -> Any:
        return evaluate(expr, self.bindings if bindings is None else bindings)

    def bindings_for(self, shapes: Sequence[Sequence[int]]) -> Dict[str, int]:
        """Bindings for other concrete input shapes (same ranks) -- no rebuild needed."""
        out = {}
        for exprs, shape in zip(self.input_dim_exprs, shapes):
            if len(exprs) != len(shape):
                raise ValueError(f"rank mismatch: {len(shape)} vs {len(exprs)}")
            for e, v in zip(exprs, shape):
                if e.kind == "sym":
                    out[e.name] = int(v)
        return out

    @property
    def launch_values(self) -> Dict[str, int]:
        return {k: v.evaluate(self.bindings) for k, v in self.launch.items()}

    @property
    def extra_arg_values(self) -> List[int]:
        return [e.evaluate(self.bindings) for _, e in self.extra_args]

    @property
    def grid(self) -> Tuple[int, int, int]:
        v = self.launch_values
        return v["grid_x"], v["grid_y"], v["grid_z"]

    @property
    def block(self) -> Tuple[int, int, int]:
        v = self.launch_values
        return v["block_x"], v["block_y"], v["block_z"]

    def launch_at(self, shapes: Sequence[Sequence[int]]) -> Dict[str, int]:
        b = self.bindings_for(shapes)
        return {k: v.evaluate(b) for k, v in self.launch.items()}

    def extra_args_at(self, shapes: Sequence[Sequence[int]]) -> List[int]:
        b = self.bindings_for(shapes)
        return [e.evaluate(b) for _, e in self.extra_args]

    def enqueue(self, input_ptrs: Sequence[int], output_ptrs: Sequence[int], stream: int = 0) -> None:
        """JIT plugins only: call ``enqueue`` as TensorRT does at run time (runs ``@trtp.impl``).

        Pointers are passed through untouched (use real device pointers, or fake ints with an
        impl that does not dereference them).  Strides are contiguous row-major, in elements.
        """
        if self.is_aot:
            raise TypeError("AOT plugins have no Python enqueue; TensorRT launches the PTX itself")
        n_in = len(self.input_shapes)
        tf = self.combinations[self.chosen_combination]
        shapes = self.input_shapes + self.output_shapes
        descs = [PluginTensorDesc(s, t, f) for s, (t, f) in zip(shapes, tf)]
        strides = [tuple(int(np.prod(s[k + 1:])) for k in range(len(s))) for s in shapes]
        self.plugin.enqueue(descs[:n_in], descs[n_in:], list(input_ptrs), list(output_ptrs),
                            strides[:n_in], strides[n_in:], stream)

    def problems(self, shapes: Optional[Sequence[Sequence[int]]] = None) -> List[str]:
        """CUDA launch-limit and argument-range violations at the given (or build) shapes."""
        b = self.bindings if shapes is None else self.bindings_for(shapes)
        out = []
        vals = {k: v.evaluate(b) for k, v in self.launch.items()}
        for k, (lo, hi) in _CUDA_LIMITS.items():
            if k in vals and not lo <= vals[k] <= hi:
                out.append(f"{k}={vals[k]} outside [{lo}, {hi}]")
        if all(k in vals for k in ("block_x", "block_y", "block_z")):
            threads = vals["block_x"] * vals["block_y"] * vals["block_z"]
            if threads > 1024:
                out.append(f"block has {threads} threads (> 1024)")
        for i, (dt, e) in enumerate(self.extra_args):
            v = e.evaluate(b)
            bits = {PluginArgDataType.INT32: 32, PluginArgDataType.INT16: 16, PluginArgDataType.INT8: 8}[dt]
            if not -(2 ** (bits - 1)) <= v < 2 ** (bits - 1):
                out.append(f"extra arg {i} = {v} does not fit in {dt.name}")
        return out


def evaluate(x: Any, bindings: Optional[Mapping[str, int]] = None) -> Any:
    """Concrete value(s) of a symbolic object at ``bindings`` (symbol name -> int).

    Accepts ints, stand-in IDimensionExprs, trtp ShapeExpr/SymInt32/SymIntExpr,
    SymExprImpl (``.expr``), ShapeExprs/SymIntExprs (-> list), TensorDesc (-> shape
    tuple), KernelLaunchParams (-> dict), and tuples/lists of those.
    """
    bindings = bindings or {}
    if isinstance(x, bool) or isinstance(x, int):
        return int(x)
    if isinstance(x, IDimensionExpr):
        return x.evaluate(bindings)
    cls_names = {c.__name__ for c in type(x).__mro__}
    if "KernelLaunchParams" in cls_names:
        return {k: evaluate(getattr(x, k), bindings) for k in KernelLaunchParamsSink.FIELDS}
    if "TensorDesc" in cls_names:
        return tuple(evaluate(list(x.shape_expr), bindings))
    if "SymExprs" in cls_names or isinstance(x, (list, tuple)):
        return [evaluate(e, bindings) for e in x]
    if "SymExprImpl" in cls_names:
        return evaluate(x.expr, bindings)
    if "SymIntExpr" in cls_names:
        if getattr(x, "_is_dummy", False):
            raise ValueError(f"{x!r} is a fake ShapeExpr (made outside a shape-calculation context)")
        inner = x._expr
        if inner is None:
            raise ValueError(f"{type(x).__name__} has no expression: it was built from a non-int value or "
                             "outside a shape-calculation context (SymIntExpr._exprBuilder was None)")
        return inner.evaluate(bindings)
    raise TypeError(f"cannot evaluate {type(x).__name__}")


# --------------------------------------------------------------------------------------
# The environment handed out by ``standin()``
# --------------------------------------------------------------------------------------


class Standin:
    """Handle on one installed stand-in: ``.trt`` (stand-in module), ``.trtp`` (NVIDIA's plugin package)."""

    def __init__(self, trt: types.ModuleType, trtp: types.ModuleType):
        self.trt, self.trtp = trt, trtp
        self.builder = IExprBuilder()
        self._tensor_mod = sys.modules["tensorrt.plugin._tensor"]
        self._lib = sys.modules["tensorrt.plugin._lib"]

    # -- logging / registries -------------------------------------------------------
    @property
    def log(self) -> List[Tuple[Any, str]]:
        return self.trt.Logger.messages

    @property
    def registry(self) -> Dict[str, Any]:
        """NVIDIA's ``QDP_REGISTRY`` (plugin id -> PluginDef)."""
        return self._lib.QDP_REGISTRY

    def plugin_def(self, plugin_id: str):
        return self._lib.QDP_REGISTRY[plugin_id]

    # -- symbolic helpers -----------------------------------------------------------
    @contextlib.contextmanager
    def symbolic(self) -> Iterator[IExprBuilder]:
        """Shape-calculation context: what ``get_output_shapes``/``get_launch_params`` set up.

        Inside it ``ShapeExpr`` arithmetic with ints, ``SymInt32(int)``, ``desc.like()``,
        ``ShapeExprs.numel()`` and ``KernelLaunchParams`` field assignment all work.
        """
        cls = self._tensor_mod.SymIntExpr
        saved = cls._exprBuilder
        cls._exprBuilder = self.builder
        try:
            yield self.builder
        finally:
            cls._exprBuilder = saved

    def dim(self, name_or_value: Union[str, int]):
        """A ``trtp.ShapeExpr`` for a named symbol (str) or a constant (int)."""
        e = (self.builder.symbol(name_or_value) if isinstance(name_or_value, str)
             else self.builder.constant(int(name_or_value)))
        return self.trtp.ShapeExpr(e)

    def tensor_desc(self, dtype: Any, shape: Union[int, Sequence[Union[str, int]]], prefix: str = "d"):
        """An immutable input ``trtp.TensorDesc``: ``shape`` is a rank (symbols ``{prefix}0..``)
        or a sequence whose str items are symbols and int items constants."""
        if isinstance(shape, int):
            shape = [f"{prefix}{j}" for j in range(shape)]
        exprs = self.trtp.ShapeExprs(len(shape))
        for j, s in enumerate(shape):
            exprs[j] = self.dim(s)
        desc = self.trtp.TensorDesc(exprs, as_dtype(dtype))
        desc._immutable = True
        return desc

    def evaluate(self, x: Any, bindings: Optional[Mapping[str, int]] = None, **kw: int) -> Any:
        b = dict(bindings or {})
        b.update(kw)
        return evaluate(x, b)

    def network(self, *flags: NetworkDefinitionCreationFlag) -> StandinNetwork:
        return StandinNetwork(flags)

    # -- TensorRT build simulation --------------------------------------------------
    def build(self, plugin: Union[str, PluginLayer], inputs: Sequence[Tuple[Any, Sequence[int]]] = (),
              attrs: Optional[Mapping[str, Any]] = None, *, aot: Optional[bool] = True,
              tactic: Optional[int] = None, combination: Optional[int] = None,
              dim_names: Optional[Sequence[Sequence[str]]] = None, static: bool = False,
              network_flags: Sequence[NetworkDefinitionCreationFlag] = ()) -> BuildResult:
        """Drive NVIDIA's plugin class through the calls TensorRT makes while building.

        ``plugin`` is a plugin id (``"ns::name"``; the layer is then created with
        ``network.add_plugin(trtp.op.ns.name(*itensors, **attrs), aot=aot)``) or a
        :class:`PluginLayer` already added to a stand-in network.  ``inputs`` gives
        ``(dtype, concrete shape)`` per input tensor.  Dimensions are passed to the
        plugin as named symbols (``in{i}_d{j}`` unless ``dim_names``), or as constants
        when ``static``.  Sequence: get_output_data_types -> get_output_shapes ->
        get_supported_format_combinations (runs ``@trtp.autotune``) -> configure_plugin ->
        get_valid_tactics -> set_tactic -> (AOT) get_launch_params (runs ``@trtp.aot_impl``)
        -> get_kernel; (JIT) get_fields_to_serialize.
        """
        cls = self._tensor_mod.SymIntExpr
        saved_builder = cls._exprBuilder
        try:
            return self._build(plugin, inputs, attrs, aot, tactic, combination, dim_names, static, network_flags)
        finally:
            # NVIDIA's code resets the builder only on success; keep state sane after a failure.
            cls._exprBuilder = saved_builder

    def _build(self, plugin, inputs, attrs, aot, tactic, combination, dim_names, static, network_flags):
        if isinstance(plugin, str):
            ns, name = plugin.split("::")
            net = self.network(*network_flags)
            itensors = [net.add_input(f"in{i}", dt, [-1] * len(shape)) for i, (dt, shape) in enumerate(inputs)]
            plugin_def = getattr(getattr(self.trtp.op, ns), name)
            layer = net.add_plugin(plugin_def(*itensors, **dict(attrs or {})), aot=aot)
        else:
            layer = plugin
        plg = layer.plugin
        if not inputs:
            raise ValueError("inputs=[(dtype, shape), ...] is required")
        in_dtypes = [as_dtype(dt) for dt, _ in inputs]
        in_shapes = [tuple(int(s) for s in shape) for _, shape in inputs]
        n_in = len(in_shapes)
        b = self.builder

        for cap in PluginCapabilityType:
            plg.get_capability_interface(cap)
        n_out = plg.get_num_outputs()
        out_types = list(plg.get_output_data_types(in_dtypes, [len(s) for s in in_shapes]))
        if len(out_types) != n_out:
            raise AssertionError(f"descriptor returned {len(out_types)} outputs, plugin declares {n_out}")

        bindings: Dict[str, int] = {}
        in_exprs: List[DimsExprs] = []
        for i, shape in enumerate(in_shapes):
            names = dim_names[i] if dim_names else [f"in{i}_d{j}" for j in range(len(shape))]
            row = []
            for nm, v in zip(names, shape):
                if static:
                    row.append(b.constant(v))
                else:
                    if bindings.get(nm, v) != v:
                        raise ValueError(f"symbol {nm!r} bound to both {bindings[nm]} and {v}")
                    bindings[nm] = v
                    row.append(b.symbol(nm))
            in_exprs.append(DimsExprs(row))

        out_exprs = [list(e) for e in plg.get_output_shapes(in_exprs, [], b)]
        for i, exprs in enumerate(out_exprs):
            for j, e in enumerate(exprs):
                if not isinstance(e, IDimensionExpr):
                    raise AssertionError(f"output {i} dim {j} is {e!r}, not a dimension expression "
                                         "(fake ShapeExpr or int leaked out of the descriptor?)")
        out_shapes = [tuple(e.evaluate(bindings) for e in exprs) for exprs in out_exprs]

        def io_descs(types_formats):
            return [DynamicPluginTensorDesc(PluginTensorDesc(shape, t, f))
                    for shape, (t, f) in zip(in_shapes + out_shapes, types_formats)]

        default_tf = [(t, TensorFormat.LINEAR) for t in in_dtypes + out_types]
        flat = plg.get_supported_format_combinations(io_descs(default_tf), n_in)
        n_io = n_in + n_out
        if len(flat) % n_io:
            raise AssertionError(f"{len(flat)} format descriptors is not a multiple of {n_io} I/Os")
        combos = [[(d.type, d.format) for d in flat[k:k + n_io]] for k in range(0, len(flat), n_io)]
        if combination is None:
            matches = [k for k, c in enumerate(combos)
                       if [t for t, _ in c[:n_in]] == in_dtypes and all(f is TensorFormat.LINEAR for _, f in c)]
            if not matches:
                raise ValueError(f"no supported combination has input types {[d.name for d in in_dtypes]} "
                                 f"and LINEAR formats; supported: {[[(t.name, f.name) for t, f in c] for c in combos]}")
            combination = matches[0]
        chosen = combos[combination]
        descs = io_descs(chosen)
        plg.configure_plugin(descs[:n_in], descs[n_in:])
        tactics = list(plg.get_valid_tactics())
        if tactic is None:
            tactic = tactics[0] if tactics else 0
        elif tactics and tactic not in tactics:
            raise ValueError(f"tactic {tactic} not among valid tactics {tactics}")
        plg.set_tactic(tactic)

        res = BuildResult(
            plugin=plg, is_aot=hasattr(plg, "get_launch_params"), input_dtypes=in_dtypes,
            input_shapes=in_shapes, input_dim_exprs=[list(r) for r in in_exprs],
            output_dtypes=[t for t, _ in chosen[n_in:]], output_shape_exprs=out_exprs, output_shapes=out_shapes,
            combinations=combos, chosen_combination=combination, tactics=tactics, tactic=tactic, bindings=bindings,
        )
        if res.is_aot:
            sink, setter = KernelLaunchParamsSink(), SymExprsSink()
            plg.get_launch_params(in_exprs, descs, n_in, sink, setter, b)
            for k in KernelLaunchParamsSink.FIELDS:
                impl = getattr(sink, k)
                if impl.expr is None:
                    raise AssertionError(f"launch param {k} has no expression (assigned a float/numpy "
                                         "scalar, or a SymInt32 made outside the aot_impl?)")
                res.launch[k] = impl.expr
            for i in range(setter.nbSymExprs):
                impl = setter.items[i]
                if impl.expr is None:
                    raise AssertionError(f"extra arg {i} has no expression")
                res.extra_args.append((impl.dtype, impl.expr))
            name, code = plg.get_kernel([d.desc for d in descs[:n_in]], [d.desc for d in descs[n_in:]])
            res.kernel_name, res.ptx = name, code
        else:
            res.serialized_fields = list(plg.get_fields_to_serialize())
        return res


# --------------------------------------------------------------------------------------
# Installing / removing the stand-in
# --------------------------------------------------------------------------------------

_ACTIVE = False


def _matches(name: str, prefixes: Sequence[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


@contextlib.contextmanager
def standin(purge: Sequence[str] = ()) -> Iterator[Standin]:
    """Install the stand-in ``tensorrt`` + NVIDIA's ``tensorrt.plugin`` for the ``with`` body.

    Every ``tensorrt`` / ``tensorrt.*`` entry of ``sys.modules`` (and every module
    under the ``purge`` prefixes, e.g. ``"trt_kernels.plugins"``, so that they are
    imported afresh against the stand-in and dropped afterwards) is set aside on
    entry and restored on exit, so code outside the block still sees "no TensorRT".
    Each use gets a fresh plugin registry.  Raises ``RuntimeError`` if the bindings
    wheel is missing (see :func:`unavailable_reason`).
    """
    global _ACTIVE
    if _ACTIVE:
        raise RuntimeError("trt_kernels.plugins.standin.standin() is already active (nesting is not supported)")
    bindings_dir, reason = find_bindings_dir()
    if bindings_dir is None:
        raise RuntimeError(reason)
    prefixes = ("tensorrt",) + tuple(purge)
    saved = {k: v for k, v in sys.modules.items() if _matches(k, prefixes)}
    parents_saved = {}
    for k in saved:
        parent, _, child = k.rpartition(".")
        if parent and parent in sys.modules and not _matches(parent, prefixes):
            parents_saved[k] = getattr(sys.modules[parent], child, None)
        del sys.modules[k]
    importlib.invalidate_caches()
    _ACTIVE = True
    try:
        trt = _make_trt_module(bindings_dir)
        sys.modules["tensorrt"] = trt
        with warnings.catch_warnings():  # NVIDIA's docstrings have invalid escapes ('\\s')
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", SyntaxWarning)
            trtp = importlib.import_module("tensorrt.plugin")
        yield Standin(trt, trtp)
    finally:
        for k in [k for k in sys.modules if _matches(k, prefixes)]:
            mod = sys.modules.pop(k)
            parent, _, child = k.rpartition(".")
            if parent and parent in sys.modules and not _matches(parent, prefixes):
                if getattr(sys.modules[parent], child, None) is mod:
                    try:
                        delattr(sys.modules[parent], child)
                    except AttributeError:
                        pass
        sys.modules.update(saved)
        for k, old in parents_saved.items():
            parent, _, child = k.rpartition(".")
            if old is not None and parent in sys.modules:
                setattr(sys.modules[parent], child, old)
        _ACTIVE = False


def standin_fixture(purge: Sequence[str] = ()) -> Iterator[Standin]:
    """Body of a pytest fixture: skips when the wheel is missing, else yields a :class:`Standin`.

    Usage::

        @pytest.fixture
        def qdp():
            yield from standin.standin_fixture()
    """
    reason = unavailable_reason()
    if reason is not None:
        import pytest

        pytest.skip(f"NVIDIA tensorrt.plugin sources unavailable: {reason}")
    with standin(purge) as env:
        yield env
