"""Shapes: ``Dims``, ``DimsExprs`` and the symbolic ``IExprBuilder`` / ``IDimensionExpr``.

A dimension expression is a constant, a symbol (one dynamic axis of a network input), a
size-tensor placeholder, or an operation over two expressions. TensorRT keeps such trees in
the engine for a plugin's output shapes and AOT launch parameters and evaluates them when the
input shapes are known; the emulator does the same (``_evaluate``) and stores them in its
engine format (``to_json``/``from_json``). Names beginning with ``_`` are the emulator's own;
every public name exists in TensorRT's bindings.
"""

from typing import Any, Iterable, Mapping, Optional, Union

from ._enums import DimensionOperation
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


@unpicklable
class IDimensionExpr(Strict):
    """Immutable symbolic integer. Like the native class it has no arithmetic operators;
    expressions are combined through ``IExprBuilder.operation``."""

    __slots__ = ("_kind", "_value", "_name", "_op", "_lhs", "_rhs", "_owner")

    def __init__(self, kind: str, value: Optional[int] = None, name: Optional[str] = None, op=None,
                 lhs: "IDimensionExpr" = None, rhs: "IDimensionExpr" = None, owner: "IExprBuilder" = None):
        self._kind, self._value, self._name, self._op, self._lhs, self._rhs = kind, value, name, op, lhs, rhs
        #: the IExprBuilder that made it: in TensorRT an expression lives as long as the builder that
        #: handed it out (one build's, or one network's), so one kept from another builder is refused
        self._owner = owner

    def is_constant(self) -> bool:
        return self._kind == "const"

    def get_constant_value(self) -> int:
        return self._value if self._kind == "const" else INT64_MIN

    def is_size_tensor(self) -> bool:
        return self._kind == "size_tensor"

    # ----- the emulator's own -----
    def _symbols(self) -> set:
        if self._kind == "sym":
            return {self._name}
        if self._kind == "op":
            return self._lhs._symbols() | self._rhs._symbols()
        return set()

    def _evaluate(self, bindings: Mapping[str, int]) -> int:
        if self._kind == "const":
            return self._value
        if self._kind == "sym":
            if self._name not in bindings:
                raise KeyError(f"no concrete value bound for dimension {self._name!r}")
            return int(bindings[self._name])
        if self._kind == "size_tensor":
            raise ValueError("size tensors (data-dependent output shapes) are not emulated")
        return apply_op(self._op, self._lhs._evaluate(bindings), self._rhs._evaluate(bindings))

    def _to_json(self) -> Any:
        if self._kind == "const":
            return self._value
        if self._kind == "sym":
            return self._name
        if self._kind == "size_tensor":
            return ["size_tensor", self._value]
        return [self._op.name, self._lhs._to_json(), self._rhs._to_json()]

    def __repr__(self) -> str:
        if self._kind == "const":
            return str(self._value)
        if self._kind == "sym":
            return self._name
        if self._kind == "size_tensor":
            return f"size_tensor[{self._value}]"
        if self._op in _OP_TEXT:
            return f"({self._lhs!r} {_OP_TEXT[self._op]} {self._rhs!r})"
        return f"{self._op.name.lower()}({self._lhs!r}, {self._rhs!r})"


def expr_from_json(j: Any) -> IDimensionExpr:
    if isinstance(j, bool):
        raise ValueError(f"bad dimension expression {j!r}")
    if isinstance(j, int):
        return IDimensionExpr("const", value=j)
    if isinstance(j, str):
        return IDimensionExpr("sym", name=j)
    if isinstance(j, list) and len(j) == 3 and j[0] in DimensionOperation.__members__:
        return IDimensionExpr("op", op=DimensionOperation[j[0]], lhs=expr_from_json(j[1]), rhs=expr_from_json(j[2]))
    raise ValueError(f"bad dimension expression {j!r}")


def evaluate(j: Any, bindings: Mapping[str, int]) -> int:
    """Evaluate a JSON expression (as stored in an engine) at ``bindings``."""
    if isinstance(j, int) and not isinstance(j, bool):
        return j
    if isinstance(j, str):
        if j not in bindings:
            raise KeyError(f"no concrete value bound for dimension {j!r}")
        return int(bindings[j])
    return apply_op(DimensionOperation[j[0]], evaluate(j[1], bindings), evaluate(j[2], bindings))


def symbols_of(j: Any) -> set:
    if isinstance(j, str):
        return {j}
    if isinstance(j, list):
        return symbols_of(j[1]) | symbols_of(j[2])
    return set()


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

    def constant(self, value: int) -> IDimensionExpr:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"IExprBuilder.constant() needs an int, got {type(value).__name__}")
        if not INT64_MIN <= value <= INT64_MAX:
            raise OverflowError(f"dimension constant {value} does not fit in int64")
        return IDimensionExpr("const", value=int(value), owner=self)

    def operation(self, op, first: IDimensionExpr, second: IDimensionExpr) -> IDimensionExpr:
        if not isinstance(op, DimensionOperation):
            raise TypeError(f"operation() needs a DimensionOperation, got {op!r}")
        for side in (first, second):
            if not isinstance(side, IDimensionExpr):
                raise TypeError(f"operation() needs IDimensionExpr operands, got {type(side).__name__}"
                                " (a fake ShapeExpr or an expression created outside a shape context?)")
            why = foreign(side, self)
            if why:
                raise ValueError(f"IExprBuilder.operation({op.name}): {why}")
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
        return IDimensionExpr("size_tensor", value=int(output_index), owner=self)

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
