"""The declarative DSL (frozen dataclasses); :mod:`trt_kernels.validate` checks it.

Names and meanings follow Torch-TensorRT's ``torch_tensorrt.kernels`` so a
user's spec ports by changing the import. Extensions are additive: shapes
and extras may be arbitrary size expressions (``Numel("x") * 2``), kernels
may be templates over several dtypes, ``Custom`` geometry is expressed in
the same expressions so that eager, fake and TensorRT evaluate one plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Literal, Optional, Sequence, Tuple, Union

import torch

from .expr import Expr

# ---------- output shape relations ----------


@dataclass(frozen=True)
class SameAs:
    """Output has the shape (and, unless told otherwise, the dtype) of a tensor input.

    ``input_idx``: the input's name, or its position among the *tensor* inputs.
    """

    input_idx: Union[int, str] = 0


@dataclass(frozen=True)
class ReduceDims:
    """Output is the referenced tensor input with ``dims`` removed (kept as 1 if ``keepdim``)."""

    input_idx: Union[int, str]
    dims: Tuple[int, ...]
    keepdim: bool = False


ShapeRel = Union[SameAs, ReduceDims, Tuple[Union[Expr, int], ...]]

# ---------- launch geometry ----------


@dataclass(frozen=True)
class Elementwise:
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


@dataclass(frozen=True)
class Reduction:
    """One block per element of output 0; the block's threads cooperate across ``reduce_dims``
    (axes of the *input*). Grid = ``numel(output 0)``, block = ``block_size``.

    ``tactics``: alternative block sizes TensorRT may time (tactic 1 is ``block_size``, tactic
    ``k + 2`` is ``tactics[k]``); eager uses ``block_size``.
    """

    reduce_dims: Tuple[int, ...]
    block_size: int = 256
    tactics: Tuple[int, ...] = ()


@dataclass(frozen=True)
class Custom:
    """Any launch geometry, written in size expressions: ``grid`` (1 to 3 expressions or ints),
    ``block`` (1 to 3 ints), ``shared_mem`` (bytes of dynamic shared memory, an int or expression).

    Example: ``Custom(grid=(ttk.cdiv(ttk.Numel("x"), 128),), block=(128,))``.
    """

    grid: Tuple[Union[Expr, int], ...]
    block: Tuple[int, ...]
    shared_mem: Union[Expr, int] = 0


Geometry = Union[Elementwise, Reduction, Custom]

# ---------- inputs / outputs ----------


@dataclass(frozen=True)
class InputDecl:
    """A tensor input; the kernel receives a ``T*`` (its data pointer).

    ``dtype``: a fixed dtype for this input; ``None`` means the kernel's dtype (``float32``
    unless the spec declares ``dtypes`` for a template kernel). ``ndim``: optional rank;
    when given, axes that name this input are checked at registration.
    """

    name: str
    dtype: Optional[torch.dtype] = None
    ndim: Optional[int] = None


@dataclass(frozen=True)
class ScalarInput:
    """A by-value kernel argument: ``float`` (C ``float``), ``int`` (C ``int``) or ``bool``; or a
    fixed-length tuple of ints or floats, ``(int, 4)``, passed as that many C scalars in order.

    ``default``: the value a call that leaves the argument out gets (``float eps=1e-06`` in the
    schema); only trailing inputs may have one, as in a torch schema.
    """

    name: str
    py_type: Any
    default: Any = None


InputSpec = Union[InputDecl, ScalarInput]


@dataclass(frozen=True)
class OutputDecl:
    """An output tensor; the kernel receives a ``T*``.

    ``shape``: ``SameAs``, ``ReduceDims`` or a tuple of size expressions.
    dtype: ``dtype`` if given, else that of input ``dtype_from``, else that of the input the
    shape refers to (the first tensor input for a tuple shape).
    """

    name: str
    shape: ShapeRel
    dtype_from: Optional[str] = None
    dtype: Optional[torch.dtype] = None


@dataclass
class KernelSpec:
    """Declarative description of a CUDA kernel.

    Calling convention of the ``__global__`` function:
    ``(tensor input pointers..., scalar inputs..., extras..., output pointers...)``,
    each group in declaration order.

    ``dtypes``: for a template kernel (``kernel_name="k<T>"``), the dtypes ``T`` may take; each
    is instantiated by NVRTC and eager dispatches on the input dtype.
    ``compile_options``: extra NVRTC flags (``"--use_fast_math"``, ``"-DBLOCK=256"``, ...).
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
    dtypes: Optional[Sequence[torch.dtype]] = None
    compile_options: Sequence[str] = ()
