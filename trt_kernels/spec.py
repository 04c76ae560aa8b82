"""The declarative DSL (frozen dataclasses) and its validation.

Names and meanings follow Torch-TensorRT's ``torch_tensorrt.kernels`` so a
user's spec ports by changing the import. Extensions are additive: shapes
and extras may be arbitrary size expressions (``Numel("x") * 2``), kernels
may be templates over several dtypes, ``Custom`` geometry is expressed in
the same expressions so that eager, fake and TensorRT evaluate one plan.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import List, Literal, Optional, Sequence, Tuple, Union

import torch

from . import dtypes as _dt
from .errors import SpecError
from .expr import INT_OPS, BinOp, Const, DimSize, Expr, Numel, leaves, lift
from .limits import BLOCK_LIMITS, GRID_LIMITS, MAX_SHARED_MEM, MAX_THREADS_PER_BLOCK

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
    """A by-value kernel argument: ``float`` (C ``float``), ``int`` (C ``int``) or ``bool``."""

    name: str
    py_type: type


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


# ---------- validation ----------

_OP_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)::([A-Za-z_][A-Za-z0-9_]*)$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TEMPLATE_PARAM = re.compile(r"\bT\b")
# Input names become parameters of the torch op and of the TensorRT plugin functions, which
# append ``outputs``, ``stream`` and ``tactic`` (tensorrt.plugin refuses attributes so named);
# ``self`` is the bound object of ``torch.ops`` calls. Output names reach no signature.
_RESERVED_INPUT = {
    "self": "torch.ops calls bind 'self' themselves",
    "outputs": "the TensorRT plugin functions take the outputs under that name",
    "stream": "the TensorRT plugin's impl takes the CUDA stream under that name",
    "tactic": "the TensorRT plugin functions take the tactic under that name",
}
# tensorrt.plugin reserves these namespaces
_RESERVED_NAMESPACES = {"trt", "tensorrt", "std"}
# torch refuses a Library in these ("prim") or treats them as its own wildcard ("_")
_TORCH_RESERVED_NAMESPACES = {"prim", "_"}
# NVRTC options the package sets itself: a user's copy would contradict what the cache entry says
_CONTROLLED_OPTIONS = {
    "--gpu-architecture": "the arch: set KernelSpec(arch_override='sm_90') or TRT_KERNELS_ARCH",
    "-arch": "the arch: set KernelSpec(arch_override='sm_90') or TRT_KERNELS_ARCH",
    "--std": "the C++ standard: set KernelSpec(compile_std='c++17')",
    "-std": "the C++ standard: set KernelSpec(compile_std='c++17')",
    "--include-path": "include directories: set KernelSpec(include_paths=[...])",
    "-I": "include directories: set KernelSpec(include_paths=[...])",
    "--relocatable-device-code": "relocatable code needs a link step this package does not do: drop it",
    "-rdc": "relocatable code needs a link step this package does not do: drop it",
    "--dlink-time-opt": "link-time-optimization IR is not loadable PTX/CUBIN: drop it",
    "-dlto": "link-time-optimization IR is not loadable PTX/CUBIN: drop it",
    "--gen-opt-lto": "link-time-optimization IR is not loadable PTX/CUBIN: drop it",
    "--fdevice-syntax-only": "it makes no PTX or CUBIN: drop it",
}
_STDS = ("c++03", "c++11", "c++14", "c++17", "c++20")


def _bad_identifier(name) -> Optional[str]:
    if not isinstance(name, str) or not _IDENT.match(name):
        return "is not a Python identifier"
    if keyword.iskeyword(name):
        return "is a Python keyword"
    return None


@dataclass(frozen=True)
class Validated:
    """What validation learned: positions and dtypes, ready for the plan and the ABI."""

    op_name: str
    namespace: str
    name: str
    tensor_names: Tuple[str, ...]
    tensor_decls: Tuple[InputDecl, ...]
    scalar_decls: Tuple[ScalarInput, ...]
    arg_kinds: Tuple[str, ...]  # per declared input, in order: "tensor" or "scalar"
    kernel_dtypes: Tuple[torch.dtype, ...]  # what T may be; (float32,) for a plain kernel
    templated: bool


def _fail(op: str, where: str, msg: str, fix: str) -> SpecError:
    return SpecError(f"{op}: {where}: {msg}. Fix: {fix}")


def parse_op_name(op_name: str) -> Tuple[str, str]:
    m = _OP_NAME.match(op_name) if isinstance(op_name, str) else None
    if not m:
        raise SpecError(
            f"op_name {op_name!r}: expected 'namespace::name' made of letters, digits and "
            "underscores. Fix: e.g. 'my_kernels::sigmoid'"
        )
    for part in m.groups():
        if keyword.iskeyword(part):
            raise SpecError(f"op_name {op_name!r}: {part!r} is a Python keyword, which torch.ops cannot name. "
                            f"Fix: e.g. '{m.group(1)}_::{m.group(2)}_' or another name")
    if m.group(1) in _TORCH_RESERVED_NAMESPACES:
        raise SpecError(f"op_name {op_name!r}: namespace {m.group(1)!r} is reserved by torch. "
                        f"Fix: choose another namespace, e.g. 'my_kernels::{m.group(2)}'")
    if m.group(1) in _RESERVED_NAMESPACES:
        raise SpecError(
            f"op_name {op_name!r}: namespace {m.group(1)!r} is reserved by TensorRT's plugin registry "
            f"({', '.join(sorted(_RESERVED_NAMESPACES))}). Fix: choose another namespace, e.g. 'my_kernels::{m.group(2)}'"
        )
    return m.group(1), m.group(2)


def resolve_tensor(op: str, where: str, ref: Union[int, str], names: Sequence[str]) -> int:
    """Position of a tensor input referenced by name or by tensor-only index."""
    if isinstance(ref, bool):
        ref = int(ref)
    if isinstance(ref, int):
        if not -len(names) <= ref < len(names):
            raise _fail(
                op, where, f"tensor input index {ref} is out of range ({len(names)} tensor inputs: {list(names)})",
                "use a tensor input's name or an index into the tensor-only inputs",
            )
        return ref % len(names)
    if ref not in names:
        raise _fail(
            op, where, f"{ref!r} names no tensor input (tensor inputs: {list(names)})",
            "name a declared InputDecl (scalar inputs have no shape)",
        )
    return names.index(ref)


def validate(
    op_name: str,
    spec: KernelSpec,
    *,
    has_meta_fn: bool = False,
    has_eager_fn: bool = False,
    has_aot_fn: bool = False,
    needs_source: bool = True,
) -> Validated:
    """Check a spec before anything compiles or registers; raise :class:`SpecError` on mistakes."""
    ns, name = parse_op_name(op_name)
    op = op_name
    if not isinstance(spec, KernelSpec):
        raise _fail(op, "spec", f"expected a trt_kernels.KernelSpec, got {type(spec).__name__}", "pass ttk.KernelSpec(...)")
    if needs_source and (not isinstance(spec.kernel_source, str) or not spec.kernel_source.strip()):
        raise _fail(op, "kernel_source", "empty or not a string", "pass the CUDA C++ source text")
    if not isinstance(spec.kernel_name, str) or not spec.kernel_name.strip():
        raise _fail(op, "kernel_name", "empty or not a string", "name the __global__ function (e.g. 'my_kernel' or 'k<T>')")
    for fld in ("kernel_source", "kernel_name"):
        _check_encodable(op, fld, getattr(spec, fld))
    if needs_source:
        _check_build_fields(op, spec)

    # dtypes / templates
    templated = "<" in spec.kernel_name
    if spec.dtypes is not None:
        kd = tuple(_sequence(op, "dtypes", spec.dtypes, "list the dtypes T may take, e.g. [torch.float32, torch.float16]"))
        if not kd:
            raise _fail(op, "dtypes", "empty list", "list the dtypes T may take, e.g. [torch.float32, torch.float16]")
        for d in kd:
            if d not in _dt.SUPPORTED:
                raise _fail(op, "dtypes", f"{d!r} is not supported", f"use some of {[_dt.short(x) for x in _dt.SUPPORTED]}")
        if len(set(kd)) != len(kd):
            raise _fail(op, "dtypes", f"duplicate entries in {[_dt.short(d) for d in kd]}", "list each dtype once")
        if len(kd) > 1 and not _TEMPLATE_PARAM.search(spec.kernel_name):
            raise _fail(
                op, "kernel_name", f"{spec.kernel_name!r} has no template parameter T but dtypes lists {len(kd)} dtypes",
                "write the kernel as 'template <typename T> __global__ void k(...)' and set kernel_name='k<T>'",
            )
    else:
        kd = (torch.float32,)
        if _TEMPLATE_PARAM.search(spec.kernel_name):
            raise _fail(
                op, "dtypes", f"kernel_name {spec.kernel_name!r} is a template over T but no dtypes are declared",
                "pass dtypes=[torch.float32, ...] listing what T may be",
            )

    # inputs
    if spec.inputs is None:
        raise _fail(op, "inputs", "missing", "declare the inputs, e.g. inputs=[ttk.InputDecl('x')]")
    inputs = _sequence(op, "inputs", spec.inputs, "declare the inputs as a list, e.g. inputs=[ttk.InputDecl('x')]")
    seen: set = set()
    tensors: list = []
    scalars: list = []
    kinds: list = []
    for i, d in enumerate(inputs):
        where = f"inputs[{i}]"
        if not isinstance(d, (InputDecl, ScalarInput)):
            raise _fail(op, where, f"expected InputDecl or ScalarInput, got {d!r}", "wrap it in ttk.InputDecl(name) or ttk.ScalarInput(name, float)")
        why = _bad_identifier(d.name) or (f"is reserved: {_RESERVED_INPUT[d.name]}" if d.name in _RESERVED_INPUT else None)
        if why:
            raise _fail(op, where, f"name {d.name!r} is not a usable argument name: it {why}",
                        "rename the input (names that are not usable: " + ", ".join(sorted(_RESERVED_INPUT)) + ", keywords)")
        if d.name in seen:
            raise _fail(op, where, f"duplicate name {d.name!r}", "give every input and output a distinct name")
        seen.add(d.name)
        if isinstance(d, InputDecl):
            if d.dtype is not None and d.dtype not in _dt.SUPPORTED:
                raise _fail(op, where + ".dtype", f"{d.dtype!r} is not supported", f"use one of {[_dt.short(x) for x in _dt.SUPPORTED]}")
            if d.ndim is not None and (not isinstance(d.ndim, int) or d.ndim < 0):
                raise _fail(op, where + ".ndim", f"{d.ndim!r} is not a rank", "give a non-negative int or None")
            tensors.append(d)
            kinds.append("tensor")
        else:
            if d.py_type not in (float, int, bool):
                raise _fail(op, where + ".py_type", f"{d.py_type!r} is not supported", "use float, int or bool")
            scalars.append(d)
            kinds.append("scalar")
    if not tensors:
        raise _fail(op, "inputs", "no tensor input (scalar-only ops have no device or shape to derive from)", "declare at least one ttk.InputDecl")
    tnames = [t.name for t in tensors]
    if spec.dtypes is not None and len(kd) > 1 and all(t.dtype is not None for t in tensors):
        raise _fail(op, "inputs", "every input has a fixed dtype, so eager cannot tell which of dtypes to use",
                    "leave dtype=None on the inputs whose type is T")

    # extras
    extras = _sequence(op, "extras", spec.extras, "pass a list of size expressions, e.g. extras=[ttk.Numel('x')]")
    for i, e in enumerate(extras):
        try:
            e = lift(e)
        except TypeError:
            raise _fail(op, f"extras[{i}]", f"{e!r} is not a size expression", "use ttk.Numel(name), ttk.DimSize(name, axis), an int, or arithmetic on them") from None
        _check_expr(op, f"extras[{i}]", e, tnames, tensors, lo=-(2**31), hi=2**31 - 1, what="a C int extra")

    # outputs
    overrides_outputs = has_meta_fn
    if spec.outputs is not None:
        _sequence(op, "outputs", spec.outputs, "declare the outputs as a list, e.g. outputs=[ttk.OutputDecl('y', shape=ttk.SameAs('x'))]")
    if spec.outputs is None or len(spec.outputs) == 0:
        if not overrides_outputs:
            raise _fail(op, "outputs", "missing", "declare outputs=[ttk.OutputDecl(name, shape=ttk.SameAs('x'))], or pass meta_fn= (and eager_fn=/aot_fn=)")
        if not has_eager_fn:
            raise _fail(op, "eager_fn", "missing: without declared outputs the eager launch cannot allocate them", "declare outputs, or pass eager_fn=")
    else:
        for i, o in enumerate(spec.outputs):
            where = f"outputs[{i}]"
            if not isinstance(o, OutputDecl):
                raise _fail(op, where, f"expected OutputDecl, got {o!r}", "use ttk.OutputDecl(name, shape=...)")
            why = _bad_identifier(o.name)
            if why:
                raise _fail(op, where, f"name {o.name!r} is not a usable name: it {why}", "rename the output")
            if o.name in seen:
                raise _fail(op, where, f"duplicate name {o.name!r}", "give every input and output a distinct name")
            seen.add(o.name)
            _check_shape(op, where + ".shape", o.shape, tnames, tensors)
            if o.dtype_from is not None:
                if o.dtype_from not in tnames:
                    raise _fail(op, where + ".dtype_from", f"{o.dtype_from!r} names no tensor input (tensor inputs: {tnames})", "name a declared InputDecl")
            if o.dtype is not None and o.dtype not in _dt.SUPPORTED:
                raise _fail(op, where + ".dtype", f"{o.dtype!r} is not supported", f"use one of {[_dt.short(x) for x in _dt.SUPPORTED]}")
            if o.dtype is not None and o.dtype_from is not None:
                raise _fail(op, where, "both dtype and dtype_from are set", "set one of them")

    # geometry
    g = spec.geometry
    if g is None:
        if not has_eager_fn:
            raise _fail(op, "geometry", "missing", "give geometry=ttk.Elementwise(...), ttk.Reduction(...) or ttk.Custom(...), or pass eager_fn= (and aot_fn= for TensorRT)")
    else:
        _check_geometry(op, g, spec, tnames, tensors)
        if not isinstance(g, Custom) and not spec.outputs:
            raise _fail(op, "geometry", f"{type(g).__name__} is sized by outputs[0], but no outputs are declared", "declare outputs, or use ttk.Custom(grid=..., block=...)")

    return Validated(
        op_name=op_name,
        namespace=ns,
        name=name,
        tensor_names=tuple(tnames),
        tensor_decls=tuple(tensors),
        scalar_decls=tuple(scalars),
        arg_kinds=tuple(kinds),
        kernel_dtypes=kd,
        templated=templated,
    )


def _sequence(op: str, where: str, value, fix: str) -> list:
    """``value`` as a list when it is a list or tuple (not a str, not a single item)."""
    if not isinstance(value, (list, tuple)):
        raise _fail(op, where, f"expected a list or tuple, got {type(value).__name__} {value!r}"[:200], fix)
    return list(value)


def _check_encodable(op: str, where: str, text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise _fail(op, where, f"character {text[e.start]!r} at offset {e.start} cannot be encoded as UTF-8 "
                    "(a lone surrogate)", "remove or replace that character") from None


def _check_build_fields(op: str, spec: "KernelSpec") -> None:
    """compile_options, include_paths, compile_std and arch_override: the NVRTC side of a spec."""
    opts = _sequence(op, "compile_options", spec.compile_options,
                     "pass NVRTC flags as a list of str, e.g. compile_options=['--use_fast_math']")
    for i, o in enumerate(opts):
        if not isinstance(o, str) or not o.strip():
            raise _fail(op, f"compile_options[{i}]", f"{o!r} is not an NVRTC flag", "give each flag as a non-empty str")
        _check_encodable(op, f"compile_options[{i}]", o)
        flag = o.strip()
        for name, why in _CONTROLLED_OPTIONS.items():
            if flag == name or flag.startswith(name + "=") or (name in ("-I", "-arch") and flag.startswith(name)):
                raise _fail(op, f"compile_options[{i}]", f"{o!r} sets what the package controls ({why.split(':')[0]})",
                            why.split(": ", 1)[1] if ": " in why else why)
    if spec.include_paths is not None:
        paths = _sequence(op, "include_paths", spec.include_paths, "pass a list of directories, e.g. include_paths=['/opt/inc']")
        for i, d in enumerate(paths):
            if not isinstance(d, str) or not d:
                raise _fail(op, f"include_paths[{i}]", f"{d!r} is not a directory path", "give each directory as a str")
            _check_encodable(op, f"include_paths[{i}]", d)
    if spec.compile_std not in _STDS:
        raise _fail(op, "compile_std", f"{spec.compile_std!r} is not a C++ standard NVRTC takes", f"use one of {list(_STDS)}")
    if spec.arch_override is not None:
        from .compile import normalize_arch

        try:
            normalize_arch(spec.arch_override)
        except (ValueError, TypeError):
            raise _fail(op, "arch_override", f"{spec.arch_override!r} is not a GPU arch",
                        "write it like 'sm_90', 'sm_90a' or 90") from None


def _check_axis(op: str, where: str, axis: int, decl: InputDecl) -> None:
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise _fail(op, where, f"axis {axis!r} is not an int", "give an integer axis (negative counts from the end)")
    if decl.ndim is not None and not -decl.ndim <= axis < decl.ndim:
        raise _fail(op, where, f"axis {axis} is out of range for input {decl.name!r} of ndim {decl.ndim}", f"use an axis in [{-decl.ndim}, {decl.ndim - 1}]")


def _check_expr(op: str, where: str, e: Expr, tnames: Sequence[str], tensors: Sequence[InputDecl], *,
                lo: Optional[int] = None, hi: Optional[int] = None, what: str = "") -> None:
    """Every leaf names a tensor input (and an axis it has); no constant divisor is zero; a constant
    value (or a constant part of it) lies in ``[lo, hi]`` when those are given."""
    for leaf in leaves(e):
        if isinstance(leaf, (Numel, DimSize)):
            t = resolve_tensor(op, where, leaf.input_name, tnames)
            if isinstance(leaf, DimSize):
                _check_axis(op, where, leaf.axis, tensors[t])
        elif not isinstance(leaf, Const):
            raise _fail(op, where, f"{leaf!r} is not a size expression node", "use ints, ttk.Numel, ttk.DimSize and arithmetic")
    for node in _nodes(e):
        if isinstance(node, BinOp) and node.op in ("floordiv", "cdiv") and _const_value(node.rhs) == 0:
            raise _fail(op, where, f"{e} divides by zero", "divide by a non-zero size")
    value = _const_value(e)
    if value is not None and ((lo is not None and value < lo) or (hi is not None and value > hi)):
        raise _fail(op, where, f"{e} = {value} is out of range for {what} ([{lo}, {hi}])", f"use a value in [{lo}, {hi}]")


def _nodes(e: Expr):
    yield e
    if isinstance(e, BinOp):
        yield from _nodes(e.lhs)
        yield from _nodes(e.rhs)


def _const_value(e: Expr) -> Optional[int]:
    """The value of a constant expression (None if it reads a size or divides by zero)."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, BinOp):
        a, b = _const_value(e.lhs), _const_value(e.rhs)
        if a is None or b is None or (e.op in ("floordiv", "cdiv") and b == 0):
            return None
        return INT_OPS[e.op](a, b)
    return None


def _check_shape(op: str, where: str, shape, tnames, tensors) -> None:
    if isinstance(shape, SameAs):
        resolve_tensor(op, where, shape.input_idx, tnames)
    elif isinstance(shape, ReduceDims):
        t = resolve_tensor(op, where, shape.input_idx, tnames)
        dims = tuple(shape.dims) if isinstance(shape.dims, (tuple, list)) else None
        if not dims:
            raise _fail(op, where + ".dims", f"{shape.dims!r} is not a non-empty tuple of axes", "e.g. ReduceDims('x', (-1,))")
        for a in dims:
            _check_axis(op, where + ".dims", a, tensors[t])
        if not isinstance(shape.keepdim, bool):
            raise _fail(op, where + ".keepdim", f"{shape.keepdim!r} is not a bool", "pass keepdim=True or False")
        if len(set(dims)) != len(dims):
            raise _fail(op, where + ".dims", f"duplicate axes in {dims}", "list each reduced axis once")
    elif isinstance(shape, (tuple, list)):
        for i, e in enumerate(shape):
            try:
                e = lift(e)
            except TypeError:
                raise _fail(op, f"{where}[{i}]", f"{e!r} is not a size expression", "use ints, ttk.Numel, ttk.DimSize and arithmetic") from None
            _check_expr(op, f"{where}[{i}]", e, tnames, tensors, lo=0, hi=2**63 - 1, what="an output dimension")
    else:
        raise _fail(op, where, f"{shape!r} is not a shape", "use ttk.SameAs(...), ttk.ReduceDims(...) or a tuple of size expressions")


def _check_block(op: str, where: str, block, max_dims: int = 3) -> Tuple[int, ...]:
    if isinstance(block, int) and not isinstance(block, bool):
        block = (block,)
    if not isinstance(block, (tuple, list)) or not block:
        raise _fail(op, where, f"{block!r} is not a tuple of 1 to 3 positive ints", "e.g. block=(256,) or (16, 16)")
    if len(block) > max_dims:
        raise _fail(op, where, f"{len(block)} block dims given; CUDA blocks have at most {max_dims}", "use at most 3 dims")
    for b in block:
        if isinstance(b, bool) or not isinstance(b, int) or b <= 0:
            raise _fail(op, where, f"block entry {b!r} is not a positive int", "use positive ints")
    for i, (b, lim) in enumerate(zip(block, BLOCK_LIMITS)):
        if b > lim:
            raise _fail(op, where, f"block {tuple(block)}: axis {'xyz'[i]} is {b}; CUDA allows at most {lim} there",
                        "use a smaller block along that axis")
    total = 1
    for b in block:
        total *= b
    if total > MAX_THREADS_PER_BLOCK:
        raise _fail(op, where, f"block {tuple(block)} has {total} threads; CUDA allows at most {MAX_THREADS_PER_BLOCK} "
                    "per block", "use a smaller block")
    return tuple(block)


def _check_geometry(op: str, g, spec: KernelSpec, tnames, tensors) -> None:
    if isinstance(g, Elementwise):
        _sequence(op, "geometry.tactics", g.tactics, "list alternative blocks, e.g. tactics=((128,), (512,))")
        if g.layout not in ("flat", "nd"):
            raise _fail(op, "geometry.layout", f"{g.layout!r} is not a layout", "use 'flat' or 'nd'")
        blocks = [("geometry.block", g.block)] + [(f"geometry.tactics[{i}]", b) for i, b in enumerate(g.tactics)]
        for where, b in blocks:
            b = _check_block(op, where, b)
            if g.layout == "flat" and len(b) != 1:
                raise _fail(op, where, f"layout='flat' takes a 1-D block, got {b}", "use block=(n,) or layout='nd'")
            if len(b) != len(_check_block(op, "geometry.block", g.block)):
                raise _fail(op, where, f"tactic block {b} has another rank than block {tuple(g.block)}", "give every tactic as many dims as block")
    elif isinstance(g, Reduction):
        dims = tuple(g.reduce_dims) if isinstance(g.reduce_dims, (tuple, list)) else None
        if not dims:
            raise _fail(op, "geometry.reduce_dims", f"{g.reduce_dims!r} is not a non-empty tuple of axes", "e.g. Reduction(reduce_dims=(-1,))")
        for a in dims:
            if isinstance(a, bool) or not isinstance(a, int):
                raise _fail(op, "geometry.reduce_dims", f"axis {a!r} is not an int", "give integer axes (negative counts from the end)")
        if len(set(dims)) != len(dims):
            raise _fail(op, "geometry.reduce_dims", f"duplicate axes in {dims}", "list each axis once")
        tactics = _sequence(op, "geometry.tactics", g.tactics, "list alternative block sizes, e.g. tactics=(128, 512)")
        for b in [g.block_size] + tactics:
            _check_block(op, "geometry.block_size", b, max_dims=1)
        outs = spec.outputs or []
        if outs and isinstance(outs[0].shape, SameAs):
            raise _fail(op, "geometry", "Reduction launches one block per element of outputs[0], but outputs[0] has the "
                        "shape of an input (SameAs), so the blocks would reduce past the input's end",
                        "give outputs[0] shape=ttk.ReduceDims(...) over the reduced axes, or use ttk.Elementwise / ttk.Custom")
        if outs and isinstance(outs[0].shape, ReduceDims) and tuple(outs[0].shape.dims) != dims:
            raise _fail(op, "geometry.reduce_dims", f"{dims} differs from outputs[0].shape dims {tuple(outs[0].shape.dims)}", "reduce the same axes in both")
    elif isinstance(g, Custom):
        if not isinstance(g.grid, (tuple, list)) or not 1 <= len(g.grid) <= 3:
            raise _fail(op, "geometry.grid", f"{g.grid!r} is not 1 to 3 size expressions", "e.g. grid=(ttk.cdiv(ttk.Numel('x'), 256),)")
        for i, e in enumerate(g.grid):
            try:
                e = lift(e)
            except TypeError:
                raise _fail(op, f"geometry.grid[{i}]", f"{e!r} is not a size expression", "use ints, ttk.Numel, ttk.DimSize and arithmetic") from None
            _check_expr(op, f"geometry.grid[{i}]", e, tnames, tensors, lo=1, hi=GRID_LIMITS[i], what=f"CUDA grid axis {'xyz'[i]}")
        _check_block(op, "geometry.block", g.block)
        try:
            smem = lift(g.shared_mem)
        except TypeError:
            raise _fail(op, "geometry.shared_mem", f"{g.shared_mem!r} is not a size expression", "use an int or a size expression") from None
        _check_expr(op, "geometry.shared_mem", smem, tnames, tensors, lo=0, hi=MAX_SHARED_MEM,
                    what="dynamic shared memory per block (bytes)")
    elif callable(getattr(g, "fn", None)):
        raise _fail(op, "geometry", "a Custom(fn) callback cannot be evaluated for eager and fake", "describe the launch with ttk.Custom(grid=..., block=..., shared_mem=...) or pass eager_fn= and aot_fn=")
    else:
        raise _fail(op, "geometry", f"{g!r} is not a geometry", "use ttk.Elementwise, ttk.Reduction or ttk.Custom")


def kernel_name_for(spec: KernelSpec, dtype: torch.dtype) -> str:
    """The NVRTC name expression instantiating the kernel for ``dtype`` (``k<T>`` -> ``k<__half>``)."""
    return _TEMPLATE_PARAM.sub(_dt.c_type(dtype), spec.kernel_name)

