"""Shapes: ``Dims``, ``DimsExprs`` and the symbolic ``IExprBuilder`` / ``IDimensionExpr``.

A dimension expression is a constant, a symbol (one dynamic axis of a network input), a
size tensor (a data-dependent extent, ``IExprBuilder.declare_size_tensor``), or an operation over
two expressions. TensorRT keeps such trees in the engine for a plugin's output shapes and AOT
launch parameters and evaluates them when the input shapes are known; the emulator does the same
(``_evaluate``) and stores them in its engine format (``to_json``/``from_json``). Names beginning
with ``_`` are the emulator's own; every public name exists in TensorRT's bindings.

A size tensor is a 0-D INT32/INT64 output of a plugin that the plugin's kernel writes: the extent it
stands for is known only once that kernel has run. Its expression knows the plugin output holding
it (the output index; after the build binds it, the output tensor and so its name), the ``opt``
value the builder tunes for and the ``upper`` bound TensorRT sizes buffers from. An engine stores it
as ``["size_tensor", "<name of the size tensor>", <upper>, <opt>]``; at run time its value is bound
under :func:`size_key` (the emulator reads it back after the plugin ran). Evaluations that need a
value before then say which one they take (``sizes``): ``"upper"`` (allocation, ``getMaxOutputSize``),
``"opt"`` (what the builder tunes for) or ``"lower"`` (0, the least a size can be).
"""

from typing import Any, Iterable, List, Mapping, Optional, Tuple, Union

from ._enums import DimensionOperation, Severity
from ._logging import report
from ._strict import Strict, unpicklable

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_OP_TEXT = {DimensionOperation.SUM: "+", DimensionOperation.PROD: "*", DimensionOperation.SUB: "-",
            DimensionOperation.FLOOR_DIV: "//"}


def apply_op(op, a: int, b: int) -> int:
    D = DimensionOperation
    if op == D.SUM:
        return a + b
    if op == D.PROD:
        return a * b
    if op == D.MAX:
        return max(a, b)
    if op == D.MIN:
        return min(a, b)
    if op == D.SUB:
        return a - b
    if op == D.EQUAL:
        return int(a == b)
    if op == D.LESS:
        return int(a < b)
    if b == 0:
        raise ZeroDivisionError(f"{op.name} by zero in a dimension expression")
    if op == D.FLOOR_DIV:
        return a // b
    if op == D.CEIL_DIV:
        return -((-a) // b)
    raise ValueError(f"unknown DimensionOperation {op!r}")


#: how an evaluation values a size tensor whose value is not bound (see the module docstring)
SIZES = (None, "lower", "opt", "upper")


def size_key(name: str) -> Tuple[str, str]:
    """The key a size tensor's run-time value is bound under (never equal to a symbol, which is a str)."""
    return ("size_tensor", str(name))


@unpicklable
class IDimensionExpr(Strict):
    """Immutable symbolic integer. Like the native class it has no arithmetic operators;
    expressions are combined through ``IExprBuilder.operation``."""

    __slots__ = ("_kind", "_value", "_name", "_op", "_lhs", "_rhs", "_owner", "_opt", "_upper", "_tensor")

    def __init__(self, kind: str, value: Optional[int] = None, name: Optional[str] = None, op=None,
                 lhs: "IDimensionExpr" = None, rhs: "IDimensionExpr" = None, owner: "IExprBuilder" = None,
                 opt: "IDimensionExpr" = None, upper: "IDimensionExpr" = None, tensor=None):
        self._kind, self._value, self._name, self._op, self._lhs, self._rhs = kind, value, name, op, lhs, rhs
        #: the IExprBuilder that made it: in TensorRT an expression lives as long as the builder that
        #: handed it out (one build's, or one network's), so one kept from another builder is refused
        self._owner = owner
        #: a size tensor's autotune value and upper bound (kind "size_tensor"; ``_value`` is the plugin output
        #: index, ``_tensor`` that output once bound to it, ``_name`` its name when read from an engine)
        self._opt, self._upper, self._tensor = opt, upper, tensor

    def is_constant(self) -> bool:
        return self._kind == "const"

    def get_constant_value(self) -> int:
        return self._value if self._kind == "const" else INT64_MIN

    def is_size_tensor(self) -> bool:
        return self._kind == "size_tensor"

    # ----- the emulator's own -----
    def _symbols(self) -> set:
        """The symbols (and size-tensor keys, :func:`size_key`) the value depends on."""
        if self._kind == "sym":
            return {self._name}
        if self._kind == "op":
            return self._lhs._symbols() | self._rhs._symbols()
        if self._kind == "size_tensor":
            return {size_key(self._tensor_name())} | self._opt._symbols() | self._upper._symbols()
        return set()

    def _size_tensors(self) -> List["IDimensionExpr"]:
        """The size-tensor leaves of the expression (each once, in order)."""
        if self._kind == "size_tensor":
            return [self]
        if self._kind == "op":
            out = self._lhs._size_tensors()
            return out + [e for e in self._rhs._size_tensors() if all(e is not o for o in out)]
        return []

    def _tensor_name(self) -> str:
        if self._tensor is not None:
            return self._tensor.name
        if self._name is not None:
            return self._name
        return f"<plugin output {self._value}>"

    def _evaluate(self, bindings: Mapping[Any, int], sizes: Optional[str] = None) -> int:
        """The value at ``bindings``; a size tensor not bound there is valued as ``sizes`` says (module docstring)."""
        if self._kind == "const":
            return self._value
        if self._kind == "sym":
            if self._name not in bindings:
                raise KeyError(f"no concrete value bound for dimension {self._name!r}")
            return int(bindings[self._name])
        if self._kind == "size_tensor":
            key = size_key(self._tensor_name()) if (self._tensor is not None or self._name is not None) else None
            if key is not None and key in bindings:
                return int(bindings[key])
            if sizes == "lower":
                return 0
            if sizes == "opt":
                return self._opt._evaluate(bindings, sizes)
            if sizes == "upper":
                return self._upper._evaluate(bindings, sizes)
            raise KeyError(f"the size tensor {self._tensor_name()!r} has no value yet (a data-dependent extent, "
                           "known once the plugin layer writing it has run)")
        return apply_op(self._op, self._lhs._evaluate(bindings, sizes), self._rhs._evaluate(bindings, sizes))

    def _to_json(self) -> Any:
        if self._kind == "const":
            return self._value
        if self._kind == "sym":
            return self._name
        if self._kind == "size_tensor":
            if self._tensor is None and self._name is None:
                raise ValueError(f"the size tensor of plugin output {self._value} is not bound to a tensor")
            return ["size_tensor", self._tensor_name(), self._upper._to_json(), self._opt._to_json()]
        return [self._op.name, self._lhs._to_json(), self._rhs._to_json()]

    def __repr__(self) -> str:
        if self._kind == "const":
            return str(self._value)
        if self._kind == "sym":
            return self._name
        if self._kind == "size_tensor":
            if self._tensor is None and self._name is None:
                return f"size_tensor[{self._value}]"
            return f"size_tensor[{self._tensor_name()}]"
        if self._op in _OP_TEXT:
            return f"({self._lhs!r} {_OP_TEXT[self._op]} {self._rhs!r})"
        return f"{self._op.name.lower()}({self._lhs!r}, {self._rhs!r})"


def _is_size_json(j: Any) -> bool:
    """``["size_tensor", "<name>", <upper>, <opt>]``: a size tensor as an engine stores it."""
    return isinstance(j, list) and len(j) == 4 and j[0] == "size_tensor" and isinstance(j[1], str)


def expr_from_json(j: Any) -> IDimensionExpr:
    if isinstance(j, bool):
        raise ValueError(f"bad dimension expression {j!r}")
    if isinstance(j, int):
        return IDimensionExpr("const", value=j)
    if isinstance(j, str):
        return IDimensionExpr("sym", name=j)
    if _is_size_json(j):
        upper, opt = expr_from_json(j[2]), expr_from_json(j[3])
        return IDimensionExpr("size_tensor", value=-1, name=j[1], opt=opt, upper=upper)
    if isinstance(j, list) and len(j) == 3 and j[0] in DimensionOperation.__members__:
        return IDimensionExpr("op", op=DimensionOperation[j[0]], lhs=expr_from_json(j[1]), rhs=expr_from_json(j[2]))
    raise ValueError(f"bad dimension expression {j!r}")


def evaluate(j: Any, bindings: Mapping[Any, int], sizes: Optional[str] = None) -> int:
    """Evaluate a JSON expression (as stored in an engine) at ``bindings``; a size tensor not bound there (under
    :func:`size_key`) is valued as ``sizes`` says (the module docstring), or is a ``KeyError``."""
    if isinstance(j, int) and not isinstance(j, bool):
        return j
    if isinstance(j, str):
        if j not in bindings:
            raise KeyError(f"no concrete value bound for dimension {j!r}")
        return int(bindings[j])
    if _is_size_json(j):
        key = size_key(j[1])
        if key in bindings:
            return int(bindings[key])
        if sizes == "lower":
            return 0
        if sizes == "opt":
            return evaluate(j[3], bindings, sizes)
        if sizes == "upper":
            return evaluate(j[2], bindings, sizes)
        raise KeyError(f"the size tensor {j[1]!r} has no value yet (a data-dependent extent, known once the plugin "
                       "layer writing it has run)")
    return apply_op(DimensionOperation[j[0]], evaluate(j[1], bindings, sizes), evaluate(j[2], bindings, sizes))


def symbols_of(j: Any) -> set:
    """What a JSON expression's value depends on: symbols, and size tensors as :func:`size_key` s."""
    if isinstance(j, str):
        return {j}
    if _is_size_json(j):
        return {size_key(j[1])} | symbols_of(j[2]) | symbols_of(j[3])
    if isinstance(j, list):
        return symbols_of(j[1]) | symbols_of(j[2])
    return set()


def size_tensors_of(j: Any) -> set:
    """The names of the size tensors a JSON expression depends on."""
    return {k[1] for k in symbols_of(j) if isinstance(k, tuple)}


def bind_size_tensors(exprs: Iterable[IDimensionExpr], outputs: List[Any]) -> List[IDimensionExpr]:
    """``exprs`` (one plugin layer's output dimensions) with each size tensor tied to the output tensor it names
    (``outputs[index]``), which gives it its name; an index out of range stays unbound (the build refuses it).
    Shared subtrees stay shared."""
    memo = {}

    def bind(e: IDimensionExpr) -> IDimensionExpr:
        if id(e) in memo:
            return memo[id(e)]
        out = e
        if e._kind == "size_tensor" and e._tensor is None and 0 <= e._value < len(outputs):
            out = IDimensionExpr("size_tensor", value=e._value, owner=e._owner, opt=e._opt, upper=e._upper,
                                 tensor=outputs[e._value])
        elif e._kind == "op":
            lhs, rhs = bind(e._lhs), bind(e._rhs)
            if lhs is not e._lhs or rhs is not e._rhs:
                out = IDimensionExpr("op", op=e._op, lhs=lhs, rhs=rhs, owner=e._owner)
        memo[id(e)] = out
        return out

    return [bind(e) if isinstance(e, IDimensionExpr) else e for e in exprs]


def foreign(e: IDimensionExpr, builder: "IExprBuilder") -> str:
    """Why ``e`` cannot be used with ``builder`` ("" when it can)."""
    if e._owner is builder:
        return ""
    return (f"the dimension expression {e!r} was made by another IExprBuilder (an earlier build's or the "
            "network's: one kept from an earlier call?); TensorRT's expressions live only as long as the "
            "IExprBuilder that made them: build the expression again from this call's inputs")


@unpicklable
class IExprBuilder(Strict):
    """Builds :class:`IDimensionExpr` s, folding constant operands and trivial identities. Each
    build has its own (as does each network, for shapes computed while it is defined); an
    operand made by another one is refused."""

    def __init__(self):
        self._declared: List[IDimensionExpr] = []  # every declare_size_tensor result, in order
        self._logger = None  # where refused calls are reported (the network's or the build's logger)

    def constant(self, value: int) -> IDimensionExpr:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"IExprBuilder.constant() needs an int, got {type(value).__name__}")
        if not INT64_MIN <= value <= INT64_MAX:
            raise OverflowError(f"dimension constant {value} does not fit in int64")
        return IDimensionExpr("const", value=int(value), owner=self)

    def operation(self, op, first: IDimensionExpr, second: IDimensionExpr) -> IDimensionExpr:
        """``first op second``. A size tensor is no operand (TensorRT-RTX 1.7.1's builder, which shares TensorRT's
        front end: "IExprBuilder::operation: Error Code 3: API Usage Error (Parameter check failed, condition:
        !x.isSizeTensor().)"; notes/data_dependent_shapes.md, section G): reported and raised."""
        self._check_operands(f"operation({getattr(op, 'name', op)})", first, second)
        self._no_size_tensor("IExprBuilder::operation", first, second)
        return self._operation(op, first, second)

    def _check_operands(self, what: str, *operands) -> None:
        for side in operands:
            if not isinstance(side, IDimensionExpr):
                raise TypeError(f"{what} needs IDimensionExpr operands, got {type(side).__name__}"
                                " (a fake ShapeExpr or an expression created outside a shape context?)")
            why = foreign(side, self)
            if why:
                raise ValueError(f"IExprBuilder.{what}: {why}")

    def _no_size_tensor(self, where: str, *operands) -> None:
        if any(side.is_size_tensor() for side in operands):
            msg = (f"{where}: Error Code 3: API Usage Error (Parameter check failed, condition: !x.isSizeTensor().) "
                   "(TensorRT emulator: a size tensor, a data-dependent extent, is no operand of IExprBuilder; use it "
                   "as an output dimension as it is)")
            report(self.__dict__.get("_logger"), Severity.ERROR, msg)
            raise ValueError(msg)

    def _operation(self, op, first: IDimensionExpr, second: IDimensionExpr) -> IDimensionExpr:
        """``operation`` without the size-tensor check: the emulator's own shape inference (a reshape or a
        broadcast of a data-dependent tensor, which TensorRT's layers handle)."""
        if not isinstance(op, DimensionOperation):
            raise TypeError(f"operation() needs a DimensionOperation, got {op!r}")
        self._check_operands(f"operation({op.name})", first, second)
        if first.is_constant() and second.is_constant():
            return self.constant(apply_op(op, first._value, second._value))
        D = DimensionOperation

        def is_const(e: IDimensionExpr, v: int) -> bool:
            return e.is_constant() and e._value == v

        if op in (D.SUM, D.SUB) and is_const(second, 0):
            return first
        if op in (D.PROD, D.FLOOR_DIV, D.CEIL_DIV) and is_const(second, 1):
            return first
        if (op == D.SUM and is_const(first, 0)) or (op == D.PROD and is_const(first, 1)):
            return second
        if op in (D.FLOOR_DIV, D.CEIL_DIV) and is_const(second, 0):
            raise ZeroDivisionError(f"{op.name} by constant zero")
        return IDimensionExpr("op", op=op, lhs=first, rhs=second, owner=self)

    def declare_size_tensor(self, output_index: int, opt: IDimensionExpr, upper: IDimensionExpr) -> IDimensionExpr:
        """A data-dependent extent: the value of the plugin's size-tensor output ``output_index`` (NvInferRuntime.h,
        IExprBuilder::declareSizeTensor), tuned for ``opt``, at most ``upper``. What TensorRT requires of them (a
        0-D INT32/INT64 output of the plugin; ``opt`` and ``upper`` independent of size tensors) is checked by the
        build, which reports it as TensorRT reports build errors."""
        if not isinstance(output_index, int) or isinstance(output_index, bool):
            raise TypeError(f"declare_size_tensor() needs an int output index, got {type(output_index).__name__}")
        self._check_operands("declare_size_tensor(opt, upper)", opt, upper)
        # NvInferRuntime.h: opt "must not depend on a size tensor"; TensorRT-RTX 1.7.1 refuses a size tensor as opt
        # at the call (notes/data_dependent_shapes.md, section G); the emulator refuses it as the upper bound too
        self._no_size_tensor("IExprBuilder::declareSizeTensor", opt, upper)
        e = IDimensionExpr("size_tensor", value=int(output_index), owner=self, opt=opt, upper=upper)
        self._declared.append(e)
        return e

    # ----- the emulator's own -----
    def _symbol(self, name: str) -> IDimensionExpr:
        return IDimensionExpr("sym", name=str(name), owner=self)


@unpicklable
class Dims(list):
    """Mutable list of ints: ``Dims(n)`` gives ``n`` zeros, ``Dims(seq)`` copies; compares equal to
    tuples and lists, is neither hashable nor picklable (as the native class)."""

    MAX_DIMS = 8

    def __init__(self, shape: Union[int, Iterable[int]] = ()):
        super().__init__([0] * shape if isinstance(shape, int) else [int(s) for s in shape])

    def __eq__(self, other):
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self):
        return repr(tuple(self))

    def __getattr__(self, name):
        raise AttributeError(f"Dims.{name} is not implemented by the TensorRT emulator")


@unpicklable
class DimsExprs(list):
    def __init__(self, n: Union[int, Iterable[IDimensionExpr]] = 0):
        super().__init__([None] * n if isinstance(n, int) else list(n))
