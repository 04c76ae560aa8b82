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
import math
from typing import Any, Optional, Sequence, Tuple, Union

import torch

from trt_kernels import dtypes as _dt
from trt_kernels import spec
from trt_kernels._record import replace
from trt_kernels.errors import SpecError
from trt_kernels.expr import (
    INT_OPS,
    BinOp,
    Const,
    Dim,
    DimSize,
    Expr,
    Numel,
    NumelOf,
    Scalar,
    ScalarOf,
    binop,
    leaves,
    lift,
    resolve,
)
from trt_kernels.limits import BLOCK_LIMITS, GRID_LIMITS, MAX_SHARED_MEM, MAX_THREADS_PER_BLOCK
from trt_kernels.signature import CheckSig, LaunchSig, OutputSig, Signature, scalar_len, scalar_type, scalar_type_name

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


def fail(op: str, where: str, msg: str, fix: str) -> SpecError:
    """The :class:`SpecError` for field ``where`` of op ``op``: ``"{op}: {where}: {msg}. Fix: {fix}"``."""
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
            raise fail(
                op, where, f"tensor input index {ref} is out of range ({len(names)} tensor inputs: {list(names)})",
                "use a tensor input's name or an index into the tensor-only inputs",
            )
        return ref % len(names)
    if ref not in names:
        raise fail(
            op, where, f"{ref!r} names no tensor input (tensor inputs: {list(names)})",
            "name a declared InputDecl (scalar inputs have no shape)",
        )
    return names.index(ref)


def check_type_params(op: str, type_params) -> Tuple[str, ...]:
    """The template's type parameter names, checked (default ``("T",)``)."""
    if type_params is None:
        return ("T",)
    fix = "name the template's type parameters in order, e.g. type_params=('T', 'W')"
    if isinstance(type_params, str):
        raise fail(op, "type_params", f"got the str {type_params!r}, not a sequence of names", f"{fix} (a tuple)")
    tp = tuple(sequence(op, "type_params", type_params, fix))
    if not tp:
        raise fail(op, "type_params", "empty", fix)
    for p in tp:
        if not isinstance(p, str) or not _ascii_identifier(p):
            raise fail(op, "type_params", f"{p!r} is not a C++ identifier", fix)
    if len(set(tp)) != len(tp):
        raise fail(op, "type_params", f"duplicate names in {list(tp)}", "name each type parameter once")
    return tp


def kernel_dtypes(op: str, dtypes, type_params=None) -> Optional[Tuple]:
    """The declared dtypes ``T`` may take (with several ``type_params``: the declared combinations,
    tuples of one dtype per parameter), checked; None when none are declared."""
    if dtypes is None:
        return None
    tp = check_type_params(op, type_params)
    if len(tp) == 1:
        fix = "list the dtypes T may take, e.g. [torch.float32, torch.float16]"
    else:
        fix = (f"list the combinations of {', '.join(tp)} as tuples, e.g. "
               f"[({', '.join(['torch.float16'] + ['torch.float32'] * (len(tp) - 1))}), ...]")
    kd = tuple(sequence(op, "dtypes", dtypes, fix))
    if not kd:
        raise fail(op, "dtypes", "empty list", fix)
    for i, k in enumerate(kd):
        if len(tp) == 1:
            if isinstance(k, (tuple, list)):
                raise fail(op, f"dtypes[{i}]",
                            f"{k!r} is a combination, but the kernel has one type parameter ({tp[0]})",
                            "list plain dtypes, or name the template's parameters with type_params=('T', 'W')")
            parts = (k,)
        else:
            if not isinstance(k, (tuple, list)) or len(k) != len(tp):
                raise fail(op, f"dtypes[{i}]", f"{k!r} is not a combination of {len(tp)} dtypes "
                            f"(type_params={list(tp)})", fix)
            parts = tuple(k)
        for d in parts:
            if d not in _dt.SUPPORTED:
                raise fail(op, f"dtypes[{i}]" if len(tp) > 1 else "dtypes", f"{d!r} is not supported",
                            f"use some of {[_dt.short(x) for x in _dt.SUPPORTED]}")
    if len(tp) > 1:
        kd = tuple(tuple(k) for k in kd)
    if len(set(kd)) != len(kd):
        raise fail(op, "dtypes", f"duplicate entries in {[_dt.label(d, tp) for d in kd]}", "list each dtype once")
    return kd


def validate_signature(
    op_name: str,
    *,
    inputs,
    outputs,
    extras=(),
    geometries: Optional[Sequence] = None,
    dtypes=None,
    type_params=None,
    checks=(),
    has_meta_fn: bool = False,
    has_eager_fn: bool = False,
    params=None,
    kernel_params: Optional[Sequence[str]] = None,
    kernel_label: str = "the kernel",
) -> Signature:
    """Check what a kernel takes and resolve it into a :class:`Signature`.

    ``geometries``: the launch geometry of each tactic (``[spec.geometry]`` for a CUDA C++ or PTX op,
    whose ``Elementwise``/``Reduction`` tactics are expanded here; one ``Custom`` per config for a
    Triton op); None or ``[None]`` when ``eager_fn`` launches. ``params``: the user's explicit parameter
    order (declared names); ``kernel_params``: the kernel's own parameter names where the source tells them
    (``kernel_label`` names the kernel in messages): see :func:`_param_order`.
    """
    ns, name = parse_op_name(op_name)
    op = op_name
    tp = check_type_params(op, type_params)
    if len(tp) > 1 and dtypes is None:
        raise fail(op, "dtypes", f"type_params={list(tp)} but no combinations are declared",
                    f"pass dtypes=[({', '.join(['torch.float32'] * len(tp))}), ...]")
    kd = kernel_dtypes(op, dtypes, tp) or (torch.float32,)
    decls, kinds = _inputs(op, inputs, tp)
    tensors = tuple(d for d in decls if isinstance(d, spec.InputDecl))
    tnames = [t.name for t in tensors]
    if dtypes is not None and len(tp) == 1 and len(kd) > 1 and all(isinstance(t.dtype, torch.dtype) for t in tensors):
        raise fail(op, "inputs", "every input has a fixed dtype, so eager cannot tell which of dtypes to use",
                    "leave dtype=None on the inputs whose type is T")
    if len(tp) > 1:
        _check_combinations(op, tp, tensors)
    scalars = tuple(d for d in decls if isinstance(d, spec.ScalarInput))
    extras, extra_names, extra_ctypes = _extras(op, extras, tnames, tensors, scalars)
    outs = _outputs(op, outputs, {d.name for d in decls}, tnames, tensors, has_meta_fn, has_eager_fn, scalars, tp)
    counts = _counts(op, outs, {d.name for d in decls} | {o.name for o in outs} | set(extra_names), has_meta_fn,
                     has_eager_fn, tensors)
    check_sigs = _checks(op, checks, tnames, tensors)
    if any(t.mutated for t in tensors) and (has_meta_fn or has_eager_fn):
        raise fail(op, "inputs", "an input written in place (mutated=True) with meta_fn/eager_fn, whose results are "
                   "fresh tensors", "declare outputs and geometry (the derived launch writes the input), or drop "
                   "mutated=True")
    geos = [g for g in (geometries or ()) if g is not None]
    if not geos and not has_eager_fn:
        raise fail(op, "geometry", "missing",
                    "give geometry=ttk.Elementwise(...), ttk.Reduction(...) or ttk.Custom(...), "
                    "or pass eager_fn= (and aot_fn= for TensorRT)")
    launches = []
    for g in geos:
        _check_geometry(op, g, outs, tnames, tensors, scalars)
        if not isinstance(g, spec.Custom) and not outs:
            raise fail(op, "geometry", f"{type(g).__name__} is sized by outputs[0], but no outputs are declared",
                        "declare outputs, or use ttk.Custom(grid=..., block=...)")
        launches += _launches(g, tnames, scalars)
    return Signature(
        op_name=op_name, namespace=ns, name=name, inputs=tuple(decls), arg_kinds=tuple(kinds),
        tensor_pos=tuple(i for i, k in enumerate(kinds) if k == "tensor"), tensor_decls=tensors,
        scalar_decls=scalars, kernel_dtypes=kd,
        outputs=_resolve_outputs(outs, counts, tnames, scalars, tensors, tp),
        extras=tuple(_resolve(e, tnames, scalars) for e in extras), extra_labels=tuple(str(e) for e in extras),
        launches=tuple(launches), type_params=tp, checks=check_sigs, extra_names=extra_names,
        extra_ctypes=extra_ctypes if any(c != "int" for c in extra_ctypes) else (),
        order=_param_order(op, _items(tensors, scalars, extra_names, outs, counts), params, kernel_params, kernel_label,
                           complete=bool(outs) or any(t.mutated for t in tensors)),
    )


def _type_of(decl: spec.InputDecl, tp: Sequence[str]):
    """The type parameter name (str) or fixed dtype of a tensor input."""
    return tp[0] if decl.dtype is None else decl.dtype


def _check_combinations(op: str, tp, tensors) -> None:
    """Every type parameter is the dtype of a tensor input, so the inputs' dtypes select one declared
    combination (eager and TensorRT pick it from them; distinct combinations then differ there)."""
    used = {_type_of(t, tp) for t in tensors}
    for p in tp:
        if p not in used:
            raise fail(op, "type_params", f"{p!r} is the dtype of no tensor input, so a call cannot tell which "
                        "combination to run", f"declare the input(s) of that type with InputDecl(name, dtype={p!r})")


def _inputs(op: str, inputs, tp: Sequence[str] = ("T",)):
    if inputs is None:
        raise fail(op, "inputs", "missing", "declare the inputs, e.g. inputs=[ttk.InputDecl('x')]")
    inputs = sequence(op, "inputs", inputs, "declare the inputs as a list, e.g. inputs=[ttk.InputDecl('x')]")
    seen: set = set()
    kinds: list = []
    for i, d in enumerate(inputs):
        where = f"inputs[{i}]"
        if not isinstance(d, (spec.InputDecl, spec.ScalarInput)):
            raise fail(op, where, f"expected InputDecl or ScalarInput, got {d!r}",
                        "wrap it in ttk.InputDecl(name) or ttk.ScalarInput(name, float)")
        why = _bad_identifier(d.name) or (
            f"is reserved: {_RESERVED_INPUT[d.name]}" if d.name in _RESERVED_INPUT else None)
        if why:
            raise fail(op, where, f"name {d.name!r} is not a usable argument name: it {why}",
                        "rename the input (names that are not usable: " + ", ".join(sorted(_RESERVED_INPUT))
                        + ", keywords)")
        if d.name in seen:
            raise fail(op, where, f"duplicate name {d.name!r}", "give every input and output a distinct name")
        seen.add(d.name)
        if isinstance(d, spec.InputDecl):
            if isinstance(d.dtype, str):
                if d.dtype not in tp:
                    raise fail(op, where + ".dtype", f"{d.dtype!r} names no type parameter (type_params={list(tp)})",
                                "name one of type_params, give a torch.dtype, or leave dtype=None for the first")
            elif d.dtype is not None and d.dtype not in _dt.SUPPORTED:
                raise fail(op, where + ".dtype", f"{d.dtype!r} is not supported",
                            f"use one of {[_dt.short(x) for x in _dt.SUPPORTED]}")
            if d.ndim is not None and (not isinstance(d.ndim, int) or d.ndim < 0):
                raise fail(op, where + ".ndim", f"{d.ndim!r} is not a rank", "give a non-negative int or None")
            if not isinstance(d.mutated, bool):
                raise fail(op, where + ".mutated", f"{d.mutated!r} is not a bool", "give True or False")
            kinds.append("tensor")
        else:
            inputs[i] = d = _scalar_input(op, where, d)
            kinds.append("scalar")
    _check_trailing_defaults(op, inputs)
    if "tensor" not in kinds:
        raise fail(op, "inputs", "no tensor input (scalar-only ops have no device or shape to derive from)",
                    "declare at least one ttk.InputDecl")
    return inputs, kinds


MAX_TUPLE = 64  # elements of a tuple scalar input (each is a kernel parameter)


def _scalar_input(op: str, where: str, d: spec.ScalarInput) -> spec.ScalarInput:
    """A scalar input checked: its type (``float``, ``int``, ``bool`` or ``(int | float, n)``), its C type
    (``ctype``) and its default; returned with the default normalized (a float as float, a tuple's as a tuple)."""
    t = d.py_type
    if isinstance(t, (tuple, list)):
        if isinstance(t, list) or len(t) != 2 or t[0] not in (int, float, bool) or isinstance(t[1], bool) \
                or not isinstance(t[1], int):
            raise fail(op, where + ".py_type", f"{t!r} is not a scalar type",
                        "use float, int or bool, or a fixed-length tuple (int, n) / (float, n), e.g. (int, 4)")
        if t[0] is bool:
            raise fail(op, where + ".py_type", f"{t!r}: tuples of bools are not supported",
                        "use (int, n) with 0/1 values")
        if not 1 <= t[1] <= MAX_TUPLE:
            raise fail(op, where + ".py_type", f"{t!r}: a tuple input takes 1 to {MAX_TUPLE} values (each is a kernel "
                        "parameter)", f"give a length in [1, {MAX_TUPLE}], or pass the values as a tensor input")
        elem, n = t[0], t[1]
    elif t in (float, int, bool):
        elem, n = t, None
    else:
        raise fail(op, where + ".py_type", f"{t!r} is not supported",
                    "use float, int or bool, or a fixed-length tuple (int, n) / (float, n)")
    st = _scalar_ctype(op, where + ".ctype", d.ctype, elem)
    if d.default is None:
        return d
    if n is None:
        return spec.ScalarInput(d.name, d.py_type, _scalar_default(op, where + ".default", d.default, elem, st),
                                d.ctype)
    value = d.default
    if not isinstance(value, (tuple, list)) or len(value) != n:
        raise fail(op, where + ".default", f"{value!r} is not {n} values"[:200],
                    f"give a tuple of {n} {elem.__name__}s, "
                    f"e.g. default=({', '.join(['0' if elem is int else '0.0'] * n)})")
    return spec.ScalarInput(d.name, d.py_type, tuple(_scalar_default(op, f"{where}.default[{k}]", v, elem, st)
                                                for k, v in enumerate(value)), d.ctype)


def _scalar_ctype(op: str, where: str, ctype, elem: type) -> _dt.ScalarType:
    """The C type a scalar input declares (``ScalarInput.ctype``; None: the Python type's own)."""
    allowed = _dt.SCALAR_CTYPES[elem]
    if ctype is None:
        return allowed[_dt.DEFAULT_CTYPES[elem]]
    if isinstance(ctype, str) and ctype in allowed:
        return allowed[ctype]
    if elem is float and ctype == "double":
        raise fail(op, where, "'double': a 64-bit float scalar is not supported (TensorRT's AOT launch passes "
                   "32-bit extra arguments, and TensorRT's ONNX parser reads float attributes as 32-bit)",
                   "make the kernel's parameter a float and declare ttk.ScalarInput(name, float), or pass the value "
                   "in a float64 tensor input")
    if elem is not int and isinstance(ctype, str) and ctype in _dt.SIZE_TYPES:
        raise fail(op, where, f"{ctype!r} is a C integer type, but the input is a {elem.__name__}",
                   f"declare ttk.ScalarInput(name, int, ctype={ctype!r}) if the kernel takes an integer there, or "
                   f"leave ctype out for a C {_dt.DEFAULT_CTYPES[elem]}")
    raise fail(op, where, f"{ctype!r} is not a C type a {elem.__name__} scalar input may have",
               f"use one of {', '.join(map(repr, allowed))}" if elem is int else
               f"leave ctype out (the kernel's parameter is a C {_dt.DEFAULT_CTYPES[elem]})")


def _scalar_default(op: str, where: str, value, t: type, st: _dt.ScalarType):
    """One default value checked against the kernel's C type ``st`` (it is baked into calls and engines)."""
    if t is bool:
        if not isinstance(value, bool):
            raise fail(op, where, f"{value!r} is not a bool"[:200], "give True or False")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (t is int and not isinstance(value, int)):
        raise fail(op, where, f"{value!r} is not {'an int' if t is int else 'a float'}"[:200],
                    f"give a Python {t.__name__}")
    if t is int:
        lo, hi = _dt.INT_RANGES[st.code]
        if not lo <= value <= hi:
            raise fail(op, where, f"{value} does not fit the kernel's {_c_int_name(st)}",
                       f"give a value in [{lo}, {hi}]" + (", or, where the kernel's parameter is 64-bit, say so: "
                                                          "ctype='long long'" if st.size == 4 else ""))
        if value > 2**63 - 1:
            raise fail(op, where, f"{value} is over 2**63-1, which a torch schema's int (int64) cannot hold",
                       "give a default in [0, 2**63-1]")
        return value
    value = float(value)
    if not math.isfinite(value) or abs(value) > 3.4028234663852886e38:
        raise fail(op, where, f"{value} is not a finite 32-bit C float (a torch schema cannot hold inf or nan "
                    "defaults)", "give a finite default, or no default")
    return value


def _c_int_name(st: _dt.ScalarType) -> str:
    """``32-bit C int (int)``, ``64-bit unsigned C int (unsigned long long)``: a C integer type for messages."""
    return f"{_dt.INT_NAMES[st.code].replace('int', 'C int')} ({st.c})"


def _check_trailing_defaults(op: str, inputs) -> None:
    """Defaults on trailing inputs only, as torch schemas have them (a call leaves trailing arguments out)."""
    first = next((i for i, d in enumerate(inputs) if isinstance(d, spec.ScalarInput) and d.default is not None), None)
    if first is None:
        return
    for i, d in enumerate(inputs[first + 1:], start=first + 1):
        if not (isinstance(d, spec.ScalarInput) and d.default is not None):
            raise fail(op, f"inputs[{i}] ({d.name!r})", f"has no default but comes after inputs[{first}] "
                        f"({inputs[first].name!r}), which has one: a torch schema gives defaults to trailing "
                        "arguments only", "move the inputs with defaults to the end of inputs (the kernel's parameter "
                        "order, tensors then scalars, does not change), or give this one a default")


def _extras(op: str, extras, tnames, tensors, scalars=()) -> Tuple[list, Tuple[str, ...], Tuple[str, ...]]:
    """The extras' size expressions, names ("" for a plain expression) and C types."""
    extras = sequence(op, "extras", extras, "pass a list of size expressions, e.g. extras=[ttk.Numel('x')]")
    out, names, ctypes = [], [], []
    for i, e in enumerate(extras):
        where, name, ctype = f"extras[{i}]", "", "int"
        if isinstance(e, spec.SizeArg):
            name, ctype, e = e.name, e.ctype, e.value
            why = _bad_identifier(name)
            if why:
                raise fail(op, f"{where}.name", f"{name!r} {why}", "give the kernel parameter's name")
            if name in names:
                raise fail(op, f"{where}.name", f"{name!r} names two extras", "give each SizeArg its own name")
            if ctype not in _dt.SIZE_TYPES:
                raise fail(op, f"{where}.ctype", f"{ctype!r} is not a C integer type trt_kernels passes",
                           f"use one of {', '.join(map(repr, _dt.SIZE_TYPES))}")
        lo, hi = _dt.INT_RANGES[_dt.SIZE_TYPES[ctype].code]
        e = _size_expr(op, where + (".value" if name else ""), e, "use ttk.Numel(name), ttk.DimSize(name, axis), an "
                       "int, or arithmetic on them", tnames, tensors, scalars, lo=lo, hi=hi, what=f"a C {ctype} extra")
        out.append(e)
        names.append(name)
        ctypes.append(ctype)
    return out, tuple(names), tuple(ctypes)


def _items(tensors, scalars, extra_names, outs, counts=()) -> list:
    """The declared kernel parameters in the calling convention's order, as ``(name, what, count,
    may_end_in_ptr)``: a tuple scalar input is ``count`` parameters; an unnamed extra has name ""."""
    items = [(t.name, "tensor input", 1, True) for t in tensors]
    items += [(d.name, "scalar input", scalar_len(d) or 1, False) for d in scalars]
    items += [(n, f"extras[{i}]", 1, False) for i, n in enumerate(extra_names)]
    items += [(o.name, "output", 1, True) for o in outs]
    items += [(n, "written size", 1, True) for n in counts]
    return items


def _param_order(op: str, items: list, params, kernel_params: Optional[Sequence[str]], kernel: str,
                 complete: bool = True) -> Tuple[int, ...]:
    """The kernel's parameter order as a permutation of the calling convention's (``()``: that order).

    ``params`` (the user's list of declared names, in the kernel's order) decides when given. Otherwise,
    where the kernel's own parameter names are known and every named item is among them (a tensor ``x``
    may be ``x_ptr``; a tuple input ``pads`` its ``pads_0`` ...), each takes the kernel's position of its
    name and the unnamed extras fill the positions left, in declaration order. Else the convention's
    order stands, and a kernel name that is another declared item's is an error (the silent swap it
    would be). Where every declared name is the kernel's and the kernel has parameters none matches,
    the declaration (``complete``: its outputs declared) is refused naming them, before anything compiles."""
    starts, k = [], 0
    for _, _, count, _ in items:
        starts.append(k)
        k += count
    total = k
    if params is not None:
        params = sequence(op, "params", params, "list the declared names in the kernel's parameter order")
        by_name = {name: i for i, (name, _, _, _) in enumerate(items) if name}
        seen: dict = {}
        for j, name in enumerate(params):
            if not isinstance(name, str) or name not in by_name:
                raise fail(op, f"params[{j}]", f"{name!r} is not a declared input, output or named extra",
                           f"use one of {', '.join(map(repr, by_name))}")
            if name in seen:
                raise fail(op, f"params[{j}]", f"{name!r} is listed twice (also params[{seen[name]}])",
                           "list each declared name once")
            seen[name] = j
        missing = [(name or what) for name, what, _, _ in items if name not in seen]
        if missing:
            unnamed = [m for m in missing if m.startswith("extras[")]
            raise fail(op, "params", f"leaves out {', '.join(missing)}",
                       "name every extra with ttk.SizeArg(name, value) and list it" if unnamed
                       else "list every declared input, output and extra once")
        return _permutation([i for name in params for i in _span(starts, items, by_name[name])], total)
    if kernel_params is None:
        return ()
    kernel_params = list(kernel_params)
    position = {n: j for j, n in enumerate(kernel_params)}

    def found(name: str, ptr_ok: bool) -> Optional[int]:
        if name in position:
            return position[name]
        return position.get(name + "_ptr") if ptr_ok else None

    taken: dict = {}
    unmatched = []
    for i, (name, what, count, ptr_ok) in enumerate(items):
        if not name:
            unmatched.append(i)
            continue
        first = found(name, ptr_ok) if count == 1 else found(f"{name}_0", False)
        if first is None:
            return _convention(op, items, kernel_params, kernel, found)
        for e in range(count):
            taken[first + e] = starts[i] + e
    free = [j for j in range(len(kernel_params)) if j not in taken]
    if complete and len(kernel_params) > total and len(free) > len(unmatched):
        # every name matched, yet the kernel takes more (not for an override path, whose outputs meta_fn says)
        left = ", ".join(f"{kernel_params[j]!r} (parameter {j})" for j in free)
        fill = (f" ({len(unmatched)} unnamed {'extra fills' if len(unmatched) == 1 else 'extras fill'} "
                f"{'one' if len(unmatched) == 1 else 'some'} of them)" if unmatched else "")
        first = kernel_params[free[0]]
        raise fail(op, "extras", f"{kernel} takes {len(kernel_params)} parameters and the declaration gives {total}: "
                   f"{left} {'matches' if len(free) == 1 else 'match'} no declared name{fill}",
                   f"declare each as the kernel has it: a size or constant in extras, e.g. ttk.SizeArg({first!r}, "
                   f"ttk.Numel('x'), ctype='int'), or a by-value argument in inputs, ttk.ScalarInput({first!r}, "
                   "int | float | bool)")
    if len(kernel_params) != total or len(free) != len(unmatched):
        return _convention(op, items, kernel_params, kernel, found)
    for j, i in zip(free, unmatched):
        taken[j] = starts[i]
    return _permutation([taken[j] for j in range(total)], total)


def _span(starts, items, i) -> range:
    return range(starts[i], starts[i] + items[i][2])


def _permutation(order: list, total: int) -> Tuple[int, ...]:
    return () if order == list(range(total)) else tuple(order)


def _convention(op: str, items: list, kernel_params: list, kernel: str, found) -> Tuple[int, ...]:
    """The convention's order, unless the kernel names a declared item where the convention puts another."""
    conv = [(name, what) for name, what, count, _ in items for _ in range(count)]
    if len(conv) != len(kernel_params):
        return ()  # the ABI check names what is missing or too many
    for j, kname in enumerate(kernel_params[:len(conv)]):
        for name, what, count, ptr_ok in items:
            hit = kname in (name, name + "_ptr" if ptr_ok else name) if count == 1 else kname.startswith(name + "_")
            if name and hit and conv[j][0] != name:
                expected = f"{conv[j][1]} {conv[j][0]!r}" if conv[j][0] else f"{conv[j][1]} (an unnamed extra)"
                raise fail(op, "params", f"{kernel} has {kname!r} as parameter {j}, where the calling convention "
                           f"(tensor inputs, scalars, extras, outputs) puts {expected}, and not every "
                           "declared name is one of its parameters, so they cannot be matched by name",
                           "pass params=[...] with the declared names in the kernel's order "
                           f"({', '.join(kernel_params)}), or name each input, output and extra (ttk.SizeArg) as "
                           "the kernel does")
    return ()


def _outputs(op: str, outputs, seen, tnames, tensors, has_meta_fn: bool, has_eager_fn: bool, scalars=(),
             tp: Sequence[str] = ("T",)) -> list:
    if outputs is not None:
        sequence(op, "outputs", outputs,
                  "declare the outputs as a list, e.g. outputs=[ttk.OutputDecl('y', shape=ttk.SameAs('x'))]")
    if (outputs is None or len(outputs) == 0) and any(t.mutated for t in tensors) and not has_meta_fn:
        return []  # the op writes its inputs in place and returns nothing
    if outputs is None or len(outputs) == 0:
        if not has_meta_fn:
            raise fail(op, "outputs", "missing",
                        "declare outputs=[ttk.OutputDecl(name, shape=ttk.SameAs('x'))], "
                        "or pass meta_fn= (and eager_fn=/aot_fn=)")
        if not has_eager_fn:
            raise fail(op, "eager_fn", "missing: without declared outputs the eager launch cannot allocate them",
                        "declare outputs, or pass eager_fn=")
        return []
    seen = set(seen)
    for i, o in enumerate(outputs):
        where = f"outputs[{i}]"
        if not isinstance(o, spec.OutputDecl):
            raise fail(op, where, f"expected OutputDecl, got {o!r}", "use ttk.OutputDecl(name, shape=...)")
        why = _bad_identifier(o.name)
        if why:
            raise fail(op, where, f"name {o.name!r} is not a usable name: it {why}", "rename the output")
        if o.name in seen:
            raise fail(op, where, f"duplicate name {o.name!r}", "give every input and output a distinct name")
        seen.add(o.name)
        _check_shape(op, where + ".shape", o.shape, tnames, tensors, scalars)
        if o.dtype_from is not None:
            if o.dtype_from not in tnames:
                raise fail(op, where + ".dtype_from",
                            f"{o.dtype_from!r} names no tensor input (tensor inputs: {tnames})",
                            "name a declared InputDecl")
        if isinstance(o.dtype, str):
            if o.dtype not in tp:
                raise fail(op, where + ".dtype", f"{o.dtype!r} names no type parameter (type_params={list(tp)})",
                            "name one of type_params, or give a torch.dtype")
            if not any(_type_of(t, tp) == o.dtype for t in tensors):
                raise fail(op, where + ".dtype", f"type parameter {o.dtype!r} is the dtype of no tensor input",
                            "give a torch.dtype, or declare an input of that type")
        elif o.dtype is not None and o.dtype not in _dt.SUPPORTED:
            raise fail(op, where + ".dtype", f"{o.dtype!r} is not supported",
                        f"use one of {[_dt.short(x) for x in _dt.SUPPORTED]}")
        if o.dtype is not None and o.dtype_from is not None:
            raise fail(op, where, "both dtype and dtype_from are set", "set one of them")
    return list(outputs)


def _checks(op: str, checks, tnames, tensors) -> Tuple[CheckSig, ...]:
    """``checks`` (:class:`SameShape` / :class:`SameDim`), checked and resolved."""
    fix = "pass a list, e.g. checks=[ttk.SameShape('x', 'y'), ttk.SameDim(('x', -1), ('w', 0))]"
    out = []
    for i, c in enumerate(sequence(op, "checks", checks if checks is not None else (), fix)):
        where = f"checks[{i}]"
        if isinstance(c, spec.SameShape):
            if len(c.inputs) < 2:
                raise fail(op, where, f"{c!r} names {len(c.inputs)} input(s); a check relates two or more",
                            "name at least two tensor inputs, e.g. ttk.SameShape('x', 'y')")
            ts = tuple(resolve_tensor(op, where, r, tnames) for r in c.inputs)
            if len(set(ts)) != len(ts):
                raise fail(op, where, f"{c!r} names an input twice", "name each input once")
            ranks = {tensors[t].ndim for t in ts if tensors[t].ndim is not None}
            if len(ranks) > 1:
                raise fail(op, where, f"{c!r}: the inputs are declared with different ndim {sorted(ranks)}, so their "
                            "shapes can never be equal", "fix the inputs' ndim, or relate single axes with ttk.SameDim")
            out.append(CheckSig(label=repr(c), kind="shape", tensors=ts, texts=tuple(tnames[t] for t in ts)))
        elif isinstance(c, spec.SameDim):
            if len(c.operands) < 2:
                raise fail(op, where, f"{c!r} has {len(c.operands)} operand(s); a check relates two or more",
                            "give at least two, e.g. ttk.SameDim(('x', -1), ('w', 0))")
            exprs, texts = [], []
            for j, o in enumerate(c.operands):
                w = f"{where}.operands[{j}]"
                if isinstance(o, (tuple, list)):
                    if len(o) != 2:
                        raise fail(op, w, f"{o!r} is not an (input, axis) pair", "write (name, axis), e.g. ('x', -1)")
                    ref, axis = o
                    t = resolve_tensor(op, w, ref, tnames)
                    _check_axis(op, w, axis, tensors[t])
                    e: Expr = DimSize(ref, axis)
                    texts.append(f"{tnames[t]}.shape[{axis}]")
                else:
                    try:
                        e = lift(o)
                    except TypeError:
                        raise fail(op, w, f"{o!r} is neither an (input, axis) pair nor a size expression",
                                    "write (name, axis), e.g. ('x', -1), "
                                    "or a size expression like ttk.Numel('w')") from None
                    texts.append(str(e))
                    if any(isinstance(leaf, Scalar) for leaf in leaves(e)):
                        raise fail(op, w, f"{e} reads a scalar input; a check relates the tensor inputs' sizes "
                                   "(every place that checks them, TensorRT's build included, knows those)",
                                   "compare sizes only ((input, axis) pairs, ttk.Numel / ttk.DimSize arithmetic), "
                                   "and check a scalar against a size in the kernel")
                _check_expr(op, w, e, tnames, tensors)
                exprs.append(_resolve(e, tnames))
            out.append(CheckSig(label=repr(c), kind="dims", exprs=tuple(exprs), texts=tuple(texts)))
        else:
            raise fail(op, where, f"{c!r} is not a check", "use ttk.SameShape(...) or ttk.SameDim(...)")
    return tuple(out)


# ---------- resolving (after the checks: every reference is known to be valid) ----------


def _index(ref: Union[int, str], names: Sequence[str]) -> int:
    if isinstance(ref, bool):
        ref = int(ref)
    return ref % len(names) if isinstance(ref, int) else names.index(ref)


def _resolve(e, names: Sequence[str], scalars: Sequence[spec.ScalarInput] = ()) -> Expr:
    def leaf(node: Expr) -> Expr:
        if isinstance(node, Numel):
            return NumelOf(_index(node.input_name, names))
        if isinstance(node, DimSize):
            return Dim(_index(node.input_name, names), node.axis)
        if isinstance(node, Scalar):
            k = [d.name for d in scalars].index(node.input_name)
            n = scalar_len(scalars[k])
            index = None if node.index is None else node.index % n
            return ScalarOf(k, index, node.input_name)
        return node

    return resolve(lift(e), leaf)


def _resolve_outputs(outs, counts: Sequence[str], names: Sequence[str], scalars, tensors, tp) -> Tuple[OutputSig, ...]:
    """The declared outputs, then one ``count`` output per size the kernel writes (in ``counts``' order)."""
    resolved = [_resolve_output(o, names, scalars, tensors, tp, counts, len(outs)) for o in outs]
    written = {}
    for o in outs:
        for e in (o.shape if isinstance(o.shape, (tuple, list)) else ()):
            if isinstance(e, spec.Written):
                written.setdefault(e.count, e)
    for c in counts:
        w = written[c]
        bound = _resolve(w.max, names, scalars)
        opt = _resolve(w.opt, names, scalars) if w.opt is not None else binop("floordiv", bound, Const(2))
        resolved.append(OutputSig(name=c, kind="count", tensor=0, exprs=(bound, opt), dtype=w.dtype))
    return tuple(resolved)


def _resolve_output(o: spec.OutputDecl, names: Sequence[str], scalars: Sequence[spec.ScalarInput] = (), tensors=(),
                    tp: Sequence[str] = ("T",), counts: Sequence[str] = (), first_count: int = 0) -> OutputSig:
    s = o.shape
    if isinstance(s, spec.SameAs):
        t = _index(s.input_idx, names)
        out = OutputSig(name=o.name, kind="like", tensor=t)
    elif isinstance(s, spec.ReduceDims):
        t = _index(s.input_idx, names)
        out = OutputSig(name=o.name, kind="reduce", tensor=t, dims=tuple(s.dims), keepdim=s.keepdim)
    else:
        axis = next((j for j, e in enumerate(s) if isinstance(e, spec.Written)), -1)
        exprs = tuple(_resolve(e.max if isinstance(e, spec.Written) else e, names, scalars) for e in s)
        out = OutputSig(name=o.name, kind="exprs", tensor=0, exprs=exprs, written=axis,
                        count=-1 if axis < 0 else first_count + list(counts).index(s[axis].count))
    if isinstance(o.dtype, str):  # a type parameter: the dtype of the first input of that type
        return replace(out, dtype_src=next(i for i, t in enumerate(tensors) if _type_of(t, tp) == o.dtype))
    if o.dtype is not None:
        return replace(out, dtype=o.dtype)
    return replace(out, dtype_src=names.index(o.dtype_from) if o.dtype_from is not None else out.tensor)


def _launches(g, names: Sequence[str], scalars: Sequence[spec.ScalarInput] = ()):
    """One :class:`LaunchSig` per tactic of a checked geometry (tactic 1 first)."""
    def blk(b) -> Tuple[int, ...]:
        return (b,) if isinstance(b, int) else tuple(b)

    if isinstance(g, spec.Elementwise):
        return [LaunchSig(kind=g.layout, block=blk(b)) for b in [g.block, *g.tactics]]
    if isinstance(g, spec.Reduction):
        return [LaunchSig(kind="reduce", block=(b,), reduce_dims=tuple(g.reduce_dims))
                for b in [g.block_size, *g.tactics]]
    return [LaunchSig(kind="custom", block=blk(g.block), grid=tuple(_resolve(e, names, scalars) for e in g.grid),
                      shared_mem=_resolve(g.shared_mem, names, scalars))]


# ---------- the checks ----------

def sequence(op: str, where: str, value, fix: str) -> list:
    """``value`` as a list when it is a list or tuple (not a str, not a single item)."""
    if not isinstance(value, (list, tuple)):
        raise fail(op, where, f"expected a list or tuple, got {type(value).__name__} {value!r}"[:200], fix)
    return list(value)


def check_encodable(op: str, where: str, text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise fail(op, where, f"character {text[e.start]!r} at offset {e.start} cannot be encoded as UTF-8 "
                    "(a lone surrogate)", "remove or replace that character") from None


def _check_axis(op: str, where: str, axis: int, decl: spec.InputDecl) -> None:
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise fail(op, where, f"axis {axis!r} is not an int", "give an integer axis (negative counts from the end)")
    if decl.ndim is not None and not -decl.ndim <= axis < decl.ndim:
        raise fail(op, where, f"axis {axis} is out of range for input {decl.name!r} of ndim {decl.ndim}",
                    f"use an axis in [{-decl.ndim}, {decl.ndim - 1}]")


def _size_expr(op: str, where: str, e: Any, fix: str, tnames: Sequence[str], tensors: Sequence[spec.InputDecl],
               scalars: Sequence[spec.ScalarInput], *, lo: Optional[int], hi: Optional[int], what: str,
               constexpr: bool = False) -> Expr:
    """``e`` as a size expression (an int, or arithmetic on sizes), checked by :func:`_check_expr`."""
    try:
        e = lift(e)
    except TypeError:
        raise fail(op, where, f"{e!r} is not a size expression", fix) from None
    _check_expr(op, where, e, tnames, tensors, lo=lo, hi=hi, what=what, scalars=scalars, constexpr=constexpr)
    return e


def _check_expr(op: str, where: str, e: Expr, tnames: Sequence[str], tensors: Sequence[spec.InputDecl], *,
                lo: Optional[int] = None, hi: Optional[int] = None, what: str = "",
                scalars: Sequence[spec.ScalarInput] = (), constexpr: bool = False) -> None:
    """Every leaf names a tensor input (and an axis it has) or an int scalar input (an element of an int
    tuple input); no constant divisor is zero; a constant value (or a constant part of it) lies in
    ``[lo, hi]`` when those are given; ``next_power_of_2`` only in a launch-time constexpr (``constexpr``):
    launches, TensorRT and the fake impl evaluate the other expressions, and they do not have it."""
    if not constexpr and any(isinstance(n, BinOp) and n.op == "npow2" for n in _nodes(e)):
        raise fail(op, where, f"{e} uses next_power_of_2, which only a launch-time constexpr may use",
                   "compute it as a Triton constexpr (constexprs={'BLOCK': ttk.next_power_of_2(...)}) and read "
                   "meta['BLOCK'] in grid(meta)")
    for leaf in leaves(e):
        if isinstance(leaf, (Numel, DimSize)):
            t = resolve_tensor(op, where, leaf.input_name, tnames)
            if isinstance(leaf, DimSize):
                _check_axis(op, where, leaf.axis, tensors[t])
        elif isinstance(leaf, Scalar):
            _check_scalar_leaf(op, where, leaf, scalars)
        elif not isinstance(leaf, Const):
            raise fail(op, where, f"{leaf!r} is not a size expression node",
                        "use ints, ttk.Numel, ttk.DimSize and arithmetic")
    for node in _nodes(e):
        if isinstance(node, BinOp) and node.op in ("floordiv", "cdiv") and _const_value(node.rhs) == 0:
            raise fail(op, where, f"{e} divides by zero", "divide by a non-zero size")
    value = _const_value(e)
    if value is not None and ((lo is not None and value < lo) or (hi is not None and value > hi)):
        raise fail(op, where, f"{e} = {value} is out of range for {what} ([{lo}, {hi}])",
                    f"use a value in [{lo}, {hi}]")


def constexpr_expr(op: str, where: str, e: Any, sig: Signature) -> Expr:
    """A launch-time constexpr's size expression (``next_power_of_2`` allowed), checked and resolved
    against ``sig``'s inputs."""
    names = list(sig.tensor_names)
    e = _size_expr(op, where, e, "use ttk.Numel(name), ttk.DimSize(name, axis), ttk.Scalar(name), ints, "
                   "ttk.next_power_of_2 and arithmetic", names, sig.tensor_decls, sig.scalar_decls, lo=None, hi=None,
                   what="", constexpr=True)
    return _resolve(e, names, sig.scalar_decls)


def _check_scalar_leaf(op: str, where: str, leaf: Scalar, scalars: Sequence[spec.ScalarInput]) -> None:
    """``Scalar(name)`` / ``Scalar(name)[i]`` reads an int scalar input / an element of an int tuple input."""
    names = [d.name for d in scalars]
    if leaf.input_name not in names:
        raise fail(op, where, f"{leaf} names no scalar input (scalar inputs: {names})",
                    "name a declared ttk.ScalarInput of type int or (int, n)")
    d = scalars[names.index(leaf.input_name)]
    t, n = scalar_type(d), scalar_len(d)
    if leaf.index is not None and (isinstance(leaf.index, bool) or not isinstance(leaf.index, int)):
        raise fail(op, where, f"{leaf}: the index {leaf.index!r} is not an int", f"e.g. Scalar({d.name!r})[0]")
    if t is not int:
        raise fail(op, where, f"{leaf} reads {d.name!r}, a {scalar_type_name(d)} input; sizes are ints",
                    "declare it int or (int, n), or pass the size as an int scalar input")
    if n is None and leaf.index is not None:
        raise fail(op, where, f"{leaf}: {d.name!r} is a single int, not a tuple", f"write Scalar({d.name!r})")
    if n is not None and leaf.index is None:
        raise fail(op, where, f"{leaf}: {d.name!r} is a tuple of {n} ints", f"index it, e.g. Scalar({d.name!r})[0]")
    if n is not None and not -n <= leaf.index < n:
        raise fail(op, where, f"{leaf}: index {leaf.index} is out of range for {d.name!r} ({n} values)",
                    f"use an index in [{-n}, {n - 1}]")


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


def _check_shape(op: str, where: str, shape, tnames, tensors, scalars=()) -> None:
    if isinstance(shape, spec.SameAs):
        resolve_tensor(op, where, shape.input_idx, tnames)
    elif isinstance(shape, spec.ReduceDims):
        t = resolve_tensor(op, where, shape.input_idx, tnames)
        dims = tuple(shape.dims) if isinstance(shape.dims, (tuple, list)) else None
        if not dims:
            raise fail(op, where + ".dims", f"{shape.dims!r} is not a non-empty tuple of axes",
                        "e.g. ReduceDims('x', (-1,))")
        for a in dims:
            _check_axis(op, where + ".dims", a, tensors[t])
        if not isinstance(shape.keepdim, bool):
            raise fail(op, where + ".keepdim", f"{shape.keepdim!r} is not a bool", "pass keepdim=True or False")
        if len(set(dims)) != len(dims):
            raise fail(op, where + ".dims", f"duplicate axes in {dims}", "list each reduced axis once")
    elif isinstance(shape, (tuple, list)):
        written = [i for i, e in enumerate(shape) if isinstance(e, spec.Written)]
        if len(written) > 1:
            raise fail(op, where, f"axes {written} are each a ttk.Written size; an output has at most one size the "
                       "kernel decides", "declare one Written axis (flatten the others into it)")
        for i, e in enumerate(shape):
            if isinstance(e, spec.Written):
                _check_written(op, f"{where}[{i}]", e, tnames, tensors, scalars)
                continue
            _size_expr(op, f"{where}[{i}]", e, "use ints, ttk.Numel, ttk.DimSize and arithmetic", tnames, tensors,
                       scalars, lo=0, hi=2**63 - 1, what="an output dimension")
    else:
        raise fail(op, where, f"{shape!r} is not a shape",
                    "use ttk.SameAs(...), ttk.ReduceDims(...) or a tuple of size expressions")


#: the dtypes of a size the kernel writes (TensorRT's size tensors are INT32 or INT64)
COUNT_DTYPES = (torch.int32, torch.int64)


def _check_written(op: str, where: str, w: spec.Written, tnames, tensors, scalars) -> None:
    """A :class:`~trt_kernels.spec.Written` axis: a usable count name, bounds that are size expressions of the
    inputs, an int32/int64 count."""
    why = _bad_identifier(w.count)
    if why:
        raise fail(op, where + ".count", f"{w.count!r} {why}", "give the kernel parameter the count is written to")
    fix = "use ints, ttk.Numel, ttk.DimSize, ttk.Scalar and arithmetic (the size's largest value, from the inputs)"
    _size_expr(op, where + ".max", w.max, fix, tnames, tensors, scalars, lo=0, hi=2**63 - 1, what="a size bound")
    if w.opt is not None:
        _size_expr(op, where + ".opt", w.opt, fix, tnames, tensors, scalars, lo=0, hi=2**63 - 1,
                   what="a size TensorRT tunes for")
    if w.dtype not in COUNT_DTYPES:
        raise fail(op, where + ".dtype", f"{w.dtype!r} is not a count dtype (TensorRT's size tensors are INT32 or "
                   "INT64)", "use dtype=torch.int32 or torch.int64, as the kernel's count parameter is declared")


def _counts(op: str, outputs, names, has_meta_fn: bool, has_eager_fn: bool, tensors) -> list:
    """The names of the sizes the outputs' :class:`~trt_kernels.spec.Written` axes write, in order of first use, each
    once; outputs naming the same count must declare it alike."""
    found: dict = {}
    for i, o in enumerate(outputs):
        if not isinstance(o.shape, (tuple, list)):
            continue
        for j, e in enumerate(o.shape):
            if not isinstance(e, spec.Written):
                continue
            where = f"outputs[{i}].shape[{j}]"
            if e.count in names:
                raise fail(op, where + ".count", f"{e.count!r} is also the name of an input, output or extra",
                           "give the count its own name, as the kernel's parameter has it")
            first = found.get(e.count)
            if first is None:
                found[e.count] = (where, _written_key(e))
            elif first[1] != _written_key(e):
                raise fail(op, where, f"{e!r} names the count {e.count!r} of {first[0]} with other bounds or dtype",
                           "declare the shared count's max, opt and dtype alike in every output")
    if found and (has_meta_fn or has_eager_fn):
        raise fail(op, "outputs", "a ttk.Written size with meta_fn/eager_fn, which say the outputs themselves",
                   "drop meta_fn/eager_fn (the derived launch reads the count), or drop Written")
    if found and any(t.mutated for t in tensors):
        raise fail(op, "outputs", "a ttk.Written size in an op that also writes an input in place",
                   "return the written-in-place result as an output, or split the op in two")
    return list(found)


def _written_key(w: spec.Written):
    return (str(lift(w.max)), None if w.opt is None else str(lift(w.opt)), w.dtype)


def _check_block(op: str, where: str, block, max_dims: int = 3) -> Tuple[int, ...]:
    if isinstance(block, int) and not isinstance(block, bool):
        block = (block,)
    if not isinstance(block, (tuple, list)) or not block:
        raise fail(op, where, f"{block!r} is not a tuple of 1 to 3 positive ints", "e.g. block=(256,) or (16, 16)")
    if len(block) > max_dims:
        raise fail(op, where, f"{len(block)} block dims given; CUDA blocks have at most {max_dims}",
                    "use at most 3 dims")
    for b in block:
        if isinstance(b, bool) or not isinstance(b, int) or b <= 0:
            raise fail(op, where, f"block entry {b!r} is not a positive int", "use positive ints")
    for i, (b, lim) in enumerate(zip(block, BLOCK_LIMITS)):
        if b > lim:
            raise fail(op, where, f"block {tuple(block)}: axis {'xyz'[i]} is {b}; CUDA allows at most {lim} there",
                        "use a smaller block along that axis")
    total = 1
    for b in block:
        total *= b
    if total > MAX_THREADS_PER_BLOCK:
        raise fail(op, where, f"block {tuple(block)} has {total} threads; CUDA allows at most {MAX_THREADS_PER_BLOCK} "
                    "per block", "use a smaller block")
    return tuple(block)


def _check_geometry(op: str, g, outputs, tnames, tensors, scalars=()) -> None:
    if isinstance(g, spec.Elementwise):
        sequence(op, "geometry.tactics", g.tactics, "list alternative blocks, e.g. tactics=((128,), (512,))")
        if g.layout not in ("flat", "nd"):
            raise fail(op, "geometry.layout", f"{g.layout!r} is not a layout", "use 'flat' or 'nd'")
        blocks = [("geometry.block", g.block)] + [(f"geometry.tactics[{i}]", b) for i, b in enumerate(g.tactics)]
        for where, b in blocks:
            b = _check_block(op, where, b)
            if g.layout == "flat" and len(b) != 1:
                raise fail(op, where, f"layout='flat' takes a 1-D block, got {b}", "use block=(n,) or layout='nd'")
            if len(b) != len(_check_block(op, "geometry.block", g.block)):
                raise fail(op, where, f"tactic block {b} has another rank than block {tuple(g.block)}",
                            "give every tactic as many dims as block")
    elif isinstance(g, spec.Reduction):
        dims = tuple(g.reduce_dims) if isinstance(g.reduce_dims, (tuple, list)) else None
        if not dims:
            raise fail(op, "geometry.reduce_dims", f"{g.reduce_dims!r} is not a non-empty tuple of axes",
                        "e.g. Reduction(reduce_dims=(-1,))")
        for a in dims:
            if isinstance(a, bool) or not isinstance(a, int):
                raise fail(op, "geometry.reduce_dims", f"axis {a!r} is not an int",
                            "give integer axes (negative counts from the end)")
        if len(set(dims)) != len(dims):
            raise fail(op, "geometry.reduce_dims", f"duplicate axes in {dims}", "list each axis once")
        tactics = sequence(op, "geometry.tactics", g.tactics, "list alternative block sizes, e.g. tactics=(128, 512)")
        for b in [g.block_size] + tactics:
            _check_block(op, "geometry.block_size", b, max_dims=1)
        outs = outputs or []
        if outs and isinstance(outs[0].shape, spec.SameAs):
            raise fail(op, "geometry",
                        "Reduction launches one block per element of outputs[0], but outputs[0] has the "
                        "shape of an input (SameAs), so the blocks would reduce past the input's end",
                        "give outputs[0] shape=ttk.ReduceDims(...) over the reduced axes, "
                        "or use ttk.Elementwise / ttk.Custom")
        if outs and isinstance(outs[0].shape, spec.ReduceDims) and tuple(outs[0].shape.dims) != dims:
            raise fail(op, "geometry.reduce_dims",
                        f"{dims} differs from outputs[0].shape dims {tuple(outs[0].shape.dims)}",
                        "reduce the same axes in both")
    elif isinstance(g, spec.Custom):
        if not isinstance(g.grid, (tuple, list)) or not 1 <= len(g.grid) <= 3:
            raise fail(op, "geometry.grid", f"{g.grid!r} is not 1 to 3 size expressions",
                        "e.g. grid=(ttk.cdiv(ttk.Numel('x'), 256),)")
        for i, e in enumerate(g.grid):
            try:
                e = lift(e)
            except TypeError:
                raise fail(op, f"geometry.grid[{i}]", f"{e!r} is not a size expression",
                            "use ints, ttk.Numel, ttk.DimSize and arithmetic") from None
            _check_expr(op, f"geometry.grid[{i}]", e, tnames, tensors, lo=1, hi=GRID_LIMITS[i],
                        what=f"CUDA grid axis {'xyz'[i]}", scalars=scalars)
        _check_block(op, "geometry.block", g.block)
        try:
            smem = lift(g.shared_mem)
        except TypeError:
            raise fail(op, "geometry.shared_mem", f"{g.shared_mem!r} is not a size expression",
                        "use an int or a size expression") from None
        _check_expr(op, "geometry.shared_mem", smem, tnames, tensors, lo=0, hi=MAX_SHARED_MEM,
                    what="dynamic shared memory per block (bytes)", scalars=scalars)
    elif callable(getattr(g, "fn", None)):
        raise fail(op, "geometry", "a Custom(fn) callback cannot be evaluated for eager and fake",
                    "describe the launch with ttk.Custom(grid=..., block=..., shared_mem=...) "
                    "or pass eager_fn= and aot_fn=")
    else:
        raise fail(op, "geometry", f"{g!r} is not a geometry", "use ttk.Elementwise, ttk.Reduction or ttk.Custom")
