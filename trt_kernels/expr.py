"""Small symbolic integer expressions over the inputs' sizes.

Authors write them with :class:`Numel` and :class:`DimSize` (which name an
input) and :class:`Scalar` (an int scalar input's value) combined with ``+ - * //`` and :func:`cdiv` / :func:`maximum` /
:func:`minimum`. They are used for kernel extras, output shapes and custom
launch geometry.

Inside the plan, names are resolved to positions in the tensor-only input
list and axes are made non-negative for the input's rank; those *resolved*
nodes (:class:`Dim`, :class:`NumelOf`, :class:`Const`, :class:`BinOp`) are
what the evaluators see. One expression tree has three interpreters
(DESIGN.md): Python ints for eager launches, torch SymInts for the fake
impl, TensorRT shape expressions for the plugin. Each is a small
:class:`Evaluator`; :func:`evaluate` walks a tree with one of them.
"""


from __future__ import annotations

import operator
from typing import Any, Callable, Optional, Sequence, Union

from trt_kernels._record import Frozen, record


class Expr(Frozen):
    """Base of every expression node (each a frozen record, :mod:`trt_kernels._record`); gives the
    arithmetic operators."""

    __slots__ = ()

    def __add__(self, other: "ExprLike") -> "Expr":
        return BinOp("add", self, lift(other))

    def __radd__(self, other: "ExprLike") -> "Expr":
        return BinOp("add", lift(other), self)

    def __sub__(self, other: "ExprLike") -> "Expr":
        return BinOp("sub", self, lift(other))

    def __rsub__(self, other: "ExprLike") -> "Expr":
        return BinOp("sub", lift(other), self)

    def __mul__(self, other: "ExprLike") -> "Expr":
        return BinOp("mul", self, lift(other))

    def __rmul__(self, other: "ExprLike") -> "Expr":
        return BinOp("mul", lift(other), self)

    def __floordiv__(self, other: "ExprLike") -> "Expr":
        return BinOp("floordiv", self, lift(other))

    def __rfloordiv__(self, other: "ExprLike") -> "Expr":
        return BinOp("floordiv", lift(other), self)


ExprLike = Union[Expr, int]


@record
class Const(Expr):
    """A constant."""

    value: int

    def __init__(self, value: int) -> None:
        self.__dict__.update(value=value)

    def __str__(self) -> str:
        return str(self.value)


@record
class Numel(Expr):
    """``inputs[input_name].numel()``; as an extra, passed to the kernel as a C ``int``.

    ``input_name`` is a tensor input's name, or its position among the tensor inputs.
    """

    input_name: Union[str, int]

    def __init__(self, input_name: Union[str, int]) -> None:
        self.__dict__.update(input_name=input_name)

    def __str__(self) -> str:
        return f"Numel({self.input_name!r})"


@record
class DimSize(Expr):
    """``inputs[input_name].shape[axis]`` (negative axes allowed)."""

    input_name: Union[str, int]
    axis: int

    def __init__(self, input_name: Union[str, int], axis: int) -> None:
        self.__dict__.update(input_name=input_name, axis=axis)

    def __str__(self) -> str:
        return f"DimSize({self.input_name!r}, {self.axis})"


@record
class Scalar(Expr):
    """The value of an ``int`` scalar input, ``Scalar("k")``, or one element of an int tuple input,
    ``Scalar("pads")[0]``: in an output shape, an extra or the geometry, it is the call's value
    (eager and the fake impl) or the plugin attribute's (TensorRT, fixed when the engine is built)."""

    input_name: str
    index: Optional[int] = None

    def __init__(self, input_name: str, index: Optional[int] = None) -> None:
        self.__dict__.update(input_name=input_name, index=index)

    def __getitem__(self, index: int) -> "Scalar":
        if self.index is not None:
            raise TypeError(f"{self} is one element already; index the tuple input once, e.g. Scalar('pads')[0]")
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"Scalar({self.input_name!r})[{index!r}]: the index must be an int")
        return Scalar(self.input_name, index)

    def __iter__(self):  # __getitem__ would otherwise make it iterable without end
        raise TypeError(f"{self} is not iterable; index it, e.g. Scalar({self.input_name!r})[0]")

    def __str__(self) -> str:
        return f"Scalar({self.input_name!r})" + ("" if self.index is None else f"[{self.index}]")


@record
class BinOp(Expr):
    """``lhs <op> rhs``; ``op`` is one of add sub mul floordiv cdiv max min."""

    op: str  # add sub mul floordiv cdiv max min
    lhs: Expr
    rhs: Expr

    def __init__(self, op: str, lhs: Expr, rhs: Expr) -> None:
        self.__dict__.update(op=op, lhs=lhs, rhs=rhs)

    def __str__(self) -> str:
        sym = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//"}.get(self.op)
        if sym:
            return f"({self.lhs} {sym} {self.rhs})"
        if self.op == "npow2":
            return f"next_power_of_2({self.lhs})"
        return f"{self.op}({self.lhs}, {self.rhs})"


# ----- resolved leaves (what evaluators see) -----


@record
class Dim(Expr):
    """Size of axis ``axis`` (>= 0) of tensor input number ``tensor``."""

    tensor: int
    axis: int

    def __init__(self, tensor: int, axis: int) -> None:
        self.__dict__.update(tensor=tensor, axis=axis)

    def __str__(self) -> str:
        return f"in{self.tensor}.shape[{self.axis}]"


@record
class NumelOf(Expr):
    """``numel()`` of tensor input number ``tensor``."""

    tensor: int

    def __init__(self, tensor: int) -> None:
        self.__dict__.update(tensor=tensor)

    def __str__(self) -> str:
        return f"in{self.tensor}.numel()"


@record
class ScalarOf(Expr):
    """The value of scalar input number ``scalar`` (among the scalar inputs), or its element ``index``
    (>= 0) for a tuple input; ``name`` is the input's, for messages."""

    scalar: int
    index: Optional[int]
    name: str

    def __init__(self, scalar: int, index: Optional[int], name: str) -> None:
        self.__dict__.update(scalar=scalar, index=index, name=name)

    def __str__(self) -> str:
        return self.name + ("" if self.index is None else f"[{self.index}]")


def lift(value: ExprLike) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"expected an int or a trt_kernels expression (Numel, DimSize, ...), got {value!r}"
        )
    return Const(value)


def cdiv(a: ExprLike, b: ExprLike) -> Expr:
    """Ceiling division ``(a + b - 1) // b`` for non-negative sizes."""
    return BinOp("cdiv", lift(a), lift(b))


def maximum(a: ExprLike, b: ExprLike) -> Expr:
    return BinOp("max", lift(a), lift(b))


def minimum(a: ExprLike, b: ExprLike) -> Expr:
    return BinOp("min", lift(a), lift(b))


def next_power_of_2(a: ExprLike) -> Expr:
    """The smallest power of two >= ``a`` (0 for 0, as ``triton.next_power_of_2``). For launch-time
    constexprs (``triton_kernel_op(constexprs={"BLOCK": next_power_of_2(DimSize("x", -1))})``): each
    distinct value compiles its own variant; sizes of outputs, extras and grids cannot use it."""
    return BinOp("npow2", lift(a), Const(0))


def _npow2(a: int) -> int:
    return 1 << (a - 1).bit_length() if a > 0 else 0


# ----- rewriting -----


def leaves(e: Expr):
    """Yield the leaf nodes of ``e``."""
    if isinstance(e, BinOp):
        yield from leaves(e.lhs)
        yield from leaves(e.rhs)
    else:
        yield e


def resolve(e: Expr, leaf: Callable[[Expr], Expr]) -> Expr:
    """Rebuild ``e`` with each non-constant leaf replaced by ``leaf(node)``; folds constants."""
    if isinstance(e, BinOp):
        return binop(e.op, resolve(e.lhs, leaf), resolve(e.rhs, leaf))
    if isinstance(e, Const):
        return e
    return leaf(e)


#: each binary operation on plain ints (constant folding here, constant checks in validation)
INT_OPS: dict[str, Callable[[int, int], int]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "floordiv": operator.floordiv,
    "cdiv": lambda a, b: -(-a // b),
    "max": max,
    "min": min,
    "npow2": lambda a, _: _npow2(a),
}


def binop(op: str, a: Expr, b: Expr) -> Expr:
    """A simplifying constructor: folds constants and drops ``x*1``, ``x+0``, ``x//1``."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(INT_OPS[op](a.value, b.value))
    if isinstance(b, Const):
        if b.value == 1 and op in ("mul", "floordiv", "cdiv"):
            return a
        if b.value == 0 and op in ("add", "sub"):
            return a
    if isinstance(a, Const):
        if a.value == 1 and op == "mul":
            return b
        if a.value == 0 and op == "add":
            return b
    return BinOp(op, a, b)


def lower(e: Expr) -> Expr:
    """``e`` as the eager readers of a launch evaluate it (the generated Python launcher and the native
    kernel, :class:`~trt_kernels.recipe.LaunchRecipe`): each ceiling division by a constant ``c`` written as
    ``(lhs + (c - 1)) // c``, an addition and a floor division (the cheapest form in Python; the same value
    as ``cdiv`` for every ``c > 0``); every other node as it is. Decided here once, so the two readers
    cannot differ (they did once, for a negative ``c``)."""
    if not isinstance(e, BinOp):
        return e
    lhs, rhs = lower(e.lhs), lower(e.rhs)
    if e.op == "cdiv" and isinstance(rhs, Const):
        return BinOp("floordiv", BinOp("add", lhs, Const(rhs.value - 1)), rhs)
    return e if lhs is e.lhs and rhs is e.rhs else BinOp(e.op, lhs, rhs)


def product(items: Sequence[Expr]) -> Expr:
    out: Expr = Const(1)
    for item in items:
        out = binop("mul", out, item)
    return out


# ----- evaluation -----


class Evaluator:
    """One interpretation of resolved expressions. Subclasses give leaves and operations."""

    def const(self, value: int) -> Any:
        return value

    def dim(self, tensor: int, axis: int) -> Any:
        raise NotImplementedError

    def numel(self, tensor: int) -> Any:
        raise NotImplementedError

    def scalar(self, scalar: int, index: Optional[int]) -> Any:
        """The value of scalar input ``scalar`` (element ``index`` of a tuple input)."""
        value = self.scalars[scalar]
        return value if index is None else value[index]

    scalars: Sequence[Any] = ()  # the scalar inputs' values, in declaration order

    def add(self, a: Any, b: Any) -> Any:
        return a + b

    def sub(self, a: Any, b: Any) -> Any:
        return a - b

    def mul(self, a: Any, b: Any) -> Any:
        return a * b

    def floordiv(self, a: Any, b: Any) -> Any:
        return a // b

    def cdiv(self, a: Any, b: Any) -> Any:
        return (a + b - 1) // b

    def max(self, a: Any, b: Any) -> Any:
        return max(a, b)

    def min(self, a: Any, b: Any) -> Any:
        return min(a, b)

    def npow2(self, a: Any, _: Any) -> Any:
        return _npow2(int(a))


def evaluate(e: Expr, ev: Evaluator) -> Any:
    if isinstance(e, BinOp):
        return getattr(ev, e.op)(evaluate(e.lhs, ev), evaluate(e.rhs, ev))
    if isinstance(e, Const):
        return ev.const(e.value)
    if isinstance(e, Dim):
        return ev.dim(e.tensor, e.axis)
    if isinstance(e, NumelOf):
        return ev.numel(e.tensor)
    if isinstance(e, ScalarOf):
        return ev.scalar(e.scalar, e.index)
    raise TypeError(f"unresolved expression node {e!r}; resolve names against the spec first")


class ShapeEvaluator(Evaluator):
    """Evaluates over objects with ``.shape`` and ``.numel()``: ints for real tensors,
    SymInts for fake ones (the fake impl under ``torch.compile`` / ``torch.export``)."""

    def __init__(self, tensors: Sequence[Any], scalars: Sequence[Any] = ()):
        self.tensors = tensors
        self.scalars = scalars

    def dim(self, tensor: int, axis: int) -> Any:
        return self.tensors[tensor].shape[axis]

    def numel(self, tensor: int) -> Any:
        return self.tensors[tensor].numel()

    def max(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int):
            return max(a, b)
        import torch

        return torch.sym_max(a, b)

    def min(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int):
            return min(a, b)
        import torch

        return torch.sym_min(a, b)


class SizesEvaluator(Evaluator):
    """Evaluates over plain shape tuples (used by tests and the replay checker)."""

    def __init__(self, shapes: Sequence[Sequence[int]], scalars: Sequence[Any] = ()):
        self.shapes = shapes
        self.scalars = scalars

    def dim(self, tensor: int, axis: int) -> int:
        return int(self.shapes[tensor][axis])

    def numel(self, tensor: int) -> int:
        n = 1
        for s in self.shapes[tensor]:
            n *= int(s)
        return n
