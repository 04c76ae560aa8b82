"""Checks of a declaration, one validator per concern, building its :class:`~trt_kernels.signature.Signature`.

:func:`validate_signature` checks what a kernel takes (dtypes, inputs, extras, outputs,
geometry; each step its own function) whichever source its code comes from, and resolves it:
names become tensor indices, ``Numel``/``DimSize`` leaves become ``NumelOf``/``Dim``, and each
tactic gets its launch geometry. Every error is a :class:`~trt_kernels.errors.SpecError`
naming the op, the field and the fix. Checks of a source's own fields (NVRTC options, PTX
text, a Triton function) live with that source.
"""

from __future__ import annotations

import keyword
from dataclasses import replace
from typing import Optional, Sequence, Tuple, Union

import torch

from . import dtypes as _dt
from .errors import SpecError
from .expr import INT_OPS, BinOp, Const, Dim, DimSize, Expr, Numel, NumelOf, leaves, lift, resolve
from .limits import BLOCK_LIMITS, GRID_LIMITS, MAX_SHARED_MEM, MAX_THREADS_PER_BLOCK
from .signature import LaunchSig, OutputSig, Signature
from .spec import Custom, Elementwise, InputDecl, OutputDecl, ReduceDims, Reduction, SameAs, ScalarInput

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


def _ascii_identifier(name: str) -> bool:
    """``[A-Za-z_][A-Za-z0-9_]*`` (without a regular expression: compiling one costs ~0.1 ms per process)."""
    return name.isascii() and name.isidentifier()


def _bad_identifier(name) -> Optional[str]:
    if not isinstance(name, str) or not _ascii_identifier(name):
        return "is not a Python identifier"
    if keyword.iskeyword(name):
        return "is a Python keyword"
    return None


def _fail(op: str, where: str, msg: str, fix: str) -> SpecError:
    return SpecError(f"{op}: {where}: {msg}. Fix: {fix}")


def parse_op_name(op_name: str) -> Tuple[str, str]:
    parts = op_name.split("::") if isinstance(op_name, str) else []
    if len(parts) != 2 or not all(_ascii_identifier(p) for p in parts):
        raise SpecError(
            f"op_name {op_name!r}: expected 'namespace::name' made of letters, digits and "
            "underscores. Fix: e.g. 'my_kernels::sigmoid'"
        )
    ns, name = parts
    for part in parts:
        if keyword.iskeyword(part):
            raise SpecError(f"op_name {op_name!r}: {part!r} is a Python keyword, which torch.ops cannot name. "
                            f"Fix: e.g. '{ns}_::{name}_' or another name")
    if ns in _TORCH_RESERVED_NAMESPACES:
        raise SpecError(f"op_name {op_name!r}: namespace {ns!r} is reserved by torch. "
                        f"Fix: choose another namespace, e.g. 'my_kernels::{name}'")
    if ns in _RESERVED_NAMESPACES:
        raise SpecError(
            f"op_name {op_name!r}: namespace {ns!r} is reserved by TensorRT's plugin registry "
            f"({', '.join(sorted(_RESERVED_NAMESPACES))}). Fix: choose another namespace, e.g. 'my_kernels::{name}'"
        )
    return ns, name


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


def kernel_dtypes(op: str, dtypes) -> Optional[Tuple[torch.dtype, ...]]:
    """The declared dtypes ``T`` may take, checked; None when none are declared."""
    if dtypes is None:
        return None
    kd = tuple(_sequence(op, "dtypes", dtypes, "list the dtypes T may take, e.g. [torch.float32, torch.float16]"))
    if not kd:
        raise _fail(op, "dtypes", "empty list", "list the dtypes T may take, e.g. [torch.float32, torch.float16]")
    for d in kd:
        if d not in _dt.SUPPORTED:
            raise _fail(op, "dtypes", f"{d!r} is not supported", f"use some of {[_dt.short(x) for x in _dt.SUPPORTED]}")
    if len(set(kd)) != len(kd):
        raise _fail(op, "dtypes", f"duplicate entries in {[_dt.short(d) for d in kd]}", "list each dtype once")
    return kd


def validate_signature(
    op_name: str,
    *,
    inputs,
    outputs,
    extras=(),
    geometries: Optional[Sequence] = None,
    dtypes=None,
    has_meta_fn: bool = False,
    has_eager_fn: bool = False,
) -> Signature:
    """Check what a kernel takes and resolve it into a :class:`Signature`.

    ``geometries``: the launch geometry of each tactic (``[spec.geometry]`` for a CUDA C++ or PTX op,
    whose ``Elementwise``/``Reduction`` tactics are expanded here; one ``Custom`` per config for a
    Triton op); None or ``[None]`` when ``eager_fn`` launches.
    """
    ns, name = parse_op_name(op_name)
    op = op_name
    kd = kernel_dtypes(op, dtypes) or (torch.float32,)
    decls, kinds = _inputs(op, inputs)
    tensors = tuple(d for d in decls if isinstance(d, InputDecl))
    tnames = [t.name for t in tensors]
    if dtypes is not None and len(kd) > 1 and all(t.dtype is not None for t in tensors):
        raise _fail(op, "inputs", "every input has a fixed dtype, so eager cannot tell which of dtypes to use",
                    "leave dtype=None on the inputs whose type is T")
    extras = _extras(op, extras, tnames, tensors)
    outs = _outputs(op, outputs, {d.name for d in decls}, tnames, tensors, has_meta_fn, has_eager_fn)
    geos = [g for g in (geometries or ()) if g is not None]
    if not geos and not has_eager_fn:
        raise _fail(op, "geometry", "missing", "give geometry=ttk.Elementwise(...), ttk.Reduction(...) or ttk.Custom(...), or pass eager_fn= (and aot_fn= for TensorRT)")
    launches = []
    for g in geos:
        _check_geometry(op, g, outs, tnames, tensors)
        if not isinstance(g, Custom) and not outs:
            raise _fail(op, "geometry", f"{type(g).__name__} is sized by outputs[0], but no outputs are declared", "declare outputs, or use ttk.Custom(grid=..., block=...)")
        launches += _launches(g, tnames)
    return Signature(
        op_name=op_name, namespace=ns, name=name, inputs=tuple(decls), arg_kinds=tuple(kinds),
        tensor_pos=tuple(i for i, k in enumerate(kinds) if k == "tensor"), tensor_decls=tensors,
        scalar_decls=tuple(d for d in decls if isinstance(d, ScalarInput)), kernel_dtypes=kd,
        outputs=tuple(_resolve_output(o, tnames) for o in outs),
        extras=tuple(_resolve(e, tnames) for e in extras), extra_labels=tuple(str(e) for e in extras),
        launches=tuple(launches),
    )


def _inputs(op: str, inputs):
    if inputs is None:
        raise _fail(op, "inputs", "missing", "declare the inputs, e.g. inputs=[ttk.InputDecl('x')]")
    inputs = _sequence(op, "inputs", inputs, "declare the inputs as a list, e.g. inputs=[ttk.InputDecl('x')]")
    seen: set = set()
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
            kinds.append("tensor")
        else:
            if d.py_type not in (float, int, bool):
                raise _fail(op, where + ".py_type", f"{d.py_type!r} is not supported", "use float, int or bool")
            kinds.append("scalar")
    if "tensor" not in kinds:
        raise _fail(op, "inputs", "no tensor input (scalar-only ops have no device or shape to derive from)", "declare at least one ttk.InputDecl")
    return inputs, kinds


def _extras(op: str, extras, tnames, tensors) -> list:
    extras = _sequence(op, "extras", extras, "pass a list of size expressions, e.g. extras=[ttk.Numel('x')]")
    out = []
    for i, e in enumerate(extras):
        try:
            e = lift(e)
        except TypeError:
            raise _fail(op, f"extras[{i}]", f"{e!r} is not a size expression", "use ttk.Numel(name), ttk.DimSize(name, axis), an int, or arithmetic on them") from None
        _check_expr(op, f"extras[{i}]", e, tnames, tensors, lo=-(2**31), hi=2**31 - 1, what="a C int extra")
        out.append(e)
    return out


def _outputs(op: str, outputs, seen, tnames, tensors, has_meta_fn: bool, has_eager_fn: bool) -> list:
    if outputs is not None:
        _sequence(op, "outputs", outputs, "declare the outputs as a list, e.g. outputs=[ttk.OutputDecl('y', shape=ttk.SameAs('x'))]")
    if outputs is None or len(outputs) == 0:
        if not has_meta_fn:
            raise _fail(op, "outputs", "missing", "declare outputs=[ttk.OutputDecl(name, shape=ttk.SameAs('x'))], or pass meta_fn= (and eager_fn=/aot_fn=)")
        if not has_eager_fn:
            raise _fail(op, "eager_fn", "missing: without declared outputs the eager launch cannot allocate them", "declare outputs, or pass eager_fn=")
        return []
    seen = set(seen)
    for i, o in enumerate(outputs):
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
    return list(outputs)


# ---------- resolving (after the checks: every reference is known to be valid) ----------


def _index(ref: Union[int, str], names: Sequence[str]) -> int:
    if isinstance(ref, bool):
        ref = int(ref)
    return ref % len(names) if isinstance(ref, int) else names.index(ref)


def _resolve(e, names: Sequence[str]) -> Expr:
    def leaf(node: Expr) -> Expr:
        if isinstance(node, Numel):
            return NumelOf(_index(node.input_name, names))
        if isinstance(node, DimSize):
            return Dim(_index(node.input_name, names), node.axis)
        return node

    return resolve(lift(e), leaf)


def _resolve_output(o: OutputDecl, names: Sequence[str]) -> OutputSig:
    s = o.shape
    if isinstance(s, SameAs):
        t = _index(s.input_idx, names)
        out = OutputSig(name=o.name, kind="like", tensor=t)
    elif isinstance(s, ReduceDims):
        t = _index(s.input_idx, names)
        out = OutputSig(name=o.name, kind="reduce", tensor=t, dims=tuple(s.dims), keepdim=s.keepdim)
    else:
        out = OutputSig(name=o.name, kind="exprs", tensor=0, exprs=tuple(_resolve(e, names) for e in s))
    if o.dtype is not None:
        return replace(out, dtype=o.dtype)
    return replace(out, dtype_src=names.index(o.dtype_from) if o.dtype_from is not None else out.tensor)


def _launches(g, names: Sequence[str]):
    """One :class:`LaunchSig` per tactic of a checked geometry (tactic 1 first)."""
    def blk(b) -> Tuple[int, ...]:
        return (b,) if isinstance(b, int) else tuple(b)

    if isinstance(g, Elementwise):
        return [LaunchSig(kind=g.layout, block=blk(b)) for b in [g.block, *g.tactics]]
    if isinstance(g, Reduction):
        return [LaunchSig(kind="reduce", block=(b,), reduce_dims=tuple(g.reduce_dims))
                for b in [g.block_size, *g.tactics]]
    return [LaunchSig(kind="custom", block=blk(g.block), grid=tuple(_resolve(e, names) for e in g.grid),
                      shared_mem=_resolve(g.shared_mem, names))]


# ---------- the checks ----------

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


def _check_geometry(op: str, g, outputs, tnames, tensors) -> None:
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
        outs = outputs or []
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
