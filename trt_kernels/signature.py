"""What a kernel takes, resolved once: the :class:`Signature` every part of the package reads.

:func:`trt_kernels.validate.validate_signature` checks a declaration (inputs, outputs,
extras, geometry, dtypes) and resolves it into a ``Signature``: input positions, tensor
indices instead of names, output dtype rules, size expressions with their leaves resolved
to tensor indices, one launch geometry per tactic, and the kernel's parameter list (the
ABI). The plan, the ABI check, the fake impl, the fast path, the TensorRT plugin and the
CLI read it and never look names up again. (These are frozen records, :mod:`trt_kernels._record`:
a ``@dataclass(frozen=True)`` cost about 0.4 ms of every ``import trt_kernels`` to generate its methods, a
``NamedTuple`` with string annotations about 0.3 ms, a record about 0.03 ms.) Where the kernel's *code* comes from
(CUDA C++, PTX, Triton) is a separate object, a :class:`~trt_kernels.kernel_source.KernelSource`.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union

import torch

from . import dtypes as _dt
from ._record import Frozen, record
from .expr import Const, Expr
from .spec import InputDecl, ScalarInput


@record
class Param(Frozen):
    """One kernel parameter: ``kind`` is ``ptr``, ``int``, ``float`` or ``bool``; ``code`` its struct code."""

    kind: str
    size: int
    code: str  # struct format code used to pack it
    label: str  # how the declaration describes it, for messages

    def __init__(self, kind: str, size: int, code: str, label: str) -> None:
        self.__dict__.update(kind=kind, size=size, code=code, label=label)


#: scalar input type -> (kind, bytes, struct code, C type, schema type)
SCALAR_TYPES = {float: ("float", 4, "f", "float", "float"), int: ("int", 4, "i", "int", "int"),
                bool: ("bool", 1, "?", "bool", "bool")}


@record
class OutputSig(Frozen):
    """One output, resolved. ``kind``: ``like`` (the shape of tensor input ``tensor``), ``reduce``
    (input ``tensor`` with ``dims`` removed, or kept as 1 with ``keepdim``) or ``exprs`` (``exprs``,
    size expressions over the inputs). dtype: ``dtype`` if fixed, else that of tensor input ``dtype_src``."""

    name: str
    kind: str
    tensor: int
    dims: Tuple[int, ...] = ()
    keepdim: bool = False
    exprs: Tuple[Expr, ...] = ()
    dtype: Optional[torch.dtype] = None
    dtype_src: Optional[int] = None

    def __init__(self, name: str, kind: str, tensor: int, dims: Tuple[int, ...] = (), keepdim: bool = False,
                 exprs: Tuple[Expr, ...] = (), dtype: Optional[torch.dtype] = None,
                 dtype_src: Optional[int] = None) -> None:
        self.__dict__.update(name=name, kind=kind, tensor=tensor, dims=dims, keepdim=keepdim, exprs=exprs, dtype=dtype,
                             dtype_src=dtype_src)


@record
class LaunchSig(Frozen):
    """The launch geometry of one tactic. ``kind``: ``flat`` / ``nd`` (one thread per element of
    output 0), ``reduce`` (one block per element of output 0) or ``custom`` (``grid`` and
    ``shared_mem`` as resolved size expressions)."""

    kind: str
    block: Tuple[int, ...]
    grid: Tuple[Expr, ...] = ()
    shared_mem: Expr = Const(0)
    reduce_dims: Tuple[int, ...] = ()

    def __init__(self, kind: str, block: Tuple[int, ...], grid: Tuple[Expr, ...] = (), shared_mem: Expr = Const(0),
                 reduce_dims: Tuple[int, ...] = ()) -> None:
        self.__dict__.update(kind=kind, block=block, grid=grid, shared_mem=shared_mem, reduce_dims=reduce_dims)


@record
class Signature(Frozen):
    """A validated declaration: what the kernel takes and how it is launched, by position.

    Size expressions (``extras``, ``OutputSig.exprs``, ``LaunchSig.grid``/``shared_mem``) have their
    leaves resolved to tensor indices (:class:`~trt_kernels.expr.NumelOf`,
    :class:`~trt_kernels.expr.Dim`); a ``Dim`` axis may still be negative, the plan makes it
    non-negative for the input ranks it is built for.
    """

    op_name: str
    namespace: str
    name: str
    inputs: Tuple[Union[InputDecl, ScalarInput], ...]
    arg_kinds: Tuple[str, ...]  # per declared input, in order: "tensor" or "scalar"
    tensor_pos: Tuple[int, ...]  # argument position of each tensor input
    tensor_decls: Tuple[InputDecl, ...]
    scalar_decls: Tuple[ScalarInput, ...]
    kernel_dtypes: Tuple[torch.dtype, ...]  # what T may be; (float32,) for a plain kernel
    outputs: Tuple[OutputSig, ...]  # empty: meta_fn says what the op returns
    extras: Tuple[Expr, ...]
    extra_labels: Tuple[str, ...]  # each extra as the user wrote it
    launches: Tuple[LaunchSig, ...]  # one per tactic; empty: eager_fn (and aot_fn) launch

    def __init__(self, op_name: str, namespace: str, name: str, inputs: Tuple[Union[InputDecl, ScalarInput], ...],
                 arg_kinds: Tuple[str, ...], tensor_pos: Tuple[int, ...], tensor_decls: Tuple[InputDecl, ...],
                 scalar_decls: Tuple[ScalarInput, ...], kernel_dtypes: Tuple[torch.dtype, ...],
                 outputs: Tuple[OutputSig, ...], extras: Tuple[Expr, ...], extra_labels: Tuple[str, ...],
                 launches: Tuple[LaunchSig, ...]) -> None:
        self.__dict__.update(op_name=op_name, namespace=namespace, name=name, inputs=inputs, arg_kinds=arg_kinds,
                             tensor_pos=tensor_pos, tensor_decls=tensor_decls, scalar_decls=scalar_decls,
                             kernel_dtypes=kernel_dtypes, outputs=outputs, extras=extras, extra_labels=extra_labels,
                             launches=launches)

    @property
    def tensor_names(self) -> Tuple[str, ...]:
        return tuple(d.name for d in self.tensor_decls)

    @property
    def has_outputs(self) -> bool:
        return bool(self.outputs)

    @property
    def has_geometry(self) -> bool:
        return bool(self.launches)

    @property
    def tactics(self) -> int:
        """How many launch variants TensorRT may choose from (tactic ids 1..n; eager uses the first)."""
        return max(len(self.launches), 1)

    def launch(self, tactic: int) -> LaunchSig:
        """The geometry of ``tactic`` (0 and 1 are the default; ids past the last clamp to it)."""
        return self.launches[min(max(int(tactic or 1), 1), len(self.launches)) - 1]

    # ----- dtypes: the one place the output-dtype rule is written -----
    def in_dtypes(self, kdt: torch.dtype) -> List[torch.dtype]:
        """The dtype of each tensor input when the kernel runs at ``kdt``."""
        return [d.dtype or kdt for d in self.tensor_decls]

    def out_dtypes(self, in_dtypes: Sequence[torch.dtype]) -> List[torch.dtype]:
        """The dtype of each output, given the tensor inputs' dtypes."""
        return [o.dtype if o.dtype is not None else in_dtypes[o.dtype_src] for o in self.outputs]

    def io_dtypes(self, kdt: torch.dtype) -> List[torch.dtype]:
        """dtypes of every tensor input, then every output, when the kernel runs at ``kdt``."""
        ins = self.in_dtypes(kdt)
        return ins + self.out_dtypes(ins)

    # ----- the kernel ABI -----
    def params(self, kdt: torch.dtype) -> List[Param]:
        """The kernel's parameter list at ``kdt``: ``(tensor input pointers, scalar inputs, extras,
        output pointers)``, each in declaration order."""
        ins = self.in_dtypes(kdt)
        out = [Param("ptr", 8, "Q", f"const {_dt.c_type(dt)}* {d.name}") for d, dt in zip(self.tensor_decls, ins)]
        for s in self.scalar_decls:
            kind, size, code, ct, _ = SCALAR_TYPES[s.py_type]
            out.append(Param(kind, size, code, f"{ct} {s.name}"))
        out += [Param("int", 4, "i", f"int extra{i} /* {lbl} */") for i, lbl in enumerate(self.extra_labels)]
        out += [Param("ptr", 8, "Q", f"{_dt.c_type(dt)}* {o.name}") for o, dt in zip(self.outputs, self.out_dtypes(ins))]
        return out

    def param_codes(self, kdt: torch.dtype) -> List[str]:
        return [p.code for p in self.params(kdt)]
