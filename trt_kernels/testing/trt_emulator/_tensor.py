"""A network's data: ``ITensor``, the ``ILayer`` base, ``Weights``, and shape inference (``Shapes``).

Shape inference is TensorRT's: every tensor has a data type and one dimension expression per axis
(``IDimensionExpr``: a constant, a symbol standing for a dynamic axis of a network input, or arithmetic
over them), and a small integer tensor computed from shapes (a *shape tensor*: the output of a shape
layer, and what gathers, concatenations, slices, elementwise arithmetic and casts make of it) also has
its values as expressions, so a reshape or slice driven by it has known output dimensions. Each layer
kind says how (``_infer``); ``Shapes`` runs them, each layer after the layers it reads, once per change:
while the network is defined with the network's expression builder (what ``ITensor.shape`` /
``ITensor.dtype`` answer), and once more in each build with the build's own.
"""

import ctypes
import warnings
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence

import numpy as np

from . import _version
from ._dims import Dims, IDimensionExpr, IExprBuilder
from ._enums import ITEMSIZE, DataType, NetworkDefinitionCreationFlag, Severity
from ._logging import report
from ._strict import Strict, missing_member, unpicklable

_NP = {DataType.FLOAT: np.float32, DataType.HALF: np.float16, DataType.INT8: np.int8, DataType.INT32: np.int32,
       DataType.INT64: np.int64, DataType.BOOL: np.bool_, DataType.UINT8: np.uint8}

#: a shape tensor is an INT32/INT64 tensor of rank 0 or 1 with at most this many elements whose values are
#: known as expressions (TensorRT's limit for shape tensors is larger; the emulator's models need a few)
MAX_SHAPE_VALUES = 64


def dim_symbol(tensor_name: str, axis: int) -> str:
    """The symbol standing for a dynamic axis of a network input."""
    return f"{tensor_name}[{axis}]"


class LayerError(ValueError):
    """A layer TensorRT would refuse (wrong types, ranks, axes, shapes or weights), naming the layer."""


class Info(NamedTuple):
    """What shape inference knows of a tensor."""
    dtype: DataType
    dims: List[IDimensionExpr]
    #: the element values of a shape tensor (row-major), as expressions; None for other tensors
    values: Optional[List[IDimensionExpr]] = None


class Shapes:
    """Data types, dimension expressions and shape-tensor values of one network's tensors, inferred with
    ``builder``. ``leaf(t)`` gives a network input's or a plugin output's :class:`Info` (those are inferred
    elsewhere); every other layer's come from its ``_infer``, its inputs' first. The network is a graph, not
    a sequence: a layer may read a tensor made by a layer added after it (Torch-TensorRT adds a shuffle,
    then the shape tensor it sets as the shuffle's input 1), so inference follows the inputs, and a
    change of a layer forgets what it and everything downstream of it inferred (``invalidate``)."""

    def __init__(self, network, builder: IExprBuilder, leaf: Callable[["ITensor"], Info]):
        self.net, self.builder, self._leaf = network, builder, leaf
        self._info: Dict[int, Info] = {}
        self._users: Dict[int, list] = {}  # id(layer) -> layers whose inference read its outputs

    def info(self, t: "ITensor") -> Info:
        found = self._info.get(id(t))
        if found is not None:
            return found
        layer = t._producer
        if layer is None or not hasattr(layer, "_infer"):
            got = self._info[id(t)] = self._leaf(t)
            return got
        self._after_inputs(layer)
        return self._info[id(t)]

    def _ready(self, layer) -> bool:
        return all(id(t) in self._info for t in layer._outputs)

    def _after_inputs(self, layer) -> None:
        """Infer ``layer``, each standard layer it depends on first (iteratively: graphs are deep)."""
        stack, on_path = [(layer, False)], set()
        while stack:
            node, inputs_done = stack.pop()
            if self._ready(node):
                continue
            if inputs_done:
                on_path.discard(id(node))
                self.infer(node)
                continue
            if id(node) in on_path:
                raise LayerError(f"{node._name}: the network has a cycle through this layer")
            on_path.add(id(node))
            stack.append((node, True))
            for t in node._inputs:
                p = None if t is None else t._producer
                if p is not None and hasattr(p, "_infer") and id(t) not in self._info:
                    stack.append((p, False))

    def infer(self, layer) -> List[Info]:
        """Infer ``layer``'s outputs (its inputs inferred already, or leaves) and remember them."""
        try:
            outs = layer._infer(self)
        except ArithmeticError as e:  # dimension arithmetic TensorRT cannot do either (a division by zero)
            raise LayerError(f"{layer._name}: {e}") from e
        for t in layer._inputs:
            if t is not None and t._producer is not None:
                users = self._users.setdefault(id(t._producer), [])
                if not any(u is layer for u in users):
                    users.append(layer)
        for t, info in zip(layer._outputs, outs):
            self._info[id(t)] = info
        return outs

    def put(self, t: "ITensor", info: Info) -> None:
        self._info[id(t)] = info

    def invalidate(self, layer) -> None:
        """``layer`` changed: what it and the layers downstream of it inferred is inferred again when asked."""
        stack, seen = [layer], set()
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if hasattr(node, "_infer"):
                for t in node._outputs:
                    self._info.pop(id(t), None)
            stack.extend(self._users.get(id(node), ()))

    def clear(self) -> None:
        """A network input changed: everything is inferred again."""
        self._info.clear()
        self._users.clear()

    # ----- helpers for the layers' _infer -----
    def dims(self, t: "ITensor") -> List[IDimensionExpr]:
        return list(self.info(t).dims)

    def dtype(self, t: "ITensor") -> DataType:
        return self.info(t).dtype

    def values(self, t: "ITensor", what: str) -> List[IDimensionExpr]:
        """The values of shape tensor ``t`` (a reshape's dimensions, a slice's start...), or LayerError."""
        info = self.info(t)
        if info.values is None:
            raise LayerError(f"{what}: {t._name!r} is not a shape tensor whose values the TensorRT emulator knows "
                             "(an INT32/INT64 tensor of rank <= 1 computed from shapes and constants); data-dependent "
                             "shapes are not emulated")
        return list(info.values)


def _set_modeled(obj, name: str, value, plain=()) -> None:
    """Set ``name`` if the emulated class models it (a property, one of ``plain``, or the emulator's own
    ``_`` names); any other attribute of the binding is an ``AttributeError`` naming it, never a silent
    Python attribute (``layer.precision = ...`` must not look applied)."""
    if not name.startswith("_") and name not in plain and not isinstance(getattr(type(obj), name, None), property):
        raise AttributeError(missing_member(type(obj), name))
    object.__setattr__(obj, name, value)


@unpicklable
class ITensor(Strict):
    """A tensor of a network. Hashable by identity (Torch-TensorRT keys dicts with it).

    A network input's or a plugin output's type and shape are stored; every other tensor's are inferred
    by its layer (``Shapes``), so they follow later changes of the layer (``IShuffleLayer.reshape_dims``)."""

    def __init__(self, network, name: str, dtype=None, shape: Optional[Sequence[int]] = None, producer=None):
        self._network, self._name, self._producer = network, name, producer
        self._dtype = dtype
        self._shape = Dims(shape) if shape is not None else None
        self._exprs = None  # a plugin output's shape expressions (the network's), set when the layer is added

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = str(value)

    def _info(self) -> Info:
        return self._network._info(self)

    def _get_dtype(self):
        return self._info().dtype

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
        if self.is_network_input:
            self._dtype = value
            self._network._changed(None)
            return
        current = self._info().dtype
        if value == current:
            return
        net = self._network
        if net.get_flag(NetworkDefinitionCreationFlag.STRONGLY_TYPED):
            report(net._logger, Severity.ERROR,
                   f"ITensor::setType (TensorRT emulator): {self._name!r} is not a network input of a strongly typed "
                   f"network, so its type is inferred ({current.name}); {value.name} was not applied")
            return
        raise NotImplementedError(f"ITensor.dtype: converting {self._name!r} from {current.name} to {value.name} "
                                  "on a weakly typed network is not emulated by the TensorRT emulator (build the "
                                  "network strongly typed, or add a cast layer)")

    if _version.PROFILE == "10.15":
        dtype = property(_get_dtype, _set_dtype)
    else:  # read-only from TensorRT 11.0
        dtype = property(_get_dtype)
    del _get_dtype, _set_dtype

    @property
    def shape(self) -> Dims:
        """Each dimension, -1 where it is known only at run time."""
        return Dims([e.get_constant_value() if e.is_constant() else -1 for e in self._info().dims])

    @shape.setter
    def shape(self, value) -> None:
        if not self.is_network_input:
            raise TypeError(f"ITensor.shape can only be set on network inputs ({self._name!r} is not one)")
        self._shape = Dims(value)
        self._network._changed(None)

    @property
    def is_network_input(self) -> bool:
        return self._producer is None and self in self._network._inputs

    @property
    def is_network_output(self) -> bool:
        return any(t is self for t in self._network._outputs)

    @property
    def is_shape_tensor(self) -> bool:
        """Whether the tensor's values are shape arithmetic (an INT32/INT64 tensor of rank <= 1 computed from
        shapes and constants)."""
        return self._info().values is not None

    def __repr__(self):
        try:
            what = f"{self.dtype.name}, {tuple(self.shape)}"
        except Exception:  # noqa: BLE001 - a tensor whose layer TensorRT refuses
            what = "?"
        return f"ITensor({self._name!r}, {what})"

    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other

    def __setattr__(self, name, value):
        _set_modeled(self, name, value)


@unpicklable
class ILayer(Strict):
    """The base of every layer: name, type, inputs and outputs. ``_INPUTS`` is how many inputs
    ``set_input`` may set (TensorRT's per-layer limit); ``_changed()`` after any change of an attribute
    that shape inference reads."""

    _TYPE = None
    _KIND = "Layer"
    _INPUTS = 1

    def __init__(self, network, inputs: List[Optional[ITensor]]):
        self._network = network
        self._inputs: List[Optional[ITensor]] = list(inputs)
        self._outputs: List[ITensor] = []
        self._index = len(network._layers)
        self._name = f"(Unnamed Layer* {self._index}) [{self._KIND}]"
        self.metadata = ""

    def __setattr__(self, name, value):
        _set_modeled(self, name, value, plain=("metadata",))

    def _add_output(self, dtype=None, shape=None) -> ITensor:
        t = ITensor(self._network, f"{self._name}_output_{len(self._outputs)}", dtype, shape, producer=self)
        self._outputs.append(t)
        return t

    def _changed(self) -> None:
        self._network._changed(self)

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

    def get_input(self, index: int) -> Optional[ITensor]:
        return self._inputs[index]

    def get_output(self, index: int) -> ITensor:
        return self._outputs[index]

    def set_input(self, index: int, tensor: ITensor) -> None:
        """Replace input ``index`` or, where the layer takes optional inputs (a slice's start, size and
        stride; a shuffle's reshape dimensions), add one; TensorRT reports an index beyond the layer's
        inputs as an API usage error."""
        index = int(index)
        self._network._check_tensor(tensor, f"{type(self).__name__}.set_input")
        if not 0 <= index < self._INPUTS:
            report(self._network._logger, Severity.ERROR,
                   f"ILayer::setInput: Error Code 3: API Usage Error (Parameter check failed, condition: index < "
                   f"{self._INPUTS}; {self._name} takes at most {self._INPUTS} inputs, got index {index}.)")
            return
        while len(self._inputs) <= index:
            self._inputs.append(None)
        self._inputs[index] = tensor
        self._changed()

    def _optional(self, index: int) -> Optional[ITensor]:
        """Input ``index`` where it was set (optional inputs may be absent or None)."""
        return self._inputs[index] if index < len(self._inputs) else None


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
        if self._dtype == DataType.BF16:
            return np.frombuffer(self._data, dtype=np.uint16).copy()
        return np.frombuffer(self._data, dtype=_NP[self._dtype]).copy()


def as_weights(value, what: str) -> "Weights":
    """``value`` as ``Weights``: the bindings take a numpy array wherever they take weights (pybind11 converts
    it), and ``None`` as empty weights."""
    if value is None:
        return Weights()
    if isinstance(value, Weights):
        return value
    if isinstance(value, np.ndarray):
        return Weights(value)
    raise TypeError(f"{what}: expected tensorrt.Weights or a numpy array, got {type(value).__name__}")
