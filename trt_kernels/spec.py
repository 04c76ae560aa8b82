"""The declarative DSL (frozen dataclasses); :mod:`trt_kernels.validate` checks it.

Names and meanings follow Torch-TensorRT's ``torch_tensorrt.kernels`` so a
user's spec ports by changing the import. Extensions are additive: shapes
and extras may be arbitrary size expressions (``Numel("x") * 2``), kernels
may be templates over several dtypes, ``Custom`` geometry is expressed in
the same expressions so that eager, fake and TensorRT evaluate one plan.

Each class is a dataclass (``dataclasses.fields`` / ``replace`` work) whose methods are
written out here rather than generated at import (:mod:`trt_kernels._record`).
"""


from __future__ import annotations

from dataclasses import field
from typing import Any, List, Literal, Optional, Sequence, Tuple, Union

import torch

from trt_kernels._record import FACTORY, Frozen, Record, record
from trt_kernels.expr import Expr

# ---------- output shape relations ----------


@record
class SameAs(Frozen):
    """Output has the shape (and, unless told otherwise, the dtype) of a tensor input.

    ``input_idx``: the input's name, or its position among the *tensor* inputs.
    """

    input_idx: Union[int, str] = 0

    def __init__(self, input_idx: Union[int, str] = 0) -> None:
        self.__dict__.update(input_idx=input_idx)


@record
class ReduceDims(Frozen):
    """Output is the referenced tensor input with ``dims`` removed (kept as 1 if ``keepdim``)."""

    input_idx: Union[int, str]
    dims: Tuple[int, ...]
    keepdim: bool = False

    def __init__(self, input_idx: Union[int, str], dims: Tuple[int, ...], keepdim: bool = False) -> None:
        self.__dict__.update(input_idx=input_idx, dims=dims, keepdim=keepdim)


@record
class Written(Frozen):
    """An output dimension the kernel decides (a data-dependent size: how many indices ``nonzero`` finds, how
    many boxes pass a threshold), as one entry of an :class:`OutputDecl`'s tuple shape:
    ``OutputDecl("idx", shape=(ttk.Written("count", max=ttk.Numel("x")), 2))``.

    ``count``: the kernel parameter where the kernel writes the size, a pointer to one ``dtype`` (``int32``
    or ``int64``), matched by name like every parameter (``count`` or ``count_ptr``; placed after the
    outputs in the calling convention). Outputs that name the same ``count`` share it (boxes and their
    scores). ``max``: the largest the size may be, a size expression of the inputs (the buffer's size:
    eager allocates it, TensorRT sizes the output from it). ``opt``: the size TensorRT tunes for (default
    ``max // 2``). The kernel writes the count itself, not assuming the buffer was zeroed, and writes the
    output densely in the shape it reports (row-major, the written axis at its actual size). Eager returns
    the outputs at their actual size, which reads the count back: a stream synchronisation per call.
    """

    count: str
    max: Union[Expr, int]
    opt: Optional[Union[Expr, int]] = None
    dtype: torch.dtype = torch.int32

    def __init__(self, count: str, max: Union[Expr, int], opt: Optional[Union[Expr, int]] = None,
                 dtype: torch.dtype = torch.int32) -> None:
        self.__dict__.update(count=count, max=max, opt=opt, dtype=dtype)


ShapeRel = Union[SameAs, ReduceDims, Tuple[Union[Expr, int, Written], ...]]

# ---------- launch geometry ----------


@record
class Elementwise(Frozen):
    """One thread per output element (output 0).

    ``layout="flat"``: ``block=(bx,)``, ``grid=(cdiv(numel(out), bx),)``.
    ``layout="nd"``: ``block[0]`` covers the last output axis (grid x), ``block[1]`` the one
    before (grid y), ``block[2]`` the one before that (grid z); axes before those fold into
    grid z.

    ``tactics``: alternative block shapes TensorRT may time. TensorRT tactic 1 is ``block``,
    tactic ``k + 2`` is ``tactics[k]``. Eager launches always use ``block``.
    """

    block: Tuple[int, ...] = (256,)
    layout: Literal["flat", "nd"] = "flat"
    tactics: Tuple[Tuple[int, ...], ...] = ()

    def __init__(self, block: Tuple[int, ...] = (256,), layout: Literal["flat", "nd"] = "flat",
                 tactics: Tuple[Tuple[int, ...], ...] = ()) -> None:
        self.__dict__.update(block=block, layout=layout, tactics=tactics)


@record
class Reduction(Frozen):
    """One block per element of output 0; the block's threads cooperate across ``reduce_dims``
    (axes of the *input*). Grid = ``numel(output 0)``, block = ``block_size``.

    ``tactics``: alternative block sizes TensorRT may time (tactic 1 is ``block_size``, tactic
    ``k + 2`` is ``tactics[k]``); eager uses ``block_size``.
    """

    reduce_dims: Tuple[int, ...]
    block_size: int = 256
    tactics: Tuple[int, ...] = ()

    def __init__(self, reduce_dims: Tuple[int, ...], block_size: int = 256, tactics: Tuple[int, ...] = ()) -> None:
        self.__dict__.update(reduce_dims=reduce_dims, block_size=block_size, tactics=tactics)


@record
class Custom(Frozen):
    """Any launch geometry, written in size expressions: ``grid`` (1 to 3 expressions or ints),
    ``block`` (1 to 3 ints), ``shared_mem`` (bytes of dynamic shared memory, an int or expression).

    Example: ``Custom(grid=(ttk.cdiv(ttk.Numel("x"), 128),), block=(128,))``.
    """

    grid: Tuple[Union[Expr, int], ...]
    block: Tuple[int, ...]
    shared_mem: Union[Expr, int] = 0

    def __init__(self, grid: Tuple[Union[Expr, int], ...], block: Tuple[int, ...],
                 shared_mem: Union[Expr, int] = 0) -> None:
        self.__dict__.update(grid=grid, block=block, shared_mem=shared_mem)


Geometry = Union[Elementwise, Reduction, Custom]

# ---------- inputs / outputs ----------


@record
class InputDecl(Frozen):
    """A tensor input; the kernel receives a ``T*`` (its data pointer).

    ``dtype``: a fixed dtype for this input; ``None`` means the kernel's dtype (``float32``
    unless the spec declares ``dtypes`` for a template kernel; with several ``type_params``, the
    first); a str names one of the spec's ``type_params`` (``dtype="W"``). ``ndim``: optional rank;
    when given, axes that name this input are checked at registration. ``mutated``: the kernel writes
    this input in place (an optimizer step, a cache update): the schema marks it ``Tensor(a!)``, the
    launch passes the tensor itself (contiguous, or the call is refused), and the op may declare no
    outputs (then it returns nothing).
    """

    name: str
    dtype: Optional[Union[torch.dtype, str]] = None
    ndim: Optional[int] = None
    mutated: bool = False

    def __init__(self, name: str, dtype: Optional[Union[torch.dtype, str]] = None, ndim: Optional[int] = None,
                 mutated: bool = False) -> None:
        self.__dict__.update(name=name, dtype=dtype, ndim=ndim, mutated=mutated)


@record
class ScalarInput(Frozen):
    """A by-value kernel argument: ``float`` (C ``float``), ``int`` (C ``int``) or ``bool``; or a
    fixed-length tuple of ints or floats, ``(int, 4)``, passed as that many C scalars in order.

    ``default``: the value a call that leaves the argument out gets (``float eps=1e-06`` in the
    schema); only trailing inputs may have one, as in a torch schema.

    ``ctype``: the parameter's C type as the kernel declares it, for an ``int`` (or ``(int, n)``) input
    one of :data:`trt_kernels.dtypes.SIZE_TYPES` (``"int"``, ``"unsigned"``, ``"long"``, ``"long long"``,
    ``"int64_t"``, ``"uint64_t"``, ``"size_t"``, ...): a 64-bit one takes any value of its type (over
    2**31, negative for a signed one). None (the default): ``int``, ``float``, ``bool``. Example:
    ``ttk.ScalarInput("seed", int, ctype="uint64_t")``.
    """

    name: str
    py_type: Any
    default: Any = None
    ctype: Optional[str] = None

    def __init__(self, name: str, py_type: Any, default: Any = None, ctype: Optional[str] = None) -> None:
        self.__dict__.update(name=name, py_type=py_type, default=default, ctype=ctype)


InputSpec = Union[InputDecl, ScalarInput]


@record
class SizeArg(Frozen):
    """A kernel parameter that is neither a tensor nor a scalar input: a size (``N``, ``C``, a stride) or a
    constant, computed at every launch from the inputs' sizes and int scalars.

    ``name``: the kernel's own name for the parameter (matched against the kernel's parameter names, and
    usable in ``params``); ``value``: a size expression or an int; ``ctype``: the parameter's C type as the
    kernel declares it, one of :data:`trt_kernels.dtypes.SIZE_TYPES` (``"int"``, ``"unsigned"``,
    ``"long"``, ``"long long"``, ``"int64_t"``, ``"size_t"``, ...): a 64-bit one takes values over 2**31.
    Goes in ``extras``, where a plain expression is a C ``int`` without a name.
    """

    name: str
    value: Any
    ctype: str = "int"

    def __init__(self, name: str, value: Any, ctype: str = "int") -> None:
        self.__dict__.update(name=name, value=value, ctype=ctype)




@record
class OutputDecl(Frozen):
    """An output tensor; the kernel receives a ``T*``.

    ``shape``: ``SameAs``, ``ReduceDims`` or a tuple of size expressions, one of which may be
    :class:`Written` (a size the kernel decides).
    dtype: ``dtype`` if given (a dtype, or the name of one of the spec's ``type_params``), else
    that of input ``dtype_from``, else that of the input the shape refers to (the first tensor
    input for a tuple shape).
    """

    name: str
    shape: ShapeRel
    dtype_from: Optional[str] = None
    dtype: Optional[Union[torch.dtype, str]] = None

    def __init__(self, name: str, shape: ShapeRel, dtype_from: Optional[str] = None,
                 dtype: Optional[Union[torch.dtype, str]] = None) -> None:
        self.__dict__.update(name=name, shape=shape, dtype_from=dtype_from, dtype=dtype)


# ---------- size checks between inputs ----------


class _Check:
    """Base of the size checks: an immutable value, equal to another of its kind with the same operands.
    (A plain class, not a frozen dataclass: generating one costs every ``import trt_kernels`` time.)"""

    __slots__ = ("_args",)

    def __init__(self, *args):
        object.__setattr__(self, "_args", tuple(args))

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other):
        return type(other) is type(self) and other._args == self._args

    def __hash__(self):
        return hash((type(self).__name__, self._args))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(_operand_text(o) for o in self._args)})"


class SameShape(_Check):
    """The named tensor inputs must have equal shapes (same rank, same size on every axis).

    Checked at call time before anything is allocated or launched (``InputError``), in the fake
    impl (a guard under ``torch.compile`` / ``torch.export``) and when TensorRT's converter adds
    the layer. Example: ``checks=[ttk.SameShape("x", "y")]``.
    """

    __slots__ = ()

    def __init__(self, *inputs: Union[str, int]):
        super().__init__(*inputs)

    @property
    def inputs(self) -> Tuple[Union[str, int], ...]:
        return self._args


class SameDim(_Check):
    """The given sizes must be equal: each operand is ``(input, axis)`` (negative axes count from
    the end) or any size expression (``ttk.Numel("w")``, ``ttk.DimSize("x", 0) * 2``).

    Checked where :class:`SameShape` is. Example: ``checks=[ttk.SameDim(("x", -1), ("w", 0))]``.
    """

    __slots__ = ()

    def __init__(self, *operands: Union[Tuple[Union[str, int], int], Expr, int]):
        super().__init__(*operands)

    @property
    def operands(self) -> tuple:
        return self._args


def _operand_text(o) -> str:
    return repr(tuple(o)) if isinstance(o, (tuple, list)) else repr(o) if isinstance(o, str) else str(o)


Check = Union[SameShape, SameDim]


@record
class KernelSpec(Record):
    """Declarative description of a CUDA kernel.

    The kernel's parameters are taken in the kernel's own order: where its ``__global__`` declaration
    names every declared input, output and named extra (:class:`SizeArg`; a tensor ``x`` may be ``x_ptr``),
    they are matched by name; ``params`` states the order explicitly (a list of the declared names, in
    the kernel's order). Otherwise the calling convention is ``(tensor input pointers..., scalar
    inputs..., extras..., output pointers...)``, each group in declaration order.

    ``dtypes``: for a template kernel (``kernel_name="k<T>"``), the dtypes ``T`` may take; each
    is instantiated by NVRTC and eager dispatches on the input dtype.
    ``type_params``: the template's type parameters when it has several (``("T", "W")`` for
    ``kernel_name="k<T, W>"``); ``dtypes`` then lists the declared combinations as tuples
    (``[(torch.float16, torch.float32), ...]``), inputs say which parameter is their type
    (``InputDecl("w", dtype="W")``; no dtype: the first), and eager dispatches on the inputs' dtypes.
    ``checks``: size relations between inputs (:class:`SameShape`, :class:`SameDim`), checked
    before every launch and in the fake impl.
    ``compile_options``: extra NVRTC flags (``"--use_fast_math"``, ``"-DBLOCK=256"``, ...).
    ``min_arch``: the lowest GPU arch the op's TensorRT AOT plugin must load on (``"sm_80"``: its PTX targets
    sm_80 and the driver compiles it for every newer GPU), or the kernel's own minimum where it uses a newer
    arch's features (``"sm_90"`` for TMA, ``"sm_90a"`` for wgmma). Eager launches keep the GPU's own arch
    (and refuse a GPU below ``min_arch``). See docs/tensorrt.md, "Deploying to several GPU generations".
    """

    kernel_source: str
    kernel_name: str
    inputs: Optional[Sequence[InputSpec]] = None
    outputs: Optional[Sequence[OutputDecl]] = None
    extras: Sequence[Union[Expr, int]] = field(default_factory=list)
    geometry: Optional[Geometry] = None
    include_paths: Optional[List[str]] = None
    compile_std: str = "c++17"
    arch_override: Optional[str] = None
    dtypes: Optional[Sequence[Union[torch.dtype, Tuple[torch.dtype, ...]]]] = None
    compile_options: Sequence[str] = ()
    type_params: Optional[Sequence[str]] = None
    checks: Sequence[Check] = ()
    params: Optional[Sequence[str]] = None
    min_arch: Optional[str] = None

    def __init__(self, kernel_source: str, kernel_name: str, inputs: Optional[Sequence[InputSpec]] = None,
                 outputs: Optional[Sequence[OutputDecl]] = None, extras: Sequence[Union[Expr, int]] = FACTORY,
                 geometry: Optional[Geometry] = None, include_paths: Optional[List[str]] = None,
                 compile_std: str = "c++17", arch_override: Optional[str] = None,
                 dtypes: Optional[Sequence[Union[torch.dtype, Tuple[torch.dtype, ...]]]] = None,
                 compile_options: Sequence[str] = (), type_params: Optional[Sequence[str]] = None,
                 checks: Sequence[Check] = (), params: Optional[Sequence[str]] = None,
                 min_arch: Optional[str] = None) -> None:
        self.kernel_source = kernel_source
        self.kernel_name = kernel_name
        self.inputs = inputs
        self.outputs = outputs
        self.extras = [] if extras is FACTORY else extras
        self.geometry = geometry
        self.include_paths = include_paths
        self.compile_std = compile_std
        self.arch_override = arch_override
        self.dtypes = dtypes
        self.compile_options = compile_options
        self.type_params = type_params
        self.checks = checks
        self.params = params
        self.min_arch = min_arch
