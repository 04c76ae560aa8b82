"""TensorRT's standard layers as the emulator models them.

Each class has its TensorRT binding's Python attributes (``IShuffleLayer.reshape_dims``,
``IConvolutionLayer.stride_nd``, ...) with TensorRT's defaults, and two duties of the emulator's own:

- ``_infer(shapes)``: the output types and dimension expressions (and, for shape tensors, their values),
  raising :class:`~._tensor.LayerError` where TensorRT refuses the layer: inputs of different types where
  a strongly typed network needs one type, ranks that differ, dimensions that do not broadcast,
  axes out of range, weights of the wrong count or type, a reshape that changes the volume, a static slice
  out of bounds. Networks are strongly typed (Torch-TensorRT 2.11's default): outputs take the type
  their inputs give them.
- ``_params(shapes)``: what the engine plan records to run the layer (JSON; dimension expressions
  where the value is known only at run time).

The computation itself, in torch, is ``_compute``'s. Tensor formats are LINEAR throughout (no
vectorized formats, no reformatting layers). Layer kinds not here are ``AttributeError`` s naming the
``add_*`` method (``_network``).
"""

import math
from typing import Any, Dict, List, Optional, Sequence

from ._dims import Dims, IDimensionExpr
from ._enums import (
    ITEMSIZE,
    ActivationType,
    DataType,
    DimensionOperation,
    ElementWiseOperation,
    GatherMode,
    LayerType,
    MatrixOperation,
    PaddingMode,
    PoolingType,
    ReduceOperation,
    SampleMode,
    ScaleMode,
    UnaryOperation,
)
from ._tensor import MAX_SHAPE_VALUES, ILayer, Info, LayerError, Shapes, Weights, as_weights

D = DimensionOperation
FLOATS = (DataType.FLOAT, DataType.HALF, DataType.BF16)
INTS = (DataType.INT32, DataType.INT64)
SHAPE_TYPES = (DataType.INT32, DataType.INT64)


# ----- expression helpers -----

def const(e: IDimensionExpr) -> Optional[int]:
    return e.get_constant_value() if e.is_constant() else None


def same(a: IDimensionExpr, b: IDimensionExpr) -> bool:
    """Known equal: the same expression, or equal constants."""
    return a is b or (a.is_constant() and b.is_constant() and const(a) == const(b)) or repr(a) == repr(b)


def product(sh: Shapes, dims: Sequence[IDimensionExpr]) -> IDimensionExpr:
    out = sh.builder.constant(1)
    for d in dims:
        out = sh.builder._operation(D.PROD, out, d)
    return out


def quotient(sh: Shapes, numerator: Sequence[IDimensionExpr], denominator: Sequence[IDimensionExpr]):
    """``prod(numerator) // prod(denominator)``, cancelling the factors the two share first (so that the
    batch ``b`` of ``(b, 4, 5)`` reshaped to ``(b, -1)`` gives ``20``, as TensorRT's shape analysis does)."""
    num, den = list(numerator), []
    for d in denominator:
        match = next((k for k, n in enumerate(num) if same(n, d)), None)
        if match is None:
            den.append(d)
        else:
            del num[match]
    return sh.builder._operation(D.FLOOR_DIV, product(sh, num), product(sh, den))


def to_json(es: Sequence[IDimensionExpr]) -> List[Any]:
    return [e._to_json() for e in es]


def _shape_text(dims: Sequence[IDimensionExpr]) -> str:
    return "(" + ", ".join(repr(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def _type_names(types) -> str:
    return "/".join(t.name for t in types)


def broadcast(sh: Shapes, layer: str, what: str, shapes: Sequence[Sequence[IDimensionExpr]]) -> List[IDimensionExpr]:
    """TensorRT's broadcast of several inputs: equal ranks, and on each axis equal dimensions or 1."""
    ranks = {len(s) for s in shapes}
    if len(ranks) != 1:
        raise LayerError(f"{layer}: {what} inputs must have the same rank (TensorRT does not broadcast across ranks: "
                         f"insert a shuffle), got shapes {', '.join(_shape_text(s) for s in shapes)}")
    out = []
    for axis in range(ranks.pop()):
        ds = [s[axis] for s in shapes]
        known = [d for d in ds if const(d) != 1]
        if not known:
            out.append(ds[0])
            continue
        first = known[0]
        for d in known[1:]:
            if same(d, first):
                continue
            if d.is_constant() and first.is_constant():
                raise LayerError(f"{layer}: broadcast dimensions must be conformable ({what}: dimensions "
                                 f"{const(first)} and {const(d)} on axis {axis}, each must be equal or 1; shapes "
                                 + ", ".join(_shape_text(s) for s in shapes) + ")")
            first = sh.builder._operation(D.MAX, first, d)  # a run-time dimension: broadcast where one is 1
        out.append(first)
    return out


def check_axis(layer: str, what: str, axis: int, rank: int) -> int:
    if not 0 <= axis < rank:
        raise LayerError(f"{layer}: {what} {axis} is out of range for a tensor of rank {rank} (0..{rank - 1})")
    return axis


def axes_of(layer: str, mask: int, rank: int) -> List[int]:
    mask = int(mask)
    if mask < 0 or mask >> rank:
        raise LayerError(f"{layer}: axes bit mask {mask:#b} names an axis beyond rank {rank}")
    return [a for a in range(rank) if mask >> a & 1]


def _ints(value, what: str) -> List[int]:
    try:
        return [int(v) for v in value]
    except TypeError:
        raise TypeError(f"{what}: expected a sequence of ints (Dims), got {value!r}") from None


def _weights_json(w: Weights) -> Dict[str, Any]:
    return {"dtype": w.dtype.name, "data": w._data.hex()}


class _Layer(ILayer):
    """A standard layer (one output): inferred by ``Shapes``; a change of an attribute re-infers it and what
    depends on it."""

    def __init__(self, network, inputs):
        super().__init__(network, inputs)
        self._add_output()

    def _set(self, name: str, value) -> None:
        object.__setattr__(self, "_" + name, value)
        self._changed()

    def _in(self, sh: Shapes, index: int = 0) -> Info:
        t = self._optional(index)
        if t is None:
            raise LayerError(f"{self._name}: input {index} is not set")
        return sh.info(t)

    def _infer(self, sh: Shapes) -> List[Info]:
        raise NotImplementedError

    def _params(self, sh: Shapes) -> Dict[str, Any]:
        return {}


def _prop(name: str, convert=lambda v: v):
    """The binding attribute ``name``, kept as ``_name``; a ``Dims`` is handed out as a copy (changing it in
    place changes nothing, as with the bindings: assign it back)."""
    def get(self):
        value = getattr(self, "_" + name)
        return Dims(value) if isinstance(value, list) else value

    def put(self, value):
        self._set(name, convert(value))

    return property(get, put)


def _enum(cls):
    def convert(v):
        if not isinstance(v, cls):
            raise TypeError(f"expected a tensorrt.{cls.__name__}, got {v!r}")
        return v
    return convert


def _dims(v) -> Dims:
    return Dims(_ints(v, "Dims"))


# ======================================================================================
# elementwise, unary, activation, select


_LOGICAL = (ElementWiseOperation.AND, ElementWiseOperation.OR, ElementWiseOperation.XOR)
_COMPARE = (ElementWiseOperation.EQUAL, ElementWiseOperation.GREATER, ElementWiseOperation.LESS)
_SHAPE_OPS = {ElementWiseOperation.SUM: D.SUM, ElementWiseOperation.SUB: D.SUB, ElementWiseOperation.PROD: D.PROD,
              ElementWiseOperation.FLOOR_DIV: D.FLOOR_DIV, ElementWiseOperation.MAX: D.MAX,
              ElementWiseOperation.MIN: D.MIN}


class IElementWiseLayer(_Layer):
    _TYPE = LayerType.ELEMENTWISE
    _KIND = "ElementWise"
    _INPUTS = 2

    def __init__(self, network, a, b, op):
        self._op = op
        super().__init__(network, [a, b])

    op = _prop("op", _enum(ElementWiseOperation))

    def _infer(self, sh):
        a, b = self._in(sh, 0), self._in(sh, 1)
        op, name = self._op, self._name
        if a.dtype != b.dtype:
            raise LayerError(f"{name}: ElementWise {op.name} inputs have types {a.dtype.name} and {b.dtype.name}; in a "
                             "strongly typed network both inputs of an elementwise layer must have the same type "
                             "(insert a cast)")
        if op in _LOGICAL and a.dtype != DataType.BOOL:
            raise LayerError(f"{name}: ElementWise {op.name} needs BOOL inputs, got {a.dtype.name}")
        numbers = FLOATS + INTS + (DataType.INT8,)
        if op not in _LOGICAL and a.dtype not in numbers:
            raise LayerError(f"{name}: ElementWise {op.name} takes {_type_names(numbers)}, got {a.dtype.name}")
        dims = broadcast(sh, name, f"ElementWise {op.name}", [a.dims, b.dims])
        dtype = DataType.BOOL if op in _COMPARE else a.dtype
        values = None
        if a.values is not None and b.values is not None and len(dims) <= 1:
            n = max(len(a.values), len(b.values))
            if {len(a.values), len(b.values)} <= {1, n}:
                pairs = [(_at(a.values, i), _at(b.values, i)) for i in range(n)]
                if op in _SHAPE_OPS:
                    values = [sh.builder._operation(_SHAPE_OPS[op], x, y) for x, y in pairs]
                elif op == ElementWiseOperation.LESS:
                    values = [sh.builder._operation(D.LESS, x, y) for x, y in pairs]
                elif op == ElementWiseOperation.GREATER:
                    values = [sh.builder._operation(D.LESS, y, x) for x, y in pairs]
                elif op == ElementWiseOperation.EQUAL:
                    values = [sh.builder._operation(D.EQUAL, x, y) for x, y in pairs]
        return [Info(dtype, dims, values)]

    def _params(self, sh):
        return {"op": self._op.name}


def _at(values, i: int):
    """Element ``i`` of a shape tensor's values, a one-element tensor broadcasting."""
    return values[0] if len(values) == 1 else values[i]


_UNARY_ANY_NUMBER = (UnaryOperation.ABS, UnaryOperation.NEG, UnaryOperation.SIGN)


class IUnaryLayer(_Layer):
    _TYPE = LayerType.UNARY
    _KIND = "Unary"

    def __init__(self, network, x, op):
        self._op = op
        super().__init__(network, [x])

    op = _prop("op", _enum(UnaryOperation))

    def _infer(self, sh):
        x, op = self._in(sh), self._op
        if op == UnaryOperation.NOT:
            ok = (DataType.BOOL,)
        elif op in _UNARY_ANY_NUMBER:
            ok = FLOATS + INTS + (DataType.INT8,)
        else:
            ok = FLOATS
        if x.dtype not in ok:
            raise LayerError(f"{self._name}: Unary {op.name} takes {_type_names(ok)}, got {x.dtype.name}")
        dtype = DataType.BOOL if op in (UnaryOperation.ISINF, UnaryOperation.ISNAN) else x.dtype
        return [Info(dtype, x.dims)]

    def _params(self, sh):
        return {"op": self._op.name}


class IActivationLayer(_Layer):
    _TYPE = LayerType.ACTIVATION
    _KIND = "Activation"

    def __init__(self, network, x, kind):
        self._kind_, self._alpha, self._beta = kind, 0.0, 0.0
        super().__init__(network, [x])

    @property
    def type(self):
        """The activation (``ActivationType``); the binding's name hides ``ILayer.type`` here."""
        return self._kind_

    @type.setter
    def type(self, value):
        self._set("kind_", _enum(ActivationType)(value))

    alpha = _prop("alpha", float)
    beta = _prop("beta", float)

    def _infer(self, sh):
        x = self._in(sh)
        if x.dtype not in FLOATS:  # (INT8 activations belong to quantized networks: not modeled)
            raise LayerError(f"{self._name}: Activation {self._kind_.name} takes {_type_names(FLOATS)}, "
                             f"got {x.dtype.name}")
        return [Info(x.dtype, x.dims)]

    def _params(self, sh):
        return {"type": self._kind_.name, "alpha": self._alpha, "beta": self._beta}


class ISelectLayer(_Layer):
    _TYPE = LayerType.SELECT
    _KIND = "Select"
    _INPUTS = 3

    def __init__(self, network, condition, then_input, else_input):
        super().__init__(network, [condition, then_input, else_input])

    def _infer(self, sh):
        c, a, b = (self._in(sh, i) for i in range(3))
        if c.dtype != DataType.BOOL:
            raise LayerError(f"{self._name}: Select's condition must be BOOL, got {c.dtype.name}")
        if a.dtype != b.dtype:
            raise LayerError(f"{self._name}: Select's then and else inputs have types {a.dtype.name} and "
                             f"{b.dtype.name}; they must have the same type")
        dims = broadcast(sh, self._name, "Select", [c.dims, a.dims, b.dims])
        values = None
        if None not in (c.values, a.values, b.values) and len(dims) == 1:
            n = const(dims[0])
            if n is not None and all(len(v) in (1, n) for v in (c.values, a.values, b.values)):
                # a shape tensor chosen element by element: cond * then + (1 - cond) * else, cond being 0 or 1
                op, one = sh.builder.operation, sh.builder.constant(1)
                values = [op(D.SUM, op(D.PROD, _at(c.values, i), _at(a.values, i)),
                             op(D.PROD, op(D.SUB, one, _at(c.values, i)), _at(b.values, i))) for i in range(n)]
        return [Info(a.dtype, dims, values)]


# ======================================================================================
# cast, identity, constant


class ICastLayer(_Layer):
    _TYPE = LayerType.CAST
    _KIND = "Cast"

    def __init__(self, network, x, to_type):
        self._to_type = to_type
        super().__init__(network, [x])

    to_type = _prop("to_type", _enum(DataType))

    def _infer(self, sh):
        x = self._in(sh)
        if self._to_type not in ITEMSIZE or self._to_type == DataType.FP8 or x.dtype == DataType.FP8:
            raise LayerError(f"{self._name}: casting {x.dtype.name} to {self._to_type.name} is not supported "
                             "(the emulator casts between FLOAT, HALF, BF16, INT8, INT32, INT64, BOOL and UINT8)")
        values = x.values if self._to_type in SHAPE_TYPES else None
        return [Info(self._to_type, x.dims, values)]


class IIdentityLayer(_Layer):
    _TYPE = LayerType.IDENTITY
    _KIND = "Identity"

    def __init__(self, network, x):
        super().__init__(network, [x])

    def _infer(self, sh):
        x = self._in(sh)
        return [Info(x.dtype, x.dims, x.values)]


def constant_problem(shape: Sequence[int], weights: Weights) -> str:
    """Why a constant of ``shape`` cannot hold ``weights`` ("" when it can)."""
    count = math.prod(shape)
    if min(shape, default=0) < 0 or count != weights.size:
        return f"the constant of shape {tuple(shape)} holds {count} elements but the weights hold {weights.size}"
    return ""


class IConstantLayer(_Layer):
    _TYPE = LayerType.CONSTANT
    _KIND = "Constant"
    _INPUTS = 0

    def __init__(self, network, shape, weights):
        self._weights = weights
        self._shape_ = Dims(_ints(shape, "add_constant: shape"))
        super().__init__(network, [])

    @property
    def weights(self):
        return self._weights

    @weights.setter
    def weights(self, value):
        self._set("weights", as_weights(value, "IConstantLayer.weights"))

    @property
    def shape(self) -> Dims:
        return Dims(self._shape_)

    @shape.setter
    def shape(self, value) -> None:
        self._set("shape_", _dims(value))

    def _infer(self, sh):
        shape, w = list(self._shape_), self._weights
        problem = constant_problem(shape, w)
        if problem:
            raise LayerError(f"{self._name}: {problem}")
        count = math.prod(shape)
        values = None
        if w.dtype in SHAPE_TYPES and len(shape) <= 1 and count <= MAX_SHAPE_VALUES:
            values = [sh.builder.constant(int(v)) for v in w.numpy()]
        return [Info(w.dtype, [sh.builder.constant(s) for s in shape], values)]


# ======================================================================================
# shuffle, shape, gather, concatenation, slice


def _identity_perm(rank: int) -> List[int]:
    return list(range(rank))


class IShuffleLayer(_Layer):
    """transpose (``first_transpose``), reshape (``reshape_dims``, or the values of a shape tensor set as
    input 1), transpose (``second_transpose``). ``zero_is_placeholder`` (default True): a 0 in the reshape
    copies that input dimension; -1 (at most one) is inferred from the volume."""

    _TYPE = LayerType.SHUFFLE
    _KIND = "Shuffle"
    _INPUTS = 2

    def __init__(self, network, x):
        self._first, self._second, self._reshape, self._zero_is_placeholder = None, None, None, True
        super().__init__(network, [x])

    @property
    def first_transpose(self):
        return list(self._first) if self._first is not None else _identity_perm(8)

    @first_transpose.setter
    def first_transpose(self, value):
        self._set("first", _ints(value, "IShuffleLayer.first_transpose"))

    @property
    def second_transpose(self):
        return list(self._second) if self._second is not None else _identity_perm(8)

    @second_transpose.setter
    def second_transpose(self, value):
        self._set("second", _ints(value, "IShuffleLayer.second_transpose"))

    @property
    def reshape_dims(self) -> Dims:
        return Dims(self._reshape) if self._reshape is not None else Dims()

    @reshape_dims.setter
    def reshape_dims(self, value):
        self._set("reshape", _ints(value, "IShuffleLayer.reshape_dims"))

    zero_is_placeholder = _prop("zero_is_placeholder", bool)

    def _perm(self, perm, rank: int, which: str) -> List[int]:
        if perm is None:
            return _identity_perm(rank)
        p = list(perm)[:rank] if len(perm) >= rank else None
        if p is None or sorted(p) != _identity_perm(rank):
            raise LayerError(f"{self._name}: {which} {list(perm)} is not a permutation of the {rank} axes of "
                             f"its input")
        return p

    def _stages(self, sh):
        x = self._in(sh)
        first = self._perm(self._first, len(x.dims), "first_transpose")
        t1 = [x.dims[p] for p in first]
        shape_in = self._optional(1)
        if shape_in is not None:
            info = sh.info(shape_in)
            if info.dtype not in SHAPE_TYPES or len(info.dims) != 1:
                raise LayerError(f"{self._name}: the reshape dimensions (input 1) must be a 1-D INT32/INT64 tensor, "
                                 f"got {info.dtype.name} of rank {len(info.dims)}")
            target = sh.values(shape_in, f"{self._name}: reshape dimensions")
        elif self._reshape is not None:
            target = [sh.builder.constant(v) for v in self._reshape]
        else:
            target = None
        t2 = t1 if target is None else self._reshaped(sh, t1, target)
        second = self._perm(self._second, len(t2), "second_transpose")
        return x, first, t1, t2, second

    def _reshaped(self, sh, t1, target):
        name = self._name
        out: List[Optional[IDimensionExpr]] = []
        infer = [i for i, e in enumerate(target) if const(e) == -1]
        if len(infer) > 1:
            raise LayerError(f"{name}: reshape dimensions {_shape_text(target)} have more than one -1")
        for i, e in enumerate(target):
            c = const(e)
            if c == 0 and self._zero_is_placeholder:
                if i >= len(t1):
                    raise LayerError(f"{name}: reshape dimension {i} is 0 (copy the input's) but the input has rank "
                                     f"{len(t1)}")
                out.append(t1[i])
            elif c == -1:
                out.append(None)
            elif c is not None and c < 0:
                raise LayerError(f"{name}: reshape dimension {i} is {c}")
            else:
                out.append(e)
        total = product(sh, t1)
        if infer:
            known = [d for d in out if d is not None]
            if const(product(sh, known)) == 0:
                raise LayerError(f"{name}: cannot infer the -1 of reshape dimensions {_shape_text(target)}: the "
                                 "other dimensions' product is 0")
            out[infer[0]] = quotient(sh, t1, known)
        new_total = product(sh, out)
        if total.is_constant() and new_total.is_constant() and const(total) != const(new_total):
            raise LayerError(f"{name}: reshape changes volume: {_shape_text(t1)} ({const(total)} elements) to "
                             f"{_shape_text(out)} ({const(new_total)} elements)")
        return out

    def _infer(self, sh):
        x, first, t1, t2, second = self._stages(sh)
        values = None
        if x.values is not None and len(t2) <= 1 and first == sorted(first):
            values = x.values
        return [Info(x.dtype, [t2[p] for p in second], values)]

    def _params(self, sh):
        x, first, t1, t2, second = self._stages(sh)
        return {"first": first, "reshape": to_json(t2), "second": second}


class IShapeLayer(_Layer):
    _TYPE = LayerType.SHAPE
    _KIND = "Shape"

    def __init__(self, network, x):
        super().__init__(network, [x])

    def _infer(self, sh):
        x = self._in(sh)
        values = list(x.dims) if len(x.dims) <= MAX_SHAPE_VALUES else None
        return [Info(DataType.INT64, [sh.builder.constant(len(x.dims))], values)]


class IUnsqueezeLayer(_Layer):
    """Unit dimensions inserted at ``axes`` (input 1: a constant INT32/INT64 shape tensor) of the output; an
    axis may be negative, counted from the end of the output."""

    _TYPE = LayerType.UNSQUEEZE
    _KIND = "Unsqueeze"
    _INPUTS = 2

    def __init__(self, network, x, axes):
        super().__init__(network, [x, axes])

    def _axes(self, sh):
        x, ax = self._in(sh, 0), self._in(sh, 1)
        if ax.dtype not in SHAPE_TYPES or len(ax.dims) > 1:
            raise LayerError(f"{self._name}: unsqueeze axes must be a 0-D or 1-D INT32/INT64 tensor")
        values = sh.values(self._inputs[1], f"{self._name}: unsqueeze axes")
        if any(const(v) is None for v in values):
            raise LayerError(f"{self._name}: unsqueeze axes must be resolvable to constants")
        rank = len(x.dims) + len(values)
        axes = []
        for v in values:
            a = const(v)
            if not -rank <= a < rank:
                raise LayerError(f"{self._name}: unsqueeze axis {a} is outside [-{rank}, {rank - 1}]")
            axes.append(a % rank)
        if len(set(axes)) != len(axes):
            raise LayerError(f"{self._name}: unsqueeze axes {[const(v) for v in values]} are not unique")
        return x, sorted(axes), rank

    def _infer(self, sh):
        x, axes, rank = self._axes(sh)
        rest = iter(x.dims)
        dims = [sh.builder.constant(1) if j in axes else next(rest) for j in range(rank)]
        values = x.values if x.values is not None and rank <= 1 else None
        return [Info(x.dtype, dims, values)]

    def _params(self, sh):
        x, axes, rank = self._axes(sh)
        return {"axes": axes}


class IGatherLayer(_Layer):
    _TYPE = LayerType.GATHER
    _KIND = "Gather"
    _INPUTS = 2

    def __init__(self, network, data, indices, axis: int):
        self._axis, self._num_elementwise_dims, self._mode = int(axis), 0, GatherMode.DEFAULT
        super().__init__(network, [data, indices])

    axis = _prop("axis", int)
    num_elementwise_dims = _prop("num_elementwise_dims", int)
    mode = _prop("mode", _enum(GatherMode))

    def _infer(self, sh):
        data, idx = self._in(sh, 0), self._in(sh, 1)
        if self._mode != GatherMode.DEFAULT or self._num_elementwise_dims != 0:
            raise LayerError(f"{self._name}: gather mode {self._mode.name} with num_elementwise_dims "
                             f"{self._num_elementwise_dims} is not emulated (DEFAULT with 0 is)")
        if idx.dtype not in SHAPE_TYPES:
            raise LayerError(f"{self._name}: gather indices must be INT32 or INT64, got {idx.dtype.name}")
        axis = check_axis(self._name, "gather axis", self._axis, len(data.dims))
        dims = data.dims[:axis] + idx.dims + data.dims[axis + 1:]
        values = None
        if data.values is not None and idx.values is not None and len(data.dims) == 1:
            n = len(data.values)
            picked = []
            for e in idx.values:
                i = const(e)
                if i is None or not -n <= i < n:
                    picked = None
                    break
                picked.append(data.values[i % n])
            values = picked
        return [Info(data.dtype, dims, values)]

    def _params(self, sh):
        return {"axis": self._axis}


class IConcatenationLayer(_Layer):
    _TYPE = LayerType.CONCATENATION
    _KIND = "Concatenation"

    def __init__(self, network, inputs):
        self._axis = None
        super().__init__(network, list(inputs))
        self._INPUTS = len(inputs)

    @property
    def axis(self) -> int:
        if self._axis is not None:
            return self._axis
        return self._default_axis(len(self._network._info(self._inputs[0]).dims))

    @axis.setter
    def axis(self, value):
        self._set("axis", int(value))

    @staticmethod
    def _default_axis(rank: int) -> int:
        return max(0, rank - 3)  # "the number of tensor dimensions minus three, or zero"

    def _infer(self, sh):
        infos = [self._in(sh, i) for i in range(len(self._inputs))]
        rank = len(infos[0].dims)
        axis = self._axis if self._axis is not None else self._default_axis(rank)
        axis = check_axis(self._name, "concatenation axis", axis, rank)
        types = {i.dtype for i in infos}
        if len(types) != 1:
            raise LayerError(f"{self._name}: concatenation inputs have types {sorted(t.name for t in types)}; they "
                             "must all have one type")
        out = list(infos[0].dims)
        for k, info in enumerate(infos[1:], 1):
            if len(info.dims) != rank:
                raise LayerError(f"{self._name}: all concat input tensors must have the same number of dimensions, "
                                 f"but mismatch at input {k}. Input 0 shape: {_shape_text(infos[0].dims)}, input {k} "
                                 f"shape: {_shape_text(info.dims)}")
            for j in range(rank):
                if j == axis:
                    out[j] = sh.builder._operation(D.SUM, out[j], info.dims[j])
                elif not same(out[j], info.dims[j]) and out[j].is_constant() and info.dims[j].is_constant():
                    raise LayerError(f"{self._name}: all concat input tensors must have the same dimensions except "
                                     f"on the concatenation axis ({axis}), but dimensions mismatched at input {k} at "
                                     f"index {j}. Input 0 shape: {_shape_text(infos[0].dims)}, input {k} shape: "
                                     f"{_shape_text(info.dims)}")
        values = None
        if rank == 1 and all(i.values is not None for i in infos):
            values = [v for i in infos for v in i.values]
        return [Info(infos[0].dtype, out, values)]

    def _params(self, sh):
        rank = len(self._in(sh).dims)
        return {"axis": self._axis if self._axis is not None else self._default_axis(rank)}


class ISliceLayer(_Layer):
    """``start`` / ``shape`` / ``stride`` (Dims), or shape tensors set as inputs 1 / 2 / 3; ``mode``
    (SampleMode, STRICT_BOUNDS by default: every element read must lie inside the input); input 4 is the
    FILL mode's value. The ``axes`` input (5) is not emulated."""

    _TYPE = LayerType.SLICE
    _KIND = "Slice"
    _INPUTS = 6

    def __init__(self, network, x, start, shape, stride):
        self._start, self._shape, self._stride = _dims(start), _dims(shape), _dims(stride)
        self._mode = SampleMode.STRICT_BOUNDS
        super().__init__(network, [x])

    start = _prop("start", _dims)
    shape = _prop("shape", _dims)
    stride = _prop("stride", _dims)
    mode = _prop("mode", _enum(SampleMode))

    def _part(self, sh, index: int, static, what: str, rank: int) -> List[IDimensionExpr]:
        t = self._optional(index)
        if t is None:
            vals = [sh.builder.constant(v) for v in static]
        else:
            info = sh.info(t)
            if info.dtype not in SHAPE_TYPES or len(info.dims) != 1:
                raise LayerError(f"{self._name}: slice {what} (input {index}) must be a 1-D INT32/INT64 tensor")
            vals = sh.values(t, f"{self._name}: slice {what}")
        if len(vals) != rank:
            raise LayerError(f"{self._name}: slice {what} has {len(vals)} values for an input of rank {rank}")
        return vals

    def _parts(self, sh):
        x = self._in(sh)
        if self._optional(5) is not None:
            raise LayerError(f"{self._name}: the slice axes input (5) is not emulated by the TensorRT emulator")
        fill = self._optional(4)
        if fill is not None and self._mode != SampleMode.FILL:
            raise LayerError(f"{self._name}: a fill value (input 4) is only for SampleMode.FILL")
        rank = len(x.dims)
        start = self._part(sh, 1, self._start, "start", rank)
        size = self._part(sh, 2, self._shape, "size", rank)
        stride = self._part(sh, 3, self._stride, "stride", rank)
        return x, start, size, stride

    def _infer(self, sh):
        x, start, size, stride = self._parts(sh)
        if self._mode == SampleMode.STRICT_BOUNDS:
            for j, (d, s0, n, st) in enumerate(zip(x.dims, start, size, stride)):
                c = [const(e) for e in (d, s0, n, st)]
                if None in c or c[2] == 0:
                    continue
                last = c[1] + (c[2] - 1) * c[3]
                if not (0 <= c[1] < c[0] and 0 <= last < c[0]):
                    raise LayerError(f"{self._name}: ISliceLayer has out of bounds access on axis {j} (start "
                                     f"{c[1]}, size {c[2]}, stride {c[3]} read index {last} of a dimension of {c[0]}; "
                                     "SampleMode.STRICT_BOUNDS)")
        for j, n in enumerate(size):
            if const(n) is not None and const(n) < 0:
                raise LayerError(f"{self._name}: slice size {const(n)} on axis {j} is negative")
        values = None
        if x.values is not None and len(x.dims) == 1 and self._mode == SampleMode.STRICT_BOUNDS:
            c = [const(e) for e in (start[0], size[0], stride[0])]
            if None not in c:
                values = [x.values[c[0] + i * c[2]] for i in range(c[1])]
        return [Info(x.dtype, size, values)]

    def _params(self, sh):
        x, start, size, stride = self._parts(sh)
        return {"start": to_json(start), "stride": to_json(stride), "mode": self._mode.name}


# ======================================================================================
# matrix multiply, softmax, reduce


class IMatrixMultiplyLayer(_Layer):
    _TYPE = LayerType.MATRIX_MULTIPLY
    _KIND = "MatrixMultiply"
    _INPUTS = 2

    def __init__(self, network, a, op0, b, op1):
        self._op0, self._op1 = op0, op1
        super().__init__(network, [a, b])

    op0 = _prop("op0", _enum(MatrixOperation))
    op1 = _prop("op1", _enum(MatrixOperation))

    def _infer(self, sh):
        a, b = self._in(sh, 0), self._in(sh, 1)
        name, V, T = self._name, MatrixOperation.VECTOR, MatrixOperation.TRANSPOSE
        if a.dtype != b.dtype:
            raise LayerError(f"{name}: MatrixMultiply inputs have types {a.dtype.name} and {b.dtype.name}; they must "
                             "have the same type")
        if a.dtype not in FLOATS:
            raise LayerError(f"{name}: MatrixMultiply takes {_type_names(FLOATS)}, got {a.dtype.name}")
        va, vb = self._op0 == V, self._op1 == V
        for info, vec, k in ((a, va, 0), (b, vb, 1)):
            if len(info.dims) < (1 if vec else 2):
                raise LayerError(f"{name}: MatrixMultiply input {k} of rank {len(info.dims)} cannot be treated as "
                                 f"{'vectors' if vec else 'matrices'}")
        ba = a.dims[:-1] if va else a.dims[:-2]
        bb = b.dims[:-1] if vb else b.dims[:-2]
        if len(ba) != len(bb):
            raise LayerError(f"{name}: MatrixMultiply inputs of ranks {len(a.dims)} and {len(b.dims)}: their "
                             "collection (batch) dimensions must have the same rank (insert a shuffle)")
        batch = broadcast(sh, name, "MatrixMultiply batch dimensions", [ba, bb])
        if va:
            m, ka = [], a.dims[-1]
        else:
            m, ka = ([a.dims[-1]], a.dims[-2]) if self._op0 == T else ([a.dims[-2]], a.dims[-1])
        if vb:
            n, kb = [], b.dims[-1]
        else:
            n, kb = ([b.dims[-2]], b.dims[-1]) if self._op1 == T else ([b.dims[-1]], b.dims[-2])
        if ka.is_constant() and kb.is_constant() and const(ka) != const(kb):
            raise LayerError(f"{name}: the inner dimension of input0 = {const(ka)} and of input1 = {const(kb)} but "
                             f"must match (MatrixMultiply of {_shape_text(a.dims)} with op0 {self._op0.name} and "
                             f"{_shape_text(b.dims)} with op1 {self._op1.name})")
        return [Info(a.dtype, batch + m + n)]

    def _params(self, sh):
        return {"op0": self._op0.name, "op1": self._op1.name}


class ISoftMaxLayer(_Layer):
    _TYPE = LayerType.SOFTMAX
    _KIND = "SoftMax"

    def __init__(self, network, x):
        self._axes = None
        super().__init__(network, [x])

    @property
    def axes(self) -> int:
        if self._axes is not None:
            return self._axes
        return 1 << max(0, len(self._network._info(self._inputs[0]).dims) - 3)

    @axes.setter
    def axes(self, value):
        self._set("axes", int(value))

    def _axis(self, sh) -> int:
        x = self._in(sh)
        rank = len(x.dims)
        axes = axes_of(self._name, self._axes if self._axes is not None else 1 << max(0, rank - 3), rank)
        if len(axes) != 1:
            raise LayerError(f"{self._name}: softmax axes bit mask must set exactly one axis, got {axes}")
        return axes[0]

    def _infer(self, sh):
        x = self._in(sh)
        if x.dtype not in FLOATS:
            raise LayerError(f"{self._name}: SoftMax takes {_type_names(FLOATS)}, got {x.dtype.name}")
        self._axis(sh)
        return [Info(x.dtype, x.dims)]

    def _params(self, sh):
        return {"axis": self._axis(sh)}


class IReduceLayer(_Layer):
    _TYPE = LayerType.REDUCE
    _KIND = "Reduce"

    def __init__(self, network, x, op, axes, keep_dims):
        self._op, self._axes, self._keep_dims = op, int(axes), bool(keep_dims)
        super().__init__(network, [x])

    op = _prop("op", _enum(ReduceOperation))
    axes = _prop("axes", int)
    keep_dims = _prop("keep_dims", bool)

    def _infer(self, sh):
        x = self._in(sh)
        ok = FLOATS if self._op == ReduceOperation.AVG else FLOATS + INTS
        if x.dtype not in ok:
            raise LayerError(f"{self._name}: Reduce {self._op.name} takes {_type_names(ok)}, got {x.dtype.name}")
        axes = axes_of(self._name, self._axes, len(x.dims))
        if not axes and x.dims:
            raise LayerError(f"{self._name}: reduce axes bit mask is 0: no axis to reduce")
        one = sh.builder.constant(1)
        dims = [one if j in axes else d for j, d in enumerate(x.dims)] if self._keep_dims else \
            [d for j, d in enumerate(x.dims) if j not in axes]
        return [Info(x.dtype, dims)]

    def _params(self, sh):
        return {"op": self._op.name, "axes": axes_of(self._name, self._axes, len(self._in(sh).dims)),
                "keep_dims": self._keep_dims}


# ======================================================================================
# convolution, pooling, scale


def _spatial(name: str, values, n: int, what: str) -> List[int]:
    v = list(values)
    if len(v) != n:
        raise LayerError(f"{name}: {what} {tuple(v)} has {len(v)} values for {n} spatial dimensions")
    return v


def _windowed(sh, name, x_dims, window, stride, pre, post, dilation, mode) -> List[IDimensionExpr]:
    """The spatial output dimensions of a convolution or pooling over ``x_dims``' trailing axes."""
    n = len(window)
    out = []
    b = sh.builder
    for j in range(n):
        d = x_dims[len(x_dims) - n + j]
        eff = dilation[j] * (window[j] - 1) + 1
        if stride[j] < 1:
            raise LayerError(f"{name}: stride {tuple(stride)} must be positive")
        if mode in (PaddingMode.SAME_UPPER, PaddingMode.SAME_LOWER):
            out.append(b._operation(D.CEIL_DIV, d, b.constant(stride[j])))
            continue
        span = b._operation(D.SUB, b._operation(D.SUM, d, b.constant(pre[j] + post[j])), b.constant(eff))
        div = D.CEIL_DIV if mode == PaddingMode.EXPLICIT_ROUND_UP else D.FLOOR_DIV
        o = b._operation(D.SUM, b._operation(div, span, b.constant(stride[j])), b.constant(1))
        if o.is_constant() and const(o) < 1:
            raise LayerError(f"{name}: the window ({window[j]}, dilation {dilation[j]}) does not fit spatial dimension "
                             f"{j} of size {const(d)} with padding ({pre[j]}, {post[j]}): the output would be empty")
        out.append(o)
    return out


class _Windowed(_Layer):
    """What convolution and pooling share: window, stride, padding, padding mode."""

    def __init__(self, network, inputs, window):
        n = len(window)
        self._window = Dims(window)
        self._stride, self._pre, self._post = Dims([1] * n), Dims([0] * n), Dims([0] * n)
        self._padding_mode = PaddingMode.EXPLICIT_ROUND_DOWN
        super().__init__(network, inputs)

    stride_nd = _prop("stride", _dims)
    pre_padding = _prop("pre", _dims)
    post_padding = _prop("post", _dims)
    padding_mode = _prop("padding_mode", _enum(PaddingMode))

    @property
    def padding_nd(self) -> Dims:
        return Dims(self._pre)

    @padding_nd.setter
    def padding_nd(self, value):
        self._pre = self._post = _dims(value)
        self._changed()

    def _geometry(self, sh, x: Info, dilation):
        name, n = self._name, len(self._window)
        if len(x.dims) != n + 2:
            raise LayerError(f"{name}: a {n}-D window needs an input of rank {n + 2} (N, C, spatial...), got "
                             f"{_shape_text(x.dims)}")
        if not 1 <= n <= 3:
            raise LayerError(f"{name}: {n} spatial dimensions; TensorRT takes 1 to 3")
        stride = _spatial(name, self._stride, n, "stride_nd")
        pre = _spatial(name, self._pre, n, "pre_padding")
        post = _spatial(name, self._post, n, "post_padding")
        if any(p < 0 for p in pre + post):
            raise LayerError(f"{name}: negative padding {tuple(pre)} / {tuple(post)}")
        spatial = _windowed(sh, name, x.dims, list(self._window), stride, pre, post, dilation, self._padding_mode)
        if self._padding_mode in (PaddingMode.SAME_UPPER, PaddingMode.SAME_LOWER):
            pre, post = [], []
            for j in range(n):
                d, o = const(x.dims[2 + j]), const(spatial[j])
                if d is None:
                    raise LayerError(f"{name}: padding mode {self._padding_mode.name} on a run-time spatial dimension "
                                     "is not emulated")
                total = max(0, (o - 1) * stride[j] + dilation[j] * (self._window[j] - 1) + 1 - d)
                small = total // 2
                pre.append(small if self._padding_mode == PaddingMode.SAME_UPPER else total - small)
                post.append(total - pre[-1])
        return stride, pre, post, spatial


class IConvolutionLayer(_Windowed):
    _TYPE = LayerType.CONVOLUTION
    _KIND = "Convolution"
    _INPUTS = 3

    def __init__(self, network, x, num_output_maps, kernel_shape, kernel, bias):
        self._num_output_maps, self._kernel, self._bias = int(num_output_maps), kernel, bias
        self._num_groups = 1
        self._dilation = Dims([1] * len(kernel_shape))
        super().__init__(network, [x], kernel_shape)

    num_output_maps = _prop("num_output_maps", int)
    num_groups = _prop("num_groups", int)
    dilation_nd = _prop("dilation", _dims)
    kernel_size_nd = _prop("window", _dims)

    @property
    def kernel(self) -> Weights:
        return self._kernel

    @kernel.setter
    def kernel(self, value):
        self._set("kernel", as_weights(value, "IConvolutionLayer.kernel"))

    @property
    def bias(self) -> Weights:
        return self._bias

    @bias.setter
    def bias(self, value):
        self._set("bias", as_weights(value, "IConvolutionLayer.bias"))

    def _check(self, sh):
        x, name = self._in(sh), self._name
        if x.dtype not in FLOATS:
            raise LayerError(f"{name}: Convolution takes {_type_names(FLOATS)} input, got {x.dtype.name}")
        n = len(self._window)
        dilation = _spatial(name, self._dilation, n, "dilation_nd")
        stride, pre, post, spatial = self._geometry(sh, x, dilation)
        c = const(x.dims[1])
        if c is None:
            raise LayerError(f"{name}: the channel dimension of the input {_shape_text(x.dims)} must be a build-time "
                             "constant")
        k, g = self._num_output_maps, self._num_groups
        if k < 1 or g < 1 or c % g or k % g:
            raise LayerError(f"{name}: {k} output maps and {c} input channels must both be multiples of "
                             f"num_groups {g}")
        want = [k, c // g] + list(self._window)
        kt = self._optional(1)
        if kt is not None:
            kinfo = sh.info(kt)
            if kinfo.dtype != x.dtype or [const(d) for d in kinfo.dims] != want:
                raise LayerError(f"{name}: the kernel tensor (input 1) is {kinfo.dtype.name} {_shape_text(kinfo.dims)};"
                                 f" it must be {x.dtype.name} {tuple(want)}")
        else:
            w = self._kernel
            if w is not None and isinstance(w, Weights) and w.size != math.prod(want):
                raise LayerError(f"{name}: count of {w.size} weights in kernel, but kernel dimensions "
                                 f"{tuple(self._window)} with {c} input channels, {k} output channels and {g} groups "
                                 f"were specified. Expected Weights count is {c} * {'*'.join(map(str, self._window))} "
                                 f"* {k} / {g} = {math.prod(want)}")
            self._check_weights("kernel", w, math.prod(want), x.dtype, "C * prod(kernel) * K / G")
        bt = self._optional(2)
        if bt is not None:
            binfo = sh.info(bt)
            if binfo.dtype != x.dtype or [const(d) for d in binfo.dims] != [k]:
                raise LayerError(f"{name}: the bias tensor (input 2) must be {x.dtype.name} ({k},)")
        elif self._bias is not None and self._bias.size:
            self._check_weights("bias", self._bias, k, x.dtype, "K")
        return x, stride, pre, post, dilation, spatial

    def _check_weights(self, what, w, count, dtype, rule):
        if w is None or not isinstance(w, Weights):
            raise LayerError(f"{self._name}: convolution {what} weights are missing")
        if w.size != count:
            raise LayerError(f"{self._name}: convolution {what} weights hold {w.size} values; {rule} = {count} needed")
        if w.dtype != dtype:
            raise LayerError(f"{self._name}: convolution {what} weights are {w.dtype.name} but the input is "
                             f"{dtype.name}; in a strongly typed network they must match")

    def _infer(self, sh):
        x, stride, pre, post, dilation, spatial = self._check(sh)
        return [Info(x.dtype, [x.dims[0], sh.builder.constant(self._num_output_maps)] + spatial)]

    def _params(self, sh):
        x, stride, pre, post, dilation, spatial = self._check(sh)
        p = {"stride": stride, "pre": pre, "post": post, "dilation": dilation, "groups": self._num_groups,
             "window": list(self._window), "out": to_json(spatial), "maps": self._num_output_maps}
        if self._optional(1) is None:
            p["kernel"] = _weights_json(self._kernel)
        if self._optional(2) is None and self._bias is not None and self._bias.size:
            p["bias"] = _weights_json(self._bias)
        return p


class IPoolingLayer(_Windowed):
    _TYPE = LayerType.POOLING
    _KIND = "Pooling"

    def __init__(self, network, x, kind, window_size):
        self._kind_ = kind
        self._average_count_excludes_padding, self._blend_factor = True, 0.0
        super().__init__(network, [x], window_size)

    @property
    def type(self):
        """The pooling (``PoolingType``); the binding's name hides ``ILayer.type`` here."""
        return self._kind_

    @type.setter
    def type(self, value):
        self._set("kind_", _enum(PoolingType)(value))

    window_size_nd = _prop("window", _dims)
    average_count_excludes_padding = _prop("average_count_excludes_padding", bool)
    blend_factor = _prop("blend_factor", float)

    def _check(self, sh):
        x = self._in(sh)
        if x.dtype not in FLOATS:
            raise LayerError(f"{self._name}: Pooling takes {_type_names(FLOATS)}, got {x.dtype.name}")
        if self._kind_ == PoolingType.MAX_AVERAGE_BLEND:
            raise LayerError(f"{self._name}: PoolingType.MAX_AVERAGE_BLEND is not emulated")
        n = len(self._window)
        stride, pre, post, spatial = self._geometry(sh, x, [1] * n)
        for j in range(n):
            if pre[j] >= self._window[j] or post[j] >= self._window[j]:
                raise LayerError(f"{self._name}: padding ({pre[j]}, {post[j]}) must be smaller than the window "
                                 f"{self._window[j]}")
        return x, stride, pre, post, spatial

    def _infer(self, sh):
        x, stride, pre, post, spatial = self._check(sh)
        return [Info(x.dtype, x.dims[:2] + spatial)]

    def _params(self, sh):
        x, stride, pre, post, spatial = self._check(sh)
        return {"type": self._kind_.name, "window": list(self._window), "stride": stride, "pre": pre, "post": post,
                "exclude_padding": self._average_count_excludes_padding, "out": to_json(spatial)}


class IScaleLayer(_Layer):
    """``output = (input * scale + shift) ^ power`` per tensor (UNIFORM), per channel (CHANNEL, along
    ``channel_axis``) or per element (ELEMENTWISE: of the axes from ``channel_axis`` on); empty weights
    mean scale 1, shift 0, power 1."""

    _TYPE = LayerType.SCALE
    _KIND = "Scale"

    def __init__(self, network, x, mode, shift, scale, power, channel_axis):
        self._mode, self._shift, self._scale, self._power = mode, shift, scale, power
        self._channel_axis = int(channel_axis)
        super().__init__(network, [x])

    mode = _prop("mode", _enum(ScaleMode))
    shift = _prop("shift", lambda v: as_weights(v, "IScaleLayer.shift"))
    scale = _prop("scale", lambda v: as_weights(v, "IScaleLayer.scale"))
    power = _prop("power", lambda v: as_weights(v, "IScaleLayer.power"))
    channel_axis = _prop("channel_axis", int)

    def _count(self, sh, x) -> int:
        if self._mode == ScaleMode.UNIFORM:
            return 1
        axis = check_axis(self._name, "scale channel_axis", self._channel_axis, len(x.dims))
        dims = x.dims[axis:axis + 1] if self._mode == ScaleMode.CHANNEL else x.dims[axis:]
        if any(const(d) is None for d in dims):
            raise LayerError(f"{self._name}: Scale {self._mode.name} needs build-time dimensions from channel_axis "
                             f"{axis} of {_shape_text(x.dims)}")
        return math.prod(const(d) for d in dims)

    def _infer(self, sh):
        x = self._in(sh)
        if x.dtype not in FLOATS:
            raise LayerError(f"{self._name}: Scale takes {_type_names(FLOATS)}, got {x.dtype.name}")
        if len(x.dims) not in (4, 5):  # NvInfer.h, addScaleNd: "Only 2D or 3D scale is supported"
            raise LayerError(f"{self._name}: Only 2D or 3D scale is supported: the input of a scale layer must have "
                             f"rank 4 or 5, got {_shape_text(x.dims)}")
        count = self._count(sh, x)
        for what, w in (("shift", self._shift), ("scale", self._scale), ("power", self._power)):
            if w is None or not w.size:
                continue
            if w.size != count:
                raise LayerError(f"{self._name}: Scale {self._mode.name} {what} weights hold {w.size} values; "
                                 f"{count} needed")
            if w.dtype != x.dtype:
                raise LayerError(f"{self._name}: Scale {what} weights are {w.dtype.name} but the input is "
                                 f"{x.dtype.name}; in a strongly typed network they must match")
        return [Info(x.dtype, x.dims)]

    def _params(self, sh):
        p = {"mode": self._mode.name, "channel_axis": self._channel_axis}
        for what, w in (("shift", self._shift), ("scale", self._scale), ("power", self._power)):
            if w is not None and w.size:
                p[what] = _weights_json(w)
        return p


class INormalizationLayer(_Layer):
    """``(x - mean) / sqrt(variance + epsilon) * scale + bias`` over ``axes`` (a bit mask), the statistics in
    float; ``scale`` and ``bias`` have one shape, the input's rank, and broadcast to the input. Group
    normalization (``num_groups`` other than 1) is not modeled."""

    _TYPE = LayerType.NORMALIZATION
    _KIND = "Normalization"
    _INPUTS = 3

    def __init__(self, network, x, scale, bias, axes: int):
        self._axes, self._epsilon, self._num_groups = int(axes), 1e-5, 1
        super().__init__(network, [x, scale, bias])

    axes = _prop("axes", int)
    epsilon = _prop("epsilon", float)
    num_groups = _prop("num_groups", int)

    def _check(self, sh):
        x, scale, bias = (self._in(sh, i) for i in range(3))
        name = self._name
        if x.dtype not in FLOATS:
            raise LayerError(f"{name}: Normalization takes {_type_names(FLOATS)}, got {x.dtype.name}")
        if scale.dtype != x.dtype or bias.dtype != x.dtype:
            raise LayerError(f"{name}: the input, scale and bias of a normalization must have one type, got "
                             f"{x.dtype.name}, {scale.dtype.name} and {bias.dtype.name}")
        if len(scale.dims) != len(x.dims) or len(bias.dims) != len(x.dims) or not all(
                same(p, q) for p, q in zip(scale.dims, bias.dims)):
            raise LayerError(f"{name}: the shapes of scale {_shape_text(scale.dims)} and bias {_shape_text(bias.dims)} "
                             f"must be the same, and have the rank of the input {_shape_text(x.dims)}")
        for j, (d, w) in enumerate(zip(x.dims, scale.dims)):
            if const(w) != 1 and not same(d, w) and d.is_constant() and w.is_constant():
                raise LayerError(f"{name}: scale and bias {_shape_text(scale.dims)} are not unidirectionally "
                                 f"broadcastable to the input {_shape_text(x.dims)} (axis {j})")
        axes = axes_of(name, self._axes, len(x.dims))
        if not axes:
            raise LayerError(f"{name}: normalization axes bit mask is 0")
        if self._num_groups != 1:
            raise LayerError(f"{name}: group normalization (num_groups {self._num_groups}) is not emulated")
        return x, axes

    def _infer(self, sh):
        x, axes = self._check(sh)
        return [Info(x.dtype, x.dims)]

    def _params(self, sh):
        x, axes = self._check(sh)
        return {"axes": axes, "epsilon": self._epsilon}


#: the layer classes the emulator models, by TensorRT's Python name
CLASSES = {c.__name__: c for c in (
    IElementWiseLayer, IUnaryLayer, IActivationLayer, ISelectLayer, ICastLayer, IIdentityLayer, IConstantLayer,
    IShuffleLayer, IShapeLayer, IUnsqueezeLayer, IGatherLayer, IConcatenationLayer, ISliceLayer,
    IMatrixMultiplyLayer, ISoftMaxLayer, IReduceLayer, IConvolutionLayer, IPoolingLayer, IScaleLayer)}

