"""Network definition: ``ITensor``, the emulated layer kinds, ``INetworkDefinition``, ``Weights``.

Layer kinds emulated: network inputs, QDP plugin layers (``add_plugin``, AOT or JIT), and the
trivial layers Torch-TensorRT adds around plugin layers: ``add_cast`` (int64 outputs, forced
copies of inputs), ``add_identity`` and ``add_constant``. Every other ``add_*`` is an
``AttributeError`` naming it.
"""

import ctypes
import itertools
import warnings
from typing import Any, List, Optional, Sequence

import numpy as np

from . import _version
from ._dims import Dims, DimsExprs, IDimensionExpr, IExprBuilder, foreign
from ._enums import ITEMSIZE, DataType, LayerType, NetworkDefinitionCreationFlag, QuickPluginCreationRequest, Severity
from ._logging import report
from ._strict import Strict, unpicklable

_NP = {DataType.FLOAT: np.float32, DataType.HALF: np.float16, DataType.INT8: np.int8, DataType.INT32: np.int32,
       DataType.INT64: np.int64, DataType.BOOL: np.bool_, DataType.UINT8: np.uint8}


def dim_symbol(tensor_name: str, axis: int) -> str:
    """The symbol standing for a dynamic axis of a network input."""
    return f"{tensor_name}[{axis}]"


@unpicklable
class ITensor(Strict):
    """A tensor of a network. Hashable by identity (Torch-TensorRT keys dicts with it)."""

    def __init__(self, network, name: str, dtype, shape: Sequence[int], producer=None):
        self._network, self._name, self._dtype, self._producer = network, name, dtype, producer
        self._shape = Dims(shape)
        self._exprs: Optional[DimsExprs] = None  # set for plugin outputs when the layer is added

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = str(value)

    def _get_dtype(self):
        return self._dtype

    def _set_dtype(self, value):
        """TensorRT 10.x's ``ITensor::setType`` (deprecated in 10.12; 11.0 removed the setter): a network
        input takes the type; any other tensor keeps its inferred type. Setting that same type is
        tolerated; on a strongly typed network another type is an error reported through the logger, and
        the type is not updated. (On a weakly typed network TensorRT converts an output to the type set;
        the emulator does not emulate that conversion and says so.)"""
        warnings.warn("setting ITensor.dtype is deprecated since TensorRT 10.12 (superseded by strong typing)",
                      DeprecationWarning, stacklevel=2)
        if not isinstance(value, DataType):
            raise TypeError(f"ITensor.dtype: expected a tensorrt.DataType, got {value!r}")
        if self.is_network_input or value == self._dtype:
            self._dtype = value
            return
        net = self._network
        if net.get_flag(NetworkDefinitionCreationFlag.STRONGLY_TYPED):
            report(net._logger, Severity.ERROR,
                   f"ITensor::setType (TensorRT emulator): {self._name!r} is not a network input of a strongly typed "
                   f"network, so its type is inferred ({self._dtype.name}); {value.name} was not applied")
            return
        raise NotImplementedError(f"ITensor.dtype: converting {self._name!r} from {self._dtype.name} to {value.name} "
                                  "on a weakly typed network is not emulated by the TensorRT emulator (build the "
                                  "network strongly typed, or add a cast layer)")

    if _version.PROFILE == "10.15":
        dtype = property(_get_dtype, _set_dtype)
    else:  # read-only from TensorRT 11.0
        dtype = property(_get_dtype)
    del _get_dtype, _set_dtype

    @property
    def shape(self) -> Dims:
        return Dims(self._shape)

    @shape.setter
    def shape(self, value) -> None:
        if not self.is_network_input:
            raise TypeError(f"ITensor.shape can only be set on network inputs ({self._name!r} is not one)")
        self._shape = Dims(value)

    @property
    def is_network_input(self) -> bool:
        return self._producer is None and self in self._network._inputs

    @property
    def is_network_output(self) -> bool:
        return any(t is self for t in self._network._outputs)

    def __repr__(self):
        return f"ITensor({self._name!r}, {self._dtype.name}, {tuple(self._shape)})"

    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other


@unpicklable
class ILayer(Strict):
    _TYPE = None
    _KIND = "Layer"

    def __init__(self, network, inputs: List[ITensor]):
        self._network = network
        self._inputs = list(inputs)
        self._outputs: List[ITensor] = []
        self._index = len(network._layers)
        self._name = f"(Unnamed Layer* {self._index}) [{self._KIND}]"
        self.metadata = ""

    def _add_output(self, dtype, shape) -> ITensor:
        t = ITensor(self._network, f"{self._name}_output_{len(self._outputs)}", dtype, shape, producer=self)
        self._outputs.append(t)
        return t

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = str(value)

    @property
    def type(self):
        return self._TYPE

    @property
    def num_inputs(self) -> int:
        return len(self._inputs)

    @property
    def num_outputs(self) -> int:
        return len(self._outputs)

    def get_input(self, index: int) -> ITensor:
        return self._inputs[index]

    def get_output(self, index: int) -> ITensor:
        return self._outputs[index]


class IPluginV3Layer(ILayer):
    _TYPE = LayerType.PLUGIN_V3
    _KIND = "PluginV3"

    def __init__(self, network, inputs, plugin, request):
        super().__init__(network, inputs)
        self._plugin, self._request = plugin, request
        types = plugin.get_output_data_types([t.dtype for t in inputs], [len(t._shape) for t in inputs])
        in_exprs = [network._exprs_of(t) for t in inputs]
        out_exprs = plugin.get_output_shapes(in_exprs, [], network._expr_builder)
        for exprs in out_exprs:
            for e in exprs:
                why = "" if not isinstance(e, IDimensionExpr) else foreign(e, network._expr_builder)
                if not isinstance(e, IDimensionExpr) or why:
                    raise ValueError(f"add_plugin: output shape {e!r}: {why or 'not a dimension expression'}")
        for dt, exprs in zip(types, out_exprs):
            t = self._add_output(dt, [e.get_constant_value() if e.is_constant() else -1 for e in exprs])
            t._exprs = DimsExprs(exprs)

    @property
    def plugin(self):
        return self._plugin


class ICastLayer(ILayer):
    _TYPE = LayerType.CAST
    _KIND = "Cast"

    def __init__(self, network, tensor, to_type):
        super().__init__(network, [tensor])
        self.to_type = to_type
        self._add_output(to_type, tensor._shape)._exprs = network._exprs_of(tensor)


class IIdentityLayer(ILayer):
    _TYPE = LayerType.IDENTITY
    _KIND = "Identity"

    def __init__(self, network, tensor):
        super().__init__(network, [tensor])
        self._add_output(tensor.dtype, tensor._shape)._exprs = network._exprs_of(tensor)


class IConstantLayer(ILayer):
    _TYPE = LayerType.CONSTANT
    _KIND = "Constant"

    def __init__(self, network, shape, weights):
        super().__init__(network, [])
        self._weights = weights
        shape = [int(s) for s in shape]
        if int(np.prod(shape, dtype=np.int64)) != weights.size:
            raise ValueError(f"add_constant: shape {tuple(shape)} holds {int(np.prod(shape))} elements but the "
                             f"weights hold {weights.size}")
        self._add_output(weights.dtype, shape)

    @property
    def weights(self):
        return self._weights

    @property
    def shape(self) -> Dims:
        return Dims(self._outputs[0]._shape)


@unpicklable
class Weights(Strict):
    """Host weights. TensorRT's bindings take ``(dtype, pointer, count)``, a numpy array, or ``(dtype)``
    for empty weights; the emulator copies the bytes at once."""

    def __init__(self, a=None, ptr: Optional[int] = None, count: Optional[int] = None):
        if a is None:
            self._dtype, self._data = DataType.FLOAT, b""
        elif isinstance(a, np.ndarray):
            dt = {np.dtype(v): k for k, v in _NP.items()}.get(a.dtype)
            if dt is None:
                raise TypeError(f"Weights: numpy dtype {a.dtype} has no TensorRT DataType")
            self._dtype, self._data = dt, np.ascontiguousarray(a).tobytes()
        elif isinstance(a, DataType) and ptr is None:
            self._dtype, self._data = a, b""
        elif isinstance(a, DataType):
            nbytes = int(count) * ITEMSIZE[a]
            self._dtype, self._data = a, ctypes.string_at(int(ptr), nbytes) if nbytes else b""
        else:
            raise TypeError(f"Weights({a!r}, ...): expected a numpy array, or a DataType with pointer and count")

    @property
    def dtype(self):
        return self._dtype

    @property
    def size(self) -> int:
        """The number of elements (``count`` is only the constructor's argument in TensorRT)."""
        return len(self._data) // ITEMSIZE[self._dtype] if self._data else 0

    @property
    def nbytes(self) -> int:
        return len(self._data)

    def numpy(self) -> np.ndarray:
        return np.frombuffer(self._data, dtype=_NP[self._dtype]).copy()


_network_ids = itertools.count()


@unpicklable
class INetworkDefinition(Strict):
    def __init__(self, flags: int = 0, logger=None):
        self._flags = int(flags)
        self._logger = logger  # the builder's, for errors TensorRT reports while the network is defined
        self._inputs: List[ITensor] = []
        self._outputs: List[ITensor] = []
        self._layers: List[ILayer] = []
        self._expr_builder = IExprBuilder()
        self.name = f"Unnamed Network {next(_network_ids)}"

    # ----- flags -----
    @property
    def flags(self) -> int:
        return self._flags

    def get_flag(self, flag) -> bool:
        return bool(self._flags & (1 << int(flag)))

    # ----- inputs / outputs -----
    def add_input(self, name: str, dtype, shape) -> ITensor:
        if not isinstance(dtype, DataType):
            raise TypeError(f"add_input: dtype must be a tensorrt.DataType, got {dtype!r}")
        if any(t.name == name for t in self._inputs):
            raise ValueError(f"add_input: the network already has an input named {name!r}")
        t = ITensor(self, str(name), dtype, shape)
        self._inputs.append(t)
        return t

    def mark_output(self, tensor: ITensor) -> None:
        self._check_tensor(tensor, "mark_output")
        if not any(t is tensor for t in self._outputs):
            self._outputs.append(tensor)

    def unmark_output(self, tensor: ITensor) -> None:
        self._outputs = [t for t in self._outputs if t is not tensor]

    @property
    def num_inputs(self) -> int:
        return len(self._inputs)

    @property
    def num_outputs(self) -> int:
        return len(self._outputs)

    @property
    def num_layers(self) -> int:
        return len(self._layers)

    def get_input(self, index: int) -> ITensor:
        return self._inputs[index]

    def get_output(self, index: int) -> ITensor:
        return self._outputs[index]

    def get_layer(self, index: int) -> ILayer:
        return self._layers[index]

    def __getitem__(self, index: int) -> ILayer:
        return self._layers[index]

    def __len__(self) -> int:
        return len(self._layers)

    # ----- layers -----
    def add_plugin(self, tuple, aot: Optional[bool] = None) -> IPluginV3Layer:  # noqa: A002 (the binding's name)
        """A QDP plugin layer: ``tuple`` is ``trtp.op.ns.name(*itensors, **attrs)`` (a callable taking the
        plugin creation request) or the ``(inputs, shape_inputs, plugin)`` it returns."""
        request = self._request(aot)
        created = tuple(request) if callable(tuple) else tuple
        inputs, shape_inputs, plugin = created
        if shape_inputs:
            raise NotImplementedError("shape inputs are not supported for QDP plugins")
        for t in inputs:
            self._check_tensor(t, "add_plugin")
        return self._append(IPluginV3Layer(self, inputs, plugin, request))

    def add_cast(self, input: ITensor, to_type) -> ICastLayer:  # noqa: A002
        self._check_tensor(input, "add_cast")
        if to_type not in ITEMSIZE:
            raise TypeError(f"add_cast: casting to {to_type} is not emulated")
        return self._append(ICastLayer(self, input, to_type))

    def add_identity(self, input: ITensor) -> IIdentityLayer:  # noqa: A002
        self._check_tensor(input, "add_identity")
        return self._append(IIdentityLayer(self, input))

    def add_constant(self, shape, weights: Weights) -> IConstantLayer:
        if not isinstance(weights, Weights):
            raise TypeError(f"add_constant: weights must be tensorrt.Weights, got {type(weights).__name__}")
        return self._append(IConstantLayer(self, shape, weights))

    # ----- the emulator's own -----
    def _append(self, layer):
        self._layers.append(layer)
        return layer

    def _check_tensor(self, t, what: str) -> None:
        if not isinstance(t, ITensor) or t._network is not self:
            raise TypeError(f"{what}: {t!r} is not a tensor of this network")

    def _exprs_of(self, t: ITensor) -> DimsExprs:
        if t._exprs is not None:
            return t._exprs
        b = self._expr_builder
        return DimsExprs([b._symbol(dim_symbol(t.name, j)) if d < 0 else b.constant(int(d))
                          for j, d in enumerate(t._shape)])

    def _request(self, aot: Optional[bool]):
        F, Q = NetworkDefinitionCreationFlag, QuickPluginCreationRequest
        if aot is True:
            return Q.STRICT_AOT
        if aot is False:
            return Q.STRICT_JIT
        prefer_aot, prefer_jit = self.get_flag(F.PREFER_AOT_PYTHON_PLUGINS), self.get_flag(F.PREFER_JIT_PYTHON_PLUGINS)
        if prefer_aot and prefer_jit:
            raise ValueError("Both NetworkDefinitionCreationFlag.PREFER_AOT_PYTHON_PLUGINS and "
                             "PREFER_JIT_PYTHON_PLUGINS cannot be specified at the same time.")
        if prefer_aot:
            return Q.PREFER_AOT
        if prefer_jit:
            return Q.PREFER_JIT
        return Q.UNKNOWN


def np_dtype(dt) -> Any:
    return _NP[dt]
